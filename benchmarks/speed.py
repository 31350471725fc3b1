"""Speed benchmark (issue 5): plain configuration vs the tuned default, against the reference.

    python benchmarks/speed.py                   # every case, 2 seeds, 300 s limit per solve
    python benchmarks/speed.py --quick           # two small cases, 1 seed, 60 s limit
    python benchmarks/speed.py --norms l1 --out a.md && python benchmarks/speed.py --norms linf \
        --out b.md && python benchmarks/speed.py --merge a.jsonl,b.jsonl   # one table, two runs

Networks follow the reference recipe: He-normal weights, N(0, 0.5²) biases, own seeds. Domains:
``unit`` = [0,1]^d, ``ball`` = ℓ∞ ball of radius 0.1 around a uniform random centre. Each case is
solved exactly twice in one run, in a fresh process each (so peak memory is per case):

- plain: interval bounds, no domain splitting, no ℓ1-norm decomposition, no region search, no
  attack start, no sign split (``bounds="interval", split=False, decompose=False,
  regions=False, attack=False, sign_split=False``), the backward model alone: the paper's
  formulation;
- tuned: the default of ``lipopt.lipschitz`` as shipped (see ``TUNED`` below);
- nodecomp, noregions, backward, forward, noattack, signsplit, gatesplit, noleader, noproducts
  (only with ``--configs``): the default without the ℓ1-norm decomposition, without the region
  search, with one formulation instead of the race, without the attack's cutoff in the racers,
  with the backward model split on a gradient sign instead of the race (``sign_split=True``),
  with the forward model alone, split on a first-layer neuron's hyperplane
  (``gate_split=True``; these two need the ℓ∞ input norm: ``--norms linf``), with the racers
  running to the end (``split_leader=False``; noleader), or with the ℓ1 candidates maximised
  through the backward pass instead of as sums of gate products (``products=False``;
  noproducts).

The tuned default races two processes on hard problems (``formulation="auto"``), so run it with
``--jobs 1`` for a fair comparison: each racer then has a core to itself. Peak memory is the
largest of the solving process and its racers.

Writes a markdown table (default ``benchmarks/results/speed.md``) with the machine and date, and
the rows as JSON lines beside it (``speed.jsonl``), so that runs split by norm or seed can be
merged into one table with ``--merge``. ``--jobs 2`` runs two solves at a time: quicker, but the
solves then share the machine (the tuned/plain ratio stays a same-run measurement).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Reference: the original LipMIP code with Gurobi 13, one thread (issue 5); None = timed out at 300
REFERENCE: dict[tuple[str, str], tuple[float | None, float | None]] = {
    ("16,16,16,2", "unit"): (174.0, 7.1),
    ("16,16,16,2", "ball"): (3.2, 0.9),
    ("10,20,20,1", "unit"): (174.0, 64.0),
    ("10,20,20,1", "ball"): (4.0, 0.7),
    ("10,20,30,20,2", "unit"): (None, None),
    ("10,20,30,20,2", "ball"): (12.3, 7.4),
    ("64,20,20,2", "unit"): (None, 153.0),
    ("64,20,20,2", "ball"): (32.0, 7.4),
    ("2,20,40,20,2", "unit"): (17.5, 24.9),
}
QUICK = [("16,16,16,2", "ball"), ("10,20,20,1", "ball")]

PLAIN: dict[str, Any] = {
    "bounds": "interval",
    "split": False,
    "decompose": False,
    "regions": False,
    "formulation": "backward",
    "attack": False,
    "sign_split": False,
}
TUNED: dict[str, Any] = {}  # lipopt.lipschitz's own defaults
#: extra configurations for A/B runs (--configs): the default with one lever switched off
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": PLAIN,
    "tuned": TUNED,
    "nodecomp": {"decompose": False},
    "noregions": {"regions": False},
    "backward": {"formulation": "backward"},
    "forward": {"formulation": "forward"},
    "noattack": {"attack": False},
    "signsplit": {"sign_split": True},
    "gatesplit": {"formulation": "forward", "gate_split": True},
    "noleader": {"split_leader": False},
    "noproducts": {"products": False},
}


@dataclass
class Row:
    widths: str
    domain: str
    seed: int
    norm: str
    config: str
    value: float
    lower: float
    status: str
    unstable: int
    binaries: int
    bounds_s: float
    build_s: float
    solve_s: float
    total_s: float
    peak_mb: float
    commit: str = ""


def make_case(widths: str, domain: str, seed: int) -> tuple[Any, Any, Any]:
    import lipopt

    sizes = [int(w) for w in widths.split(",")]
    rng = np.random.default_rng(1000 + seed)
    layers: list[Any] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        weight = rng.normal(size=(fan_out, fan_in)) * np.sqrt(2.0 / fan_in)
        layers.append(lipopt.Affine(weight, rng.normal(size=fan_out) * 0.5))
        if i < len(sizes) - 2:
            layers.append(lipopt.ReLU())
    net = lipopt.Network.from_layers(layers)
    d = sizes[0]
    region = (
        lipopt.Box(np.zeros(d), np.ones(d))
        if domain == "unit"
        else lipopt.LinfBall(rng.uniform(size=d), 0.1)
    )
    c = [1.0, -1.0] if sizes[-1] == 2 else None
    return net, region, c


def _commit() -> str:
    """The code measured: short commit hash, with ``+`` if the tree has local changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + ("+" if dirty else "")


def _job(args: tuple[str, str, int, str, str, float], queue: Any) -> None:
    widths, domain, seed, norm, config, time_limit = args
    # what a solve loads: timed here for neither commit (lipopt loads them on first use since
    # issue 26; benchmarks/startup.py measures that start-up on its own)
    import highspy  # noqa: F401
    import pyomo.environ  # noqa: F401
    import pyscipopt  # noqa: F401
    import scipy.optimize  # noqa: F401
    import scipy.sparse  # noqa: F401

    import lipopt

    net, region, c = make_case(widths, domain, seed)
    options = VARIANTS[config]
    start = time.perf_counter()
    res = lipopt.lipschitz(net, region, norm, c=c, time_limit=time_limit, **options)
    total = time.perf_counter() - start
    peak_mb = (
        max(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,  # the racers, if any
        )
        / 1024
    )
    t = res.timings
    queue.put(
        Row(
            widths,
            domain,
            seed,
            norm,
            config,
            res.value,
            res.lower or float("nan"),
            res.status,
            res.model_stats.get("unstable_neurons", 0),
            res.model_stats.get("binaries", 0),
            t.get("bounds", 0.0),
            t.get("build", 0.0),
            t.get("solve", 0.0),
            total,
            peak_mb,
            _commit(),
        )
    )


def run_one(args: tuple[str, str, int, str, str, float]) -> Row:
    """One solve in a fresh process (peak memory is then this case's own)."""
    from machine import in_fresh_process

    return in_fresh_process(_job, args)


def _fmt(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def write_table(rows: list[Row], path: Path, argv: list[str], started: str) -> None:
    lines = [
        "# Speed: plain vs tuned (issue 5)",
        "",
        f"Command: `python benchmarks/speed.py {' '.join(argv)}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; started {started}; code at commit "
        f"{', '.join(sorted({r.commit for r in rows}))}.  ",
        "plain = interval bounds, no split, no decomposition, no region search, no attack, "
        "backward formulation; tuned = lipopt's default. "
        "Reference = original LipMIP with Gurobi 13, one thread (issue 5; – = timed out at "
        "300 s). Times in seconds.",
        "",
        "| network | domain | seed | norm | config | status | value | unstable | binaries "
        "| bounds | "
        "build | solve | total | tuned/plain | reference | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    index = {(r.widths, r.domain, r.seed, r.norm, r.config): r for r in rows}
    ratios = []
    for r in rows:
        ref = REFERENCE.get((r.widths, r.domain), (None, None))[0 if r.norm == "linf" else 1]
        ratio = ""
        if r.config == "tuned":
            plain = index.get((r.widths, r.domain, r.seed, r.norm, "plain"))
            if plain is not None:
                ratios.append((r.total_s, plain.total_s))
                ratio = f"{r.total_s / plain.total_s:.2f}"
        lines.append(
            f"| [{r.widths}] | {r.domain} | {r.seed} | {r.norm} | {r.config} | {r.status} | "
            f"{r.value:.6g} | {r.unstable} | {r.binaries} | {_fmt(r.bounds_s, 2)} | "
            f"{_fmt(r.build_s, 2)} | {_fmt(r.solve_s)} | {_fmt(r.total_s)} | {ratio} | "
            f"{_fmt(ref)} | {r.peak_mb:.0f} |"
        )
    if ratios:
        tuned_s, plain_s = sum(t for t, _ in ratios), sum(p for _, p in ratios)
        lines += [
            "",
            f"Overall: tuned {tuned_s:.1f} s, plain {plain_s:.1f} s, "
            f"ratio {tuned_s / plain_s:.2f}.",
        ]
    lines += reference_summary(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    from lipopt.atomic import write_text_atomic  # in here: spawned jobs import this module

    write_text_atomic(path, "\n".join(lines) + "\n")


def reference_summary(rows: list[Row]) -> list[str]:
    """The issue's goal, counted: tuned solves of reference-solved cases that finished exactly in
    less than the reference's time, and the tuned total against the reference total."""
    solved: list[tuple[Row, float]] = []
    for r in rows:
        ref = REFERENCE.get((r.widths, r.domain), (None, None))[r.norm != "linf"]
        if r.config == "tuned" and ref is not None:
            solved.append((r, ref))
    if not solved:
        return []
    beat = [r for r, ref in solved if r.status == "optimal" and r.total_s < ref]
    missed = [
        f"[{r.widths}] {r.domain} seed {r.seed} {r.norm} ({r.status}, {r.total_s:.1f} s vs {ref})"
        for r, ref in solved
        if r not in beat
    ]
    ours, theirs = sum(r.total_s for r, _ in solved), sum(ref for _, ref in solved)
    out = [
        "",
        f"Against the reference: tuned finished exactly and faster on {len(beat)} of "
        f"{len(solved)} reference-solved solves; tuned total {ours:.1f} s vs reference "
        f"{theirs:.1f} s (ratio {ours / theirs:.2f}; timed-out solves count their limit).",
    ]
    if missed:
        out.append("Missed: " + "; ".join(missed) + ".")
    return out


def save_rows(rows: list[Row], path: Path) -> None:
    from lipopt.atomic import write_text_atomic

    write_text_atomic(path, "".join(json.dumps(asdict(r)) + "\n" for r in rows))


def load_rows(path: Path) -> list[Row]:
    return [Row(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="two small cases, 1 seed, 60 s limit")
    parser.add_argument("--seeds", type=int, default=2, help="networks per size (default 2)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="per solve (default 300)")
    parser.add_argument("--cases", help="comma list of indices into the case list")
    parser.add_argument(
        "--configs", default="plain,tuned", help=f"comma list of {', '.join(VARIANTS)}"
    )
    parser.add_argument("--norms", default="linf,l1", help="comma list of linf, l1")
    parser.add_argument("--jobs", type=int, default=1, help="solves run at a time (default 1)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "speed.md")
    parser.add_argument(
        "--merge", help="comma list of .jsonl files of earlier runs: write their rows as one table"
    )
    args = parser.parse_args(argv)
    shown_argv = sys.argv[1:] if argv is None else argv
    if args.merge:
        rows = [r for f in args.merge.split(",") for r in load_rows(Path(f))]
        rows.sort(key=lambda r: (_case_order(r), r.seed, r.norm != "linf", r.config))
        write_table(rows, args.out, shown_argv, "(merged runs)")
        save_rows(rows, args.out.with_suffix(".jsonl"))
        return 0
    cases = QUICK if args.quick else list(REFERENCE)
    if args.cases:
        cases = [cases[int(i)] for i in args.cases.split(",")]
    seeds = 1 if args.quick else args.seeds
    limit = 60.0 if args.quick else args.time_limit
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    jobs = [
        (widths, domain, seed, norm, config, limit)
        for widths, domain in cases
        for seed in range(seeds)
        for norm in args.norms.split(",")
        for config in args.configs.split(",")
    ]
    rows = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for row in pool.map(run_one, jobs):  # in submission order: the table keeps its order
            rows.append(row)
            print(
                f"[{row.widths}] {row.domain} seed {row.seed} {row.norm} {row.config}: "
                f"{row.status} {row.value:.6g} in {row.total_s:.1f} s",
                flush=True,
            )
            write_table(rows, args.out, shown_argv, started)
            save_rows(rows, args.out.with_suffix(".jsonl"))
    return 0


def _case_order(row: Row) -> int:
    keys = list(REFERENCE)
    key = (row.widths, row.domain)
    return keys.index(key) if key in keys else len(keys)


if __name__ == "__main__":
    sys.exit(main())
