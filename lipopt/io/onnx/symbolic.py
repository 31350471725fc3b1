"""Input-dependent tensors as pending affine maps: ``value = reshape(h @ linear, shape) + offset``.

``h`` is the flat output of the layers built so far (the network input, or the last
activation's output). Affine ops only change ``linear`` and ``offset``; an activation (a ReLU, or
the per-neuron two-piece ``h = α z + (1 - α) relu(z)`` of :mod:`lipopt.activation`) closes the
map into layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any, Union

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.network import Activation, Affine, Layer, ReLU, is_sparse

Array = NDArray[Any]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Symbolic:
    """A tensor that depends on the network input: ``reshape(h @ linear, shape) + offset``.

    ``h`` (length ``width``) is the output of ``prefix`` (the input itself when ``prefix`` is
    empty; otherwise ``prefix`` ends with an activation layer). ``linear`` has shape
    ``(width, *shape)``, or is a scipy sparse matrix of shape ``(width, prod(shape))`` (the
    same map flattened in C order: what convolutions and pooling make, kept sparse); ``None``
    stands for the identity
    (``h`` reshaped to ``shape``), which saves forming large identity matrices. ``batched``
    records that axis 0 is still the (size 1) batch axis.
    """

    prefix: tuple[Layer, ...]
    width: int
    linear: FloatArray | sparse.csr_array | None
    offset: FloatArray
    batched: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.offset.shape)

    @property
    def is_sparse(self) -> bool:
        return sparse.issparse(self.linear)

    def full_linear(self) -> FloatArray:
        """``linear`` as a dense array of shape ``(width, *shape)`` (the identity or a sparse
        map made explicit: ops without a sparse rule read this)."""
        if self.linear is None:
            return np.eye(self.width).reshape((self.width, *self.shape))
        if is_sparse(self.linear):
            return self.linear.toarray().reshape((self.width, *self.shape))
        return self.linear

    def flat_linear(self) -> FloatArray | sparse.csr_array:
        """``linear`` as a ``(width, prod(shape))`` matrix: sparse for the identity and for a
        sparse map, else dense."""
        if self.linear is None:
            return sparse.identity(self.width, format="csr")
        if sparse.issparse(self.linear):
            return self.linear
        return self.linear.reshape(self.width, -1)

    def with_map(
        self,
        linear: FloatArray | sparse.csr_array | None,
        offset: FloatArray,
        batched: bool,
    ) -> Symbolic:
        """The same ``h`` with another map: ``reshape(h @ linear, shape) + offset``."""
        return Symbolic(self.prefix, self.width, linear, np.asarray(offset, float), batched)

    def reshaped(self, shape: Sequence[int], batched: bool) -> Symbolic:
        """The same values in C order, viewed with another shape (a pure reshape)."""
        shape = tuple(int(d) for d in shape)
        linear = self.linear
        if linear is not None and not sparse.issparse(linear):
            linear = linear.reshape((self.width, *shape))
        return self.with_map(linear, self.offset.reshape(shape), batched)

    def select(self, index: NDArray[np.integer], batched: bool) -> Symbolic:
        """The entries at the flat (C order) positions ``index``, shaped like ``index``: a
        selection (slices, gathers, reorders), linear: ``L[:, index] h + c[index]``."""
        flat = np.asarray(index, dtype=np.int64).reshape(-1)
        offset = self.offset.reshape(-1)[flat].reshape(np.shape(index))
        picked = self.flat_linear()[:, flat]
        if sparse.issparse(picked):
            return self.with_map(sparse.csr_array(picked), offset, batched)
        return self.with_map(np.asarray(picked).reshape((self.width, *offset.shape)), offset,
                             batched)  # fmt: skip

    def affine(self) -> Affine:
        """The pending affine map ``h -> vec(value)`` as a layer."""
        if self.linear is None or sparse.issparse(self.linear):
            return Affine(sparse.csr_array(self.flat_linear().T), self.offset.reshape(-1))
        weight = self.full_linear().reshape(self.width, -1).T
        return Affine(weight, self.offset.reshape(-1))

    def relu(self) -> Symbolic:
        """``max(value, 0)``: close the pending affine map with an Affine and a ReLU layer."""
        is_identity = self.linear is None and not np.any(self.offset)
        if is_identity and self.prefix and isinstance(self.prefix[-1], ReLU):
            return self  # relu(relu(z)) = relu(z)
        return self.activate(None)

    def activate(self, alpha: FloatArray | None) -> Symbolic:
        """``α z + (1 - α) relu(z)`` entry by entry for the slopes ``alpha`` (one per entry, C
        order; ``None`` or all zero: a :class:`ReLU` layer): close the pending affine map with
        an Affine and the activation layer."""
        act: Layer = ReLU() if alpha is None or not np.any(alpha) else Activation(alpha)
        prefix = (*self.prefix, self.affine(), act)
        width = prod(self.shape)
        return Symbolic(prefix, width, None, np.zeros(self.shape), self.batched)


def through_activation(
    x: Symbolic,
    pre: tuple[FloatArray, FloatArray],
    alpha: FloatArray | None,
    post: tuple[FloatArray, FloatArray],
    shape: tuple[int, ...],
) -> Symbolic:
    """``value = P act(A vec(x) + a) + p``, reshaped to ``shape``, for ``pre = (A, a)`` (A of
    shape (k, n), n the entries of x), ``act`` the per-neuron ``α z + (1 - α) relu(z)`` with
    ``alpha`` (k slopes; ``None`` or all zero: ReLU) and ``post = (P, p)`` (P of shape
    (prod(shape), k)): one activation layer of k neurons. Every piecewise-linear op here is one
    or more of these. ``A`` and ``P`` may be scipy sparse matrices, and the maps then stay
    sparse."""
    weights, shift = pre
    product = x.flat_linear() @ weights.T  # sparse where both are
    linear = sparse.csr_array(product) if sparse.issparse(product) else np.asarray(product)
    neurons = x.with_map(linear, weights @ x.offset.reshape(-1) + shift, batched=False)
    hidden = neurons.relu() if alpha is None or not np.any(alpha) else neurons.activate(alpha)
    mix, offset = post
    count = int(mix.shape[1])
    if sparse.issparse(mix):
        mixed: FloatArray | sparse.csr_array = sparse.csr_array(mix.T)
    else:
        mixed = mix.T.reshape((count, *shape))
    return hidden.with_map(mixed, np.asarray(offset, float).reshape(shape), x.batched)


def through_relus(
    x: Symbolic,
    pre: tuple[FloatArray, FloatArray],
    post: tuple[FloatArray, FloatArray],
    shape: tuple[int, ...],
) -> Symbolic:
    """:func:`through_activation` with ReLU neurons only: ``P relu(A vec(x) + a) + p``."""
    return through_activation(x, pre, None, post, shape)


Value = Union[Array, Symbolic]


def floats(array: Array) -> FloatArray:
    """``array`` as float64."""
    return np.asarray(array, dtype=np.float64)


def shape_of(value: Value) -> tuple[int, ...]:
    """The shape of a constant or of an input-dependent tensor (batch axis of size 1)."""
    return value.shape if isinstance(value, Symbolic) else np.shape(value)


def is_flat(shape: Sequence[int]) -> bool:
    """A flat vector: ``(n,)`` or ``(1, ..., 1, n)``."""
    return len(shape) >= 1 and all(d == 1 for d in shape[:-1])
