"""Time every installed solver on the bundled models, in one run, and write a markdown table.

Problems (``c = (1, -1)``: the constant of ``f_1 - f_2``, both input norms ``linf`` and ``l1``):

- ``models/synthetic-2x20x40x20x2.onnx`` over the box ``[0, 1]^2``;
- ``models/synthetic-10x20x30x20x2.onnx`` over the l-inf ball of radius 0.1 around ``0.5·1``.

Each problem is solved once per solver and mode: ``exact`` (the MIP), ``gap`` (stop at 5 %
relative gap) and ``lp`` (the LP relaxation, LipLP), with lipopt's default bounds (``--bounds``)
and without domain splitting, so that every run is one MIP and the solvers are compared on it.
A row gives the certified value (upper bound), the attained lower bound, the status, the
wall-clock seconds of the whole ``lipopt.lipschitz`` call, the solver's branch-and-bound nodes and
the time as a ratio to HiGHS on the same problem and mode.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/solvers.py                    # -> benchmarks/results/solvers.md
    PYTHONPATH=. python benchmarks/solvers.py --quick            # smoke run, prints only
    PYTHONPATH=. python benchmarks/solvers.py --solvers highs,cbc --time-limit 60 --out x.md
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_name  # noqa: E402

import lipopt  # noqa: E402
from lipopt import Box, LinfBall, SolverError  # noqa: E402
from lipopt.atomic import write_text_atomic  # noqa: E402
from lipopt.domain import Domain  # noqa: E402
from lipopt.solvers import registry  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "solvers.md"
#: lipopt's own default bound propagation (what a user gets)
DEFAULT_BOUNDS = str(inspect.signature(lipopt.lipschitz).parameters["bounds"].default)
C = (1.0, -1.0)
GAP = 0.05

#: mode name -> keyword arguments of lipopt.lipschitz
MODES: dict[str, dict[str, object]] = {
    "exact": {},
    "gap": {"gap": GAP},
    "lp": {"mode": "lp"},
}


@dataclass(frozen=True)
class Problem:
    """One benchmark instance: a bundled network, a domain and an input norm."""

    model: str
    domain_text: str
    norm: str

    def load(self) -> tuple[lipopt.Network, Domain]:
        network = lipopt.load_onnx(ROOT / "models" / self.model)
        if self.model.startswith("synthetic-2x"):
            return network, Box([0.0, 0.0], [1.0, 1.0])
        return network, LinfBall(0.5 * np.ones(network.input_dim), 0.1)


PROBLEMS = [
    Problem(model, domain, norm)
    for model, domain in (
        ("synthetic-2x20x40x20x2.onnx", "box [0,1]^2"),
        ("synthetic-10x20x30x20x2.onnx", "l-inf ball r=0.1 at 0.5·1"),
    )
    for norm in ("linf", "l1")
]


@dataclass
class Row:
    problem: Problem
    mode: str
    solver: str
    value: float | None
    lower: float | None
    status: str
    seconds: float
    nodes: int | None
    ratio: float | None = None


def run_one(problem: Problem, mode: str, solver: str, time_limit: float, bounds: str) -> Row:
    """Solve one problem with one solver in one mode; a solver error becomes the row's status."""
    network, domain = problem.load()
    start = time.perf_counter()
    try:
        res = lipopt.lipschitz(
            network,
            domain,
            problem.norm,
            C,
            solver=solver,
            time_limit=time_limit,
            bounds=bounds,
            split=False,  # one MIP per problem: the solvers are compared
            regions=False,  # (the region search would answer some without a solver)
            **MODES[mode],  # type: ignore[arg-type]
        )
    except SolverError as exc:
        seconds = time.perf_counter() - start
        return Row(problem, mode, solver, None, None, f"error: {exc}", seconds, None)
    seconds = time.perf_counter() - start
    return Row(problem, mode, solver, res.value, res.lower, res.status, seconds, res.nodes)


def add_ratios(rows: list[Row]) -> None:
    """Each row's seconds divided by HiGHS's on the same problem and mode."""
    highs = {(r.problem, r.mode): r.seconds for r in rows if r.solver == "highs"}
    for row in rows:
        base = highs.get((row.problem, row.mode))
        row.ratio = None if base is None or base <= 0 else row.seconds / base


def _num(value: float | None, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def table(rows: list[Row]) -> str:
    head = (
        "| model | domain | norm | mode | solver | value (upper) | lower | status | seconds "
        "| nodes | time / HiGHS |\n"
        "|---|---|---|---|---|---:|---:|---|---:|---:|---:|\n"
    )
    lines = [
        f"| `{r.problem.model}` | {r.problem.domain_text} | {r.problem.norm} | {r.mode} "
        f"| {r.solver} | {_num(r.value, '.6f')} | {_num(r.lower, '.6f')} | {r.status} "
        f"| {r.seconds:.2f} | {'–' if r.nodes is None else r.nodes} | {_num(r.ratio, '.2f')} |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n"


def summary(rows: list[Row], solvers: list[str], modes: list[str]) -> str:
    """One line per problem: the exact value, LipLP's value against it, each solver's seconds
    per mode."""
    head = "| problem | exact value | LP relaxation |" + "".join(
        f" {name} s ({' / '.join(modes)}) |" for name in solvers
    )
    lines = [head, "|---|---:|---:|" + "---:|" * len(solvers)]
    for problem in dict.fromkeys(r.problem for r in rows):
        mine = {(r.mode, r.solver): r for r in rows if r.problem == problem}
        exact = next(
            (r.value for r in mine.values() if r.mode == "exact" and r.status == "optimal"), None
        )
        relaxed = next((r.value for r in mine.values() if r.mode == "lp" and r.value), None)
        lp_text = _num(relaxed, ".4g")
        if relaxed is not None and exact:
            lp_text += f" ({relaxed / exact:.1f}×)"
        cells = [
            " / ".join(
                _num(mine[(mode, name)].seconds, ".2f") if (mode, name) in mine else "–"
                for mode in modes
            )
            for name in solvers
        ]
        label = f"`{problem.model.removesuffix('.onnx')}`, {problem.domain_text}, {problem.norm}"
        lines.append(f"| {label} | {_num(exact, '.6f')} | {lp_text} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report(rows: list[Row], solvers: list[str], args: argparse.Namespace, argv: list[str]) -> str:
    versions = ", ".join(f"{name} {registry.get(name).version()}" for name in solvers)
    missing = [name for name in registry.ADAPTERS if name not in solvers]
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = [
        "# Solver benchmark",
        "",
        "Generated by `benchmarks/solvers.py` (see `benchmarks/README.md`); one run each.",
        "",
        f"- command: `{shlex.join(['python', 'benchmarks/solvers.py', *argv])}`",
        f"- date: {date}",
        f"- machine: {platform.platform()}, {cpu_name()}, {os.cpu_count()} logical CPUs; "
        f"Python {platform.python_version()}; load average at the start {args.load:.2f}",
        f"- lipopt {lipopt.__version__}; solvers: {versions}"
        + (f"; not installed: {', '.join(missing)}" if missing else ""),
        f"- every solve: c = (1, -1), time limit {args.time_limit:g} s, solver default threads, "
        f"`{args.bounds}` bounds, no domain splitting (one MIP per problem); `gap` stops at "
        f"{GAP:g} relative gap; `lp` is the LP relaxation",
        "- seconds: wall clock of the whole `lipopt.lipschitz` call (bounds, build, solve, "
        "verify); time / HiGHS: that over HiGHS's seconds on the same problem and mode",
        "",
        "## Summary",
        "",
        summary(rows, solvers, args.mode_list),
        "## All runs",
        "",
        table(rows),
    ]
    return "\n".join(text)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds per solve (default 300; 20 with --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: l-inf norm only, 20 s limit, prints instead of writing",
    )
    parser.add_argument(
        "--solvers", default=None, help="comma list (default: every installed solver)"
    )
    parser.add_argument(
        "--modes", default=",".join(MODES), help=f"comma list of {', '.join(MODES)} (default: all)"
    )
    parser.add_argument(
        "--bounds",
        default=DEFAULT_BOUNDS,
        help=f"bound propagation for every model (default {DEFAULT_BOUNDS})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"markdown file to write (default {DEFAULT_OUT.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    if args.time_limit is None:
        args.time_limit = 20.0 if args.quick else 300.0
    if args.out is None and not args.quick:
        args.out = DEFAULT_OUT
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    args.load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    usable = registry.available()
    solvers = usable if args.solvers is None else [s.strip() for s in args.solvers.split(",")]
    for name in solvers:
        registry.get(name)  # one clear line if a requested solver is not usable
    modes = [m.strip() for m in args.modes.split(",")]
    args.mode_list = modes
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown mode(s) {', '.join(unknown)}; use {', '.join(MODES)}")
    problems = [p for p in PROBLEMS if not args.quick or p.norm == "linf"]
    rows = []
    for problem in problems:
        for mode in modes:
            for solver in solvers:
                row = run_one(problem, mode, solver, args.time_limit, args.bounds)
                print(
                    f"{problem.model} {problem.norm:4s} {mode:5s} {solver:6s} "
                    f"value={_num(row.value, '.6f')} {row.status} {row.seconds:.2f}s "
                    f"nodes={row.nodes}",
                    flush=True,
                )
                rows.append(row)
    add_ratios(rows)
    text = report(rows, solvers, args, argv)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out, text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
