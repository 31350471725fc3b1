"""Train the two digits networks of issue 45's targets and write them under benchmarks/models/.

    pip install torch==2.13.0 && pip install -e ".[bench]"
    python benchmarks/train_scale_models.py

Architectures (logits out, no softmax), on the 8x8 digits that ship with scikit-learn::

    mlp:  Flatten -> Linear(64, 64) -> ReLU -> Linear(64, 64) -> ReLU -> Linear(64, 10)
    cnn:  Conv2d(1, 8, 3, padding=1) -> ReLU                              # 8 x 8 x 8
          Conv2d(8, 16, 3, stride=2, padding=1) -> ReLU                   # 16 x 4 x 4
          Flatten -> Linear(256, 64) -> ReLU -> Linear(64, 10)

The recipe is the bundled digits models' (``models/make_digits_cnn.py``): pixels / 16 in
[0, 1], the first 1,500 images in the dataset's order train, full batch, Adam (lr 0.02, 300
epochs, seed 0, one CPU thread); the other 297 are the test set. Each ONNX file (opset 17,
TorchScript exporter) is checked against lipopt's import on 50 test images, and
``scale-<model>.json`` records the recipe, accuracies and versions. ``scale-test.npz`` holds
the first 20 test images and labels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "models"))

from make_digits_cnn import EPOCHS, OPSET, TRAIN, accuracy, train  # noqa: E402

#: test images written beside the models
TEST_IMAGES = 20


def build(which: str) -> nn.Module:
    """The untrained network ``which`` (module docstring), torch seed 0."""
    torch.manual_seed(0)
    if which == "mlp":
        return nn.Sequential(
            nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )  # fmt: skip
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10),
    )  # fmt: skip


def export(which: str, out: Path, images: torch.Tensor, labels: torch.Tensor) -> float:
    """Train ``which``, write ``scale-<which>.onnx`` and ``.json``; the largest deviation of
    lipopt's import from torch on 50 test images."""
    from lipopt import load_onnx

    model = build(which)
    train(model, images[:TRAIN], labels[:TRAIN])
    path = out / f"scale-{which}.onnx"
    torch.onnx.export(model, (images[:1],), str(path), opset_version=OPSET, dynamo=False,
                      input_names=["image"], output_names=["logits"])  # fmt: skip
    net = load_onnx(path)
    with torch.no_grad():
        expected = model(images[TRAIN : TRAIN + 50]).numpy().astype(np.float64)
    got = np.array([net.forward(x.reshape(-1)) for x in images[TRAIN : TRAIN + 50].numpy()])
    worst = float(np.abs(got - expected).max())
    record = {
        "file": path.name, "input": "1x1x8x8 image, pixels / 16 in [0, 1]", "opset": OPSET,
        "train_images": TRAIN, "epochs": EPOCHS, "optimiser": "Adam lr 0.02, full batch",
        "train_accuracy": accuracy(model, images[:TRAIN], labels[:TRAIN]),
        "test_accuracy": accuracy(model, images[TRAIN:], labels[TRAIN:]),
        "lipopt_vs_torch_max_abs_diff": worst, "hidden_widths": list(net.hidden_widths),
        "versions": {"torch": torch.__version__, "numpy": np.__version__},
    }  # fmt: skip
    (out / f"scale-{which}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return worst


def main() -> int:
    from sklearn.datasets import load_digits

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "models")
    parser.add_argument("--models", default="mlp,cnn", help="comma list of mlp, cnn")
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    digits = load_digits()
    images = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
    labels = torch.tensor(digits.target, dtype=torch.long)
    test_x, test_y = images[TRAIN:].numpy(), labels[TRAIN:].numpy()
    np.savez(args.out / "scale-test.npz", images=test_x[:TEST_IMAGES].astype(np.float64),
             labels=test_y[:TEST_IMAGES])  # fmt: skip
    worst = max(export(which, args.out, images, labels) for which in args.models.split(","))
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
