"""The two back-substitution walks (lipopt/bounds/back_substitution.py) on problems a search meets.

    python benchmarks/back_substitution.py                       # -> results/back_substitution.md
    python benchmarks/back_substitution.py --cases scale-mlp-0.1-0 --seconds 5   # quicker

Per case (``suite-net-radius-image``, as ``bab_prefix_share.py``): the search alone runs for
``--seconds`` with the planner's sign groups, and every fourth of its first 40 sign-group calls
is kept (the node's bounds as the search had them). On those 10 problems, one BLAS thread,
best of 5 runs each:

* the sign-group bound with each walk forced (``KEPT_COLUMNS_MIN_ROWS`` set to 1, or above any
  row count): milliseconds per call and the largest relative difference of the two values;
* each walk alone on random sign rows of several counts: microseconds per call, and the ratio
  kept / every (below 1: the kept walk is faster), from which ``KEPT_COLUMNS_MIN_ROWS`` is read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bab_prefix_share import make  # noqa: E402
from machine import run_stamp  # noqa: E402

import lipopt.bounds.back_substitution as walks  # noqa: E402
import lipopt.search.activation_bab as search_module  # noqa: E402
from lipopt.bounds.jacobian import chord_switches, slope_problem  # noqa: E402
from lipopt.bounds.sign_groups import sign_group_bound  # noqa: E402
from lipopt.norms import InputNorm  # noqa: E402
from lipopt.query import Query  # noqa: E402
from lipopt.search.bab_node import ActivationBabOptions  # noqa: E402

CASES = ["scale-mlp-0.1-0", "bundled-cnn-0.05-1"]
ROW_COUNTS = (1, 8, 32, 128, 256, 512, 2048)


def captured(case: str, seconds: float) -> list[tuple[Any, ...]]:
    """Every fourth of the first 40 sign-group calls of the search alone on ``case``."""
    from lipopt import policy

    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    options = ActivationBabOptions(
        branching="auto", score_from=policy.BAB_SCORE_MIN_UNSTABLE, split_cuts=True,
        prefix_share=policy.BAB_PREFIX_LP_SHARE, sign_group=policy.BAB_SIGN_GROUP,
        sign_group_probe=policy.BAB_SIGN_GROUP_PROBE, dense_below=policy.BAB_DENSE_MAX_ENTRIES,
    )  # fmt: skip
    calls: list[tuple[Any, ...]] = []
    real = search_module.shortlist_bound  # the search's sign-group bounds, from its lists

    def spy(network: Any, bounds: Any, seed: Any, grouping: Any, listed: Any) -> Any:
        if len(calls) < 40:
            calls.append((network, bounds, seed, grouping[0]))
        return real(network, bounds, seed, grouping, listed)

    search_module.shortlist_bound = spy
    try:
        search_module.activation_bab_on(
            Query(net, domain, InputNorm.LINF, c), options=options,
            deadline=time.perf_counter() + seconds,
        )  # fmt: skip
    finally:
        search_module.shortlist_bound = real
    return calls[::4]


def best_of(job: Callable[[], Any], runs: int = 5) -> float:
    """The least wall time of ``runs`` calls, after one untimed call."""
    job()
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        job()
        times.append(time.perf_counter() - began)
    return min(times)


def forced(threshold: int, problems: list[tuple[Any, ...]]) -> tuple[float, list[float]]:
    """Milliseconds per sign-group call and the values, with the threshold given."""
    kept = walks.KEPT_COLUMNS_MIN_ROWS
    walks.KEPT_COLUMNS_MIN_ROWS = threshold
    try:
        values = [sign_group_bound(*p) for p in problems]
        seconds = sum(best_of(lambda p=p: sign_group_bound(*p)) for p in problems)
    finally:
        walks.KEPT_COLUMNS_MIN_ROWS = kept
    return 1e3 * seconds / len(problems), values


def walk_row(case: str, rows: int, problems: list[tuple[Any, ...]]) -> str:
    """Microseconds per call of each walk on ``rows`` random sign rows, and their ratio."""
    rng = np.random.default_rng(rows)
    took = {"every": 0.0, "kept": 0.0}
    for network, bounds, seed, _ in problems:
        problem = slope_problem(network, bounds, seed, InputNorm.L1)
        switch = chord_switches(problem)
        objective = rng.choice([-1.0, 1.0], size=(rows, problem.g_low.shape[0]))
        arguments = (problem, switch, objective)
        for name, walk in (("every", walks.every_column), ("kept", walks.kept_columns)):
            took[name] += best_of(lambda w=walk, a=arguments: w(*a, [np.zeros(rows)] * 2))
    every, kept = (1e6 * took[k] / len(problems) for k in ("every", "kept"))
    return f"| {case} | {rows} | {every:.0f} | {kept:.0f} | {kept / every:.2f} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--seconds", type=float, default=10.0, help="the search's time per case")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "back_substitution.md")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    head = [
        "# The back-substitution's two walks",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/back_substitution.py --cases "
        f"{args.cases} --seconds {args.seconds:g}`. One BLAS thread, best of 5 runs per call; "
        "10 sign-group problems per case, taken from the search alone (module docstring).",
        "",
    ]
    bound_rows = ["| case | every column: ms | kept columns: ms | ratio | largest rel. diff |",
                  "|---|---|---|---|---|"]  # fmt: skip
    walk_rows = ["| case | rows | every column: µs | kept columns: µs | kept / every |",
                 "|---|---|---|---|---|"]  # fmt: skip
    for case in args.cases.split(","):
        problems = captured(case, args.seconds)
        every_ms, every_values = forced(1 << 30, problems)
        kept_ms, kept_values = forced(1, problems)
        diff = max(abs(a - b) / abs(a) for a, b in zip(every_values, kept_values, strict=True))
        line = (
            f"| {case} | {every_ms:.2f} | {kept_ms:.2f} | {kept_ms / every_ms:.2f} | {diff:.1e} |"
        )
        print(line, flush=True)
        bound_rows.append(line)
        for rows in ROW_COUNTS:
            walk_rows.append(walk_row(case, rows, problems))
            print(walk_rows[-1], flush=True)
    text = [*head, "The sign-group bound, each walk forced:", "", *bound_rows, "",
            "Each walk alone on random sign rows:", "", *walk_rows]  # fmt: skip
    args.out.write_text("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
