"""Constants and shape arithmetic: ``Constant``, ``Shape``, ``Gather``, ``Cast``, ``Concat``
(which also joins branches). Their results are numpy arrays (``Shape`` of an input-dependent
tensor reads its shape, batch size 1)."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from lipopt.io.onnx.branches import concatenate
from lipopt.io.onnx.context import NodeContext, constant, require
from lipopt.io.onnx.symbolic import Symbolic, Value, floats, shape_of


def handle_constant(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = value`` from the node's ``value`` / ``value_float(s)`` / ``value_int(s)``."""
    from onnx import helper, numpy_helper

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


def handle_shape(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = shape(X)[start:end]`` as an int64 constant (batch size 1 for the network input)."""
    x = require(ctx, inputs, 0, "data")
    shape = np.asarray(shape_of(x), dtype=np.int64)
    start = int(ctx.attr("start", 0)) if ctx.opset >= 15 else 0
    end = ctx.attr("end") if ctx.opset >= 15 else None
    return [shape[start : None if end is None else int(end)]]


def handle_cast(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` in type ``to``: shape arithmetic on constants (torch's exports of ``//`` on a
    shape); an input-dependent tensor only to a float type (the value is unchanged)."""
    from onnx import helper

    x = require(ctx, inputs, 0, "input")
    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if not isinstance(x, Symbolic):
        return [np.asarray(x).astype(target)]
    if not np.issubdtype(target, np.floating):
        raise ctx.error(f"casting an input-dependent tensor to {target} is not piecewise linear")
    return [x]


def handle_gather(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = take(data, indices, axis)`` with constant indices: shape arithmetic on constants,
    and on input-dependent data a selection of entries (the dynamo exporter's ``as_strided``),
    linear: ``take(L h + c) = take(L) h + take(c)``."""
    data = require(ctx, inputs, 0, "data")
    indices = constant(ctx, require(ctx, inputs, 1, "indices"), "indices").astype(np.int64)
    axis = int(ctx.attr("axis", 0))
    if not isinstance(data, Symbolic):
        return [np.take(np.asarray(data), indices, axis=axis)]
    rank = len(data.shape)
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} out of range for rank {rank}")
    axis %= rank
    if axis == 0 and data.batched:
        raise ctx.error("gathering along the batch axis is not supported")
    size = data.shape[axis]
    if indices.size and (indices.min() < -size or indices.max() >= size):
        raise ctx.error(f"indices out of range for an axis of {size}")
    offset = np.take(data.offset, indices, axis=axis)
    batched = data.batched and axis > 0 and offset.ndim == rank
    if data.is_sparse or data.linear is None:  # the picked entries, as columns of the flat map
        picked = np.take(np.arange(data.offset.size).reshape(data.shape), indices, axis=axis)
        return [data.with_map(sparse.csr_array(data.flat_linear()[:, picked.reshape(-1)]),
                              offset, batched)]  # fmt: skip
    linear = np.take(data.full_linear(), indices, axis=axis + 1)
    return [data.with_map(linear, offset, batched)]


def handle_concat(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = concatenate(inputs, axis)``: shape arithmetic on constants, and the meeting of
    branches when inputs depend on the network input (``branches``)."""
    parts = [v for v in inputs if v is not None]
    axis = ctx.attr("axis")
    if axis is None:
        raise ctx.error("missing attribute 'axis'")
    if not any(isinstance(v, Symbolic) for v in parts):
        return [np.concatenate([np.asarray(v) for v in parts], axis=int(axis))]
    shapes = [tuple(shape_of(v)) for v in parts]
    rank = len(shapes[0])
    if not -rank <= int(axis) < rank:
        raise ctx.error(f"axis {axis} out of range for rank {rank}")
    axis = int(axis) % rank
    for shape in shapes:
        if len(shape) != rank or shape[:axis] + shape[axis + 1 :] != (
            shapes[0][:axis] + shapes[0][axis + 1 :]
        ):
            raise ctx.error(f"inputs of shapes {shapes} do not concatenate along axis {axis}")
    if axis == 0 and rank >= 2 and any(isinstance(v, Symbolic) and v.batched for v in parts):
        raise ctx.error("concatenating along the batch axis is not supported")
    return [concatenate([v if isinstance(v, Symbolic) else floats(v) for v in parts], axis)]
