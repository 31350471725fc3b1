"""SCIP (Apache 2.0) in-process through PySCIPOpt, which ships SCIP in its wheel.

The Pyomo model is handed over row by row: each active constraint's linear part (Pyomo's
standard representation, fixed variables folded into the constant) becomes one SCIP linear
constraint ``lhs <= a·v <= rhs``, and ``model.objective`` is maximised. Why SCIP stopped, its dual
bound (a proven upper bound on the maximum) and its node count are read from SCIP itself.

Options: ``limits/gap`` (``rel_gap``; SCIP's gap is ``|primal - dual| / min(|primal|, |dual|)``,
at least as large as :meth:`~lipopt.solvers.base.SolveResult.gap`), ``limits/absgap``
(``abs_gap``), ``limits/time``; any ``options.options`` are SCIP parameters by name
(e.g. ``{"randomization/randomseedshift": 1}``). SCIP solves on one thread; ``threads`` is ignored.
Tolerances are SCIP's defaults (feasibility 1e-6, as HiGHS's): exactness does not rest on them,
because the witness is re-verified in numpy and the bound is SCIP's proven dual bound.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from lipopt.solvers.adapter import Adapter
from lipopt.solvers.base import (
    SolveOptions,
    SolverError,
    SolveResult,
    SolverFailure,
    Termination,
    closed_exactly,
)

if TYPE_CHECKING:
    import pyomo.environ as pe

#: SCIP's status -> why it stopped (``gaplimit`` is told apart from an exact optimum below)
STATUS = {
    "optimal": Termination.OPTIMAL,
    "gaplimit": Termination.GAP_LIMIT,
    "timelimit": Termination.TIME_LIMIT,
    "nodelimit": Termination.TIME_LIMIT,
    "totalnodelimit": Termination.TIME_LIMIT,
    "stallnodelimit": Termination.TIME_LIMIT,
    "memlimit": Termination.TIME_LIMIT,
    "sollimit": Termination.INTERRUPTED,
    "bestsollimit": Termination.INTERRUPTED,
    "userinterrupt": Termination.INTERRUPTED,
    "terminate": Termination.INTERRUPTED,
    "infeasible": Termination.INFEASIBLE,
    "inforunbd": Termination.INFEASIBLE,
}


@functools.cache
def _version() -> str:
    import pyscipopt

    return str(pyscipopt.Model().version())


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) or abs(value) >= 1e20 else value


def _linear(expr: Any, what: str) -> tuple[list[Any], list[float], float]:
    """``(variables, coefficients, constant)`` of a linear Pyomo expression."""
    from pyomo.repn import generate_standard_repn

    repn = generate_standard_repn(expr, compute_values=True, quadratic=False)
    if not repn.is_linear():
        raise SolverError(f"SCIP adapter: {what} is not linear")
    return list(repn.linear_vars), [float(a) for a in repn.linear_coefs], float(repn.constant)


#: SCIP's feasibility tolerance on a model with a quadratic row (its default is 1e-6). Over ℓ2
#: balls (the ball's row) 2 of 16 small solves (tests/test_l2_ball.py's networks, ℓ∞ and ℓ1
#: input norms) ended with an optimum 1.4e-6 above the value its own pattern attains, the rows'
#: slack added up, so the bracket stayed open; with 1e-7, none of the 16 (and no slower)
QUADRATIC_FEASTOL = 1e-7


def _quadratic(expr: Any, column_of: dict[int, Any]) -> Any:
    """A quadratic Pyomo expression as a SCIP expression (the ℓ2 objective's ``t <= Σ g_j^2``,
    which SCIP solves by spatial branching)."""
    import pyscipopt
    from pyomo.repn import generate_standard_repn

    repn = generate_standard_repn(expr, compute_values=True, quadratic=True)
    if repn.nonlinear_expr is not None:
        raise SolverError("SCIP adapter: a constraint is neither linear nor quadratic")
    square = pyscipopt.quicksum(
        float(a) * column_of[id(u)] * column_of[id(v)]
        for (u, v), a in zip(repn.quadratic_vars, repn.quadratic_coefs)
    )
    line = pyscipopt.quicksum(
        float(a) * column_of[id(v)] for v, a in zip(repn.linear_vars, repn.linear_coefs)
    )
    return square + line + float(repn.constant)


def _bound(value: Any) -> float | None:
    import pyomo.core as pe  # lipopt.lazy.PYOMO

    return None if value is None else float(pe.value(value))


def _stopping(stop: Callable[[float, float], bool]) -> Any:
    """A SCIP event handler that asks ``stop(incumbent, bound)`` after every solved node and
    interrupts the solve when it says so (``stopped`` then records that it did)."""
    from pyscipopt import SCIP_EVENTTYPE, Eventhdlr

    class Stopping(Eventhdlr):
        stopped = False

        def eventinit(self) -> None:
            self.model.catchEvent(SCIP_EVENTTYPE.NODESOLVED, self)

        def eventexit(self) -> None:
            self.model.dropEvent(SCIP_EVENTTYPE.NODESOLVED, self)

        def eventexec(self, event: Any) -> None:
            scip = self.model
            incumbent = _finite(float(scip.getPrimalbound()))
            bound = _finite(float(scip.getDualbound()))
            asked = stop(
                -math.inf if incumbent is None else incumbent,
                math.inf if bound is None else bound,
            )
            if asked and not self.stopped:
                self.stopped = True
                scip.interruptSolve()

    return Stopping()


def _configure(scip: Any, options: SolveOptions) -> Any:
    """Set ``options`` on the SCIP model: its log, ``limits/gap``, ``limits/absgap``,
    ``limits/time``, the pass-through parameters and, when ``options.stop`` is given, the
    stopping event handler, which is returned (else None)."""
    scip.hideOutput(not options.verbose)
    if options.verbose:
        scip.redirectOutput()  # SCIP's log through Python's sys.stdout, sent to stderr below
    scip.setParam("limits/gap", float(options.rel_gap))
    scip.setParam("limits/absgap", float(options.abs_gap))
    if options.time_limit is not None:
        scip.setParam("limits/time", max(float(options.time_limit), 0.0))
    for key, value in options.options.items():
        try:
            scip.setParam(key, value)
        except Exception as exc:  # noqa: BLE001 - SCIP's own message is clear enough
            raise SolverError(f"SCIP refused option {key}={value!r}: {exc}") from None
    stopping = None
    if options.stop is not None:
        stopping = _stopping(options.stop)
        scip.includeEventhdlr(stopping, "lipopt-stop", "asks the caller whether to stop")
    return stopping


class ScipSolver(Adapter):
    """SCIP: open source (Apache 2.0), in-process, MIP and LP, and nonconvex quadratic rows."""

    name = "scip"
    label = "SCIP"
    install_hint = "pip install pyscipopt  (a dependency of lipopt; SCIP itself is in its wheel)"
    QUADRATIC = True  # by spatial branching (:func:`_quadratic`)
    FORKABLE = True

    def why_unavailable(self) -> str:
        try:
            import pyscipopt  # noqa: F401
        except ImportError as exc:
            return f"SCIP is not installed (pyscipopt: {exc})"
        return ""

    def version(self) -> str:
        return _version()

    def _solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        scip, columns = self._translate(model)
        if scip is None:
            return SolveResult(
                Termination.INFEASIBLE, None, None, None, 0.0, 0, f"scip {self.version()}"
            )
        stopping = _configure(scip, options)
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout is for results
                # without the GIL the heartbeat thread (lipopt.progress) can report; the log
                # redirected to Python needs the GIL (SCIP crashed without it), so not then
                if options.verbose:
                    scip.optimize()
                else:
                    scip.optimizeNogil()
        except Exception as exc:  # the solver's own failure, reported as ours
            raise SolverFailure(f"SCIP failed: {exc}") from exc
        seconds = time.perf_counter() - start
        status = scip.getStatus()
        asked_to_stop = stopping is not None and stopping.stopped
        if status == "userinterrupt" and not asked_to_stop:
            raise KeyboardInterrupt  # SCIP caught Ctrl-C: the caller must see it, not a status
        return self._result(scip, columns, STATUS.get(status, Termination.ERROR), seconds)

    def _result(
        self, scip: Any, columns: list[tuple[Any, Any]], termination: Termination, seconds: float
    ) -> SolveResult:
        """The solved SCIP model's answer: its best solution (objective and values by Pyomo
        variable), its dual bound (the incumbent at an optimum; a gap stop within the exact
        solve's gap counts as optimal) and its node count."""
        import pyomo.core as pe  # lipopt.lazy.PYOMO

        incumbent = None
        values = None
        if scip.getNSols() > 0:
            best = scip.getBestSol()
            incumbent = float(scip.getSolObjVal(best))
            values = pe.ComponentMap(
                (var, float(var.value) if col is None else float(scip.getSolVal(best, col)))
                for var, col in columns
            )
        bound = _finite(float(scip.getDualbound()))
        if termination is Termination.OPTIMAL and incumbent is not None:
            bound = incumbent if bound is None else max(bound, incumbent)
        if termination is Termination.GAP_LIMIT and incumbent is not None and bound is not None:
            if closed_exactly(incumbent, bound):
                termination = Termination.OPTIMAL  # stopped by the exact solve's own gap
        return SolveResult(
            termination=termination,
            incumbent=incumbent,
            bound=bound,
            values=values,
            seconds=seconds,
            nodes=int(scip.getNNodes()),
            solver=f"scip {self.version()}",
        )

    @staticmethod
    def _translate(model: pe.ConcreteModel) -> tuple[Any, list[tuple[Any, Any]]]:
        """A SCIP model of ``model``: one column per free Pyomo variable, one row per active
        constraint, the objective maximised. Returns it (None when a constraint of fixed
        variables alone is violated: the model is infeasible) with the (Pyomo, SCIP) variable
        pairs, whose SCIP side is None for a fixed variable."""
        import pyomo.core as pe  # lipopt.lazy.PYOMO
        import pyscipopt

        scip = pyscipopt.Model("lipschitz")
        scip.hideOutput(True)  # nothing on stdout while the model is built (solve() decides later)
        columns: list[tuple[Any, Any]] = []
        column_of: dict[int, Any] = {}
        for var in model.component_data_objects(pe.Var, descend_into=True):
            if var.fixed:
                columns.append((var, None))
                continue
            kind = "B" if var.is_binary() else ("I" if var.is_integer() else "C")
            lower, upper = var.bounds
            col = scip.addVar(name=var.name, vtype=kind, lb=lower, ub=upper)
            column_of[id(var)] = col
            columns.append((var, col))
        for con in model.component_data_objects(pe.Constraint, active=True, descend_into=True):
            lower, upper = _bound(con.lower), _bound(con.upper)
            if con.body.polynomial_degree() == 2:
                body = _quadratic(con.body, column_of)
                scip.addCons(_ranged(body, lower, upper, 0.0), name=con.name)
                scip.setParam("numerics/feastol", QUADRATIC_FEASTOL)
                continue
            variables, coefs, constant = _linear(con.body, f"constraint {con.name}")
            if not variables:  # every variable fixed: a check, not a row
                if (lower is not None and constant < lower - 1e-9) or (
                    upper is not None and constant > upper + 1e-9
                ):
                    return None, columns  # violated by the fixed values alone: infeasible
                continue
            row = pyscipopt.quicksum(a * column_of[id(v)] for v, a in zip(variables, coefs))
            scip.addCons(_ranged(row, lower, upper, constant), name=con.name)
        objectives = list(model.component_data_objects(pe.Objective, active=True))
        if len(objectives) != 1:
            raise SolverError(f"SCIP adapter: expected one objective, found {len(objectives)}")
        objective = objectives[0]
        variables, coefs, constant = _linear(objective.expr, "the objective")
        expr = pyscipopt.quicksum(a * column_of[id(v)] for v, a in zip(variables, coefs))
        sense: Literal["maximize", "minimize"] = (
            "maximize" if objective.sense == pe.maximize else "minimize"
        )
        scip.setObjective(expr + constant, sense)
        return scip, columns


def _ranged(row: Any, lower: float | None, upper: float | None, constant: float) -> Any:
    """``lower <= row + constant <= upper`` as one SCIP constraint expression."""
    lo = None if lower is None else lower - constant
    hi = None if upper is None else upper - constant
    if lo is not None and hi is not None:
        if lo == hi:
            return row == lo
        return (lo <= row) <= hi
    if lo is not None:
        return row >= lo
    if hi is not None:
        return row <= hi
    raise SolverError("SCIP adapter: a constraint without bounds")
