"""Reading an ONNX model: the file, the checker, the opset, the graph input, then the nodes in
topological order through :data:`~lipopt.io.onnx.handlers.OP_HANDLERS` into a Network."""

from __future__ import annotations

import os
from collections.abc import Container
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lipopt.io.onnx.context import NodeContext, OnnxImportError
from lipopt.io.onnx.handlers import HINTS, OP_HANDLERS
from lipopt.io.onnx.symbolic import Symbolic, Value
from lipopt.network import Network, NetworkError

if TYPE_CHECKING:
    import onnx

__all__ = ["MIN_OPSET", "REVIEWED_OPSET", "load_onnx", "max_opset"]

MIN_OPSET = 11

#: the newest opset whose definitions of the ops in OP_HANDLERS were read for this importer:
#: from 21 to 25 Constant, Flatten, Identity, Reshape, Shape, Squeeze and Unsqueeze changed
#: their type lists only (4-bit and 8-bit float and integer types), and no other handled op
#: changed at all, save for type lists again: ReduceMax/ReduceMin at 20 (booleans), TopK at 24,
#: Cast at 19 to 28 (new float types, ``saturate`` for float8 only). A model of a newer opset
#: (up to the newest the installed ``onnx`` knows, :func:`max_opset`) is read where each of its
#: ops is still defined as in this one.
REVIEWED_OPSET = 28


def max_opset() -> int:
    """The newest opset the installed ``onnx`` package knows (at least 20)."""
    import onnx.defs

    return max(int(onnx.defs.onnx_opset_version()), 20)


_DEFAULT_DOMAINS = ("", "ai.onnx")


def _read_model(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """The model from a path, serialised bytes, or a ModelProto (returned as is)."""
    import onnx

    if isinstance(source, onnx.ModelProto):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_model_from_string(bytes(source))
        except Exception as exc:
            raise OnnxImportError(f"the given bytes are not a valid ONNX model: {exc}") from exc
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise OnnxImportError(f"no such ONNX file: {str(path)!r}")
        if path.stat().st_size == 0:
            raise OnnxImportError(f"{str(path)!r} is empty, not an ONNX model")
        try:
            return onnx.load(str(path))
        except Exception as exc:
            raise OnnxImportError(f"{str(path)!r} is not a valid ONNX model: {exc}") from exc
    raise TypeError(
        f"load_onnx expects a path, bytes or an onnx.ModelProto, got {type(source).__name__}"
    )


def _check(model: onnx.ModelProto, source: object) -> None:
    """``onnx.checker`` on the model; its complaint becomes an OnnxImportError naming the file
    (``source``, when it is a path)."""
    import onnx

    what = f"{str(source)!r} is" if isinstance(source, (str, os.PathLike)) else "the model is"
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise OnnxImportError(f"{what} not a valid ONNX model: {exc}") from exc


def _opset(model: onnx.ModelProto) -> int:
    """The default-domain opset version, which must lie in ``MIN_OPSET`` to :func:`max_opset`."""
    versions = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
    if not versions:
        raise OnnxImportError("the model imports no version of the default ONNX opset")
    version = int(versions[0])
    newest = max_opset()
    if not MIN_OPSET <= version <= newest:
        raise OnnxImportError(
            f"ONNX opset {version} is not supported (supported: {MIN_OPSET} to {newest}, the "
            f"newest the installed onnx package knows); re-export the model with an opset in "
            f"that range"
        )
    return version


def _check_reviewed(op_type: str, opset: int) -> None:
    """Refuse an op whose definition at ``opset`` is newer than :data:`REVIEWED_OPSET`."""
    if opset <= REVIEWED_OPSET:
        return
    import onnx.defs

    since = int(onnx.defs.get_schema(op_type, max_inclusive_version=opset).since_version)
    if since > REVIEWED_OPSET:
        raise OnnxImportError(
            f"{op_type} changed in ONNX opset {since}, newer than this importer knows "
            f"({REVIEWED_OPSET}); re-export the model with opset {REVIEWED_OPSET} or older"
        )


def _graph_input(graph: onnx.GraphProto, values: Container[str]) -> onnx.ValueInfoProto:
    """The one graph input that is not an initializer; the graph must also have one output."""
    inputs = [i for i in graph.input if i.name not in values]
    if len(inputs) != 1:
        names = [i.name for i in inputs]
        raise OnnxImportError(
            f"the graph must have exactly one input (besides initializers), found {len(inputs)}: "
            f"{names}"
        )
    if len(graph.output) != 1:
        names = [o.name for o in graph.output]
        raise OnnxImportError(
            f"the graph must have exactly one output, found {len(graph.output)}: {names}"
        )
    return inputs[0]


def _input_symbol(value_info: onnx.ValueInfoProto) -> tuple[Symbolic, int | None]:
    """The network input as a symbolic tensor (``x = I h``, batch axis of size 1), and its
    declared fixed batch size (if any)."""
    import onnx

    float_types = {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.DOUBLE,
        onnx.TensorProto.FLOAT16,
        onnx.TensorProto.BFLOAT16,
    }
    name = value_info.name
    if not value_info.type.HasField("tensor_type"):
        raise OnnxImportError(f"graph input {name!r} is not a tensor")
    tensor_type = value_info.type.tensor_type
    if tensor_type.elem_type not in float_types:
        type_name = onnx.TensorProto.DataType.Name(tensor_type.elem_type)
        raise OnnxImportError(f"graph input {name!r} has type {type_name}, expected a float type")
    if not tensor_type.HasField("shape") or not tensor_type.shape.dim:
        raise OnnxImportError(f"graph input {name!r} needs a known shape of rank >= 1")
    dims = list(tensor_type.shape.dim)
    batch: int | None = None
    shape: list[int] = []
    for axis, dim in enumerate(dims):
        known = dim.HasField("dim_value") and dim.dim_value > 0
        if axis == 0 and len(dims) >= 2:
            batch = int(dim.dim_value) if known else None
            shape.append(1)
        elif known:
            shape.append(int(dim.dim_value))
        else:
            raise OnnxImportError(
                f"graph input {name!r}: dimension {axis} must be a fixed positive size "
                "(only the leading batch dimension may be symbolic)"
            )
    width = prod(shape)
    symbol = Symbolic((), width, None, np.zeros(shape), batched=len(dims) >= 2)
    return symbol, batch


def _sorted_nodes(graph: onnx.GraphProto, known: set[str]) -> list[onnx.NodeProto]:
    """Nodes in topological order (stable: the file's order among ready nodes)."""
    available = set(known) | {""}
    pending = list(graph.node)
    ordered: list[onnx.NodeProto] = []
    while pending:
        ready = [n for n in pending if all(i in available for i in n.input)]
        if not ready:
            node = pending[0]
            missing = [i for i in node.input if i not in available]
            raise OnnxImportError(
                f"ONNX op '{node.op_type}' at node {node.name!r}: input(s) {missing} are never "
                "produced (undefined tensor or a cycle)"
            )
        ready_ids = {id(n) for n in ready}
        for node in ready:
            ordered.append(node)
            available.update(node.output)
        pending = [n for n in pending if id(n) not in ready_ids]
    return ordered


def _unsupported(ctx: NodeContext) -> OnnxImportError:
    """The error for an op outside :data:`OP_HANDLERS`, listing the supported ops."""
    node = ctx.node
    op = node.op_type if node.domain in _DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"
    message = (
        f"unsupported ONNX op '{op}' at node {ctx.label} "
        f"(supported: {', '.join(sorted(OP_HANDLERS))})"
    )
    module = _torch_module(node.name)
    if module:
        message = f"{message}, in torch module {module!r}"
    hint = HINTS.get(node.op_type)
    return OnnxImportError(f"{message}; {hint}" if hint else message)


def _torch_module(node_name: str) -> str:
    """The PyTorch module path a node came from, read off torch's exporter's node names
    (``/features/act/Erf`` -> ``features.act``); empty for other names."""
    parts = node_name.split("/")
    if len(parts) < 3 or parts[0] != "":
        return ""
    return ".".join(part for part in parts[1:-1] if part)


def _node_inputs(ctx: NodeContext, values: dict[str, Value]) -> list[Value | None]:
    """The node's input values (``None`` for omitted ones). An input-dependent tensor may feed
    several nodes (branches); where branches meet, ``branches`` merges their layers."""
    return [values[name] if name else None for name in ctx.node.input]


def _run_node(ctx: NodeContext, values: dict[str, Value]) -> None:
    """Convert one node with its handler and store its outputs in ``values``."""
    outputs = OP_HANDLERS[ctx.node.op_type](ctx, _node_inputs(ctx, values))
    produced = list(ctx.node.output)
    if any(name in ctx.consumed for name in produced[len(outputs) :]):
        raise ctx.error(f"only {len(outputs)} output(s) supported, node has {produced}")
    for name, value in zip(produced, outputs, strict=False):
        if name:
            values[name] = value


def _network(result: Value | None, output_name: str) -> Network:
    """The layers before the output and its pending affine map: ``Affine (Act Affine)*``."""
    if not isinstance(result, Symbolic):
        raise OnnxImportError(f"the graph output {output_name!r} does not depend on the input")
    try:
        return Network.from_layers([*result.prefix, result.affine()])
    except NetworkError as exc:
        raise OnnxImportError(f"the ONNX model does not give a valid network: {exc}") from exc


def sample_shape(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> tuple[int, ...]:
    """The shape of one sample of the graph input: the input's shape without its leading batch
    dimension (rank >= 2), e.g. ``(1, 28, 28)`` for an input ``[N, 1, 28, 28]``. The network's
    input vector is such a sample flattened in C order."""
    model = _read_model(source)
    graph_input = _graph_input(model.graph, {t.name: None for t in model.graph.initializer})
    dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    return tuple(int(v) for v in (dims[1:] if len(dims) >= 2 else dims))


def load_onnx(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> Network:
    """Read an ONNX model of a feed-forward piecewise-linear network into a :class:`Network`.

    Args:
        source: a path to an ``.onnx`` file, the serialised model as bytes, or an
            ``onnx.ModelProto``.

    Returns:
        The network ``f`` of one sample: ``f(x) = vec(graph(reshape(x, input_shape)))`` with the
        batch dimension (the leading dimension of a rank >= 2 input) of size 1, in canonical
        form ``Affine (Act Affine)*`` (each activation a ReLU, or per-neuron slopes).

    Raises:
        OnnxImportError: the file is missing or not a valid ONNX model, the opset is outside
            ``MIN_OPSET`` to :func:`max_opset`, the graph has other than one input and one
            output, uses an op outside :data:`OP_HANDLERS` (or one defined anew after
            :data:`REVIEWED_OPSET`), or is not piecewise linear in its input.
    """
    from onnx import numpy_helper

    model = _read_model(source)
    _check(model, source)
    opset = _opset(model)
    graph = model.graph
    if graph.sparse_initializer:
        raise OnnxImportError("sparse initializers are not supported")
    values: dict[str, Value] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    graph_input = _graph_input(graph, values)
    symbol, batch = _input_symbol(graph_input)
    values[graph_input.name] = symbol
    output_name = graph.output[0].name
    nodes = _sorted_nodes(graph, set(values))
    consumed = frozenset({name for node in nodes for name in node.input} | {output_name})
    contexts = [NodeContext(node, i, opset, batch, consumed) for i, node in enumerate(nodes)]
    for ctx in contexts:
        if ctx.node.domain not in _DEFAULT_DOMAINS or ctx.node.op_type not in OP_HANDLERS:
            raise _unsupported(ctx)
        _check_reviewed(ctx.node.op_type, opset)
    for ctx in contexts:
        _run_node(ctx, values)
    return _network(values.get(output_name), output_name)
