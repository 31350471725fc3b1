"""Gurobi through Pyomo's ``contrib.solver`` ``gurobi_direct`` interface (gurobipy in-process).

``pip install "lipopt[gurobi]"`` installs ``gurobipy`` with its size-limited licence: at most
2000 variables and 2000 linear constraints. Larger models need the user's own licence; Gurobi
refuses them with error 10010, reported here as one line that says so and suggests HiGHS.

Options: ``MIPGap`` (``rel_gap``), ``MIPGapAbs`` (``abs_gap``), ``TimeLimit``, ``Threads``,
``OutputFlag``; ``IntFeasTol`` and ``FeasibilityTol`` are tightened to 1e-9 so the big-M encoding
cannot gain objective from near-integral binaries.
"""

from __future__ import annotations

import math
import sys
import time
from typing import TYPE_CHECKING, Any

from lipopt.solvers.adapter import Adapter
from lipopt.solvers.base import (
    EXACT_GAP,
    SolveOptions,
    SolveResult,
    SolverFailure,
    Termination,
    closed_exactly,
)

if TYPE_CHECKING:
    import pyomo.environ as pe

#: Gurobi's error code for "Model too large for size-limited license"
SIZE_LIMIT_ERROR = 10010

#: the size-limited licence's limits (variables, linear constraints)
SIZE_LIMIT = 2000

#: solver options always set (the caller's ``options.options`` override them)
DEFAULT_OPTIONS: dict[str, Any] = {"IntFeasTol": 1e-9, "FeasibilityTol": 1e-9, "OutputFlag": 1}


def _status_map() -> dict[Any, Termination]:
    """Pyomo's termination condition (from Gurobi's ``Status``) -> why it stopped."""
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    return {
        TC.convergenceCriteriaSatisfied: Termination.OPTIMAL,  # GRB.OPTIMAL (within MIPGap)
        TC.maxTimeLimit: Termination.TIME_LIMIT,  # GRB.TIME_LIMIT
        TC.iterationLimit: Termination.TIME_LIMIT,  # GRB.ITERATION_LIMIT, GRB.NODE_LIMIT
        TC.provenInfeasible: Termination.INFEASIBLE,  # GRB.INFEASIBLE
        TC.infeasibleOrUnbounded: Termination.INFEASIBLE,  # GRB.INF_OR_UNBD
        TC.interrupted: Termination.INTERRUPTED,  # GRB.INTERRUPTED
        TC.unbounded: Termination.ERROR,  # a Lipschitz model is bounded
        TC.objectiveLimit: Termination.INTERRUPTED,  # GRB.CUTOFF, GRB.USER_OBJ_LIMIT
        TC.unknown: Termination.ERROR,  # GRB.NUMERIC, GRB.SUBOPTIMAL, GRB.LOADED
    }


def size_limit_message(model: pe.ConcreteModel) -> str:
    """The one line a user sees when the size-limited licence refuses ``model``."""
    import pyomo.environ as pe

    variables = sum(1 for _ in model.component_data_objects(pe.Var, descend_into=True))
    constraints = sum(
        1 for _ in model.component_data_objects(pe.Constraint, active=True, descend_into=True)
    )
    return (
        f"Gurobi's size-limited licence refuses this model ({variables} variables, "
        f"{constraints} constraints; the limit is {SIZE_LIMIT} of each): "
        "use --solver highs, or install a full Gurobi licence"
    )


def _values(results: Any) -> pe.ComponentMap:
    """The loaded incumbent's values, by Pyomo variable."""
    import pyomo.environ as pe

    return pe.ComponentMap(results.solution_loader.get_vars())


class GurobiSolver(Adapter):
    """Gurobi: commercial MIP, in-process through gurobipy (not forked: its safety under fork
    is unchecked)."""

    name = "gurobi"
    label = "Gurobi"
    install_hint = 'pip install "lipopt[gurobi]"  (gurobipy, with a size-limited licence)'

    def _factory(self) -> Any:
        from pyomo.contrib.solver.solvers.gurobi.gurobi_direct import GurobiDirect

        return GurobiDirect()

    def why_unavailable(self) -> str:
        try:
            status = self._factory().available()
        except Exception as exc:  # noqa: BLE001 - a broken installation is "not available"
            return f"Gurobi is not usable here ({type(exc).__name__}: {exc})"
        return "" if status else f"Gurobi is not usable here ({getattr(status, 'name', status)})"

    def version(self) -> str:
        version = self._factory().version()
        return "unknown" if version is None else ".".join(str(p) for p in version)

    def _solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        import gurobipy

        solver = self._factory()
        solver_options = {**DEFAULT_OPTIONS, **options.options}
        kwargs: dict[str, Any] = {
            "tee": [sys.stderr] if options.verbose else False,  # stdout is for results
            "load_solutions": False,
            "raise_exception_on_nonoptimal_result": False,
            "rel_gap": options.rel_gap,
            "abs_gap": options.abs_gap,
            "solver_options": solver_options,
        }
        if options.time_limit is not None:
            kwargs["time_limit"] = float(options.time_limit)
        if options.threads is not None:
            kwargs["threads"] = int(options.threads)
        start = time.perf_counter()
        try:
            results = solver.solve(model, **kwargs)
        except gurobipy.GurobiError as exc:
            if getattr(exc, "errno", None) == SIZE_LIMIT_ERROR or "size-limited" in str(exc):
                raise SolverFailure(size_limit_message(model)) from None
            raise SolverFailure(f"Gurobi failed: {exc}") from exc
        except Exception as exc:  # the solver's own failure, reported as ours
            raise SolverFailure(f"Gurobi failed: {exc}") from exc
        seconds = time.perf_counter() - start
        termination = _status_map().get(results.termination_condition, Termination.ERROR)
        incumbent = results.incumbent_objective
        bound = results.objective_bound
        if bound is not None and not math.isfinite(bound):
            bound = None
        if bound is None and termination is Termination.OPTIMAL and incumbent is not None:
            bound = incumbent  # an LP has no ObjBound: its optimum is the bound
        if (
            termination is Termination.OPTIMAL
            and options.rel_gap > EXACT_GAP
            and incumbent is not None
            and bound is not None
            and not closed_exactly(incumbent, bound)
        ):
            termination = Termination.GAP_LIMIT
        values = None
        if incumbent is not None:
            values = _values(results)
        nodes = getattr(results.extra_info, "NodeCount", None)
        return SolveResult(
            termination=termination,
            incumbent=incumbent,
            bound=bound,
            values=values,
            seconds=seconds,
            nodes=None if nodes is None else int(nodes),
            solver=f"gurobi {self.version()}",
            log=getattr(results, "solver_log", "") or "",
        )
