"""Input norms and their duals.

For a scalar function the local Lipschitz constant w.r.t. the input norm ``α`` is the largest
*dual* norm of the gradient over the domain (paper Theorem 1):

    L^α(f, X) = sup_{x ∈ X} ||∇f(x)||_{α*},   ℓ∞* = ℓ1,  ℓ1* = ℓ∞.
"""

from __future__ import annotations

from enum import Enum

import numpy as np
from numpy.typing import ArrayLike


class InputNorm(str, Enum):
    """The norm measuring input distances ``||x - y||_α``."""

    LINF = "linf"
    L1 = "l1"

    @classmethod
    def parse(cls, value: str | InputNorm) -> InputNorm:
        if isinstance(value, InputNorm):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown input norm {value!r}; choose one of: {names}") from None

    @property
    def dual_order(self) -> float:
        """The order p of the dual norm ℓp applied to gradients."""
        return {InputNorm.LINF: 1.0, InputNorm.L1: float("inf")}[self]

    @property
    def dual_name(self) -> str:
        return {InputNorm.LINF: "l1", InputNorm.L1: "linf"}[self]


def dual_norm(gradients: ArrayLike, norm: InputNorm | str) -> np.ndarray | float:
    """Dual norm of gradient vectors along the last axis: ``||g||_1`` for ℓ∞, ``||g||_∞`` for ℓ1."""
    order = InputNorm.parse(norm).dual_order
    g = np.asarray(gradients, dtype=np.float64)
    out = np.linalg.norm(g, ord=order, axis=-1)
    return float(out) if np.ndim(out) == 0 else out
