"""Train and export the bundled digits models (issue 29) on the 8x8 handwritten digits that ship
with scikit-learn: a small CNN with batch normalisation and max-pooling, and a tiny residual MLP.

Usage::

    pip install torch==2.13.0 scikit-learn
    python models/make_digits_cnn.py [--out models/] [--models cnn,resmlp]

Architectures (no softmax, logits out)::

    cnn:    Conv2d(1, 4, 3, padding=1) -> BatchNorm2d(4) -> ReLU -> MaxPool2d(2)     # 4 x 4 x 4
            Conv2d(4, 8, 3, padding=1) -> ReLU -> MaxPool2d(2)                      # 8 x 2 x 2
            Flatten -> Linear(32, 10)
    resmlp: h = relu(Linear(64, 16) x); h = relu(h + Linear(16, 16) relu(Linear(16, 16) h));
            Linear(16, 10) h

Pixels are scaled to [0, 1] (the dataset's 0..16 divided by 16). The first 1,500 images (in
the dataset's order) train the network, full batch with Adam (lr 0.02, 300 epochs, seed 0, one
CPU thread); the other 297 are the test set, whose first 10 images and labels are written to
``digits-test.npz``. The ONNX file (opset 17, TorchScript exporter, eval mode) is checked
against onnxruntime and against lipopt's import on the test images; ``digits-<model>.json``
records the recipe, the accuracies and the versions. The residual MLP reads the same image
tensor (it flattens it first) and has the same recipe.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

OPSET = 17
TRAIN = 1500
EPOCHS = 300


class ResidualMlp(nn.Module):
    """``h = relu(A x)``, ``h = relu(h + C relu(B h))``, ``y = O h`` on the flattened image."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(64, 16), nn.Linear(16, 16)
        self.c, self.o = nn.Linear(16, 16), nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(torch.flatten(x, 1)))
        h = torch.relu(h + self.c(torch.relu(self.b(h))))
        return self.o(h)


def build(which: str) -> nn.Module:
    torch.manual_seed(0)
    if which == "resmlp":
        return ResidualMlp()
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32, 10),
    )  # fmt: skip


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    optimiser = torch.optim.Adam(model.parameters(), lr=0.02)
    model.train()
    for _ in range(EPOCHS):
        optimiser.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimiser.step()
    model.eval()


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())


def export(which: str, out: Path, images: torch.Tensor, labels: torch.Tensor) -> float:
    """Train model ``which``, write ``digits-<which>.onnx`` and ``.json``; the largest deviation
    of lipopt's import from onnxruntime on 50 test images."""
    model = build(which)
    train(model, images[:TRAIN], labels[:TRAIN])
    path = out / f"digits-{which}.onnx"
    torch.onnx.export(model, (images[:1],), str(path), opset_version=OPSET, dynamo=False,
                      input_names=["image"], output_names=["logits"])  # fmt: skip
    test_x = images[TRAIN:].numpy()
    import onnxruntime as ort

    from lipopt import load_onnx

    session, net = ort.InferenceSession(str(path)), load_onnx(path)
    worst = 0.0
    for image in test_x[:50]:
        expected = session.run(None, {"image": image[None]})[0].reshape(-1)
        worst = max(worst, float(np.abs(net.forward(image.reshape(-1)) - expected).max()))
    record = {
        "file": path.name, "input": "1x1x8x8 image, pixels / 16 in [0, 1]", "opset": OPSET,
        "train_images": TRAIN, "epochs": EPOCHS, "optimiser": "Adam lr 0.02, full batch",
        "train_accuracy": accuracy(model, images[:TRAIN], labels[:TRAIN]),
        "test_accuracy": accuracy(model, images[TRAIN:], labels[TRAIN:]),
        "lipopt_vs_onnxruntime_max_abs_diff": worst, "hidden_widths": list(net.hidden_widths),
        "versions": {"torch": torch.__version__, "numpy": np.__version__},
    }  # fmt: skip
    (out / f"digits-{which}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return worst


def main() -> int:
    from sklearn.datasets import load_digits

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--models", default="cnn,resmlp", help="comma list of cnn, resmlp")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    digits = load_digits()
    images = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
    labels = torch.tensor(digits.target, dtype=torch.long)
    test_x, test_y = images[TRAIN:].numpy(), labels[TRAIN:].numpy()
    np.savez(args.out / "digits-test.npz", images=test_x[:10].astype(np.float64),
             labels=test_y[:10])  # fmt: skip
    worst = max(export(which, args.out, images, labels) for which in args.models.split(","))
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
