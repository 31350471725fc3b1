"""Import a feed-forward piecewise-linear network from ONNX into the
:class:`~lipopt.network.Network` IR.

The graph is walked in topological order (:mod:`.loader`), one handler per ONNX op
(:data:`OP_HANDLERS`, in :mod:`.handlers`; the handlers live in ``ops_*`` modules by op family).
Every tensor is either a constant (a numpy array: initializers, ``Constant`` nodes and anything
computed from them) or *symbolic* (:mod:`.symbolic`): an affine function of the network input,
stored as

    value = reshape(h @ linear, shape) + offset,

where ``h`` is the flat output of the layers built so far (the network input itself, or the output
of the last activation layer). Affine ops (Gemm, MatMul, Add/Sub/Mul/Div by constants,
BatchNormalization, reshapes, slices) only update ``linear`` and ``offset``; a ``Relu`` turns the
pending affine map into an :class:`~lipopt.network.Affine` layer followed by
:class:`~lipopt.network.ReLU`, and the other piecewise-linear ops (LeakyRelu, PRelu, Abs, Clip,
Max, Min, ReduceMax, ReduceMin, TopK, MaxPool) into activation layers of per-neuron two-piece
neurons ``h = α z + (1 - α) relu(z)`` (:class:`~lipopt.network.Activation`). Branches that meet
(residual ``Add``, ``Concat``, ``Max`` of two branches) run side by side (:mod:`.branches`).
Anything that is not piecewise linear in the single input (a product of two input-dependent
tensors, a smooth activation, the indices of a sort, ...) raises :class:`OnnxImportError`; a
wrong network is never returned.

Batch dimension: the leading dimension of a rank >= 2 input is the batch dimension. The imported
network is the map of *one* sample (batch size 1): an input of shape ``(N, 1, 8, 8)`` gives a
network with ``input_dim == 64`` that reads ``x`` in C order, and its output is the graph output
flattened in C order.

The ``onnx`` package itself is imported only when a model is read.
"""

from lipopt.io.onnx.context import OnnxImportError
from lipopt.io.onnx.handlers import OP_HANDLERS
from lipopt.io.onnx.loader import MIN_OPSET, REVIEWED_OPSET, load_onnx, max_opset, sample_shape

__all__ = [
    "MIN_OPSET",
    "OP_HANDLERS",
    "REVIEWED_OPSET",
    "OnnxImportError",
    "load_onnx",
    "sample_shape",
    "max_opset",
]
