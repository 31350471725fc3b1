"""The two kernels of the Jacobian-norm back-substitution (:mod:`lipopt.bounds.jacobian`):
objective rows on ``s_0`` pushed through the switch lines of every hidden layer to the seed.

At hidden layer ``k`` a row's coefficient ``c_j`` on ``s_{k,j}`` is replaced by one on ``y_{k,j}``
and a constant (the module docstring of :mod:`lipopt.bounds.jacobian` proves each step):

* a stable neuron is exact: ``s = f y`` with ``f = 1`` (active), ``f = α`` (inactive; ``α = 0`` for
  a ReLU), so ``c_j`` becomes ``f c_j`` on ``y`` and no constant;
* an unstable neuron: ``s = α y + (1 - α) t`` with ``t`` a ReLU switch; the part ``e = (1 - α) c_j``
  on ``t`` takes the upper line ``U = t_up y + max(-t_up l', (1 - t_up) u')`` where ``e >= 0`` and
  the lower line ``L = t_low y + min((1 - t_low) l', -t_low u')`` where ``e < 0``.

Then ``y_k = W_{k+1}^T s_{k+1}`` is substituted exactly (``coeffs @ W_{k+1}^T``). Both kernels
compute these same sums; they differ only in which columns they carry:

* :func:`every_column` carries every neuron of every layer;
* :func:`kept_columns` drops the neurons whose ``f`` is 0 (ReLUs stable inactive): their
  coefficient on ``y`` is 0, so they add nothing to the layer below and no constant. It keeps the
  stable neurons first and the unstable ones after, applies the lines to the unstable block only,
  and multiplies by the weights' rows and columns of the kept neurons alone. Gathering those
  weights costs about one pass over each matrix per call, so it pays for many rows at once (the
  sign-group bound's 2048 on 64 inputs), not for one (:data:`KEPT_COLUMNS_MIN_ROWS`).

Each returns the coefficients on ``w`` (rows x outputs) and adds the constants and the
magnitudes of their terms (for the outward rounding) into its ``sums``;
:func:`back_substitute_rows` picks the walk and returns all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.jacobian_slopes import SlopeProblem

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
#: per hidden layer, the lines' ``(t_up, t_low)``: one row (every objective row's) or one per row
Switches = Sequence[tuple[FloatArray, FloatArray]]
#: coefficients on ``w``, the constants, the magnitudes of the constants' terms
Substituted = tuple[FloatArray, FloatArray, FloatArray]

#: the fewest objective rows for which :func:`back_substitute_rows` takes
#: :func:`kept_columns` (benchmarks/results/back_substitution.md: on sign-group problems of the
#: digits MLP and the bundled CNN the kept walk took 1.06× and 1.03× the time at 256 rows, 0.93×
#: and 0.78× at 512; with fewer rows the gathered weights cost more than the columns they save)
KEPT_COLUMNS_MIN_ROWS = 512


def _row_dot(rows: FloatArray, weights: FloatArray) -> FloatArray:
    """``Σ_j rows[i, j] weights[i, j]`` per row, ``weights`` one row for all or one per row."""
    if weights.shape[0] == 1:
        return np.asarray(rows @ weights[0])
    return np.einsum("ij,ij->i", rows, weights)


def _line_shifts(
    low: FloatArray, up: FloatArray, t_up: FloatArray, t_low: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The constants of the upper and lower switch lines over ``[l', u']``."""
    return np.maximum(-t_up * low, (1.0 - t_up) * up), np.minimum((1.0 - t_low) * low, -t_low * up)


def _relax(
    on_t: FloatArray, lines: tuple[FloatArray, FloatArray, FloatArray, FloatArray], sums: list[Any]
) -> FloatArray:
    """Coefficients ``e`` on the switches ``t`` replaced by theirs on ``y`` (``U`` where ``e >= 0``,
    ``L`` where ``e < 0``); the constants and their magnitudes are added to ``sums``. ``on_t``
    is overwritten."""
    t_up, t_low, up_shift, low_shift = lines
    pos = np.maximum(on_t, 0.0)
    neg = np.subtract(on_t, pos, out=on_t)
    sums[0] = sums[0] + _row_dot(pos, up_shift) + _row_dot(neg, low_shift)
    sums[1] = sums[1] + _row_dot(pos, np.abs(up_shift)) - _row_dot(neg, np.abs(low_shift))
    relaxed = np.multiply(pos, t_up, out=pos)
    relaxed += np.multiply(neg, t_low, out=neg)
    return relaxed


def every_column(
    problem: SlopeProblem, switch: Switches, coeffs: FloatArray, sums: list[Any]
) -> FloatArray:
    """The back-substitution on every neuron's column: ``coeffs`` on ``g`` in, on ``w`` out;
    ``sums`` (``[shift, magnitude]``) gain the constants."""
    coeffs = np.asarray(coeffs @ problem.matrices[0].T)
    for k, (t_up, t_low) in enumerate(switch):
        unstable, active = problem.unstable[k], problem.active[k]
        up_shift, low_shift = _line_shifts(problem.low[k], problem.up[k], t_up, t_low)
        lines = (unstable * t_up, unstable * t_low, unstable * up_shift, unstable * low_shift)
        alpha = problem.layer_slopes(k)
        if alpha is None:  # ReLU: s = a y; stable columns: f y with f = active
            stable = coeffs * active
            relaxed = _relax(coeffs * unstable, lines, sums)
        else:  # s = α y + (1 - α) t; stable: f = 1 active, α inactive
            stable = coeffs * np.where(active > 0.0, 1.0, alpha)
            relaxed = _relax(coeffs * (unstable * (1.0 - alpha)), lines, sums)
        relaxed += stable
        coeffs = np.asarray(relaxed @ problem.matrices[k + 1].T)
    return coeffs


def _gathered(matrix: Any, rows: IntArray | None, cols: IntArray | None) -> Any:
    """``matrix[rows][:, cols]`` transposed (None: every row or column), dense or scipy sparse
    (rows first: a CSR matrix picks rows fast)."""
    if rows is not None and cols is not None and isinstance(matrix, np.ndarray):
        return matrix[np.ix_(rows, cols)].T
    picked = matrix if rows is None else matrix[rows]
    return (picked if cols is None else picked[:, cols]).T


def kept_columns(
    problem: SlopeProblem, switch: Switches, coeffs: FloatArray, sums: list[Any]
) -> FloatArray:
    """:func:`every_column`'s sums, carrying only the neurons whose coefficient on ``y`` can be
    nonzero: per layer the stable ones with ``f != 0``, then the unstable ones."""
    kept: IntArray | None = None  # the layer below's carried neurons, in their order
    for k, (t_up, t_low) in enumerate(switch):
        unstable = problem.unstable[k] > 0.0
        alpha = problem.layer_slopes(k)
        factor = problem.active[k] if alpha is None else np.where(problem.active[k] > 0, 1.0, alpha)
        stable, open_ = np.flatnonzero(~unstable & (factor != 0.0)), np.flatnonzero(unstable)
        order = np.concatenate([stable, open_])
        coeffs = np.asarray(coeffs @ _gathered(problem.matrices[k], order, kept))
        if alpha is not None and np.any(factor[stable] != 1.0):
            coeffs[:, : stable.size] *= factor[stable]
        if open_.size:
            low, up = problem.low[k][open_], problem.up[k][open_]
            t_up_open, t_low_open = t_up[:, open_], t_low[:, open_]
            lines = (t_up_open, t_low_open, *_line_shifts(low, up, t_up_open, t_low_open))
            block = coeffs[:, stable.size :]
            direct = None if alpha is None else block * alpha[open_]
            on_t = block if alpha is None else block * (1.0 - alpha[open_])
            block[...] = _relax(on_t, lines, sums)
            if direct is not None:
                block += direct
        kept = order
    return np.asarray(coeffs @ _gathered(problem.matrices[-1], None, kept))


def back_substitute_rows(
    problem: SlopeProblem,
    switch: Switches,
    coeffs: FloatArray,
    start: tuple[FloatArray, FloatArray],
) -> Substituted:
    """The objective rows ``coeffs`` on ``g`` with constants ``start`` (shift, magnitude) pushed
    to the seed: :func:`kept_columns` for at least :data:`KEPT_COLUMNS_MIN_ROWS` rows, else
    :func:`every_column`."""
    sums: list[Any] = [start[0], start[1]]
    kernel = kept_columns if coeffs.shape[0] >= KEPT_COLUMNS_MIN_ROWS else every_column
    out = kernel(problem, switch, coeffs, sums)
    return out, sums[0], sums[1]


__all__ = [
    "KEPT_COLUMNS_MIN_ROWS",
    "Switches",
    "back_substitute_rows",
    "every_column",
    "kept_columns",
]
