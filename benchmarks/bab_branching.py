"""Which neuron the activation branch and bound splits: the ``layer`` rule against ``score``.

    python benchmarks/bab_branching.py                       # every case, 30 s each
    python benchmarks/bab_branching.py --time-limit 10 --cases mlp-0.1-0 --out /tmp/b.md

``layer`` splits the earliest layer's best-scored unstable neuron (stable prefixes let the
margin LP drop empty parts); ``score`` the best-scored anywhere, score
``min(-l, u) · max(|ly|, |uy|)`` (lipopt/search/activation_rules.py). Each case is solved with
``bab=True`` (the branch and bound alone, its part MIPs on HiGHS) once per rule, each in a
fresh process, one after the other. The cases are those of ``bab_race.py``: issue 45's digits
networks (c the top-2 margin, ℓ∞ balls of radius 0.05 and 0.1 around test images 0 and 1) and
speed.py's networks (seed 0). Per case: the root's unstable kinked neurons and both brackets.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from activation_bab import pair_table, paired_solves  # noqa: E402  (the same table)
from bab_race import DIGITS, make  # noqa: E402  (the same cases)

SPEED = [
    "speed-64x20x20x2-unit", "speed-64x20x20x2-ball", "speed-10x20x20x1-unit",
    "speed-10x20x20x1-ball", "speed-16x16x16x2-unit",
]  # fmt: skip
RULES = ("layer", "score")
COMMAND = "python benchmarks/bab_branching.py "


def _job(args: tuple[str, float, str], queue: Any) -> None:
    """One ``bab=True`` solve with the branching rule forced, in this (fresh) process."""
    from dataclasses import replace

    import lipopt
    import lipopt.plan.planner as planner

    case, limit, rule = args
    planned = planner._bab

    def forced(config: Any, policy: Any) -> Any:
        node = planned(config, policy)
        return replace(node, options=replace(node.options, branching=rule))

    planner._bab = forced
    net, domain, c = make(case)
    start = time.perf_counter()
    res = lipopt.lipschitz(net, domain, "linf", c=c, time_limit=limit, bab=True)
    queue.put((res.lower, res.upper, str(res.status), time.perf_counter() - start))


def root_unstable(case: str) -> int:
    """The case's kinked neurons unstable under the root's linear bounds."""
    import numpy as np

    from lipopt.bounds.linear import linear_bounds
    from lipopt.search.kinds import unstable_count

    net, domain, c = make(case)
    seed = np.ones(net.output_dim) if c is None else np.atleast_1d(np.asarray(c, dtype=float))
    return unstable_count(net, linear_bounds(net, domain, seed).states)


def table(rows: list[tuple[str, tuple, tuple]], unstable: dict, limit: float, argv: str) -> str:
    about = (
        f"Time limit {limit:g} s per solve; ℓ∞ input norm; `bab=True`, lipopt's defaults "
        "otherwise, the rule forced. Unstable = kinked neurons unstable under the root's linear "
        "bounds. Each rule: bracket [lower, upper], upper/lower, status, wall seconds; a fresh "
        "process each, one after the other."
    )
    return pair_table(
        "The activation branch and bound's branching rule: layer or score",
        (COMMAND + argv).strip(), about, RULES, rows, ("unstable", unstable),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--cases", default=",".join(DIGITS + SPEED), help="comma list")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_branching.md")
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    unstable = {case: root_unstable(case) for case in cases}
    rows = paired_solves(_job, cases, args.time_limit, RULES, RULES)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    args.out.write_text(table(rows, unstable, args.time_limit, shown))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
