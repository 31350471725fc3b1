"""Concretisation of linear bounds: the exact range of ``Λ x + c`` over a domain and of
``Λ w`` over a seed set, the outward rounding every linear bound gets, and the intersection of
two sound ranges. :mod:`lipopt.bounds.linear` states the maths; the bounds of
:mod:`lipopt.bounds.jacobian`, :mod:`lipopt.bounds.tangent` and :mod:`lipopt.bounds.split_cuts`
end the same way.

* box with centre ``m`` and radius ``r``: ``Λ m ± |Λ| r``;
* ℓ1 or ℓ2 ball of radius ``ρ`` around ``x0``: ``Λ x0 ± ρ ||Λ_i||_*`` (the dual norm per row);
* a polytope or a ball cut by one: the range over its bounding box, met with the ball's;
* the seed ``{c}``: ``Λ c``; an output norm's dual ball: its support function.

Each returns the magnitude of the terms it summed too, from which the rounding allowance grows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import Seed
from lipopt.domain import (
    Box,
    Disjunction,
    Domain,
    Intersection,
    L1Ball,
    L2Ball,
    LinfBall,
    Polytope,
    ball_part,
)
from lipopt.network import as_dense, row_norms
from lipopt.norms import OutputNorm

FloatArray = NDArray[np.float64]

#: outward widening of every linear bound, relative to the magnitude of the terms it sums
ROUNDING = 1e-12
#: and relative to the bound itself, ``OUTWARD (1 + |bound|)`` (as the interval pass does)
OUTWARD = 1e-10


def _outward(bound: FloatArray, magnitude: FloatArray) -> FloatArray:
    """An upper bound pushed up by the rounding allowance."""
    return bound + ROUNDING * magnitude + OUTWARD * (1.0 + np.abs(bound))


# ---------------------------------------------------------------------------- concretisation
def _box_range(coeffs: FloatArray, domain: Domain) -> tuple[FloatArray, FloatArray, FloatArray]:
    lower, upper = domain.bounding_box()
    centre = (lower + upper) / 2.0
    radius = (upper - lower) / 2.0
    mid = coeffs @ centre
    spread = abs(coeffs) @ radius  # abs() keeps sparse coefficients sparse
    return mid - spread, mid + spread, abs(coeffs) @ np.abs(centre) + spread


def _ball_range(coeffs: FloatArray, domain: Domain) -> tuple[FloatArray, FloatArray, FloatArray]:
    """An ℓ1 or ℓ2 ball: ``Λ c ± ρ`` times the dual norm of each row."""
    assert isinstance(domain, (L1Ball, L2Ball))
    mid = coeffs @ domain.center
    spread = domain.radius * row_norms(coeffs, domain.dual_order)
    return mid - spread, mid + spread, abs(coeffs) @ np.abs(domain.center) + spread


def _cut_range(coeffs: FloatArray, domain: Domain) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A ball ∩ a polytope: the ball's range met with the range over the set's bounding box
    (both hold on the set; neither is exact). A polytope alone: its bounding box's."""
    low, high, size = _box_range(coeffs, domain)
    ball = ball_part(domain)
    if ball is None:
        return low, high, size
    ball_low, ball_high, ball_size = _ball_range(coeffs, ball)
    return np.maximum(low, ball_low), np.minimum(high, ball_high), np.maximum(size, ball_size)


#: range of ``Λ x`` (row by row) over each kind of domain (exact on boxes and balls), and the
#: magnitude of its terms
RangeRule = Callable[[FloatArray, Domain], tuple[FloatArray, FloatArray, FloatArray]]
DOMAIN_RANGES: dict[type, RangeRule] = {
    Box: _box_range,
    LinfBall: _box_range,
    L1Ball: _ball_range,
    L2Ball: _ball_range,
    Polytope: _cut_range,
    Intersection: _cut_range,
    Disjunction: _box_range,  # a union: its bounding box holds it
}


def _seed_range(coeffs: FloatArray, seed: Seed) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Exact range of ``Λ w`` over the seed set: ``{c}`` or the dual ball of an output norm."""
    coeffs = as_dense(coeffs)  # rows x outputs: small
    if isinstance(seed, OutputNorm):
        lo, hi = seed.seed_bounds(coeffs.T)
        return lo, hi, np.maximum(np.abs(lo), np.abs(hi))
    vec = np.asarray(seed, dtype=np.float64)
    value = coeffs @ vec
    return value, value.copy(), np.abs(coeffs) @ np.abs(vec)


def intersect(
    first: tuple[FloatArray, FloatArray], second: tuple[FloatArray, FloatArray]
) -> tuple[FloatArray, FloatArray]:
    """Elementwise intersection of two sound ranges (still sound)."""
    lo = np.maximum(first[0], second[0])
    hi = np.minimum(first[1], second[1])
    return lo, np.maximum(hi, lo)  # guard against crossing by rounding


__all__ = ["DOMAIN_RANGES", "OUTWARD", "ROUNDING", "RangeRule", "intersect"]
