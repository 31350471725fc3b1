"""Small linear programs handed to HiGHS as matrices, without SciPy's ``linprog``.

    min c·x  s.t.  A x <= b,  lower <= x <= upper

:func:`solve_lp` passes the problem to ``highspy`` as one ``HighsLp`` (``A`` as the CSR or CSC
arrays of a SciPy sparse matrix), silenced and within a time limit, and reads back the model
status, the point, the optimum and the rows' duals. ``linprog(method="highs")`` does the same
through SciPy's wrapper, whose option checking and conversions took about as long as HiGHS
itself on the margin LPs of a branch and bound (and importing ``scipy.optimize`` ~0.3 s of a
small query's start-up).

The duals keep SciPy's convention (``linprog(...).ineqlin.marginals``, which is HiGHS's
``row_dual`` as it stands): ``y_i = ∂ optimum / ∂ b_i``, so ``y_i <= 0`` on a row at its bound
of a minimisation and ``y_i = 0`` on a slack row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt.lazy import lazy_module

highspy = lazy_module("highspy")

FloatArray = NDArray[np.float64]


class LpStatus(str, Enum):
    """How the LP ended: solved, proven infeasible, or anything else (a limit, an error)."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    OTHER = "other"


@dataclass(frozen=True)
class LpAnswer:
    """An LP's outcome; ``x``, ``objective`` and ``row_duals`` only where ``OPTIMAL``
    (``row_duals[i] = ∂ optimum / ∂ b_i <= 0``, SciPy's ``ineqlin.marginals``)."""

    status: LpStatus
    x: FloatArray | None = None
    objective: float = float("nan")
    row_duals: FloatArray | None = None


def _model(cost: FloatArray, matrix: Any, rhs: FloatArray, bounds: tuple[Any, Any]) -> Any:
    """The ``HighsLp`` of ``min cost·x, -inf <= matrix x <= rhs, bounds[0] <= x <= bounds[1]``
    (HiGHS's infinity is ``inf``; ``matrix`` a SciPy sparse matrix, CSR passed row-wise, any
    other format column-wise). HiGHS's defaults are SciPy's settings (dual simplex, presolve)."""
    lp = highspy.HighsLp()
    rows, cols = matrix.shape
    lp.num_col_, lp.num_row_ = cols, rows
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = (np.full(cols, b, dtype=np.float64) for b in bounds)
    lp.row_lower_ = np.full(rows, -np.inf)
    lp.row_upper_ = np.asarray(rhs, dtype=np.float64)
    if matrix.format != "csr":
        matrix = matrix.tocsc()
    formats = highspy.MatrixFormat
    lp.a_matrix_.format_ = formats.kRowwise if matrix.format == "csr" else formats.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = cols, rows
    lp.a_matrix_.start_, lp.a_matrix_.index_ = matrix.indptr, matrix.indices
    lp.a_matrix_.value_ = matrix.data
    return lp


def solve_lp(
    cost: FloatArray,
    matrix: Any,
    rhs: FloatArray,
    bounds: tuple[Any, Any],
    time_limit: float | None = None,
) -> LpAnswer:
    """``min cost·x`` s.t. ``matrix x <= rhs`` and ``bounds[0] <= x <= bounds[1]`` (arrays or
    scalars, ``±inf`` for none) by HiGHS, silently, within ``time_limit`` seconds (None: no
    limit); :class:`LpAnswer`."""
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    if time_limit is not None:
        highs.setOptionValue("time_limit", float(time_limit))
    if highs.passModel(_model(cost, matrix, rhs, bounds)) == highspy.HighsStatus.kError:
        return LpAnswer(LpStatus.OTHER)
    highs.run()
    status = highs.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return LpAnswer(LpStatus.INFEASIBLE)
    if status != highspy.HighsModelStatus.kOptimal:
        return LpAnswer(LpStatus.OTHER)
    solution = highs.getSolution()
    objective = float(highs.getInfo().objective_function_value)
    x, duals = np.asarray(solution.col_value), np.asarray(solution.row_dual)
    return LpAnswer(LpStatus.OPTIMAL, x, objective, duals)
