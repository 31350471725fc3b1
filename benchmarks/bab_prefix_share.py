"""The activation branch and bound's margin LPs on stable-prefix nodes: every node, or a share.

    python benchmarks/bab_prefix_share.py                          # 20 s a search, shares 1, 0.25
    python benchmarks/bab_prefix_share.py --seconds 10 --shares 1,0.25,0 --cases mnist-mlp-0.05-0

Each case runs the search alone (:func:`lipopt.search.activation_bab.activation_bab_on`, score
branching, no start attack, no part MIPs: so the upper bound it reaches in the time is the
measure) once per share of its time that the margin LPs may take
(``ActivationBabOptions.prefix_share``; 1 = every node whose first layers are stable is
checked, the behaviour before ``BAB_PREFIX_LP_SHARE``), each in a fresh process on one BLAS
thread, one after the other. Cases: the ``mnist`` suite's random-weight MLP 784-20-20-10 and
CNN of ``scale.py`` (image ``default_rng(i).uniform``), and issue 45's digits networks
(``scale-mlp``, ``scale-cnn``, test image i); c = the top-2 margin, ℓ∞ ball. Per run: the
upper bound, the nodes expanded, the prefix checks run and those skipped over the share (a
check runs its LP only where the prefix fixes more neurons than its parent's), and their
seconds.
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

from machine import in_fresh_process, run_stamp, stream_table  # noqa: E402

CASES = [
    "mnist-mlp-0.05-0", "mnist-mlp-0.05-1", "mnist-cnn-0.01-0", "scale-mlp-0.1-0",
    "scale-mlp-0.1-1", "scale-cnn-0.1-0", "scale-cnn-0.05-3",
]  # fmt: skip


def make(case: str, folder: Path) -> tuple[Any, Any, Any]:
    """``(network, domain, c)`` of a case name ``suite-net-radius-image`` (suite ``scale``,
    ``mnist`` or ``bundled``)."""
    import numpy as np
    from margins import top_two_margin
    from scale import image, mnist_networks

    import lipopt

    suite, net_name, radius, index = case.split("-")
    if suite == "mnist":
        path = mnist_networks(folder)[f"mnist-{net_name}"]
        x = image("", int(index))
    elif suite == "bundled":  # the bundled digits networks: bundled-cnn-0.05-1
        path = ROOT / "models" / f"digits-{net_name}.onnx"
        x = image("models/digits-test.npz", int(index))
    else:
        path = ROOT / "benchmarks" / "models" / f"scale-{net_name}.onnx"
        x = image("benchmarks/models/scale-test.npz", int(index))
    net = lipopt.load_onnx(path)
    return net, lipopt.LinfBall(np.asarray(x), float(radius)), top_two_margin(net, x)


def _job(args: tuple[str, float, float], queue: Any) -> None:
    """One search with the share given, in this (fresh) process, on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from lipopt.norms import InputNorm
    from lipopt.query import Query
    from lipopt.search import activation_bab as search_module
    from lipopt.search.bab_node import ActivationBabOptions

    case, seconds, share = args
    threadpool_limits(1)
    counts = {"run": 0, "skipped": 0, "seconds": 0.0}
    checking = search_module._Search.check_prefix

    def counted(search: Any, node: Any) -> Any:
        before = search.prefix_seconds
        kept = checking(search, node)
        ran = search.prefix_seconds != before
        counts["run" if ran else "skipped"] += 1
        counts["seconds"] = search.prefix_seconds
        return kept

    search_module._Search.check_prefix = counted
    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    query = Query(net, domain, InputNorm.LINF, c)
    options = ActivationBabOptions(branching="score", attack_restarts=0, prefix_share=share)
    found = search_module.activation_bab_on(
        query, options=options, deadline=time.perf_counter() + seconds
    )
    queue.put((found.upper, found.nodes, found.root_unstable, counts))


def run(case: str, seconds: float, share: float) -> tuple[Any, ...]:
    return tuple(in_fresh_process(_job, (case, seconds, share)))


def _row(case: str, seconds: float, share: float) -> str:
    upper, nodes, unstable, counts = run(case, seconds, share)
    return (
        f"| {case} | {unstable} | {share:g} | {upper:.6g} | {nodes} | "
        f"{counts['run']} / {counts['skipped']} | {counts['seconds']:.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--shares", default="1,0.25")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_prefix_share.md")
    args = parser.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    lines = [
        "# Margin LPs on every stable-prefix node, or a share of the search's time",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/bab_prefix_share.py "
        f"--seconds {args.seconds:g} --shares {args.shares}`.",
        "",
        "The search alone for the seconds given (score branching, no start attack, no part "
        "MIPs); share = `prefix_share`. Upper = its bound at the end (lower is better); checks = "
        "prefix checks run / skipped over the share (a check runs its margin LP only where the "
        "prefix fixes more neurons than its parent's), and their seconds.",
        "",
        "| case | unstable | share | upper | nodes | checks run / skipped | check seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    cases = args.cases.split(",")
    rows = (_row(case, args.seconds, share) for case in cases for share in shares)
    stream_table(args.out, lines, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
