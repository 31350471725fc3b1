"""The exact range of an affine map over a polytope (or an ℓ1 ball ∩ a polytope) by LP, with
a bound that holds whatever the LP solver returned.

For ``max w·x`` over ``{x : A x <= b, l <= x <= u}`` weak duality gives, for **every** ``y >= 0``,

    w·x = y·(A x) + (w - Aᵀy)·x <= y·b + Σ_j max(r_j l_j, r_j u_j),    r = w - Aᵀy,

so the solver's row duals (clipped to ``y >= 0``) give a certified upper bound that equals the
LP's optimum up to rounding when the duals are optimal (and is merely looser otherwise). The
minimum is ``-max(-w·x)``. An ℓ1 ball enters as rows over the lifted ``(x, s)``:
``±(x_j - c_j) <= s_j``, ``Σ s_j <= ρ``, ``0 <= s_j <= ρ``. The ℓ2 ball does not enter the LP: its
own range (centre ± ρ‖w‖₂) is met with the polytope's. The result is widened outward by
1e-9 relative, for the floating-point error of the numpy sums.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix

from lipopt.domain import Domain, FloatArray, L1Ball, L2Ball, ball_part, cut_rows

#: relative outward widening of each LP bound (rounding in the dual bound's sums)
ROUNDING = 1e-9

_CACHE: weakref.WeakKeyDictionary[Any, dict[Any, tuple[FloatArray, FloatArray]]] = (
    weakref.WeakKeyDictionary()
)


def _lifted(domain: Domain) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(A, b, lower, upper)`` over the LP's columns: ``x``, then ``s`` for an ℓ1 ball."""
    lower, upper = domain.bounding_box()
    rows = cut_rows(domain)
    d = lower.size
    a, b = rows if rows is not None else (np.zeros((0, d)), np.zeros(0))
    ball = ball_part(domain)
    if not isinstance(ball, L1Ball):
        return a, b, lower, upper
    eye = np.eye(d)
    blocks = [
        np.hstack([a, np.zeros((a.shape[0], d))]),
        np.hstack([eye, -eye]),  # x - s <= c
        np.hstack([-eye, -eye]),  # -x - s <= -c
        np.concatenate([np.zeros(d), np.ones(d)])[None, :],  # Σ s <= ρ
    ]
    rhs = np.concatenate([b, ball.center, -ball.center, [ball.radius]])
    lows = np.concatenate([lower, np.zeros(d)])
    highs = np.concatenate([upper, np.full(d, ball.radius)])
    return np.vstack(blocks), rhs, lows, highs


class _CutLP:
    """One HiGHS LP over the set, re-solved for each objective."""

    def __init__(self, domain: Domain) -> None:
        import highspy

        self.a, self.b, self.lower, self.upper = _lifted(domain)
        self.n = self.lower.size
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.addVars(self.n, self.lower, self.upper)
        sparse = csr_matrix(self.a)
        m = self.a.shape[0]
        self.highs.addRows(
            m, np.full(m, -highspy.kHighsInf), self.b, sparse.nnz,
            sparse.indptr, sparse.indices, sparse.data,
        )  # fmt: skip

    def safe_max(self, w: FloatArray) -> float:
        """A certified upper bound of ``max w·x`` over the set (module docstring)."""
        full = np.zeros(self.n)
        full[: w.size] = w
        self.highs.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), -full)
        self.highs.run()
        duals = np.asarray(self.highs.getSolution().row_dual, dtype=np.float64)
        y = np.maximum(-duals, 0.0) if duals.size == self.a.shape[0] else np.zeros(self.a.shape[0])
        reduced = full - self.a.T @ y
        bound = float(y @ self.b + np.sum(np.maximum(reduced * self.lower, reduced * self.upper)))
        return bound + ROUNDING * (1.0 + abs(bound) + float(np.abs(y) @ np.abs(self.b)))


def affine_range(matrix: Any, bias: FloatArray, domain: Domain) -> tuple[FloatArray, FloatArray]:
    """Certified ``[min, max]`` of ``W x + b`` over a polytope or a ball ∩ a polytope: 2 LPs per
    row (computed once per domain and matrix)."""
    dense = matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)
    cache = _CACHE.setdefault(domain, {})
    key = (dense.shape, dense.tobytes(), np.asarray(bias, dtype=np.float64).tobytes())
    if key in cache:
        return cache[key]
    lp = _CutLP(domain)
    high = np.array([lp.safe_max(row) for row in dense]) + bias
    low = -np.array([lp.safe_max(-row) for row in dense]) + bias
    ball = ball_part(domain)
    if isinstance(ball, L2Ball):  # its own exact range, met with the polytope's
        mid = dense @ ball.center + bias
        spread = ball.radius * np.linalg.norm(dense, axis=1)
        low, high = np.maximum(low, mid - spread), np.minimum(high, mid + spread)
    cache[key] = (low, high)
    return low, high
