"""Low dimension: the region search before the domain split, against the split alone (issue 45).

    python benchmarks/regions_first.py                        # -> results/regions_first.md
    python benchmarks/regions_first.py --seeds 1 --time-limit 30 --out /tmp/r.md   # quicker

Random ReLU networks (``tests.helpers.random_network``, seeds 0, 1, ...) of 2-4 inputs over the
unit box, ℓ∞ input norm, c = 1 for one output and (1, -1) for two. Each query is solved twice,
in turn, in fresh processes of this checkout under a time limit:

* *split*: the plan before ``AUTO_REGIONS_FIRST_MIN_DIM`` / ``AUTO_REGIONS_FIRST_MAX_HIDDEN``
  (both set so that no network qualifies): the domain split, a MIP on each part;
* *first*: both set so that every network qualifies: the region search with its node and
  projection limits first, then the split if the search stops unfinished.

The table gives value (the bracket [lower, upper] where it stopped), status and wall seconds of
``lipopt.lipschitz`` for each, and the ratio first / split of the seconds; the policy's two
constants are read from its rows. Seconds are of the solve only (the processes import lipopt,
Pyomo included, before the clock starts).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

NETWORKS = [
    [2, 8, 8, 1], [2, 16, 16, 1], [2, 24, 24, 2], [2, 32, 32, 1], [2, 16, 16, 16, 2],
    [2, 20, 40, 20, 2], [3, 16, 16, 1], [3, 24, 24, 1], [3, 32, 32, 1], [3, 20, 40, 20, 2],
    [4, 16, 16, 1], [4, 20, 20, 2], [4, 32, 32, 2], [4, 20, 40, 20, 2],
]  # fmt: skip

#: the policy's two constants per arm: (AUTO_REGIONS_FIRST_MIN_DIM, AUTO_REGIONS_FIRST_MAX_HIDDEN)
ARMS = {"split": (10**9, -1), "first": (0, 10**9)}


def child(widths: list[int], seed: int, arm: str, limit: float) -> dict[str, Any]:
    """One solve in this process under ``arm``'s rule: value, status, seconds."""
    import time

    import numpy as np

    import lipopt
    from lipopt import policy
    from lipopt.lazy import load_for_solving
    from tests.helpers import random_network

    policy.AUTO_REGIONS_FIRST_MIN_DIM, policy.AUTO_REGIONS_FIRST_MAX_HIDDEN = ARMS[arm]
    network = random_network(np.random.default_rng(seed), widths)
    d = widths[0]
    c = None if widths[-1] == 1 else np.array([1.0, -1.0])
    box = lipopt.Box(np.zeros(d), np.ones(d))
    lipopt.lipschitz(random_network(np.random.default_rng(99), [d, 4, 1]), box)  # warm the path
    load_for_solving()  # and Pyomo, which the first arm imports only if its search stops
    start = time.perf_counter()
    res = lipopt.lipschitz(network, box, "linf", c=c, time_limit=limit)
    seconds = time.perf_counter() - start
    return {"value": res.value, "lower": res.lower, "status": str(res.status), "seconds": seconds}


def solve(widths: list[int], seed: int, arm: str, limit: float) -> dict[str, Any]:
    """:func:`child` in a fresh process."""
    argv = [sys.executable, __file__, "--child", json.dumps([widths, seed, arm, limit])]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def row(widths: list[int], seed: int, runs: dict[str, dict[str, Any]]) -> str:
    """A table row: the network, then per arm value, status and seconds, and the ratio."""
    cells = [f"[{','.join(map(str, widths))}]", str(seed)]
    for arm in ARMS:
        r = runs[arm]
        shown = (
            f"{r['value']:.6g}"
            if r["status"] == "optimal"
            else f"[{r['lower']:.6g}, {r['value']:.6g}]"
        )
        cells += [shown, r["status"], f"{r['seconds']:.2f}"]
    cells.append(f"{runs['first']['seconds'] / runs['split']['seconds']:.2f}")
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/regions_first.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return 0
    from machine import run_stamp

    from lipopt.atomic import write_text_atomic

    lines = [
        "# Low dimension: the region search first, or the domain split alone",
        "",
        f"`python benchmarks/regions_first.py --seeds {args.seeds} --time-limit "
        f"{args.time_limit:g}` on {run_stamp()}. Unit boxes, ℓ∞ input norm, random networks; "
        "each query solved by both arms in turn, fresh processes, seconds of the solve.",
        "",
        "| network | seed | split: value or bracket | status | s "
        "| first: value or bracket | status | s | first / split |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for widths in NETWORKS:
        for seed in range(args.seeds):
            order = list(ARMS) if seed % 2 == 0 else list(reversed(ARMS))
            runs = {arm: solve(widths, seed, arm, args.time_limit) for arm in order}
            lines.append(row(widths, seed, runs))
            print(lines[-1], flush=True)
    write_text_atomic(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
