"""Matrix products: ``MatMul`` (``Y = A @ B``) and ``Gemm`` (``Y = alpha A' B' + beta C``), with
at most one operand depending on the network input, so the result stays affine in it."""

from __future__ import annotations

from math import prod

import numpy as np

from lipopt.io.onnx.context import NodeContext, OnnxImportError, elementwise, require, scale
from lipopt.io.onnx.symbolic import FloatArray, Symbolic, Value, floats, shape_of


def _transpose(value: Value) -> Value:
    """Transpose of a 2-D tensor (Gemm's transA/transB): ``(L h + c)^T = L^T h + c^T``."""
    if not isinstance(value, Symbolic):
        return np.asarray(value).T
    rows, cols = value.shape
    if rows == 1 or cols == 1:  # the same data in C order
        return value.reshaped((cols, rows), batched=False)
    return value.with_map(np.swapaxes(value.full_linear(), 1, 2), value.offset.T, batched=False)


def matmul(ctx: NodeContext, a: Value, b: Value) -> Value:
    """``A @ B`` with numpy (= ONNX MatMul) semantics, at most one operand input-dependent."""
    if isinstance(a, Symbolic) and isinstance(b, Symbolic):
        raise ctx.error(
            "both operands depend on the network input (a product of two input-dependent "
            "tensors is not affine)"
        )
    try:
        if isinstance(a, Symbolic):
            return _sym_matmul_const(ctx, a, floats(np.asarray(b)))
        if isinstance(b, Symbolic):
            return _const_matmul_sym(ctx, floats(np.asarray(a)), b)
        return np.matmul(a, b)
    except OnnxImportError:
        raise
    except ValueError as exc:
        shape_a, shape_b = shape_of(a), shape_of(b)
        raise ctx.error(f"operand shapes {shape_a} and {shape_b} do not match") from exc


def _sym_matmul_const(ctx: NodeContext, x: Symbolic, weight: FloatArray) -> Symbolic:
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
    elif x.is_sparse and prod(lead) == 1:  # a flat sparse map: one sparse-dense product
        product = np.asarray(x.flat_linear() @ weight.reshape(weight.shape[0], -1))
        linear = product.reshape((x.width, *lead, *weight.shape[1:]))
    else:
        # one matrix product (numpy would loop over the stacked leading axes)
        full = x.full_linear()
        linear = (full.reshape(-1, weight.shape[0]) @ weight).reshape(
            (x.width, *lead, *weight.shape[1:])
        )
    batched = x.batched and len(x.shape) >= 2
    return x.with_map(linear, offset, batched)


def _const_matmul_sym(ctx: NodeContext, weight: FloatArray, x: Symbolic) -> Symbolic:
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


def handle_matmul(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = A @ B`` (numpy semantics); the constant operand must be 1-D or 2-D."""
    a = require(ctx, inputs, 0, "A")
    b = require(ctx, inputs, 1, "B")
    return [matmul(ctx, a, b)]


def handle_gemm(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = alpha * A' @ B' + beta * C``, ``A' = A^T`` if transA, ``B' = B^T`` if transB;
    C (optional) broadcasts to the shape of ``A' @ B'``."""
    a = require(ctx, inputs, 0, "A")
    b = require(ctx, inputs, 1, "B")
    c = inputs[2] if len(inputs) > 2 else None
    alpha = float(ctx.attr("alpha", 1.0))
    beta = float(ctx.attr("beta", 1.0))
    for value, what in ((a, "A"), (b, "B")):
        shape = shape_of(value)
        if len(shape) != 2:
            raise ctx.error(f"Gemm needs a 2-D {what}, got shape {tuple(shape)}")
    if sum(isinstance(v, Symbolic) for v in (a, b, c)) > 1:
        raise ctx.error(
            "more than one operand depends on the network input (a product of two is not affine)"
        )
    if int(ctx.attr("transA", 0)):
        a = _transpose(a)
    if int(ctx.attr("transB", 0)):
        b = _transpose(b)
    product = scale(matmul(ctx, a, b), alpha)
    if c is None or (beta == 0.0 and not isinstance(c, Symbolic)):
        return [product]
    c_scaled = scale(c, beta)
    if isinstance(product, Symbolic):
        return [elementwise(ctx, product, np.asarray(c_scaled), np.add, scales=False)]
    if isinstance(c_scaled, Symbolic):
        return [elementwise(ctx, c_scaled, product, np.add, scales=False)]
    return [np.add(product, c_scaled)]
