"""A union of input sets (a VNN-LIB ``or`` of input sets).

The paper's Theorem 1 makes the local Lipschitz constant over an open set the supremum of the
gradient's dual norm over it, so over ``X_1 ∪ ... ∪ X_k`` it is the maximum of the constants
over the parts: each part is answered on its own and the brackets merge by taking maxima.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain.shapes import DomainError, FloatArray


@dataclass(frozen=True, eq=False)
class Disjunction:
    """The union of ``parts`` (each a box, ball, polytope or intersection of one dimension)."""

    parts: tuple[Any, ...]

    def __post_init__(self) -> None:
        parts = tuple(self.parts)
        if len(parts) < 2:
            raise DomainError("a union of input sets needs at least two parts")
        if isinstance(parts[0], Disjunction) or any(isinstance(p, Disjunction) for p in parts):
            raise DomainError("a union's parts must not be unions themselves")
        dims = {int(p.dim) for p in parts}
        if len(dims) != 1:
            raise DomainError(f"the union's parts have different input counts: {sorted(dims)}")
        object.__setattr__(self, "parts", parts)

    @property
    def dim(self) -> int:
        return int(self.parts[0].dim)

    def bounding_box(self) -> tuple[FloatArray, FloatArray]:
        boxes = [p.bounding_box() for p in self.parts]
        return np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        return any(p.contains(x, tol) for p in self.parts)

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """``n`` points, spread over the parts in turn (not uniform over the union)."""
        counts = np.bincount(np.arange(n) % len(self.parts), minlength=len(self.parts))
        return np.concatenate([p.sample(int(k), rng) for p, k in zip(self.parts, counts) if k])

    def describe(self) -> str:
        return f"union of {len(self.parts)} input sets in R^{self.dim}"
