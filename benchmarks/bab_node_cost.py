"""What a node of the activation branch and bound costs: the same search, two checkouts.

    python benchmarks/bab_node_cost.py --vs ../before                 # 400 nodes, every case
    python benchmarks/bab_node_cost.py --vs ../before --nodes 1000 --cases scale-mlp-0.1-0
    python benchmarks/bab_node_cost.py --vs ../before --sign-group 8   # with the planner's groups

Each case (those of ``bab_prefix_share.py``: ``suite-net-radius-image``) runs the search alone
(:func:`lipopt.search.activation_bab.activation_bab_on`: score branching, the split cuts on,
no start attack, no part MIPs, a margin LP on every node whose first layers are stable;
``--sign-group N``: the sign-group bound of groups of N entries on each node as it leaves the
heap, as planned) for a fixed number of nodes, so both checkouts do the same work where their
bounds are the same: the table shows the upper bound each reached, to check that. Each run is a
fresh process with ``PYTHONPATH`` and the working directory set to its checkout (its lipopt
imported first and checked to be that checkout's), on one BLAS thread; the two checkouts
alternate, ``--repeats`` times each. Per case: the upper bound of each and the
median seconds of each, and their ratio (this / before; below 1 is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CASES = ["scale-cnn-0.1-0", "scale-cnn-0.05-0", "scale-mlp-0.1-0", "mnist-mlp-0.05-0"]


def _child(case: str, nodes: int, sign_group: int) -> None:
    """One search in this process (the caller set ``PYTHONPATH`` to the checkout measured)."""
    import tempfile

    from threadpoolctl import threadpool_limits

    import lipopt  # first, from PYTHONPATH: bab_prefix_share puts this script's checkout first

    sys.path.insert(0, str(HERE))  # make() and its helpers use lipopt's public names only
    from bab_prefix_share import make

    from lipopt.norms import InputNorm
    from lipopt.query import Query
    from lipopt.search.activation_bab import activation_bab_on
    from lipopt.search.bab_node import ActivationBabOptions

    threadpool_limits(1)
    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    options = ActivationBabOptions(
        branching="score", attack_restarts=0, prefix_share=1.0, split_cuts=True,
        node_limit=nodes, sign_group=sign_group,
    )  # fmt: skip
    began = time.perf_counter()
    found = activation_bab_on(Query(net, domain, InputNorm.LINF, c), options=options)
    seconds = time.perf_counter() - began
    where = str(Path(lipopt.__file__).resolve().parent)
    print(json.dumps({"upper": found.upper, "nodes": found.nodes, "seconds": seconds,
                      "lipopt": where}))  # fmt: skip


def _run(tree: Path, case: str, nodes: int, sign_group: int) -> dict[str, float]:
    """One search in a fresh process importing ``tree``'s lipopt."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--child", case, str(nodes), str(sign_group)]
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(answer.pop("lipopt")).is_relative_to(tree.resolve()):
        raise SystemExit(f"the search imported lipopt from outside {tree}")
    return {key: float(value) for key, value in answer.items()}


def _row(case: str, trees: dict[str, Path], args: argparse.Namespace) -> str:
    nodes, repeats = args.nodes, args.repeats
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in trees}
    for turn in range(repeats):
        order = list(trees) if turn % 2 == 0 else list(trees)[::-1]
        for side in order:
            runs[side].append(_run(trees[side], case, nodes, args.sign_group))
    upper = {side: runs[side][0]["upper"] for side in trees}
    took = {side: statistics.median(r["seconds"] for r in runs[side]) for side in trees}
    return (
        f"| {case} | {int(runs['this'][0]['nodes'])} | {upper['this']:.6g} / "
        f"{upper['before']:.6g} | {took['this']:.2f} / {took['before']:.2f} | "
        f"{took['this'] / took['before']:.2f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vs", type=Path, required=False, help="the 'before' checkout")
    parser.add_argument("--nodes", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sign-group", type=int, default=0, help="sign-group size (0: none)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_node_cost.md")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]), int(args.child[2]))
        return 0
    if args.vs is None or not (args.vs / "lipopt" / "__init__.py").is_file():
        parser.error("--vs CHECKOUT: the 'before' checkout (with lipopt/__init__.py) is needed")
    sys.path.insert(0, str(HERE))
    from machine import run_stamp, stream_table

    trees = {"this": ROOT, "before": args.vs.resolve()}
    lines = [
        "# What a node of the activation branch and bound costs",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/bab_node_cost.py --vs "
        f"{args.vs} --nodes {args.nodes} --repeats {args.repeats} --sign-group "
        f"{args.sign_group} --cases {args.cases}`.",
        "",
        f"The search alone for {args.nodes} nodes (score branching, split cuts, no start "
        f"attack, no part MIPs, every margin LP, sign groups of {args.sign_group} entries "
        "(0: none)); *this* = this checkout, *before* = `--vs`'s, "
        f"alternating, {args.repeats} runs each. Seconds: medians.",
        "",
        "| case | nodes | upper: this / before | seconds: this / before | ratio |",
        "|---|---|---|---|---|",
    ]
    rows = (_row(case, trees, args) for case in args.cases.split(","))
    stream_table(args.out, lines, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
