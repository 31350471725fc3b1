"""The branch and bound's start attack: how many searches it needs.

    python benchmarks/bab_attack.py                          # 8, 16 and 64 searches, every case
    python benchmarks/bab_attack.py --restarts 8,64 --cases scale-cnn-0.1-0

Each case (those of ``bab_prefix_share.py``: ``suite-net-radius-image``, c the top-2 margin,
an ℓ∞ ball) runs :func:`lipopt.heuristics.starts.attack_witness` — the gradient attack with
``ATTACK_STEPS`` moves per search, the best sampled points and the pattern climb, verified —
once per count of searches, without a deadline, each in a fresh process on one BLAS thread,
one after the other. Per run: the value attained (higher is better) and the seconds it took.
The policy's ``BAB_ATTACK_RESTARTS`` is read off this table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bab_prefix_share import make  # noqa: E402
from machine import in_fresh_process, run_stamp, stream_table  # noqa: E402

CASES = [
    "scale-cnn-0.1-0", "scale-cnn-0.1-1", "scale-cnn-0.05-0", "scale-cnn-0.05-1",
    "scale-cnn-0.05-2", "scale-mlp-0.1-0", "scale-mlp-0.1-1", "scale-mlp-0.1-2",
    "mnist-mlp-0.05-0", "mnist-cnn-0.05-0",
]  # fmt: skip


def _job(args: tuple[str, int], queue: Any) -> None:
    """One attack with ``restarts`` searches, in this (fresh) process on one BLAS thread."""
    from dataclasses import replace

    from threadpoolctl import threadpool_limits

    from lipopt.heuristics.starts import attack_witness
    from lipopt.norms import InputNorm
    from lipopt.policy import Policy
    from lipopt.query import Query

    case, restarts = args
    threadpool_limits(1)
    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    policy = replace(Policy.current(), attack_restarts=restarts)
    began = time.perf_counter()
    found = attack_witness(Query(net, domain, InputNorm.LINF, c), policy, 0, None)
    value = float("nan") if found is None else found.norm_value
    queue.put((value, time.perf_counter() - began))


def _row(case: str, counts: list[int]) -> str:
    runs = [in_fresh_process(_job, (case, count)) for count in counts]
    cells = " | ".join(f"{value:.5g} ({seconds:.1f} s)" for value, seconds in runs)
    return f"| {case} | {cells} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", default="8,16,64")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_attack.md")
    args = parser.parse_args(argv)
    counts = [int(count) for count in args.restarts.split(",")]
    lines = [
        "# The branch and bound's start attack: how many searches it needs",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/bab_attack.py "
        f"--restarts {args.restarts}`.",
        "",
        "The gradient attack (400 moves per search), the best sampled points and the pattern "
        "climb, verified, without a deadline; the value attained (higher is better) and the "
        "seconds, per count of searches.",
        "",
        "| case | " + " | ".join(f"{count} searches" for count in counts) + " |",
        "|---|" + "---|" * len(counts),
    ]
    stream_table(args.out, lines, (_row(case, counts) for case in args.cases.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
