"""Elementwise affine ops and normalisation: ``Add``, ``Sub``, ``Mul``, ``Div`` with one constant
operand (biases, input normalisation ``(x - mean) / std``) and inference-mode
``BatchNormalization``, all folded into the pending map: ``op(L h + c, k)`` stays affine in h.
``Add`` and ``Sub`` of two input-dependent tensors (residual connections) merge the branches
(``branches``)."""

from __future__ import annotations

import numpy as np

from lipopt.io.onnx.branches import broadcast_sum
from lipopt.io.onnx.context import NodeContext, constant, elementwise, require, scale
from lipopt.io.onnx.symbolic import Array, Symbolic, Value, floats, shape_of


def _operands(ctx: NodeContext, inputs: list[Value | None]) -> tuple[Value, Value]:
    """``A`` and ``B`` of a binary op; at most one may depend on the network input."""
    a, b = _both(ctx, inputs)
    if isinstance(a, Symbolic) and isinstance(b, Symbolic):
        raise ctx.error(
            "both operands depend on the network input (a product or quotient of two "
            "input-dependent tensors is not piecewise linear)"
        )
    return a, b


def _both(ctx: NodeContext, inputs: list[Value | None]) -> tuple[Value, Value]:
    return require(ctx, inputs, 0, "A"), require(ctx, inputs, 1, "B")


def _branch_sum(ctx: NodeContext, a: Symbolic, b: Symbolic, sign: float) -> Symbolic:
    """``A + sign B`` of two input-dependent tensors: a residual connection (``branches``)."""
    total = broadcast_sum(a, b, sign)
    if total is None:
        raise ctx.error(
            f"the input-dependent operands of shapes {a.shape} and {b.shape} do not broadcast "
            "without replicating one of them"
        )
    return total


def handle_add(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``C = A + B`` (broadcasting); affine when one operand is constant, a residual
    connection when both depend on the input."""
    a, b = _both(ctx, inputs)
    if isinstance(a, Symbolic) and isinstance(b, Symbolic):
        return [_branch_sum(ctx, a, b, 1.0)]
    if isinstance(a, Symbolic):
        return [elementwise(ctx, a, np.asarray(b), np.add, scales=False)]
    if isinstance(b, Symbolic):
        return [elementwise(ctx, b, np.asarray(a), np.add, scales=False)]
    return [np.add(np.asarray(a), np.asarray(b))]


def handle_sub(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``C = A - B`` (broadcasting); affine when one operand is constant: ``k - x = (-x) + k``;
    the difference of two branches when both depend on the input."""
    a, b = _both(ctx, inputs)
    if isinstance(a, Symbolic) and isinstance(b, Symbolic):
        return [_branch_sum(ctx, a, b, -1.0)]
    if isinstance(a, Symbolic):
        return [elementwise(ctx, a, np.asarray(b), np.subtract, scales=False)]
    if isinstance(b, Symbolic):
        negated = scale(b, -1.0)
        assert isinstance(negated, Symbolic)
        return [elementwise(ctx, negated, np.asarray(a), np.add, scales=False)]
    return [np.subtract(np.asarray(a), np.asarray(b))]


def handle_mul(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``C = A * B`` (broadcasting); affine when one operand is constant."""
    a, b = _operands(ctx, inputs)
    if isinstance(a, Symbolic):
        return [elementwise(ctx, a, np.asarray(b), np.multiply, scales=True)]
    if isinstance(b, Symbolic):
        return [elementwise(ctx, b, np.asarray(a), np.multiply, scales=True)]
    return [np.multiply(np.asarray(a), np.asarray(b))]


def handle_div(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``C = A / B`` (broadcasting); affine when ``B`` is a constant without zeros. Two integer
    constants divide C-style (truncated towards zero)."""
    a, b = _operands(ctx, inputs)
    if isinstance(b, Symbolic):
        raise ctx.error("division by an input-dependent tensor is not affine")
    const = np.asarray(b)
    if isinstance(a, Symbolic):
        if np.any(floats(const) == 0):
            raise ctx.error("division by a constant that contains zeros")
        return [elementwise(ctx, a, const, np.true_divide, scales=True)]
    return [_fold_div(np.asarray(a), const)]


def _fold_div(a: Array, b: Array) -> Array:
    """``a / b`` of two constants, truncated towards zero when both are integers."""
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))  # C-style
    return np.true_divide(a, b)


def handle_batchnorm(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """Inference-mode ``Y = (X - mean) / sqrt(var + epsilon) * scale + B`` per channel (axis 1),
    folded into ``Y = X * a + b``."""
    if int(ctx.attr("training_mode", 0)):
        raise ctx.error("training_mode=1 is not supported (export the model in eval mode)")
    if any(name for name in ctx.node.output[1:]):
        raise ctx.error("the running-statistics outputs are not supported (training mode)")
    x = require(ctx, inputs, 0, "X")
    names = ("scale", "B", "input_mean", "input_var")
    weight, bias, mean, var = (
        floats(constant(ctx, require(ctx, inputs, i + 1, n), n)) for i, n in enumerate(names)
    )
    epsilon = float(ctx.attr("epsilon", 1e-5))
    shape = shape_of(x)
    if len(shape) < 2:
        raise ctx.error(f"input must have shape (N, C, ...), got {tuple(shape)}")
    channels = shape[1]
    if any(p.shape != (channels,) for p in (weight, bias, mean, var)):
        raise ctx.error(f"parameters must have shape ({channels},)")
    factor = weight / np.sqrt(var + epsilon)
    shift = bias - mean * factor
    per_channel = (channels, *([1] * (len(shape) - 2)))
    factor, shift = factor.reshape(per_channel), shift.reshape(per_channel)
    if not isinstance(x, Symbolic):
        return [floats(x) * factor + shift]
    scaled = elementwise(ctx, x, factor, np.multiply, scales=True)
    return [elementwise(ctx, scaled, shift, np.add, scales=False)]
