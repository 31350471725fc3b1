"""Convolutions, average pooling and Transpose (issue 29, first part): the numpy convolution
against torch's, and models exported by torch with both exporters against onnxruntime; a small
CNN's exact constant against the brute-force oracle on its dense equivalent."""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import pytest

from benchmarks.margins import top_two_margin
from lipopt import LinfBall, lipschitz
from lipopt.bounds import propagate
from lipopt.io import OnnxImportError, load_onnx
from lipopt.io.onnx.ops_conv import convolve
from tests.oracle import brute_force_lipschitz, from_lipopt

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
nn = torch.nn
F = torch.nn.functional


@pytest.mark.parametrize(
    "dims, stride, padding, dilation, groups",
    [(1, 1, 0, 1, 1), (1, 2, 1, 2, 2), (2, 1, 1, 1, 1), (2, 2, (1, 0), (1, 2), 3), (2, 3, 2, 1, 1)],
)
def test_the_numpy_convolution_is_torchs(dims, stride, padding, dilation, groups):
    rng = np.random.default_rng(dims * 10 + groups)
    spatial = (9,) * dims
    images = rng.normal(size=(2, 6, *spatial))
    kernel = rng.normal(size=(6, 6 // groups, *(3,) * dims))
    pad = (padding,) * dims if isinstance(padding, int) else padding
    geometry = {
        "strides": [stride] * dims,
        "dilations": [dilation] * dims if isinstance(dilation, int) else list(dilation),
        "pads": [*pad, *pad],
    }
    ours = convolve(images, kernel, geometry, groups)
    conv = F.conv1d if dims == 1 else F.conv2d
    theirs = conv(torch.from_numpy(images), torch.from_numpy(kernel), stride=stride,
                  padding=padding, dilation=dilation, groups=groups).numpy()  # fmt: skip
    assert ours.shape == theirs.shape
    assert np.allclose(ours, theirs, rtol=1e-12, atol=1e-12)


class _Cnn(nn.Module):
    """Conv, BatchNorm, ReLU, Conv (strided, grouped, dilated), AvgPool, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)
        self.pool = nn.AvgPool2d(2, padding=1, count_include_pad=False)
        self.head = nn.Linear(6 * 3 * 3, 3)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.norm(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.head(torch.flatten(x, 1))


class _Global(nn.Module):
    """Conv1d, ReLU, a 1x1 Conv1d, ReLU, a Transpose, global average pooling, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 5, 3, stride=2)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.mix = nn.Conv1d(5, 4, 1)
        self.head = nn.Linear(4, 2)

    def forward(self, x: Any) -> Any:
        y = torch.relu(self.mix(torch.relu(self.conv(x))))  # (1, 4, 4)
        pooled = self.pool(y.permute(0, 2, 1))  # channels last, pooled over the channels
        return self.head(pooled.reshape(1, -1))


def _model(kind: str) -> tuple[Any, Any]:
    torch.manual_seed(3)
    if kind == "cnn":
        module = _Cnn().eval()
        with torch.no_grad():
            module.norm.running_mean.uniform_(-0.5, 0.5)
            module.norm.running_var.uniform_(0.5, 2.0)
        return module, torch.randn(1, 1, 8, 8)
    return _Global().eval(), torch.randn(1, 2, 9)


def _export(module: Any, example: Any, opset: int, dynamo: bool, path: Any) -> Any:
    if dynamo:
        pytest.importorskip("onnxscript")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with io.StringIO() as quiet, _redirect(quiet):
            torch.onnx.export(module, (example,), str(path), opset_version=opset, dynamo=dynamo)
    return path


def _redirect(stream: Any) -> Any:
    import contextlib  # noqa: PLC0415

    return contextlib.redirect_stdout(stream)


@pytest.mark.parametrize("kind", ["cnn", "global"])
@pytest.mark.parametrize(
    "opset, dynamo", [(13, False), (17, False), (20, False), (18, True), (20, True)]
)
def test_torch_exports_import_and_match_onnxruntime(kind, opset, dynamo, tmp_path):
    module, example = _model(kind)
    path = _export(module, example, opset, dynamo, tmp_path / "m.onnx")
    net = load_onnx(path)
    for x in _against_onnxruntime(net, path, tuple(example.shape), opset, 5):
        with torch.no_grad():
            exact = module.double()(torch.from_numpy(x.astype(np.float64))).numpy().reshape(-1)
        module.float()
        ours = net.forward(x.reshape(-1).astype(np.float64))
        assert np.allclose(ours, exact, rtol=1e-6, atol=1e-6)  # float32 weights, exact maps


def _against_onnxruntime(net: Any, path: Any, shape: tuple, seed: int, trials: int) -> list:
    """``trials`` random inputs on which the network agrees with onnxruntime (float32) to
    1e-5; returns them, for further checks."""
    session = ort.InferenceSession(str(path))
    name = session.get_inputs()[0].name
    rng = np.random.default_rng(seed)
    inputs = [rng.normal(size=shape).astype(np.float32) for _ in range(trials)]
    for x in inputs:
        expected = session.run(None, {name: x})[0].reshape(-1)
        ours = net.forward(x.reshape(-1).astype(np.float64))
        assert np.allclose(ours, expected, rtol=1e-5, atol=1e-5 * max(np.abs(expected).max(), 1))
    return inputs


def test_a_small_cnns_constant_is_the_oracles_on_its_dense_equivalent(tmp_path):
    """A 1x4x4 input, a strided convolution, ReLU, average pooling, a linear head: the exact
    ℓ∞ constant over a ball is the oracle's on the imported dense layers, which agree with
    torch's forward pass."""
    torch.manual_seed(5)
    module = nn.Sequential(
        nn.Conv2d(1, 3, 2, stride=1), nn.ReLU(), nn.AvgPool2d(2, stride=1), nn.Flatten(),
        nn.Linear(3 * 2 * 2, 2),
    ).eval()  # fmt: skip
    example = torch.randn(1, 1, 4, 4)
    net = load_onnx(_export(module, example, 17, False, tmp_path / "small.onnx"))
    ball = LinfBall(np.full(16, 0.1), 0.3)
    c = np.array([1.0, -1.0])
    truth = brute_force_lipschitz(*from_lipopt(net, ball), c, "linf").value
    result = lipschitz(net, ball, c=c)
    assert result.status == "optimal" and result.value == pytest.approx(truth, rel=1e-6)


def test_max_pooling_of_a_signed_tensor_compiles_with_identity_carries(tmp_path):
    """Max-pooling of a conv's (signed) output: pairwise ``b + relu(a - b)`` with ``b`` an
    identity neuron (module ops_max): 3 kinked neurons per 2x2 window, 2 * 3 * 3 windows."""
    module = nn.Sequential(nn.Conv2d(1, 2, 3), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(),
                           nn.Linear(2 * 3 * 3, 1)).eval()  # fmt: skip
    path = _export(module, torch.randn(1, 1, 8, 8), 17, False, tmp_path / "max.onnx")
    net = load_onnx(path)
    x = np.random.default_rng(0).normal(size=(20, 64))
    with torch.no_grad():
        expected = module.double()(torch.from_numpy(x.reshape(20, 1, 8, 8))).numpy()
    assert np.allclose(net.forward(x), expected, rtol=1e-9, atol=1e-9)
    kinked = [int(np.count_nonzero(alpha != 1.0)) for alpha in net.slopes]
    assert kinked[:2] == [2 * 3 * 3 * 2, 2 * 3 * 3]


def test_from_torch_is_the_module_and_leaves_its_mode(tmp_path):
    """``lipopt.from_torch``: no file; the network equals the module (double precision) and the
    exported ONNX file's import; a training module is exported in eval mode and stays
    training; an unsupported op is the importer's one-line error."""
    import lipopt  # noqa: PLC0415

    module, example = _model("cnn")
    module.train()
    net = lipopt.from_torch(module, example)
    assert module.training
    module.eval()
    x = np.random.default_rng(0).normal(size=tuple(example.shape))
    with torch.no_grad():
        exact = module.double()(torch.from_numpy(x)).numpy().reshape(-1)
    module.float()
    assert np.allclose(net.forward(x.reshape(-1)), exact, rtol=1e-6, atol=1e-6)
    with pytest.raises(OnnxImportError, match=r"unsupported ONNX op 'Sigmoid'"):
        lipopt.from_torch(nn.Sequential(nn.Linear(2, 2), nn.Sigmoid()), torch.zeros(1, 2))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        lipopt.from_torch(lambda t: t, torch.zeros(1, 2))


def test_from_torch_without_torch_says_how_to_install(monkeypatch):
    import sys  # noqa: PLC0415

    from lipopt.io.torch import from_torch  # noqa: PLC0415

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    with pytest.raises(ImportError, match=r"pip install torch==2.13.0 \(the CPU build"):
        from_torch(object(), object())


class _Piecewise(nn.Module):
    """Conv, ReLU, MaxPool (3x3 windows, stride 2, padded: an odd member carried), Conv,
    LeakyReLU, a 1x1 Conv, ReLU, MaxPool 2x2, PReLU (per channel), Hardtanh (Clip), Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 3, 3, padding=1)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(3, 4, 2)
        self.leaky = nn.LeakyReLU(0.2)
        self.mix = nn.Conv2d(4, 4, 1)
        self.pool2 = nn.MaxPool2d(2)
        self.prelu = nn.PReLU(4, init=0.3)
        self.clip = nn.Hardtanh(-0.5, 0.8)
        self.head = nn.Linear(4, 2)

    def forward(self, x: Any) -> Any:
        x = self.pool1(torch.relu(self.conv1(x)))  # (1, 3, 4, 4)
        x = self.pool2(torch.relu(self.mix(self.leaky(self.conv2(x)))))  # (1, 4, 1, 1)
        return self.head(torch.flatten(self.clip(self.prelu(x)), 1))


@pytest.mark.parametrize("opset, dynamo", [(13, False), (20, False), (18, True)])
def test_piecewise_ops_import_and_match_onnxruntime(opset, dynamo, tmp_path):
    torch.manual_seed(7)
    module = _Piecewise().eval()
    example = torch.randn(1, 1, 7, 7)
    path = _export(module, example, opset, dynamo, tmp_path / "p.onnx")
    assert len(_against_onnxruntime(load_onnx(path), path, (1, 1, 7, 7), opset, 20)) == 20


@pytest.mark.parametrize("kind", ["maxpool", "leaky", "clip"])
def test_piecewise_networks_have_the_oracles_constant(kind, tmp_path):
    """Small networks with each compiled op: the exact ℓ∞ and ℓ1 constants over a ball are the
    oracle's on the compiled ReLU network, whose forward pass is torch's; the max-pooling's
    pass-through neurons are stable (one binary per difference only)."""
    torch.manual_seed(11)
    activation = {"maxpool": nn.ReLU(), "leaky": nn.LeakyReLU(0.1), "clip": nn.Hardtanh(-0.3, 0.4)}
    layers = [nn.Conv2d(1, 2, 2), activation[kind]]
    layers += [nn.MaxPool2d(2)] if kind == "maxpool" else []
    width = 2 * (1 if kind == "maxpool" else 4)
    module = nn.Sequential(*layers, nn.Flatten(), nn.Linear(width, 2)).eval()
    example = torch.randn(1, 1, 3, 3)
    net = load_onnx(_export(module, example, 17, False, tmp_path / f"{kind}.onnx"))
    x = np.random.default_rng(1).normal(size=9)
    with torch.no_grad():
        exact = module.double()(torch.from_numpy(x.reshape(1, 1, 3, 3))).numpy().reshape(-1)
    assert np.allclose(net.forward(x), exact, rtol=1e-6, atol=1e-6)
    ball = LinfBall(np.zeros(9), 0.5)
    c = np.array([1.0, -1.0])
    for norm in ("linf", "l1"):
        truth = brute_force_lipschitz(*from_lipopt(net, ball), c, norm).value
        for levers in ({}, {"split": False, "regions": False, "formulation": "backward"}):
            result = lipschitz(net, ball, norm, c=c, **levers)
            assert result.status == "optimal" and result.value == pytest.approx(truth, rel=1e-6)
    if kind == "maxpool":  # 8 conv neurons, then 4 differences and 4 stable pass-throughs
        bounds = propagate(net, ball, c)
        assert bounds.unstable_count <= 8 + 4


def test_the_bundled_digits_cnn_imports_and_agrees_with_onnxruntime():
    """models/digits-cnn.onnx (models/make_digits_cnn.py): its 10 bundled test images give
    onnxruntime's logits (float32) and class; its ℓ∞ constant over a small ball is bracketed
    with the attained value below the proven bound."""
    from pathlib import Path  # noqa: PLC0415

    root = Path(__file__).resolve().parents[2] / "models"
    net = load_onnx(root / "digits-cnn.onnx")
    data = np.load(root / "digits-test.npz")
    session = ort.InferenceSession(str(root / "digits-cnn.onnx"))
    for image in data["images"]:
        expected = session.run(None, {"image": image[None].astype(np.float32)})[0].reshape(-1)
        ours = net.forward(image.reshape(-1))
        assert np.allclose(ours, expected, rtol=1e-5, atol=1e-4)
        assert np.argmax(ours) == np.argmax(expected)
    assert np.mean([np.argmax(net.forward(i.reshape(-1))) for i in data["images"]]
                   == data["labels"]) >= 0.8  # fmt: skip
    x = data["images"][1].reshape(-1)
    c = top_two_margin(net, x)
    result = lipschitz(net, LinfBall(x, 0.002), c=c, time_limit=5)
    assert result.lower is not None and result.lower <= result.upper
