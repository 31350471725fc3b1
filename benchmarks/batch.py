"""Throughput of ``lipopt batch`` (issue 30): 200 small queries answered by the local pool with
1 and 2 workers and by a 2-worker Dask cluster on this machine, against the same queries
answered by ``lipschitz()`` calls in one process (no batch machinery at all) and by one
``lipopt solve`` process each (what a user did before ``batch``).

    PYTHONPATH=. python benchmarks/batch.py --write          # benchmarks/results/batch.md
    PYTHONPATH=. python benchmarks/batch.py --queries 40     # a quick look, nothing written

Each configuration runs ``--repeats`` times (fresh results file each time, whole command
timed: Python start-up, reading and checking the instances, the workers' start, every query);
the table gives the median and the range. The separate-process baseline runs the first
``--sample`` queries only and is quoted per query. The Dask cluster (a scheduler and two
``--nthreads 1`` workers, no nannies) is started once, before its runs; its start-up is
reported apart. Queries come from tests/batch_helpers.write_batch (five networks of 1–3 hidden
layers of 6–12 neurons, boxes of three sizes, both norms, c and output norms).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "batch.md"
sys.path.insert(0, str(ROOT))

from benchmarks.machine import run_stamp  # noqa: E402
from tests.batch_helpers import write_batch  # noqa: E402


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200, help="queries in the batch")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each configuration")
    parser.add_argument("--sample", type=int, default=20, help="queries run as lipopt solve")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    return parser.parse_args(argv)


def _timed(argv: list[str], cwd: Path) -> float:
    """Seconds of one whole command; it must succeed."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=_env())
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    return seconds


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _batch(root: Path, repeats: int, *extra: str) -> list[float]:
    """Whole ``lipopt batch`` runs into fresh results files."""
    times = []
    for k in range(repeats):
        out = root / f"r-{'-'.join(extra) or 'default'}-{k}.jsonl".replace(":", "").replace("/", "")
        argv = [sys.executable, "-m", "lipopt.cli", "batch", "instances.csv", "--out", str(out)]
        times.append(_timed([*argv, "--quiet", *extra], root))
    return times


def _in_process(root: Path) -> float:
    """Seconds of ``lipschitz()`` on every query in this process (networks loaded first)."""
    from lipopt import lipschitz, load_onnx
    from lipopt.batch import SolveOptions, read_instances

    tasks = read_instances(root / "instances.csv", SolveOptions())
    nets = {task.model: load_onnx(task.model) for task in tasks}
    start = time.perf_counter()
    for task in tasks:
        lipschitz(nets[task.model], task.domain, **task.options)
    return time.perf_counter() - start


def _solve_processes(root: Path, sample: int) -> float:
    """Seconds per query of one ``lipopt solve`` process each, over the first ``sample``."""
    import csv

    rows = list(csv.DictReader((root / "instances.csv").open()))[:sample]
    total = 0.0
    for k, row in enumerate(rows):
        argv = [sys.executable, "-m", "lipopt.cli", "solve", row["onnx"], "--box",
                f"props/p{k}.json", "--norm", row["norm"], "--time-limit", row["timeout"],
                "--quiet"]  # fmt: skip
        argv += ["--c", row["c"]] if row["c"] else []
        argv += ["--output-norm", row["output_norm"]] if row["output_norm"] else []
        total += _timed(argv, root)
    return total / len(rows)


def _cluster() -> tuple[str, list[subprocess.Popen], float]:
    """A scheduler and two single-thread workers on 127.0.0.1: address, processes, seconds
    until both workers were ready."""
    from distributed import Client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": _env()}
    start = time.perf_counter()
    processes = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port",
                                   str(port), "--no-dashboard"], **quiet)]  # fmt: skip
    processes += [
        subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--no-nanny",
                          "--no-dashboard"], **quiet)  # fmt: skip
        for _ in range(2)
    ]
    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    return address, processes, time.perf_counter() - start


def _row(name: str, times: list[float], queries: int, base: float) -> str:
    """A table row: median and range, queries per minute, seconds per query above the
    in-process calls."""
    median = statistics.median(times)
    overhead = (median - base) / queries
    return (
        f"| {name} | {median:.1f} ({min(times):.1f}–{max(times):.1f}) | "
        f"{60 * queries / median:.0f} | {1000 * overhead:+.0f} | {median / base:.2f} |"
    )


def main(argv: list[str]) -> None:
    args = _arguments(argv)
    with tempfile.TemporaryDirectory(prefix="lipopt-batch-bench-") as folder:
        _measure(args, Path(folder))


def _measure(args: argparse.Namespace, root: Path) -> None:
    """Every configuration on a batch written into ``root``; the report."""
    write_batch(root, count=args.queries, seed=30)
    base_times = [_in_process(root) for _ in range(args.repeats)]
    base = statistics.median(base_times)
    rows = [f"| lipschitz() in one process (baseline) | {base:.1f} "
            f"({min(base_times):.1f}–{max(base_times):.1f}) | {60 * args.queries / base:.0f} "
            "| +0 | 1.00 |"]  # fmt: skip
    for jobs in (1, 2):
        times = _batch(root, args.repeats, "--jobs", str(jobs))
        rows.append(_row(f"lipopt batch --jobs {jobs}", times, args.queries, base))
    address, processes, startup = _cluster()
    try:
        times = _batch(root, args.repeats, "--scheduler", address)
        rows.append(_row("lipopt batch --scheduler (2 Dask workers)", times, args.queries, base))
    finally:
        for process in processes:
            process.kill()
    per_solve = _solve_processes(root, args.sample)
    rows.append(
        f"| one lipopt solve process per query ({args.sample} of them) | "
        f"{per_solve * args.queries:.1f} (extrapolated) | {60 / per_solve:.0f} | "
        f"{1000 * (per_solve - base / args.queries):+.0f} | "
        f"{per_solve * args.queries / base:.2f} |"
    )
    _report(args, rows, startup)


def _report(args: argparse.Namespace, rows: list[str], startup: float) -> None:
    text = "\n".join([
        "# Batch throughput (issue 30)",
        "",
        f"`PYTHONPATH=. python benchmarks/batch.py --write` on {run_stamp()}. "
        f"{args.queries} small queries (benchmarks/batch.py's "
        f"docstring); each configuration run {args.repeats} times, whole command timed "
        "(median, range). Overhead: seconds per query above the in-process baseline of the "
        "same run.",
        "",
        "| how | seconds for the batch | queries / min | overhead per query (ms) | "
        "time / baseline |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"The Dask cluster (scheduler + 2 workers) took {startup:.1f} s to start; not "
        "included above.",
        "",
    ])  # fmt: skip
    print(text)
    if args.write:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
