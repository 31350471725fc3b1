"""The importer keeps convolutions sparse (issue 29): a convolution's matrix is built from index
arithmetic (:func:`conv_matrix`), equal to the numpy convolution; a 28x28 CNN with batch norm,
max-pooling, LeakyReLU and a linear head imports without any pending map made dense, and the
network is onnxruntime's."""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import numpy as np
import pytest

from lipopt.io import load_onnx
from lipopt.io.onnx.ops_conv import conv_matrix, convolve
from lipopt.io.onnx.symbolic import Symbolic

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
nn = torch.nn


@pytest.mark.parametrize(
    "dims, stride, pads, dilation, groups",
    [(1, 1, [0, 0], 1, 1), (1, 2, [1, 2], 2, 2), (2, 1, [1, 1, 1, 1], 1, 1),
     (2, 2, [1, 0, 0, 1], 2, 3), (2, 3, [2, 2, 2, 2], 1, 1), (3, 1, [1] * 6, 1, 1)],
)  # fmt: skip
def test_the_sparse_convolution_matrix_is_the_convolution(dims, stride, pads, dilation, groups):
    rng = np.random.default_rng(dims + stride)
    channels, filters = (6, 6) if groups == 3 else (4, 2 * groups)
    kernel = rng.normal(size=(filters, channels // groups, *(3,) * dims))
    geometry = {"strides": [stride] * dims, "dilations": [dilation] * dims, "pads": pads}
    image = rng.normal(size=(1, channels, *(7,) * dims))
    matrix = conv_matrix(image.shape[1:], kernel, geometry, groups)
    expected = convolve(image, kernel, geometry, groups).reshape(-1)
    assert np.allclose(matrix @ image.reshape(-1), expected, rtol=1e-12, atol=1e-12)
    assert matrix.nnz <= kernel.size * (matrix.shape[0] // filters)  # one entry per weight/cell


class _MnistSized(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Linear(8 * 3 * 3, 10)

    def forward(self, x: Any) -> Any:
        x = nn.functional.max_pool2d(torch.relu(self.norm(self.conv1(x))), 2)  # 8 x 14 x 14
        x = self.pool(nn.functional.leaky_relu(self.conv2(x), 0.1))  # 8 x 3 x 3
        return self.head(torch.flatten(x, 1))


class _ResidualMnistSized(nn.Module):
    """Conv-ReLU, a residual block ``relu(h + Conv(h))``, global average pooling, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, stride=2)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.head = nn.Linear(4, 10)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.conv1(x))  # 4 x 13 x 13
        h = torch.relu(h + self.conv2(h))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))


@pytest.mark.parametrize("kind", [_MnistSized, _ResidualMnistSized])
def test_a_28x28_cnn_imports_without_a_dense_pending_map(kind, monkeypatch):
    """Conv, BatchNorm, MaxPool, LeakyReLU, AveragePool, Gemm; or a residual block and global
    average pooling: no pending map over 100 x 784 entries is ever made dense."""
    torch.manual_seed(0)
    module = kind().eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.zeros(1, 1, 28, 28),), buffer, dynamo=False)
    model = buffer.getvalue()
    original = Symbolic.full_linear

    def refuse(self: Symbolic) -> Any:
        if self.width * int(np.prod(self.shape)) > 784 * 100:
            raise AssertionError(f"a {self.width} x {self.shape} map was made dense")
        return original(self)

    monkeypatch.setattr(Symbolic, "full_linear", refuse)
    net = load_onnx(model)
    monkeypatch.setattr(Symbolic, "full_linear", original)
    assert net.affine_layers[0].is_sparse and net.affine_layers[0].in_features == 784
    session = ort.InferenceSession(model)
    name = session.get_inputs()[0].name
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(size=(1, 1, 28, 28))
        expected = session.run(None, {name: x.astype(np.float32)})[0].reshape(-1)
        assert np.allclose(net.forward(x.reshape(-1)), expected, rtol=1e-4, atol=1e-4)
