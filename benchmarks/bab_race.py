"""The race's second racer: the forward MIP against the activation branch and bound.

    python benchmarks/bab_race.py                          # every case, 60 s each
    python benchmarks/bab_race.py --time-limit 20 --cases mlp-0.05-0 --out /tmp/r.md

Where the formulations race (``formulation="auto"``, ℓ∞ input norm, a fixed c), lipopt probes
the backward MIP, then races it against a second racer: the forward MIP, or the activation
branch and bound (its part MIPs on HiGHS) where the network has ``BAB_RACE_MIN_INPUTS`` inputs
and ``BAB_RACE_UNSTABLE_SHARE`` of its neurons are unstable (lipopt/policy.py). Each case is
solved twice with lipopt's defaults, each in a fresh process, one after the other: *forward*
with the branch and bound never racing, *BaB* with it racing wherever the race runs (both
thresholds at their least). Cases:
issue 45's digits networks (``benchmarks/models/scale-*.onnx``, c the top-2 margin at the
image, ℓ∞ balls of radius 0.05 and 0.1 around test images 0 and 1) and benchmarks/speed.py's
networks of 64 and 10 inputs ([64,20,20,2] and [10,20,20,1], the unit box and the ball, seed
0). Writes the table (bracket, ratio, status, seconds of both) with the machine and date.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from activation_bab import pair_table, paired_solves  # noqa: E402  (the same table)

MODELS = ROOT / "benchmarks" / "models"
DIGITS = [f"{net}-{r}-{i}" for net in ("mlp", "cnn") for r in ("0.05", "0.1") for i in (0, 1)]
SPEED = ["speed-64x20x20x2-unit", "speed-64x20x20x2-ball", "speed-10x20x20x1-unit"]


def make(case: str) -> tuple[Any, Any, Any]:
    """``(network, domain, c)`` of a case name (module docstring)."""
    from margins import top_two_margin

    import lipopt

    kind, rest = case.split("-", 1)
    if kind == "speed":
        from speed import make_case

        widths, domain = rest.rsplit("-", 1)
        return make_case(widths.replace("x", ","), domain, 0)
    radius, image = rest.split("-")
    net = lipopt.load_onnx(MODELS / f"scale-{kind}.onnx")
    x = np.load(MODELS / "scale-test.npz")["images"][int(image)].reshape(-1)
    return net, lipopt.LinfBall(x, float(radius)), top_two_margin(net, x)


def _job(args: tuple[str, float, bool], queue: Any) -> None:
    """One solve, the branch and bound racing always or never, in this (fresh) process."""
    import lipopt
    import lipopt.policy

    case, limit, bab = args
    lipopt.policy.BAB_RACE_MIN_INPUTS = 1 if bab else 10**9
    lipopt.policy.BAB_RACE_UNSTABLE_SHARE = 0.0
    net, domain, c = make(case)
    start = time.perf_counter()
    res = lipopt.lipschitz(net, domain, "linf", c=c, time_limit=limit)
    queue.put((res.lower, res.upper, str(res.status), time.perf_counter() - start))


def table(rows: list[tuple[str, tuple, tuple]], limit: float, argv: str) -> str:
    about = (
        f"Time limit {limit:g} s per solve; ℓ∞ input norm; lipopt's defaults. *forward* = the "
        "backward MIP races the forward MIP; *BaB* = it races the activation branch and bound "
        "(`BAB_RACE_MIN_INPUTS = 1`, `BAB_RACE_UNSTABLE_SHARE = 0`). Each: "
        "bracket [lower, upper], upper/lower, status, wall seconds; fresh process each."
    )
    return pair_table(
        "The race's second racer: the forward MIP or the activation branch and bound",
        ("python benchmarks/bab_race.py " + argv).strip(), about, ("forward", "BaB"), rows,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--cases", default=",".join(DIGITS + SPEED), help="comma list")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bab_race.md")
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    rows = paired_solves(_job, cases, args.time_limit, (False, True), ("forward", "BaB"))
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    args.out.write_text(table(rows, args.time_limit, shown))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
