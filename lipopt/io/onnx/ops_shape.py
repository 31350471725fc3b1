"""Reshapes that keep the values in C order: ``Identity``, ``Flatten``, ``Reshape``,
``Squeeze``, ``Unsqueeze``, ``Transpose``, and the selection ``Slice``. An input-dependent
tensor may only be flattened to ``(1, n)`` or ``(n,)``, or have unit axes added or removed; its
map ``L h + c`` is only reshaped, or (``Transpose``, ``Slice``) its columns picked."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import numpy as np
from scipy import sparse

from lipopt.io.onnx.context import NodeContext, constant, require
from lipopt.io.onnx.symbolic import Symbolic, Value, is_flat, shape_of


def handle_identity(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X``."""
    return [require(ctx, inputs, 0, "input")]


def handle_flatten(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = reshape(X, (prod(dims[:axis]), prod(dims[axis:])))``; for input-dependent X the
    result must be a flat vector ``(1, n)``."""
    x = require(ctx, inputs, 0, "input")
    shape = shape_of(x)
    rank = len(shape)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.error(f"axis {axis} out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    target = (prod(shape[:axis]), prod(shape[axis:]))
    if not isinstance(x, Symbolic):
        return [np.reshape(x, target)]
    if not is_flat(target):
        raise ctx.error(
            f"Flatten(axis={axis}) turns shape {x.shape} into {target}, which is not a flat "
            "vector; only flattening to (1, n) is supported"
        )
    return [x.reshaped(target, batched=x.batched and axis >= 1)]


def _resolve_reshape(
    ctx: NodeContext, shape: tuple[int, ...], spec: Sequence[int], batch_rule: bool
) -> tuple[int, ...]:
    """ONNX Reshape target: 0 copies a dimension (unless allowzero), -1 is inferred as
    ``prod(shape) / prod(others)``. With ``batch_rule``, a leading entry equal to the input's
    fixed batch size is the batch (size 1)."""
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


def handle_reshape(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = reshape(X, shape)`` (C order, a pure view: the map is unchanged); for
    input-dependent X a flattening to ``(n,)`` or ``(1, n)`` (e.g. shape ``(1, -1)``, ``(-1,)``,
    ``(batch, -1)``), or any shape that keeps a leading batch axis of 1 (e.g. ``(1, C, H·W)``)."""
    x = require(ctx, inputs, 0, "data")
    shape_tensor = constant(ctx, require(ctx, inputs, 1, "shape"), "the target shape")
    spec = [int(d) for d in shape_tensor.reshape(-1)]
    if not isinstance(x, Symbolic):
        const = np.asarray(x)
        return [const.reshape(_resolve_reshape(ctx, const.shape, spec, batch_rule=False))]
    target = _resolve_reshape(ctx, x.shape, spec, batch_rule=x.batched)
    keeps_batch = x.batched and len(target) >= 2 and target[0] == 1
    if not is_flat(target) and not keeps_batch:
        raise ctx.error(
            f"reshaping {x.shape} to {target} (shape {spec}) is not a flattening and does not "
            "keep a leading batch axis of 1; only such reshapes are supported"
        )
    return [x.reshaped(target, batched=x.batched and len(target) >= 2)]


def _axes(ctx: NodeContext, inputs: list[Value | None]) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, an input from 13 on."""
    if ctx.opset < 13:
        axes = ctx.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    if len(inputs) < 2 or inputs[1] is None:
        return None
    return [int(a) for a in constant(ctx, inputs[1], "axes").reshape(-1)]


def handle_squeeze(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` without the size-1 axes listed (all size-1 axes if none are given)."""
    x = require(ctx, inputs, 0, "data")
    shape = shape_of(x)
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
    if not isinstance(x, Symbolic):
        return [np.reshape(x, target)]
    return [x.reshaped(target, batched=x.batched and 0 not in drop)]


def handle_unsqueeze(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` with size-1 axes inserted at ``axes`` (positions in the output)."""
    x = require(ctx, inputs, 0, "data")
    shape = shape_of(x)
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
    if not isinstance(x, Symbolic):
        return [np.reshape(x, target)]
    return [x.reshaped(target, batched=x.batched and 0 not in insert)]


def handle_transpose(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = transpose(X, perm)`` (default: the axes reversed), a reordering of the entries."""
    x = require(ctx, inputs, 0, "data")
    rank = len(shape_of(x))
    perm = [int(p) for p in ctx.attr("perm", list(range(rank))[::-1])]
    if sorted(perm) != list(range(rank)):
        raise ctx.error(f"perm {perm} is not a permutation of the {rank} axes")
    if not isinstance(x, Symbolic):
        return [np.transpose(x, perm)]
    offset = np.transpose(x.offset, perm)
    batched = x.batched and perm[0] == 0
    if x.is_sparse or x.linear is None:  # the entries' new order, as columns of the flat map
        order = np.transpose(np.arange(x.offset.size).reshape(x.shape), perm).reshape(-1)
        return [x.with_map(sparse.csr_array(x.flat_linear()[:, order]), offset, batched)]
    linear = np.transpose(x.full_linear(), [0, *(p + 1 for p in perm)])
    return [x.with_map(linear, offset, batched)]


def _slice_range(start: int, end: int, step: int, size: int) -> range:
    """ONNX Slice's positions along one axis: negative starts/ends count from the end, then
    both are clamped (to ``[0, size]`` for a positive step, ``[-1, size - 1]`` for a negative
    one)."""
    start, end = (v + size if v < 0 else v for v in (start, end))
    if step > 0:
        return range(min(max(start, 0), size), min(max(end, 0), size), step)
    return range(min(max(start, -1), size - 1), min(max(end, -1), size - 1), step)


def _slice_spec(
    ctx: NodeContext, inputs: list[Value | None], shape: tuple[int, ...]
) -> list[range]:
    """Per axis, the positions a Slice keeps (constant starts, ends, axes and steps)."""
    starts, ends = (
        [int(v) for v in constant(ctx, require(ctx, inputs, i, n), n).reshape(-1)]
        for i, n in ((1, "starts"), (2, "ends"))
    )
    given = [inputs[i] if len(inputs) > i else None for i in (3, 4)]
    axes = list(range(len(starts))) if given[0] is None else [
        int(a) for a in constant(ctx, given[0], "axes").reshape(-1)]  # fmt: skip
    steps = [1] * len(starts) if given[1] is None else [
        int(s) for s in constant(ctx, given[1], "steps").reshape(-1)]  # fmt: skip
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("starts, ends, axes and steps differ in length")
    rank = len(shape)
    spec = [range(size) for size in shape]
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if not -rank <= axis < rank or step == 0:
            raise ctx.error(f"axis {axis} (rank {rank}) or step {step} is invalid")
        spec[axis % rank] = _slice_range(start, end, step, shape[axis % rank])
    return spec


def handle_slice(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X[starts:ends:steps]`` along ``axes`` (constants; opset 10 on): a selection of
    entries, linear: ``L[:, picked] h + c[picked]``. For an input-dependent X the batch axis
    is kept whole."""
    x = require(ctx, inputs, 0, "data")
    shape = tuple(shape_of(x))
    spec = _slice_spec(ctx, inputs, shape)
    picks = np.ix_(*[np.array(r, dtype=np.int64) for r in spec])
    index = np.arange(prod(shape)).reshape(shape)[picks]
    if not isinstance(x, Symbolic):
        return [np.asarray(x).reshape(-1)[index.reshape(-1)].reshape(index.shape)]
    if x.batched and list(spec[0]) != [0]:
        raise ctx.error("slicing along the batch axis is not supported")
    if index.size == 0:
        raise ctx.error("the slice is empty")
    return [x.select(index, batched=x.batched)]
