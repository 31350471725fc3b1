"""HiGHS through Pyomo's ``contrib.solver`` interface (highspy in-process)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import pyomo.environ as pe

from lipopt.solvers.base import (
    SolveOptions,
    SolverError,
    SolveResult,
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


class _DropRecords(logging.Filter):
    """Drops log records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


class HighsSolver:
    """The default adapter: open source, in-process, MIP and LP."""

    name = "highs"
    supports_mip = True

    def _factory(self, stop: Callable[[float, float], bool] | None = None) -> Any:
        from pyomo.contrib.solver.common.results import TerminationCondition as TC
        from pyomo.contrib.solver.solvers.highs import Highs

        if stop is None:
            return Highs()

        class StoppableHighs(Highs):  # type: ignore[misc, valid-type]
            """Pyomo's HiGHS interface with ``stop`` asked at HiGHS's MIP interrupt checks;
            a stop it asked for ends as "interrupted" (Pyomo knows no such HiGHS status)."""

            stopped = False

            def _solve(self) -> Any:
                highs = self._solver_model

                def check(event: Any) -> None:
                    out = event.data_out
                    if stop(float(out.mip_primal_bound), float(out.mip_dual_bound)):
                        self.stopped = True
                        event.interrupt()

                unhandled = _DropRecords("kInterrupt")  # Pyomo's warning about that status
                logger = logging.getLogger(Highs.__module__)
                highs.cbMipInterrupt += check
                logger.addFilter(unhandled)
                try:
                    results = super()._solve()
                finally:
                    highs.cbMipInterrupt -= check
                    logger.removeFilter(unhandled)
                if self.stopped:
                    results.termination_condition = TC.interrupted
                return results

        return StoppableHighs()

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
        solver = self._factory(options.stop)
        # HiGHS's own feasibility tolerances: tightening mip_feasibility_tolerance to 1e-9 made
        # it declare small, feasible Lipschitz models infeasible. Exactness does not rest on it:
        # the witness is re-verified in numpy and the bound is HiGHS's proven dual bound.
        solver_options = dict(options.options)
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
        results = self._run(solver, model, kwargs)
        termination = _status_map().get(results.termination_condition, Termination.ERROR)
        retried = False
        if termination is Termination.INFEASIBLE and solver_options.get("presolve") != "off":
            # HiGHS's MIP presolve has declared numerically delicate Lipschitz models
            # infeasible although a point satisfies every row to 1e-9; without presolve the
            # same model solves. Lipschitz models are never infeasible, so retry once.
            solver = self._factory(options.stop)
            kwargs["solver_options"] = {**solver_options, "presolve": "off"}
            results = self._run(solver, model, kwargs)
            termination = _status_map().get(results.termination_condition, Termination.ERROR)
            retried = True
        seconds = time.perf_counter() - start
        values = None
        if results.incumbent_objective is not None:
            values = results.solution_loader.get_vars()
        nodes = None
        highs_model = getattr(solver, "_solver_model", None)
        if highs_model is not None:
            try:
                nodes = int(highs_model.getInfo().mip_node_count)
                nodes = nodes if nodes >= 0 else None  # -1: an LP, no branch and bound
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
            log=("[retried with presolve off after an infeasible verdict]\n" if retried else "")
            + (results.solver_log or ""),
        )

    @staticmethod
    def _run(solver: Any, model: pe.ConcreteModel, kwargs: dict[str, Any]) -> Any:
        try:
            return solver.solve(model, **kwargs)
        except Exception as exc:  # the solver's own failure, reported as ours
            raise SolverError(f"HiGHS failed: {exc}") from exc
