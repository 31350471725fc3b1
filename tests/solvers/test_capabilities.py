"""Solver capabilities are declared once, on the adapter classes; the registry's tables, the
workers, the planner, the policy, the CLI's help and ``lipopt solvers`` read them from there."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lipopt import policy
from lipopt.cli import main
from lipopt.cli.parser import make_parser
from lipopt.cli.solvers import solver_help, solver_list
from lipopt.config import SolveConfig
from lipopt.formulation.build import Formulation
from lipopt.parallel import workers
from lipopt.plan import Facts, Mip, race_solver
from lipopt.policy import Policy
from lipopt.solvers import Adapter, SolveOptions, SolverError, Termination, registry
from lipopt.solvers.cbc import INSTALL_HINT, CbcSolver


class FakeSolver(Adapter):
    """A registered adapter that declares everything differently from HiGHS, and is missing."""

    name = "fake"
    label = "Fake"
    install_hint = "pip install fake-solver"
    QUADRATIC = True
    FORKABLE = True
    CUTOFF_OPTIONS = {"cutoff_knob": 1}

    def why_unavailable(self) -> str:
        return "Fake is not installed (no fake here)"

    def version(self) -> str:
        return "0"

    def _solve(self, model: Any, options: SolveOptions) -> Any:
        raise AssertionError("a missing solver is never run")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "fake", FakeSolver)


def test_the_registrys_tables_are_the_classes_declarations() -> None:
    classes = registry.CLASSES
    assert list(registry.ADAPTERS) == [cls.name for cls in classes]
    assert all(registry.ADAPTERS[cls.name] is cls for cls in classes)
    assert all(issubclass(cls, Adapter) for cls in classes)
    assert registry.INSTALL_HINTS == {cls.name: cls.install_hint for cls in classes}
    assert registry.QUADRATIC == {cls.name for cls in classes if cls.QUADRATIC} == {"scip"}
    assert registry.FORKABLE == {cls.name for cls in classes if cls.FORKABLE}
    assert registry.FORKABLE == {"highs", "scip"}  # CBC: a subprocess; Gurobi: unchecked
    for table, attribute in (
        (registry.CUTOFF_OPTIONS, "CUTOFF_OPTIONS"),
        (registry.LARGE_MODEL_OPTIONS, "LARGE_MODEL_OPTIONS"),
    ):
        declared = {cls.name: dict(getattr(cls, attribute)) for cls in classes}
        assert table == {name: options for name, options in declared.items() if options}
    assert registry.CUTOFF_OPTIONS == {"highs": {"presolve": "off"}}
    assert registry.LARGE_MODEL_OPTIONS == {"highs": {"presolve": "off"}}
    assert INSTALL_HINT == CbcSolver.install_hint


def test_the_policy_and_the_workers_read_the_declarations() -> None:
    current = Policy.current()
    assert current.cutoff_options == registry.CUTOFF_OPTIONS == policy.CUTOFF_OPTIONS
    assert current.large_model_options == registry.LARGE_MODEL_OPTIONS
    assert workers.FORK_SOLVERS == registry.FORKABLE
    assert workers.process_count("highs", None, 4, 4, True) == 4
    assert workers.process_count("cbc", None, 4, 4, True) == 1
    assert workers.process_count("gurobi", None, 4, 4, True) == 1


def test_a_registered_adapters_declarations_reach_workers_and_planner(fake: None) -> None:
    assert workers.process_count("fake", None, 4, 4, True) == 4
    mip = Mip(SolveConfig(), "fake", False, False, False, None, False, l2=True)
    assert mip.quadratic_rows and mip.l2_objective == "quadratic"
    assert not Mip(SolveConfig(), "highs", False, False, False, None, False).quadratic_rows
    declared = registry.capabilities(" FAKE ")
    assert (declared.name, declared.label, declared.forkable) == ("fake", "Fake", True)
    assert declared.cutoff_options == {"cutoff_knob": 1}


def test_an_adapter_that_declares_nothing_takes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in that only solves (as the fault tests register) is not forked, takes no
    quadratic row and gets no options; an unknown name likewise."""

    class Bare:
        name = "bare"

    monkeypatch.setitem(registry.ADAPTERS, "bare", Bare)
    monkeypatch.setitem(registry.ADAPTERS, "bare2", lambda: Bare())
    for name in ("bare", "bare2", "nosuchsolver"):
        declared = registry.capabilities(name)
        assert not declared.quadratic and not declared.forkable
        assert not declared.cutoff_options and not declared.large_model_options
        assert workers.process_count(name, None, 4, 4, True) == 1


def test_auto_is_resolved_in_the_registry() -> None:
    assert registry.resolve(" HiGHS ") == "highs" == registry.adapter_key("highs")
    assert registry.resolve("auto") == registry.AUTO_ADAPTER == "highs"
    assert registry.resolve(" Auto ", {"highs", "scip"}, "scip") == "scip"
    assert registry.resolve("auto", {"highs"}, "scip") == "highs"  # the pick is not installed
    assert registry.resolve("cbc", {"highs"}, "scip") == "cbc"  # a named solver is not "auto"
    picks = Policy.current()
    both = Facts(2, True, frozenset({"highs", "scip"}))
    alone = Facts(2, True, frozenset({"highs"}))
    for form in (Formulation.FORWARD, Formulation.BACKWARD):
        chosen = picks.auto_race_solvers[form]
        assert race_solver("auto", form, both, picks) == registry.resolve("auto", {chosen}, chosen)
        assert race_solver("auto", form, alone, picks) == "highs"


def test_every_adapter_says_why_it_is_unavailable_or_nothing() -> None:
    for name, make in registry.ADAPTERS.items():
        adapter = make()
        why = adapter.why_unavailable()
        assert adapter.available() == (why == ""), name
        assert "\n" not in why
    assert "does not run as CBC" in CbcSolver(path="/nonexistent/bin/cbc").why_unavailable()


def test_the_shared_preamble_refuses_a_missing_solver_with_why_and_how(fake: None) -> None:
    """A model whose objective is not constant: the missing solver is refused before any solve,
    with its reason and its install hint, in one line."""
    import pyomo.environ as pe

    model = pe.ConcreteModel()
    model.x = pe.Var(bounds=(0, 1))
    model.objective = pe.Objective(expr=model.x, sense=pe.maximize)
    with pytest.raises(SolverError) as info:
        FakeSolver().solve(model, SolveOptions())
    assert str(info.value) == "Fake is not installed (no fake here); pip install fake-solver"


def test_the_shared_preamble_answers_a_constant_objective_without_the_solver() -> None:
    import pyomo.environ as pe

    model = pe.ConcreteModel()
    model.x = pe.Var(bounds=(-1, 3))
    model.objective = pe.Objective(expr=2.5 + 0.0 * model.x, sense=pe.maximize)
    result = FakeSolver().solve(model, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == result.bound == 2.5
    assert result.solver == "fake (constant objective)"
    assert np.isclose(result.values[model.x], 1.0)


def test_the_solver_help_comes_from_the_declarations(fake: None, monkeypatch) -> None:
    assert solver_list() == "highs, scip, cbc, gurobi or fake"
    assert solver_help().endswith("), highs, scip, cbc, gurobi or fake")
    monkeypatch.setattr(policy, "AUTO_RACE_SOLVERS", {"forward": "highs", "backward": "fake"})
    assert solver_help() == (
        "solver adapter: auto (the default: HiGHS, with Fake solving the backward model where "
        "the two formulations are raced), highs, scip, cbc, gurobi or fake"
    )
    parser = make_parser()
    for command in ("solve", "certify", "compare"):
        sub = parser._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        (option,) = [a for a in sub._actions if "--solver" in a.option_strings]
        assert option.help.endswith("highs, scip, cbc, gurobi or fake"), command


def test_the_solver_help_today() -> None:
    """With today's adapters and policy: the text docs/cli.md shows."""
    assert solver_help() == (
        "solver adapter: auto (the default: HiGHS, with SCIP solving the backward model where "
        "the two formulations are raced), highs, scip, cbc or gurobi"
    )


def test_lipopt_solvers_lists_the_declarations(fake: None, capsys, monkeypatch) -> None:
    monkeypatch.setattr(policy, "AUTO_RACE_SOLVERS", {"forward": "highs", "backward": "fake"})
    assert main(["solvers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == list(registry.ADAPTERS)
    assert lines[-2] == (
        "fake       missing  Fake is not installed (no fake here); to install it: "
        "pip install fake-solver"
    )
    assert lines[-1] == (
        "default: auto = highs, with fake on the backward model where the two formulations race"
    )
