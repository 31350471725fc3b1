"""Elementwise piecewise-linear ops as per-neuron two-piece activations
``h = α z + (1 - α) relu(z)`` (:mod:`lipopt.activation`), one neuron per entry where one kink
suffices:

- ``LeakyRelu(α)``, ``PRelu`` (constant slopes): one neuron per entry with its slope ``α`` (one
  binary where its sign is open; slope 0 is a ReLU, slope 1 the identity, which is no neuron);
- ``Abs``: one neuron per entry with ``α = -1``;
- ``Clip(lo, hi)`` (hard-tanh) has two kinks, so it stays two ReLU neurons, one per kink:
  ``lo + relu(z - lo) - relu(z - hi)``. A native two-kink kind would save no binary (each kink
  whose side is open on the domain needs one either way) and would give every later stage a
  second activation family to read; the two neurons are ReLUs, which every stage already takes.

Max-pooling and the other maxima live in :mod:`.ops_max`. Each is exact: the compiled network
computes the same function (checked against onnxruntime).
"""

from __future__ import annotations

from math import prod

import numpy as np
from scipy import sparse

from lipopt.activation import ABS
from lipopt.io.onnx.context import NodeContext, constant, require
from lipopt.io.onnx.symbolic import (
    FloatArray,
    Symbolic,
    Value,
    floats,
    through_activation,
    through_relus,
)


def _two_piece(x: Symbolic, alpha: FloatArray, ctx: NodeContext) -> Symbolic:
    """``α z + (1 - α) relu(z)`` entry by entry (``alpha`` broadcast to x's shape): one neuron
    per entry (none at all when every slope is 1)."""
    try:
        slopes = np.broadcast_to(alpha, x.shape).reshape(-1).astype(np.float64)
    except ValueError:
        raise ctx.error(f"slopes of shape {alpha.shape} do not broadcast to {x.shape}") from None
    if np.all(slopes == 1.0):
        return x
    n = prod(x.shape)
    eye = sparse.identity(n, format="csr")
    return through_activation(x, (eye, np.zeros(n)), slopes, (eye, np.zeros(n)), x.shape)


def handle_leaky_relu(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` where ``X >= 0``, else ``alpha X`` (default alpha 0.01)."""
    x = require(ctx, inputs, 0, "X")
    alpha = float(ctx.attr("alpha", 0.01))
    if not isinstance(x, Symbolic):
        return [np.where(floats(x) >= 0, x, alpha * floats(x))]
    return [_two_piece(x, np.array(alpha), ctx)]


def handle_prelu(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = X`` where ``X >= 0``, else ``slope X``, the slopes a constant broadcast to X."""
    x = require(ctx, inputs, 0, "X")
    slope = floats(constant(ctx, require(ctx, inputs, 1, "slope"), "slope"))
    if not isinstance(x, Symbolic):
        return [np.where(floats(x) >= 0, x, slope * floats(x))]
    return [_two_piece(x, slope, ctx)]


def handle_abs(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = |X|``: one neuron per entry with slope ``α = -1``."""
    x = require(ctx, inputs, 0, "X")
    if not isinstance(x, Symbolic):
        return [np.abs(x)]
    return [_two_piece(x, np.array(ABS), ctx)]


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
