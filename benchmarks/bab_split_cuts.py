"""The activation branch and bound with and without the splits' input-space cuts.

    python benchmarks/bab_split_cuts.py                      # 20 s a search, every case
    python benchmarks/bab_split_cuts.py --seconds 10 --cases scale-cnn-0.05-3

Each case runs the search alone (:func:`lipopt.search.activation_bab.activation_bab_on`, score
branching, no start attack, no part MIPs, the policy's margin-LP share) twice, without and with
``ActivationBabOptions.split_cuts`` (:mod:`lipopt.bounds.split_cuts`), each in a fresh process
on one BLAS thread, one after the other. The cases are those of ``bab_prefix_share.py``
(``suite-net-radius-image``). Per run: the upper bound it reached (lower is better), the
attained value, the nodes expanded and the children found empty.
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
    "scale-mlp-0.1-0", "scale-mlp-0.1-1", "scale-mlp-0.05-2", "scale-cnn-0.1-0",
    "scale-cnn-0.1-2", "scale-cnn-0.05-0", "scale-cnn-0.05-3", "mnist-mlp-0.05-0",
    "mnist-cnn-0.01-0", "mnist-cnn-0.05-0",
]  # fmt: skip


def _job(args: tuple[str, float, bool], queue: Any) -> None:
    """One search, with or without the cuts, in this (fresh) process on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from lipopt.norms import InputNorm
    from lipopt.policy import BAB_PREFIX_LP_SHARE
    from lipopt.query import Query
    from lipopt.search.activation_bab import activation_bab_on
    from lipopt.search.bab_node import ActivationBabOptions

    case, seconds, cuts = args
    threadpool_limits(1)
    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    options = ActivationBabOptions(
        branching="score", attack_restarts=0, prefix_share=BAB_PREFIX_LP_SHARE, split_cuts=cuts
    )
    query = Query(net, domain, InputNorm.LINF, c)
    found = activation_bab_on(query, options=options, deadline=time.perf_counter() + seconds)
    queue.put(
        (net.input_dim, found.root_unstable, found.upper, found.lower, found.nodes, found.empty)
    )


def run(case: str, seconds: float, cuts: bool) -> tuple[Any, ...]:
    return tuple(in_fresh_process(_job, (case, seconds, cuts)))


def _row(case: str, seconds: float) -> str:
    plain, cut = run(case, seconds, False), run(case, seconds, True)
    return (
        f"| {case} | {plain[0]} | {plain[1]} | {plain[2]:.5g} / {cut[2]:.5g} | "
        f"{plain[3]:.5g} / {cut[3]:.5g} | {plain[4]} / {cut[4]} | {plain[5]} / {cut[5]} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_split_cuts.md")
    args = parser.parse_args(argv)
    lines = [
        "# The activation branch and bound with and without the splits' input-space cuts",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/bab_split_cuts.py "
        f"--seconds {args.seconds:g}`.",
        "",
        "The search alone for the seconds given (score branching, no start attack, no part "
        "MIPs). Upper = its bound at the end (lower is better), lower = the value it attained; "
        "empty = children found to hold no point.",
        "",
        "| case | inputs | unstable | upper: no cuts / cuts | lower: no cuts / cuts "
        "| nodes: no cuts / cuts | empty: no cuts / cuts |",
        "|---|---|---|---|---|---|---|",
    ]
    stream_table(args.out, lines, (_row(case, args.seconds) for case in args.cases.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
