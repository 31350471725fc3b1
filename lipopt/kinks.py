"""Whether a point sits clear of every activation kink: then an open set around it shares its
activation pattern, so the gradient there is a gradient of ``f`` on a full-dimensional region.

Each hidden neuron ``h = α z + (1 - α) relu(z)`` has its kink at ``z = 0``, except an identity
neuron (``α = 1``, ``h = z``), which has none: it never counts as one. On ``x``'s pattern the
post-activation is ``h = D z`` with ``D = α + (1 - α) [z > 0]``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from lipopt.domain import Domain
from lipopt.network import Network

FloatArray = NDArray[np.float64]

#: a pre-activation is clear of its kink when ``|z| > INTERIOR_MARGIN · (|W||h| + |b|)``: far
#: above float64's rounding error of ``z`` (about ``n · 1e-16`` of the same magnitude)
INTERIOR_MARGIN = 1e-9


def is_inside_a_region(network: Network, domain: Domain, x: FloatArray) -> bool:
    """True when ``x`` lies in the domain and every hidden pre-activation is clear of its kink,
    relative to the magnitude it is computed from through every layer, without cancellation
    (:data:`INTERIOR_MARGIN`, far above the rounding error of ``z``): then an open set
    around ``x`` shares its activation pattern, so that pattern's region is full-dimensional and
    the gradient at ``x`` is a gradient of ``f`` (it holds for a neuron scaled by 1e6 or 1e-6
    as for any other). A neuron whose pre-activation does not move with ``x`` near it (its row of
    ``∂z/∂x`` is exactly zero) may sit at 0: its state changes nothing there."""
    if not domain.contains(x, tol=0.0):
        return False
    return _clear_of_kinks(network, x, _relative_kink)


def _relative_kink(z: FloatArray, magnitude: FloatArray) -> NDArray[np.bool_]:
    """At the kink up to :data:`INTERIOR_MARGIN` of what ``z`` is computed from."""
    return (np.abs(z) <= INTERIOR_MARGIN * magnitude) | (z == 0.0)


def is_differentiable_at(network: Network, x: FloatArray, tol: float = 1e-9) -> bool:
    """True when every hidden pre-activation within ``tol`` of 0 at x does not move with x near
    it (its row of ``∂z/∂x`` is zero: a pass-through of a dead ReLU, as max-pooling and skip
    connections compile to), so f is linear near x."""
    return _clear_of_kinks(network, x, lambda z, size: np.abs(z) <= tol)


def _clear_of_kinks(
    network: Network, x: FloatArray, near: Callable[[FloatArray, FloatArray], NDArray[np.bool_]]
) -> bool:
    """No pre-activation that ``near(z, magnitude)`` puts at its kink moves with x there."""
    h = np.asarray(x, dtype=np.float64)
    size = np.abs(h)  # what h is computed from, without cancellation
    jacobian = np.eye(len(h))  # dh/dx on x's pattern
    for k, affine in enumerate(network.affine_layers[:-1]):
        z = affine.matrix @ h + affine.bias
        rows = np.asarray(affine.matrix @ jacobian)
        magnitude = abs(affine.matrix) @ size + np.abs(affine.bias)
        constant = ~rows.any(axis=1)  # z does not move with x near it: either state is the same
        alpha = network.slopes[k]
        if np.any(near(z, magnitude) & ~constant & (alpha != 1.0)):  # identity: no kink
            return False
        slope = network.derivatives(k, z > 0.0)  # D = α + (1 - α) σ
        h = slope * z
        size = np.abs(slope) * magnitude
        jacobian = slope[:, None] * rows
    return True
