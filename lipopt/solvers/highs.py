"""HiGHS in-process: the Pyomo model compiled to matrices, handed to ``highspy`` directly.

Pyomo's standard-form compiler turns the model into ``row_lower <= A x <= row_upper``,
``col_lower <= x <= col_upper``, the objective ``c x + offset`` and each column's integrality;
HiGHS gets those arrays in one call. (Pyomo's persistent HiGHS interface built the same model
row by row: 37 ms against about 9 ms, compiler included, for a candidate of the ℓ1
decomposition on [16,16,16,2]; docs/performance.md.)
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from lipopt.solvers.adapter import Adapter
from lipopt.solvers.base import (
    SolveOptions,
    SolverError,
    SolveResult,
    SolverFailure,
    Termination,
)

if TYPE_CHECKING:
    import pyomo.environ as pe

#: HiGHS's primal_solution_status for "a feasible point is at hand"
_FEASIBLE_POINT = 2
#: HiGHS's MIP prunes every node whose bound is within ``mip_feasibility_tolerance`` (1e-6,
#: absolute) of the incumbent, so "optimal" can leave its proven bound that far above the
#: optimum: 1e-6 *relative* only where the optimum is at least 1 (a constant of 0.906 came
#: back 1.03e-6 too high). The objective is therefore handed over multiplied by a power of two
#: that lifts its largest possible magnitude to about this size (exact in floating point; the
#: answers are divided back).
OBJECTIVE_MAGNITUDE = 1e3


def _status_map() -> dict[Any, Termination]:
    import highspy

    status = highspy.HighsModelStatus
    return {
        status.kOptimal: Termination.OPTIMAL,
        status.kTimeLimit: Termination.TIME_LIMIT,
        status.kIterationLimit: Termination.TIME_LIMIT,
        status.kSolutionLimit: Termination.TIME_LIMIT,
        status.kInfeasible: Termination.INFEASIBLE,
        status.kUnboundedOrInfeasible: Termination.INFEASIBLE,
        status.kInterrupt: Termination.INTERRUPTED,
        # highspy's stub (1.15) omits kHighsInterrupt, which the module has
        status.kHighsInterrupt: Termination.INTERRUPTED,  # type: ignore[attr-defined]
    }


@dataclass(frozen=True)
class CompiledModel:
    """A Pyomo model as HiGHS takes it.

    Attributes:
        lp: HiGHS's model: ``max/min c x + offset`` s.t. ``row_lower <= A x <= row_upper``,
            ``col_lower <= x <= col_upper``, integer columns marked.
        columns: the Pyomo variable of each column of ``A``.
        scale: the power of two ``lp``'s objective is the model's multiplied by
            (:data:`OBJECTIVE_MAGNITUDE`).
        others: the model's variables with no column (fixed, or in no row and not in the
            objective), each with the value reported for it.
    """

    lp: Any
    columns: list[Any]
    scale: float
    others: list[tuple[Any, float]]


def compile_model(model: pe.ConcreteModel) -> CompiledModel:
    """``model`` (linear, one active objective) as HiGHS's matrices.

    Pyomo's mixed standard form gives one row per finite side of each constraint with its sense
    (``<=``: ``(-inf, rhs]``, ``>=``: ``[rhs, inf)``, ``==``: ``[rhs, rhs]``); fixed variables
    are moved into the right-hand sides and the objective's offset."""
    import highspy
    import pyomo.core as pe  # lipopt.lazy.PYOMO
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    objective = next(model.component_data_objects(pe.Objective, active=True))
    form = LinearStandardFormCompiler().write(model, mixed_form=True, set_sense=objective.sense)
    columns = list(form.columns)
    inf = highspy.kHighsInf
    lower = np.array([-inf if v.lb is None else v.lb for v in columns], dtype=np.float64)
    upper = np.array([inf if v.ub is None else v.ub for v in columns], dtype=np.float64)
    integer = highspy.HighsVarType.kInteger
    continuous = highspy.HighsVarType.kContinuous

    rhs = np.asarray(form.rhs, dtype=np.float64)
    sense = np.array([multiplier for _con, multiplier in form.rows], dtype=np.int8)
    row_lower = np.where(sense <= 0, rhs, -inf)
    row_upper = np.where(sense >= 0, rhs, inf)

    matrix = form.A.tocsc()
    lp = highspy.HighsLp()
    lp.num_col_ = len(columns)
    lp.num_row_ = len(rhs)
    cost = np.asarray(form.c.toarray()[0], dtype=np.float64)
    offset = float(form.c_offset[0])
    scale = _objective_scale(cost, offset, lower, upper)
    lp.col_cost_ = cost * scale
    lp.offset_ = offset * scale
    lp.col_lower_ = lower
    lp.col_upper_ = upper
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data.astype(np.float64)
    lp.integrality_ = [integer if v.is_integer() else continuous for v in columns]
    lp.sense_ = (
        highspy.ObjSense.kMaximize if objective.sense == pe.maximize else highspy.ObjSense.kMinimize
    )

    placed = {id(v) for v in columns}
    others = [
        (v, _resting_value(v))
        for v in model.component_data_objects(pe.Var, descend_into=True)
        if id(v) not in placed
    ]
    return CompiledModel(lp, columns, scale, others)


def _objective_scale(
    cost: np.ndarray, offset: float, lower: np.ndarray, upper: np.ndarray
) -> float:
    """``2^k``, ``k >= 0``, that lifts ``M = |offset| + Σ_j |c_j| max(|l_j|, |u_j|)`` (at
    least ``|c x + offset|`` on the box) to about :data:`OBJECTIVE_MAGNITUDE`; 1 when ``M`` is
    already that large, zero, or infinite."""
    used = cost != 0
    reach = np.maximum(np.abs(lower[used]), np.abs(upper[used]))
    magnitude = abs(offset) + float(np.sum(np.abs(cost[used]) * reach))
    if not np.isfinite(magnitude) or magnitude <= 0 or magnitude >= OBJECTIVE_MAGNITUDE:
        return 1.0
    return float(2.0 ** np.floor(np.log2(OBJECTIVE_MAGNITUDE / magnitude)))


def _resting_value(var: Any) -> float:
    """A column-less variable's value: its fixed value, else 0 moved into its bounds."""
    if var.fixed and var.value is not None:
        return float(var.value)
    return float(
        np.clip(0.0, -np.inf if var.lb is None else var.lb, np.inf if var.ub is None else var.ub)
    )


@functools.cache
def _version() -> str:
    import highspy

    return str(highspy.Highs().version())


class HighsSolver(Adapter):
    """The default adapter: open source, in-process, MIP and LP."""

    name = "highs"
    label = "HiGHS"
    install_hint = "pip install highspy  (a dependency of lipopt)"
    FORKABLE = True
    #: under a cutoff "infeasible" is the common, expected answer, and the adapter re-runs every
    #: "infeasible" verdict of its MIP presolve with presolve off (presolve has called feasible
    #: Lipschitz models infeasible), so start without presolve ([64,20,20,2] l-inf ball, l1
    #: norm: 19.6 s -> 10.9 s, the retries were 7.4 s)
    CUTOFF_OPTIONS = MappingProxyType({"presolve": "off"})
    #: HiGHS's MIP presolve does not stop at the time limit: on the forward model of
    #: [200,500,500,1] (1.07 M nonzeros) it took 13.6 s under a 1 s limit and reduced nothing;
    #: without it the same solve stopped after 3.0 s with a proven bound
    LARGE_MODEL_OPTIONS = MappingProxyType({"presolve": "off"})

    def why_unavailable(self) -> str:
        try:
            import highspy  # noqa: F401
        except ImportError as exc:
            return f"HiGHS is not installed (highspy: {exc})"
        return ""

    def version(self) -> str:
        return _version()

    def _solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        import pyomo.core as pe  # lipopt.lazy.PYOMO
        from pyomo.common.errors import InfeasibleConstraintException

        start = time.perf_counter()
        try:
            compiled = compile_model(model)
        except InfeasibleConstraintException as exc:  # a row of fixed variables only, violated
            return SolveResult(
                Termination.INFEASIBLE, None, None, None, time.perf_counter() - start,
                solver=f"highs {self.version()}", log=f"[no solve: {exc}]\n",
            )  # fmt: skip
        except Exception as exc:  # a model the compiler refuses: reported as ours
            raise SolverFailure(f"HiGHS could not take the model: {exc}") from exc
        if compiled.lp.num_col_ == 0:  # no free variable left: no rows either, the offset is all
            value = compiled.lp.offset_ / compiled.scale
            return SolveResult(
                Termination.OPTIMAL, value, value, pe.ComponentMap(compiled.others),
                time.perf_counter() - start, 0, f"highs {self.version()} (no free variable)",
            )  # fmt: skip
        # HiGHS's own feasibility tolerances: tightening mip_feasibility_tolerance to 1e-9 made
        # it declare small, feasible Lipschitz models infeasible. Exactness does not rest on it:
        # the witness is re-verified in numpy and the bound is HiGHS's proven dual bound.
        settings: dict[str, Any] = {
            "mip_rel_gap": options.rel_gap,
            "mip_abs_gap": options.abs_gap * compiled.scale,  # in the scaled objective's units
            **options.options,
        }
        if options.time_limit is not None:
            settings["time_limit"] = float(options.time_limit)
        if options.threads is not None:
            settings["threads"] = int(options.threads)
        run = _Run(compiled, settings, options.stop, options.verbose)
        retried = False
        if run.termination is Termination.INFEASIBLE and settings.get("presolve") != "off":
            # HiGHS's MIP presolve has declared numerically delicate Lipschitz models
            # infeasible although a point satisfies every row to 1e-9; without presolve the
            # same model solves. Lipschitz models are never infeasible, so retry once.
            run = _Run(compiled, {**settings, "presolve": "off"}, options.stop, options.verbose)
            retried = True
        seconds = time.perf_counter() - start
        return SolveResult(
            termination=run.termination,
            incumbent=run.incumbent,
            bound=run.bound,
            values=run.values,
            seconds=seconds,
            nodes=run.nodes,
            solver=f"highs {self.version()}",
            log=("[retried with presolve off after an infeasible verdict]\n" if retried else "")
            + run.log,
        )


def _highs_with(settings: dict[str, Any], verbose: bool) -> tuple[Any, list[str]]:
    """A ``highspy.Highs`` with ``settings`` set, whose log lines are kept in the returned list
    (and streamed to stderr when ``verbose``)."""
    import highspy

    highs = highspy.Highs()
    lines: list[str] = []

    def keep(event: Any) -> None:
        lines.append(event.message)
        if verbose:  # stdout is for results
            sys.stderr.write(event.message)

    highs.setOptionValue("log_to_console", False)
    highs.cbLogging += keep
    for key, value in settings.items():
        if highs.setOptionValue(key, value) == highspy.HighsStatus.kError:
            raise SolverError(f"HiGHS refused the option {key}={value!r}")
    return highs, lines


class _Run:
    """One HiGHS run of a compiled model: termination, incumbent, bound, values, nodes, log.

    ``stop`` is asked at HiGHS's MIP interrupt checks with the incumbent's objective and the
    dual bound; a stop it asked for ends as :attr:`Termination.INTERRUPTED`."""

    def __init__(
        self,
        compiled: CompiledModel,
        settings: dict[str, Any],
        stop: Callable[[float, float], bool] | None,
        verbose: bool,
    ) -> None:
        import highspy

        highs, lines = _highs_with(settings, verbose)
        self.stopped = False

        def check(event: Any) -> None:
            out = event.data_out
            incumbent = float(out.mip_primal_bound) / compiled.scale
            if stop is not None and stop(incumbent, float(out.mip_dual_bound) / compiled.scale):
                self.stopped = True
                event.interrupt()

        if stop is not None:
            highs.cbMipInterrupt += check
        highs.HandleKeyboardInterrupt = True
        try:
            if highs.passModel(compiled.lp) == highspy.HighsStatus.kError:
                raise SolverFailure("HiGHS refused the model: " + "".join(lines[-3:]).strip())
            highs.run()
        except SolverError:
            raise
        except Exception as exc:  # the solver's own failure, reported as ours
            raise SolverFailure(f"HiGHS failed: {exc}") from exc
        self.log = "".join(lines)
        self._read(highs, compiled)

    def _read(self, highs: Any, compiled: CompiledModel) -> None:
        """Why HiGHS stopped, its incumbent (divided back by the objective's scale), its bound
        (a MIP's dual bound; an LP's optimum) and the point, by Pyomo variable."""
        import highspy
        import pyomo.core as pe  # lipopt.lazy.PYOMO

        status = highs.getModelStatus()
        asked = status in (
            highspy.HighsModelStatus.kInterrupt,
            highspy.HighsModelStatus.kHighsInterrupt,  # type: ignore[attr-defined]  # not in the stub
        )
        if asked and not self.stopped:  # HiGHS caught Ctrl-C: the caller must see it, as SCIP's
            raise KeyboardInterrupt
        self.termination = (
            Termination.INTERRUPTED
            if self.stopped
            else _status_map().get(status, Termination.ERROR)
        )
        info = highs.getInfo()
        feasible = info.primal_solution_status == _FEASIBLE_POINT
        scale = compiled.scale
        self.incumbent: float | None = (
            float(info.objective_function_value) / scale if feasible else None
        )
        self.nodes: int | None = int(info.mip_node_count)
        bound: float | None
        if self.nodes < 0:  # an LP: no branch and bound; its optimum is its bound
            self.nodes = None
            optimal = status == highspy.HighsModelStatus.kOptimal
            bound = self.incumbent if optimal and feasible else None
        else:
            bound = float(info.mip_dual_bound) / scale
        self.bound = None if bound is None or not np.isfinite(bound) else bound
        self.values: pe.ComponentMap | None = None
        if feasible:
            point = highs.getSolution().col_value
            self.values = pe.ComponentMap(zip(compiled.columns, map(float, point)))
            self.values.update(compiled.others)
