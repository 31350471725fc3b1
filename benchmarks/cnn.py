"""The bundled digits CNN at scale (issue 29): sparse against dense weight storage.

    python benchmarks/cnn.py                          # 10 images x radii 0.01, 0.05, 60 s
    python benchmarks/cnn.py --images 0,1 --radii 0.01 --time-limit 20 --out /tmp/cnn.md
    python benchmarks/cnn.py --images=-1 --radii 0.01        # only the 28×28 CNN (LP mode)

For each of the first test images of ``models/digits-test.npz`` and each radius, the local
Lipschitz constant of ``c^T f`` (c = the difference of the two top logits at the image) over the
ℓ∞ ball is solved with lipopt's defaults, once on the network as imported (convolution and
max-pooling layers stored sparse) and once on its dense equivalent (``Network.dense()``: the
same maps, every weight a dense array), each in a fresh process so that peak memory is that
solve's own. The two run in turn per case, alternating which goes first. Writes a markdown table
(default ``benchmarks/results/cnn.md``) with the machine and date: status, bracket, model size
(variables, constraints, binaries, the weights' stored entries), unstable neurons, seconds (the
solve's total and the model build) and peak memory. Image -1 (included by default) is a
28×28 CNN with random weights (``mnist_sized_cnn``), solved in LP mode: what sparse storage
saves in the bounds and the model at MNIST size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


#: where main() writes the 28×28 CNN for the solving processes (which then need no torch, whose
#: import alone would dominate their peak memory)
MNIST_SIZED = "LIPOPT_BENCH_CNN28"


def mnist_sized_cnn(path: Path) -> None:
    """Conv(1→16, 3, padding 1) ReLU Conv(16→8, 3, stride 2, padding 1) ReLU Linear(→10) on
    1×28×28 (hidden widths 12544 and 1568), random weights (torch's initialisation, seed 0),
    exported by torch to ``path``."""
    import torch

    torch.manual_seed(0)
    nn = torch.nn
    module = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                           nn.Conv2d(16, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                           nn.Linear(8 * 14 * 14, 10)).eval()  # fmt: skip
    torch.onnx.export(module, (torch.zeros(1, 1, 28, 28),), str(path), dynamo=False)


def _network_and_point(image: int) -> tuple[Any, np.ndarray]:
    """The digits CNN and test image ``image``, or (image -1) the 28×28 CNN and a random image."""
    import lipopt

    if image < 0:
        net = lipopt.load_onnx(os.environ[MNIST_SIZED])
        return net, np.random.default_rng(0).uniform(size=784)
    net = lipopt.load_onnx(ROOT / "models" / "digits-cnn.onnx")
    return net, np.load(ROOT / "models" / "digits-test.npz")["images"][image].reshape(-1)


def _solve(case: tuple[int, float, str, float], queue: Any) -> None:
    """One solve in this (fresh) process; puts a row of results on ``queue``. Image -1: the
    28×28 CNN, in LP mode (the relaxation's bound: bounds and model at that size)."""
    from margins import top_two_margin

    import lipopt

    image, radius, storage, limit = case
    net, x = _network_and_point(image)
    net = net.dense() if storage == "dense" else net
    c = top_two_margin(net, x)
    mode = "lp" if image < 0 else "exact"
    start = time.perf_counter()
    result = lipopt.lipschitz(net, lipopt.LinfBall(x, radius), c=c, time_limit=limit, mode=mode)
    seconds = time.perf_counter() - start
    usage = max(resource.getrusage(who).ru_maxrss for who in
                (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
    stats = result.model_stats
    stored = sum(a.nonzeros if a.is_sparse else a.matrix.size for a in net.affine_layers)
    queue.put({
        "image": image, "radius": radius, "storage": storage, "status": result.status,
        "lower": result.lower, "upper": result.upper, "seconds": seconds,
        "build": result.timings.get("build", 0.0), "peak_mb": usage / 1024,
        "variables": stats.get("variables", 0), "constraints": stats.get("constraints", 0),
        "binaries": stats.get("binaries", 0), "unstable": stats.get("unstable_neurons", 0),
        "stored": stored,
    })  # fmt: skip


def run_case(case: tuple[int, float, str, float]) -> dict[str, Any]:
    """One solve in a fresh (spawned) process."""
    from machine import in_fresh_process

    return in_fresh_process(_solve, case)


def _commit() -> str:
    """The code measured: the short commit hash, ``+`` if the tree has local changes."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout

    dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    return (git("rev-parse", "--short", "HEAD").strip() or "unknown") + ("+" if dirty else "")


def _bracket(row: dict[str, Any]) -> str:
    lower = "–" if row["lower"] is None else f"{row['lower']:.6g}"
    if row["status"] == "optimal":
        return f"{row['upper']:.6g}"
    return f"[{lower}, {row['upper']:.6g}]"


def table(rows: list[dict[str, Any]], argv: list[str], stamp: str) -> str:
    """The markdown table: sparse and dense side by side per case, and the totals."""
    lines = [
        "# The digits CNN at scale: sparse against dense storage (issue 29)", "",
        f"Command: `python benchmarks/cnn.py {' '.join(argv)}`  ", f"Machine: {stamp}.  ",
        f"Code at commit {_commit()}.  ",
        "Network: `models/digits-cnn.onnx` (hidden widths 256, 256, 128, 128, 128, 64 after "
        "compiling its max-pooling); image -1: the 28×28 CNN of `mnist_sized_cnn` in LP mode. "
        "c = the two top logits' difference; ℓ∞ balls; lipopt's "
        "defaults. Value = exact constant (optimal) or [lower, upper] at the limit. Model = "
        "variables / constraints / binaries of the MIP; stored = weight entries kept. "
        "Seconds: total (build). Peak memory in MB.", "",
        "| image | radius | storage | status | value | model | stored | unstable | seconds "
        "| peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in rows:
        model = f"{r['variables']} / {r['constraints']} / {r['binaries']}"
        image = "28×28 CNN, LP mode" if r["image"] < 0 else r["image"]
        lines.append(
            f"| {image} | {r['radius']} | {r['storage']} | {r['status']} | {_bracket(r)} | "
            f"{model} | {r['stored']} | {r['unstable']} | {r['seconds']:.1f} ({r['build']:.2f}) "
            f"| {r['peak_mb']:.0f} |"
        )
    lines += ["", *summary(rows)]
    return "\n".join(lines) + "\n"


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """Per storage: how many exact, total seconds and build seconds, largest peak memory."""
    out = []
    for storage in ("sparse", "dense"):
        mine = [r for r in rows if r["storage"] == storage and r["image"] >= 0]
        if not mine:
            continue
        exact = sum(r["status"] == "optimal" for r in mine)
        out.append(
            f"- {storage}: {exact} of {len(mine)} exact; {sum(r['seconds'] for r in mine):.1f} s "
            f"in all, model builds {sum(r['build'] for r in mine):.2f} s; peak memory up to "
            f"{max(r['peak_mb'] for r in mine):.0f} MB."
        )
    return out


def main(argv: list[str] | None = None) -> int:
    from machine import run_stamp

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", default=",".join(map(str, [-1, *range(10)])))
    parser.add_argument("--radii", default="0.01,0.05")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cnn.md")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    rows: list[dict[str, Any]] = []
    turn = 0
    scratch = tempfile.TemporaryDirectory()
    os.environ[MNIST_SIZED] = str(Path(scratch.name) / "cnn28.onnx")
    mnist_sized_cnn(Path(os.environ[MNIST_SIZED]))
    for image in (int(i) for i in args.images.split(",")):
        for radius in (float(r) for r in args.radii.split(",")):
            order = ("sparse", "dense") if turn % 2 == 0 else ("dense", "sparse")
            turn += 1
            found = {s: run_case((image, radius, s, args.time_limit)) for s in order}
            for storage in ("sparse", "dense"):
                rows.append(found[storage])
                print(json.dumps(found[storage]), flush=True)
            args.out.write_text(table(rows, argv, run_stamp()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
