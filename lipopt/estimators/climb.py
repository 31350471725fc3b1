"""Pattern climb: a local search over activation patterns, each step checked by an LP.

The objective ``x -> ||∇(c^T f)(x)||_{α*}`` is constant on each linear region, and a region is
named by its activation pattern σ (one 0/1 gate per hidden neuron). The gradient of a pattern is

    g(σ) = W_1^T diag(σ_1) W_2^T diag(σ_2) ··· W_L^T c,

so every pattern one gate away from the current one is scored in one batched product, without
finding a point first. The climb takes the best-scoring neighbour whose region meets the
domain in a full-dimensional set — decided by the margin LP of :func:`lipopt.verify.check_region`,
which also returns a point deep inside it — and repeats until no neighbour that scores higher
has such a region (or the budget of LPs is spent).

Unlike the gradient attack (:mod:`lipopt.estimators.attack`), which steps across one hyperplane
near the current point, the LP finds a flipped pattern's region wherever it lies, however thin:
on the speed benchmark's unit boxes it reached the exact constant from the attack's or the best
sampled point where those fell short (docs/performance.md). Every value returned is the
gradient norm at a point strictly inside its region, so it is attained: a lower bound, with a
certified pattern.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import FloatArray
from lipopt.network import Network
from lipopt.norms import InputNorm, dual_norm
from lipopt.verify import Dimension, check_region

#: a neighbour must score this much more (relative) than the current pattern to be tried
IMPROVEMENT = 1e-9


@dataclass(frozen=True)
class ClimbResult:
    """The best region the climb reached: a point strictly inside it, its gradient norm, and
    how many margin LPs were solved."""

    point: FloatArray
    value: float
    checks: int


def _neighbours(pattern: list[FloatArray]) -> list[FloatArray]:
    """Every pattern one gate away, as a batch: row n flips the n-th hidden neuron (layers in
    order)."""
    total = sum(mask.size for mask in pattern)
    batch = [np.repeat(mask[None, :], total, axis=0) for mask in pattern]
    row = 0
    for layer, mask in enumerate(pattern):
        rows = np.arange(row, row + mask.size)
        batch[layer][rows, np.arange(mask.size)] = 1.0 - mask
        row += mask.size
    return batch


class _Regions:
    """The margin LPs of the climb, each pattern's verdict kept (climbs from different starts,
    and the steps of one climb, meet the same patterns): a budget of ``max_checks`` LPs and an
    optional ``deadline`` (``time.perf_counter()`` seconds)."""

    def __init__(
        self, network: Network, domain: Domain, max_checks: int, deadline: float | None
    ) -> None:
        self.network, self.domain = network, domain
        self.max_checks, self.deadline = max_checks, deadline
        self.checks = 0
        self.seen: dict[bytes, FloatArray | None] = {}

    def can_decide(self, pattern: list[FloatArray]) -> bool:
        """The pattern's verdict is kept, or an LP is left in the budget before the deadline."""
        if _key(pattern) in self.seen:
            return True
        late = self.deadline is not None and time.perf_counter() >= self.deadline
        return self.checks < self.max_checks and not late

    def inside(self, pattern: list[FloatArray]) -> FloatArray | None:
        """A point strictly inside the pattern's region and the domain, or None where their
        intersection is not full-dimensional (or undecided). Call only where
        :meth:`can_decide`."""
        key = _key(pattern)
        if key not in self.seen:
            check = check_region(self.network, pattern, self.domain)
            self.checks += 1
            full = check.dimension is Dimension.FULL and check.point is not None
            self.seen[key] = check.point if full else None
        return self.seen[key]


def _key(pattern: list[FloatArray]) -> bytes:
    """A pattern's gates as bytes (a dictionary key)."""
    return np.concatenate(pattern).astype(np.int8).tobytes() if pattern else b""


def pattern_climb(
    network: Network,
    domain: Domain,
    c: ArrayLike,
    norm: InputNorm | str,
    starts: Sequence[FloatArray],
    max_checks: int = 200,
    deadline: float | None = None,
) -> ClimbResult | None:
    """Climb from each point of ``starts`` in turn (module docstring), spending at most
    ``max_checks`` margin LPs in all (a pattern met again costs none) and stopping at
    ``deadline`` (``time.perf_counter()`` seconds); the best region reached, or None if no
    start lies in a full-dimensional region of the domain (a start on a boundary is first moved
    inside its region by the LP)."""
    input_norm = InputNorm.parse(norm)
    regions = _Regions(network, domain, max_checks, deadline)
    best: tuple[FloatArray, float] | None = None
    for start in starts:
        pattern = network.activation_pattern(np.asarray(start, dtype=np.float64))
        if not regions.can_decide(pattern):
            break
        point = regions.inside(pattern)
        if point is None:
            continue
        gradient = network.pattern_gradients([m[None, :] for m in pattern], c)
        value = float(np.asarray(dual_norm(gradient, input_norm))[0])
        while any(mask.size for mask in pattern):
            batch = _neighbours(pattern)
            scores = np.asarray(dual_norm(network.pattern_gradients(batch, c), input_norm))
            moved = False
            for row in np.argsort(-scores, kind="stable"):
                if scores[row] <= value + IMPROVEMENT * max(1.0, abs(value)):
                    break
                neighbour = [masks[row] for masks in batch]
                if not regions.can_decide(neighbour):
                    break
                inside = regions.inside(neighbour)
                if inside is not None:
                    pattern, point, value, moved = neighbour, inside, float(scores[row]), True
                    break
            if not moved:
                break
        if best is None or value > best[1]:
            best = (point, value)
    if best is None:
        return None
    return ClimbResult(best[0], best[1], regions.checks)


__all__ = ["ClimbResult", "pattern_climb"]
