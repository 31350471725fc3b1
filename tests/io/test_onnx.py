"""Tests for lipopt.io.onnx: every supported op against onnxruntime, torch exports, rejections."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lipopt.io import OnnxImportError, load_onnx
from lipopt.io.onnx import max_opset
from lipopt.network import Network
from tests.helpers import random_network, save_onnx

OPSETS = (11, 13, 17, 20)
TOL = 1e-5


# ---------------------------------------------------------------------------- graph builders
def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _init(name: str, array: Any, dtype: Any = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array, dtype=dtype), name)


def _tensor(
    name: str, shape: Sequence[int | str] | None, elem: int = TensorProto.FLOAT
) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(
    nodes: Sequence[onnx.NodeProto],
    input_shape: Sequence[int | str],
    initializers: Sequence[onnx.TensorProto] = (),
    opset: int = 17,
    inputs: Sequence[onnx.ValueInfoProto] | None = None,
    outputs: Sequence[str | onnx.ValueInfoProto] = ("y",),
) -> onnx.ModelProto:
    """A model with graph input ``x`` of ``input_shape`` and the given outputs.

    Output shapes (which the checker requires) come from ONNX shape inference; where that fails
    (graphs built to be rejected) the output is declared as a float matrix of unknown size.
    """
    graph = helper.make_graph(
        list(nodes),
        "g",
        list(inputs) if inputs is not None else [_tensor("x", input_shape)],
        [o if isinstance(o, onnx.ValueInfoProto) else _tensor(o, None) for o in outputs],
        list(initializers),
    )
    opset_id = helper.make_opsetid("", opset)
    model = helper.make_model(
        graph,
        opset_imports=[opset_id],
        ir_version=helper.find_min_ir_version_for([opset_id]),
    )
    model = onnx.shape_inference.infer_shapes(model)
    for output in model.graph.output:
        if not output.type.tensor_type.HasField("shape"):
            output.CopyFrom(_tensor(output.name, ["rows", "cols"]))
    return model


def _mlp_tail(source: str, width: int, seed: int = 1) -> tuple[list, list]:
    """Nodes ``y = W2 relu(W1 source + b1) + b2`` (Gemm, transB=1) reading a (1, width) tensor."""
    nodes = [
        helper.make_node("Gemm", [source, "W1", "b1"], ["h"], transB=1, name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu1"),
        helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1, name="fc2"),
    ]
    inits = [
        _init("W1", _rand(5, width, seed=seed)),
        _init("b1", _rand(5, seed=seed + 1)),
        _init("W2", _rand(3, 5, seed=seed + 2)),
        _init("b2", _rand(3, seed=seed + 3)),
    ]
    return nodes, inits


def _run_ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return np.asarray(session.run(None, {name: x})[0])


def _assert_matches_ort(
    model: onnx.ModelProto, feed_shape: Sequence[int], trials: int = 3
) -> Network:
    """load_onnx(model) agrees with onnxruntime on random inputs of ``feed_shape``."""
    net = load_onnx(model)
    for trial in range(trials):
        x = _rand(*feed_shape, seed=100 + trial)
        expected = _run_ort(model, x)
        if len(feed_shape) >= 2:
            samples = feed_shape[0]
            got = net.forward(x.reshape(samples, -1))
            np.testing.assert_allclose(got, expected.reshape(samples, -1), rtol=TOL, atol=TOL)
        else:
            got = net.forward(x)
            np.testing.assert_allclose(got, expected.reshape(-1), rtol=TOL, atol=TOL)
    return net


# ---------------------------------------------------------------------------- Gemm
def _gemm_plain() -> tuple:
    nodes = [helper.make_node("Gemm", ["x", "B", "C"], ["y"], name="gemm")]
    inits = [_init("B", _rand(4, 3)), _init("C", _rand(3, seed=1))]
    return nodes, inits, ["N", 4], (5, 4)


def _gemm_trans_b_alpha_beta_row_bias() -> tuple:
    nodes = [
        helper.make_node(
            "Gemm", ["x", "B", "C"], ["y"], transB=1, alpha=0.5, beta=-2.0, name="gemm"
        )
    ]
    inits = [_init("B", _rand(3, 4)), _init("C", _rand(1, 3, seed=1))]
    return nodes, inits, ["N", 4], (5, 4)


def _gemm_no_bias() -> tuple:
    nodes = [helper.make_node("Gemm", ["x", "B"], ["y"], alpha=1.5, name="gemm")]
    return nodes, [_init("B", _rand(4, 3))], ["N", 4], (5, 4)


def _gemm_scalar_bias() -> tuple:
    nodes = [helper.make_node("Gemm", ["x", "B", "C"], ["y"], beta=0.25, name="gemm")]
    return nodes, [_init("B", _rand(4, 3)), _init("C", 0.7)], ["N", 4], (5, 4)


def _gemm_one_by_one_bias() -> tuple:
    nodes = [helper.make_node("Gemm", ["x", "B", "C"], ["y"], name="gemm")]
    return nodes, [_init("B", _rand(4, 3)), _init("C", [[0.7]])], [1, 4], (1, 4)


def _gemm_weight_first_trans_a() -> tuple:
    # Y = A^T x^T + C: the weight is the first operand, the input is transposed (1, 4) -> (4, 1)
    nodes = [
        helper.make_node("Gemm", ["A", "x", "C"], ["y"], transA=1, transB=1, name="gemm"),
    ]
    inits = [_init("A", _rand(4, 3)), _init("C", _rand(3, 1, seed=1))]
    return nodes, inits, [1, 4], (1, 4)


def _gemm_input_trans_a() -> tuple:
    # A = x (1, 4), A^T (4, 1) @ B (1, 3): an outer product, linear in x
    nodes = [helper.make_node("Gemm", ["x", "B", "C"], ["y"], transA=1, name="gemm")]
    inits = [_init("B", _rand(1, 3)), _init("C", _rand(3, seed=1))]
    return nodes, inits, [1, 4], (1, 4)


def _with_axes(op: str, src: str, dst: str, axes: list[int], opset: int) -> list[onnx.NodeProto]:
    """Squeeze/Unsqueeze with ``axes`` as an attribute (opset < 13) or an input (opset >= 13)."""
    name = f"{op.lower()}_{dst}"
    if opset < 13:
        return [helper.make_node(op, [src], [dst], axes=axes, name=name)]
    axes_tensor = numpy_helper.from_array(np.asarray(axes, dtype=np.int64))
    return [
        helper.make_node("Constant", [], [f"{dst}_axes"], value=axes_tensor),
        helper.make_node(op, [src, f"{dst}_axes"], [dst], name=name),
    ]


def _gemm_input_trans_a_square(opset: int) -> tuple:
    # A = x squeezed to (2, 3): A^T (3, 2) @ B (2, 4), a genuine transpose of the input
    nodes = [
        *_with_axes("Squeeze", "x", "a", [0, 1], opset),
        helper.make_node("Gemm", ["a", "B"], ["y"], transA=1, name="gemm"),
    ]
    return nodes, [_init("B", _rand(2, 4))], [1, 1, 2, 3], (1, 1, 2, 3)


def _gemm_input_as_bias() -> tuple:
    # Y = A @ B + 3 x with constant A, B: affine in x through C
    nodes = [helper.make_node("Gemm", ["A", "B", "x"], ["y"], beta=3.0, name="gemm")]
    inits = [_init("A", _rand(1, 2)), _init("B", _rand(2, 4, seed=1))]
    return nodes, inits, [1, 4], (1, 4)


GEMM_CASES: dict[str, Callable[[], tuple]] = {
    "plain": _gemm_plain,
    "transB_alpha_beta_row_bias": _gemm_trans_b_alpha_beta_row_bias,
    "no_bias": _gemm_no_bias,
    "scalar_bias": _gemm_scalar_bias,
    "one_by_one_bias": _gemm_one_by_one_bias,
    "weight_first_transA_transB": _gemm_weight_first_trans_a,
    "input_transA": _gemm_input_trans_a,
    "input_as_bias": _gemm_input_as_bias,
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_load_onnx_gemm_matches_onnxruntime(case: str, opset: int) -> None:
    nodes, inits, input_shape, feed_shape = GEMM_CASES[case]()
    _assert_matches_ort(_model(nodes, input_shape, inits, opset=opset), feed_shape)


@pytest.mark.parametrize("opset", OPSETS)
def test_load_onnx_gemm_transposes_a_matrix_input(opset: int) -> None:
    nodes, inits, input_shape, feed_shape = _gemm_input_trans_a_square(opset)
    _assert_matches_ort(_model(nodes, input_shape, inits, opset=opset), feed_shape)


def test_load_onnx_gemm_with_two_input_operands_is_rejected() -> None:
    nodes = [helper.make_node("Gemm", ["x", "x"], ["y"], transB=1, name="square")]
    with pytest.raises(OnnxImportError, match=r"'Gemm' at node 'square'"):
        load_onnx(_model(nodes, [1, 4]))


def test_load_onnx_gemm_folds_into_one_affine_layer() -> None:
    nodes, inits, input_shape, _ = _gemm_trans_b_alpha_beta_row_bias()
    net = load_onnx(_model(nodes, input_shape, inits))
    (layer,) = net.affine_layers
    weight = _rand(3, 4).astype(np.float64)
    np.testing.assert_allclose(layer.weight, 0.5 * weight, rtol=1e-6)
    np.testing.assert_allclose(layer.bias, -2.0 * _rand(1, 3, seed=1)[0], rtol=1e-6)


# ---------------------------------------------------------------------------- MatMul + Add
def _matmul_then_add() -> tuple:
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "b"], ["y"], name="add"),
    ]
    return nodes, [_init("W", _rand(4, 3)), _init("b", _rand(3, seed=1))], ["N", 4], (5, 4)


def _bias_plus_matmul() -> tuple:
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
        helper.make_node("Add", ["b", "m"], ["y"], name="add"),
    ]
    return nodes, [_init("W", _rand(4, 3)), _init("b", _rand(1, 3, seed=1))], ["N", 4], (5, 4)


def _weight_on_the_left() -> tuple:
    nodes = [
        helper.make_node("MatMul", ["W", "x"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "b"], ["y"], name="add"),
    ]
    return nodes, [_init("W", _rand(3, 4)), _init("b", _rand(3, seed=1))], [4], (4,)


def _vector_weight() -> tuple:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return nodes, [_init("w", _rand(4))], ["N", 4], (5, 4)


def _matmul_on_rows() -> tuple:
    # (N, 3, 4) @ (4, 2): the same map on each of the 3 rows; output (N, 3, 2) flattened
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "b"], ["y"], name="add"),
    ]
    return nodes, [_init("W", _rand(4, 2)), _init("b", _rand(2, seed=1))], ["N", 3, 4], (5, 3, 4)


def _weight_on_the_left_of_rows() -> tuple:
    # W (2, 3) @ x (N, 3, 4): mixes the 3 rows of each sample
    nodes = [helper.make_node("MatMul", ["W", "x"], ["y"], name="mm")]
    return nodes, [_init("W", _rand(2, 3))], ["N", 3, 4], (5, 3, 4)


MATMUL_CASES: dict[str, Callable[[], tuple]] = {
    "x_W_plus_b": _matmul_then_add,
    "b_plus_x_W": _bias_plus_matmul,
    "W_x_plus_b": _weight_on_the_left,
    "vector_weight": _vector_weight,
    "rows": _matmul_on_rows,
    "W_left_of_rows": _weight_on_the_left_of_rows,
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", sorted(MATMUL_CASES))
def test_load_onnx_matmul_add_matches_onnxruntime(case: str, opset: int) -> None:
    nodes, inits, input_shape, feed_shape = MATMUL_CASES[case]()
    _assert_matches_ort(_model(nodes, input_shape, inits, opset=opset), feed_shape)


def test_load_onnx_matmul_of_input_with_itself_is_rejected() -> None:
    nodes = [helper.make_node("MatMul", ["x", "x"], ["y"], name="gram")]
    with pytest.raises(OnnxImportError, match=r"'MatMul' at node 'gram'.*not affine"):
        load_onnx(_model(nodes, [4, 4]))


def test_load_onnx_matmul_with_3d_weight_is_rejected() -> None:
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="batched")]
    with pytest.raises(OnnxImportError, match=r"'MatMul' at node 'batched'.*rank 1 or 2"):
        load_onnx(_model(nodes, ["N", 4], [_init("W", _rand(2, 4, 3))]))


def test_load_onnx_matmul_shape_mismatch_is_rejected() -> None:
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    with pytest.raises(OnnxImportError, match=r"'MatMul' at node 'mm'.*do not match"):
        load_onnx(_model(nodes, ["N", 4], [_init("W", _rand(5, 3))]))


# ---------------------------------------------------------------------------- normalisation
@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("per_feature", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize(
    ("op", "constant_first"),
    [
        ("Sub", False),
        ("Sub", True),
        ("Div", False),
        ("Mul", False),
        ("Mul", True),
        ("Add", False),
        ("Add", True),
    ],
)
def test_load_onnx_normalisation_matches_onnxruntime(
    op: str, constant_first: bool, per_feature: bool, opset: int
) -> None:
    value = np.abs(_rand(4, seed=7)) + 0.5 if per_feature else np.float32(1.7)
    operands = ["k", "x"] if constant_first else ["x", "k"]
    nodes = [helper.make_node(op, operands, ["z"], name="norm")]
    tail, inits = _mlp_tail("z", 4)
    model = _model(nodes + tail, ["N", 4], [_init("k", value), *inits], opset=opset)
    net = _assert_matches_ort(model, (6, 4))
    assert net.widths == (4, 5, 3)


def test_load_onnx_division_by_input_is_rejected() -> None:
    nodes = [helper.make_node("Div", ["k", "x"], ["y"], name="inverse")]
    with pytest.raises(OnnxImportError, match=r"'Div' at node 'inverse'.*not affine"):
        load_onnx(_model(nodes, ["N", 4], [_init("k", 2.0)]))


def test_load_onnx_division_by_zero_constant_is_rejected() -> None:
    nodes = [helper.make_node("Div", ["x", "k"], ["y"], name="scale")]
    with pytest.raises(OnnxImportError, match=r"'Div' at node 'scale'.*zeros"):
        load_onnx(_model(nodes, ["N", 2], [_init("k", [1.0, 0.0])]))


def test_load_onnx_product_of_input_with_itself_is_rejected() -> None:
    nodes = [helper.make_node("Mul", ["x", "x"], ["y"], name="square")]
    with pytest.raises(OnnxImportError, match=r"'Mul' at node 'square'.*both operands"):
        load_onnx(_model(nodes, ["N", 4]))


def test_load_onnx_broadcast_that_replicates_the_input_is_rejected() -> None:
    nodes = [helper.make_node("Add", ["x", "k"], ["y"], name="tile")]
    with pytest.raises(OnnxImportError, match=r"'Add' at node 'tile'.*replicating"):
        load_onnx(_model(nodes, [1, 4], [_init("k", np.ones((3, 4)))]))


# ---------------------------------------------------------------------------- Relu chains
@pytest.mark.parametrize("opset", OPSETS)
def test_load_onnx_relu_chain_matches_onnxruntime(opset: int) -> None:
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["h1"], transB=1, name="fc1"),
        helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
        helper.make_node("Gemm", ["r1", "W2", "b2"], ["h2"], transB=1, name="fc2"),
        helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
        helper.make_node("Relu", ["r2"], ["r3"], name="relu_again"),
        helper.make_node("Gemm", ["r3", "W3", "b3"], ["y"], transB=1, name="fc3"),
    ]
    inits = [
        _init("W1", _rand(16, 6, seed=1)),
        _init("b1", _rand(16, seed=2)),
        _init("W2", _rand(12, 16, seed=3)),
        _init("b2", _rand(12, seed=4)),
        _init("W3", _rand(4, 12, seed=5)),
        _init("b3", _rand(4, seed=6)),
    ]
    net = _assert_matches_ort(_model(nodes, ["N", 6], inits, opset=opset), (50, 6))
    assert net.widths == (6, 16, 12, 4)


def test_load_onnx_relu_on_the_input_matches_onnxruntime() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r0"], name="relu0")]
    tail, inits = _mlp_tail("r0", 4)
    net = _assert_matches_ort(_model(nodes + tail, ["N", 4], inits), (20, 4))
    assert net.widths == (4, 4, 5, 3)


def test_load_onnx_trailing_relu_matches_onnxruntime() -> None:
    nodes, inits = _mlp_tail("x", 4)
    nodes.append(helper.make_node("Relu", ["y"], ["out"], name="relu_out"))
    model = _model(nodes, ["N", 4], inits, outputs=("out",))
    net = _assert_matches_ort(model, (20, 4))
    assert net.widths == (4, 5, 3, 3)


# ---------------------------------------------------------------------------- Flatten / Reshape
@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("batch", ["N", 1])
def test_load_onnx_flatten_image_input_matches_onnxruntime(opset: int, batch: int | str) -> None:
    nodes = [
        helper.make_node("Sub", ["x", "mean"], ["c"], name="center"),
        helper.make_node("Div", ["c", "std"], ["n"], name="scale"),
        helper.make_node("Flatten", ["n"], ["f"], axis=1, name="flatten"),
    ]
    tail, inits = _mlp_tail("f", 64)
    consts = [_init("mean", 0.1307), _init("std", 0.3081)]
    model = _model(nodes + tail, [batch, 1, 8, 8], consts + inits, opset=opset)
    net = _assert_matches_ort(model, (7 if batch == "N" else 1, 1, 8, 8))
    assert net.input_dim == 64


@pytest.mark.parametrize("opset", OPSETS)
def test_load_onnx_per_channel_normalisation_matches_onnxruntime(opset: int) -> None:
    nodes = [
        helper.make_node("Sub", ["x", "mean"], ["c"], name="center"),
        helper.make_node("Div", ["c", "std"], ["n"], name="scale"),
        helper.make_node("Flatten", ["n"], ["f"], axis=-3, name="flatten"),
    ]
    tail, inits = _mlp_tail("f", 48)
    consts = [
        _init("mean", _rand(3, 1, 1, seed=8)),
        _init("std", np.abs(_rand(3, 1, 1, seed=9)) + 0.5),
    ]
    _assert_matches_ort(
        _model(nodes + tail, ["N", 3, 4, 4], consts + inits, opset=opset), (5, 3, 4, 4)
    )


def test_load_onnx_flatten_that_is_not_a_flattening_is_rejected() -> None:
    nodes = [helper.make_node("Flatten", ["x"], ["y"], axis=2, name="partial")]
    with pytest.raises(OnnxImportError, match=r"'Flatten' at node 'partial'.*not a flat"):
        load_onnx(_model(nodes, ["N", 3, 4, 4]))


RESHAPES: dict[str, tuple[list[int], int | str]] = {
    "one_minus_one": ([1, -1], 1),
    "minus_one": ([-1], 1),
    "batch_minus_one": ([0, -1], "N"),
    "minus_one_features": ([-1, 64], "N"),
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("from_constant_node", [False, True], ids=["initializer", "Constant"])
@pytest.mark.parametrize("case", sorted(RESHAPES))
def test_load_onnx_reshape_matches_onnxruntime(
    case: str, from_constant_node: bool, opset: int
) -> None:
    spec, batch = RESHAPES[case]
    shape = np.asarray(spec, dtype=np.int64)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["f"], name="reshape")]
    tail, inits = _mlp_tail("f", 64)
    if spec == [-1]:  # Gemm needs a matrix: use MatMul on the flat vector
        tail = [
            helper.make_node("MatMul", ["f", "W1t"], ["h"], name="fc1"),
            helper.make_node("Relu", ["h"], ["r"], name="relu1"),
            helper.make_node("MatMul", ["r", "W2t"], ["y"], name="fc2"),
        ]
        inits = [_init("W1t", _rand(64, 5, seed=1)), _init("W2t", _rand(5, 3, seed=2))]
    if from_constant_node:
        tensor = numpy_helper.from_array(shape, "shape_value")
        nodes.insert(0, helper.make_node("Constant", [], ["shape"], value=tensor, name="cst"))
    else:
        inits.append(_init("shape", shape, np.int64))
    model = _model(nodes + tail, [batch, 1, 8, 8], inits, opset=opset)
    if spec == [-1]:  # the output is (3,): a single sample
        net = load_onnx(model)
        x = _rand(1, 1, 8, 8, seed=3)
        np.testing.assert_allclose(net.forward(x.reshape(-1)), _run_ort(model, x), atol=TOL)
        return
    _assert_matches_ort(model, (4 if batch == "N" else 1, 1, 8, 8))


def test_load_onnx_reshape_with_fixed_batch_matches_onnxruntime() -> None:
    # what torch exports for x.view(x.size(0), -1) with a fixed batch of 2
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["f"], name="reshape")]
    tail, inits = _mlp_tail("f", 64)
    inits.append(_init("shape", [2, -1], np.int64))
    net = _assert_matches_ort(_model(nodes + tail, [2, 1, 8, 8], inits), (2, 1, 8, 8))
    assert net.input_dim == 64


@pytest.mark.parametrize("spec", [[2, -1], [4, 16]])
def test_load_onnx_reshape_that_folds_the_batch_axis_is_rejected(spec: list[int]) -> None:
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="fold")]
    model = _model(nodes, ["N", 1, 8, 8], [_init("shape", spec, np.int64)])
    with pytest.raises(OnnxImportError, match=r"'Reshape' at node 'fold'.*leading batch axis"):
        load_onnx(model)


@pytest.mark.parametrize("spec", [[1, 8, 8], [1, 2, 32], [0, 4, 16]])
def test_load_onnx_reshape_that_keeps_the_batch_axis_is_a_view(spec: list[int]) -> None:
    """``(1, 1, 8, 8) -> (1, 8, 8)`` and the like reorder nothing (C order): the network is
    onnxruntime's, read through a Flatten afterwards."""
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["v"], name="view"),
        helper.make_node("Relu", ["v"], ["rv"], name="relu"),
        helper.make_node("Flatten", ["rv"], ["f"], name="flatten"),
    ]
    tail, inits = _mlp_tail("f", 64)
    inits.append(_init("shape", spec, np.int64))
    model = _model(nodes + tail, [1, 1, 8, 8], inits)
    _assert_matches_ort(model, (1, 1, 8, 8))


def test_load_onnx_reshape_with_input_dependent_shape_is_rejected() -> None:
    nodes = [helper.make_node("Reshape", ["k", "x"], ["y"], name="weird")]
    model = _model(nodes, [2], [_init("k", np.ones(4))])
    with pytest.raises(OnnxImportError, match=r"'Reshape' at node 'weird'.*only constants"):
        load_onnx(model)


@pytest.mark.parametrize("opset", (11, 13))
def test_load_onnx_shape_gather_concat_reshape_matches_onnxruntime(opset: int) -> None:
    # the legacy torch export of x.view(x.size(0), -1) with a dynamic batch
    if opset < 13:
        unsqueeze = helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0], name="unsq")
        axes: list[onnx.TensorProto] = []
    else:
        unsqueeze = helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsq")
        axes = [_init("axes", [0], np.int64)]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="gather"),
        unsqueeze,
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0, name="concat"),
        helper.make_node("Reshape", ["x", "target"], ["f"], name="reshape"),
    ]
    tail, inits = _mlp_tail("f", 64)
    consts = [_init("zero", 0, np.int64), _init("minus_one", [-1], np.int64), *axes]
    model = _model(nodes + tail, ["N", 1, 8, 8], consts + inits, opset=opset)
    _assert_matches_ort(model, (6, 1, 8, 8))


# ---------------------------------------------------------------------------- Squeeze / Unsqueeze
@pytest.mark.parametrize("opset", OPSETS)
def test_load_onnx_squeeze_unsqueeze_matches_onnxruntime(opset: int) -> None:
    nodes = [
        *_with_axes("Unsqueeze", "x", "u", [1, -1], opset),  # (1, 4) -> (1, 1, 4, 1)
        *_with_axes("Squeeze", "u", "s", [-1, 1], opset),  # -> (1, 4)
    ]
    tail, inits = _mlp_tail("s", 4)
    _assert_matches_ort(_model(nodes + tail, [1, 4], inits, opset=opset), (1, 4))


@pytest.mark.parametrize("opset", (11, 13))
def test_load_onnx_squeeze_without_axes_matches_onnxruntime(opset: int) -> None:
    nodes = [
        helper.make_node("Squeeze", ["x"], ["s"], name="squeeze"),  # (1, 4) -> (4,)
        helper.make_node("MatMul", ["s", "W"], ["y"], name="mm"),
    ]
    model = _model(nodes, [1, 4], [_init("W", _rand(4, 3))], opset=opset)
    _assert_matches_ort(model, (1, 4))


def test_load_onnx_squeeze_of_a_wide_axis_is_rejected() -> None:
    nodes = [helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")]
    model = _model(nodes, ["N", 4], [_init("axes", [1], np.int64)], opset=13)
    with pytest.raises(OnnxImportError, match=r"'Squeeze' at node 'squeeze'"):
        load_onnx(model)


# ---------------------------------------------------------------------------- Identity, Constant
@pytest.mark.parametrize("opset", OPSETS)
def test_load_onnx_identity_and_constant_nodes_match_onnxruntime(opset: int) -> None:
    def constant(name: str, value: Any) -> onnx.NodeProto:
        array = np.asarray(value, dtype=np.float32)
        if opset >= 12 and array.ndim == 0:  # value_float(s) exist from Constant-12 on
            return helper.make_node("Constant", [], [name], value_float=float(array), name=name)
        if opset >= 12 and array.ndim == 1:
            floats = [float(v) for v in array]
            return helper.make_node("Constant", [], [name], value_floats=floats, name=name)
        tensor = numpy_helper.from_array(array, f"{name}_value")
        return helper.make_node("Constant", [], [name], value=tensor, name=name)

    nodes = [
        helper.make_node("Identity", ["x"], ["i"], name="identity"),
        constant("W", _rand(4, 3)),
        constant("b", [1.0, -2.0, 3.0]),
        constant("k", 2.0),
        helper.make_node("Mul", ["k", "b"], ["b2"], name="fold"),  # constant folding
        helper.make_node("Gemm", ["i", "W", "b2"], ["g"], name="gemm"),
        helper.make_node("Identity", ["g"], ["y"], name="identity_out"),
    ]
    net = _assert_matches_ort(_model(nodes, ["N", 4], opset=opset), (5, 4))
    np.testing.assert_allclose(net.affine_layers[0].bias, [2.0, -4.0, 6.0])


def test_load_onnx_initializer_listed_as_graph_input_is_not_an_input() -> None:
    nodes = [helper.make_node("Gemm", ["x", "B"], ["y"], name="gemm")]
    inputs = [_tensor("x", ["N", 4]), _tensor("B", [4, 3])]
    model = _model(nodes, ["N", 4], [_init("B", _rand(4, 3))], inputs=inputs, opset=13)
    net = load_onnx(model)
    x = _rand(3, 4, seed=5)
    np.testing.assert_allclose(net.forward(x), x @ _rand(4, 3), rtol=TOL, atol=TOL)


# ---------------------------------------------------------------------------- BatchNormalization
@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("image", [False, True], ids=["vector", "image"])
def test_load_onnx_batchnorm_matches_onnxruntime(opset: int, image: bool) -> None:
    channels = 3 if image else 4
    nodes = [
        helper.make_node(
            "BatchNormalization", ["x", "s", "bias", "mean", "var"], ["n"], epsilon=1e-3, name="bn"
        ),
        helper.make_node("Flatten", ["n"], ["f"], name="flatten"),
    ]
    width = 48 if image else 4
    tail, inits = _mlp_tail("f", width)
    params = [
        _init("s", _rand(channels, seed=11)),
        _init("bias", _rand(channels, seed=12)),
        _init("mean", _rand(channels, seed=13)),
        _init("var", np.abs(_rand(channels, seed=14)) + 0.1),
    ]
    shape: list[int | str] = ["N", 3, 4, 4] if image else ["N", 4]
    feed = (5, 3, 4, 4) if image else (5, 4)
    _assert_matches_ort(_model(nodes + tail, shape, params + inits, opset=opset), feed)


# ---------------------------------------------------------------------------- batch dimension
@pytest.mark.parametrize(
    ("input_shape", "feed_shape"),
    [(["N", 4], (8, 4)), (["batch", 4], (1, 4)), ([1, 4], (1, 4)), ([4], (4,))],
)
def test_load_onnx_batch_dimension_variants_match_onnxruntime(
    input_shape: list[int | str], feed_shape: tuple[int, ...]
) -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["m1"], name="mm1"),
        helper.make_node("Add", ["m1", "b1"], ["h"], name="add1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "W2"], ["y"], name="mm2"),
    ]
    inits = [_init("W1", _rand(4, 6)), _init("b1", _rand(6, seed=1)), _init("W2", _rand(6, 2))]
    net = _assert_matches_ort(_model(nodes, input_shape, inits), feed_shape)
    assert net.widths == (4, 6, 2)


def test_load_onnx_symbolic_feature_dimension_is_rejected() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    with pytest.raises(OnnxImportError, match="dimension 1 must be a fixed"):
        load_onnx(_model(nodes, ["N", "D"]))


# ---------------------------------------------------------------------------- sources
def test_load_onnx_accepts_path_bytes_and_modelproto(tmp_path: Path) -> None:
    nodes, inits, input_shape, _ = _gemm_plain()
    model = _model(nodes, input_shape, inits)
    path = tmp_path / "net.onnx"
    onnx.save(model, str(path))
    x = _rand(3, 4, seed=9)
    expected = load_onnx(model).forward(x)
    for source in (path, str(path), path.read_bytes(), model):
        np.testing.assert_allclose(load_onnx(source).forward(x), expected)


def test_load_onnx_missing_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(OnnxImportError, match="no such ONNX file"):
        load_onnx(tmp_path / "absent.onnx")


@pytest.mark.parametrize("garbage", [b"\x00\xffnot an onnx model\x12\x34", b""])
def test_load_onnx_garbage_bytes_are_rejected(garbage: bytes) -> None:
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        load_onnx(garbage)


def test_load_onnx_garbage_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bad.onnx"
    path.write_text("this is not protobuf, just text")
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        load_onnx(path)


def test_load_onnx_invalid_graph_fails_the_checker() -> None:
    nodes = [helper.make_node("Relu", ["undefined"], ["y"], name="dangling")]
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        load_onnx(_model(nodes, ["N", 4]))


def test_load_onnx_error_is_a_value_error() -> None:
    assert issubclass(OnnxImportError, ValueError)


def test_load_onnx_wrong_argument_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="path, bytes or an onnx.ModelProto"):
        load_onnx(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- rejections
@pytest.mark.parametrize("op", ["Sigmoid", "Tanh", "Elu"])
def test_load_onnx_unsupported_activation_names_op_and_node(op: str) -> None:
    nodes, inits = _mlp_tail("x", 4)
    nodes[1] = helper.make_node(op, ["h"], ["r"], name="node_3")
    with pytest.raises(OnnxImportError) as info:
        load_onnx(_model(nodes, ["N", 4], inits))
    message = str(info.value)
    assert f"unsupported ONNX op '{op}' at node 'node_3'" in message
    assert "supported: Abs, Add, AveragePool, BatchNormalization" in message


@pytest.mark.parametrize(
    "attributes",
    [
        {},
        {"strides": [2, 1], "pads": [1, 0, 0, 2]},
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"auto_pad": "SAME_LOWER", "strides": [2, 3]},
        {"dilations": [2, 1], "pads": [2, 1, 2, 1]},
        {"auto_pad": "VALID", "group": 2},
    ],
)
def test_load_onnx_conv_matches_onnxruntime(attributes: dict) -> None:
    """Conv (with its padding rules) then AveragePool, both with a bias-free and a biased
    kernel, against onnxruntime."""
    groups = attributes.get("group", 1)
    nodes = [
        helper.make_node("Conv", ["x", "K", "B"], ["c"], name="conv1", **attributes),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                         name="pool"),  # fmt: skip
        helper.make_node("Flatten", ["p"], ["y"], name="flatten"),
    ]
    inits = [_init("K", _rand(4, 2 // groups, 3, 3)), _init("B", _rand(4, seed=2))]
    _assert_matches_ort(_model(nodes, [1, 2, 7, 6], inits), (1, 2, 7, 6))


def test_load_onnx_maxpool_of_a_signed_tensor_is_pairwise_with_identity_carries() -> None:
    """Max-pooling on the raw (signed) input: pairwise maxima ``b + relu(a - b)``, ``b`` an
    identity neuron; one kinked neuron per comparison (2x2 windows: 3 per window)."""
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                              name="pool")]  # fmt: skip
    model = _model(nodes, ["N", 1, 4, 4])
    _assert_matches_ort(model, (1, 1, 4, 4))
    net = load_onnx(model)
    kinked = [int(np.count_nonzero(alpha != 1.0)) for alpha in net.slopes]
    assert sum(kinked) == 4 * 3


def test_load_onnx_final_softmax_is_rejected_with_a_hint() -> None:
    nodes, inits = _mlp_tail("x", 4)
    nodes.append(helper.make_node("Softmax", ["y"], ["p"], axis=-1, name="probs"))
    model = _model(nodes, ["N", 4], inits, outputs=("p",))
    with pytest.raises(OnnxImportError, match=r"'Softmax' at node 'probs'.*logits"):
        load_onnx(model)


def test_load_onnx_unnamed_node_is_identified() -> None:
    nodes = [helper.make_node("Sigmoid", ["x"], ["y"])]
    with pytest.raises(OnnxImportError, match=r"'Sigmoid' at node #0 \(unnamed, outputs \['y'\]\)"):
        load_onnx(_model(nodes, ["N", 4]))


def test_load_onnx_custom_domain_op_is_rejected() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"], domain="com.example", name="custom")]
    graph = helper.make_graph(nodes, "g", [_tensor("x", ["N", 4])], [_tensor("y", ["N", 4])])
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
        ir_version=8,
    )
    with pytest.raises(OnnxImportError, match=r"'com.example.Relu' at node 'custom'"):
        load_onnx(model)


def test_load_onnx_two_inputs_are_rejected() -> None:
    nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="add")]
    inputs = [_tensor("x", ["N", 4]), _tensor("z", ["N", 4])]
    with pytest.raises(OnnxImportError, match=r"exactly one input.*\['x', 'z'\]"):
        load_onnx(_model(nodes, ["N", 4], inputs=inputs))


def test_load_onnx_two_outputs_are_rejected() -> None:
    nodes, inits = _mlp_tail("x", 4)
    model = _model(nodes, ["N", 4], inits, outputs=("y", "r"))
    with pytest.raises(OnnxImportError, match=r"exactly one output.*\['y', 'r'\]"):
        load_onnx(model)


def test_load_onnx_skip_connection_from_the_input_imports() -> None:
    """``y = relu(x W) + x``: the skip carries the signed input by identity neurons."""
    weight = _rand(4, 4)
    nodes = [
        helper.make_node("Gemm", ["x", "W"], ["h"], name="fc"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "x"], ["y"], name="residual"),
    ]
    net = load_onnx(_model(nodes, ["N", 4], [_init("W", weight)]))
    x = np.random.default_rng(0).normal(size=(20, 4))
    assert np.allclose(net.forward(x), np.maximum(x @ weight.astype(np.float64), 0.0) + x)
    assert net.hidden_widths == (4 + 4,)
    assert np.array_equal(net.slopes[0], [0.0] * 4 + [1.0] * 4)


def test_load_onnx_dead_branch_is_ignored() -> None:
    """A node whose output nothing reads does not change the network."""
    nodes, inits = _mlp_tail("x", 4)
    plain = load_onnx(_model(list(nodes), ["N", 4], inits))
    nodes.append(helper.make_node("Relu", ["h"], ["unused"], name="dangling_relu"))
    net = load_onnx(_model(nodes, ["N", 4], inits))
    x = np.random.default_rng(0).normal(size=(10, 4))
    assert np.allclose(net.forward(x), plain.forward(x)) and net.widths == plain.widths


def test_load_onnx_constant_output_is_rejected() -> None:
    nodes = [helper.make_node("Identity", ["k"], ["y"], name="const_out")]
    with pytest.raises(OnnxImportError, match="does not depend on the input"):
        load_onnx(_model(nodes, ["N", 4], [_init("k", np.ones(3))]))


@pytest.mark.parametrize("opset", [9, 10])
def test_load_onnx_opset_out_of_range_is_rejected(opset: int) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    newest = max_opset()
    with pytest.raises(OnnxImportError, match=f"opset {opset} is not supported.*11 to {newest}"):
        load_onnx(_model(nodes, ["N", 4], opset=opset))


def test_an_opset_newer_than_onnx_knows_is_rejected(tmp_path) -> None:
    newest = max_opset()
    path = save_onnx(random_network(np.random.default_rng(0), [2, 3, 1]), tmp_path / "n.onnx")
    model = onnx.load(path)
    model.opset_import[0].version = newest + 1
    with pytest.raises(OnnxImportError, match=f"opset {newest + 1} is not supported.*{newest}"):
        load_onnx(model)


@pytest.mark.parametrize("opset", [21, 22, max_opset()])
def test_a_gemm_relu_network_loads_at_new_opsets(tmp_path, opset: int) -> None:
    """Issue 33: opset 21 and newer were refused even for a plain Gemm/Relu graph."""
    net = random_network(np.random.default_rng(opset), [3, 6, 5, 2])
    loaded = load_onnx(save_onnx(net, tmp_path / "n.onnx", opset=opset))
    x = np.random.default_rng(0).normal(size=(7, 3))
    np.testing.assert_allclose(loaded.forward(x), net.forward(x), rtol=1e-12, atol=1e-12)


def test_an_op_defined_anew_after_the_reviewed_opset_is_refused_by_name(monkeypatch) -> None:
    """Where an op's definition is newer than the one read for the importer, the model is
    refused naming the op; ops unchanged since then still load."""
    from lipopt.io.onnx import loader

    monkeypatch.setattr(loader, "REVIEWED_OPSET", 20)
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 4])
    reshape = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")]
    with pytest.raises(OnnxImportError, match="Reshape changed in ONNX opset 2[1-9]"):
        load_onnx(_model(reshape, ["N", 4], [shape], opset=21))
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]  # Relu: unchanged since 14
    assert load_onnx(_model(relu, ["N", 4], opset=21)).input_dim == 4


def test_load_onnx_integer_input_is_rejected() -> None:
    nodes = [helper.make_node("Identity", ["x"], ["y"])]
    inputs = [_tensor("x", ["N", 4], TensorProto.INT64)]
    outputs = [_tensor("y", ["N", 4], TensorProto.INT64)]
    with pytest.raises(OnnxImportError, match="type INT64, expected a float type"):
        load_onnx(_model(nodes, ["N", 4], inputs=inputs, outputs=outputs))


def test_load_onnx_batchnorm_in_training_mode_is_rejected() -> None:
    nodes = [
        helper.make_node(
            "BatchNormalization",
            ["x", "s", "b", "m", "v"],
            ["y", "rm", "rv"],
            training_mode=1,
            name="bn_train",
        )
    ]
    params = [_init(n, np.ones(4)) for n in ("s", "b", "m", "v")]
    model = _model(nodes, ["N", 4], params, opset=15)
    with pytest.raises(OnnxImportError, match=r"'BatchNormalization' at node 'bn_train'"):
        load_onnx(model)


# ---------------------------------------------------------------------------- torch exports
def _torch_export(module: Any, example: Any, opset: int, dynamic: bool) -> onnx.ModelProto:
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    kwargs: dict[str, Any] = {
        "opset_version": opset,
        "input_names": ["x"],
        "output_names": ["y"],
        "dynamo": False,  # the dynamo exporter needs onnxscript; the legacy one suffices here
    }
    if dynamic:
        kwargs["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (example,), buffer, **kwargs)
    return onnx.load_model_from_string(buffer.getvalue())


def _torch_sequential() -> Any:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))


def _assert_matches_torch(
    module: Any, model: onnx.ModelProto, feed_shape: tuple[int, ...]
) -> Network:
    torch = pytest.importorskip("torch")
    net = _assert_matches_ort(model, feed_shape)
    x = _rand(*feed_shape, seed=42)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    got = net.forward(x.reshape(feed_shape[0], -1))
    np.testing.assert_allclose(got, expected.reshape(feed_shape[0], -1), rtol=TOL, atol=TOL)
    return net


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed_batch", "dynamic_batch"])
def test_load_onnx_torch_sequential_matches_torch_and_onnxruntime(
    opset: int, dynamic: bool
) -> None:
    module = _torch_sequential()
    torch = pytest.importorskip("torch")
    model = _torch_export(module, torch.randn(1, 5), opset, dynamic)
    net = _assert_matches_torch(module, model, (9, 5) if dynamic else (1, 5))
    assert net.widths == (5, 16, 8, 3)
    np.testing.assert_allclose(
        net.affine_layers[0].weight, module[0].weight.detach().numpy(), rtol=1e-6
    )


@pytest.mark.parametrize("opset", OPSETS)
def test_load_onnx_torch_normalised_input_matches_torch_and_onnxruntime(opset: int) -> None:
    torch = pytest.importorskip("torch")

    class Normalised(torch.nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self, body: Any) -> None:
            super().__init__()
            self.body = body
            self.register_buffer("mean", torch.tensor([0.5, -1.0, 2.0, 0.0, 3.0]))
            self.register_buffer("std", torch.tensor([2.0, 0.5, 1.5, 1.0, 4.0]))

        def forward(self, x: Any) -> Any:
            return self.body((x - self.mean) / self.std)

    module = Normalised(_torch_sequential())
    model = _torch_export(module, torch.randn(2, 5), opset, dynamic=True)
    ops = {node.op_type for node in model.graph.node}
    assert {"Sub", "Div"} <= ops
    net = _assert_matches_torch(module, model, (11, 5))
    assert net.widths == (5, 16, 8, 3)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed_batch", "dynamic_batch"])
@pytest.mark.parametrize("flatten", ["view", "nn_flatten"])
def test_load_onnx_torch_image_classifier_matches_torch_and_onnxruntime(
    opset: int, dynamic: bool, flatten: str
) -> None:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(1)

    class Classifier(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(64, 10)
            self.bn = nn.BatchNorm1d(10)
            self.fc2 = nn.Linear(10, 4)

        def forward(self, x: Any) -> Any:
            flat = x.view(x.size(0), -1) if flatten == "view" else torch.flatten(x, 1)
            return self.fc2(torch.relu(self.bn(self.fc1((flat - 0.1307) / 0.3081))))

    module = Classifier()
    with torch.no_grad():  # non-trivial running statistics
        module.bn.running_mean.copy_(torch.randn(10))
        module.bn.running_var.copy_(torch.rand(10) + 0.5)
    model = _torch_export(module.eval(), torch.randn(3, 1, 8, 8), opset, dynamic)
    net = _assert_matches_torch(module, model, (6, 1, 8, 8) if dynamic else (3, 1, 8, 8))
    assert net.widths == (64, 10, 4)


def test_load_onnx_torch_sigmoid_is_rejected() -> None:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    module = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 2))
    model = _torch_export(module, torch.randn(1, 3), 17, dynamic=False)
    with pytest.raises(OnnxImportError, match=r"unsupported ONNX op 'Sigmoid' at node '.+'"):
        load_onnx(model)
