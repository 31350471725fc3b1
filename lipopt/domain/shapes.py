"""Boxes and norm balls: validation, membership, sampling, bounding boxes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


class DomainError(ValueError):
    """A domain that is malformed or does not fit the network."""


def _vector(values: ArrayLike, what: str) -> FloatArray:
    try:
        arr = np.array(values, dtype=np.float64, copy=True).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DomainError(f"{what} must be a list of numbers: {exc}") from None
    if arr.size == 0:
        raise DomainError(f"{what} is empty")
    if not np.all(np.isfinite(arr)):
        raise DomainError(f"{what} contains NaN or infinite values")
    arr.setflags(write=False)
    return arr


def _radius(radius: float) -> float:
    try:
        value = float(radius)
    except (TypeError, ValueError):
        raise DomainError(f"radius must be a number, got {radius!r}") from None
    if not np.isfinite(value):
        raise DomainError(f"radius must be finite, got {value}")
    if value <= 0:
        raise DomainError(f"radius must be positive, got {value}")
    return value


@dataclass(frozen=True, eq=False)
class Box:
    """The box ``{x : lower <= x <= upper}`` (``lower < upper`` in every coordinate)."""

    lower: FloatArray
    upper: FloatArray

    def __post_init__(self) -> None:
        lower = _vector(self.lower, "box lower bound")
        upper = _vector(self.upper, "box upper bound")
        if lower.shape != upper.shape:
            raise DomainError(
                f"box lower bound has {lower.size} entries but upper bound has {upper.size}"
            )
        bad = np.flatnonzero(lower >= upper)
        if bad.size:
            j = int(bad[0])
            hint = (
                "; to hold an input fixed, fold it into the first layer's bias and leave it out"
                if lower[j] == upper[j]
                else ""
            )
            raise DomainError(
                f"box needs lower < upper in every coordinate; coordinate {j} has "
                f"lower {lower[j]:g} >= upper {upper[j]:g}{hint}"
            )
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def dim(self) -> int:
        return int(self.lower.size)

    def bounding_box(self) -> tuple[FloatArray, FloatArray]:
        return self.lower, self.upper

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(x, dtype=np.float64)
        return bool(np.all(arr >= self.lower - tol) and np.all(arr <= self.upper + tol))

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """``n`` points uniform in the box, shape (n, d)."""
        return rng.uniform(self.lower, self.upper, size=(n, self.dim))

    def describe(self) -> str:
        if np.all(self.lower == self.lower[0]) and np.all(self.upper == self.upper[0]):
            return f"box [{self.lower[0]:g}, {self.upper[0]:g}]^{self.dim}"
        return f"box in R^{self.dim} (per-input bounds)"


@dataclass(frozen=True, eq=False)
class _Ball:
    """A norm ball ``{x : ||x - center|| <= radius}``: validation and the shared geometry."""

    center: FloatArray
    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _vector(self.center, "ball center"))
        object.__setattr__(self, "radius", _radius(self.radius))

    @property
    def dim(self) -> int:
        return int(self.center.size)

    def bounding_box(self) -> tuple[FloatArray, FloatArray]:
        """Every ball fits in ``center ± radius`` (the ℓ1 and ℓ2 balls touch it)."""
        return self.center - self.radius, self.center + self.radius


@dataclass(frozen=True, eq=False)
class LinfBall(_Ball):
    """The ℓ∞ ball ``{x : max_j |x_j - center_j| <= radius}``, a box."""

    def as_box(self) -> Box:
        lower, upper = self.bounding_box()
        return Box(lower, upper)

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(x, dtype=np.float64)
        return bool(np.max(np.abs(arr - self.center)) <= self.radius + tol)

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        return self.as_box().sample(n, rng)

    def describe(self) -> str:
        return f"l-inf ball of radius {self.radius:g} in R^{self.dim}"


@dataclass(frozen=True, eq=False)
class L1Ball(_Ball):
    """The ℓ1 ball ``{x : sum_j |x_j - center_j| <= radius}``."""

    #: ``a·x`` ranges over ``a·center ± radius ||a||_q`` with q this dual order
    dual_order: ClassVar[float] = np.inf

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(x, dtype=np.float64)
        return bool(np.sum(np.abs(arr - self.center)) <= self.radius + tol)

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """Uniform in the ℓ1 ball: a uniform point of the simplex (normalised exponentials)
        with random signs, scaled by ``radius * U^(1/d)``."""
        d = self.dim
        e = rng.exponential(size=(n, d))
        simplex = e / e.sum(axis=1, keepdims=True)
        signs = rng.choice([-1.0, 1.0], size=(n, d))
        scale = self.radius * rng.uniform(size=(n, 1)) ** (1.0 / d)
        return self.center + signs * simplex * scale

    def describe(self) -> str:
        return f"l1 ball of radius {self.radius:g} in R^{self.dim}"


@dataclass(frozen=True, eq=False)
class L2Ball(_Ball):
    """The Euclidean ball ``{x : ||x - center||_2 <= radius}``; not a polytope, so a MIP takes
    it as a convex quadratic row or through tangent cuts (docs/encoding.md)."""

    dual_order: ClassVar[float] = 2.0  # see L1Ball.dual_order

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(x, dtype=np.float64)
        return bool(np.linalg.norm(arr - self.center) <= self.radius + tol)

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """Uniform in the ℓ2 ball: a Gaussian direction, normalised, scaled by
        ``radius * U^(1/d)``."""
        d = self.dim
        direction = rng.normal(size=(n, d))
        direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-300)
        scale = self.radius * rng.uniform(size=(n, 1)) ** (1.0 / d)
        return self.center + direction * scale

    def project(self, x: FloatArray) -> FloatArray:
        """The nearest points of the ball to the rows of ``x``; a point outside lands a hair
        (1e-12 of the radius) inside the sphere, so rounding keeps it in the ball."""
        offset = np.asarray(x, dtype=np.float64) - self.center
        length = np.linalg.norm(offset, axis=-1, keepdims=True)
        inside = self.radius * (1.0 - 1e-12)
        return self.center + offset * np.minimum(1.0, inside / np.maximum(length, 1e-300))

    def describe(self) -> str:
        return f"l2 ball of radius {self.radius:g} in R^{self.dim}"


#: the ball of each ``--ball`` kind
BALLS: dict[str, type[LinfBall | L1Ball | L2Ball]] = {"linf": LinfBall, "l1": L1Ball, "l2": L2Ball}


def check_dimension(domain: Any, input_dim: int) -> None:
    """Raise :class:`DomainError` unless the domain lives in the network's input space."""
    if domain.dim != input_dim:
        raise DomainError(f"the domain has {domain.dim} inputs but the network takes {input_dim}")
