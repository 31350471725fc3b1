"""Convolutions and average pooling: ``Conv`` (1-D, 2-D, 3-D; strides, pads, dilations, groups),
``AveragePool`` and ``GlobalAveragePool``. Each is linear in its input, so on an input-dependent
tensor ``L h + c`` it maps the pending map: ``conv(L h + c) = (L C^T) h + conv(c)`` with ``C``
the convolution's sparse matrix (:func:`conv_matrix`, built from index arithmetic: a kernel
entry per window cell), so a 28x28 image never becomes a dense matrix; constants and offsets
are convolved in numpy (:func:`convolve`)."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import sparse

from lipopt.io.onnx.context import NodeContext, constant, require
from lipopt.io.onnx.symbolic import FloatArray, Symbolic, Value, floats, shape_of


def convolve(
    images: FloatArray, kernel: FloatArray, geometry: dict[str, Any], groups: int
) -> FloatArray:
    """ONNX ``Conv`` without bias on ``images`` of shape ``(n, C, *spatial)`` and ``kernel`` of
    shape ``(M, C / groups, *k)``: ``y[n, m, o] = Σ_{c in m's group, j} x[n, c, o·s + j·d] w[m,
    c, j]`` over the zero-padded images (``geometry``: ``strides``, ``dilations``, ``pads``)."""
    dims = kernel.ndim - 2
    windows = _windows(images, kernel.shape[2:], geometry, 0.0)  # (n, C, *out, *k)
    channels, filters = images.shape[1] // groups, kernel.shape[0] // groups
    summed = [1, *range(2 + dims, 2 + 2 * dims)]
    parts = [
        np.tensordot(
            windows[:, g * channels : (g + 1) * channels],
            kernel[g * filters : (g + 1) * filters],
            axes=(summed, [1, *range(2, 2 + dims)]),
        )
        for g in range(groups)
    ]  # each (n, *out, filters)
    return np.moveaxis(np.concatenate(parts, axis=-1), -1, 1)


def _windows(images: Any, kernel: tuple[int, ...], geometry: dict[str, Any], fill: Any) -> Any:
    """Each output cell's window of ``images`` (n, C, *spatial), padded with ``fill``:
    shape ``(n, C, *out, *kernel)``."""
    dims = len(kernel)
    strides, dilations, pads = geometry["strides"], geometry["dilations"], geometry["pads"]
    padding = [(0, 0), (0, 0)] + [(pads[i], pads[i + dims]) for i in range(dims)]
    padded = np.pad(images, padding, constant_values=fill)
    extent = [(kernel[i] - 1) * dilations[i] + 1 for i in range(dims)]
    windows = sliding_window_view(padded, extent, axis=tuple(range(2, 2 + dims)))
    picks: tuple[Any, ...] = (slice(None), slice(None))
    picks += tuple(slice(None, None, s) for s in strides)
    picks += tuple(slice(None, None, d) for d in dilations)
    return windows[picks]


def conv_matrix(
    shape: tuple[int, ...], kernel: FloatArray, geometry: dict[str, Any], groups: int
) -> sparse.csr_array:
    """The matrix ``C`` of ``convolve`` on one image of shape ``shape = (C, *spatial)``:
    ``vec(conv(x)) = C vec(x)`` (C order), one entry per kernel weight and window cell inside
    the image."""
    index = np.arange(prod(shape)).reshape((1, *shape))
    cells = _windows(index, kernel.shape[2:], geometry, -1)[0]  # (C, *out, *k): input indices
    out_cells, taps = prod(cells.shape[1 : cells.ndim - kernel.ndim + 2]), prod(kernel.shape[2:])
    channels, filters = shape[0] // groups, kernel.shape[0] // groups
    rows, cols, values = [], [], []
    for g in range(groups):
        read = cells[g * channels : (g + 1) * channels].reshape(1, channels, out_cells, taps)
        weight = kernel[g * filters : (g + 1) * filters].reshape(filters, channels, 1, taps)
        row = (g * filters + np.arange(filters)).reshape(-1, 1, 1, 1) * out_cells
        row = row + np.arange(out_cells).reshape(1, 1, -1, 1)
        full = (filters, channels, out_cells, taps)
        read, weight, row = (np.broadcast_to(a, full) for a in (read, weight, row))
        keep = (read >= 0) & (weight != 0.0)
        rows.append(row[keep])
        cols.append(read[keep])
        values.append(weight[keep])
    entries = (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols)))
    return sparse.csr_array(entries, shape=(kernel.shape[0] * out_cells, prod(shape)))


def _geometry(ctx: NodeContext, spatial: tuple[int, ...], kernel: tuple[int, ...]) -> dict:
    """Strides, dilations and begin/end pads of a Conv or pool node (``auto_pad`` resolved as
    ONNX defines it: SAME pads the total ``(ceil(in/s) - 1) s + extent - in``, the odd cell at
    the end for SAME_UPPER, at the start for SAME_LOWER)."""
    dims = len(kernel)
    strides = [int(s) for s in ctx.attr("strides", [1] * dims)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * dims)]
    if len(strides) != dims or len(dilations) != dims:
        raise ctx.error(f"strides and dilations must have {dims} entries")
    auto = ctx.attr("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    pads = [int(p) for p in ctx.attr("pads", [0] * (2 * dims))]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * dims)
        for i in range(dims):
            extent = (kernel[i] - 1) * dilations[i] + 1
            total = max((-(-spatial[i] // strides[i]) - 1) * strides[i] + extent - spatial[i], 0)
            small, large = total // 2, total - total // 2
            pads[i], pads[i + dims] = (small, large) if auto == "SAME_UPPER" else (large, small)
    elif auto == "VALID":
        pads = [0] * (2 * dims)
    elif auto != "NOTSET":
        raise ctx.error(f"auto_pad={auto!r} is not supported")
    if len(pads) != 2 * dims or min(pads) < 0:
        raise ctx.error(f"pads must be {2 * dims} non-negative numbers, got {pads}")
    return {"strides": strides, "dilations": dilations, "pads": pads}


def pool_geometry(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[tuple[int, ...], dict]:
    """A pooling node's ``kernel_shape`` (checked against the input's shape) and geometry
    (:func:`_geometry`); ``ceil_mode=1`` is refused."""
    kernel = tuple(int(k) for k in ctx.attr("kernel_shape", []))
    if len(kernel) != len(shape) - 2 or not kernel:
        raise ctx.error(f"kernel_shape {kernel} does not fit input of shape {shape}")
    if int(ctx.attr("ceil_mode", 0)):
        raise ctx.error("ceil_mode=1 is not supported (export with ceil_mode=False)")
    return kernel, _geometry(ctx, shape[2:], kernel)


def _apply(
    ctx: NodeContext, x: Value, linear_map: Any, shift: FloatArray | None, matrix: Any
) -> Value:
    """``linear_map`` (on ``(n, C, *spatial)`` images) applied to ``x``, plus ``shift``; on an
    input-dependent ``x`` through ``matrix(sample shape)``, its sparse matrix."""
    shape = shape_of(x)
    if len(shape) < 3 or shape[0] != 1:
        raise ctx.error(f"input must have shape (1, C, ...) with a batch of one, got {shape}")
    if not isinstance(x, Symbolic):
        out = linear_map(floats(x))
        return out if shift is None else out + shift
    offset = linear_map(x.offset)
    offset = offset if shift is None else offset + shift
    product = x.flat_linear() @ matrix(tuple(shape[1:])).T
    if sparse.issparse(product):
        return x.with_map(sparse.csr_array(product), offset, x.batched)
    return x.with_map(np.asarray(product).reshape((x.width, *offset.shape)), offset, x.batched)


def handle_conv(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = conv(X, W) + B``: ``X`` of shape (1, C, *spatial), ``W`` constant."""
    x = require(ctx, inputs, 0, "X")
    kernel = floats(constant(ctx, require(ctx, inputs, 1, "W"), "the kernel W"))
    bias = inputs[2] if len(inputs) > 2 else None
    shape = shape_of(x)
    groups = int(ctx.attr("group", 1))
    if kernel.ndim != len(shape) or kernel.ndim < 3:
        raise ctx.error(f"kernel of shape {kernel.shape} does not fit input of shape {shape}")
    if groups < 1 or shape[1] % groups or kernel.shape[0] % groups:
        raise ctx.error(f"group={groups} does not divide {shape[1]} channels and "
                        f"{kernel.shape[0]} filters")  # fmt: skip
    if kernel.shape[1] * groups != shape[1]:
        raise ctx.error(f"kernel expects {kernel.shape[1] * groups} channels, input has {shape[1]}")
    declared = ctx.attr("kernel_shape")
    if declared is not None and tuple(declared) != kernel.shape[2:]:
        raise ctx.error(f"kernel_shape {tuple(declared)} differs from W's {kernel.shape[2:]}")
    geometry = _geometry(ctx, shape[2:], kernel.shape[2:])
    shift = None
    if bias is not None:
        b = floats(constant(ctx, bias, "the bias B")).reshape(-1)
        if b.size != kernel.shape[0]:
            raise ctx.error(f"bias has {b.size} entries for {kernel.shape[0]} filters")
        shift = b.reshape((1, -1, *([1] * (kernel.ndim - 2))))
    return [_apply(ctx, x, lambda v: convolve(v, kernel, geometry, groups), shift,
                   lambda sample: conv_matrix(sample, kernel, geometry, groups))]  # fmt: skip


def handle_average_pool(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``AveragePool``: the mean over each window, a depthwise convolution by ``1/|window|``
    (``count_include_pad=0``, the default: the pads are left out of the count)."""
    x = require(ctx, inputs, 0, "X")
    shape = tuple(shape_of(x))
    kernel, geometry = pool_geometry(ctx, shape)
    channels = shape[1]
    ones = np.ones((channels, 1, *kernel))
    if int(ctx.attr("count_include_pad", 0)):
        counts: Any = float(prod(kernel))
    else:  # how many cells of each window are inside the image
        counts = convolve(np.ones((1, channels, *shape[2:])), ones, geometry, channels)

    def mean(images: FloatArray) -> FloatArray:
        return convolve(images, ones, geometry, channels) / counts

    def matrix(sample: tuple[int, ...]) -> sparse.csr_array:
        sums = conv_matrix(sample, ones, geometry, channels)
        per_row = np.broadcast_to(counts, (1, *mean(np.zeros((1, *sample))).shape[1:]))
        return sparse.csr_array(sparse.diags_array(1.0 / per_row.reshape(-1)) @ sums)

    return [_apply(ctx, x, mean, None, matrix)]


def handle_global_average_pool(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``GlobalAveragePool``: the mean over all spatial axes, shape (1, C, 1, ..., 1)."""
    x = require(ctx, inputs, 0, "X")
    axes = tuple(range(2, len(shape_of(x))))

    def matrix(sample: tuple[int, ...]) -> sparse.csr_array:
        cells = prod(sample[1:])  # row c averages the entries c·cells .. (c+1)·cells - 1
        rows = np.repeat(np.arange(sample[0]), cells)
        values = np.full(prod(sample), 1.0 / cells)
        return sparse.csr_array((values, (rows, np.arange(prod(sample)))),
                                shape=(sample[0], prod(sample)))  # fmt: skip

    return [_apply(ctx, x, lambda v: v.mean(axis=axes, keepdims=True), None, matrix)]


def handle_reduce_mean(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``ReduceMean`` over ``axes`` (an attribute before opset 18, an input from 18; all axes
    when none are given, unless ``noop_with_empty_axes``), as the dynamo exporter writes global
    average pooling; a mean is linear."""
    x = require(ctx, inputs, 0, "data")
    rank = len(shape_of(x))
    given = inputs[1] if len(inputs) > 1 else None
    if given is not None:
        axes = [int(a) for a in np.asarray(constant(ctx, given, "axes")).reshape(-1)]
    else:
        axes = [int(a) for a in ctx.attr("axes", [])]
    if not axes:
        if int(ctx.attr("noop_with_empty_axes", 0)):
            return [x]
        axes = list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise ctx.error(f"axes {axes} out of range for rank {rank}")
    axes = sorted({a % rank for a in axes})
    keep = bool(int(ctx.attr("keepdims", 1)))
    if not isinstance(x, Symbolic):
        return [np.mean(floats(x), axis=tuple(axes), keepdims=keep)]
    if 0 in axes and not keep:
        raise ctx.error("averaging away the batch axis is not supported")
    offset = np.mean(x.offset, axis=tuple(axes), keepdims=keep)
    batched = x.batched and 0 not in axes
    if x.is_sparse or x.linear is None:
        mean = sparse.csr_array(x.flat_linear() @ _mean_matrix(x.shape, axes).T)
        return [x.with_map(mean, offset, batched)]
    linear = np.mean(x.full_linear(), axis=tuple(a + 1 for a in axes), keepdims=keep)
    return [x.with_map(linear, offset, batched)]


def _mean_matrix(shape: tuple[int, ...], axes: list[int]) -> sparse.csr_array:
    """The matrix of the mean over ``axes`` (C order, the kept shape's cells as rows)."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    coords = np.indices(shape).reshape(len(shape), -1)
    coords[list(axes)] = 0
    rows = np.ravel_multi_index(tuple(coords), kept)
    values = np.full(prod(shape), prod(kept) / prod(shape))
    columns = np.arange(prod(shape))
    return sparse.csr_array((values, (rows, columns)), shape=(prod(kept), prod(shape)))
