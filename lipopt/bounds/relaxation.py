"""ReLU and switch relaxations: pairs of lines that sandwich ``relu(z)`` on ``[l, u]`` and the
switch ``s = a y`` (``a ∈ {0, 1}``) on ``[ly, uy]``, and one back-substitution step through them.

* ``α z <= relu(z) <= λ z + μ``: the chord ``λ = u / (u - l)``, ``μ = -λ l`` above (relu is
  convex) and ``α ∈ {0, 1}`` below (CROWN's ``α = 1`` iff ``u >= -l``).
* ``α y + β <= s <= λ y + μ``: the chords of ``max(y, 0)`` (above) and ``min(y, 0)`` (below).
* ``Λ v <= Λ⁺ (λ v' + μ) + Λ⁻ (α v' + β)`` when ``α v' + β <= v <= λ v' + μ``.

The derivations are in :mod:`lipopt.bounds.linear`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.bounds.interval import _ACTIVE, _UNSTABLE, NeuronState, classify
from lipopt.network import SPARSE_DENSITY, is_sparse

FloatArray = NDArray[np.float64]


def relu_relaxation(
    lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Lines ``α z <= relu(z) <= λ z + μ`` valid on ``[l, u]``; returns ``(λ, μ, α)``.

    Active: ``λ = α = 1, μ = 0``; inactive: all zero; unstable: ``λ = u/(u-l)``, ``μ = -λ l`` and
    ``α = 1`` if ``u >= -l`` else ``0`` (CROWN).
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


def switch_relaxation(
    state: NDArray[np.int8], lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Lines ``α y + β <= s <= λ y + μ`` for ``s = a y`` with ``y ∈ [ly, uy]``.

    Returns ``(λ, μ, α, β)``.

    Active ``s = y``; inactive ``s = 0``; unstable (``a ∈ {0, 1}`` free): the chords of
    ``max(y, 0)`` (above) and ``min(y, 0)`` (below) over ``[ly, uy]``.
    """
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
    """Upper bound of ``Λ v`` given ``α v' + β <= v <= λ v' + μ`` elementwise.

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


__all__ = ["relu_relaxation", "switch_relaxation"]
