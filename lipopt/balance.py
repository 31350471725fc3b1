"""The same network with badly scaled neurons rescaled, so the solvers see no 1e6-wide ranges.

ReLU is positively homogeneous: ``v · relu(w^T h + b) = (s v) · relu((w^T h + b) / s)`` for any
``s > 0``, and so is every activation ``act(z) = α z + (1 - α) relu(z)`` (each neuron keeps its
``α``; the sign of ``z``, so its pattern, is unchanged). Dividing a hidden neuron's incoming
row and bias by ``s`` and multiplying its outgoing column by ``s`` leaves ``f`` unchanged;
with ``s`` a power of two it is unchanged to the last bit (a product by ``2^k`` is exact in
floating point), and so are the activation patterns, the gradients and every value lipopt
reports.

A neuron whose incoming weights are 1e6 and outgoing 1e-6 (issue 31) gives its big-M rows
coefficients twelve orders of magnitude apart; HiGHS then returned a wrong "optimal" bound
(3e-10 against a true constant of 2.24 in the fuzz test). Such a neuron is balanced: ``s`` is
the power of two nearest ``sqrt(‖(w, b)‖ / ‖v‖)``, making both norms about ``sqrt(‖(w, b)‖
‖v‖)``. Neurons whose two norms are within ``ratio`` of each other (every neuron of the trained
networks we ship) are left alone, so nothing changes for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from lipopt.network import Affine, Network


def _scales(incoming: Affine, outgoing: Affine, ratio: float) -> np.ndarray:
    """Per neuron of one hidden layer, the power of two ``s`` to divide its row by (1 for a
    balanced neuron, and for a neuron with a zero row or column: nothing to balance)."""
    inward = np.hypot(incoming.row_norms(2), incoming.bias)
    outward = Affine(outgoing.matrix.T, np.zeros(outgoing.in_features)).row_norms(2)
    scales = np.ones_like(inward)
    usable = (inward > 0.0) & (outward > 0.0)
    skew = np.ones_like(inward)
    skew[usable] = inward[usable] / outward[usable]
    off = usable & ((skew > ratio) | (skew < 1.0 / ratio))
    scales[off] = np.exp2(np.round(0.5 * np.log2(skew[off])))
    return scales


def _rows_scaled(matrix: Any, factors: np.ndarray) -> Any:
    """``diag(factors) @ matrix``, sparse where ``matrix`` is."""
    if sparse.issparse(matrix):
        return sparse.diags_array(factors) @ matrix
    return matrix * factors[:, None]


def balanced(network: Network, ratio: float) -> Network:
    """``network`` with every hidden neuron whose incoming and outgoing norms differ by more
    than ``ratio`` rescaled by a power of two (the same function, bit for bit); the network
    itself where none does."""
    affines = list(network.affine_layers)
    changed = False
    for k in range(len(affines) - 1):
        scales = _scales(affines[k], affines[k + 1], ratio)
        if np.all(scales == 1.0):
            continue
        changed = True
        affines[k] = Affine(_rows_scaled(affines[k].matrix, 1.0 / scales), affines[k].bias / scales)
        columns = _rows_scaled(affines[k + 1].matrix.T, scales).T
        affines[k + 1] = Affine(columns, affines[k + 1].bias)
    if not changed:
        return network
    return Network.from_affines(affines, None if network.is_relu else network.slopes)


__all__ = ["balanced"]
