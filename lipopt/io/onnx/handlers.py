"""The dispatch table: one handler per supported ONNX op (default domain), by op type."""

from __future__ import annotations

from lipopt.io.onnx.context import Handler
from lipopt.io.onnx.ops_activation import handle_relu
from lipopt.io.onnx.ops_constant import (
    handle_concat,
    handle_constant,
    handle_gather,
    handle_shape,
)
from lipopt.io.onnx.ops_conv import (
    handle_average_pool,
    handle_conv,
    handle_global_average_pool,
    handle_reduce_mean,
)
from lipopt.io.onnx.ops_linear import handle_gemm, handle_matmul
from lipopt.io.onnx.ops_normalise import (
    handle_add,
    handle_batchnorm,
    handle_div,
    handle_mul,
    handle_sub,
)
from lipopt.io.onnx.ops_piecewise import (
    handle_clip,
    handle_leaky_relu,
    handle_max_pool,
    handle_prelu,
)
from lipopt.io.onnx.ops_shape import (
    handle_flatten,
    handle_identity,
    handle_reshape,
    handle_squeeze,
    handle_transpose,
    handle_unsqueeze,
)

__all__ = ["HINTS", "OP_HANDLERS"]

OP_HANDLERS: dict[str, Handler] = {
    "Add": handle_add,
    "AveragePool": handle_average_pool,
    "BatchNormalization": handle_batchnorm,
    "Clip": handle_clip,
    "Concat": handle_concat,
    "Constant": handle_constant,
    "Conv": handle_conv,
    "Div": handle_div,
    "Flatten": handle_flatten,
    "Gather": handle_gather,
    "Gemm": handle_gemm,
    "GlobalAveragePool": handle_global_average_pool,
    "Identity": handle_identity,
    "LeakyRelu": handle_leaky_relu,
    "MatMul": handle_matmul,
    "MaxPool": handle_max_pool,
    "Mul": handle_mul,
    "PRelu": handle_prelu,
    "ReduceMean": handle_reduce_mean,
    "Relu": handle_relu,
    "Reshape": handle_reshape,
    "Shape": handle_shape,
    "Squeeze": handle_squeeze,
    "Sub": handle_sub,
    "Transpose": handle_transpose,
    "Unsqueeze": handle_unsqueeze,
}
"""One handler per supported ONNX op (default domain)."""

HINTS = {
    "Softmax": "the network must end in logits: export the model without the final Softmax",
    "LogSoftmax": "the network must end in logits: export the model without the final LogSoftmax",
}
"""Advice appended to the error for an unsupported op."""
