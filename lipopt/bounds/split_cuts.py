"""Input-space cuts implied by split neurons, and the bounds they tighten.

A split neuron ``(k, i)`` with sign ``σ`` (``+1`` active: ``z >= 0``, ``-1`` inactive:
``z <= 0``) constrains the input. Back-substitution (:func:`~lipopt.bounds.linear.
substitute_to_input`) through the relaxations of the layers below, built from ranges sound on a
superset of ``D_S``, gives ``σ z_{k,i}(x) <= a·x + c`` at every ``x ∈ D_S``. With
``σ z_{k,i}(x) >= 0`` there, every point of ``D_S`` lies in the halfspace

    H = {x : -a·x <= c}                                   (the cut ``g·x <= h``, g = -a, h = c)

(``c`` is pushed up by the rounding allowance of the back-substitution, so ``H`` holds the
points in floating point too). Each child applies the cut of its own split; its ancestors'
cuts reach it through the ranges they tightened.

**Tightening a range.** A hidden pre-activation's bound ``z <= Λ x + c'`` (back-substituted the
same way) is maximised over ``B ∩ H``, ``B ⊇ D`` the domain's bounding box, instead of ``D``. By
Lagrangian duality, for every ``β >= 0``

    max_{x ∈ B ∩ H} Λ x  <=  max_{x ∈ B} (Λ - β g) x + β h
                          =  (Λ - β g)·m + |Λ - β g|·r + β h  =: φ(β)

(``m``, ``r`` the box's centre and radius), and the minimum over ``β`` equals the left side (a
linear program over a box and one halfspace, feasible). ``φ`` is convex and piecewise linear;
its slope at ``0+`` is ``h - g·m - Σ_j g_j r_j s_j`` (``s_j = sign Λ_j``, or ``-sign g_j`` where
``Λ_j = 0``) and grows by ``2 |g_j| r_j`` at each breakpoint ``β = Λ_j / g_j > 0``, so the
minimiser is the first breakpoint (in increasing order) at which the slope turns non-negative
(a weighted median; one sort per row). The bound is met with the range it improves. When
``B ∩ H`` is empty (``min_B g·x > h`` beyond the rounding slack), ``D_S`` is empty.

Only unstable neurons are tightened: a stable neuron's relaxation is exact whatever its range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.concretise import ROUNDING
from lipopt.bounds.interval import OUTWARD, NetworkBounds, NeuronState, classify
from lipopt.bounds.linear import substitute_to_input
from lipopt.bounds.relaxation import activation_relaxation, layer_slopes
from lipopt.network import Network, as_dense

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Cut:
    """The halfspace ``normal · x <= offset``, which holds every point of a sub-domain."""

    normal: FloatArray
    offset: float


@dataclass(frozen=True)
class LayerLines:
    """Layer ``k``'s unstable neurons ``rows`` and, per sign ``σ`` (``+1`` first), the lines
    ``σ z_{k,rows} <= Λ x + c`` with their terms' magnitude, from ranges sound on ``D_S``."""

    rows: NDArray[np.intp]
    lines: tuple[tuple[FloatArray, FloatArray, FloatArray], ...]


def layer_lines(
    network: Network, ranges: tuple[Sequence[FloatArray], Sequence[FloatArray]]
) -> list[LayerLines]:
    """:class:`LayerLines` of every hidden layer, back-substituted through the relaxations
    of ``ranges`` (:func:`~lipopt.bounds.linear.substitute_to_input`)."""
    lowers, uppers = ranges
    relaxations = [
        activation_relaxation(lowers[j], uppers[j], layer_slopes(network, j))
        for j in range(len(lowers))
    ]
    found = []
    for k, affine in enumerate(network.affine_layers[: len(lowers)]):
        state = classify(lowers[k], uppers[k], layer_slopes(network, k))
        rows = np.flatnonzero(state == NeuronState.UNSTABLE)
        weight, bias = as_dense(affine.matrix[rows]), affine.bias[rows]
        signed = []
        for sign in (1.0, -1.0):
            coeffs, shift, size = substitute_to_input(
                network, k, (sign * weight, sign * bias), relaxations
            )
            signed.append((as_dense(coeffs), shift, size))
        found.append(LayerLines(rows, tuple(signed)))
    return found


def split_cut(
    lines: Sequence[LayerLines],
    neuron: tuple[int, int],
    active: bool,
    box: tuple[FloatArray, FloatArray],
) -> Cut | None:
    """The cut of the split of ``neuron`` (module docstring), None when the neuron is not
    among the unstable ones ``lines`` hold."""
    k, i = neuron
    where = np.flatnonzero(lines[k].rows == i)
    if len(where) == 0:
        return None
    coeffs, shift, magnitude = lines[k].lines[0 if active else 1]
    row, const = coeffs[where[0]], float(shift[where[0]])
    size = np.abs(row) @ np.maximum(np.abs(box[0]), np.abs(box[1]))
    slack = ROUNDING * (float(magnitude[where[0]]) + size) + OUTWARD * (1.0 + abs(const) + size)
    return Cut(-row, const + slack)


def is_empty(cut: Cut, box: tuple[FloatArray, FloatArray]) -> bool:
    """``B ∩ H = ∅`` beyond the rounding slack: ``min_B g·x > h``."""
    centre, radius = (box[0] + box[1]) / 2.0, (box[1] - box[0]) / 2.0
    least = cut.normal @ centre - np.abs(cut.normal) @ radius
    size = np.abs(cut.normal) @ (np.abs(centre) + radius)
    slack = ROUNDING * size + OUTWARD * (1.0 + abs(cut.offset) + size)
    return bool(least > cut.offset + slack)


def _best_multiplier(
    coeffs: FloatArray, slope: FloatArray, cut: Cut, radius: FloatArray
) -> FloatArray:
    """The minimiser ``β >= 0`` of each row's ``φ``, whose slope at ``0+`` is ``slope``
    (negative on every row given; module docstring)."""
    g = cut.normal
    with np.errstate(divide="ignore", invalid="ignore"):
        breaks = coeffs / g
    valid = (g != 0.0) & (breaks > 0.0)
    breaks = np.where(valid, breaks, np.inf)
    order = np.argsort(breaks, axis=1)
    ordered = np.take_along_axis(breaks, order, axis=1)
    steps = np.take_along_axis(np.where(valid, 2.0 * np.abs(g) * radius, 0.0), order, axis=1)
    turned = slope[:, None] + np.cumsum(steps, axis=1) >= 0.0
    chosen = ordered[np.arange(len(coeffs)), np.argmax(turned, axis=1)]
    return np.where(turned.any(axis=1) & np.isfinite(chosen), chosen, 0.0)


def cut_upper(
    lines: tuple[FloatArray, FloatArray, FloatArray], cut: Cut, box: tuple[FloatArray, FloatArray]
) -> FloatArray:
    """Per row of the lines ``Λ x + c``: ``max_{B ∩ H} Λ x + c`` at the best multiplier,
    rounded outward; ``inf`` where the cut does not bind (``β = 0``: the box's own maximum)."""
    coeffs, shift, magnitude = lines
    centre, radius = (box[0] + box[1]) / 2.0, (box[1] - box[0]) / 2.0
    direction = np.where(coeffs != 0.0, np.sign(coeffs), -np.sign(cut.normal))
    slope = cut.offset - (centre + direction * radius) @ cut.normal  # h - g·x* per row
    binds = np.flatnonzero(slope < 0.0)
    bound = np.full(len(coeffs), np.inf)
    if len(binds) == 0:
        return bound
    picked = coeffs[binds]
    beta = _best_multiplier(picked, slope[binds], cut, radius)
    moved = picked - beta[:, None] * cut.normal[None, :]
    value = moved @ centre + np.abs(moved) @ radius + beta * cut.offset + shift[binds]
    reach = np.abs(centre) + radius
    size = magnitude[binds] + np.abs(picked) @ reach
    size = size + beta * (np.abs(cut.normal) @ reach + abs(cut.offset))
    bound[binds] = value + ROUNDING * size + OUTWARD * (1.0 + np.abs(value))
    return bound


def cut_ranges(
    lines: Sequence[LayerLines],
    cut: Cut,
    ranges: tuple[Sequence[FloatArray], Sequence[FloatArray]],
    box: tuple[FloatArray, FloatArray],
) -> tuple[list[FloatArray], list[FloatArray]] | None:
    """``ranges`` with each unstable neuron's bounds tightened over ``B ∩ H``; None when the
    cut leaves no point of the box (``D_S = ∅``)."""
    if is_empty(cut, box):
        return None
    lowers = [low.copy() for low in ranges[0]]
    uppers = [high.copy() for high in ranges[1]]
    signed = [part for layer in lines if len(layer.rows) for part in layer.lines]
    if not signed:
        return lowers, uppers
    coeffs, shifts, sizes = (np.concatenate([part[j] for part in signed]) for j in range(3))
    bounds = cut_upper((coeffs, shifts, sizes), cut, box)  # every layer's rows: one call
    start = 0
    for k, layer in enumerate(lines):
        count = len(layer.rows)
        if count == 0:
            continue
        above, below = bounds[start : start + count], bounds[start + count : start + 2 * count]
        start += 2 * count
        uppers[k][layer.rows] = np.minimum(uppers[k][layer.rows], above)
        lowers[k][layer.rows] = np.maximum(lowers[k][layer.rows], -below)
    return lowers, uppers


def _first_stabilised(before: Sequence[FloatArray], after: Sequence[FloatArray]) -> int:
    """The first layer in which a neuron's range, straddling zero before, no longer does
    (the number of layers when none)."""
    for k, (old, new) in enumerate(zip(before, after, strict=True)):
        if np.any((old < 0.0) & (new >= 0.0)):
            return k
    return len(before)


def cut_children(
    network: Network,
    bounds: NetworkBounds,
    neuron: tuple[int, int],
    box: tuple[FloatArray, FloatArray],
) -> dict[bool, tuple[NetworkBounds, int] | None]:
    """For each sign of a split of ``neuron`` (True: active): ``bounds`` with every unstable
    neuron's range tightened over the split's cut, sound on that child's ``D_S`` (a
    reference for :func:`~lipopt.bounds.constrained.split_bounds`), and the layer its forward
    pass must recompute from (above the split, or above the first layer in which the cut made
    a neuron's sign known); None when the cut leaves the child empty."""
    ranges = (bounds.pre_lower, bounds.pre_upper)
    lines = layer_lines(network, ranges)
    children: dict[bool, tuple[NetworkBounds, int] | None] = {}
    for active in (True, False):
        cut = split_cut(lines, neuron, active, box)
        if cut is None:
            children[active] = (bounds, neuron[0] + 1)
            continue
        tightened = cut_ranges(lines, cut, ranges, box)
        if tightened is None:
            children[active] = None
            continue
        lowers, uppers = tightened
        fresh = (
            min(
                neuron[0],
                _first_stabilised(bounds.pre_lower, lowers),
                _first_stabilised([-u for u in bounds.pre_upper], [-u for u in uppers]),
            )
            + 1
        )
        reference = replace(bounds, pre_lower=tuple(lowers), pre_upper=tuple(uppers))
        children[active] = (reference, fresh)
    return children


__all__ = [
    "Cut",
    "LayerLines",
    "cut_children",
    "cut_ranges",
    "cut_upper",
    "is_empty",
    "layer_lines",
    "split_cut",
]
