"""Which gradient entries share a sign group: an order chosen on the branch and bound's root.

The sign-group bound (:mod:`lipopt.bounds.sign_groups`) is sound for any partition of the
gradient's entries into groups, but how tight it is depends on the partition: inside a group
the signs are coupled (one sign vector, one back-substitution), across groups they are not.
On the digits CNN at radius 0.1 (image 0) the root's bound with groups of 8 consecutive entries
(rows of the 8x8 image) is 1020, with the image's columns 832; on the digits MLP, 624 against
597 for groups of the entries most coupled through the first two layers (docs/performance.md,
"The sign groups' order"; ``benchmarks/results/scale_sign_order.md`` end to end).

**The choice.** The candidates are the entries' own order; the strided order (entry ``j`` with
``j + m``, ``j + 2m``, ... for ``m = ceil(d / size)``: the columns of a square image stored by
rows); and two greedy orders that group entries coupled through the weights, with the coupling
``|A|^T |A|`` for ``A = W_1`` and for ``A = W_2 W_1`` (the first layers' weight magnitudes,
entrywise; :func:`coupled_order`). The candidate with the least bound on the root is then
improved by swaps: two entries of two random groups trade places where that lowers the sum of
the two groups' maxima, re-evaluated exactly. Every number compared is the sound bound itself,
so the order only changes how tight the search's bounds are, never whether they hold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.bounds.jacobian import SlopeProblem, slope_problem
from lipopt.bounds.sign_groups import group_maxima, group_rows, ordered_rows, rounded_sum
from lipopt.network import Network
from lipopt.norms import InputNorm

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class OrderChoice:
    """The order chosen, the name of the candidate it started from, each candidate's bound on
    the root and the bound with the order chosen (after the swaps)."""

    order: tuple[int, ...]
    start: str
    candidates: dict[str, float]
    bound: float


def strided_order(dim: int, size: int) -> IntArray:
    """Entry ``j`` next to ``j + m, j + 2m, ...`` for ``m = ceil(dim / size)``."""
    step = -(-dim // size)
    return np.array([j for first in range(step) for j in range(first, dim, step)], dtype=np.int64)


def coupled_order(coupling: FloatArray, size: int) -> IntArray:
    """Groups of ``size`` built greedily: each starts from the entry left with the largest
    total coupling to every entry and adds, one at a time, the entry left most coupled to the
    group so far (first index on ties)."""
    weights = np.array(coupling, dtype=np.float64)
    np.fill_diagonal(weights, 0.0)
    totals = weights.sum(axis=1)
    left = np.ones(weights.shape[0], dtype=bool)
    order: list[int] = []
    while left.any():
        member = int(np.argmax(np.where(left, totals, -np.inf)))
        left[member] = False
        group, score = [member], weights[:, member].copy()
        while len(group) < size and left.any():
            member = int(np.argmax(np.where(left, score, -np.inf)))
            left[member] = False
            group.append(member)
            score += weights[:, member]
        order.extend(group)
    return np.array(order, dtype=np.int64)


def _magnitudes(matrix: Any) -> Any:
    return abs(matrix) if sparse.issparse(matrix) else np.abs(np.asarray(matrix))


def couplings(network: Network) -> list[FloatArray]:
    """``|A|^T |A|`` (dense, inputs x inputs) for ``A`` the first weight matrix and the first
    two's product (entrywise magnitudes), where the network has them."""
    layers = network.affine_layers
    first = _magnitudes(layers[0].matrix)
    found = [first]
    if len(layers) > 2:  # a second hidden layer (the last affine layer is the output)
        found.append(_magnitudes(layers[1].matrix) @ first)
    dense = [(a.T @ a) for a in found]
    return [np.asarray(m.toarray() if sparse.issparse(m) else m, dtype=np.float64) for m in dense]


def candidate_orders(network: Network, size: int) -> dict[str, IntArray]:
    """The candidates of the module docstring, by name."""
    dim = network.input_dim
    found = {"own": np.arange(dim, dtype=np.int64), "strided": strided_order(dim, size)}
    for name, coupling in zip(("first layer", "first two layers"), couplings(network)):
        found[name] = coupled_order(coupling, size)
    return found


def _swapped(
    problem: SlopeProblem, groups: list[list[int]], maxima: list[float], pair: tuple[Any, ...]
) -> None:
    """Trade entry ``i`` of group ``a`` and entry ``j`` of group ``b`` (``pair = (a, b, i, j)``)
    where the two groups' maxima, re-evaluated, sum lower (in place)."""
    a, b, i, j = (int(v) for v in pair)
    first, second = list(groups[a]), list(groups[b])
    first[i], second[j] = second[j], first[i]
    dim = problem.g_low.shape[0]
    rows = np.vstack([group_rows(first, dim), group_rows(second, dim)])
    owners = np.repeat(np.arange(2, dtype=np.int64), [1 << len(first), 1 << len(second)])
    value_a, value_b = group_maxima(problem, rows, owners)
    if value_a + value_b < maxima[a] + maxima[b]:
        groups[a], groups[b], maxima[a], maxima[b] = first, second, float(value_a), float(value_b)


def chosen_order(
    network: Network,
    bounds: NetworkBounds,
    seed: Seed,
    budget: tuple[int, int, float | None],
    rng: np.random.Generator,
) -> OrderChoice:
    """The order of the module docstring for groups of ``size`` entries on ``bounds``;
    ``budget = (size, swaps, until)``: at most ``swaps`` swaps, and neither a candidate (but
    the own order) nor a swap after ``until`` (a ``time.perf_counter()`` time; None: none)."""
    size, swaps, until = budget
    problem = slope_problem(network, bounds, seed, InputNorm.L1)
    dim = problem.g_low.shape[0]
    candidates = candidate_orders(network, size)
    found: dict[str, FloatArray] = {}  # each candidate's group maxima
    for name, order in candidates.items():
        if found and until is not None and time.perf_counter() >= until:
            break  # the own order first, always
        found[name] = group_maxima(problem, *ordered_rows(dim, size, order))
    values = {name: rounded_sum(maxima) for name, maxima in found.items()}
    start = min(values, key=lambda name: values[name])
    best = candidates[start]
    groups = [list(map(int, best[k : k + size])) for k in range(0, dim, size)]
    maxima = list(map(float, found[start]))
    for _ in range(swaps if len(groups) > 1 else 0):
        if until is not None and time.perf_counter() >= until:
            break
        a, b = rng.choice(len(groups), 2, replace=False)
        pair = (a, b, rng.integers(len(groups[a])), rng.integers(len(groups[b])))
        _swapped(problem, groups, maxima, pair)
    chosen = tuple(member for group in groups for member in group)
    return OrderChoice(chosen, start, values, rounded_sum(np.array(maxima)))


__all__ = [
    "OrderChoice", "candidate_orders", "chosen_order", "coupled_order", "couplings",
    "strided_order",
]  # fmt: skip
