"""Residual connections and concatenated branches (issue 29), and the exactness matrix of the
new layer kinds: 12 small networks exported by torch (convolutions, batch norm, average and
max pooling, LeakyReLU, PReLU, Clip, residual blocks, a skip from the input, concatenated
branches), each solved exactly and compared with the brute-force oracle on the imported
network, whose forward pass is checked against torch's in float64 first."""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall, lipschitz
from lipopt.bounds import propagate
from lipopt.io import OnnxImportError, load_onnx
from tests.oracle import brute_force_lipschitz, from_lipopt

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
nn = torch.nn


class _ResidualMlp(nn.Module):
    """``h = relu(A x)``, ``h = relu(h + C relu(B h))``, ``y = O h``: a block whose skip carries
    a ReLU output."""

    def __init__(self, d: int = 3, width: int = 5) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(d, width), nn.Linear(width, width)
        self.c, self.o = nn.Linear(width, width), nn.Linear(width, 2)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.a(x))
        h = torch.relu(h + self.c(torch.relu(self.b(h))))
        return self.o(h)


class _SkipFromInput(nn.Module):
    """``y = O (x - B relu(A x))``: the skip carries the raw (signed) input."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.o = nn.Linear(3, 4), nn.Linear(4, 3), nn.Linear(3, 2)

    def forward(self, x: Any) -> Any:
        return self.o(x - self.b(torch.relu(self.a(x))))


class _ResidualConv(nn.Module):
    """Conv-ReLU, then ``relu(h + BN(Conv(h)))``, then a linear head (a ResNet basic block)."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv2d(1, 2, 2)
        self.second = nn.Conv2d(2, 2, 2, padding="same")
        self.norm = nn.BatchNorm2d(2)
        self.head = nn.Linear(8, 2)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.first(x))
        h = torch.relu(h + self.norm(self.second(h)))
        return self.head(torch.flatten(h, 1))


class _Concat(nn.Module):
    """Two convolution branches of different depth concatenated along the channels."""

    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Conv2d(1, 1, 2)
        self.right1, self.right2 = nn.Conv2d(1, 1, 2), nn.Conv2d(1, 1, 1)
        self.head = nn.Linear(8, 2)

    def forward(self, x: Any) -> Any:
        left = torch.relu(self.left(x))
        right = torch.relu(self.right2(torch.relu(self.right1(x))))
        return self.head(torch.flatten(torch.cat([left, right], dim=1), 1))


class _LeakyResidual(nn.Module):
    """``h = leaky(A x)`` (signed), ``y = O (h + B relu(C h))``."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)
        self.o = nn.Linear(3, 2)

    def forward(self, x: Any) -> Any:
        h = nn.functional.leaky_relu(self.a(x), 0.1)
        return self.o(h + self.b(torch.relu(self.c(h))))


def _conv(*after: Any, channels: int = 2, cells: int = 4) -> Any:
    """Conv2d(1, channels, 2) on a 3x3 image, the given layers, then a linear head."""
    return nn.Sequential(nn.Conv2d(1, channels, 2), *after, nn.Flatten(),
                         nn.Linear(channels * cells, 2))  # fmt: skip


def _network(kind: str) -> tuple[Any, tuple[int, ...]]:
    """The torch module of ``kind`` (eval mode, seeded) and its input shape."""
    torch.manual_seed(sum(map(ord, kind)))
    image = (1, 1, 3, 3)
    modules = {
        "conv-avgpool": lambda: (_conv(nn.ReLU(), nn.AvgPool2d(2, stride=1), cells=1), image),
        "conv-batchnorm": lambda: (_conv(nn.BatchNorm2d(2), nn.ReLU()), image),
        "maxpool": lambda: (_conv(nn.ReLU(), nn.MaxPool2d(2), cells=1), image),
        "leaky": lambda: (_conv(nn.LeakyReLU(0.1)), image),
        "prelu": lambda: (_conv(nn.PReLU(2, init=0.25)), image),
        "clip": lambda: (_conv(nn.Hardtanh(-0.3, 0.4)), image),
        "conv1d-global": lambda: (
            nn.Sequential(
                nn.Conv1d(2, 3, 2),
                nn.ReLU(),
                nn.AdaptiveAvgPool1d(1),
                nn.Flatten(),
                nn.Linear(3, 2),
            ),
            (1, 2, 4),
        ),  # fmt: skip
        "residual-mlp": lambda: (_ResidualMlp(), (1, 3)),
        "skip-from-input": lambda: (_SkipFromInput(), (1, 3)),
        "residual-conv": lambda: (_ResidualConv(), image),
        "concat": lambda: (_Concat(), image),
        "leaky-residual": lambda: (_LeakyResidual(), (1, 3)),
    }
    module, shape = modules[kind]()
    for sub in module.modules():
        if isinstance(sub, nn.BatchNorm2d):
            with torch.no_grad():
                sub.running_mean.uniform_(-0.5, 0.5)
                sub.running_var.uniform_(0.5, 2.0)
    return module.eval(), shape


def _export(module: Any, shape: tuple[int, ...], opset: int, dynamo: bool) -> bytes:
    if dynamo:
        pytest.importorskip("onnxscript")
    buffer = io.BytesIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.randn(*shape),), buffer, opset_version=opset,
                          dynamo=dynamo)  # fmt: skip
    return buffer.getvalue()


def _torch_forward(module: Any, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    with torch.no_grad():
        out = module.double()(torch.from_numpy(x.reshape(shape))).numpy().reshape(-1)
    module.float()
    return out


BRANCHED = ["residual-mlp", "skip-from-input", "residual-conv", "concat", "leaky-residual"]


@pytest.mark.parametrize("kind", BRANCHED)
@pytest.mark.parametrize(
    "opset, dynamo", [(13, False), (17, False), (20, False), (18, True), (20, True)]
)
def test_branched_exports_import_and_match_onnxruntime(kind, opset, dynamo):
    """Both exporters, opsets 13-20: the imported network is onnxruntime's (float32) on 10
    random inputs and torch's in float64 to 1e-6."""
    module, shape = _network(kind)
    model = _export(module, shape, opset, dynamo)
    net = load_onnx(model)
    session = ort.InferenceSession(model)
    name = session.get_inputs()[0].name
    rng = np.random.default_rng(opset)
    for _ in range(10):
        x = rng.normal(size=shape)
        expected = session.run(None, {name: x.astype(np.float32)})[0].reshape(-1)
        ours = net.forward(x.reshape(-1))
        assert np.allclose(ours, expected, rtol=1e-5, atol=1e-5)
        assert np.allclose(ours, _torch_forward(module, x, shape), rtol=1e-6, atol=1e-6)


def test_a_skip_carries_relu_outputs_with_stable_neurons():
    """In ``relu(h + C relu(B h))`` the carried ``h`` is a ReLU output: its carry neurons are
    stable on any domain, so the block costs binaries only for ``B h`` and the sum."""
    net = load_onnx(_export(*_network("residual-mlp"), 17, False))
    assert net.hidden_widths == (5, 10, 5)
    bounds = propagate(net, Box(-np.full(3, 5.0), np.full(3, 5.0)), np.array([1.0, -1.0]))
    carries = bounds.states[1][:5]
    assert np.all(carries != 0)  # 0 is UNSTABLE
    assert np.all(bounds.pre_lower[1][:5] >= 0.0)


def test_a_product_of_branches_is_refused_in_one_line():
    class Product(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(3, 3)

        def forward(self, x: Any) -> Any:
            return x * torch.relu(self.a(x))

    with pytest.raises(OnnxImportError, match=r"'Mul' .*both operands depend on the network"):
        load_onnx(_export(Product().eval(), (1, 3), 17, False))


def test_a_sum_that_would_replicate_a_branch_is_refused():
    class Outer(nn.Module):
        def forward(self, x: Any) -> Any:
            return x.unsqueeze(2) + torch.relu(x).unsqueeze(1)

    with pytest.raises(OnnxImportError, match=r"'Add' .*without replicating"):
        load_onnx(_export(Outer().eval(), (1, 3), 17, False))


_DOMAINS = {
    "box": lambda d, c0: Box(c0 - 0.6, c0 + 0.4),
    "linf": lambda d, c0: LinfBall(c0, 0.5),
    "l1": lambda d, c0: L1Ball(c0, 1.0),
}
_MATRIX = [
    ("conv-avgpool", "linf", "c"),
    ("conv-batchnorm", "box", "l1"),
    ("maxpool", "l1", "c"),
    ("leaky", "box", "c"),
    ("prelu", "linf", "linf"),
    ("clip", "l1", "cross"),
    ("conv1d-global", "box", "c"),
    ("residual-mlp", "linf", "cross"),
    ("skip-from-input", "box", "c"),
    ("residual-conv", "l1", "linf"),
    ("concat", "linf", "c"),
    ("leaky-residual", "box", "l1"),
]


@pytest.mark.parametrize("kind, domain, objective", _MATRIX)
def test_exact_constants_equal_the_oracles(kind, domain, objective):
    """For both input norms: the default plan is optimal and equals the oracle's constant to
    1e-6 relative; so is one MIP alone (the forward formulation for a fixed c, the backward one
    for an output norm), except that HiGHS's feasibility tolerance may leave its bound up to
    2e-6 above an attained optimum, reported as ``upper_bound`` (seen once: maxpool, ℓ1 ball,
    forward). The attained lower bound is never above the oracle's constant."""
    module, shape = _network(kind)
    net = load_onnx(_export(module, shape, 17, False))
    d = net.input_dim
    center = np.random.default_rng(d).uniform(-0.3, 0.3, size=d)
    assert np.allclose(net.forward(center), _torch_forward(module, center, shape), atol=1e-6)
    region = _DOMAINS[domain](d, center)
    c = np.array([1.0, -1.0]) if objective == "c" else None
    output = {} if c is not None else {"output_norm": objective}
    for norm in ("linf", "l1"):
        truth = brute_force_lipschitz(*from_lipopt(net, region), c, norm,
                                      output_norm=objective).value  # fmt: skip
        alone = {"formulation": "forward" if c is not None else "backward"}
        for levers in ({}, {**alone, "split": False, "regions": False}):
            result = lipschitz(net, region, norm, c=c, **output, **levers)
            assert result.lower is not None and result.lower <= truth * (1 + 1e-9) + 1e-12
            if not levers or result.status == "optimal":
                assert result.status == "optimal", (norm, levers, result.status)
                assert result.value == pytest.approx(truth, rel=1e-6), (norm, levers)
            else:  # HiGHS's tolerances can leave the bound a hair above an attained optimum
                _assert_a_hair_above(result, truth)


def _assert_a_hair_above(result: Any, truth: float) -> None:
    """An ``upper_bound`` within 2e-6 relative of the truth, which its bracket contains, and
    that says why it is not ``optimal``."""
    assert result.status == "upper_bound" and "not proven exact" in result.message
    assert truth <= result.value <= truth * (1 + 2e-6)
