"""Start-up cost (issues 26, 45 item 6): ``import lipopt`` and a whole ``lipopt solve`` of a small
network.

    PYTHONPATH=. python benchmarks/startup.py                          # this checkout
    PYTHONPATH=. python benchmarks/startup.py --vs /path/to/checkout   # side by side, in turn
    PYTHONPATH=. python benchmarks/startup.py --vs . --vs-python /other/venv/bin/python
                                                  # this checkout in another environment

Each command runs as a fresh process (``python -c "import lipopt"``; ``python -m lipopt.cli
solve`` on a [2, 8, 8, 1] network over the unit box, written by this script, and on the bundled
2-input model), once to warm the disk cache and then ``--runs`` times, alternating with the
other checkout's when ``--vs`` is given, so both see the same machine. The table gives the
median, min and max wall seconds and the ratio of the medians; below it, the heaviest imports
of one solve (``python -X importtime``) and the floor: the packages a small solve imports, added
one at a time in fresh processes of this checkout, which is where its time goes.

Bytecode is cached as an installed package's is: the children run without
``PYTHONDONTWRITEBYTECODE`` and with ``PYTHONPYCACHEPREFIX`` in a temporary folder, so the
warm-up run compiles each checkout once and nothing is written into them. ``--compile`` keeps
the environment's setting instead (with ``PYTHONDONTWRITEBYTECODE=1`` every run compiles
lipopt from source: 0.13 s more CPU time for the small solve, measured here).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_name  # noqa: E402
from lipopt.atomic import write_text_atomic  # noqa: E402
from tests.helpers import random_network, save_onnx  # noqa: E402


def commands(tiny: Path, tree: Path, python: str = sys.executable) -> dict[str, list[str]]:
    """The measured commands, run by ``python`` with ``tree`` first on the path."""
    bundled = tree / "models" / "synthetic-2x20x40x20x2.onnx"
    return {
        "import lipopt": [python, "-c", "import lipopt"],
        "lipopt solve [2,8,8,1] --box 0,1": [
            python, "-m", "lipopt.cli", "solve", str(tiny), "--box", "0,1",
        ],
        "lipopt solve bundled 2x20x40x20x2 --box 0,1 --c 1,-1": [
            python, "-m", "lipopt.cli", "solve", str(bundled), "--box", "0,1",
            "--c", "1,-1",
        ],
    }  # fmt: skip


#: the children's environment besides PYTHONPATH (``main`` sets the bytecode cache here)
CHILD_ENV: dict[str, str] = {}


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a measured process: ``tree`` importable, :data:`CHILD_ENV` applied
    (an empty value removes the variable)."""
    env = dict(os.environ, PYTHONPATH=str(tree), **CHILD_ENV)
    return {key: value for key, value in env.items() if value}


#: the imports of a small solve, each row adding one package to those above it (SciPy's
#: stats, integrate and spatial deferred, as a solve does; scipy.optimize no longer: the margin
#: LP goes to highspy, lipopt/highs_lp.py; Pyomo no longer: the [2,8,8,1] solve is the region
#: search's, which builds no model, planner.searches_first)
FLOOR = (
    ("python (no import)", "pass"),
    ("+ numpy", "import numpy"),
    ("+ scipy.sparse (lipopt.domain, the ONNX reader, the bounds)",
     "import lipopt.lazy; lipopt.lazy.defer_scipy_extras(); import scipy.sparse"),
    ("+ highspy", "import highspy"),
    ("+ onnx", "import onnx"),
    ("+ lipopt's modules of a solve", "import lipopt.cli.solve"),
)  # fmt: skip


def floor(tree: Path, runs: int) -> list[tuple[str, float]]:
    """Per row of :data:`FLOOR` the median wall seconds of a fresh process importing it and
    every row above it (one warm-up each, then ``runs`` rounds over the rows in turn)."""
    codes = ["; ".join(stmt for _, stmt in FLOOR[: i + 1]) for i in range(len(FLOOR))]
    times: list[list[float]] = [[] for _ in FLOOR]
    for round_ in range(runs + 1):
        for i, code in enumerate(codes):
            seconds = wall([sys.executable, "-c", code], tree)
            if round_:
                times[i].append(seconds)
    return [(label, statistics.median(t)) for (label, _), t in zip(FLOOR, times)]


def wall(command: list[str], tree: Path) -> float:
    """Seconds of one run of ``command`` (which must succeed) with ``tree`` importable."""
    env = child_env(tree)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=tree)
    return time.perf_counter() - start


def heaviest_imports(command: list[str], tree: Path, count: int = 8) -> list[tuple[str, float]]:
    """Seconds of ``command``'s imports by top-level package (``python -X importtime``: the
    cumulative times of the outermost imports, added up per package), the ``count`` largest."""
    env = child_env(tree)
    run = [command[0], "-X", "importtime", *command[1:]]
    done = subprocess.run(run, env=env, check=True, capture_output=True, text=True, cwd=tree)
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and not name[1:].startswith(" "):  # outermost only
            package = name.strip().split(".")[0]
            totals[package] = totals.get(package, 0.0) + int(cumulative) / 1e6
    return sorted(totals.items(), key=lambda row: -row[1])[:count]


#: per side, the interpreter that runs its commands (``--vs-python`` sets the other side's)
PYTHONS: dict[str, str] = {}


def measure(trees: dict[str, Path], tiny: Path, runs: int) -> dict[tuple[str, str], list[float]]:
    """Per (command, checkout) the wall seconds of each run, the checkouts in turn."""
    times: dict[tuple[str, str], list[float]] = {}

    def run(label: str, side: str) -> float:
        python = PYTHONS.get(side, sys.executable)
        return wall(commands(tiny, trees[side], python)[label], trees[side])

    for label in commands(tiny, ROOT):
        for side in trees:  # warm-up
            run(label, side)
        for _ in range(runs):
            for side in trees:
                times.setdefault((label, side), []).append(run(label, side))
    return times


def table(times: dict[tuple[str, str], list[float]], trees: dict[str, Path]) -> list[str]:
    sides = list(trees)
    head = "| command | " + " | ".join(f"{s}: median (min-max) s" for s in sides)
    lines = [head + (" | ratio |" if len(sides) == 2 else " |")]
    lines.append("|---" * (len(sides) + 1 + (len(sides) == 2)) + "|")
    for label in dict.fromkeys(label for label, _ in times):
        cells = []
        for side in sides:
            values = times[(label, side)]
            med = statistics.median(values)
            cells.append(f"{med:.2f} ({min(values):.2f}-{max(values):.2f})")
        ratio = ""
        if len(sides) == 2:
            a, b = (statistics.median(times[(label, s)]) for s in sides)
            ratio = f" {a / b:.2f} |"
        lines.append(f"| {label} | " + " | ".join(cells) + " |" + ratio)
    return lines


def _commit(tree: Path) -> str:
    """The checkout's short commit hash."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True)
    return done.stdout.decode().strip() or "unknown"


def floor_lines(rows: list[tuple[str, float]], runs: int) -> list[str]:
    """The floor table: each row's median and what it adds to the row above."""
    lines = [
        f"Where a small solve's time goes: fresh processes of this checkout importing the packages "
        f"of a solve, one more each row (median of {runs} after one warm-up, wall seconds):",
        "",
        "| imports | s | added s |",
        "|---|---|---|",
    ]
    before = 0.0
    for label, seconds in rows:
        lines.append(f"| {label} | {seconds:.2f} | {seconds - before:+.2f} |")
        before = seconds
    return lines


def history(out: Path) -> list[str]:
    """The earlier results in ``out`` (its title line dropped), kept below the new ones."""
    if not out.exists():
        return []
    old = out.read_text().splitlines()
    if old and old[0].startswith("# "):
        old = old[1:]
    return ["## An earlier run", *old]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="counted runs of each (default 7)")
    parser.add_argument("--vs", type=Path, help="another checkout, measured in turn with this one")
    parser.add_argument(
        "--vs-python", help="the interpreter (environment) of the --vs side (default: this one)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "startup.md")
    parser.add_argument(
        "--compile", action="store_true",
        help="keep the environment's bytecode setting (default: cached, in a temporary folder)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    trees = {"this": ROOT} if args.vs is None else {"this": ROOT, "other": args.vs.resolve()}
    commit = {side: _commit(tree) for side, tree in trees.items()}
    if args.vs_python:
        PYTHONS["other"] = args.vs_python
    with tempfile.TemporaryDirectory() as folder:
        if not args.compile:
            CHILD_ENV.update(PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=str(Path(folder)))
        tiny = save_onnx(
            random_network(np.random.default_rng(0), [2, 8, 8, 1]), Path(folder) / "t.onnx"
        )
        started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        times = measure(trees, tiny, args.runs)
        solve = commands(tiny, ROOT)["lipopt solve [2,8,8,1] --box 0,1"]
        heavy = heaviest_imports(solve, ROOT)
        rows = floor(ROOT, args.runs)
    bytecode = (
        "the environment's bytecode setting"
        if args.compile
        else "bytecode cached (after the warm-up) in a temporary PYTHONPYCACHEPREFIX"
    )
    lines = [
        "# Start-up: `import lipopt` and small solves",
        "",
        "`python benchmarks/startup.py"
        + (" --vs OTHER" if args.vs else "")
        + (" --vs-python PYTHON" if args.vs_python else "")
        + f" --runs {args.runs}"
        + (" --compile" if args.compile else "")
        + f"` on {cpu_name()} ({os.cpu_count()} cores), Python {platform.python_version()}, "
        f"started {started}; this = {commit['this']}"
        + (f", other = {commit['other']}" if args.vs else "")
        + (f" run by {args.vs_python}" if args.vs_python else "")
        + f"; {args.runs} runs each after one warm-up, whole processes, wall seconds; "
        + bytecode
        + ".",
        "",
        *table(times, trees),
        "",
        "Imports of one `lipopt solve [2,8,8,1] --box 0,1` by top-level package (this checkout, "
        "`python -X importtime`; the `scipy.stats`, `scipy.integrate` and `scipy.spatial` that "
        "Pyomo imports with SciPy are deferred to their first use, lipopt/lazy.py):",
        "",
        "| package | s |",
        "|---|---|",
        *[f"| {name} | {seconds:.3f} |" for name, seconds in heavy],
        "",
        *floor_lines(rows, args.runs),
        "",
    ]
    write_text_atomic(args.out, "\n".join(lines + history(args.out)))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
