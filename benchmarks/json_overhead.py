"""What ``--json`` costs (issue 44): the same query with and without it, in turn.

    PYTHONPATH=. python benchmarks/json_overhead.py                 # -> results/json_overhead.md
    PYTHONPATH=. python benchmarks/json_overhead.py --runs 1 --limit 5   # quicker, printed
    PYTHONPATH=. python benchmarks/json_overhead.py --vs ../before  # also another checkout

``LipschitzResult.to_dict()`` used ``dataclasses.asdict``, which deep-copied the Pyomo model the
answer carries: on the bundled digits CNN under a 30 s limit ``--json`` took 84.9 s against 33 s.
Each run is a fresh ``lipopt solve models/digits-cnn.onnx`` over an ℓ∞ ball of radius 0.05
around a test image (the whole output vector, ℓ∞ output norm), ``--time-limit L``, with and
without ``--json`` in turn, then a one-row ``lipopt batch`` of the same query; the promise is
that the JSON costs within 5 % + 0.5 s of the text output. Medians of the wall times, and the
ratio of each pair's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import run_stamp  # noqa: E402
from lipopt.atomic import write_text_atomic  # noqa: E402

MODEL = ROOT / "models" / "digits-cnn.onnx"


def timed(command: list[str], checkout: Path) -> float:
    """Wall seconds of ``command`` as a fresh process importing lipopt from ``checkout``."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-500:]}")
    return time.perf_counter() - start


def ball_files(tmp: Path) -> tuple[Path, Path]:
    """Test image 0's ℓ∞ ball of radius 0.05, as a centre file and as a VNN-LIB box."""
    import numpy as np

    x = np.load(ROOT / "models" / "digits-test.npz")["images"][0].reshape(-1)
    center = tmp / "x.npy"
    np.save(center, x)
    lines = [f"(declare-const X_{i} Real)" for i in range(x.size)]
    for i, value in enumerate(x):
        lines += [
            f"(assert (>= X_{i} {float(value) - 0.05!r}))",
            f"(assert (<= X_{i} {float(value) + 0.05!r}))",
        ]
    box = tmp / "ball.vnnlib"
    box.write_text("\n".join(lines) + "\n")
    return center, box


def commands(limit: float, tmp: Path) -> dict[str, list[str]]:
    """The solve without and with ``--json``, and a one-row batch of the same query (the
    whole output vector under the ℓ∞ output norm)."""
    center, box = ball_files(tmp)
    cli = [sys.executable, "-m", "lipopt.cli"]
    solve = [*cli, "solve", str(MODEL), "--center", str(center), "--radius", "0.05"]
    solve += ["--output-norm", "linf", "--time-limit", f"{limit:g}", "--quiet"]
    rows = tmp / "one.csv"
    rows.write_text(f"{MODEL},{box},{limit:g}\n")
    batch = [*cli, "batch", str(rows), "--out", str(tmp / "r.jsonl"), "--output-norm", "linf"]
    batch += ["--quiet"]
    return {"text": solve, "json": [*solve, "--json"], "batch": batch}


def measure(checkout: Path, limit: float, runs: int) -> dict[str, list[float]]:
    """Each command ``runs`` times, in turn."""
    walls: dict[str, list[float]] = {"text": [], "json": [], "batch": []}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for _ in range(runs):
            for key, command in commands(limit, tmp).items():
                (tmp / "r.jsonl").unlink(missing_ok=True)
                walls[key].append(timed(command, checkout))
    return walls


def rows(code: str, limit: float, walls: dict[str, list[float]]) -> list[str]:
    """Markdown rows: the median wall of each, and JSON's cost over the text output."""
    text = statistics.median(walls["text"])
    out = []
    for key in ("text", "json", "batch"):
        wall = statistics.median(walls[key])
        within = "" if key == "text" else ("yes" if wall <= 1.05 * text + 0.5 else "**no**")
        ratios = [b / a for a, b in zip(walls["text"], walls[key])]
        out.append(
            f"| {code} | {key} | {limit:g} | {len(walls[key])} | {wall:.1f} | "
            f"{statistics.median(ratios):.2f} | {within} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=float, default=30.0, help="--time-limit of each solve")
    parser.add_argument("--runs", type=int, default=3, help="runs of each command")
    parser.add_argument("--vs", help="another checkout, measured after this one")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "json_overhead.md"))
    args = parser.parse_args()
    checkouts = {"this": ROOT} | ({"vs": Path(args.vs).resolve()} if args.vs else {})
    lines = [
        "# What `--json` costs (issue 44)",
        "",
        f"`PYTHONPATH=. python {' '.join(['benchmarks/json_overhead.py', *sys.argv[1:]])}` on "
        f"{run_stamp()}. The bundled digits CNN, ℓ∞ ball of radius 0.05 around test image 0, "
        "ℓ∞ output norm, each command a fresh process, in turn; `batch` is a one-row "
        "`lipopt batch` of the same query (its timeout column = the limit). Ratio: the median "
        "of each run's wall over the text run's beside it. Within: at most 5 % + 0.5 s over "
        "the text output.",
        "",
        "| code | output | limit (s) | runs | median wall (s) | ratio to text | within |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for code, checkout in checkouts.items():
        walls = measure(checkout, args.limit, args.runs)
        lines += rows(code, args.limit, walls)
        print("\n".join(lines[-3:]), flush=True)
    write_text_atomic(Path(args.out), "\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
