"""The branch and bound's open nodes under a memory cap: the same search with and without it.

    python benchmarks/bab_heap_cap.py                                 # 60 s, two cases
    python benchmarks/bab_heap_cap.py --seconds 30 --caps 0,8,32 --cases scale-cnn-0.1-0

Each case (those of ``bab_prefix_share.py``: ``suite-net-radius-image``) runs the search alone
(:func:`lipopt.search.activation_bab.activation_bab_on`: score branching, split cuts, sign groups
of 8, no start attack, no part MIPs) for ``--seconds`` with each heap cap of ``--caps`` (MiB of
the open nodes' bounds; 0: none), each a fresh process on one BLAS thread. Per run: the upper
bound reached, the nodes expanded, the nodes parked (their bounds dropped, rebuilt when
reached; :mod:`lipopt.search.bab_heap`) and the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CASES = ["scale-cnn-0.1-0", "mnist-cnn-0.01-0"]


def _child(case: str, seconds: float, cap_mib: int) -> None:
    """One search in this process."""
    import tempfile

    from threadpoolctl import threadpool_limits

    import lipopt  # noqa: F401  (first, from ROOT)

    sys.path.insert(0, str(HERE))
    from bab_prefix_share import make

    from lipopt.norms import InputNorm
    from lipopt.query import Query
    from lipopt.search.activation_bab import activation_bab_on
    from lipopt.search.bab_node import ActivationBabOptions

    threadpool_limits(1)
    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    options = ActivationBabOptions(
        branching="score", attack_restarts=0, split_cuts=True, sign_group=8,
        heap_bytes=cap_mib << 20 if cap_mib else None,
    )  # fmt: skip
    query = Query(net, domain, InputNorm.LINF, c)
    found = activation_bab_on(query, options=options, deadline=time.perf_counter() + seconds)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"upper": found.upper, "nodes": found.nodes, "parked": found.parked,
                      "peak_mib": peak_kib / 1024}))  # fmt: skip


def _run(case: str, seconds: float, cap: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", case, str(seconds),
               str(cap)]  # fmt: skip
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--caps", default="0,16", help="MiB of open nodes' bounds; 0: no cap")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_heap_cap.md")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], float(args.child[1]), int(args.child[2]))
        return 0
    sys.path.insert(0, str(HERE))
    from machine import run_stamp, stream_table

    lines = [
        "# The branch and bound's open nodes under a memory cap",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/bab_heap_cap.py --seconds "
        f"{args.seconds:g} --caps {args.caps} --cases {args.cases}`.",
        "",
        f"The search alone for {args.seconds:g} s (score branching, split cuts, sign groups of "
        "8, no start attack, no part MIPs), each cap (MiB of the open nodes' bounds; 0: none) in "
        "a fresh process; *peak*: the process's peak resident memory.",
        "",
        "| case | cap MiB | upper | nodes | parked | peak MiB |",
        "|---|---|---|---|---|---|",
    ]

    def rows():
        for case in args.cases.split(","):
            for cap in (int(value) for value in args.caps.split(",")):
                r = _run(case, args.seconds, cap)
                yield (
                    f"| {case} | {cap or 'none'} | {r['upper']:.6g} | {r['nodes']} | "
                    f"{r['parked']} | {r['peak_mib']:.0f} |"
                )

    stream_table(args.out, lines, rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
