"""What is proven without a solver, and how an answer cut short by a failure is reported.

When the solver fails (:class:`~lipopt.solvers.SolverFailure`) or the time limit comes before it
proves anything (:class:`~lipopt.solvers.NoBoundError`), the answer is still a bracket:

* **upper**: bound propagation proves ``∇f(x) ∈ [g_lo, g_hi]`` entrywise at every differentiable
  ``x`` of the domain (for an output norm, ``J(x)^T w`` for every ``w`` of the dual ball), so
  ``||∇f(x)||_{α*} <= ||max(|g_lo|, |g_hi|)||_{α*}`` (FastLip), a norm being monotone in the
  entries' magnitudes; the Jacobian-norm bound (:mod:`lipopt.bounds.jacobian`: the norm's own
  chords back-substituted through the backward pass) is at most that, and is what is kept;
* **lower**: the best point evaluated so far (the attack's), or else the value at the domain's
  centre or at a few sampled points, each differentiable, so the value is attained.

The status says how the answer ended (``solver_error`` or ``time_limit``), never relabelled by a
bracket kept from before the failure, unless that bracket is closed (the answer is exact).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from lipopt.bounds.interval import NetworkBounds
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.bracket import Bracket, closed, meet, status_note
from lipopt.domain import Disjunction
from lipopt.heuristics.witness import Witness, best_differentiable
from lipopt.kinks import is_differentiable_at
from lipopt.progress import Say
from lipopt.query import Query
from lipopt.solvers import NoBoundError, SolverError
from lipopt.status import Status

#: the root's bound replaces a bracket's upper bound only when below it by this share (a
#: floor bracket already holds the same bound, up to rounding)
CAP_MARGIN = 1e-9

#: points sampled for an attained lower bound when the centre is not differentiable
FLOOR_SAMPLES = 8


def quick_witness(query: Query, seed: int = 0) -> Witness | None:
    """An attained value without any search: the domain's centre, or else the best of a few
    sampled points, where the network is differentiable (its region is not certified)."""
    low, high = query.domain.bounding_box()
    centre = getattr(query.domain, "interior_point", (low + high) / 2.0)
    points = [centre] if query.domain.contains(centre, tol=0.0) else []
    if not points or not is_differentiable_at(query.network, centre):
        points = list(query.domain.sample(FLOOR_SAMPLES, np.random.default_rng(seed)))
    return best_differentiable(query.network, query.seed, query.norm, points)


def floor_upper(query: Query, net_bounds: NetworkBounds) -> float:
    """The Jacobian-norm bound on ``net_bounds``: never above FastLip's on them; computed once
    per query on the whole domain's bounds the query keeps (:meth:`~lipopt.query.Query.bounds`:
    the MIP's floor and the root cap ask for the same)."""

    def bound() -> float:
        found = jacobian_norm_bound(
            query.network, query.domain, query.seed, query.norm, bounds=net_bounds
        )
        return found.value

    key = query.key_of(net_bounds)
    return bound() if key is None else query.once(("floor", key), bound)


def capped_by_root(bracket: Bracket, query: Query, say: Say) -> Bracket:
    """``bracket`` with its upper bound lowered to the root's Jacobian-norm bound on linear
    bounds (:func:`floor_upper`) where that is smaller: both are proven upper bounds on ``L``
    over the same domain, so their minimum is one, and a strategy stopped by the time limit
    never answers looser than bound propagation alone. An exact answer, a union of domains
    (planned part by part) and a bracket already at or below the bound are left as they are."""
    if bracket.status == Status.OPTIMAL or isinstance(query.domain, Disjunction):
        return bracket
    bound = floor_upper(query, query.bounds())
    bound = max(bound, bracket.lower or 0.0)
    if not bound < bracket.upper * (1.0 - CAP_MARGIN):
        return bracket
    note = (
        f"upper bound {bound:.7g} from the Jacobian-norm bound on the whole domain, below the "
        f"{bracket.upper:.7g} the strategies proved in time"
    )
    capped = replace(bracket, upper=bound, exact_certified=False)
    say(note)
    why = bracket.message or status_note(capped)  # what the driver would have said
    return replace(capped, message=f"{why}; {note}" if why else note)


def floor_bracket(
    query: Query, net_bounds: NetworkBounds, witness: Witness | None, timings: dict[str, float]
) -> Bracket:
    """The bracket proven by the bounds alone, with ``witness`` (or a quick one) as lower."""
    if witness is None:
        witness = quick_witness(query)
    upper = floor_upper(query, net_bounds)
    lower = None if witness is None else witness.norm_value
    if lower is not None:
        upper = max(upper, lower)
    stats = {"variables": 0, "constraints": 0, "binaries": 0}
    stats["unstable_neurons"] = net_bounds.unstable_count
    return Bracket(
        upper=upper,
        lower=lower,
        witness=None if witness is None else witness.point,
        status=Status.TIME_LIMIT,
        exact_certified=False,
        model_stats=stats,
        timings=dict(timings),
        solver=f"{net_bounds.method} bounds only",
    )


def status_of(err: SolverError) -> Status:
    """``time_limit`` for a limit reached before any bound, else ``solver_error``."""
    return Status.TIME_LIMIT if isinstance(err, NoBoundError) else Status.SOLVER_ERROR


def one_line(err: BaseException) -> str:
    """The error's message on one line."""
    return " ".join(str(err).split())


def kept_after(
    kept: Bracket | None, err: SolverError, say: Say, what: str = "the solve"
) -> Bracket:
    """The answer when ``err`` ended ``what``: ``kept`` (proven before it) met with the bracket
    the error carries, reported with the error's status and its reason; exact only when the
    bracket is closed.

    Raises ``err`` when nothing was proven before it."""
    found = [b for b in (kept, err.bracket) if b is not None]
    if not found:
        raise err
    bracket = found[0] if len(found) == 1 else meet(found)
    failed = status_of(err) == Status.SOLVER_ERROR
    status = Status.OPTIMAL if closed(bracket.upper, bracket.lower) else status_of(err)
    note = (
        f"{what} {'failed' if failed else 'stopped'} ({one_line(err)}); the bounds proven before it"
    )
    say(note)
    message = "; ".join([*(b.message for b in found if b.message), note])
    return replace(bracket, status=status, message=message, model=None)


def carrying(err: SolverError, bracket: Bracket) -> SolverError:
    """``err`` carrying ``bracket`` (met with any it carries already), to re-raise."""
    err.bracket = bracket if err.bracket is None else meet([err.bracket, bracket])
    return err
