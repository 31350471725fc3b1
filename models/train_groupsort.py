"""Train and export the bundled 1-Lipschitz-style GroupSort network (issue 46) on a 2-D two-moons
dataset made with numpy.

Usage::

    pip install torch==2.13.0 onnx onnxruntime
    python models/train_groupsort.py [--out models/]

Architecture (no softmax, logits out), in the style of Anil et al. 2019 (orthonormal weights,
GroupSort activations)::

    Linear(2, 16) -> GroupSort-2 -> Linear(16, 16) -> GroupSort-2 -> Linear(16, 2)

GroupSort-2 sorts each pair of entries (``torch.sort`` of ``view(-1, 8, 2)``; ONNX ``TopK``).
Each weight is Björck-orthonormalised in the forward pass (``W <- W (3/2 I - 1/2 WᵀW)``, 20
steps after scaling by the Frobenius norm), so every layer has spectral norm at most 1 (to the
iteration's accuracy) and the network is close to 1-Lipschitz in ℓ2; the exported model holds the
orthonormalised weights as plain ``Linear`` layers.

Data: 600 points of two interleaved half circles (radius 1, centres (0, 0) and (1, 0.5), the
lower one flipped), Gaussian noise 0.1, drawn with ``numpy.random.default_rng(0)``; the first
500 train (full batch, Adam lr 0.01, 400 epochs, multi-class hinge loss with margin 0.5, torch
seed 0, one CPU thread, deterministic algorithms), the other 100 test. The ONNX file (opset 17,
TorchScript exporter, eval mode) is checked against onnxruntime and lipopt's import;
``moons-groupsort.json`` records the recipe, accuracies, the spectral norms, kinked neurons,
date and versions.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

OPSET = 17
SEED = 0
POINTS, TRAIN = 600, 500
EPOCHS, LR, MARGIN = 400, 0.01, 0.5
WIDTH = 16
NAME = "moons-groupsort"


def two_moons(points: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles with Gaussian noise; labels 0 (upper) and 1 (lower)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=points)
    angle = rng.uniform(0.0, np.pi, size=points)
    upper = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    lower = np.stack([1.0 - np.cos(angle), 0.5 - np.sin(angle)], axis=1)
    x = np.where(labels[:, None] == 0, upper, lower) + noise * rng.normal(size=(points, 2))
    return x.astype(np.float32), labels.astype(np.int64)


def bjorck(weight: torch.Tensor, steps: int = 20) -> torch.Tensor:
    """The nearest matrix with orthonormal rows or columns, by Björck's iteration."""
    tall = weight.shape[0] >= weight.shape[1]
    w = weight if tall else weight.T
    w = w / w.norm()
    eye = torch.eye(w.shape[1], dtype=w.dtype)
    for _ in range(steps):
        w = w @ (1.5 * eye - 0.5 * w.T @ w)
    return w if tall else w.T


class OrthoLinear(nn.Linear):
    """A linear layer whose weight is Björck-orthonormalised in the forward pass."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, bjorck(self.weight), self.bias)


class GroupSort2(nn.Module):
    """Sort each consecutive pair of entries (ascending)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = x.shape[-1]
        return torch.sort(x.view(-1, width // 2, 2), dim=-1)[0].view(-1, width)


def network(linear: type[nn.Linear]) -> nn.Sequential:
    return nn.Sequential(linear(2, WIDTH), GroupSort2(), linear(WIDTH, WIDTH), GroupSort2(),
                         linear(WIDTH, 2))  # fmt: skip


def train(x: torch.Tensor, y: torch.Tensor) -> nn.Sequential:
    """Full-batch Adam on the multi-class hinge loss (the usual loss of 1-Lipschitz nets)."""
    torch.manual_seed(SEED)
    model = network(OrthoLinear)
    optimiser = torch.optim.Adam(model.parameters(), lr=LR)
    loss = nn.MultiMarginLoss(margin=MARGIN)
    for _ in range(EPOCHS):
        optimiser.zero_grad()
        loss(model(x), y).backward()
        optimiser.step()
    return model.eval()


def frozen(model: nn.Sequential) -> nn.Sequential:
    """The same network with its orthonormalised weights in plain Linear layers."""
    plain = network(nn.Linear)
    with torch.no_grad():
        for source, target in zip(model, plain):
            if isinstance(source, OrthoLinear) and isinstance(target, nn.Linear):
                target.weight.copy_(bjorck(source.weight))
                target.bias.copy_(source.bias)
    return plain.eval()


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def export(model: nn.Module) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 2),), buffer,  # type: ignore[arg-type]
                          opset_version=OPSET, dynamo=False,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})  # fmt: skip
    return buffer.getvalue()


def check(data: bytes, x: np.ndarray) -> tuple[float, float, list[int]]:
    """Largest deviations of onnxruntime and of lipopt's import from torch's float32 run of
    the ONNX model, and the kinked neurons per hidden layer of the import."""
    from lipopt.io import load_onnx

    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    runtime = session.run(None, {"input": x})[0]
    net = load_onnx(data)
    ours = net.forward(x.astype(np.float64))
    kinks = [int(np.count_nonzero(alpha != 1.0)) for alpha in net.slopes]
    return float(np.max(np.abs(runtime - ours))), float(np.max(np.abs(ours))), kinks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    out = parser.parse_args().out
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x, y = two_moons(POINTS, 0.1, SEED)
    inputs, labels = torch.from_numpy(x), torch.from_numpy(y)
    model = frozen(train(inputs[:TRAIN], labels[:TRAIN]))
    data = export(model)
    (out / f"{NAME}.onnx").write_bytes(data)
    deviation, _, kinks = check(data, x)
    with torch.no_grad():
        norms = [
            float(torch.linalg.matrix_norm(m.weight, 2)) for m in model if hasattr(m, "weight")
        ]
    record = {
        "file": f"{NAME}.onnx",
        "script": "models/train_groupsort.py",
        "architecture": "Linear(2,16) GroupSort-2 Linear(16,16) GroupSort-2 Linear(16,2)",
        "input": "a point of the plane (two moons: radius 1, noise 0.1)",
        "data": {"points": POINTS, "train": TRAIN, "noise": 0.1, "numpy_seed": SEED},
        "opset": OPSET,
        "torch_seed": SEED,
        "epochs": EPOCHS,
        "optimiser": f"Adam lr {LR}, full batch, MultiMarginLoss margin {MARGIN}",
        "weights": "Bjorck-orthonormalised (20 steps), exported as plain Linear layers",
        "spectral_norms": norms,
        "train_accuracy": accuracy(model, inputs[:TRAIN], labels[:TRAIN]),
        "test_accuracy": accuracy(model, inputs[TRAIN:], labels[TRAIN:]),
        "lipopt_vs_onnxruntime_max_abs_diff": deviation,
        "kinked_neurons_per_layer": kinks,
        "date": datetime.date.today().isoformat(),
        "versions": {
            "torch": torch.__version__,
            "numpy": np.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": ort.__version__,
        },  # fmt: skip
    }
    (out / f"{NAME}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
