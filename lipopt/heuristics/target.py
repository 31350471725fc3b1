"""The target of a primal heuristic: a checked fixed-c request whose gradient norms it maximises.

For the scalar function ``c^T f`` and the input norm α, the heuristics maximise
``x -> ||∇(c^T f)(x)||_{α*}`` over the domain; every value they report is attained.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.domain import Domain, check_dimension
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.query import resolve_c

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Problem:
    """A checked request: the network, the domain, the input norm and the output weighting c."""

    network: Network
    domain: Domain
    norm: InputNorm
    c: FloatArray

    @property
    def dim(self) -> int:
        return self.network.input_dim

    def dual_norms(self, x: ArrayLike) -> FloatArray:
        """``||∇(c^T f)(x)||_{α*}`` for a batch of points (n, d) -> (n,)."""
        grads = self.network.gradients(np.atleast_2d(np.asarray(x, dtype=np.float64)), self.c)
        return np.asarray(np.linalg.norm(grads, ord=self.norm.dual_order, axis=-1))

    def scalar_weights(self) -> list[FloatArray]:
        """Weight matrices of the scalar network ``c^T f``: ``W_1, ..., W_{L-1}, c^T W_L``."""
        affines = self.network.affine_layers
        return [a.weight for a in affines[:-1]] + [(self.c @ affines[-1].weight)[None, :]]

    def l2_scale(self) -> float:
        """Norm-equivalence factor from an ℓ2 Lipschitz bound to this input norm.

        ℓ∞ input: ``||g||_1 <= sqrt(d) ||g||_2`` (Cauchy-Schwarz), factor ``sqrt(d)``;
        ℓ1 input: ``||g||_∞ <= ||g||_2``, factor 1; ℓ2 input: the bound itself, factor 1.
        """
        return self.norm.dual.l2_factor(self.dim)


def problem(
    network: Network, domain: Domain, norm: InputNorm | str, c: ArrayLike | None
) -> Problem:
    """Validate the request once: dimensions, the input norm, and ``c`` (``[1]`` for one output)."""
    check_dimension(domain, network.input_dim)
    return Problem(network, domain, InputNorm.parse(norm), resolve_c(network, c))


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A generator from a seed, or the generator itself."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(0 if seed is None else seed)
