"""The exact ℓ2 constant by outer approximation: the MIP of ``||g||_2^2``'s chord over-estimate
(:mod:`lipopt.formulation.l2`), refined at each solution until it is attained.

Round r maximises ``B_r = max Σ_j s_j(g_j)`` over the current breakpoints; ``sqrt(B_r)`` is a
proven upper bound on ``L = max ||g||_2`` (every round's, so the smallest is kept), and the
solver's point, verified in numpy, attains a lower bound. Then each entry's solution value
``g*_j`` becomes a breakpoint, where ``s_j`` is exact from then on. A round whose optimum has
every entry on a breakpoint has ``B_r = ||g*||_2^2``, attained by ``g*``: if the region of
``g*`` is full-dimensional its witness closes the bracket, and if it is lower-dimensional
(no gradient there) its pattern is cut off by a no-good cut as in
:mod:`lipopt.strategies.refine`. The gradients are finitely many (one per activation pattern),
so the rounds end: exact, with the witness in a full-dimensional region (for an output norm,
``g = J^T w`` over a dual ball whose maximum sits at a vertex, finitely many again). Once a
value is attained (from the start, where an attack or a start point gave one) the solver must
beat it (``objective >= (L_lower)^2``, less 1e-6).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lipopt.bracket import Bracket, closed, contradicts, wrong_bound
from lipopt.formulation.l2 import chord_value, set_squared_objective, with_breakpoint
from lipopt.formulation.objective import set_cutoff
from lipopt.formulation.terms import is_constant
from lipopt.heuristics.witness import Witness, attains, below, value_at
from lipopt.progress import heartbeat
from lipopt.solvers import NoBoundError, SolveResult, SolverFailure, Termination
from lipopt.status import Status
from lipopt.strategies.floor import carrying, floor_bracket
from lipopt.strategies.refine import (
    ModelProblem,
    exclude_region,
    full_pattern,
    model_stats,
    raise_on_failure,
    solve_once,
    solver_point,
    w_values,
)
from lipopt.verify import Dimension, RegionCheck, check_region

#: a round's optimum is exact at an entry where ``s_j(g*_j) - g*_j^2`` is at most this share of
#: the objective (below it, a breakpoint would add a binary and change nothing the solver sees)
CHORD_SLACK = 1e-9


@dataclass
class Outer:
    """The state of the outer approximation.

    Attributes:
        breakpoints: per gradient entry, its sorted breakpoints.
        best: the best verified witness so far.
        upper: the smallest proven upper bound on ``L`` (inf before the first bound).
        rounds, cuts, nodes, seconds: solves so far, no-good cuts, solver nodes, solver time.
        last: the last round's answer.
        added: breakpoints added per round.
        stopped: why the rounds ended before the bracket met ("time", a termination's value,
            or a reason in words).
    """

    breakpoints: list[np.ndarray]
    best: Witness | None
    upper: float = math.inf
    rounds: int = 0
    cuts: int = 0
    nodes: int = 0
    seconds: float = 0.0
    last: SolveResult | None = None
    added: list[int] = field(default_factory=list)
    stopped: str = ""


def outer_approximation(
    problem: ModelProblem,
    breakpoints: list[np.ndarray],
    timings: dict[str, float],
    start: Witness | None,
) -> Bracket:
    """Answer the ℓ2 model of ``problem`` (built with ``breakpoints``) by rounds of chords."""
    state = Outer([np.asarray(b, dtype=np.float64) for b in breakpoints], start)
    begin = time.perf_counter()
    while _round(problem, state):
        pass
    if state.last is None or math.isinf(state.upper):
        raise NoBoundError(
            "the solver stopped without a proven bound on the l2 model; give it more time "
            "(--time-limit)"
        )
    timings["solve"] = state.seconds
    timings["verify"] = time.perf_counter() - begin - state.seconds
    return _bracket(problem, state, timings)


def _round(problem: ModelProblem, state: Outer) -> bool:
    """One solve of the current over-estimate; True when another round should follow."""
    lip, say = problem.lip, problem.say
    remaining = problem.remaining()
    if state.rounds and remaining is not None and remaining <= 0:
        state.stopped = "time"
        return False
    if state.rounds and not lip.quadratic:  # the build set the first round's chords
        set_squared_objective(lip.model, lip.gradient, state.breakpoints, lip.relaxed)
    cutoff = None if state.best is None or lip.relaxed else below(state.best.norm_value**2)
    set_cutoff(lip.model, cutoff)
    options = replace(problem.options, time_limit=remaining)
    began = time.perf_counter()
    try:
        with heartbeat(say, f"solving round {state.rounds + 1}", remaining):
            result = solve_once(problem.adapter, lip.model, options)
    finally:
        set_cutoff(lip.model, None)
    state.seconds += time.perf_counter() - began
    state.rounds, state.last = state.rounds + 1, result
    state.nodes += result.nodes or 0
    if cutoff is not None and result.termination is Termination.INFEASIBLE:
        state.upper = min(state.upper, math.sqrt(max(cutoff, 0.0)))  # nothing beats the best
        return False
    raise_on_failure(result)
    if result.bound is not None:
        state.upper = min(state.upper, math.sqrt(max(float(result.bound), 0.0)))
    finished = result.termination in (Termination.OPTIMAL, Termination.GAP_LIMIT)
    if not finished:
        state.stopped = result.termination.value  # the time ran out, or a stop was asked
    if result.values is None or lip.relaxed:
        _note_point(problem, state, result)
        return False
    reading = _read_round(problem, state, result)
    say(_progress(state))
    if _finished(problem, state) or not finished:
        return False
    return _refine(problem, state, result, reading)


@dataclass(frozen=True)
class Reading:
    """One round's solution, read: its gradient entries, whether the round's objective is
    their norm (every entry on a breakpoint), and the margin LP's verdict on its pattern."""

    gradient: list[float]
    exact: bool
    check: RegionCheck | None


def _read_round(problem: ModelProblem, state: Outer, result: SolveResult) -> Reading:
    """The solver's point verified (its region checked, the value recomputed), and the round's
    solution read (:class:`Reading`)."""
    check = _note_point(problem, state, result)
    g = _solution_gradient(problem, result)
    if problem.lip.quadratic:  # t <= ||g||^2 at the optimum is t = ||g*||^2
        return Reading(g, True, check)
    slack = sum(chord_value(b, v) - v * v for b, v in zip(state.breakpoints, g))
    objective = float(result.incumbent or 0.0)
    return Reading(g, slack <= CHORD_SLACK * max(1.0, abs(objective)), check)


def _refine(problem: ModelProblem, state: Outer, result: SolveResult, reading: Reading) -> bool:
    """Breakpoints at the solution's gradient entries; where none is new (the round's optimum
    is its gradient's norm), its lower-dimensional pattern cut off. False when neither applies."""
    added = 0
    # an output norm's dual ball is symmetric (cross: up to the sign the norm ignores), so -g*
    # is as good as g*: without its breakpoints the next round found it with the same value
    signs = (1.0,) if problem.query.fixed_c else (1.0, -1.0)
    if not reading.exact:
        for j, value in enumerate(reading.gradient):
            for sign in signs:
                more = with_breakpoint(state.breakpoints[j], sign * value)
                if more is not None:
                    state.breakpoints[j], added = more, added + 1
    state.added.append(added)
    return added > 0 or _cut(problem, state, result.values, reading.check)


def _cut(problem: ModelProblem, state: Outer, values: Any, check: RegionCheck | None) -> bool:
    """The round's optimum is a gradient of its pattern (``check``: the margin LP's verdict on
    it); not attained (else the bracket had closed), so its region is lower-dimensional: cut it
    off, within ``max_refinements``."""
    limit = problem.max_refinements
    if check is None or check.dimension is not Dimension.LOWER:
        state.stopped = (
            "the optimum's region could not be checked in time"
            if check is None or check.dimension is not Dimension.FULL
            else "the optimum's region is full-dimensional, yet its value stays below the bound"
        )
        return False
    if limit is not None and state.cuts >= limit:
        state.stopped = f"the limit of {limit} excluded pattern(s) was reached"
        return False
    if not exclude_region(problem, values, check):
        state.stopped = "a lower-dimensional optimum had no binary to cut"
        return False
    state.cuts += 1
    problem.say(
        f"optimum on a region that is lower-dimensional or misses the domain; excluding it "
        f"({state.cuts})"
    )
    return True


def _note_point(problem: ModelProblem, state: Outer, result: SolveResult) -> RegionCheck | None:
    """The solver's pattern's region, where full-dimensional, attains a value, and so does
    the solver's point's own region: keep the best. The margin LP's verdict on the pattern
    (None without a solution)."""
    if result.values is None:
        return None
    lip, query = problem.lip, problem.query
    pattern = full_pattern(lip, problem.net_bounds, result.values)
    check = check_region(query.network, pattern, query.domain, _check_time(problem))
    found = [] if state.best is None else [state.best]
    if check.dimension is Dimension.FULL and check.point is not None:
        hint = w_values(lip, result.values)
        value = value_at(query.network, check.point, query.seed, query.norm, hint)
        found.append(Witness(check.point, value, True))
    own = problem.witness_of([solver_point(problem, result.values)])
    found.extend([] if own is None else [own])
    state.best = max(found, key=lambda w: w.norm_value, default=None)
    return check


def _check_time(problem: ModelProblem) -> float | None:
    """Seconds for a margin LP: what is left, and at least one (a round that ended just before
    the deadline still gets its point checked, as in :mod:`lipopt.strategies.refine`)."""
    left = problem.remaining()
    return None if left is None else max(left, 1.0)


def _solution_gradient(problem: ModelProblem, result: SolveResult) -> list[float]:
    """The solver's gradient entries (constants as they are)."""
    values = result.values
    return [
        float(gj) if is_constant(gj) else float(values.get(gj, 0.0)) for gj in problem.lip.gradient
    ]


def _finished(problem: ModelProblem, state: Outer) -> bool:
    """The bracket met, or within the requested gap."""
    lower = None if state.best is None else state.best.norm_value
    return closed(state.upper, lower) or _within_gap(problem, state.upper, lower)


def _within_gap(problem: ModelProblem, upper: float, lower: float | None) -> bool:
    """A gap was requested, and the bracket is within it."""
    if not problem.gap or lower is None:
        return False
    return upper - lower <= problem.gap * upper


def _progress(state: Outer) -> str:
    lower = "none" if state.best is None else f"{state.best.norm_value:.6g}"
    return f"l2 round {state.rounds}: upper {state.upper:.6g}, attained {lower}"


def _bracket(problem: ModelProblem, state: Outer, timings: dict[str, float]) -> Bracket:
    """The outer approximation's answer: the smallest proven bound, the best attained value."""
    lower = None if state.best is None else state.best.norm_value
    if lower is not None and contradicts(state.upper, lower):  # a bound below a fact
        raise carrying(
            SolverFailure(wrong_bound(_solver(state), state.upper, lower)),
            floor_bracket(problem.query, problem.net_bounds, state.best, timings),
        )
    upper = state.upper if lower is None else max(state.upper, lower)  # within the tolerance
    status = _status(problem, state, upper, lower)
    rounds = (
        "l2 model t <= ||g||^2 (spatial branching)"
        if problem.lip.quadratic
        else f"l2 outer approximation: {state.rounds} round(s), {sum(state.added)} breakpoints"
    )
    cuts = f", {state.cuts} lower-dimensional pattern(s) excluded" if state.cuts else ""
    if status == Status.OPTIMAL and not closed(upper, lower) and state.stopped:
        cuts += f"; the rounds stopped: {state.stopped}"
    stats = model_stats(problem.lip)
    stats["binaries"] = stats["binaries"] if problem.lip.relaxed else len(problem.lip.binaries())
    return Bracket(
        upper=upper,
        lower=lower,
        witness=None if state.best is None else state.best.point,
        status=status,
        exact_certified=status == Status.OPTIMAL and attains(upper, state.best),
        model_stats=stats,
        timings=timings,
        solver=_solver(state),
        nodes=state.nodes or None,
        refinements=state.cuts,
        message=rounds + cuts,
        model=problem.lip,
    )


def _solver(state: Outer) -> str:
    return state.last.solver if state.last is not None else ""


def _status(problem: ModelProblem, state: Outer, upper: float, lower: float | None) -> Status:
    """``optimal`` where the bracket met; a requested gap met; the time limit or the stop that
    ended a round; else ``optimal`` for a bracket that did not meet, which the driver reports as
    ``upper_bound`` with the reason (:func:`lipopt.driver.honest`), as for ℓ∞ and ℓ1."""
    if problem.lip.relaxed:
        return Status.RELAXATION
    if closed(upper, lower):
        return Status.OPTIMAL
    if _within_gap(problem, upper, lower):
        return Status.GAP_LIMIT
    if state.stopped == "time":
        return Status.TIME_LIMIT  # rounds left when the time ran out
    if state.stopped in {t.value for t in Termination}:
        return Termination(state.stopped).status
    return Status.OPTIMAL
