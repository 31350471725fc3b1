"""Small helpers for vectors whose entries are numbers or Pyomo linear expressions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
from numpy.typing import NDArray

from lipopt.lazy import lazy_module

pe = lazy_module("pyomo.environ")

Term = Union[float, Any]  # a Python float or a Pyomo expression / variable


def is_constant(term: Term) -> bool:
    return isinstance(term, (int, float, np.floating))


def linear_map(
    matrix: NDArray[np.float64], vector: Sequence[Term], offset: NDArray[np.float64]
) -> list[Term]:
    """``matrix @ vector + offset`` where entries of ``vector`` are numbers or expressions.

    Constant entries are folded numerically; zero weights are skipped, so a row that touches
    only constants stays a plain float.
    """
    const_mask = np.array([is_constant(v) for v in vector], dtype=bool)
    const_values = np.array([float(v) if c else 0.0 for v, c in zip(vector, const_mask)])
    folded = matrix @ const_values + offset
    var_index = np.flatnonzero(~const_mask)
    out: list[Term] = []
    for row in range(matrix.shape[0]):
        coeffs = matrix[row, var_index]
        used = [(float(w), vector[j]) for w, j in zip(coeffs, var_index) if w != 0.0]
        if not used:
            out.append(float(folded[row]))
        else:
            out.append(pe.quicksum(w * v for w, v in used) + float(folded[row]))
    return out
