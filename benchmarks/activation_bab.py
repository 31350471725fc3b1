"""Branch and bound on activations alone against ``lipopt.lipschitz``'s default plan.

    python benchmarks/activation_bab.py                 # every case, 15 s each
    python benchmarks/activation_bab.py --time-limit 30 --cases small --out /tmp/a.md

Each case is solved twice, one after the other (never side by side): by ``lipopt.lipschitz``
with its default plan and ``time_limit=T``, then by
:func:`lipopt.search.activation_bab.activation_bab` alone with the deadline ``T`` seconds after
its start. Reported: the bracket (lower, upper), upper / lower, the status and the wall seconds.

Cases: random networks in the speed suite's recipe (``benchmarks/speed.py``'s ``make_case``:
He-normal weights, N(0, 0.5²) biases, the unit box, ℓ∞ input norm, ``c = [1, -1]`` on two outputs),
and the bundled digits networks (``models/digits-resmlp.onnx``, ``models/digits-cnn.onnx``) over
the ℓ∞ ball of radius 0.05 around test image 0 with ``c`` the difference of its two top logits
(as ``benchmarks/cnn.py``). Writes a markdown table (default
``benchmarks/results/activation_bab.md``) with the machine and date.
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

#: (name, widths, seed) of the speed-suite networks on the unit box
RANDOM = [
    ("random", "3,10,10,1", 0),
    ("random", "5,12,12,1", 0),
    ("random", "10,20,20,1", 0),
    ("random", "10,20,20,1", 1),
    ("random", "16,16,16,2", 0),
    ("random", "16,16,16,2", 1),
]
DIGITS = [("digits-resmlp", "", 0), ("digits-cnn", "", 0)]


def make(case: tuple[str, str, int]) -> tuple[Any, Any, Any, str]:
    """The network, domain, c and a label of one case."""
    from margins import top_two_margin
    from speed import make_case

    import lipopt

    name, widths, seed = case
    if name == "random":
        net, box, c = make_case(widths, "unit", seed)
        return (
            net,
            box,
            np.array(c if c is not None else [1.0]),
            f"[{widths}] unit box, seed {seed}",
        )
    net = lipopt.load_onnx(ROOT / "models" / f"{name}.onnx")
    x = np.load(ROOT / "models" / "digits-test.npz")["images"][seed].reshape(-1)
    return net, lipopt.LinfBall(x, 0.05), top_two_margin(net, x), f"{name}, image {seed}, ℓ∞ 0.05"


def run_case(case: tuple[str, str, int], limit: float, plan_too: bool = True) -> dict[str, Any]:
    """Both solves of one case, one after the other (``plan_too`` False: BaB only)."""
    import lipopt
    from lipopt.bounds.linear import linear_bounds

    net, domain, c, label = make(case)
    unstable = linear_bounds(net, domain, c).unstable_count
    plan: tuple[Any, ...] = (None, float("nan"), "–", 0.0)
    if plan_too:
        start = time.perf_counter()
        res = lipopt.lipschitz(net, domain, "linf", c=c, time_limit=limit)
        plan = (res.lower, res.value, str(res.status), time.perf_counter() - start)
    start = time.perf_counter()
    out = lipopt.lipschitz(net, domain, "linf", c=c, time_limit=limit, bab=True)
    bab = (out.lower, out.value, str(out.status), time.perf_counter() - start)
    nodes = out.model_stats.get("bab_nodes", 0)
    return {"label": label, "unstable": unstable, "plan": plan, "bab": bab, "nodes": nodes}


def cell(lower: float | None, upper: float, status: str, seconds: float) -> str:
    """One solve's four table cells: bracket, upper/lower, status, wall seconds."""
    ratio = "–" if not lower else f"{upper / lower:.4f}"
    low = "–" if lower is None else f"{lower:.6g}"
    return f"[{low}, {upper:.6g}] | {ratio} | {status} | {seconds:.1f}"


def pair_table(
    title: str,
    command: str,
    about: str,
    names: tuple[str, str],
    rows: list[tuple[str, tuple, tuple]],
    extra: tuple[str, dict[str, object]] | None = None,
) -> str:
    """The table of two solves per case (``benchmarks/bab_race.py``, ``bab_after.py``,
    ``bab_branching.py``): ``rows`` of (label, first, second), each solve as :func:`cell`'s
    arguments; ``extra``: a column's heading and its value per label, after the case."""
    from machine import run_stamp

    heads = " ".join(
        f"| {name} bracket | {name} ratio | {name} status | {name} s" for name in names
    )
    extra_head = "" if extra is None else f" | {extra[0]}"
    lines = [
        f"# {title}",
        "",
        f"Measured {run_stamp()}. Command: `{command}`.",
        "",
        about,
        "",
        f"| case{extra_head} {heads} |",
        "|---" * (9 + (extra is not None)) + "|",
    ]
    for label, first, second in rows:
        value = "" if extra is None else f" | {extra[1][label]}"
        lines.append(f"| {label}{value} | {cell(*first)} | {cell(*second)} |")
    return "\n".join(lines) + "\n"


def paired_solves(
    job: Any, cases: list[str], limit: float, settings: tuple[Any, Any], names: tuple[str, str]
) -> list[tuple[str, tuple, tuple]]:
    """Each case solved by ``job((case, limit, setting), queue)`` once per setting, each in a
    fresh process, one after the other; the rows of :func:`pair_table`."""
    from machine import in_fresh_process

    rows = []
    for case in cases:
        first, second = (in_fresh_process(job, (case, limit, s)) for s in settings)
        print(f"{case}: {names[0]} {cell(*first)}; {names[1]} {cell(*second)}", flush=True)
        rows.append((case, first, second))
    return rows


def table(rows: list[dict[str, Any]], limit: float, argv: str) -> str:
    from machine import run_stamp

    lines = [
        "# Activation branch and bound against the default plan",
        "",
        f"Measured {run_stamp()}. Command: "
        f"`{('python benchmarks/activation_bab.py ' + argv).strip()}`.",
        "",
        f"Time limit {limit:g} s per solve; ℓ∞ input norm. *plan* = `lipopt.lipschitz` "
        "(default plan); *BaB* = `lipopt.lipschitz(..., bab=True)` (the attack and pattern "
        "climb as its start, Jacobian-norm bound per node, margin LP on stable prefixes and "
        f"leaves, the MIP on parts of at most {_mip_at()} unstable neurons). Each: bracket "
        "[lower, upper], upper/lower, status, wall seconds; `unstable` = unstable neurons "
        "under `linear_bounds` at the root.",
        "",
        "| case | unstable | plan bracket | plan ratio | plan status | plan s "
        "| BaB bracket | BaB ratio | BaB status | BaB s | BaB nodes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['unstable']} | {cell(*r['plan'])} | {cell(*r['bab'])} "
            f"| {r['nodes']} |"
        )
    return "\n".join(lines) + "\n"


def _mip_at() -> int:
    import lipopt.policy

    return lipopt.policy.BAB_MIP_AT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=15.0)
    parser.add_argument("--cases", choices=("all", "small", "digits"), default="all")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/activation_bab.md")
    parser.add_argument("--mip-at", type=int, default=None, help="BAB_MIP_AT for this run")
    parser.add_argument("--bab-only", action="store_true", help="skip the default plan")
    args = parser.parse_args(argv)
    if args.mip_at is not None:
        import lipopt.policy

        lipopt.policy.BAB_MIP_AT = args.mip_at
    cases = {"all": RANDOM + DIGITS, "small": RANDOM, "digits": DIGITS}[args.cases]
    rows = []
    for case in cases:
        row = run_case(case, args.time_limit, not args.bab_only)
        print(row, flush=True)
        rows.append(row)
    args.out.write_text(
        table(rows, args.time_limit, " ".join(sys.argv[1:] if argv is None else argv))
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
