"""Per-neuron two-piece activations: ``h = α z + (1 - α) relu(z)``, one real ``α`` per neuron.

Each neuron has one kink, at ``z = 0``, with slope ``α`` left of it and ``1`` right of it:

=========  ==========  =======================================  ============================
kind       ``α``       ``h``                                    binaries when ``l < 0 < u``
=========  ==========  =======================================  ============================
identity   1           ``z``                                    none (no kink at all)
ReLU       0           ``max(z, 0)``                            one
leaky      0 < α < 1   ``max(z, α z)`` (LeakyReLU, PReLU)       one
\\|z\\|    -1          ``|z|``                                  one
=========  ==========  =======================================  ============================

With the pattern ``σ = [z > 0]`` the derivative is ``D(σ) = α + (1 - α) σ``, so everything that
reads a ReLU network through its 0/1 pattern reads these through ``D``. ``h`` is convex in ``z``
for ``α <= 1`` and concave for ``α >= 1``; on ``[l, u]`` its extremes lie among ``l, u`` and ``0``.

This module holds the layer (:class:`Activation`) and the elementwise math every stage shares;
it imports numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

#: the named slopes
IDENTITY, RELU, ABS = 1.0, 0.0, -1.0


@dataclass(frozen=True, eq=False)
class Activation:
    """``h_i = α_i z_i + (1 - α_i) relu(z_i)`` for each neuron ``i`` (module docstring).

    ``alpha`` is frozen, one finite real per neuron. :class:`lipopt.network.ReLU` is the case
    ``α = 0`` everywhere with no width stated."""

    alpha: FloatArray

    def __post_init__(self) -> None:
        alpha = np.array(self.alpha, dtype=np.float64, copy=True).reshape(-1)
        if not np.all(np.isfinite(alpha)):
            raise ValueError("activation slopes must be finite")
        alpha.setflags(write=False)
        object.__setattr__(self, "alpha", alpha)

    @property
    def width(self) -> int:
        return int(self.alpha.size)

    def __repr__(self) -> str:
        return f"Activation({describe(self.alpha)})"


def describe(alpha: FloatArray) -> str:
    """Counts of each kind, e.g. ``'3 relu, 2 identity, 1 leaky'``."""
    kinds = {
        "relu": int(np.count_nonzero(alpha == RELU)),
        "identity": int(np.count_nonzero(alpha == IDENTITY)),
        "abs": int(np.count_nonzero(alpha == ABS)),
    }
    kinds["other"] = int(alpha.size) - sum(kinds.values())
    return ", ".join(f"{count} {kind}" for kind, count in kinds.items() if count)


def apply(alpha: FloatArray, z: ArrayLike) -> FloatArray:
    """``h = α z + (1 - α) relu(z)`` (``alpha`` broadcast along the last axis of ``z``)."""
    values = np.asarray(z, dtype=np.float64)
    return alpha * values + (1.0 - alpha) * np.maximum(values, 0.0)


def derivative(alpha: FloatArray, mask: ArrayLike) -> FloatArray:
    """``D(σ) = α + (1 - α) σ`` for a 0/1 pattern ``σ`` (``σ`` may carry a batch axis)."""
    return alpha + (1.0 - alpha) * np.asarray(mask, dtype=np.float64)


def value_range(
    alpha: FloatArray, lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The exact range of ``h`` over ``z ∈ [l, u]``: the hull of ``h(l), h(u)`` and, where
    ``l < 0 < u``, ``h(0) = 0``."""
    at_lower, at_upper = apply(alpha, lower), apply(alpha, upper)
    low, high = np.minimum(at_lower, at_upper), np.maximum(at_lower, at_upper)
    crosses = (lower < 0.0) & (upper > 0.0)
    return np.where(crosses, np.minimum(low, 0.0), low), np.where(
        crosses, np.maximum(high, 0.0), high
    )


def switch_range(
    alpha: FloatArray, state: NDArray[np.int8], lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The range of ``s = D y`` for ``y ∈ [l, u]``: ``D = 1`` on an active neuron (state 1),
    ``D = α`` on an inactive one (state 0), ``D ∈ {α, 1}`` on an unstable one (state 2), so
    ``s`` lies in the hull of ``[l, u]`` and ``α [l, u]``."""
    scaled_lo = np.minimum(alpha * lower, alpha * upper)
    scaled_hi = np.maximum(alpha * lower, alpha * upper)
    s_lo = np.where(
        state == 1, lower, np.where(state == 0, scaled_lo, np.minimum(lower, scaled_lo))
    )
    s_hi = np.where(
        state == 1, upper, np.where(state == 0, scaled_hi, np.maximum(upper, scaled_hi))
    )
    return s_lo, s_hi


def lowered(alpha: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The same activation as ReLUs only: ``h = relu(z) - α relu(-z)``. Returns ``(P, Q)`` with
    ``h = Q relu(P z)``: every neuron keeps its row ``z``, and each non-ReLU one adds a row ``-z``.
    For stages that read ReLU networks only (the same function, so the same constant)."""
    eye = np.eye(alpha.size)
    bent = np.flatnonzero(alpha != RELU)
    pick = np.vstack([eye, -eye[bent]])  # z, then -z of each non-ReLU neuron
    combine = np.hstack([eye, -eye[:, bent] * alpha[bent]])
    return pick, combine
