"""The plan alone against the plan then the activation branch and bound (``bab="auto"``).

    python benchmarks/bab_after.py                      # every case, 15 s each
    python benchmarks/bab_after.py --time-limit 30 --out /tmp/b.md

The cases of benchmarks/activation_bab.py (random unit-box networks, the bundled digits models
at ℓ∞ radius 0.05, c the top-2 margin), each solved with ``bab=False`` and then with
``bab="auto"`` under ``BAB_AFTER_SHARE = --share`` (default 0.5; the policy's own is 1.0, the
plan alone, because of this measurement): the plan for that share of the limit, then the branch
and bound from its best point, the better bounds kept; one after the other. Writes the table
(bracket, ratio, status, seconds of both) to ``benchmarks/results/bab_after.md`` with the
machine and date.
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

from activation_bab import DIGITS, RANDOM, cell, make, pair_table  # noqa: E402


def solve(case: tuple[str, str, int], limit: float, bab: bool | str) -> tuple[Any, ...]:
    """``(lower, upper, status, seconds)`` of one solve."""
    import lipopt

    net, domain, c, _label = make(case)
    start = time.perf_counter()
    res = lipopt.lipschitz(net, domain, "linf", c=c, time_limit=limit, bab=bab)
    return res.lower, res.value, str(res.status), time.perf_counter() - start


def table(rows: list[tuple[str, tuple, tuple]], limit: float, argv: str) -> str:
    import lipopt.policy

    share = lipopt.policy.BAB_AFTER_SHARE
    about = (
        f"Time limit {limit:g} s per solve; ℓ∞ input norm. *alone* = `bab=False`; *then BaB* = "
        f'`bab="auto"` with `BAB_AFTER_SHARE = {share:g}`: the plan for {share:.0%} of the '
        "limit, then the branch and bound for the rest from its best point, the better bounds "
        "of both kept. Each: bracket [lower, upper], upper/lower, status, wall seconds."
    )
    return pair_table(
        "The plan alone against the plan then the activation branch and bound",
        ("python benchmarks/bab_after.py " + argv).strip(), about, ("alone", "then-BaB"), rows,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=15.0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_after.md")
    parser.add_argument("--share", type=float, default=0.5, help="BAB_AFTER_SHARE for the run")
    args = parser.parse_args(argv)
    import lipopt.policy

    lipopt.policy.BAB_AFTER_SHARE = args.share
    rows = []
    for case in RANDOM + DIGITS:
        label = make(case)[3]
        alone = solve(case, args.time_limit, False)
        after = solve(case, args.time_limit, "auto")
        print(f"{label}: alone {cell(*alone)}; then BaB {cell(*after)}", flush=True)
        rows.append((label, alone, after))
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    args.out.write_text(table(rows, args.time_limit, shown))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
