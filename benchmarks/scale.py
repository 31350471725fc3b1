"""Brackets at scale (issue 45): ratio upper/lower, exactness, sub-domains and memory.

    PYTHONPATH=. python benchmarks/scale.py --suite all --plot          # -> results/scale.md
    PYTHONPATH=. python benchmarks/scale.py --suite all --vs ../before --plot   # before, after
    PYTHONPATH=. python benchmarks/scale.py --suite targets --images 2 --radii 0.05 \
        --time-limit 10 --out /tmp/scale.md                             # a quick look
    PYTHONPATH=. python benchmarks/scale.py --suite bundled --networks digits-cnn --radii 0.05

The full run is 140 cases per side (40 targets, 60 bundled, 40 mnist): at most about 2 h 20 min
per side at 60 s a solve.

Suites (``--suite``, default ``all``):

* ``targets``: the issue's two networks on the 8×8 digits, ``benchmarks/models/scale-mlp.onnx``
  (MLP 64-64-64-10) and ``scale-cnn.onnx`` (conv8-conv16/2-fc64-fc10), trained by
  ``train_scale_models.py``, at ℓ∞ radii 0.05 and 0.1 around the first ``--images`` (10) of
  ``scale-test.npz``'s images. Targets: median ratio ≤ 1.10, none above 1.5, at least half exact.
* ``bundled``: ``models/digits-cnn.onnx`` and ``models/digits-resmlp.onnx`` at radii 0.01, 0.05
  and 0.1 around the 10 images of ``models/digits-test.npz``. Target: the CNN at 0.05 ≤ 1.2 on
  every image.
* ``mnist``: two MNIST-shaped networks like Shi et al.'s model zoo, with random weights (torch's
  default initialisation, ``torch.manual_seed(0)``; see ``mnist_networks``) exported by this
  process to a temporary folder: an MLP 784-20-20-10 and a CNN on 1×28×28, Conv(1→8, 3, stride
  2, padding 1) ReLU Conv(8→8, 3, stride 2, padding 1) ReLU Linear(392→100) ReLU Linear(→10)
  (the strides keep it tractable: hidden widths 1568, 392, 100). Image i is
  ``np.random.default_rng(i).uniform(size=784)``; radii 0.01 and 0.05.

c is the difference of the two top logits at the image (computed here, the same for every
checkout); the domain is ``lipopt.LinfBall(x, radius)``; lipopt's defaults with ``--time-limit``
(60 s). Each solve runs as a fresh process (``scale_solve.py``) with ``PYTHONPATH`` and the
working directory set to the checkout measured; ``--vs CHECKOUT`` solves every case also with
that checkout ("before"), the two in turn, alternating which goes first. Writes the markdown
table (``--out``, default ``benchmarks/results/scale.md``), the raw rows (``--jsonl``, default
beside it) and with ``--plot`` a PNG of each row's final ratio against its wall seconds
(``scale_report.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: the child that solves one case
SOLVER = ROOT / "benchmarks" / "scale_solve.py"
#: (network, ONNX path relative to ROOT, the images' npz relative to ROOT) per suite
SUITES: dict[str, list[tuple[str, str, str]]] = {
    "targets": [
        ("scale-mlp", "benchmarks/models/scale-mlp.onnx", "benchmarks/models/scale-test.npz"),
        ("scale-cnn", "benchmarks/models/scale-cnn.onnx", "benchmarks/models/scale-test.npz"),
    ],
    "bundled": [
        ("digits-cnn", "models/digits-cnn.onnx", "models/digits-test.npz"),
        ("digits-resmlp", "models/digits-resmlp.onnx", "models/digits-test.npz"),
    ],
    "mnist": [("mnist-mlp", "", ""), ("mnist-cnn", "", "")],
}
#: the radii of each suite unless ``--radii`` is given
RADII = {"targets": (0.05, 0.1), "bundled": (0.01, 0.05, 0.1), "mnist": (0.01, 0.05)}


def mnist_networks(folder: Path) -> dict[str, Path]:
    """The two MNIST-shaped networks of the ``mnist`` suite (random weights: torch's default
    initialisation after ``torch.manual_seed(0)``, the MLP first), written to ``folder`` as
    ONNX by torch; both take a 1×1×28×28 image."""
    import warnings

    import torch

    nn = torch.nn
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 20), nn.ReLU(), nn.Linear(20, 20),
                        nn.ReLU(), nn.Linear(20, 10))  # fmt: skip
    cnn = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
                        nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                        nn.Linear(8 * 7 * 7, 100), nn.ReLU(), nn.Linear(100, 10))  # fmt: skip
    paths = {}
    for name, module in (("mnist-mlp", mlp), ("mnist-cnn", cnn)):
        paths[name] = folder / f"{name}.onnx"
        with warnings.catch_warnings():  # the TorchScript exporter's deprecation notice
            warnings.simplefilter("ignore", DeprecationWarning)
            image = torch.zeros(1, 1, 28, 28)
            torch.onnx.export(module.eval(), (image,), str(paths[name]), dynamo=False)
    return paths


def image(npz: str, index: int) -> np.ndarray:
    """Test image ``index`` of ``npz`` (relative to ROOT), flat; ``npz`` empty: the ``mnist``
    suite's random image ``default_rng(index).uniform(size=784)``."""
    if not npz:
        return np.random.default_rng(index).uniform(size=784)
    return np.load(ROOT / npz)["images"][index].reshape(-1).astype(float)


def margin_at(onnx: Path, x: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """c = e_top - e_second at ``x`` (:mod:`margins`, with this checkout's lipopt), and the
    two classes."""
    from margins import top_two, top_two_margin

    import lipopt

    net = lipopt.load_onnx(onnx)
    return top_two_margin(net, x), list(top_two(net, x))


def cases(args: argparse.Namespace, mnist: dict[str, Path]) -> list[dict[str, Any]]:
    """Every case of the chosen suites: network, ONNX path, image, point, c and radius."""
    suites = list(SUITES) if args.suite == "all" else [args.suite]
    radii = None if args.radii is None else [float(r) for r in args.radii.split(",")]
    out = []
    for suite in suites:
        count = args.images if args.images is not None else 10
        for network, onnx, npz in SUITES[suite]:
            if args.networks and network not in args.networks.split(","):
                continue
            path = mnist[network] if suite == "mnist" else ROOT / onnx
            for index in range(count):
                x = image(npz, index)
                c, top = margin_at(path, x)
                for radius in radii or RADII[suite]:
                    out.append({
                        "suite": suite, "network": network, "onnx": str(path), "image": index,
                        "radius": radius, "x": x.tolist(), "c": c.tolist(), "top": top,
                        "bab": True if args.bab else "auto",
                    })  # fmt: skip
    return out


def commit(tree: Path) -> str:
    """The short commit hash of ``tree``, ``+`` if it has local changes to tracked files."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return (git("rev-parse", "--short", "HEAD") or "unknown") + ("+" if dirty else "")


def solve(case: dict[str, Any], tree: Path, limit: float) -> dict[str, Any]:
    """One case solved by ``scale_solve.py`` in a fresh process importing ``tree``'s lipopt
    (``PYTHONPATH`` and working directory ``tree``); a crash or a process still running at
    three times the limit plus two minutes gives a row with status ``error`` or ``killed``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    job = {key: case[key] for key in ("onnx", "x", "c", "radius", "bab")} | {"limit": limit}
    command = [sys.executable, str(SOLVER)]
    try:
        done = subprocess.run(command, input=json.dumps(job), capture_output=True, text=True,
                              env=env, cwd=tree, timeout=3 * limit + 120)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"status": "killed", "lower": None, "upper": None, "message": "wall limit"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return {"status": "error", "lower": None, "upper": None, "message": tail[0]}
    found = json.loads(lines[-1])
    if not Path(found["lipopt"]).is_relative_to(tree.resolve()):
        wrong = f"lipopt imported from {found['lipopt']}, not from {tree}"
        return {"status": "error", "lower": None, "upper": None, "message": wrong}
    return found


def ratio(lower: float | None, upper: float | None) -> float | None:
    """upper / lower (1 where both are 0); None without a bracket, inf without a lower bound."""
    if upper is None:
        return None
    if upper <= 0:
        return 1.0
    return upper / lower if lower else float("inf")


def row(case: dict[str, Any], side: str, found: dict[str, Any]) -> dict[str, Any]:
    """The row of one case solved by one side: the case's labels and what the solve found."""
    keep = ("suite", "network", "image", "radius", "top")
    out = {key: case[key] for key in keep} | {"side": side} | found
    out["ratio"] = ratio(found.get("lower"), found.get("upper"))
    out["exact"] = found.get("status") == "optimal"
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=[*SUITES, "all"], default="all")
    parser.add_argument("--images", type=int, default=None, help="images per network (10)")
    parser.add_argument("--networks", default=None, help="e.g. scale-mlp,digits-cnn (all)")
    parser.add_argument("--radii", default=None, help="e.g. 0.05,0.1 (each suite's own)")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--bab", action="store_true", help="bab=True on both sides")
    parser.add_argument("--vs", type=Path, default=None, help="the 'before' checkout")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scale.md")
    parser.add_argument("--jsonl", type=Path, default=None, help="default: --out's .jsonl")
    parser.add_argument("--plot", nargs="?", type=Path, const=True, default=None,
                        help="write the PNG (default: --out's .png)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.vs is not None and not (args.vs / "lipopt" / "__init__.py").is_file():
        parser.error(f"--vs {args.vs}: no lipopt/__init__.py there")
    args.jsonl = args.jsonl or args.out.with_suffix(".jsonl")
    if args.plot is True:
        args.plot = args.out.with_suffix(".png")
    return args


def main(argv: list[str] | None = None) -> int:
    from machine import run_stamp
    from scale_report import plot, table

    args = parse(argv)
    argv = sys.argv[1:] if argv is None else argv
    trees = {"this": ROOT} | ({"before": args.vs.resolve()} if args.vs else {})
    commits = {side: f"{commit(tree)} ({tree})" for side, tree in trees.items()}
    meta = {"argv": argv, "stamp": run_stamp(), "limit": args.time_limit, "commits": commits}
    with tempfile.TemporaryDirectory() as scratch:
        wanted = args.suite in ("mnist", "all")
        mnist = mnist_networks(Path(scratch)) if wanted else {}
        rows: list[dict[str, Any]] = []
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.jsonl.write_text("")
        for turn, case in enumerate(cases(args, mnist)):
            order = list(trees) if turn % 2 == 0 else list(trees)[::-1]
            found = {side: solve(case, trees[side], args.time_limit) for side in order}
            for side in trees:
                rows.append(row(case, side, found[side]))
                print(json.dumps(rows[-1]), flush=True)
                with args.jsonl.open("a") as handle:
                    handle.write(json.dumps(rows[-1]) + "\n")
            args.out.write_text(table(rows, meta))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
