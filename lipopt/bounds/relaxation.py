"""ReLU and switch relaxations: pairs of lines that sandwich ``relu(z)`` on ``[l, u]`` and the
switch ``s = a y`` (``a ∈ {0, 1}``) on ``[ly, uy]``, and one back-substitution step through them.

* ``β z <= relu(z) <= λ z + μ``: the chord ``λ = u / (u - l)``, ``μ = -λ l`` above (relu is
  convex) and ``β ∈ {0, 1}`` below (CROWN's ``β = 1`` iff ``u >= -l``).
* ``κ y + ν <= s <= λ y + μ``: the chords of ``max(y, 0)`` (above) and ``min(y, 0)`` (below).
* ``Λ v <= Λ⁺ (λ v' + μ) + Λ⁻ (κ v' + ν)`` when ``κ v' + ν <= v <= λ v' + μ``.

**Two-piece activations** ``h = α z + (1 - α) relu(z)`` (:mod:`lipopt.activation`) reuse the ReLU
lines: if ``L <= relu(z) <= U`` then ``α z + (1 - α) L <= h <= α z + (1 - α) U`` when ``α <= 1``
and the two swap when ``α > 1`` (the factor ``1 - α`` is negative). For ``α <= 1`` that is the
chord of the convex ``h`` through ``(l, α l)`` and ``(u, u)`` above and ``s z`` with
``s = α + (1 - α) β ∈ {α, 1}`` below; for ``α > 1`` the mirror (``h`` concave). The backward
switch ``s = D y = α y + (1 - α) t`` with ``t = a y`` composes the same way with the switch
chords of ``t``. Stable neurons are exact: ACTIVE (``l >= 0``, or ``α = 1``) ``h = z``,
``s = y``; INACTIVE ``h = α z``, ``s = α y``. All-zero slopes (or None) take the ReLU code.

The derivations are in :mod:`lipopt.bounds.linear`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.bounds.interval import _ACTIVE, _UNSTABLE, NeuronState, classify
from lipopt.network import SPARSE_DENSITY, Network, is_sparse

FloatArray = NDArray[np.float64]
#: ``(λ, μ, κ, ν)``: the lines ``κ v' + ν <= v <= λ v' + μ``
Lines = tuple[FloatArray, FloatArray, FloatArray, FloatArray]


def layer_slopes(network: Network, layer: int) -> FloatArray | None:
    """``α`` of hidden layer ``layer`` (0-based), or None when it is all ReLU (the fast path)."""
    alpha = network.slopes[layer]
    return alpha if np.any(alpha) else None


def relu_relaxation(
    lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Lines ``β z <= relu(z) <= λ z + μ`` valid on ``[l, u]``; returns ``(λ, μ, β)``.

    Active: ``λ = β = 1, μ = 0``; inactive: all zero; unstable: ``λ = u/(u-l)``, ``μ = -λ l`` and
    ``β = 1`` if ``u >= -l`` else ``0`` (CROWN).
    """
    state = classify(lower, upper)
    unstable = state == NeuronState.UNSTABLE
    active = (state == NeuronState.ACTIVE).astype(np.float64)
    width = np.where(unstable, upper - lower, 1.0)
    chord = np.where(unstable, upper / width, 0.0)
    up_slope = active + chord
    up_shift = np.where(unstable, -chord * lower, 0.0)
    low_slope = active + np.where(unstable & (upper >= -lower), 1.0, 0.0)
    return up_slope, up_shift, low_slope


def _composed(alpha: FloatArray, relu_lines: Lines, state: NDArray[np.int8]) -> Lines:
    """The lines of ``α v' + (1 - α) r`` from lines ``κ v' + ν <= r <= λ v' + μ`` of ``r``
    (module docstring): exact ``1, 0`` on ACTIVE neurons and ``α, 0`` on INACTIVE ones."""
    up_slope, up_shift, low_slope, low_shift = relu_lines
    convex = alpha <= 1.0
    factor = 1.0 - alpha
    unstable = state == _UNSTABLE
    fixed = np.where(state == _ACTIVE, 1.0, alpha)
    high = (np.where(convex, up_slope, low_slope), np.where(convex, up_shift, low_shift))
    low = (np.where(convex, low_slope, up_slope), np.where(convex, low_shift, up_shift))
    return (
        np.where(unstable, _mixed(alpha, factor, high[0]), fixed),
        np.where(unstable, factor * high[1], 0.0),
        np.where(unstable, _mixed(alpha, factor, low[0]), fixed),
        np.where(unstable, factor * low[1], 0.0),
    )


def _mixed(alpha: FloatArray, factor: FloatArray, slope: FloatArray) -> FloatArray:
    """``α + (1 - α) slope``, exactly ``α`` and ``1`` at ``slope`` 0 and 1 (a line through the
    origin then lies on a piece of ``h``, not a rounding error beside it)."""
    return np.where(slope == 1.0, 1.0, np.where(slope == 0.0, alpha, alpha + factor * slope))


def activation_relaxation(
    lower: FloatArray, upper: FloatArray, alpha: FloatArray | None = None
) -> Lines:
    """Lines ``κ z + ν <= h <= λ z + μ`` of ``h = α z + (1 - α) relu(z)`` valid on ``[l, u]``;
    returns ``(λ, μ, κ, ν)``. ReLU (``alpha`` None or all zero): :func:`relu_relaxation` with
    ``ν = 0``; otherwise composed from it (module docstring)."""
    up_slope, up_shift, low_slope = relu_relaxation(lower, upper)
    relu_lines = (up_slope, up_shift, low_slope, np.zeros_like(low_slope))
    if alpha is None or not np.any(alpha):
        return relu_lines
    return _composed(alpha, relu_lines, classify(lower, upper, alpha))


def switch_relaxation(
    state: NDArray[np.int8],
    lower: FloatArray,
    upper: FloatArray,
    alpha: FloatArray | None = None,
) -> Lines:
    """Lines ``κ y + ν <= s <= λ y + μ`` for ``s = D y`` with ``y ∈ [ly, uy]``.

    Returns ``(λ, μ, κ, ν)``.

    ReLU (``alpha`` None or all zero, ``D = a``): active ``s = y``; inactive ``s = 0``; unstable
    (``a ∈ {0, 1}`` free): the chords of ``max(y, 0)`` (above) and ``min(y, 0)`` (below) over
    ``[ly, uy]``. Slopes ``α``: ``s = α y + (1 - α) a y`` composed from those (module
    docstring); ``s = y`` active, ``s = α y`` inactive.
    """
    lines = _switch_chords(state, lower, upper)
    if alpha is None or not np.any(alpha):
        return lines
    return _composed(alpha, lines, state)


def _switch_chords(state: NDArray[np.int8], lower: FloatArray, upper: FloatArray) -> Lines:
    """:func:`switch_relaxation` for ``s = a y`` (ReLU)."""
    # One formula for the three unstable cases: over [l', u'] = [min(l, 0), max(u, 0)] the chord
    # of max(y, 0) has slope u'/(u'-l') and that of min(y, 0) slope -l'/(u'-l'); they give the
    # straddling chords, s = y (above) and s = 0 (below) when l >= 0, the reverse when u <= 0.
    # Written with few array operations: it runs for every node of the region search.
    unstable = (state == _UNSTABLE).astype(np.float64)
    active = (state == _ACTIVE).astype(np.float64)
    low0, up0 = np.minimum(lower, 0.0), np.maximum(upper, 0.0)
    width = up0 - low0
    inverse = unstable / np.where(width > 0.0, width, 1.0)  # 0 for stable neurons
    up_chord, low_chord = up0 * inverse, -low0 * inverse
    up_slope = active + up_chord
    up_shift = -up_chord * low0
    low_slope = active + low_chord
    low_shift = -low_chord * up0
    return up_slope, up_shift, low_slope, low_shift


def _relax_upper(
    coeffs: FloatArray,
    up: tuple[FloatArray, FloatArray],
    low: tuple[FloatArray, FloatArray],
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Upper bound of ``Λ v`` given ``κ v' + ν <= v <= λ v' + μ`` elementwise.

    Returns ``(Λ', shift, magnitude)`` with ``Λ v <= Λ' v' + shift``: positive coefficients take the
    upper line, negative ones the lower line; ``magnitude`` sums the absolute shift terms.
    """
    if is_sparse(coeffs) and coeffs.nnz > SPARSE_DENSITY * coeffs.shape[0] * coeffs.shape[1]:
        coeffs = coeffs.toarray()  # filled in (receptive fields grown): dense is faster
    if is_sparse(coeffs):  # the same, keeping the rows' sparsity
        pos, neg = coeffs.maximum(0.0), coeffs.minimum(0.0)
        new = sparse.csr_array(pos.multiply(up[0][None, :]) + neg.multiply(low[0][None, :]))
    else:
        pos = np.maximum(coeffs, 0.0)
        neg = np.minimum(coeffs, 0.0)
        new = pos * up[0] + neg * low[0]
    shift = pos @ up[1] + neg @ low[1]
    magnitude = pos @ np.abs(up[1]) - neg @ np.abs(low[1])  # |pos| = pos, |neg| = -neg
    return new, shift, magnitude


__all__ = [
    "Lines",
    "activation_relaxation",
    "layer_slopes",
    "relu_relaxation",
    "switch_relaxation",
]
