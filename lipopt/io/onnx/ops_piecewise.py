"""Piecewise-linear ops compiled to ReLU layers, so the network stays ``Affine (ReLU Affine)*``:

- ``LeakyRelu(α)``, ``PRelu`` (constant slopes): ``z ↦ relu(z) - α relu(-z)``, two neurons per
  entry (both switch at the one kink; where z keeps a sign on the domain, both are stable and
  neither has a binary);
- ``Clip(lo, hi)`` (hard-tanh): ``lo + relu(z - lo) - relu(z - hi)``, one neuron per kink;
- ``MaxPool`` on a Relu's output: ``max(a, b) = relu(b) + relu(a - b)`` for ``a, b >= 0``,
  pairwise over each window (``ceil(log2 |window|)`` layers); ``relu(b) = b`` is stable (its
  lower bound is 0), so only the differences ``a - b`` whose sign is open get binaries. (A
  carry ``b = relu(b) - relu(-b)`` of a signed entry would put two free binaries on every
  ``b = 0``, and on a 3x3 input the MIP then cut 1167 lower-dimensional patterns: refused.)

Each is exact: the compiled network computes the same function (checked against onnxruntime).
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from scipy import sparse

from lipopt.io.onnx.context import NodeContext, constant, require
from lipopt.io.onnx.ops_conv import pool_geometry
from lipopt.io.onnx.symbolic import FloatArray, Symbolic, Value, floats, shape_of, through_relus
from lipopt.network import ReLU


def _slopes(x: Symbolic, alpha: FloatArray, ctx: NodeContext) -> Symbolic:
    """``relu(z) - α relu(-z)`` entry by entry (``alpha`` broadcast to x's shape)."""
    n = prod(x.shape)
    try:
        slopes = np.broadcast_to(alpha, x.shape).reshape(-1)
    except ValueError:
        raise ctx.error(f"slopes of shape {alpha.shape} do not broadcast to {x.shape}") from None
    eye = sparse.identity(n, format="csr")
    pre = (sparse.vstack([eye, -eye], format="csr"), np.zeros(2 * n))
    post = (sparse.hstack([eye, -sparse.diags_array(slopes)], format="csr"), np.zeros(n))
    return through_relus(x, pre, post, x.shape)


def handle_leaky_relu(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` where ``X >= 0``, else ``alpha X`` (default alpha 0.01)."""
    x = require(ctx, inputs, 0, "X")
    alpha = float(ctx.attr("alpha", 0.01))
    if not isinstance(x, Symbolic):
        return [np.where(floats(x) >= 0, x, alpha * floats(x))]
    return [_slopes(x, np.array(alpha), ctx)]


def handle_prelu(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` where ``X >= 0``, else ``slope X``, the slopes a constant broadcast to X."""
    x = require(ctx, inputs, 0, "X")
    slope = floats(constant(ctx, require(ctx, inputs, 1, "slope"), "slope"))
    if not isinstance(x, Symbolic):
        return [np.where(floats(x) >= 0, x, slope * floats(x))]
    return [_slopes(x, slope, ctx)]


def _limit(ctx: NodeContext, inputs: list[Value | None], index: int, name: str) -> float | None:
    """Clip's ``min`` or ``max``: an input from opset 11, an attribute before."""
    if ctx.opset < 11:
        value = ctx.attr(name)
        return None if value is None else float(value)
    given = inputs[index] if len(inputs) > index else None
    if given is None:
        return None
    return float(np.asarray(constant(ctx, given, name)).reshape(-1)[0])


def handle_clip(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = min(max(X, lo), hi)`` with constant limits (either may be absent)."""
    x = require(ctx, inputs, 0, "input")
    low, high = _limit(ctx, inputs, 1, "min"), _limit(ctx, inputs, 2, "max")
    if low is not None and high is not None and low > high:
        raise ctx.error(f"min {low} is above max {high}")
    if not isinstance(x, Symbolic):
        return [np.clip(floats(x), low, high)]
    if low is None and high is None:
        return [x]
    n = prod(x.shape)
    eye = sparse.identity(n, format="csr")
    if high is None:  # lo + relu(z - lo)
        assert low is not None  # both None returned above
        return [through_relus(x, (eye, np.full(n, -low)), (eye, np.full(n, low)), x.shape)]
    if low is None:  # hi - relu(hi - z)
        return [through_relus(x, (-eye, np.full(n, high)), (-eye, np.full(n, high)), x.shape)]
    pre = (sparse.vstack([eye, eye], format="csr"),
           np.concatenate([np.full(n, -low), np.full(n, -high)]))  # fmt: skip
    post = (sparse.hstack([eye, -eye], format="csr"), np.full(n, low))
    return [through_relus(x, pre, post, x.shape)]


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
    return x.linear is None and not np.any(x.offset) and bool(x.prefix) and (
        isinstance(x.prefix[-1], ReLU)
    )


def _max_level(cells: list[list[int]], n: int) -> tuple[tuple, tuple, list[list[int]]]:
    """One ReLU layer of the pairwise maxima of non-negative entries: for each pair ``(a, b)``
    of a cell the neurons ``a - b`` and ``b`` and the value ``relu(a - b) + relu(b) = max(a, b)``
    (``relu(b) = b`` as ``b >= 0``: its neuron is stable, without a binary); an odd member
    carried as ``relu(a)``. Returns (pre, post, the next cells), the matrices sparse."""
    pre_entries: list[tuple[int, int, float]] = []  # (neuron, entry of x, weight)
    post_entries: list[tuple[int, int]] = []  # (value, neuron), weight 1
    following, neurons, values = [], 0, 0
    for cell in cells:
        members = []
        for start in range(0, len(cell), 2):
            pair = cell[start : start + 2]
            pre_entries.append((neurons, pair[-1], 1.0))  # b
            post_entries.append((values, neurons))
            neurons += 1
            if len(pair) == 2:  # a - b
                pre_entries += [(neurons, pair[0], 1.0), (neurons, pair[1], -1.0)]
                post_entries.append((values, neurons))
                neurons += 1
            members.append(values)
            values += 1
        following.append(members)
    rows, cols, weights = zip(*pre_entries)
    pre = sparse.csr_array((weights, (rows, cols)), shape=(neurons, n))
    sums, parts = zip(*post_entries)
    post = sparse.csr_array((np.ones(len(sums)), (sums, parts)), shape=(values, neurons))
    return (pre, np.zeros(neurons)), (post, np.zeros(values)), following


def handle_max_pool(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = max`` over each window, compiled to ReLU layers (module docstring)."""
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
    if not _after_relu(x):
        raise ctx.error(
            "max-pooling is supported on the output of a Relu (conv -> relu -> maxpool; the two "
            "commute, so export the model with the Relu first)"
        )
    value: Symbolic = x.reshaped((prod(shape),), batched=False)
    while any(len(cell) > 1 for cell in cells):
        pre, post, cells = _max_level(cells, prod(value.shape))
        value = through_relus(value, pre, post, (post[0].shape[0],))
    order = [cell[0] for cell in cells]  # one member left per cell
    offset = value.offset[order].reshape(out_shape)
    flat = value.flat_linear()[:, order]
    if sparse.issparse(flat):
        return [value.with_map(sparse.csr_array(flat), offset, x.batched)]
    return [value.with_map(flat.reshape((value.width, *out_shape)), offset, x.batched)]
