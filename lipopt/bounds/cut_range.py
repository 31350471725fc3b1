"""The range of an affine map over a polytope (or an ℓ1 or ℓ2 ball ∩ a polytope) by LP, with
a bound that holds whatever the LP solver returned.

Each ``min w·x`` and ``max w·x`` is an LP over the domain (:class:`~lipopt.bounds.domain_lp.
DomainLP`: the box as bounds, an ℓ1 ball lifted, the polytope's rows), and its bound comes from
the solver's duals by weak duality, valid for any multipliers, so exact up to rounding when the
duals are optimal and merely looser otherwise. The ℓ2 ball does not enter the LP: its own range
(centre ± ρ‖w‖₂) is met with the polytope's.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from lipopt.bounds.domain_lp import ROUNDING, DomainLP
from lipopt.domain import Domain, FloatArray, L2Ball, ball_part
from lipopt.network import as_dense

_CACHE: weakref.WeakKeyDictionary[Any, dict[Any, tuple[FloatArray, FloatArray]]] = (
    weakref.WeakKeyDictionary()
)


def _safe_ranges(dense: FloatArray, domain: Domain) -> tuple[FloatArray, FloatArray]:
    """Safe ``[min, max]`` of each ``w·x`` (rows of ``dense``) over the domain's LP; a row
    whose LP gives no duals keeps the bounding box's range, rounded outward by the LP bounds'
    own margin (``ROUNDING``) so that it is sound in floating point too."""
    lp = DomainLP(domain)
    lower, upper = domain.bounding_box()
    centre, radius = (upper + lower) / 2.0, (upper - lower) / 2.0
    slack = ROUNDING * (1.0 + np.abs(dense) @ (np.abs(centre) + radius))
    low = dense @ centre - np.abs(dense) @ radius - slack
    high = dense @ centre + np.abs(dense) @ radius + slack
    for i, row in enumerate(dense):
        cost = np.zeros(lp.n_cols)
        for sign, out in ((1.0, low), (-1.0, high)):
            cost[lp.inputs] = sign * row
            found = lp.minimum(cost, np.inf)
            if found is not None:
                out[i] = max(out[i], found) if sign > 0 else min(out[i], -found)
    return low, high


def affine_range(matrix: Any, bias: FloatArray, domain: Domain) -> tuple[FloatArray, FloatArray]:
    """Certified ``[min, max]`` of ``W x + b`` over a polytope or a ball ∩ a polytope: 2 LPs per
    row (computed once per domain and matrix)."""
    dense = as_dense(matrix)
    cache = _CACHE.setdefault(domain, {})
    key = (dense.shape, dense.tobytes(), np.asarray(bias, dtype=np.float64).tobytes())
    if key in cache:
        return cache[key]
    low, high = _safe_ranges(dense, domain)
    low, high = low + bias, high + bias
    ball = ball_part(domain)
    if isinstance(ball, L2Ball):  # its own exact range, met with the polytope's
        mid = dense @ ball.center + bias
        spread = ball.radius * np.linalg.norm(dense, axis=1)
        low, high = np.maximum(low, mid - spread), np.minimum(high, mid + spread)
    cache[key] = (low, high)
    return low, high
