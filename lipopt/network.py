"""The network intermediate representation: an immutable stack of affine maps and ReLUs.

A :class:`Network` in canonical form is ``Affine (ReLU Affine)*``:

    z_1 = W_1 x + b_1,  h_i = relu(z_i),  z_{i+1} = W_{i+1} h_i + b_{i+1},  f(x) = z_L.

Everything downstream (bounds, the MIP, estimators) reads only this form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


class NetworkError(ValueError):
    """A network that is malformed (shapes that do not chain, non-finite weights, ...)."""


def _frozen(array: ArrayLike) -> FloatArray:
    out = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Affine:
    """The affine map ``x -> W x + b`` with ``W`` of shape (out, in) and ``b`` of shape (out,)."""

    weight: FloatArray
    bias: FloatArray

    def __post_init__(self) -> None:
        weight = _frozen(self.weight)
        bias = _frozen(self.bias)
        if weight.ndim != 2:
            raise NetworkError(f"affine weight must be a matrix, got shape {weight.shape}")
        if bias.shape != (weight.shape[0],):
            raise NetworkError(
                f"affine bias has shape {bias.shape}, expected ({weight.shape[0]},) "
                f"for a weight of shape {weight.shape}"
            )
        if not (np.all(np.isfinite(weight)) and np.all(np.isfinite(bias))):
            raise NetworkError("affine layer has non-finite (NaN or inf) weights or biases")
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "bias", bias)

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def then(self, other: Affine) -> Affine:
        """Composition ``other ∘ self``: ``x -> W2 (W1 x + b1) + b2``."""
        return Affine(other.weight @ self.weight, other.weight @ self.bias + other.bias)


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
                    f"layer shapes do not chain: {first.weight.shape} then {second.weight.shape}"
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
            z = h @ affine.weight.T + affine.bias
            out.append(z)
            h = np.maximum(z, 0.0)
        return out

    def forward(self, x: ArrayLike) -> FloatArray:
        """``f(x)`` for one input (d,) -> (m,) or a batch (n, d) -> (n, m)."""
        batch, single = self._as_batch(x)
        h = batch
        for affine in self.affine_layers[:-1]:
            h = np.maximum(h @ affine.weight.T + affine.bias, 0.0)
        last = self.affine_layers[-1]
        y = h @ last.weight.T + last.bias
        return y[0] if single else y

    def jacobian_from_pattern(self, pattern: Sequence[ArrayLike]) -> FloatArray:
        """Jacobian ``W_L D_{L-1} W_{L-1} ... D_1 W_1`` for a given 0/1 activation pattern."""
        affines = self.affine_layers
        if len(pattern) != len(affines) - 1:
            raise NetworkError(f"pattern has {len(pattern)} layers, expected {len(affines) - 1}")
        jac = affines[0].weight
        for mask, affine in zip(pattern, affines[1:]):
            jac = affine.weight @ (np.asarray(mask, dtype=np.float64)[:, None] * jac)
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
        y = np.broadcast_to(affines[-1].weight.T @ cvec, (count, affines[-1].in_features))
        for mask, affine in zip(reversed(masks), reversed(affines[:-1])):
            y = (y * mask) @ affine.weight
        return np.array(y) if len(affines) == 1 else y
