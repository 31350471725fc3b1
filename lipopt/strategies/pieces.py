"""A maximum solved as several MIPs whose largest maximum is the answer (a *union*): the ℓ1
decomposition's candidates, the halves of the sign and gate splits.

Each piece is the built model with something fixed (``arrange``), solved under the cutoff of the
best value attained when it starts, in this process or side by side on forked copies of the
model (:mod:`lipopt.parallel.workers`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt.bracket import Bracket
from lipopt.config import Mode
from lipopt.heuristics.witness import Witness, attains, below
from lipopt.parallel.workers import ForkedWorkers, InProcess, worker_count
from lipopt.policy import Policy
from lipopt.progress import silent
from lipopt.solvers import SolveOptions
from lipopt.status import Status
from lipopt.strategies import refine
from lipopt.strategies.refine import (
    ModelProblem,
    Solved,
    model_stats,
    refinement_message,
    solve_status,
)

FloatArray = NDArray[np.float64]


@dataclass
class Pieces:
    """Bookkeeping of a union: every piece's certified bound and status, and the best point
    attained so far."""

    best: Witness | None
    parts: list[float] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    solved: int = 0
    cut_off: int = 0
    refinements: int = 0
    nodes: int = 0
    solve_seconds: float = 0.0
    solver: str = ""

    def unsolved(self, bound: float) -> None:
        """A piece the time limit left unsolved: its static bound stands."""
        self.parts.append(bound)
        self.statuses.append(Status.TIME_LIMIT)

    def add(
        self,
        solved: Solved,
        bound: float,
        gap: float | None,
        witness_of: Callable[[list[FloatArray]], Witness | None],
    ) -> None:
        """A piece's answer: cut off (below the cutoff), or its proven bound (at most its static
        ``bound``) and status; ``witness_of(points)`` verifies the solver's points when the
        refinement left no witness."""
        self.solved += 1
        self.solver = solved.first.solver or self.solver
        self.refinements += solved.refinements
        self.nodes += solved.nodes
        self.solve_seconds += solved.solve_seconds
        if solved.cut_off and solved.upper is not None:
            self.cut_off += 1
            self.parts.append(solved.upper)
            self.statuses.append(Status.OPTIMAL)
            return
        self.parts.append(bound if solved.upper is None else min(bound, solved.upper))
        self.statuses.append(solve_status(Mode.EXACT, gap, solved.last))
        found = solved.witness
        if found is None and solved.points:
            found = witness_of(solved.points)
        if found is not None and (self.best is None or found.norm_value > self.best.norm_value):
            self.best = found

    def bracket(
        self,
        problem: ModelProblem,
        floor: float,
        timings: dict[str, float],
        stats: dict[str, int],
        no_solver: str,
    ) -> Bracket:
        """The answer: upper = the largest piece bound (and ``floor``, a value reached
        everywhere, and the attained lower bound); the worst piece status."""
        best = self.best
        lower = best.norm_value if best is not None else None
        upper = max([*self.parts, floor] + ([] if lower is None else [lower]))
        status = Status.OPTIMAL
        for worse in (Status.GAP_LIMIT, Status.INTERRUPTED, Status.TIME_LIMIT):
            if worse in self.statuses:
                status = worse
        exact_certified = status == Status.OPTIMAL and attains(upper, best)
        return Bracket(
            upper=upper,
            lower=lower,
            witness=None if best is None else best.point,
            exact_certified=exact_certified,
            status=status,
            model_stats={**model_stats(problem.lip), **stats},
            timings=timings,
            solver=self.solver or no_solver,
            nodes=self.nodes if self.nodes > 0 else None,
            refinements=self.refinements,
            message=refinement_message(self.refinements),
            model=problem.lip,
        )


@dataclass(frozen=True)
class Piece:
    """One MIP of a union: ``bound`` caps its maximum before it is solved; ``describe(reached)``
    is its progress line, given the value already reached."""

    key: Any
    bound: float
    describe: Callable[[float], str]


@dataclass(frozen=True)
class Union:
    """The pieces of one union and how to solve them: ``arrange(key, cutoff)`` sets the model up
    as the piece ``key`` (and restores it on exit); ``floor`` is a value reached everywhere;
    ``intro(workers)`` the first progress line ("" for none)."""

    items: list[Piece]
    arrange: Callable[[Any, float | None], contextlib.AbstractContextManager[None]]
    floor: float
    intro: Callable[[int], str]


def candidate_options(
    options: SolveOptions, solver: str, remaining: float | None, cutoff: float | None,
    cutoff_options: dict[str, dict[str, Any]],
) -> SolveOptions:  # fmt: skip
    """The options of one piece's solve: the time left, and the solver's cutoff options."""
    extra = dict(options.options)
    if cutoff is not None:
        extra.update(cutoff_options.get(solver, {}))
    return replace(options, time_limit=remaining, options=extra)


def portable(solved: Solved) -> Solved:
    """What crosses a worker's pipe: no Pyomo solution maps (they name the worker's variables)."""
    return replace(
        solved, first=replace(solved.first, values=None), last=replace(solved.last, values=None)
    )


def solve_pieces(
    problem: ModelProblem,
    union: Union,
    pieces: Pieces,
    timings: dict[str, float],
    policy: Policy,
) -> None:
    """Solve ``union.items`` in order into ``pieces``, side by side on forked copies of the
    model when ``problem.workers`` allows (:func:`~lipopt.parallel.workers.worker_count`), else one
    by
    one. Each piece starts under the cutoff of the best value attained when it starts, so one
    that cannot beat it answers "infeasible"; a piece whose ``bound`` is at most the value
    already reached (the best witness, or the floor) is not solved but bounded; pieces the
    deadline leaves (or a worker stuck past it by the policy's slack) keep their ``bound``.
    Records the solve and verify seconds in ``timings``."""
    start = time.perf_counter()
    items = union.items
    count = worker_count(problem.adapter.name, problem.workers, len(items))
    say = problem.say if count == 1 else silent  # workers' lines would interleave

    def run(task: tuple[int, float | None, float | None]) -> Solved:
        position, cutoff, remaining = task
        options = candidate_options(
            problem.options, problem.adapter.name, remaining, cutoff, policy.cutoff_options
        )
        with union.arrange(items[position].key, cutoff):
            solved = refine.solve_refined(problem, options, False, say, cutoff)
        return solved if count == 1 else portable(solved)

    if first_line := union.intro(count):
        problem.say(first_line)
    runner: Any = ForkedWorkers(count, run) if count > 1 else InProcess(run)
    try:
        _drive(problem, union, pieces, runner, policy.slack(problem.options.time_limit))
    finally:
        runner.close()
    solve_seconds = pieces.solve_seconds
    if count > 1:
        # the workers' solver seconds add up to more than the wall time they took
        solve_seconds = min(solve_seconds, time.perf_counter() - start)
    timings["solve"] = solve_seconds
    timings["verify"] = time.perf_counter() - start - solve_seconds


def _drive(problem: ModelProblem, union: Union, pieces: Pieces, runner: Any, slack: float) -> None:
    """Submit the pieces as workers free up and take their answers as they come, waiting for
    them at most ``slack`` seconds past the deadline."""
    items, position = union.items, 0
    while True:
        while runner.idle() and position < len(items):
            item = items[position]
            best = pieces.best
            reached = max(union.floor, best.norm_value if best is not None else -np.inf)
            if item.bound <= reached:
                pieces.parts.append(item.bound)  # cannot exceed what is already reached
            elif (remaining := problem.remaining()) is not None and remaining <= 0:
                pieces.unsolved(item.bound)
            else:
                problem.say(item.describe(reached))
                cutoff = None if best is None else below(best.norm_value)
                runner.submit((position, cutoff, remaining), position)
            position += 1
        if not runner.busy():
            return
        wait_for = problem.remaining()
        answer = runner.next_result(None if wait_for is None else max(wait_for + slack, 0.0))
        if answer is None:  # a worker stuck past the time limit: its pieces stay open
            for stuck in runner.pending():
                pieces.unsolved(items[stuck].bound)
            for never in items[position:]:  # not started: their bounds stand
                pieces.unsolved(never.bound)
            return
        done, solved = answer
        pieces.add(solved, items[done].bound, problem.gap, problem.witness_of)
