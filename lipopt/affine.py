"""Affine maps ``x -> W x + b`` as the network stores them: dense, or sparse (CSR) where a
convolution's matrix is mostly zeros; immutable."""

from __future__ import annotations

from typing import TypeGuard, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

FloatArray = NDArray[np.float64]


class NetworkError(ValueError):
    """A network that is malformed (shapes that do not chain, non-finite weights, ...)."""


def _frozen(array: ArrayLike) -> FloatArray:
    out = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


#: a weight matrix is stored sparse (CSR) when at most this share of its entries is nonzero and
#: it has at least ``SPARSE_MIN_ENTRIES`` entries: a convolution's matrix has ``k·k·C_in`` of
#: ``H·W·C_in`` entries per row nonzero (9 of 64 on the bundled 8×8 digits CNN's first layer,
#: 9 of 784 on a 28×28 image), and dense it would be ``d`` columns per row in the bounds and the
#: MIP. A representation choice only: every map is the same either way.
SPARSE_DENSITY = 0.25
SPARSE_MIN_ENTRIES = 1024


def _stored(weight: ArrayLike | sparse.sparray, dense_only: bool) -> FloatArray | sparse.csr_array:
    """The weight as it is kept: a frozen CSR array when sparse enough (and not
    ``dense_only``), else a frozen array."""
    if sparse.issparse(weight):
        matrix = sparse.csr_array(weight, dtype=np.float64, copy=True)
        matrix.eliminate_zeros()
        size = matrix.shape[0] * matrix.shape[1]
        if dense_only or size < SPARSE_MIN_ENTRIES or matrix.nnz > SPARSE_DENSITY * size:
            return _frozen(matrix.toarray())
    else:
        dense = np.asarray(weight, dtype=np.float64)
        if dense_only or dense.ndim != 2 or dense.size < SPARSE_MIN_ENTRIES:
            return _frozen(dense)
        if np.count_nonzero(dense) > SPARSE_DENSITY * dense.size:
            return _frozen(dense)
        matrix = sparse.csr_array(dense)
    matrix.eliminate_zeros()
    matrix.sort_indices()
    for part in (matrix.data, matrix.indices, matrix.indptr):
        part.setflags(write=False)
    return matrix


def is_sparse(matrix: object) -> TypeGuard[sparse.csr_array]:
    """:func:`scipy.sparse.issparse` that also tells mypy the matrix is sparse where it is."""
    return sparse.issparse(matrix)


def as_dense(matrix: object) -> NDArray[np.float64]:
    """A weight matrix (or a selection of its rows), sparse or not, as a dense array."""
    return matrix.toarray() if is_sparse(matrix) else np.asarray(matrix, dtype=np.float64)


def row_norms(matrix: FloatArray | sparse.sparray, order: float) -> FloatArray:
    """``||m_i||_order`` of each row of a dense or sparse matrix (order 1, 2 or inf)."""
    if not sparse.issparse(matrix):
        return np.linalg.norm(matrix, ord=order, axis=1)
    magnitude = abs(matrix)
    if order == np.inf:
        return np.asarray(magnitude.max(axis=1).toarray(), dtype=np.float64).reshape(-1)
    if order == 2:
        return np.sqrt(np.asarray(magnitude.multiply(magnitude).sum(axis=1))).reshape(-1)
    return np.asarray(magnitude.sum(axis=1), dtype=np.float64).reshape(-1)


class Affine:
    """The affine map ``x -> W x + b`` with ``W`` of shape (out, in) and ``b`` of shape (out,).

    ``matrix`` is ``W`` as stored: a numpy array, or a scipy CSR array where ``W`` is sparse
    (a convolution; :data:`SPARSE_DENSITY`). The bounds, the MIP and the forward pass read
    ``matrix``; ``weight`` is ``W`` as a dense array, made on first use, for the stages that
    need one. Immutable."""

    __slots__ = ("matrix", "bias", "_dense")
    matrix: FloatArray | sparse.csr_array
    bias: FloatArray
    _dense: FloatArray | None

    def __init__(
        self, weight: ArrayLike | sparse.sparray, bias: ArrayLike, *, dense_only: bool = False
    ) -> None:
        matrix = _stored(weight, dense_only)
        bias_array = _frozen(bias)
        if len(matrix.shape) != 2:
            raise NetworkError(f"affine weight must be a matrix, got shape {matrix.shape}")
        if bias_array.shape != (matrix.shape[0],):
            raise NetworkError(
                f"affine bias has shape {bias_array.shape}, expected ({matrix.shape[0]},) "
                f"for a weight of shape {matrix.shape}"
            )
        values = matrix.data if sparse.issparse(matrix) else matrix
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(bias_array))):
            raise NetworkError("affine layer has non-finite (NaN or inf) weights or biases")
        object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "bias", bias_array)
        object.__setattr__(self, "_dense", None if sparse.issparse(matrix) else matrix)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Affine is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Affine is immutable (cannot delete {name!r})")

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (_rebuilt, (self.matrix, self.bias, not self.is_sparse))

    @property
    def weight(self) -> FloatArray:
        """``W`` as a dense (frozen) array; for a sparse layer made on first use and kept."""
        dense = self._dense
        if dense is None:  # sparse: made once
            dense = _frozen(cast("sparse.csr_array", self.matrix).toarray())
            object.__setattr__(self, "_dense", dense)
        return dense

    @property
    def is_sparse(self) -> bool:
        return sparse.issparse(self.matrix)

    @property
    def in_features(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def nonzeros(self) -> int:
        """Nonzero entries of ``W`` (what the MIP's rows hold)."""
        if is_sparse(self.matrix):
            return int(self.matrix.nnz)
        return int(np.count_nonzero(self.matrix))

    def row_norms(self, order: float) -> FloatArray:
        """``||w_i||_order`` of each row of ``W`` (order 1, 2 or inf)."""
        return row_norms(self.matrix, order)

    def row_minima(self) -> FloatArray:
        """The least entry of each row of ``W`` (the implicit zeros of a sparse row count)."""
        if not self.is_sparse:
            return self.matrix.min(axis=1) if self.in_features else np.zeros(self.out_features)
        return np.asarray(self.matrix.min(axis=1).toarray(), dtype=np.float64).reshape(-1)

    def dense(self) -> Affine:
        """The same map with ``W`` stored dense (for comparisons)."""
        return self if not self.is_sparse else Affine(self.weight, self.bias, dense_only=True)

    def then(self, other: Affine) -> Affine:
        """Composition ``other ∘ self``: ``x -> W2 (W1 x + b1) + b2``."""
        product = other.matrix @ self.matrix
        return Affine(product, other.matrix @ self.bias + other.bias)

    def __repr__(self) -> str:
        kind = "sparse" if self.is_sparse else "dense"
        return f"Affine({self.out_features}x{self.in_features}, {kind})"


def _rebuilt(matrix: object, bias: FloatArray, dense_only: bool) -> Affine:
    """Unpickling: the layer as it was stored."""
    return Affine(matrix, bias, dense_only=dense_only)
