"""The Jacobian-norm bound against FastLip on the bundled digits networks.

    python benchmarks/jacobian_bounds.py                      # 5 images x radii 0.05, 0.1
    python benchmarks/jacobian_bounds.py --images 0 --radii 0.05 --iterations 10 --out /tmp/j.md

For each network (``models/digits-cnn.onnx``, ``models/digits-resmlp.onnx``), each of the first
test images of ``models/digits-test.npz`` and each radius, the local Lipschitz constant of
``c^T f`` (c = the difference of the two top logits at the image, as in ``cnn.py``) over the ℓ∞
ball is bounded from above four ways: FastLip on interval bounds (the classic), FastLip on the
linear bounds, the Jacobian-norm bound with chord lines (:func:`jacobian_norm_bound`), and the
same with the slope search. A sampled lower bound (the largest ``||∇(c^T f)||_1`` at 20,000
uniform points of the ball, and the image) shows how far each upper bound can be from the truth.
Writes a markdown table (default ``benchmarks/results/jacobian_bounds.md``) with the machine
and date.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

NETWORKS = ("digits-cnn", "digits-resmlp")


def _timed(job: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = job()
    return out, time.perf_counter() - start


def case_row(net: Any, x: np.ndarray, radius: float, iterations: int) -> dict[str, Any]:
    """The four upper bounds (with their seconds) and the sampled lower bound for one ball."""
    from margins import top_two_margin

    from lipopt.bounds.interval import interval_bounds
    from lipopt.bounds.jacobian import fastlip_value, jacobian_norm_bound
    from lipopt.bounds.linear import linear_bounds
    from lipopt.domain import LinfBall
    from lipopt.norms import InputNorm, dual_norm

    c = top_two_margin(net, x)
    ball = LinfBall(x, radius)
    plain, t_plain = _timed(lambda: interval_bounds(net, ball, c))
    linear, t_linear = _timed(lambda: linear_bounds(net, ball, c))
    chord, t_chord = _timed(lambda: jacobian_norm_bound(net, ball, c, "linf", bounds=linear))
    searched = jacobian_norm_bound(net, ball, c, "linf", bounds=linear, iterations=iterations)
    points = np.vstack([x, ball.sample(20000, np.random.default_rng(0))])
    lower = float(np.max(dual_norm(net.gradients(points, c), "linf")))
    return {
        "unstable": linear.unstable_count,
        "fastlip": (fastlip_value(plain, InputNorm.LINF), t_plain),
        "fastlip_linear": (fastlip_value(linear, InputNorm.LINF), t_plain + t_linear),
        "chord": (chord.value, t_linear + t_chord),
        "searched": (searched.value, t_linear + searched.seconds),
        "lower": lower,
    }


def table(rows: list[tuple[str, int, float, dict[str, Any]]], argv: str, stamp: str) -> str:
    """The markdown table: each bound, its ratio to the sampled lower bound and its seconds."""
    lines = [
        "# Jacobian-norm bound against FastLip (ℓ∞ ball, c = top-2 logit difference)",
        "",
        f"Measured {stamp}. Command: `{('python benchmarks/jacobian_bounds.py ' + argv).strip()}`.",
        "",
        "Upper bounds on max ||∇(c^T f)||_1 over the ball, each as value (value / sampled lower"
        " bound, seconds); `linear` = the bounds of `lipopt.bounds.linear` (the Jacobian bounds"
        " use them, their seconds included).",
        "",
        "| network | image | radius | unstable | FastLip (interval) | FastLip (linear) "
        "| Jacobian, chords | Jacobian, slope search | sampled lower |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, image, radius, row in rows:
        low = row["lower"]
        cells = [
            f"{v:.4g} ({v / low:.2f}×, {s:.2f} s)"
            for v, s in (row[k] for k in ("fastlip", "fastlip_linear", "chord", "searched"))
        ]
        lines.append(
            f"| {name} | {image} | {radius} | {row['unstable']} | " + " | ".join(cells)
            + f" | {low:.4g} |"
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    from machine import run_stamp

    import lipopt

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", default="0,1,2,3,4")
    parser.add_argument("--radii", default="0.05,0.1")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "jacobian_bounds.md"
    )
    args = parser.parse_args(argv)
    images = np.load(ROOT / "models" / "digits-test.npz")["images"]
    rows = []
    for name in NETWORKS:
        net = lipopt.load_onnx(ROOT / "models" / f"{name}.onnx")
        for image in (int(i) for i in args.images.split(",")):
            for radius in (float(r) for r in args.radii.split(",")):
                row = case_row(net, images[image].reshape(-1), radius, args.iterations)
                rows.append((name, image, radius, row))
                print(name, image, radius, row, flush=True)
    text = table(rows, " ".join(sys.argv[1:] if argv is None else argv), run_stamp())
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
