"""The network intermediate representation: an immutable stack of affine maps and ReLUs.

A :class:`Network` in canonical form is ``Affine (ReLU Affine)*``:

    z_1 = W_1 x + b_1,  h_i = relu(z_i),  z_{i+1} = W_{i+1} h_i + b_{i+1},  f(x) = z_L.

Everything downstream (bounds, the MIP, estimators) reads only this form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TypeGuard, Union, cast

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


@dataclass(frozen=True)
class ReLU:
    """Elementwise ``max(0, x)``."""


Layer = Union[Affine, ReLU]


@dataclass(frozen=True, eq=False)
class Network:
    """A feed-forward ReLU network in canonical form ``Affine (ReLU Affine)*``.

    Build one with :meth:`from_layers` (which merges consecutive affine maps) or directly
    from a tuple of layers already in canonical form.
    """

    layers: tuple[Layer, ...]

    def __post_init__(self) -> None:
        layers = tuple(self.layers)
        object.__setattr__(self, "layers", layers)
        if not layers:
            raise NetworkError("a network needs at least one affine layer")
        for index, layer in enumerate(layers):
            expected = Affine if index % 2 == 0 else ReLU
            if not isinstance(layer, expected):
                raise NetworkError(
                    "network is not in canonical form Affine (ReLU Affine)*: "
                    f"layer {index} is {type(layer).__name__}, expected {expected.__name__}"
                )
        if not isinstance(layers[-1], Affine):
            raise NetworkError("network must end with an affine layer")
        affines = self.affine_layers
        for first, second in zip(affines, affines[1:]):
            if first.out_features != second.in_features:
                raise NetworkError(
                    f"layer shapes do not chain: {first.matrix.shape} then {second.matrix.shape}"
                )

    @classmethod
    def from_layers(cls, layers: Sequence[Layer]) -> Network:
        """Canonicalise any sequence of Affine/ReLU layers.

        Consecutive affine maps are composed, repeated ReLUs collapse (relu∘relu = relu), a
        leading ReLU is rejected (it would act on the raw input) and a trailing ReLU gets an
        identity affine map after it so that the output is ``Affine(relu(...))``.
        """
        out: list[Layer] = []
        for layer in layers:
            if isinstance(layer, Affine):
                if out and isinstance(out[-1], Affine):
                    out[-1] = out[-1].then(layer)
                else:
                    out.append(layer)
            elif isinstance(layer, ReLU):
                if not out:
                    raise NetworkError("a ReLU applied directly to the input is not supported")
                if not isinstance(out[-1], ReLU):
                    out.append(layer)
            else:
                raise NetworkError(f"unknown layer type {type(layer).__name__}")
        if out and isinstance(out[-1], ReLU):
            width = out[-2].out_features  # type: ignore[union-attr]
            out.append(Affine(np.eye(width), np.zeros(width)))
        return cls(tuple(out))

    @classmethod
    def from_affines(cls, affines: Sequence[Affine]) -> Network:
        """The network ``A_L ∘ relu ∘ ... ∘ relu ∘ A_1`` of affine maps with a ReLU between
        each two."""
        layers: list[Layer] = []
        for affine in affines[:-1]:
            layers += [affine, ReLU()]
        return cls((*layers, affines[-1]))

    # ------------------------------------------------------------------ shape facts
    @cached_property
    def affine_layers(self) -> tuple[Affine, ...]:
        """The affine layers in order (cached: the layers are immutable, and the bound
        passes ask for them in their inner loops)."""
        return tuple(layer for layer in self.layers if isinstance(layer, Affine))

    @property
    def input_dim(self) -> int:
        return self.affine_layers[0].in_features

    @property
    def output_dim(self) -> int:
        return self.affine_layers[-1].out_features

    @property
    def hidden_widths(self) -> tuple[int, ...]:
        """Widths of the ReLU layers, first to last."""
        return tuple(a.out_features for a in self.affine_layers[:-1])

    @property
    def widths(self) -> tuple[int, ...]:
        """``[d, n_1, ..., n_{L-1}, m]`` as the paper writes architectures."""
        return (self.input_dim, *self.hidden_widths, self.output_dim)

    def __repr__(self) -> str:
        return f"Network(widths={list(self.widths)})"

    def dense(self) -> Network:
        """The same network with every weight matrix stored dense (for comparisons)."""
        return Network(tuple(x.dense() if isinstance(x, Affine) else x for x in self.layers))

    # ------------------------------------------------------------------ evaluation
    def _as_batch(self, x: ArrayLike) -> tuple[FloatArray, bool]:
        arr = np.asarray(x, dtype=np.float64)
        single = arr.ndim == 1
        batch = arr[None, :] if single else arr
        if batch.ndim != 2 or batch.shape[1] != self.input_dim:
            raise NetworkError(
                f"input has shape {arr.shape}, "
                f"expected ({self.input_dim},) or (n, {self.input_dim})"
            )
        return batch, single

    def pre_activations(self, x: ArrayLike) -> list[FloatArray]:
        """Pre-activations ``z_1 .. z_{L-1}`` of the hidden layers, each of shape (n, n_i)."""
        batch, _ = self._as_batch(x)
        out = []
        h = batch
        for affine in self.affine_layers[:-1]:
            z = h @ affine.matrix.T + affine.bias
            out.append(z)
            h = np.maximum(z, 0.0)
        return out

    def forward(self, x: ArrayLike) -> FloatArray:
        """``f(x)`` for one input (d,) -> (m,) or a batch (n, d) -> (n, m)."""
        batch, single = self._as_batch(x)
        h = batch
        for affine in self.affine_layers[:-1]:
            h = np.maximum(h @ affine.matrix.T + affine.bias, 0.0)
        last = self.affine_layers[-1]
        y = h @ last.matrix.T + last.bias
        return y[0] if single else y

    def jacobian_from_pattern(self, pattern: Sequence[ArrayLike]) -> FloatArray:
        """Jacobian ``W_L D_{L-1} W_{L-1} ... D_1 W_1`` for a given 0/1 activation pattern."""
        affines = self.affine_layers
        if len(pattern) != len(affines) - 1:
            raise NetworkError(f"pattern has {len(pattern)} layers, expected {len(affines) - 1}")
        jac = affines[-1].weight
        for mask, affine in zip(reversed(pattern), reversed(affines[:-1])):
            jac = (jac * np.asarray(mask, dtype=np.float64)) @ affine.matrix  # backward: m x n_k
        return np.array(jac)

    def activation_pattern(self, x: ArrayLike) -> list[FloatArray]:
        """0/1 pattern ``z > 0`` of one input (relu'(0) is taken as 0)."""
        batch, single = self._as_batch(x)
        if not single:
            raise NetworkError("activation_pattern takes one input of shape (d,)")
        return [(z[0] > 0).astype(np.float64) for z in self.pre_activations(batch)]

    def jacobian_at(self, x: ArrayLike) -> FloatArray:
        """Jacobian (m, d) of f at one input, with the convention relu'(0) = 0."""
        return self.jacobian_from_pattern(self.activation_pattern(x))

    def gradients(self, x: ArrayLike, c: ArrayLike) -> FloatArray:
        """Gradients of ``c^T f`` at a batch (n, d) -> (n, d), relu'(0) = 0 (vectorised)."""
        batch, single = self._as_batch(x)
        masks = [(z > 0).astype(np.float64) for z in self.pre_activations(batch)]
        y = self.pattern_gradients(masks, c, batch.shape[0])
        return y[0] if single else y

    def pattern_gradients(
        self, masks: Sequence[FloatArray], c: ArrayLike, count: int | None = None
    ) -> FloatArray:
        """``g(σ)^T = c^T W_L D_{L-1} ··· D_1 W_1`` for a batch of 0/1 patterns, each
        ``D_k = diag(σ_k)``: ``masks[k]`` is (n, width_k), the result (n, d). ``count`` is n
        (needed only without hidden layers, where there are no masks; default 1)."""
        affines = self.affine_layers
        if count is None:
            count = masks[0].shape[0] if len(masks) else 1
        cvec = np.asarray(c, dtype=np.float64)
        y = np.broadcast_to(affines[-1].matrix.T @ cvec, (count, affines[-1].in_features))
        for mask, affine in zip(reversed(masks), reversed(affines[:-1])):
            y = (y * mask) @ affine.matrix
        return np.array(y) if len(affines) == 1 else y
