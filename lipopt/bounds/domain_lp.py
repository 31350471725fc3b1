"""An LP over an input domain with safe bounds from the solver's duals (Neumaier &
Shcherbina 2004): for ``min c·v`` s.t. ``r_lo <= A v <= r_hi``, ``v_lo <= v <= v_hi`` (all column
bounds finite here) and *any* row multipliers ``y`` (the solver's duals, with the sign each
finite side allows), ``c·v = y·(A v) + (c - A^T y)·v`` gives the valid bound

    c·v  >=  Σ_i min(y_i r_lo_i, y_i r_hi_i)  +  Σ_j min(d_j v_lo_j, d_j v_hi_j),   d = c - A^T y,

evaluated in numpy and widened by ``1e-9`` of the magnitude of its terms (plus
``1e-10 |bound|``). Any ``y`` gives a sound bound; good duals give a tight one. The OBBT of
:mod:`lipopt.bounds.lp` grows it by hidden layers; :mod:`lipopt.bounds.cut_range` takes the
first layer's range over a polytope from it.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from lipopt.domain import Domain, L1Ball, ball_part, cut_rows

FloatArray = NDArray[np.float64]

#: relative outward widening of every safe LP bound (floating-point error in its evaluation)
ROUNDING = 1e-9


class DomainLP:
    """An LP over the domain (its box as the bounds of the input columns ``inputs``, an ℓ1
    ball lifted with ``t >= ±(x - x0)``, ``Σ t <= ρ``, a polytope's rows ``A x <= b``), in
    HiGHS and in numpy, that grows by columns and rows; :meth:`minimum` gives a safe lower
    bound on ``min cost · v`` from the solver's duals (module docstring).

    numpy keeps the dense constraint matrix (the networks here have at most a few hundred
    neurons) to evaluate the safe bound.
    """

    def __init__(self, domain: Domain) -> None:
        import highspy  # the solver is needed only when LPs are asked for

        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("presolve", "off")  # keeps duals for every row
        self.matrix = np.zeros((0, 0))
        self.row_lo = np.zeros(0)
        self.row_hi = np.zeros(0)
        self.col_lo = np.zeros(0)
        self.col_hi = np.zeros(0)
        lower, upper = domain.bounding_box()
        self.inputs = self.add_columns(lower, upper)
        ball = ball_part(domain)
        if isinstance(ball, L1Ball):  # t_j >= |x_j - x0_j|,  Σ t_j <= ρ
            d = ball.dim
            dev = self.add_columns(np.zeros(d), np.full(d, ball.radius))
            eye = np.eye(d)
            self.add_rows(self.inputs, -eye, dev, eye, -ball.center, np.full(d, np.inf))
            self.add_rows(self.inputs, eye, dev, eye, ball.center, np.full(d, np.inf))
            total = np.zeros((1, self.n_cols))
            total[0, dev] = 1.0
            self._append(total, np.array([-np.inf]), np.array([ball.radius]))
        rows = cut_rows(domain)
        if rows is not None:  # a polytope's rows A x <= b
            cut = np.zeros((rows[0].shape[0], self.n_cols))
            cut[:, self.inputs] = rows[0]
            self._append(cut, np.full(cut.shape[0], -np.inf), rows[1])

    @property
    def n_cols(self) -> int:
        return int(self.col_lo.size)

    def add_columns(self, lower: FloatArray, upper: FloatArray) -> NDArray[np.intp]:
        n = lower.size
        start = self.n_cols
        self.highs.addVars(
            n, np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
        )
        self.matrix = np.hstack([self.matrix, np.zeros((self.matrix.shape[0], n))])
        self.col_lo = np.concatenate([self.col_lo, lower])
        self.col_hi = np.concatenate([self.col_hi, upper])
        return np.arange(start, start + n)

    def _append(self, rows: FloatArray, lower: FloatArray, upper: FloatArray) -> None:
        if rows.shape[0] == 0:
            return
        nz = rows != 0.0
        starts = np.concatenate([[0], np.cumsum(nz.sum(axis=1))[:-1]]).astype(np.int32)
        cols = np.nonzero(nz)[1].astype(np.int32)
        self.highs.addRows(
            rows.shape[0], lower, upper, int(nz.sum()), starts, cols, rows[nz].astype(np.float64)
        )
        self.matrix = np.vstack([self.matrix, rows])
        self.row_lo = np.concatenate([self.row_lo, lower])
        self.row_hi = np.concatenate([self.row_hi, upper])

    def add_rows(
        self,
        first_cols: NDArray[np.intp],
        first: FloatArray,
        second_cols: NDArray[np.intp],
        second: FloatArray,
        lower: FloatArray,
        upper: FloatArray,
    ) -> None:
        """Rows ``lower <= first · v[first_cols] + second · v[second_cols] <= upper``."""
        rows = np.zeros((first.shape[0], self.n_cols))
        rows[:, first_cols] += first
        rows[:, second_cols] += second
        self._append(rows, lower, upper)

    def minimum(self, cost: FloatArray, deadline: float) -> float | None:
        """A safe lower bound on ``min cost · v`` over the relaxation, or None (no time)."""
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return None
        self.highs.setOptionValue("time_limit", float(remaining))
        self.highs.changeColsCost(
            self.n_cols, np.arange(self.n_cols, dtype=np.int32), np.asarray(cost, dtype=np.float64)
        )
        self.highs.run()
        solution = self.highs.getSolution()
        if not solution.dual_valid:
            return None
        return self.safe_bound(cost, np.asarray(solution.row_dual, dtype=np.float64))

    def proven_infeasible(self, deadline: float | None) -> bool:
        """Whether the LP is shown to have no feasible point: HiGHS's dual ray ``y``, checked
        in numpy as a Farkas certificate, i.e. :meth:`safe_bound` of the zero cost with ``y``
        (or ``-y``) is positive; then ``0 = 0 · v >= that bound > 0`` for any feasible ``v``, a
        contradiction. False where the solver finds a point, stops at ``deadline`` or gives no
        ray that proves it."""
        import highspy

        if deadline is not None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            self.highs.setOptionValue("time_limit", float(remaining))
        self.highs.run()
        if self.highs.getModelStatus() != highspy.HighsModelStatus.kInfeasible:
            return False
        _, exists, ray = self.highs.getDualRay()  # type: ignore[attr-defined]  # not in the stubs
        if not exists:
            return False
        ray = np.asarray(ray, dtype=np.float64)
        zero = np.zeros(self.n_cols)
        return any(self.safe_bound(zero, y) > 0.0 for y in (ray, -ray))

    def safe_bound(self, cost: FloatArray, duals: FloatArray) -> float:
        """``Σ min(y r_lo, y r_hi) + Σ min(d v_lo, d v_hi)`` with ``d = c - A^T y`` (any y)."""
        y = np.where(np.isfinite(self.row_lo), np.maximum(duals, 0.0), 0.0) + np.where(
            np.isfinite(self.row_hi), np.minimum(duals, 0.0), 0.0
        )
        with np.errstate(invalid="ignore"):
            row_terms = np.where(y > 0, y * self.row_lo, np.where(y < 0, y * self.row_hi, 0.0))
        reduced = cost - self.matrix.T @ y
        col_terms = np.minimum(reduced * self.col_lo, reduced * self.col_hi)
        value = float(row_terms.sum() + col_terms.sum())
        size = float(np.abs(row_terms).sum() + np.abs(col_terms).sum())
        size += float(np.abs(self.matrix.T @ y).sum() * np.max(np.abs(self.col_hi), initial=1.0))
        return value - ROUNDING * (1.0 + size) - 1e-10 * abs(value)
