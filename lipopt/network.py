"""The network intermediate representation: an immutable stack of affine maps and activations.

A :class:`Network` in canonical form is ``Affine (Act Affine)*``:

    z_1 = W_1 x + b_1,  h_i = α_i z_i + (1 - α_i) relu(z_i),  z_{i+1} = W_{i+1} h_i + b_{i+1},
    f(x) = z_L,

with one slope ``α`` per hidden neuron (:mod:`lipopt.activation`): ``α = 0`` is ReLU (the layer
:class:`ReLU`), ``α = 1`` the identity, ``0 < α < 1`` leaky, ``α = -1`` the absolute value.
Everything downstream (bounds, the MIP, estimators) reads only this form; ``slopes`` gives
``α`` per hidden layer, and :meth:`Network.lowered` the same function with ReLUs only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt import activation
from lipopt.activation import Activation
from lipopt.affine import (
    SPARSE_DENSITY,
    SPARSE_MIN_ENTRIES,
    Affine,
    NetworkError,
    as_dense,
    is_sparse,
    row_norms,
)

__all__ = [
    "SPARSE_DENSITY",
    "SPARSE_MIN_ENTRIES",
    "Act",
    "Activation",
    "Affine",
    "Layer",
    "Network",
    "NetworkError",
    "ReLU",
    "as_dense",
    "is_sparse",
    "row_norms",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ReLU:
    """Elementwise ``max(0, x)`` (an :class:`Activation` with every ``α = 0``, width unstated)."""


Layer = Union[Affine, ReLU, Activation]
Act = (ReLU, Activation)
"""The activation layer types (for ``isinstance``)."""


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
            expected = Affine if index % 2 == 0 else Act
            if not isinstance(layer, expected):
                raise NetworkError(
                    "network is not in canonical form Affine (Activation Affine)*: "
                    f"layer {index} is {type(layer).__name__}, expected "
                    f"{'Affine' if index % 2 == 0 else 'ReLU or Activation'}"
                )
            before = layers[index - 1]
            if isinstance(layer, Activation) and isinstance(before, Affine):
                if layer.width != before.out_features:
                    raise NetworkError(
                        f"activation {index} has {layer.width} slopes for "
                        f"{before.out_features} neurons"
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

        Consecutive affine maps are composed, repeated ReLUs collapse (relu∘relu = relu), two
        other activations in a row get an identity map between them, a leading activation is
        rejected (it would act on the raw input) and a trailing one gets an identity affine map
        after it so that the output is ``Affine(act(...))``.
        """
        out: list[Layer] = []
        for layer in layers:
            if isinstance(layer, Affine):
                if out and isinstance(out[-1], Affine):
                    out[-1] = out[-1].then(layer)
                else:
                    out.append(layer)
            elif isinstance(layer, Act):
                if not out:
                    raise NetworkError(
                        "an activation applied directly to the input is not supported"
                    )
                if isinstance(out[-1], ReLU) and isinstance(layer, ReLU):
                    continue
                if isinstance(out[-1], Act):
                    width = out[-2].out_features  # type: ignore[union-attr]
                    out.append(Affine(np.eye(width), np.zeros(width)))
                out.append(layer)
            else:
                raise NetworkError(f"unknown layer type {type(layer).__name__}")
        if out and isinstance(out[-1], Act):
            width = out[-2].out_features  # type: ignore[union-attr]
            out.append(Affine(np.eye(width), np.zeros(width)))
        return cls(tuple(out))

    @classmethod
    def from_affines(
        cls, affines: Sequence[Affine], slopes: Sequence[ArrayLike] | None = None
    ) -> Network:
        """The network ``A_L ∘ act ∘ ... ∘ act ∘ A_1`` of affine maps with an activation between
        each two: ReLU, or per hidden layer the slopes ``α`` given (one per neuron)."""
        layers: list[Layer] = []
        for k, affine in enumerate(affines[:-1]):
            alpha = None if slopes is None else np.asarray(slopes[k], dtype=np.float64)
            act = ReLU() if alpha is None or not np.any(alpha) else Activation(alpha)
            layers += [affine, act]
        return cls((*layers, affines[-1]))

    @cached_property
    def slopes(self) -> tuple[FloatArray, ...]:
        """``α`` per hidden layer, one per neuron (zeros on a :class:`ReLU` layer)."""
        acts = self.layers[1::2]
        return tuple(
            act.alpha if isinstance(act, Activation) else _zeros(affine.out_features)
            for act, affine in zip(acts, self.affine_layers)
        )

    @cached_property
    def kinked_count(self) -> int:
        """Hidden neurons with a kink: every one but the identity neurons (``α = 1``)."""
        return int(sum(np.count_nonzero(alpha != 1.0) for alpha in self.slopes))

    @cached_property
    def is_relu(self) -> bool:
        """Every hidden neuron a ReLU (``α = 0``)."""
        return not any(np.any(alpha) for alpha in self.slopes)

    def lowered(self) -> Network:
        """The same function with ReLUs only (``h = relu(z) - α relu(-z)``; two neurons for each
        non-ReLU neuron): for the stages that read ReLU networks only."""
        if self.is_relu:
            return self
        affines = list(self.affine_layers)
        for k, alpha in enumerate(self.slopes):
            pick, combine = activation.lowered(alpha)
            affines[k] = affines[k].then(Affine(pick, np.zeros(pick.shape[0])))
            affines[k + 1] = Affine(combine, np.zeros(combine.shape[0])).then(affines[k + 1])
        return Network.from_affines(affines)

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

    def dense(self, max_entries: int | None = None) -> Network:
        """The same network with every weight matrix stored dense, or only those of at most
        ``max_entries`` entries (the same maps either way)."""

        def kept(layer: Affine) -> bool:
            shape = layer.matrix.shape
            return max_entries is not None and shape[0] * shape[1] > max_entries

        return Network(
            tuple(x.dense() if isinstance(x, Affine) and not kept(x) else x for x in self.layers)
        )

    def activate(self, layer: int, z: ArrayLike) -> FloatArray:
        """``h_k = α z + (1 - α) relu(z)`` of hidden layer ``layer`` (0-based)."""
        if not np.any(alpha := self.slopes[layer]):
            return np.maximum(z, 0.0)
        return activation.apply(alpha, z)

    def derivatives(self, layer: int, mask: ArrayLike) -> FloatArray:
        """``D = α + (1 - α) σ`` of hidden layer ``layer`` for a 0/1 pattern ``σ``."""
        if not np.any(alpha := self.slopes[layer]):
            return np.asarray(mask, dtype=np.float64)
        return activation.derivative(alpha, mask)

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
        for k, affine in enumerate(self.affine_layers[:-1]):
            z = h @ affine.matrix.T + affine.bias
            out.append(z)
            h = self.activate(k, z)
        return out

    def forward(self, x: ArrayLike) -> FloatArray:
        """``f(x)`` for one input (d,) -> (m,) or a batch (n, d) -> (n, m)."""
        batch, single = self._as_batch(x)
        h = batch
        for k, affine in enumerate(self.affine_layers[:-1]):
            h = self.activate(k, h @ affine.matrix.T + affine.bias)
        last = self.affine_layers[-1]
        y = h @ last.matrix.T + last.bias
        return y[0] if single else y

    def jacobian_from_pattern(self, pattern: Sequence[ArrayLike]) -> FloatArray:
        """Jacobian ``W_L D_{L-1} W_{L-1} ... D_1 W_1`` for a given 0/1 activation pattern
        (``D_k = α_k + (1 - α_k) σ_k``)."""
        affines = self.affine_layers
        if len(pattern) != len(affines) - 1:
            raise NetworkError(f"pattern has {len(pattern)} layers, expected {len(affines) - 1}")
        jac = affines[-1].weight
        for k in range(len(pattern) - 1, -1, -1):  # backward: m x n_k
            jac = (jac * self.derivatives(k, pattern[k])) @ affines[k].matrix
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
        ``D_k = diag(α_k + (1 - α_k) σ_k)``: ``masks[k]`` is (n, width_k), the result (n, d).
        ``count`` is n (needed only without hidden layers, where there are no masks; default 1)."""
        affines = self.affine_layers
        if count is None:
            count = masks[0].shape[0] if len(masks) else 1
        cvec = np.asarray(c, dtype=np.float64)
        y = np.broadcast_to(affines[-1].matrix.T @ cvec, (count, affines[-1].in_features))
        for k in range(len(masks) - 1, -1, -1):
            y = (y * self.derivatives(k, masks[k])) @ affines[k].matrix
        return np.array(y) if len(affines) == 1 else y


def _zeros(width: int) -> FloatArray:
    zeros = np.zeros(width)
    zeros.setflags(write=False)
    return zeros
