"""Input sets cut by linear rows: a polytope, and an ℓ1 or ℓ2 ball ∩ a polytope.

``Polytope(A, b, lower, upper)`` is ``{x : lower <= x <= upper, A x <= b}``; the box is
required, so the set is bounded. ``Intersection(ball, polytope)`` is ``ball ∩ polytope`` for an
ℓ1 or ℓ2 ball (an ℓ∞ ball ∩ a polytope is a polytope). Both must have a nonempty interior, since
the Lipschitz constant is taken over it: a point whose Euclidean slack to every row, bound and
the ball is positive is found when the set is built (:mod:`lipopt.domain.interior`) and kept as
``interior_point``; a set without one is refused in one line with the reason.

:func:`intersect` builds the one domain a user asks for: a box or ball ∩ the valid input range
(``--clip LO,HI``) ∩ linear rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.domain.interior import Interior, bounding_box_lp, chebyshev, hit_and_run
from lipopt.domain.shapes import Box, DomainError, FloatArray, L1Ball, L2Ball, LinfBall, _vector


def _matrix(values: ArrayLike, dim: int) -> FloatArray:
    try:
        arr = np.array(values, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise DomainError(f"polytope A must be a matrix of numbers: {exc}") from None
    if arr.size == 0:
        arr = arr.reshape(0, dim)
    if arr.ndim == 1 and arr.size == dim:
        arr = arr.reshape(1, dim)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise DomainError(f"polytope A must have shape (m, {dim}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DomainError("polytope A contains NaN or infinite values")
    return arr


def _clean_rows(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Drop all-zero rows (``0 <= b`` holds or the set is empty); refuse the empty case."""
    zero = ~np.any(a != 0.0, axis=1)
    if np.any(zero & (b < 0)):
        k = int(np.flatnonzero(zero & (b < 0))[0])
        raise DomainError(f"the polytope is empty: row {k} reads 0 <= {b[k]:g}")
    a, b = a[~zero], b[~zero]
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


@dataclass(frozen=True, eq=False)
class Polytope:
    """The polytope ``{x : lower <= x <= upper, A x <= b}`` (``A`` of shape (m, d); m may be 0)."""

    A: FloatArray
    b: FloatArray
    lower: FloatArray
    upper: FloatArray
    interior: Interior = field(init=False, repr=False)

    def __post_init__(self) -> None:
        width = np.shape(self.A)[-1] if np.ndim(self.A) == 2 else np.size(self.A)
        width = width if np.size(self.lower) == 1 else np.size(self.lower)
        lower, upper = (
            np.full(width, float(np.ravel(v)[0])) if np.size(v) == 1 else v
            for v in (self.lower, self.upper)
        )
        box = Box(lower, upper)
        a = _matrix(self.A, box.dim)
        b = _vector(self.b, "polytope b") if np.size(self.b) else np.zeros(0)
        if b.size != a.shape[0]:
            raise DomainError(f"polytope A has {a.shape[0]} rows but b has {b.size} entries")
        a, b = _clean_rows(a, b)
        for name, value in (("A", a), ("b", b), ("lower", box.lower), ("upper", box.upper)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "interior", chebyshev(a, b, box.lower, box.upper, None))

    @property
    def dim(self) -> int:
        return int(self.lower.size)

    @property
    def interior_point(self) -> FloatArray:
        return self.interior.point

    @property
    def box(self) -> Box:
        """The declared box (not tightened by the rows)."""
        return Box(self.lower, self.upper)

    @cached_property
    def _tight_box(self) -> tuple[FloatArray, FloatArray]:
        if self.A.shape[0] == 0:
            return self.lower, self.upper
        return bounding_box_lp(self.A, self.b, self.lower, self.upper)

    def bounding_box(self) -> tuple[FloatArray, FloatArray]:
        """The smallest box holding the set: ``min``/``max x_j`` by LP (2d LPs, computed once)."""
        return self._tight_box

    def satisfies_rows(self, x: ArrayLike, tol: float = 1e-9) -> NDArray[np.bool_]:
        """Whether each point (rows of ``x``) meets ``A x <= b`` and the box, to ``tol``."""
        arr = np.atleast_2d(np.asarray(x, dtype=np.float64))
        inside = np.all(arr >= self.lower - tol, axis=1) & np.all(arr <= self.upper + tol, axis=1)
        if self.A.shape[0]:
            inside &= np.all(arr @ self.A.T <= self.b + tol, axis=1)
        return inside

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        return bool(self.satisfies_rows(x, tol)[0])

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """``n`` points inside: uniform by rejection from the box while that keeps at least one
        draw in 50, else a hit-and-run walk from the interior point."""
        return _sample_inside(self, self.box.sample, n, rng)

    def describe(self) -> str:
        rows = self.A.shape[0]
        if rows == 0:
            return self.box.describe()
        return f"polytope in R^{self.dim} ({rows} linear row{'s' if rows != 1 else ''} in a box)"


@dataclass(frozen=True, eq=False)
class Intersection:
    """``ball ∩ polytope`` for an ℓ1 or ℓ2 ball."""

    ball: L1Ball | L2Ball
    polytope: Polytope
    interior: Interior = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.ball, (L1Ball, L2Ball)):
            raise DomainError("an intersection takes an l1 or l2 ball")
        if self.ball.dim != self.polytope.dim:
            raise DomainError(
                f"the ball has {self.ball.dim} inputs but the polytope has {self.polytope.dim}"
            )
        p = self.polytope
        object.__setattr__(self, "interior", chebyshev(p.A, p.b, p.lower, p.upper, self.ball))

    @property
    def dim(self) -> int:
        return self.ball.dim

    @property
    def interior_point(self) -> FloatArray:
        return self.interior.point

    def bounding_box(self) -> tuple[FloatArray, FloatArray]:
        """The ball's box ∩ the polytope's (a box holding the set, not always the smallest)."""
        ball_low, ball_high = self.ball.bounding_box()
        low, high = self.polytope.bounding_box()
        return np.maximum(ball_low, low), np.minimum(ball_high, high)

    def contains(self, x: ArrayLike, tol: float = 1e-9) -> bool:
        return self.ball.contains(x, tol) and self.polytope.contains(x, tol)

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """``n`` points inside: the ball's uniform samples that meet the rows, or hit-and-run."""
        return _sample_inside(self, self.ball.sample, n, rng)

    def describe(self) -> str:
        return f"{self.ball.describe()} ∩ {self.polytope.describe()}"


CutDomain = Union[Polytope, Intersection]


def _sample_inside(domain: CutDomain, draw: object, n: int, rng: np.random.Generator) -> FloatArray:
    """Rejection from ``draw`` (the enclosing set's uniform sampler); if fewer than one draw in
    50 lands inside, a hit-and-run walk fills the rest (asymptotically uniform)."""
    kept: list[FloatArray] = []
    got = 0
    for _ in range(4):
        points = draw(max(4 * n, 64), rng)  # type: ignore[operator]
        inside = points[[domain.contains(p, tol=0.0) for p in points]]
        kept.append(inside)
        got += len(inside)
        if got >= n or len(inside) * 50 < len(points):
            break
    if got < n:
        kept.append(hit_and_run(domain, n - got, rng))
    return np.concatenate(kept)[:n]


def cut_rows(domain: object) -> tuple[FloatArray, FloatArray] | None:
    """The linear rows ``(A, b)`` a domain adds to its box or ball, or None."""
    polytope = domain.polytope if isinstance(domain, Intersection) else domain
    if isinstance(polytope, Polytope) and polytope.A.shape[0]:
        return polytope.A, polytope.b
    return None


def ball_part(domain: object) -> L1Ball | L2Ball | None:
    """The ℓ1/ℓ2 ball of a ball or an intersection, else None."""
    if isinstance(domain, Intersection):
        return domain.ball
    return domain if isinstance(domain, (L1Ball, L2Ball)) else None


def intersect(
    domain: Box | LinfBall | L1Ball | L2Ball | Polytope | Intersection,
    clip: tuple[float, float] | None = None,
    cut: Polytope | None = None,
) -> Box | LinfBall | L1Ball | L2Ball | Polytope | Intersection:
    """``domain ∩ [clip]^d ∩ cut`` as the simplest domain that is that set (the domain itself
    when nothing is added)."""
    if clip is None and cut is None:
        return domain
    ball = ball_part(domain)
    low, high = domain.bounding_box()
    rows = [cut_rows(domain), cut_rows(cut)] if cut is not None else [cut_rows(domain)]
    if cut is not None:
        low, high = np.maximum(low, cut.lower), np.minimum(high, cut.upper)
    if clip is not None:
        low, high = np.maximum(low, clip[0]), np.minimum(high, clip[1])
    if np.any(low >= high):
        j = int(np.flatnonzero(low >= high)[0])
        raise DomainError(
            f"the input set is empty or flat: intersected with --clip and any polytope's box, "
            f"coordinate {j} is left with [{low[j]:g}, {high[j]:g}]"
        )
    kept = [r for r in rows if r is not None]
    a = np.vstack([r[0] for r in kept]) if kept else np.zeros((0, low.size))
    b = np.concatenate([r[1] for r in kept]) if kept else np.zeros(0)
    if ball is None:
        return Polytope(a, b, low, high) if a.shape[0] else Box(low, high)
    ball_low, ball_high = ball.bounding_box()
    if not a.shape[0] and np.all(low <= ball_low) and np.all(high >= ball_high):
        return ball
    return Intersection(ball, Polytope(a, b, low, high))
