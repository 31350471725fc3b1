"""The dispatch table: one handler per supported ONNX op (default domain), by op type."""

from __future__ import annotations

from lipopt.io.onnx.context import Handler
from lipopt.io.onnx.ops_activation import handle_relu
from lipopt.io.onnx.ops_constant import (
    handle_cast,
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
from lipopt.io.onnx.ops_max import (
    handle_max,
    handle_max_pool,
    handle_min,
    handle_reduce_max,
    handle_reduce_min,
    handle_top_k,
)
from lipopt.io.onnx.ops_normalise import (
    handle_add,
    handle_batchnorm,
    handle_div,
    handle_mul,
    handle_sub,
)
from lipopt.io.onnx.ops_piecewise import (
    handle_abs,
    handle_clip,
    handle_leaky_relu,
    handle_prelu,
)
from lipopt.io.onnx.ops_shape import (
    handle_flatten,
    handle_identity,
    handle_reshape,
    handle_slice,
    handle_squeeze,
    handle_transpose,
    handle_unsqueeze,
)

__all__ = ["HINTS", "OP_HANDLERS"]

OP_HANDLERS: dict[str, Handler] = {
    "Abs": handle_abs,
    "Add": handle_add,
    "AveragePool": handle_average_pool,
    "BatchNormalization": handle_batchnorm,
    "Cast": handle_cast,
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
    "Max": handle_max,
    "MaxPool": handle_max_pool,
    "Min": handle_min,
    "Mul": handle_mul,
    "PRelu": handle_prelu,
    "ReduceMax": handle_reduce_max,
    "ReduceMean": handle_reduce_mean,
    "ReduceMin": handle_reduce_min,
    "Relu": handle_relu,
    "Reshape": handle_reshape,
    "Shape": handle_shape,
    "Slice": handle_slice,
    "Squeeze": handle_squeeze,
    "Sub": handle_sub,
    "TopK": handle_top_k,
    "Transpose": handle_transpose,
    "Unsqueeze": handle_unsqueeze,
}
"""One handler per supported ONNX op (default domain)."""

_SMOOTH = (
    "lipopt computes exact constants of piecewise-linear networks (ReLU, LeakyReLU, PReLU, "
    "Abs, Clip, Max/Min, MaxPool, sorting): replace this activation by one of those, or bound "
    "the smooth network with another tool"
)

HINTS = {
    "Softmax": "the network must end in logits: export the model without the final Softmax",
    "LogSoftmax": "the network must end in logits: export the model without the final LogSoftmax",
    # torch exports nn.GELU as x * (1 + erf(x / sqrt 2)) / 2 below opset 20: name the module
    "Erf": f"this is a GELU activation (x·Φ(x), exported through Erf), which is smooth; {_SMOOTH}",
    "Gelu": f"GELU is a smooth activation; {_SMOOTH}",
    "Tanh": f"tanh is a smooth activation; {_SMOOTH}",
    "Sigmoid": f"the sigmoid is a smooth activation; {_SMOOTH}",
    "Softplus": f"softplus is a smooth activation; {_SMOOTH}",
    "Elu": f"ELU is a smooth activation; {_SMOOTH}",
    "Selu": f"SELU is a smooth activation; {_SMOOTH}",
    "Celu": f"CELU is a smooth activation; {_SMOOTH}",
    "Mish": f"Mish is a smooth activation; {_SMOOTH}",
    "HardSigmoid": "hard sigmoid (and hard swish) are not supported yet; Clip is",
    "HardSwish": "hard swish multiplies the input by a gate, a product lipopt cannot encode",
    "ArgMax": "the index of a maximum is not a continuous function of the input; Max, "
    "ReduceMax and TopK's values are supported",
    "ArgMin": "the index of a minimum is not a continuous function of the input; Min, "
    "ReduceMin and TopK's values are supported",
}
"""Advice appended to the error for an unsupported op."""
