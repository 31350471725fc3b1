"""Time limits kept (issue 32): overshoot and peak memory of ``lipopt solve --time-limit``.

    PYTHONPATH=. python benchmarks/limits.py                       # -> results/limits.md
    PYTHONPATH=. python benchmarks/limits.py --sizes 2,8,8,1 --limits 5    # a subset, printed
    PYTHONPATH=. python benchmarks/limits.py --sizes 2000,2000,1 --limits 20 --load 2 \
        --vs ../before --out benchmarks/results/limits_load.md    # on a loaded machine (issue 44)

For each network size (He-normal weights, N(0, 0.5²) biases, one output, seed 0; the last, of
3 inputs, takes the domain-split path) and each time
limit, ``lipopt solve net.onnx --box 0,1 --time-limit L --json`` runs as a fresh process under a
small parent that reports the peak resident memory of its largest descendant (the command or
one of its racers: ``RUSAGE_CHILDREN``'s ``ru_maxrss``). The wall time is the whole command's,
Python's start-up and the ONNX load included. The target: wall <= L + 10 % + 2 s, and every
stopped answer carries a proven upper bound and an attained lower bound with its witness.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_name  # noqa: E402
from lipopt.atomic import write_text_atomic  # noqa: E402
from tests.helpers import random_network, save_onnx  # noqa: E402

#: the last is a box of 3 inputs, where lipopt splits the domain (boxes of <= 4 inputs)
SIZES = ([2, 8, 8, 1], [20, 200, 200, 1], [200, 500, 500, 1], [2000, 2000, 1], [3, 420, 420, 1])
LIMITS = (5.0, 20.0, 60.0)

#: runs the command given as its arguments; prints the largest descendant's peak RSS (KiB)
PEAK_RSS = (
    "import resource, subprocess, sys; "
    "code = subprocess.run(sys.argv[1:], stdout=sys.stdout, stderr=subprocess.DEVNULL).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(code)"
)


def target(limit: float) -> float:
    """The wall time allowed for a limit: ``L + 10 % + 2 s``."""
    return limit * 1.1 + 2.0


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` busy loops on the machine while the block runs: a loaded machine."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def run_one(model: Path, limit: float, checkout: Path = ROOT) -> dict[str, object]:
    """One solve in a fresh process (lipopt imported from ``checkout``): wall seconds, peak
    memory, and the answer's bracket."""
    command = [sys.executable, "-m", "lipopt.cli", "solve", str(model), "--box", "0,1"]
    command += ["--time-limit", f"{limit:g}", "--json", "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *command],
        capture_output=True,
        text=True,
        cwd=checkout,
        env=env,
    )
    wall = time.perf_counter() - start
    peak_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
    row: dict[str, object] = {"wall": wall, "peak_mb": peak_mb, "exit": done.returncode}
    if done.returncode in (0, 3):
        answer = json.loads(done.stdout)
        row.update(
            status=answer["status"],
            upper=answer["upper"],
            lower=answer["lower"],
            witness=answer["witness"] is not None,
        )
    return row


def table(rows: list[tuple[list[int], float, dict[str, object]]]) -> list[str]:
    """The markdown rows (a row's ``code`` names the checkout that ran it, where several did)."""
    lines = [
        "| widths | code | limit (s) | wall (s) | target (s) | kept | status | upper | lower "
        "| witness | peak MB |",
        "|---|---|---:|---:|---:|---|---|---:|---:|---|---:|",
    ]
    for widths, limit, row in rows:
        wall = float(row["wall"])  # type: ignore[arg-type]
        lower = row.get("lower")
        lines.append(
            f"| {widths} | {row.get('code', 'this')} | {limit:g} | {wall:.1f} | "
            f"{target(limit):.1f} | "
            f"{'yes' if wall <= target(limit) else '**no**'} | {row.get('status', row['exit'])} | "
            f"{row.get('upper', float('nan')):.6g} | "
            f"{'-' if lower is None else f'{lower:.6g}'} | "
            f"{'yes' if row.get('witness') else 'no'} | {row['peak_mb']:.0f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="*", help="widths like 2,8,8,1 (default: all four)")
    parser.add_argument("--limits", help="comma-separated seconds (default 5,20,60)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "limits.md"))
    parser.add_argument("--load", type=int, default=0, help="busy processes running meanwhile")
    parser.add_argument("--vs", help="another checkout, run in turn with this one (before/after)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row")
    args = parser.parse_args()
    sizes = [[int(w) for w in s.split(",")] for s in args.sizes] if args.sizes else SIZES
    limits = [float(x) for x in args.limits.split(",")] if args.limits else LIMITS
    subset = bool(args.sizes or args.limits) and "--out" not in sys.argv
    checkouts = {"this": ROOT} | ({"vs": Path(args.vs).resolve()} if args.vs else {})
    rows = []
    with tempfile.TemporaryDirectory() as tmp, busy(args.load):
        for widths in sizes:
            net = random_network(np.random.default_rng(0), widths)
            model = save_onnx(net, Path(tmp) / ("x".join(map(str, widths)) + ".onnx"))
            for limit in limits:
                for _ in range(args.repeat):
                    for code, checkout in checkouts.items():
                        row = {**run_one(model, limit, checkout), "code": code}
                        rows.append((widths, limit, row))
                        print(table([(widths, limit, row)])[-1], flush=True)
    lines = [
        "# Time limits kept: overshoot and peak memory (issues 32, 44)",
        "",
        f"`PYTHONPATH=. python {' '.join(['benchmarks/limits.py', *sys.argv[1:]])}` on "
        f"{dt.date.today()}, {cpu_name()} ({platform.machine()}), {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, with {args.load} busy processes running meanwhile. Each "
        "row is one fresh `lipopt solve net.onnx --box 0,1 --time-limit L --json` (unit box, "
        "ℓ∞ input norm, defaults otherwise); the target is `L + 10 % + 2 s`, start-up and "
        "loading included. Peak MB: the largest process of the command (the command or one of "
        "its racers). Code: `this` checkout, or `vs` (the one named by --vs), run in turn.",
        "",
        *table(rows),
        "",
    ]
    if subset:
        print("\n".join(lines))
        return
    write_text_atomic(Path(args.out), "\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
