"""Branch and bound on the input domain (paper Theorem 1: L(X) = max_p L(X_p) for X = ∪ X_p).

Each part of a box gets cheap certified bounds: an upper bound ``UB_p`` (the dual norm of the
interval box around the gradient, i.e. FastLip, from the part's own — tighter — bounds) and a
lower bound ``LB_p`` (gradient norms at a few sampled points, each attained). Parts are taken
best-``UB`` first: a part whose ``UB_p`` is at most the best attained value found anywhere can
hold no larger gradient and is discarded; a part with few unstable neurons is solved exactly
by the MIP; any other part is bisected. When the best remaining ``UB`` falls to the best
exact value, that value is the constant over the whole domain.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds import Seed, propagate
from lipopt.bounds.jacobian import fastlip_value
from lipopt.domain import Box
from lipopt.heuristics.witness import value_at
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm, dual_norm
from lipopt.status import Status

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class SplitOptions:
    """Knobs of the domain branch and bound.

    Attributes:
        leaf_unstable: a part with at most this many unstable neurons is solved by the MIP.
        max_depth: a part this many bisections deep is solved by the MIP whatever its size.
        max_parts: stop splitting (solve what is left) after this many parts were made.
        samples: points sampled per part for its attained lower bound.
        workers: processes solving MIPs in parallel (1: in this process).
        rel_tol: parts whose upper bound is within this factor of the best value are pruned.
    """

    leaf_unstable: int = 14
    max_depth: int = 24
    max_parts: int = 4096
    samples: int = 32
    workers: int = 1
    rel_tol: float = 1e-9


@dataclass(order=True)
class _Part:
    priority: float
    order: int
    box: Box = field(compare=False)
    depth: int = field(compare=False)
    upper: float = field(compare=False)
    unstable: int = field(compare=False)


@dataclass
class SplitOutcome:
    """What the branch and bound proved.

    Attributes:
        upper: certified: every part is covered by a solved MIP's bound, by a pruning bound
            (at most ``lower``) or, when stopped early, by its own upper bound.
        lower: the best value attained (at ``witness``).
        witness: where ``lower`` is attained.
        best: the solved part's :class:`LipschitzResult` whose lower bound is largest (if any).
        solved: every solved part's result; ``parts_made``, ``parts_pruned``: counts.
        complete: every part was pruned or solved to optimality.
    """

    upper: float
    lower: float
    witness: FloatArray
    best: Any
    solved: list[Any]
    parts_made: int
    parts_pruned: int
    complete: bool
    bound_seconds: float


#: FastLip: the largest dual norm of any vector in the gradient's interval box
gradient_box_norm = fastlip_value


def split_box(box: Box, network: Network) -> tuple[Box, Box]:
    """Bisect along the input whose range moves the first layer most: argmax_j w_j (u_j - l_j),
    with ``w_j = Σ_i |W1_ij|``."""
    weight = np.abs(network.affine_layers[0].weight).sum(axis=0)
    j = int(np.argmax(weight * (box.upper - box.lower)))
    mid = 0.5 * (box.lower[j] + box.upper[j])
    left_upper = box.upper.copy()
    left_upper[j] = mid
    right_lower = box.lower.copy()
    right_lower[j] = mid
    return Box(box.lower, left_upper), Box(right_lower, box.upper)


def _sampled_best(
    network: Network, box: Box, seed: Seed, norm: InputNorm, n: int, rng: np.random.Generator
) -> tuple[float, FloatArray]:
    """The best attained value among ``n`` uniform points of the part, and the point."""
    points = box.sample(n, rng)
    if isinstance(seed, OutputNorm):
        values = np.array([value_at(network, p, seed, norm) for p in points])
    else:
        values = np.asarray(dual_norm(network.gradients(points, seed), norm))
    j = int(np.argmax(values))
    return float(values[j]), points[j]


@dataclass(frozen=True)
class SplitProblem:
    """The box to split, and how its parts are bounded and solved.

    Attributes:
        network, box, seed, norm: the question on the whole box.
        bounds_method: bound propagation for each part's cheap bounds.
        solve_part: ``solve_part(part, time_limit)`` answers the question on one part exactly
            (or as far as the time allows); picklable, so that worker processes can run it.
    """

    network: Network
    box: Box
    seed: Seed
    norm: InputNorm
    bounds_method: str
    solve_part: Callable[[Box, float | None], Any]


def _solve(solve_part: Callable[[Box, float | None], Any], task: tuple[Box, float | None]) -> Any:
    """One part solved (a top-level function, so that worker processes can run it)."""
    return solve_part(*task)


class _Search:
    """The state of one branch and bound: the heap of open parts and the best value attained."""

    def __init__(
        self,
        problem: SplitProblem,
        options: SplitOptions,
        rng: np.random.Generator,
        deadline: float | None = None,
    ) -> None:
        self.problem, self.options, self.rng = problem, options, rng
        self.deadline = deadline
        self.counter = itertools.count()
        self.bound_seconds = 0.0
        self.best_lower, self.best_point = -np.inf, problem.box.lower
        self.heap: list[_Part] = []
        self.parts_made, self.pruned = 1, 0
        self.solved: list[Any] = []
        heapq.heappush(self.heap, self.make_part(problem.box, 0))

    def make_part(self, part: Box, depth: int) -> _Part:
        """A part with its cheap bounds: FastLip above, sampled points below."""
        problem, start = self.problem, time.perf_counter()
        bounds = propagate(problem.network, part, problem.seed, method=problem.bounds_method)
        upper = gradient_box_norm(bounds, problem.norm)
        lower, point = _sampled_best(
            problem.network, part, problem.seed, problem.norm, self.options.samples, self.rng
        )
        self.bound_seconds += time.perf_counter() - start
        if lower > self.best_lower:
            self.best_lower, self.best_point = lower, point
        return _Part(-upper, next(self.counter), part, depth, upper, bounds.unstable_count)

    def prunable(self, part: _Part) -> bool:
        return part.upper <= self.best_lower * (1 + self.options.rel_tol)

    def next_batch(self) -> list[_Part]:
        """Up to ``workers`` parts to solve: the best-bound parts, pruning or bisecting those
        that are neither prunable nor small enough; none past the deadline (the parts left keep
        their proven bounds: bounding thousands of parts of a wide network took 110 s)."""
        batch: list[_Part] = []
        options, heap = self.options, self.heap
        while heap and len(batch) < options.workers:
            if self.deadline is not None and time.perf_counter() >= self.deadline:
                break
            part = heapq.heappop(heap)
            if self.prunable(part):  # the heap is ordered by upper bound: all the rest too
                self.pruned += 1 + len(heap)
                heap.clear()
            elif (
                part.unstable <= options.leaf_unstable
                or part.depth >= options.max_depth
                or self.parts_made >= options.max_parts
            ):
                batch.append(part)
            else:
                for child in split_box(part.box, self.problem.network):
                    heapq.heappush(heap, self.make_part(child, part.depth + 1))
                    self.parts_made += 1
        return [p for p in batch if not self.prunable(p)]

    def take(self, results: list[Any], say: Callable[[str], None]) -> None:
        """The solved parts' answers: their attained values may raise the best."""
        for res in results:
            self.solved.append(res)
            if res.lower is not None and res.lower > self.best_lower:
                self.best_lower, self.best_point = res.lower, res.witness
        say(
            f"split: {self.parts_made} parts, {len(self.solved)} solved, {self.pruned} pruned, "
            f"best {self.best_lower:.6g}, open bound "
            f"{max([p.upper for p in self.heap], default=self.best_lower):.6g}"
        )

    def outcome(self) -> SplitOutcome:
        unsolved = [p.upper for p in self.heap if not self.prunable(p)]
        solved = self.solved
        upper = max([self.best_lower, *[r.upper for r in solved], *unsolved])
        # a part stopped at a requested gap is finished: its [lower, upper] bracket meets the gap
        complete = not unsolved and all(
            r.status in (Status.OPTIMAL, Status.GAP_LIMIT) for r in solved
        )
        best = max(solved, key=lambda r: r.lower if r.lower is not None else -np.inf, default=None)
        return SplitOutcome(
            upper=float(upper),
            lower=float(self.best_lower),
            witness=np.asarray(self.best_point, dtype=np.float64),
            best=best,
            solved=solved,
            parts_made=self.parts_made,
            parts_pruned=self.pruned,
            complete=complete,
            bound_seconds=self.bound_seconds,
        )


def branch_and_bound(
    problem: SplitProblem,
    options: SplitOptions = SplitOptions(),
    deadline: float | None = None,
    progress: Callable[[str], None] | None = None,
    rng: np.random.Generator | None = None,
) -> SplitOutcome:
    """Maximise the objective over ``problem.box`` by splitting it (see the module docstring)."""
    say = progress or (lambda _m: None)
    search = _Search(problem, options, rng or np.random.default_rng(0), deadline)
    solve = partial(_solve, problem.solve_part)
    executor: Executor | None = (
        ProcessPoolExecutor(max_workers=options.workers) if options.workers > 1 else None
    )
    try:
        while search.heap and (deadline is None or time.perf_counter() < deadline):
            batch = search.next_batch()
            if not batch:
                continue
            remaining = None if deadline is None else max(deadline - time.perf_counter(), 1.0)
            tasks = [(p.box, remaining) for p in batch]
            if executor is not None:
                results = list(executor.map(solve, tasks))
            else:
                results = [solve(t) for t in tasks]
            search.take(results, say)
    finally:
        if executor is not None:
            executor.shutdown()
    return search.outcome()
