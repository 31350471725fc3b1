"""The solver contract: options in, *why it stopped* kept apart from *what came back*."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from lipopt.status import Status

if TYPE_CHECKING:
    import pyomo.environ as pe

#: relative and absolute gaps used for an "exact" solve: far below the 1e-6 we promise
EXACT_GAP = 1e-9


class SolverError(RuntimeError):
    """The solver is missing, refused an option, refused the model, or failed; the message
    says which. ``bracket``: the best proven answer found before the error (None if none), set
    by the strategy that saw it fail."""

    bracket: Any = None


class SolverFailure(SolverError):
    """The solver ran on the model and failed (a licence refusal, a crash, numerical trouble,
    a worker process that died): the answer's status is ``solver_error``. Not a mistake in the
    user's input, unlike a missing solver or a refused option."""


class NoBoundError(SolverError):
    """The time limit came before the solver proved any bound: the answer's status is
    ``time_limit``."""


class Termination(str, Enum):
    """Why the solver stopped."""

    OPTIMAL = "optimal"
    GAP_LIMIT = "gap_limit"
    TIME_LIMIT = "time_limit"
    INFEASIBLE = "infeasible"
    INTERRUPTED = "interrupted"
    ERROR = "error"

    @property
    def status(self) -> Status:
        """The status of an answer that this ended (:data:`STATUS_OF`)."""
        return STATUS_OF[self]


#: the answer's status when a solve ended so: an infeasible Lipschitz model is the solver's
#: failure (the strategies raise :class:`SolverFailure` on it, and on an error, before asking)
STATUS_OF: dict[Termination, Status] = {
    Termination.OPTIMAL: Status.OPTIMAL,
    Termination.GAP_LIMIT: Status.GAP_LIMIT,
    Termination.TIME_LIMIT: Status.TIME_LIMIT,
    Termination.INFEASIBLE: Status.SOLVER_ERROR,
    Termination.INTERRUPTED: Status.INTERRUPTED,
    Termination.ERROR: Status.SOLVER_ERROR,
}


@dataclass(frozen=True)
class SolveOptions:
    """How far and how to solve.

    Attributes:
        time_limit: wall-clock seconds, or None for no limit.
        rel_gap: stop when ``(bound - incumbent) / |bound| <= rel_gap``.
        abs_gap: stop when ``bound - incumbent <= abs_gap``.
        threads: solver threads (None: the solver's default).
        verbose: stream the solver's log.
        options: extra solver-specific options, passed through.
        stop: called during a MIP solve with the incumbent's objective and the proven bound
            (``-inf`` / ``inf`` while there is none); True stops the solve with
            :attr:`Termination.INTERRUPTED` and its bounds so far. HiGHS asks at its MIP
            interrupt checks, SCIP after each node; the other adapters never ask.
    """

    time_limit: float | None = None
    rel_gap: float = EXACT_GAP
    abs_gap: float = EXACT_GAP
    threads: int | None = None
    verbose: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    stop: Callable[[float, float], bool] | None = None


@dataclass(frozen=True)
class SolveResult:
    """What one maximisation returned.

    Attributes:
        termination: why it stopped.
        incumbent: objective of the best feasible point found (None if none).
        bound: best proven upper bound on the maximum (None if none).
        values: the incumbent's variable values, keyed by Pyomo variable (None if none).
        seconds: solver wall time.
        nodes: branch-and-bound nodes, where the solver reports them.
        solver: the adapter's name and version.
        log: the solver's log, where captured.
    """

    termination: Termination
    incumbent: float | None
    bound: float | None
    values: Any
    seconds: float
    nodes: int | None = None
    solver: str = ""
    log: str = ""

    @property
    def gap(self) -> float | None:
        """Relative gap ``(bound - incumbent) / max(|bound|, tiny)``."""
        if self.incumbent is None or self.bound is None:
            return None
        return max(self.bound - self.incumbent, 0.0) / max(abs(self.bound), 1e-12)


class Solver(Protocol):
    """A MIP/LP solver adapter: maximises ``model.objective`` of a Pyomo model. The adapters
    derive from :class:`lipopt.solvers.adapter.Adapter`, which declares what each can do."""

    name: str

    def available(self) -> bool:
        """Whether the solver can be used here (checked when asked, never at import)."""

    def version(self) -> str:
        """The solver's version string."""

    def solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        """Solve; never raises for limits reached, raises :class:`SolverError` on failure."""


def closed_exactly(incumbent: float, bound: float) -> bool:
    """Whether a maximisation's ``bound - incumbent`` is within the exact solve's gap (ten times
    :data:`EXACT_GAP`, relative to ``max(1, |bound|)``): a stop there is optimality."""
    return bound - incumbent <= 10 * EXACT_GAP * max(1.0, abs(bound))


def constant_objective_result(model: pe.ConcreteModel, solver: str) -> SolveResult | None:
    """The answer without a solver when the objective is a number (e.g. a network with no
    hidden layer): every feasible point is optimal; variables sit at the middle of their bounds."""
    expr = model.objective.expr
    degree = getattr(expr, "polynomial_degree", lambda: 0)()
    if degree != 0:
        return None
    # the constant term, not pe.value(expr): a zero coefficient (0.0 * x) leaves degree 0 with a
    # variable in the expression that may have no value
    import pyomo.core as pe  # lipopt.lazy.PYOMO
    from pyomo.repn import generate_standard_repn

    value = float(pe.value(generate_standard_repn(expr, quadratic=False).constant))
    values = pe.ComponentMap()
    for var in model.component_data_objects(pe.Var, descend_into=True):
        lo, hi = var.bounds
        values[var] = 0.5 * (lo + hi) if lo is not None and hi is not None else (lo or hi or 0.0)
    return SolveResult(
        Termination.OPTIMAL, value, value, values, 0.0, 0, f"{solver} (constant objective)"
    )
