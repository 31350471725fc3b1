"""Small helpers for vectors whose entries are numbers or Pyomo linear expressions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.lazy import PYOMO, lazy_module

pe = lazy_module(PYOMO)

Term = Union[float, Any]  # a Python float or a Pyomo expression / variable


def is_constant(term: Term) -> bool:
    return isinstance(term, (int, float, np.floating))


def linear_map(matrix: Any, vector: Sequence[Term], offset: NDArray[np.float64]) -> list[Term]:
    """``matrix @ vector + offset`` where entries of ``vector`` are numbers or expressions;
    ``matrix`` a numpy array or a scipy sparse matrix (read row by row, nonzeros only).

    Constant entries are folded numerically; zero weights are skipped, so a row that touches
    only constants stays a plain float.
    """
    const_mask = np.array([is_constant(v) for v in vector], dtype=bool)
    const_values = np.array([float(v) if c else 0.0 for v, c in zip(vector, const_mask)])
    folded = matrix @ const_values + offset
    out: list[Term] = []
    for row, (columns, weights) in enumerate(_rows(matrix, ~const_mask)):
        used = [(float(w), vector[j]) for w, j in zip(weights, columns) if w != 0.0]
        if not used:
            out.append(float(folded[row]))
        else:
            out.append(pe.quicksum(w * v for w, v in used) + float(folded[row]))
    return out


def _rows(matrix: Any, moving: NDArray[np.bool_]) -> Any:
    """Per row, the columns among ``moving`` and their weights (all of them where dense; the
    stored nonzeros where sparse)."""
    if not sparse.issparse(matrix):
        columns = np.flatnonzero(moving)
        for row in range(matrix.shape[0]):
            yield columns, matrix[row, columns]
        return
    rows = sparse.csr_array(matrix)
    for row in range(rows.shape[0]):
        start, stop = rows.indptr[row], rows.indptr[row + 1]
        columns = rows.indices[start:stop]
        keep = moving[columns]
        yield columns[keep], rows.data[start:stop][keep]
