"""One conformance suite, run against every usable solver adapter.

On the same small random networks every solver must give the brute-force constant (tests/oracle.py)
to 1e-6; the LP relaxation must bound it from above; a gap-limited answer must bracket it within
the gap; a time-limited answer must still be sound (or fail with one clear line).

Most tests pass ``split=False, regions=False`` so that each is one MIP solved by the adapter
under test (by default small boxes are cut into parts first, and larger domains first go to the
linear-region search); one test runs the default.
"""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt import Box, SolverError
from lipopt.norms import dual_norm
from lipopt.solvers import SolveOptions, Termination, get
from tests.helpers import random_network
from tests.solvers.cases import CASE_PARAMS, CASES, SOLVERS, Case, exact_value

REL = 1e-6


@pytest.mark.parametrize("case", CASE_PARAMS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_exact_value_matches_brute_force(solver: str, case: Case) -> None:
    res = lipopt.lipschitz(
        case.network(), case.domain, case.norm, case.c(), solver=solver, split=False, regions=False
    )
    exact = exact_value(case)
    assert res.status == "optimal"
    assert res.value == pytest.approx(exact, rel=REL)
    assert res.lower is not None and res.lower <= res.upper
    assert res.lower == pytest.approx(exact, rel=REL)
    assert res.solver.startswith(solver)


L1_PARAMS = [pytest.param(case, id=case.id) for case in CASES if case.norm == "l1"]


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "selection"])
@pytest.mark.parametrize("case", L1_PARAMS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_l1_norm_exact_with_and_without_decomposition(
    solver: str, case: Case, decompose: bool
) -> None:
    """The l1 input norm both ways: candidate MIPs under cutoffs (an infeasible verdict means
    "cannot win"), or one MIP with selection binaries."""
    res = lipopt.lipschitz(
        case.network(), case.domain, case.norm, case.c(), solver=solver, split=False, regions=False,
        decompose=decompose,
    )  # fmt: skip
    exact = exact_value(case)
    assert res.status == "optimal"
    assert res.value == pytest.approx(exact, rel=REL)
    assert res.lower is not None and res.lower == pytest.approx(exact, rel=REL)


@pytest.mark.parametrize("case", [CASES[0], CASES[6]], ids=lambda case: case.id)
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_default_domain_splitting_matches_brute_force(solver: str, case: Case) -> None:
    """The defaults (``split="auto"`` splits these 2-D boxes): every part's MIP on this solver."""
    res = lipopt.lipschitz(case.network(), case.domain, case.norm, case.c(), solver=solver)
    assert res.status == "optimal"
    assert res.value == pytest.approx(exact_value(case), rel=REL)


@pytest.mark.parametrize("case", CASE_PARAMS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_lp_mode_bounds_exact_value(solver: str, case: Case) -> None:
    res = lipopt.lipschitz(
        case.network(), case.domain, case.norm, case.c(), solver=solver, mode="lp"
    )
    assert res.status == "relaxation"
    assert res.value >= exact_value(case) * (1 - 1e-9)


@pytest.mark.parametrize("case", CASE_PARAMS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_gap_limited_result_brackets_exact_value(solver: str, case: Case) -> None:
    gap = 0.2
    res = lipopt.lipschitz(
        case.network(),
        case.domain,
        case.norm,
        case.c(),
        solver=solver,
        gap=gap,
        split=False,
        regions=False,
    )
    exact = exact_value(case)
    assert res.status in ("gap_limit", "optimal")  # optimal: the solver closed the gap anyway
    if res.status == "optimal":
        assert res.value == pytest.approx(exact, rel=REL)
    assert res.lower is not None
    assert res.lower <= exact * (1 + 1e-9)
    assert exact <= res.upper * (1 + 1e-9)
    assert res.upper - res.lower <= gap * res.upper + 1e-9


@pytest.mark.parametrize("solver", SOLVERS)
def test_adapter_returns_optimal_point_keyed_by_variable(solver: str) -> None:
    """The adapter itself (no orchestration): optimal, incumbent == bound, values keyed by var."""
    case = CASES[2]
    lip = lipopt.build_model(case.network(), case.domain, case.norm, case.c())
    result = get(solver).solve(lip.model, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == pytest.approx(exact_value(case), rel=REL)
    assert result.bound == pytest.approx(result.incumbent, rel=REL)
    assert result.bound >= result.incumbent
    for var in lip.x:
        lo, hi = var.bounds
        assert lo - 1e-9 <= result.values[var] <= hi + 1e-9
    for layer in lip.activations:
        for var in layer.values():
            assert min(abs(result.values[var]), abs(result.values[var] - 1)) <= 1e-6


@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_time_limit_is_sound_or_one_clear_line(solver: str) -> None:
    """1 s on a net no solver finishes in 1 s: a bracket (status time_limit) whose upper bound
    no sampled gradient exceeds; 1 ms: the same, or one line saying no bound was proven."""
    rng = np.random.default_rng(11)
    net = random_network(rng, [3, 50, 50, 50, 2])
    domain = Box([0.0] * 3, [1.0] * 3)
    c = np.array([1.0, -1.0])
    sampled = dual_norm(net.gradients(domain.sample(5000, rng), c), "linf").max()
    res = lipopt.lipschitz(
        net, domain, "linf", c, solver=solver, time_limit=1.0, split=False, regions=False
    )
    assert res.status == "time_limit"
    assert res.lower is not None and res.lower <= res.upper
    assert sampled <= res.upper
    try:
        tiny = lipopt.lipschitz(
            net, domain, "linf", c, solver=solver, time_limit=1e-3, split=False, regions=False
        )
    except SolverError as exc:
        assert "without a proven bound" in str(exc) and "\n" not in str(exc)
    else:
        assert tiny.status == "time_limit"
        assert tiny.lower is None or tiny.lower <= tiny.upper
        assert sampled <= tiny.upper


@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_constant_objective_needs_no_solve(solver: str) -> None:
    """A network without hidden layers: every adapter answers the constant ||W^T c||."""
    net = random_network(np.random.default_rng(3), [3, 2])
    c = np.array([0.5, -2.0])
    res = lipopt.lipschitz(net, Box([0.0] * 3, [1.0] * 3), "linf", c, solver=solver)
    expected = np.abs(net.affine_layers[0].weight.T @ c).sum()
    assert res.value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_verbose_log_goes_to_stderr(solver: str, capfd: pytest.CaptureFixture[str]) -> None:
    """--verbose streams the solver's log to stderr; stdout stays for results (--json)."""
    case = CASES[1]
    lipopt.lipschitz(
        case.network(),
        case.domain,
        case.norm,
        case.c(),
        solver=solver,
        verbose=True,
        split=False,
        regions=False,
    )
    out, err = capfd.readouterr()
    assert out.strip() == ""
    assert len(err.splitlines()) > 5
