"""HiGHS through Pyomo's ``contrib.solver`` interface (highspy in-process)."""

from __future__ import annotations

import time
from typing import Any

import pyomo.environ as pe

from lipopt.solvers.base import (
    SolveOptions,
    SolveResult,
    SolverError,
    Termination,
    constant_objective_result,
)


def _status_map() -> dict[Any, Termination]:
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    return {
        TC.convergenceCriteriaSatisfied: Termination.OPTIMAL,
        TC.maxTimeLimit: Termination.TIME_LIMIT,
        TC.provenInfeasible: Termination.INFEASIBLE,
        TC.locallyInfeasible: Termination.INFEASIBLE,
        TC.infeasibleOrUnbounded: Termination.INFEASIBLE,
        TC.interrupted: Termination.INTERRUPTED,
        TC.iterationLimit: Termination.TIME_LIMIT,
    }


class HighsSolver:
    """The default adapter: open source, in-process, MIP and LP."""

    name = "highs"
    supports_mip = True

    def _factory(self) -> Any:
        from pyomo.contrib.solver.solvers.highs import Highs

        return Highs()

    def available(self) -> bool:
        try:
            return bool(self._factory().available())
        except ImportError:
            return False

    def version(self) -> str:
        return ".".join(str(p) for p in self._factory().version())

    def solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        if not self.available():
            raise SolverError("HiGHS is not available: pip install highspy")
        trivial = constant_objective_result(model, self.name)
        if trivial is not None:
            return trivial
        solver = self._factory()
        solver_options = {"mip_feasibility_tolerance": 1e-9, **options.options}
        kwargs: dict[str, Any] = {
            "tee": options.verbose,
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
        except Exception as exc:  # the solver's own failure, reported as ours
            raise SolverError(f"HiGHS failed: {exc}") from exc
        seconds = time.perf_counter() - start
        termination = _status_map().get(results.termination_condition, Termination.ERROR)
        values = None
        if results.incumbent_objective is not None:
            values = results.solution_loader.get_vars()
        nodes = None
        highs_model = getattr(solver, "_solver_model", None)
        if highs_model is not None:
            try:
                nodes = int(highs_model.getInfo().mip_node_count)
            except Exception:  # noqa: BLE001 - node count is informative only
                nodes = None
        bound = results.objective_bound
        if bound is not None and abs(bound) == float("inf"):
            bound = None
        return SolveResult(
            termination=termination,
            incumbent=results.incumbent_objective,
            bound=bound,
            values=values,
            seconds=seconds,
            nodes=nodes,
            solver=f"highs {self.version()}",
        )

