"""Import a feed-forward ReLU network from ONNX into the :class:`~lipopt.network.Network` IR.

The graph is walked in topological order, one handler per ONNX op (:data:`OP_HANDLERS`). Every
tensor is either a constant (a numpy array: initializers, ``Constant`` nodes and anything computed
from them) or *symbolic*: an affine function of the network input, stored as

    value = reshape(h @ linear, shape) + offset,

where ``h`` is the flat output of the layers built so far (the network input itself, or the output
of the last ReLU). Affine ops (Gemm, MatMul, Add/Sub/Mul/Div by constants, BatchNormalization,
reshapes) only update ``linear`` and ``offset``; a ``Relu`` turns the pending affine map into an
:class:`~lipopt.network.Affine` layer followed by :class:`~lipopt.network.ReLU`. Anything that is
not affine in the single input (a product of two input-dependent tensors, a residual connection, a
non-ReLU activation, ...) raises :class:`OnnxImportError`; a wrong network is never returned.

Batch dimension: the leading dimension of a rank >= 2 input is the batch dimension. The imported
network is the map of *one* sample (batch size 1): an input of shape ``(N, 1, 8, 8)`` gives a
network with ``input_dim == 64`` that reads ``x`` in C order, and its output is the graph output
flattened in C order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any, Union

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import helper, numpy_helper

from lipopt.network import Affine, Layer, Network, NetworkError, ReLU

__all__ = ["MAX_OPSET", "MIN_OPSET", "OP_HANDLERS", "OnnxImportError", "load_onnx"]

MIN_OPSET = 11
MAX_OPSET = 20

_FLOAT_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.DOUBLE,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
}
_DEFAULT_DOMAINS = ("", "ai.onnx")


class OnnxImportError(ValueError):
    """The ONNX model cannot be read, or is not a chain of affine maps and ReLUs."""


Array = NDArray[Any]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class _Symbolic:
    """A tensor that depends on the network input: ``reshape(h @ linear, shape) + offset``.

    ``h`` (length ``width``) is the output of ``prefix`` (the input itself when ``prefix`` is
    empty; otherwise ``prefix`` ends with a ReLU). ``linear`` has shape ``(width, *shape)``;
    ``None`` stands for the identity (``h`` reshaped to ``shape``), which saves forming large
    identity matrices. ``batched`` records that axis 0 is still the (size 1) batch axis.
    """

    prefix: tuple[Layer, ...]
    width: int
    linear: FloatArray | None
    offset: FloatArray
    batched: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.offset.shape)

    def full_linear(self) -> FloatArray:
        """``linear`` with the identity made explicit, shape ``(width, *shape)``."""
        if self.linear is None:
            return np.eye(self.width).reshape((self.width, *self.shape))
        return self.linear

    def with_map(
        self,
        linear: FloatArray | None,
        offset: FloatArray,
        batched: bool,
    ) -> _Symbolic:
        return _Symbolic(self.prefix, self.width, linear, np.asarray(offset, float), batched)

    def reshaped(self, shape: Sequence[int], batched: bool) -> _Symbolic:
        """The same values in C order, viewed with another shape (a pure reshape)."""
        shape = tuple(int(d) for d in shape)
        linear = None if self.linear is None else self.linear.reshape((self.width, *shape))
        return self.with_map(linear, self.offset.reshape(shape), batched)

    def affine(self) -> Affine:
        """The pending affine map ``h -> vec(value)`` as a layer."""
        weight = self.full_linear().reshape(self.width, -1).T
        return Affine(weight, self.offset.reshape(-1))

    def relu(self) -> _Symbolic:
        """``max(value, 0)``: close the pending affine map with an Affine and a ReLU layer."""
        is_identity = self.linear is None and not np.any(self.offset)
        if is_identity and self.prefix and isinstance(self.prefix[-1], ReLU):
            return self  # relu(relu(z)) = relu(z)
        prefix = (*self.prefix, self.affine(), ReLU())
        width = prod(self.shape)
        return _Symbolic(prefix, width, None, np.zeros(self.shape), self.batched)


Value = Union[Array, _Symbolic]


# ---------------------------------------------------------------------------- node context
@dataclass(frozen=True)
class _NodeContext:
    """What a handler may know about the node it converts."""

    node: onnx.NodeProto
    index: int
    opset: int
    input_batch: int | None  # declared fixed batch size of the graph input, if any

    @property
    def label(self) -> str:
        if self.node.name:
            return repr(self.node.name)
        return f"#{self.index} (unnamed, outputs {list(self.node.output)})"

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"ONNX op '{self.node.op_type}' at node {self.label}: {message}")

    def attr(self, name: str, default: Any = None) -> Any:
        for attribute in self.node.attribute:
            if attribute.name == name:
                return helper.get_attribute_value(attribute)
        return default


Handler = Callable[[_NodeContext, list[Union[Value, None]]], list[Value]]


# ---------------------------------------------------------------------------- small helpers
def _is_sym(value: Value | None) -> bool:
    return isinstance(value, _Symbolic)


def _require(ctx: _NodeContext, inputs: list[Value | None], index: int, what: str) -> Value:
    if index >= len(inputs) or inputs[index] is None:
        raise ctx.error(f"missing required input {index} ({what})")
    value = inputs[index]
    assert value is not None
    return value


def _constant(ctx: _NodeContext, value: Value | None, what: str) -> Array:
    if isinstance(value, _Symbolic):
        raise ctx.error(
            f"{what} depends on the network input; only constants (initializers, Constant "
            "nodes) are supported here"
        )
    assert value is not None
    return np.asarray(value)


def _floats(array: Array) -> FloatArray:
    return np.asarray(array, dtype=np.float64)


def _lift(sym: _Symbolic, rank: int) -> FloatArray:
    """``full_linear`` with unit axes inserted after the width axis so that the value part has
    ``rank`` axes: broadcasting against a constant then aligns the trailing axes as in ONNX."""
    linear = sym.full_linear()
    missing = rank - len(sym.shape)
    return linear.reshape((sym.width, *([1] * missing), *sym.shape))


def _elementwise(
    ctx: _NodeContext,
    sym: _Symbolic,
    constant: Array,
    op: Callable[[Array, Array], Array],
    scales: bool,
) -> _Symbolic:
    """Apply ``value -> op(value, constant)`` for an op that is affine in ``value``.

    ``scales`` says whether ``op`` multiplies (then ``linear`` is transformed too) or adds
    (then only ``offset`` changes: ``op(L h + c, k) = L h + op(c, k)``).
    """
    const = _floats(constant)
    try:
        shape = tuple(np.broadcast_shapes(sym.shape, const.shape))
    except ValueError as exc:
        raise ctx.error(f"shapes {sym.shape} and {const.shape} do not broadcast") from exc
    if prod(shape) != prod(sym.shape):
        raise ctx.error(
            f"the constant of shape {const.shape} would broadcast the input-dependent tensor of "
            f"shape {sym.shape} to {shape} (replicating it); only per-feature constants are "
            "supported"
        )
    offset = op(sym.offset, const).reshape(shape)
    if scales:
        linear: FloatArray | None = op(_lift(sym, len(shape)), const)
    elif sym.linear is None:
        linear = None
    else:
        linear = _lift(sym, len(shape))
    # no axis grew, so `shape` is sym.shape with unit axes prepended: `linear` already fits
    return sym.with_map(linear, offset, sym.batched)


def _transpose(value: Value) -> Value:
    """Transpose of a 2-D tensor (Gemm's transA/transB)."""
    if not isinstance(value, _Symbolic):
        return np.asarray(value).T
    rows, cols = value.shape
    if rows == 1 or cols == 1:  # the same data in C order
        return value.reshaped((cols, rows), batched=False)
    return value.with_map(np.swapaxes(value.full_linear(), 1, 2), value.offset.T, batched=False)


def _scale(value: Value, factor: float) -> Value:
    if factor == 1.0:
        return value
    if isinstance(value, _Symbolic):
        return value.with_map(value.full_linear() * factor, value.offset * factor, value.batched)
    return _floats(value) * factor


def _matmul(ctx: _NodeContext, a: Value, b: Value) -> Value:
    """``A @ B`` with numpy (= ONNX MatMul) semantics, at most one operand input-dependent."""
    if isinstance(a, _Symbolic) and isinstance(b, _Symbolic):
        raise ctx.error(
            "both operands depend on the network input (a product of two input-dependent "
            "tensors is not affine)"
        )
    try:
        if isinstance(a, _Symbolic):
            return _sym_matmul_const(ctx, a, _floats(np.asarray(b)))
        if isinstance(b, _Symbolic):
            return _const_matmul_sym(ctx, _floats(np.asarray(a)), b)
        return np.matmul(a, b)
    except OnnxImportError:
        raise
    except ValueError as exc:
        shape_a = a.shape if isinstance(a, _Symbolic) else np.shape(a)
        shape_b = b.shape if isinstance(b, _Symbolic) else np.shape(b)
        raise ctx.error(f"operand shapes {shape_a} and {shape_b} do not match") from exc


def _sym_matmul_const(ctx: _NodeContext, x: _Symbolic, weight: FloatArray) -> _Symbolic:
    """``x @ W``: ``(L h + c) @ W = (L @ W) h + c @ W`` with W 1-D or 2-D."""
    if weight.ndim not in (1, 2) or not x.shape:
        raise ctx.error(
            f"only x @ W with x of rank >= 1 and W of rank 1 or 2 is supported, got shapes "
            f"{x.shape} and {weight.shape}"
        )
    if x.shape[-1] != weight.shape[0]:
        raise ValueError("shape mismatch")
    offset = x.offset @ weight
    lead = x.shape[:-1]
    if x.linear is None and prod(lead) == 1:
        # e_i @ W is row i of W: no need to form the identity
        tail = weight.shape[1:]
        linear = weight.reshape((weight.shape[0], *lead, *tail))
    else:
        # one matrix product (numpy would loop over the stacked leading axes)
        full = x.full_linear()
        linear = (full.reshape(-1, weight.shape[0]) @ weight).reshape(
            (x.width, *lead, *weight.shape[1:])
        )
    batched = x.batched and len(x.shape) >= 2
    return x.with_map(linear, offset, batched)


def _const_matmul_sym(ctx: _NodeContext, weight: FloatArray, x: _Symbolic) -> _Symbolic:
    """``W @ x``: ``W @ (L h + c) = (W @ L) h + W @ c`` with W 1-D or 2-D."""
    if weight.ndim not in (1, 2) or not x.shape:
        raise ctx.error(
            f"only W @ x with W of rank 1 or 2 and x of rank >= 1 is supported, got shapes "
            f"{weight.shape} and {x.shape}"
        )
    offset = weight @ x.offset
    if len(x.shape) == 1:
        linear = x.full_linear() @ weight.T
        batched = False
    else:
        # contract W's last axis with the second-to-last axis of x in one BLAS call
        moved = np.tensordot(x.full_linear(), weight, axes=([-2], [-1]))
        linear = np.moveaxis(moved, -1, -2) if weight.ndim == 2 else moved
        batched = x.batched and len(x.shape) >= 3
    return x.with_map(linear, offset, batched)


def _is_flat(shape: Sequence[int]) -> bool:
    """A flat vector: ``(n,)`` or ``(1, ..., 1, n)``."""
    return len(shape) >= 1 and all(d == 1 for d in shape[:-1])


# ---------------------------------------------------------------------------- handlers
def _handle_identity(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X``."""
    return [_require(ctx, inputs, 0, "input")]


def _handle_constant(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = value`` from the node's ``value`` / ``value_float(s)`` / ``value_int(s)``."""
    for attribute in ctx.node.attribute:
        name = attribute.name
        if name == "value":
            return [numpy_helper.to_array(attribute.t)]
        if name in ("value_float", "value_floats"):
            return [np.asarray(helper.get_attribute_value(attribute), dtype=np.float32)]
        if name in ("value_int", "value_ints"):
            return [np.asarray(helper.get_attribute_value(attribute), dtype=np.int64)]
        if name in ("sparse_value", "value_string", "value_strings"):
            raise ctx.error(f"Constant with attribute '{name}' is not supported")
    raise ctx.error("Constant node without a value")


def _handle_relu(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = max(X, 0)``: closes the pending affine map with a ReLU layer."""
    x = _require(ctx, inputs, 0, "X")
    if isinstance(x, _Symbolic):
        return [x.relu()]
    return [np.maximum(x, 0)]


def _binary(name: str) -> Handler:
    def handler(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
        a = _require(ctx, inputs, 0, "A")
        b = _require(ctx, inputs, 1, "B")
        if isinstance(a, _Symbolic) and isinstance(b, _Symbolic):
            raise ctx.error(
                "both operands depend on the network input (branches, skip connections and "
                "products of input-dependent tensors are not supported; the network must be a "
                "chain)"
            )
        if not isinstance(a, _Symbolic) and not isinstance(b, _Symbolic):
            return [_fold_binary(name, np.asarray(a), np.asarray(b))]
        return [_sym_binary(ctx, name, a, b)]

    handler.__name__ = f"_handle_{name.lower()}"
    symbol = _SYMBOLS[name]
    handler.__doc__ = f"``C = A {symbol} B`` (broadcasting); affine when one operand is constant."
    return handler


_SYMBOLS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def _fold_binary(name: str, a: Array, b: Array) -> Array:
    if name == "Add":
        return np.add(a, b)
    if name == "Sub":
        return np.subtract(a, b)
    if name == "Mul":
        return np.multiply(a, b)
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))  # C-style
    return np.true_divide(a, b)


def _sym_binary(ctx: _NodeContext, name: str, a: Value, b: Value) -> _Symbolic:
    """One of ``a``, ``b`` is symbolic, the other constant."""
    sym_first = isinstance(a, _Symbolic)
    sym = a if sym_first else b
    const = np.asarray(b if sym_first else a)
    assert isinstance(sym, _Symbolic)
    if name == "Add":
        return _elementwise(ctx, sym, const, np.add, scales=False)
    if name == "Mul":
        return _elementwise(ctx, sym, const, np.multiply, scales=True)
    if name == "Sub":
        if sym_first:  # x - k
            return _elementwise(ctx, sym, const, np.subtract, scales=False)
        negated = _scale(sym, -1.0)  # k - x = (-x) + k
        assert isinstance(negated, _Symbolic)
        return _elementwise(ctx, negated, const, np.add, scales=False)
    # Div
    if not sym_first:
        raise ctx.error("division by an input-dependent tensor is not affine")
    if np.any(_floats(const) == 0):
        raise ctx.error("division by a constant that contains zeros")
    return _elementwise(ctx, sym, const, np.true_divide, scales=True)


def _handle_matmul(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = A @ B`` (numpy semantics); the constant operand must be 1-D or 2-D."""
    a = _require(ctx, inputs, 0, "A")
    b = _require(ctx, inputs, 1, "B")
    return [_matmul(ctx, a, b)]


def _handle_gemm(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = alpha * A' @ B' + beta * C``, ``A' = A^T`` if transA, ``B' = B^T`` if transB;
    C (optional) broadcasts to the shape of ``A' @ B'``."""
    a = _require(ctx, inputs, 0, "A")
    b = _require(ctx, inputs, 1, "B")
    c = inputs[2] if len(inputs) > 2 else None
    alpha = float(ctx.attr("alpha", 1.0))
    beta = float(ctx.attr("beta", 1.0))
    for value, what in ((a, "A"), (b, "B")):
        shape = value.shape if isinstance(value, _Symbolic) else np.shape(value)
        if len(shape) != 2:
            raise ctx.error(f"Gemm needs a 2-D {what}, got shape {tuple(shape)}")
    if sum(_is_sym(v) for v in (a, b, c)) > 1:
        raise ctx.error(
            "more than one operand depends on the network input (not affine, or not a chain)"
        )
    if int(ctx.attr("transA", 0)):
        a = _transpose(a)
    if int(ctx.attr("transB", 0)):
        b = _transpose(b)
    product = _scale(_matmul(ctx, a, b), alpha)
    if c is None or (beta == 0.0 and not isinstance(c, _Symbolic)):
        return [product]
    c_scaled = _scale(c, beta)
    if isinstance(product, _Symbolic):
        return [_elementwise(ctx, product, np.asarray(c_scaled), np.add, scales=False)]
    if isinstance(c_scaled, _Symbolic):
        return [_elementwise(ctx, c_scaled, product, np.add, scales=False)]
    return [np.add(product, c_scaled)]


def _handle_flatten(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = reshape(X, (prod(dims[:axis]), prod(dims[axis:])))``; for input-dependent X the
    result must be a flat vector ``(1, n)``."""
    x = _require(ctx, inputs, 0, "input")
    shape = x.shape if isinstance(x, _Symbolic) else np.shape(x)
    rank = len(shape)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.error(f"axis {axis} out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    target = (prod(shape[:axis]), prod(shape[axis:]))
    if not isinstance(x, _Symbolic):
        return [np.reshape(x, target)]
    if not _is_flat(target):
        raise ctx.error(
            f"Flatten(axis={axis}) turns shape {x.shape} into {target}, which is not a flat "
            "vector; only flattening to (1, n) is supported"
        )
    return [x.reshaped(target, batched=x.batched and axis >= 1)]


def _resolve_reshape(
    ctx: _NodeContext, shape: tuple[int, ...], spec: Sequence[int], batch_rule: bool
) -> tuple[int, ...]:
    """ONNX Reshape target: 0 copies a dimension (unless allowzero), -1 is inferred. With
    ``batch_rule``, a leading entry equal to the input's fixed batch size is the batch (size 1)."""
    allowzero = int(ctx.attr("allowzero", 0)) if ctx.opset >= 14 else 0
    out: list[int] = []
    infer = None
    for i, d in enumerate(int(v) for v in spec):
        if d == 0 and not allowzero:
            if i >= len(shape):
                raise ctx.error(f"shape {list(spec)} copies missing dimension {i} of {shape}")
            out.append(shape[i])
        elif d == -1:
            if infer is not None:
                raise ctx.error(f"shape {list(spec)} has more than one -1")
            infer = i
            out.append(1)
        elif d < 0:
            raise ctx.error(f"invalid shape {list(spec)}")
        elif i == 0 and batch_rule and ctx.input_batch is not None and d == ctx.input_batch:
            out.append(1)
        else:
            out.append(d)
    total = prod(shape)
    if infer is not None:
        rest = prod(out)
        if rest == 0 or total % rest:
            raise ctx.error(f"cannot reshape {shape} to {list(spec)}")
        out[infer] = total // rest
    if prod(out) != total:
        raise ctx.error(f"cannot reshape {shape} (size {total}) to {list(spec)}")
    return tuple(out)


def _handle_reshape(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = reshape(X, shape)`` (C order); for input-dependent X only a flattening to ``(n,)``
    or ``(1, n)`` (e.g. shape ``(1, -1)``, ``(-1,)``, ``(batch, -1)``) is supported."""
    x = _require(ctx, inputs, 0, "data")
    shape_tensor = _constant(ctx, _require(ctx, inputs, 1, "shape"), "the target shape")
    spec = [int(d) for d in shape_tensor.reshape(-1)]
    if not isinstance(x, _Symbolic):
        const = np.asarray(x)
        return [const.reshape(_resolve_reshape(ctx, const.shape, spec, batch_rule=False))]
    target = _resolve_reshape(ctx, x.shape, spec, batch_rule=x.batched)
    if not _is_flat(target):
        raise ctx.error(
            f"reshaping {x.shape} to {target} (shape {spec}) is not a flattening; only "
            "reshapes to a flat vector (1, n) or (n,) are supported"
        )
    return [x.reshaped(target, batched=x.batched and len(target) >= 2)]


def _axes(ctx: _NodeContext, inputs: list[Value | None]) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, an input from 13 on."""
    if ctx.opset < 13:
        axes = ctx.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    if len(inputs) < 2 or inputs[1] is None:
        return None
    return [int(a) for a in _constant(ctx, inputs[1], "axes").reshape(-1)]


def _handle_squeeze(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` without the size-1 axes listed (all size-1 axes if none are given)."""
    x = _require(ctx, inputs, 0, "data")
    shape = x.shape if isinstance(x, _Symbolic) else np.shape(x)
    axes = _axes(ctx, inputs)
    rank = len(shape)
    if axes is None:
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        if any(not -rank <= a < rank for a in axes):
            raise ctx.error(f"axes {axes} out of range for rank {rank}")
        drop = {a + rank if a < 0 else a for a in axes}
        if any(shape[a] != 1 for a in drop):
            raise ctx.error(f"cannot squeeze axes {axes} of shape {tuple(shape)}")
    target = tuple(d for i, d in enumerate(shape) if i not in drop)
    if not isinstance(x, _Symbolic):
        return [np.reshape(x, target)]
    return [x.reshaped(target, batched=x.batched and 0 not in drop)]


def _handle_unsqueeze(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` with size-1 axes inserted at ``axes`` (positions in the output)."""
    x = _require(ctx, inputs, 0, "data")
    shape = x.shape if isinstance(x, _Symbolic) else np.shape(x)
    axes = _axes(ctx, inputs)
    if axes is None:
        raise ctx.error("missing axes")
    rank = len(shape) + len(axes)
    if any(not -rank <= a < rank for a in axes):
        raise ctx.error(f"axes {axes} out of range for output rank {rank}")
    insert = {a + rank if a < 0 else a for a in axes}
    if len(insert) != len(axes):
        raise ctx.error(f"repeated axes {axes}")
    dims = iter(shape)
    target = tuple(1 if i in insert else next(dims) for i in range(rank))
    if not isinstance(x, _Symbolic):
        return [np.reshape(x, target)]
    return [x.reshaped(target, batched=x.batched and 0 not in insert)]


def _handle_batchnorm(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """Inference-mode ``Y = (X - mean) / sqrt(var + epsilon) * scale + B`` per channel (axis 1),
    folded into ``Y = X * a + b``."""
    if int(ctx.attr("training_mode", 0)):
        raise ctx.error("training_mode=1 is not supported (export the model in eval mode)")
    if any(name for name in ctx.node.output[1:]):
        raise ctx.error("the running-statistics outputs are not supported (training mode)")
    x = _require(ctx, inputs, 0, "X")
    names = ("scale", "B", "input_mean", "input_var")
    scale, bias, mean, var = (
        _floats(_constant(ctx, _require(ctx, inputs, i + 1, n), n)) for i, n in enumerate(names)
    )
    epsilon = float(ctx.attr("epsilon", 1e-5))
    shape = x.shape if isinstance(x, _Symbolic) else np.shape(x)
    if len(shape) < 2:
        raise ctx.error(f"input must have shape (N, C, ...), got {tuple(shape)}")
    channels = shape[1]
    if any(p.shape != (channels,) for p in (scale, bias, mean, var)):
        raise ctx.error(f"parameters must have shape ({channels},)")
    factor = scale / np.sqrt(var + epsilon)
    shift = bias - mean * factor
    per_channel = (channels, *([1] * (len(shape) - 2)))
    factor, shift = factor.reshape(per_channel), shift.reshape(per_channel)
    if not isinstance(x, _Symbolic):
        return [_floats(x) * factor + shift]
    scaled = _elementwise(ctx, x, factor, np.multiply, scales=True)
    return [_elementwise(ctx, scaled, shift, np.add, scales=False)]


def _handle_shape(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = shape(X)[start:end]`` as an int64 constant (batch size 1 for the network input)."""
    x = _require(ctx, inputs, 0, "data")
    shape = np.asarray(x.shape if isinstance(x, _Symbolic) else np.shape(x), dtype=np.int64)
    start = int(ctx.attr("start", 0)) if ctx.opset >= 15 else 0
    end = ctx.attr("end") if ctx.opset >= 15 else None
    return [shape[start : None if end is None else int(end)]]


def _handle_gather(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = take(data, indices, axis)``, for constants only (shape arithmetic)."""
    data = _constant(ctx, _require(ctx, inputs, 0, "data"), "data")
    indices = _constant(ctx, _require(ctx, inputs, 1, "indices"), "indices")
    return [np.take(data, indices.astype(np.int64), axis=int(ctx.attr("axis", 0)))]


def _handle_concat(ctx: _NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = concatenate(inputs, axis)``, for constants only (shape arithmetic)."""
    arrays = [_constant(ctx, v, f"input {i}") for i, v in enumerate(inputs) if v is not None]
    axis = ctx.attr("axis")
    if axis is None:
        raise ctx.error("missing attribute 'axis'")
    return [np.concatenate(arrays, axis=int(axis))]


OP_HANDLERS: dict[str, Handler] = {
    "Add": _binary("Add"),
    "BatchNormalization": _handle_batchnorm,
    "Concat": _handle_concat,
    "Constant": _handle_constant,
    "Div": _binary("Div"),
    "Flatten": _handle_flatten,
    "Gather": _handle_gather,
    "Gemm": _handle_gemm,
    "Identity": _handle_identity,
    "MatMul": _handle_matmul,
    "Mul": _binary("Mul"),
    "Relu": _handle_relu,
    "Reshape": _handle_reshape,
    "Shape": _handle_shape,
    "Squeeze": _handle_squeeze,
    "Sub": _binary("Sub"),
    "Unsqueeze": _handle_unsqueeze,
}
"""One handler per supported ONNX op (default domain)."""

# ops that read only the shape of their input, not its values (no data dependence)
_SHAPE_ONLY_OPS = frozenset({"Shape"})

_HINTS = {
    "Softmax": "the network must end in logits: export the model without the final Softmax",
    "LogSoftmax": "the network must end in logits: export the model without the final LogSoftmax",
}


# ---------------------------------------------------------------------------- loading
def _read_model(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(source, onnx.ModelProto):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_model_from_string(bytes(source))
        except Exception as exc:
            raise OnnxImportError(f"the given bytes are not a valid ONNX model: {exc}") from exc
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise OnnxImportError(f"no such ONNX file: {str(path)!r}")
        try:
            return onnx.load(str(path))
        except Exception as exc:
            raise OnnxImportError(f"{str(path)!r} is not a valid ONNX model: {exc}") from exc
    raise TypeError(
        f"load_onnx expects a path, bytes or an onnx.ModelProto, got {type(source).__name__}"
    )


def _check(model: onnx.ModelProto) -> None:
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise OnnxImportError(f"not a valid ONNX model: {exc}") from exc


def _opset(model: onnx.ModelProto) -> int:
    versions = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
    if not versions:
        raise OnnxImportError("the model imports no version of the default ONNX opset")
    version = int(versions[0])
    if not MIN_OPSET <= version <= MAX_OPSET:
        raise OnnxImportError(
            f"ONNX opset {version} is not supported (supported: {MIN_OPSET} to {MAX_OPSET}); "
            f"re-export the model with an opset in that range"
        )
    return version


def _input_symbol(value_info: onnx.ValueInfoProto) -> tuple[_Symbolic, int | None]:
    """The network input as a symbolic tensor, and its declared fixed batch size (if any)."""
    name = value_info.name
    if not value_info.type.HasField("tensor_type"):
        raise OnnxImportError(f"graph input {name!r} is not a tensor")
    tensor_type = value_info.type.tensor_type
    if tensor_type.elem_type not in _FLOAT_TYPES:
        type_name = onnx.TensorProto.DataType.Name(tensor_type.elem_type)
        raise OnnxImportError(f"graph input {name!r} has type {type_name}, expected a float type")
    if not tensor_type.HasField("shape") or not tensor_type.shape.dim:
        raise OnnxImportError(f"graph input {name!r} needs a known shape of rank >= 1")
    dims = list(tensor_type.shape.dim)
    batch: int | None = None
    shape: list[int] = []
    for axis, dim in enumerate(dims):
        known = dim.HasField("dim_value") and dim.dim_value > 0
        if axis == 0 and len(dims) >= 2:
            batch = int(dim.dim_value) if known else None
            shape.append(1)
        elif known:
            shape.append(int(dim.dim_value))
        else:
            raise OnnxImportError(
                f"graph input {name!r}: dimension {axis} must be a fixed positive size "
                "(only the leading batch dimension may be symbolic)"
            )
    width = prod(shape)
    symbol = _Symbolic((), width, None, np.zeros(shape), batched=len(dims) >= 2)
    return symbol, batch


def _sorted_nodes(graph: onnx.GraphProto, known: set[str]) -> list[onnx.NodeProto]:
    """Nodes in topological order (stable: the file's order among ready nodes)."""
    available = set(known) | {""}
    pending = list(graph.node)
    ordered: list[onnx.NodeProto] = []
    while pending:
        ready = [n for n in pending if all(i in available for i in n.input)]
        if not ready:
            node = pending[0]
            missing = [i for i in node.input if i not in available]
            raise OnnxImportError(
                f"ONNX op '{node.op_type}' at node {node.name!r}: input(s) {missing} are never "
                "produced (undefined tensor or a cycle)"
            )
        ready_ids = {id(n) for n in ready}
        for node in ready:
            ordered.append(node)
            available.update(node.output)
        pending = [n for n in pending if id(n) not in ready_ids]
    return ordered


def _unsupported(ctx: _NodeContext) -> OnnxImportError:
    node = ctx.node
    op = node.op_type if node.domain in _DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"
    message = (
        f"unsupported ONNX op '{op}' at node {ctx.label} "
        f"(supported: {', '.join(sorted(OP_HANDLERS))})"
    )
    hint = _HINTS.get(node.op_type)
    return OnnxImportError(f"{message}; {hint}" if hint else message)


def load_onnx(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> Network:
    """Read an ONNX model of a feed-forward ReLU network into a :class:`Network`.

    Args:
        source: a path to an ``.onnx`` file, the serialised model as bytes, or an
            ``onnx.ModelProto``.

    Returns:
        The network ``f`` of one sample: ``f(x) = vec(graph(reshape(x, input_shape)))`` with the
        batch dimension (the leading dimension of a rank >= 2 input) of size 1, in canonical
        form ``Affine (ReLU Affine)*``.

    Raises:
        OnnxImportError: the file is missing or not a valid ONNX model, the opset is outside
            ``MIN_OPSET..MAX_OPSET``, the graph has other than one input and one output, uses an
            op outside :data:`OP_HANDLERS`, or is not a chain of affine maps and ReLUs.
    """
    model = _read_model(source)
    _check(model)
    opset = _opset(model)
    graph = model.graph
    if graph.sparse_initializer:
        raise OnnxImportError("sparse initializers are not supported")

    values: dict[str, Value] = {}
    for tensor in graph.initializer:
        values[tensor.name] = numpy_helper.to_array(tensor)
    inputs = [i for i in graph.input if i.name not in values]
    if len(inputs) != 1:
        names = [i.name for i in inputs]
        raise OnnxImportError(
            f"the graph must have exactly one input (besides initializers), found {len(inputs)}: "
            f"{names}"
        )
    if len(graph.output) != 1:
        names = [o.name for o in graph.output]
        raise OnnxImportError(
            f"the graph must have exactly one output, found {len(graph.output)}: {names}"
        )
    symbol, batch = _input_symbol(inputs[0])
    values[inputs[0].name] = symbol
    output_name = graph.output[0].name

    nodes = _sorted_nodes(graph, set(values))
    contexts = [_NodeContext(node, i, opset, batch) for i, node in enumerate(nodes)]
    for ctx in contexts:
        if ctx.node.domain not in _DEFAULT_DOMAINS or ctx.node.op_type not in OP_HANDLERS:
            raise _unsupported(ctx)

    consumers: dict[str, list[str]] = {output_name: ["the graph output"]}
    for ctx in contexts:
        if ctx.node.op_type in _SHAPE_ONLY_OPS:
            continue
        for name in dict.fromkeys(i for i in ctx.node.input if i):
            consumers.setdefault(name, []).append(ctx.label)

    for ctx in contexts:
        node_inputs: list[Value | None] = []
        for name in ctx.node.input:
            if not name:
                node_inputs.append(None)
                continue
            value = values[name]
            users = consumers.get(name, [])
            if isinstance(value, _Symbolic) and len(users) > 1:
                raise ctx.error(
                    f"tensor {name!r} depends on the network input and is used {len(users)} "
                    f"times ({', '.join(users)}); only a chain of layers is supported "
                    "(no branches or skip connections)"
                )
            node_inputs.append(value)
        outputs = OP_HANDLERS[ctx.node.op_type](ctx, node_inputs)
        produced = list(ctx.node.output)
        if any(produced[len(outputs) :]):
            raise ctx.error(f"only {len(outputs)} output(s) supported, node has {produced}")
        for name, value in zip(produced, outputs, strict=False):
            if name:
                values[name] = value

    result = values.get(output_name)
    if not isinstance(result, _Symbolic):
        raise OnnxImportError(f"the graph output {output_name!r} does not depend on the input")
    try:
        return Network.from_layers([*result.prefix, result.affine()])
    except NetworkError as exc:
        raise OnnxImportError(f"the ONNX model does not give a valid network: {exc}") from exc
