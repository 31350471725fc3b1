"""What a handler sees (the node, its place, the opset), the import error, and the helpers that
read operands and apply elementwise affine maps ``op(L h + c, k)`` to input-dependent tensors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any, Union, cast

import numpy as np
from scipy import sparse

from lipopt.io.onnx.symbolic import Array, FloatArray, Symbolic, Value, floats

if TYPE_CHECKING:
    import onnx


class OnnxImportError(ValueError):
    """The ONNX model cannot be read, or is not a chain of affine maps and activations."""


@dataclass(frozen=True)
class NodeContext:
    """What a handler may know about the node it converts."""

    node: onnx.NodeProto
    index: int
    opset: int
    input_batch: int | None  # declared fixed batch size of the graph input, if any
    consumed: frozenset[str] = frozenset()  # tensors some node or the graph output reads

    @property
    def label(self) -> str:
        if self.node.name:
            return repr(self.node.name)
        return f"#{self.index} (unnamed, outputs {list(self.node.output)})"

    def error(self, message: str) -> OnnxImportError:
        """The import error for this node: op type, node label, then ``message``."""
        return OnnxImportError(f"ONNX op '{self.node.op_type}' at node {self.label}: {message}")

    def attr(self, name: str, default: Any = None) -> Any:
        """The value of attribute ``name``, or ``default`` when the node has none."""
        from onnx import helper

        for attribute in self.node.attribute:
            if attribute.name == name:
                return helper.get_attribute_value(attribute)
        return default


Handler = Callable[[NodeContext, list[Union[Value, None]]], list[Value]]
"""Converts one node: its input values (``None`` for an omitted optional input) to its outputs."""


def require(ctx: NodeContext, inputs: list[Value | None], index: int, what: str) -> Value:
    """Input ``index`` of the node, which must be present."""
    if index >= len(inputs) or inputs[index] is None:
        raise ctx.error(f"missing required input {index} ({what})")
    value = inputs[index]
    assert value is not None
    return value


def constant(ctx: NodeContext, value: Value | None, what: str) -> Array:
    """``value`` as a numpy array; it must not depend on the network input."""
    if isinstance(value, Symbolic):
        raise ctx.error(
            f"{what} depends on the network input; only constants (initializers, Constant "
            "nodes) are supported here"
        )
    assert value is not None
    return np.asarray(value)


def _lift(sym: Symbolic, rank: int) -> FloatArray:
    """``full_linear`` with unit axes inserted after the width axis so that the value part has
    ``rank`` axes: broadcasting against a constant then aligns the trailing axes as in ONNX."""
    linear = sym.full_linear()
    missing = rank - len(sym.shape)
    return linear.reshape((sym.width, *([1] * missing), *sym.shape))


def elementwise(
    ctx: NodeContext,
    sym: Symbolic,
    const_value: Array,
    op: Callable[[Array, Array], Array],
    scales: bool,
) -> Symbolic:
    """Apply ``value -> op(value, constant)`` for an op that is affine in ``value``.

    ``scales`` says whether ``op`` multiplies (then ``linear`` is transformed too) or adds
    (then only ``offset`` changes: ``op(L h + c, k) = L h + op(c, k)``).
    """
    const = floats(const_value)
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
    if scales and (sym.is_sparse or sym.linear is None):  # each column times its factor
        factor = op(np.ones(shape), const).reshape(1, -1)
        product = cast("sparse.csr_array", sym.flat_linear()).multiply(factor)  # sparse here
        return sym.with_map(sparse.csr_array(product), offset, sym.batched)
    if scales:
        linear: Any = op(_lift(sym, len(shape)), const)
    elif sym.linear is None or sym.is_sparse:
        linear = sym.linear
    else:
        linear = _lift(sym, len(shape))
    # no axis grew, so `shape` is sym.shape with unit axes prepended: `linear` already fits
    return sym.with_map(linear, offset, sym.batched)


def scale(value: Value, factor: float) -> Value:
    """``factor * value``: ``factor (L h + c) = (factor L) h + factor c``."""
    if factor == 1.0:
        return value
    if isinstance(value, Symbolic):
        if value.is_sparse or value.linear is None:
            linear: Any = sparse.csr_array(value.flat_linear() * factor)
        else:
            linear = value.full_linear() * factor
        return value.with_map(linear, value.offset * factor, value.batched)
    return floats(value) * factor
