"""Maxima, minima and sorting: ``MaxPool``, ``Max``, ``Min``, ``ReduceMax``, ``ReduceMin``,
``TopK`` (what ``torch.sort`` exports to), compiled to activation layers by
:mod:`.comparators`: one kinked neuron (one binary where its sign is open) per comparison, the
operands read back carried by identity neurons (no binary).

- ``MaxPool``: pairwise maxima over each window, ``ceil(log2 |window|)`` layers. On a Relu's
  output (conv -> relu -> maxpool) the encoding is the ReLU one it always was: carries
  ``relu(b) = b`` are stable ReLU neurons, and the network stays a ReLU network.
- ``Max`` / ``Min`` of any number of inputs (broadcast; constants allowed): pairwise per entry.
- ``ReduceMax`` / ``ReduceMin`` over the given axes (``keepdims``; opset 18's ``axes`` input
  and ``noop_with_empty_axes``): a pairwise tree per group.
- ``TopK`` (``k`` a constant): the whole axis sorted by Batcher's merge-exchange network (one
  kinked neuron per comparator, GroupSort of any group size), then the ``k`` largest or
  smallest, in order. ``sorted = 0`` leaves the order to the runtime; it is sorted here. Only
  the Values output: using the Indices is refused (not a continuous function of the input).
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from scipy import sparse

from lipopt.io.onnx.branches import align
from lipopt.io.onnx.comparators import extremes, sorted_groups
from lipopt.io.onnx.context import NodeContext, constant, require
from lipopt.io.onnx.ops_conv import pool_geometry
from lipopt.io.onnx.symbolic import Symbolic, Value, floats, shape_of
from lipopt.network import ReLU


def _windows(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[list[list[int]], tuple]:
    """Per output cell of MaxPool (C order), the flat indices of the input entries in its
    window (padding left out), and the output shape."""
    kernel, geometry = pool_geometry(ctx, shape)
    dims = len(kernel)
    index = np.arange(prod(shape)).reshape(shape)
    pads = geometry["pads"]
    padded = np.pad(index, [(0, 0), (0, 0)] + [(pads[i], pads[i + dims]) for i in range(dims)],
                    constant_values=-1)  # fmt: skip
    extent = [(kernel[i] - 1) * geometry["dilations"][i] + 1 for i in range(dims)]
    view = np.lib.stride_tricks.sliding_window_view(padded, extent, axis=tuple(range(2, 2 + dims)))
    picks: tuple[Any, ...] = (slice(None), slice(None))
    picks += tuple(slice(None, None, s) for s in geometry["strides"])
    picks += tuple(slice(None, None, d) for d in geometry["dilations"])
    view = view[picks]
    out_shape = view.shape[: 2 + dims]
    cells = [[int(i) for i in w.reshape(-1) if i >= 0] for w in view.reshape(prod(out_shape), -1)]
    if any(not cell for cell in cells):
        raise ctx.error("a pooling window lies wholly in the padding")
    return cells, out_shape


def _after_relu(x: Symbolic) -> bool:
    """``x`` is a Relu's output as it is (so every entry is at least 0, on any input)."""
    return (
        x.linear is None
        and not np.any(x.offset)
        and bool(x.prefix)
        and (isinstance(x.prefix[-1], ReLU))
    )


def handle_max_pool(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = max`` over each window (module docstring)."""
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise ctx.error("the Indices output is not supported")
    x = require(ctx, inputs, 0, "X")
    shape = tuple(shape_of(x))
    if len(shape) < 3 or shape[0] != 1:
        raise ctx.error(f"input must have shape (1, C, ...) with a batch of one, got {shape}")
    cells, out_shape = _windows(ctx, shape)
    if not isinstance(x, Symbolic):
        flat = floats(x).reshape(-1)
        return [np.array([flat[c].max() for c in cells]).reshape(out_shape)]
    value = extremes(x, cells, largest=True, nonnegative=_after_relu(x))
    return [value.reshaped(out_shape, batched=x.batched)]


def _elementwise(ctx: NodeContext, inputs: list[Value | None], largest: bool) -> list[Value]:
    """``Max`` / ``Min`` of the inputs, broadcast together (module docstring)."""
    parts = [v for v in inputs if v is not None]
    if not parts:
        raise ctx.error("needs at least one input")
    try:
        shape = tuple(np.broadcast_shapes(*(tuple(shape_of(v)) for v in parts)))
    except ValueError:
        raise ctx.error(f"shapes {[shape_of(v) for v in parts]} do not broadcast") from None
    if not any(isinstance(v, Symbolic) for v in parts):
        reduce = np.maximum if largest else np.minimum
        return [reduce.reduce([np.broadcast_to(floats(np.asarray(v)), shape) for v in parts])]
    aligned = align([v for v in parts if isinstance(v, Symbolic)])
    symbols, base = iter(aligned), aligned[0]
    columns, offsets = [], []
    for part in parts:
        if isinstance(part, Symbolic):
            symbol = next(symbols)
            index = np.arange(prod(symbol.shape)).reshape(symbol.shape)
            picked = symbol.select(np.broadcast_to(index, shape), batched=False)
            columns.append(sparse.csr_array(picked.flat_linear()))
            offsets.append(picked.offset.reshape(-1))
        else:
            offsets.append(np.broadcast_to(floats(part), shape).reshape(-1))
            columns.append(sparse.csr_array((base.width, offsets[-1].size)))
    stacked = base.with_map(sparse.csr_array(sparse.hstack(columns)), np.concatenate(offsets),
                            batched=False)  # fmt: skip
    size = prod(shape)
    cells = [[entry + size * k for k in range(len(parts))] for entry in range(size)]
    batched = any(isinstance(v, Symbolic) and v.batched for v in parts) and len(shape) >= 2
    return [extremes(stacked, cells, largest).reshaped(shape, batched=batched)]


def handle_max(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = max(X_1, ..., X_k)`` entry by entry, broadcast."""
    return _elementwise(ctx, inputs, largest=True)


def handle_min(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = min(X_1, ..., X_k)`` entry by entry, broadcast."""
    return _elementwise(ctx, inputs, largest=False)


def _reduce_axes(ctx: NodeContext, inputs: list[Value | None], rank: int) -> list[int] | None:
    """The axes to reduce (non-negative, sorted); ``None`` for none at all (a no-op)."""
    if ctx.opset >= 18:
        given = inputs[1] if len(inputs) > 1 else None
        axes = None if given is None else [int(a) for a in constant(ctx, given, "axes").ravel()]
        if not axes and int(ctx.attr("noop_with_empty_axes", 0)):
            return None
    else:
        attribute = ctx.attr("axes")
        axes = None if attribute is None else [int(a) for a in attribute]
    if not axes:
        return list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise ctx.error(f"axes {axes} out of range for rank {rank}")
    return sorted({a % rank for a in axes})


def _reduce(ctx: NodeContext, inputs: list[Value | None], largest: bool) -> list[Value]:
    """``ReduceMax`` / ``ReduceMin`` over the axes (module docstring)."""
    x = require(ctx, inputs, 0, "data")
    shape = tuple(shape_of(x))
    axes = _reduce_axes(ctx, inputs, len(shape))
    if axes is None:
        return [x]
    keep = bool(int(ctx.attr("keepdims", 1)))
    if not isinstance(x, Symbolic):
        reduce = np.max if largest else np.min
        return [reduce(np.asarray(x), axis=tuple(axes), keepdims=keep)]
    index = np.arange(prod(shape)).reshape(shape)
    moved = np.moveaxis(index, axes, list(range(len(shape) - len(axes), len(shape))))
    group = prod(shape[a] for a in axes)
    cells = moved.reshape(-1, group).tolist()
    rest = [d for i, d in enumerate(shape) if i not in axes]
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else rest
    batched = x.batched and (keep or 0 not in axes) and len(out) >= 2
    return [extremes(x, cells, largest).reshaped(tuple(out), batched=batched)]


def handle_reduce_max(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = max`` over the axes (all by default), keeping them as size 1 unless keepdims=0."""
    return _reduce(ctx, inputs, largest=True)


def handle_reduce_min(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = min`` over the axes (all by default), keeping them as size 1 unless keepdims=0."""
    return _reduce(ctx, inputs, largest=False)


def handle_top_k(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Values = the k largest (or smallest) entries along axis``, sorted (module docstring)."""
    if len(ctx.node.output) > 1 and ctx.node.output[1] in ctx.consumed:
        raise ctx.error(
            "its Indices output is used; only the Values are supported (sorting, GroupSort)"
        )
    x = require(ctx, inputs, 0, "X")
    k = int(constant(ctx, require(ctx, inputs, 1, "K"), "K").reshape(-1)[0])
    shape = tuple(shape_of(x))
    axis = int(ctx.attr("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise ctx.error(f"axis {axis} out of range for rank {len(shape)}")
    axis %= len(shape)
    if not 0 <= k <= shape[axis]:
        raise ctx.error(f"K = {k} is not in [0, {shape[axis]}] (the size of axis {axis})")
    largest = bool(int(ctx.attr("largest", 1)))
    index = np.moveaxis(np.arange(prod(shape)).reshape(shape), axis, -1)
    chosen = (index[..., ::-1] if largest else index)[..., :k]
    chosen = np.moveaxis(chosen, -1, axis)
    if not isinstance(x, Symbolic):
        ascending = np.sort(np.moveaxis(floats(x), axis, -1), axis=-1)
        return [np.moveaxis(ascending, -1, axis).reshape(-1)[chosen]]
    ordered = sorted_groups(x, index.reshape(-1, shape[axis]))
    return [ordered.select(chosen, batched=x.batched and len(shape) >= 2)]
