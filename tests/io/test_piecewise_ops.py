"""The ops of issue 46 (Max, Min, Abs, Slice, ReduceMax, ReduceMin, TopK, LeakyRelu/PRelu as one
neuron, MaxPool after any value, skips from the input as identities): torch models exported by
both exporters at each opset, and hand-built graphs at opset 13 and at the newest one, each
imported and compared with torch (float64) or onnxruntime (double graphs) on 1000 random inputs
to 1e-9 relative; and the kinked neurons (``α != 1``: the only ones that may cost a binary) per
layer are what each encoding promises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lipopt.io import OnnxImportError, load_onnx
from lipopt.io.onnx import max_opset
from lipopt.io.onnx.comparators import merge_exchange
from tests.io.piecewise_models import KINDS, case, export, kinked, torch_forward

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
nn = torch.nn

EXPORTS = [(13, False), (17, False), (20, False), (18, True)]
RTOL = 1e-9


def _close(ours: np.ndarray, truth: np.ndarray) -> None:
    scale = max(1.0, float(np.max(np.abs(truth))))
    assert np.max(np.abs(ours - truth)) <= RTOL * scale


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("opset, dynamo", EXPORTS)
def test_torch_piecewise_models_import_exactly_with_the_promised_kinks(kind, opset, dynamo):
    """Each model, each exporter and opset: the network is torch's in float64 on 1000 inputs,
    and its kinked neurons per layer are what the encoding promises."""
    if dynamo:
        pytest.importorskip("onnxscript")
    found = case(kind)
    net = load_onnx(export(found.module, found.shape, opset, dynamo))
    x = np.random.default_rng(opset).normal(size=(1000, int(np.prod(found.shape))))
    _close(net.forward(x), torch_forward(found.module, x, found.shape))
    assert kinked(net) == found.kinked


def test_from_torch_takes_the_exporter_and_opset():
    """``lipopt.from_torch`` with each exporter and opset gives the same network function."""
    import lipopt  # noqa: PLC0415

    found = case("groupsort4-sort")
    example = torch.zeros(found.shape)
    x = np.random.default_rng(0).normal(size=(50, 2))
    truth = torch_forward(found.module, x, found.shape)
    for opset, dynamo in EXPORTS:
        net = lipopt.from_torch(found.module, example, opset=opset, dynamo=dynamo)
        _close(net.forward(x), truth)
    with pytest.raises(ValueError, match="opset 18 or newer"):
        lipopt.from_torch(found.module, example, opset=17, dynamo=True)


def test_maxpool_on_a_relu_output_stays_a_relu_network():
    """conv -> relu -> maxpool keeps its ReLU encoding (stable ReLU carries): no identities."""
    module = nn.Sequential(nn.Conv2d(1, 2, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                           nn.Linear(8, 2)).eval()  # fmt: skip
    net = load_onnx(export(module, (1, 1, 5, 5), 17, False))
    assert net.is_relu
    x = np.random.default_rng(1).normal(size=(1000, 25))
    _close(net.forward(x), torch_forward(module, x, (1, 1, 5, 5)))


def test_a_leaky_network_has_one_neuron_per_unit():
    """LeakyReLU is one neuron with its slope (was two ReLUs): the binaries halve."""
    net = load_onnx(export(case("leaky").module, (1, 2), 17, False))
    assert net.hidden_widths == (5,) and np.all(net.slopes[0] == 0.125)


def test_topk_indices_in_use_are_refused_in_one_line():
    """Sorting's Indices are not a continuous function of the input: refused where read."""
    body = [helper.make_node("TopK", ["z", "k"], ["t", "idx"], axis=-1, name="sort"),
            helper.make_node("Gather", ["table", "idx"], ["f"]),
            helper.make_node("Add", ["t", "f"], ["y"])]  # fmt: skip
    model = _graph(body, [_ints("k", [8]), _double("table", np.arange(8.0))], [8], 17)
    with pytest.raises(OnnxImportError, match=r"'TopK' at node 'sort': its Indices output is"):
        load_onnx(model)


def test_a_max_of_a_product_is_still_refused():
    class Product(nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.maximum(x * torch.relu(x), x)

    with pytest.raises(OnnxImportError, match=r"'Mul' .*both operands depend on the network"):
        load_onnx(export(Product().eval(), (1, 3), 17, False))


@pytest.mark.parametrize("size", range(1, 9))
def test_merge_exchange_sorts_every_zero_one_input(size):
    """The 0-1 principle: a comparator network sorts every input iff it sorts every 0/1 one."""
    passes = merge_exchange(size)
    for bits in range(2**size):
        values = [(bits >> i) & 1 for i in range(size)]
        for step in passes:
            touched = [i for pair in step for i in pair]
            assert len(touched) == len(set(touched))  # a pass's comparators are disjoint
            for low, high in step:
                values[low], values[high] = (
                    min(values[low], values[high]),
                    max(values[low], values[high]),
                )
        assert values == sorted(values)
    assert sum(map(len, passes)) == [0, 0, 1, 3, 5, 9, 12, 16, 19][size]


# ------------------------------------------------------------------ hand-built double graphs
def _double(name: str, array: Any) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array, dtype=np.float64), name)


def _ints(name: str, values: Sequence[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def _graph(
    body: list, inits: list, out_shape: list, opset: int, out_type: int = TensorProto.DOUBLE
) -> onnx.ModelProto:
    """``z = x W + b`` (x of shape (N, 8), float64), then ``body`` from ``z`` to ``y``."""
    rng = np.random.default_rng(opset + len(body))
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["z"]), *body]  # fmt: skip
    inits = [_double("W", rng.normal(size=(8, 8))), _double("b", rng.normal(size=8)), *inits]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["N", 8])],
        [helper.make_tensor_value_info("y", out_type, ["N", *out_shape])], inits,
    )  # fmt: skip
    opset_id = helper.make_opsetid("", opset)
    model = helper.make_model(graph, opset_imports=[opset_id],
                              ir_version=helper.find_min_ir_version_for([opset_id]))  # fmt: skip
    onnx.checker.check_model(model, full_check=True)
    return model


def _slice(name: str, source: str, start: int, end: int, step: int) -> tuple[list, list]:
    nodes = [helper.make_node("Slice", [source, f"{name}_s", f"{name}_e", "one", f"{name}_p"],
                              [name])]  # fmt: skip
    inits = [_ints(f"{name}_s", [start]), _ints(f"{name}_e", [end]), _ints(f"{name}_p", [step])]
    return nodes, inits


def _axes(opset: int, name: str, axes: list[int]) -> tuple[list, dict]:
    """ReduceMax/Min axes: an input from opset 18, an attribute before."""
    if opset >= 18:
        return [name], {}
    return [], {"axes": axes}


def _reduce_graph(opset: int) -> tuple[onnx.ModelProto, int]:
    """GroupSort-2 as ``Reshape(z, [0, 4, 2])``, ReduceMax and ReduceMin over the last axis,
    Concat, Reshape back: max and min share each ``relu(a - b)``: 4 kinks."""
    extra, attrs = _axes(opset, "last", [-1])
    body = [
        helper.make_node("Reshape", ["z", "groups"], ["g"]),
        helper.make_node("ReduceMax", ["g", *extra], ["hi"], keepdims=1, **attrs),
        helper.make_node("ReduceMin", ["g", *extra], ["lo"], keepdims=1, **attrs),
        helper.make_node("Concat", ["hi", "lo"], ["c"], axis=-1),
        helper.make_node("Reshape", ["c", "flat"], ["y"]),
    ]
    inits = [_ints("groups", [0, 4, 2]), _ints("flat", [0, 8]), _ints("last", [-1])]
    return _graph(body, inits, [8], opset), 4


def _maxmin_graph(opset: int) -> tuple[onnx.ModelProto, int]:
    """Max of three operands (two slices, a broadcast constant) and Min of two, concatenated:
    Max costs 2 comparisons per entry, Min one (its relu(a - b) is Max's first): 8 kinks."""
    first, i1 = _slice("sa", "z", 0, 4, 1)
    second, i2 = _slice("sb", "z", -1, -9, -2)  # z[7], z[5], z[3], z[1]: a negative step
    body = [*first, *second,
            helper.make_node("Max", ["sa", "sb", "k"], ["m"]),
            helper.make_node("Min", ["sa", "sb"], ["n"]),
            helper.make_node("Concat", ["m", "n"], ["y"], axis=1)]  # fmt: skip
    inits = [*i1, *i2, _ints("one", [1]), _double("k", [0.3])]
    return _graph(body, inits, [8], opset), 8


def _broadcast_graph(opset: int) -> tuple[onnx.ModelProto, int]:
    """Min of ``z[0:4]``, ``z[4:5]`` broadcast over it, and a constant row: two comparisons
    per entry, 8 kinks."""
    first, i1 = _slice("sa", "z", 0, 4, 1)
    second, i2 = _slice("sb", "z", 4, 5, 1)
    body = [*first, *second, helper.make_node("Min", ["sa", "sb", "k"], ["y"])]
    inits = [*i1, *i2, _ints("one", [1]), _double("k", [[0.5, -0.2, 0.1, 0.0]])]
    return _graph(body, inits, [4], opset), 8


def _abs_graph(opset: int) -> tuple[onnx.ModelProto, int]:
    """``|z[1:7:3]|`` then ReduceMax over it without keepdims, reshaped to a column."""
    picked, inits = _slice("s", "z", 1, 7, 3)
    extra, attrs = _axes(opset, "one", [1])
    body = [*picked, helper.make_node("Abs", ["s"], ["a"]),
            helper.make_node("ReduceMax", ["a", *extra], ["r"], keepdims=0, **attrs),
            helper.make_node("Reshape", ["r", "column"], ["y"])]  # fmt: skip
    inits = [*inits, _ints("one", [1]), _ints("column", [-1, 1])]
    return _graph(body, inits, [1], opset), 2 + 1


def _topk_graph(opset: int, largest: int) -> tuple[onnx.ModelProto, int]:
    """TopK of k = 3 of each group of 4 (two groups): the groups sorted by merge exchange
    (5 comparators each: 2, 2, 1 per pass)."""
    body = [helper.make_node("Reshape", ["z", "groups"], ["g"]),
            helper.make_node("TopK", ["g", "k"], ["t", "unused"], axis=-1, largest=largest),
            helper.make_node("Reshape", ["t", "flat"], ["y"])]  # fmt: skip
    inits = [_ints("groups", [0, 2, 4]), _ints("flat", [0, 6]), _ints("k", [3])]
    return _graph(body, inits, [6], opset), 10


GRAPHS = {
    "reduce": _reduce_graph,
    "maxmin": _maxmin_graph,
    "abs": _abs_graph,
    "broadcast": _broadcast_graph,
    "topk-largest": lambda opset: _topk_graph(opset, 1),
    "topk-smallest": lambda opset: _topk_graph(opset, 0),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("opset", [13, max_opset()])
def test_hand_built_graphs_match_onnxruntime_in_double(name, opset):
    """Opset 13 and the newest: the network is onnxruntime's float64 output on 1000 inputs to
    1e-9, with the promised number of kinked neurons in all."""
    model, kinks = GRAPHS[name](opset)
    net = load_onnx(model)
    x = np.random.default_rng(opset).normal(size=(1000, 8))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    truth = session.run(None, {"x": x})[0].reshape(1000, -1)
    _close(net.forward(x), truth)
    assert sum(kinked(net)) == kinks


def test_the_bundled_groupsort_model_imports_as_onnxruntime_runs_it():
    """``models/moons-groupsort.onnx``: onnxruntime's (float32) output on 1000 points, and two
    GroupSort-2 layers of 8 comparisons each (16 kinked neurons, the rest identities)."""
    path = "models/moons-groupsort.onnx"
    net = load_onnx(path)
    x = np.random.default_rng(3).uniform(-1.5, 2.5, size=(1000, 2)).astype(np.float32)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    truth = session.run(None, {"input": x})[0]
    assert np.allclose(net.forward(x.astype(np.float64)), truth, rtol=1e-5, atol=1e-5)
    assert kinked(net) == (8, 8) and net.hidden_widths == (24, 24)


def test_cast_folds_shape_arithmetic_and_refuses_integer_values():
    """torch's ``width // 2`` on a shape exports Cast: folded on constants; an input-dependent
    tensor may be cast to a float type only."""

    class Halves(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(2, 4)

        def forward(self, x: Any) -> Any:
            z = self.a(x)
            return torch.sort(z.view(-1, z.shape[-1] // 2, 2), dim=-1)[0].view(-1, 4)

    net = load_onnx(export(Halves().eval(), (1, 2), 17, False))
    assert kinked(net) == (2,)
    body = [helper.make_node("Cast", ["z"], ["y"], to=TensorProto.INT64, name="cast")]
    with pytest.raises(OnnxImportError, match=r"'Cast' at node 'cast': casting an input-dep"):
        load_onnx(_graph(body, [], [8], 17, out_type=TensorProto.INT64))
