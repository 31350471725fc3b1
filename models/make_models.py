"""Train and export the bundled example networks (Jordan & Dimakis, NeurIPS 2020, App. F.2).

Usage::

    python models/make_models.py [--out models/]

Each network is an ``nn.Sequential(Linear, ReLU, ..., Linear)`` (no softmax) trained full batch
with Adam and cross-entropy on the synthetic "leaders" dataset of :mod:`synthetic`, exported to
ONNX (input ``"input"``, output ``"logits"``, float32), checked against onnxruntime, and
described by a JSON sidecar ``<name>.json``. CPU, single thread, fixed seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import make_dataset  # noqa: E402

OPSET = 17
ALLOWED_OPS = frozenset(
    {"Gemm", "MatMul", "Add", "Relu", "Flatten", "Reshape", "Identity", "Constant"}
)
MAX_ABS_DIFF = 1e-4


@dataclass(frozen=True)
class DatasetSpec:
    """Arguments of :func:`synthetic.make_dataset`."""

    dim: int
    num_points: int
    min_separation: float
    num_classes: int
    num_leaders: int
    seed: int


@dataclass(frozen=True)
class ModelSpec:
    """One bundled network: architecture, data and training recipe."""

    name: str
    widths: tuple[int, ...]
    dataset: DatasetSpec
    epochs: int
    lr: float
    torch_seed: int


# min_separation: 0.01 in 2-D binds (256 uniform points would otherwise come ~0.003 apart);
# 0.05 in 10-D is a guard only (2000 uniform points in [0,1]^10 are ~0.25 apart at the closest).
SPECS: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="synthetic-2x20x40x20x2",
        widths=(2, 20, 40, 20, 2),
        dataset=DatasetSpec(
            dim=2, num_points=256, min_separation=0.01, num_classes=2, num_leaders=20, seed=0
        ),
        epochs=1000,
        lr=1e-3,
        torch_seed=0,
    ),
    ModelSpec(
        name="synthetic-10x20x30x20x2",
        widths=(10, 20, 30, 20, 2),
        dataset=DatasetSpec(
            dim=10, num_points=2000, min_separation=0.05, num_classes=2, num_leaders=20, seed=1
        ),
        epochs=500,
        lr=1e-3,
        torch_seed=1,
    ),
)


def build_mlp(widths: tuple[int, ...]) -> nn.Sequential:
    """``Linear, ReLU, ..., Linear`` with PyTorch's default initialisation."""
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=False)):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


def train(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float) -> None:
    """Full-batch Adam on cross-entropy, no weight decay."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()


def export_onnx(model: nn.Sequential, in_dim: int, path: Path) -> None:
    """TorchScript-based export (``dynamo=False``), dynamic batch dimension."""
    dummy = torch.zeros(1, in_dim, dtype=torch.float32)
    with warnings.catch_warnings():
        # The legacy exporter is deprecated since torch 2.9 but emits the plain Gemm/Relu graph.
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export")
        torch.onnx.export(
            model,
            (dummy,),
            str(path),
            input_names=["input"],
            output_names=["logits"],
            dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


def check_onnx(path: Path, model: nn.Sequential, x: np.ndarray) -> tuple[list[str], float]:
    """Validate the graph, its ops and its outputs against torch; return (ops, max abs diff)."""
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    ops = [node.op_type for node in proto.graph.node]
    unexpected = sorted(set(ops) - ALLOWED_OPS)
    if unexpected:
        raise RuntimeError(f"{path.name}: unexpected ONNX ops {unexpected}")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (onnx_out,) = session.run(["logits"], {"input": x})
    with torch.no_grad():
        torch_out = model(torch.from_numpy(x)).numpy()
    diff = float(np.max(np.abs(onnx_out - torch_out)))
    if diff >= MAX_ABS_DIFF:
        raise RuntimeError(f"{path.name}: onnxruntime and torch differ by {diff:.3g}")
    return ops, diff


def make_model(spec: ModelSpec, out_dir: Path) -> dict[str, Any]:
    """Generate data, train, export, verify and write the sidecar for one spec."""
    x_np, y_np = make_dataset(**asdict(spec.dataset))
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    torch.manual_seed(spec.torch_seed)
    model = build_mlp(spec.widths)
    start = time.perf_counter()
    train(model, x, y, spec.epochs, spec.lr)
    train_seconds = time.perf_counter() - start
    with torch.no_grad():
        accuracy = float((model(x).argmax(dim=1) == y).float().mean())

    onnx_path = out_dir / f"{spec.name}.onnx"
    export_onnx(model, spec.widths[0], onnx_path)
    ops, diff = check_onnx(onnx_path, model, x_np)

    sidecar = {
        "name": spec.name,
        "file": onnx_path.name,
        "widths": list(spec.widths),
        "architecture": "nn.Sequential(Linear, ReLU, ..., Linear), no softmax; output = logits",
        "dataset": {"generator": "models/synthetic.py:make_dataset", **asdict(spec.dataset)},
        "training": {
            "epochs": spec.epochs,
            "batch": "full",
            "optimizer": "Adam",
            "lr": spec.lr,
            "weight_decay": 0.0,
            "loss": "CrossEntropyLoss",
            "torch_seed": spec.torch_seed,
            "init": "PyTorch default (nn.Linear)",
        },
        "train_accuracy": round(accuracy, 6),
        "onnx": {
            "opset": OPSET,
            "input": "input",
            "output": "logits",
            "ops": ops,
            "max_abs_diff_vs_torch": diff,
        },
        "versions": {
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": ort.__version__,
            "numpy": np.__version__,
        },
    }
    (out_dir / f"{spec.name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    print(
        f"{spec.name}: train accuracy {accuracy:.4f}, trained in {train_seconds:.1f}s, "
        f"ops {ops}, max |onnx - torch| = {diff:.2e}"
    )
    return sidecar


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent, help="output directory"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    for spec in SPECS:
        make_model(spec, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
