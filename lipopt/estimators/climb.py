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


def pattern_gradients(network: Network, masks: Sequence[FloatArray], c: ArrayLike) -> FloatArray:
    """``g(σ)`` for a batch of patterns: ``masks[k]`` is (n, width_k), the result (n, d); a
    network without hidden layers has one pattern (no masks) and its one gradient (1, d)."""
    affines = network.affine_layers
    count = masks[0].shape[0] if len(masks) else 1
    y = np.broadcast_to(
        affines[-1].weight.T @ np.asarray(c, dtype=np.float64), (count, affines[-1].in_features)
    )
    for mask, affine in zip(reversed(masks), reversed(affines[:-1])):
        y = (y * mask) @ affine.weight
    return np.asarray(y)


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


def pattern_climb(
    network: Network,
    domain: Domain,
    c: ArrayLike,
    norm: InputNorm | str,
    starts: Sequence[FloatArray],
    max_checks: int = 200,
) -> ClimbResult | None:
    """Climb from each point of ``starts`` in turn (module docstring), spending at most
    ``max_checks`` margin LPs in all; the best region reached, or None if no start lies in a
    full-dimensional region of the domain (a start on a boundary is first moved inside its
    region by the LP, which counts as a check)."""
    input_norm = InputNorm.parse(norm)
    best: ClimbResult | None = None
    checks = 0
    for start in starts:
        if checks >= max_checks:
            break
        pattern = network.activation_pattern(np.asarray(start, dtype=np.float64))
        check = check_region(network, pattern, domain)
        checks += 1
        if check.dimension is not Dimension.FULL or check.point is None:
            continue
        point = check.point
        value = float(
            dual_norm(pattern_gradients(network, [m[None, :] for m in pattern], c), input_norm)[0]
        )
        while checks < max_checks and any(mask.size for mask in pattern):
            batch = _neighbours(pattern)
            scores = np.asarray(dual_norm(pattern_gradients(network, batch, c), input_norm))
            moved = False
            for row in np.argsort(-scores, kind="stable"):
                if (
                    scores[row] <= value + IMPROVEMENT * max(1.0, abs(value))
                    or checks >= max_checks
                ):
                    break
                neighbour = [masks[row] for masks in batch]
                check = check_region(network, neighbour, domain)
                checks += 1
                if check.dimension is Dimension.FULL and check.point is not None:
                    pattern, point, value, moved = neighbour, check.point, float(scores[row]), True
                    break
            if not moved:
                break
        if best is None or value > best.value:
            best = ClimbResult(point, value, 0)
    if best is None:
        return None
    return ClimbResult(best.point, best.value, checks)


__all__ = ["ClimbResult", "pattern_climb", "pattern_gradients"]
