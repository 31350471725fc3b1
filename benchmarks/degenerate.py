"""The long run of issue 31's fuzz: thousands of small networks that are not in general
position (tests/degenerate.py), each answered by lipopt with its defaults and judged by the
independent oracle (tests/oracle.py, full-dimensional regions only).

    python benchmarks/degenerate.py --networks 5000 --write     # benchmarks/results/degenerate.md
    python benchmarks/degenerate.py --networks 300 --lipopt /path/to/other/checkout

``--lipopt`` measures another checkout's lipopt on the same networks (the before/after of a
change); the oracle and the networks always come from this one. Every answer is one of:
``exact`` (status optimal and equal to the oracle to 1e-6 relative), ``bracket`` (another
status, with lower <= truth <= upper), or wrong (an optimal answer off the truth, or a bracket
that misses it), or a crash. The run counts them overall and per feature.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "degenerate.md"


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", type=int, default=2000, help="how many (seeds 0..N-1)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per network")
    parser.add_argument("--lipopt", type=Path, default=None, help="another checkout's lipopt")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--append", action="store_true", help="add to it instead")
    parser.add_argument("--label", default="this checkout", help="what was measured")
    return parser.parse_args(argv)


def _load(other: Path | None):
    """(lipopt, the case generator, the oracle), lipopt from ``other`` when given."""
    sys.path.insert(0, str(ROOT))
    from tests.degenerate import degenerate_case, verdict
    from tests.oracle import brute_force_lipschitz

    if other is not None:
        sys.path.insert(0, str(other.resolve()))
    import lipopt

    return lipopt, degenerate_case, verdict, brute_force_lipschitz


def _answer(lipopt, case, time_limit: float):
    """lipopt's answer to ``case`` with its defaults (under ``time_limit``); the network and
    domain are built from ``lipopt`` itself (this checkout's or the other's, which may lack
    ``Network.from_affines``), not from tests/helpers."""
    layers = []
    for w, b in case.weights:
        layers += [lipopt.Affine(w, b), lipopt.ReLU()]
    net = lipopt.Network.from_layers(layers[:-1])
    kind, p, q = case.domain
    domain = {"box": lipopt.Box, "linf": lipopt.LinfBall, "l1": lipopt.L1Ball}[kind](p, q)
    return lipopt.lipschitz(net, domain, case.norm, case.c, output_norm=case.output_norm,
                            time_limit=time_limit)


def run(args: argparse.Namespace) -> dict:
    """Answer and judge every network; the counts, the wrong cases and the times."""
    lipopt, degenerate_case, verdict, oracle = _load(args.lipopt)
    counts: collections.Counter = collections.Counter()
    by_feature: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    wrong: list[str] = []  # every answer that is not exact
    seconds = 0.0
    for seed in range(args.start, args.start + args.networks):
        case = degenerate_case(seed)
        truth = oracle(case.weights, case.domain, case.c, case.norm, case.output_norm or "abs")
        start = time.perf_counter()
        try:
            res = _answer(lipopt, case, args.time_limit)
            outcome = verdict(truth.value, res.status, res.upper, res.lower)
            if outcome == "bracket":
                outcome = f"bracket ({res.status})"
        except Exception as exc:  # noqa: BLE001 - a crash is one of the counted outcomes
            outcome, res = "crash", None
            wrong.append(f"{case.describe()}: {type(exc).__name__}: {exc}")
        seconds += time.perf_counter() - start
        counts[outcome] += 1
        for feature in case.features:
            by_feature[feature][outcome] += 1
        if outcome.startswith(("wrong", "bracket")):
            wrong.append(f"{case.describe()}: truth {truth.value:.8g}, {res.status} "
                         f"value {res.upper:.8g}, lower {res.lower}")
        if (seed - args.start + 1) % 250 == 0:
            print(f"{seed - args.start + 1} networks: {dict(counts)}", file=sys.stderr)
    return {"counts": counts, "by_feature": by_feature, "wrong": wrong, "seconds": seconds}


def report(args: argparse.Namespace, found: dict) -> str:
    """The results as Markdown."""
    counts, total = found["counts"], args.networks
    outcomes = sorted(counts, key=lambda o: (not o.startswith("exact"), o))
    other = f" --lipopt {args.lipopt}" if args.lipopt else ""
    lines = [
        f"## {args.label}",
        "",
        f"`python benchmarks/degenerate.py --networks {total} --start {args.start} "
        f"--time-limit {args.time_limit:g}{other}`, {dt.date.today().isoformat()}, "
        f"{platform.machine()} {platform.system()}, Python {platform.python_version()}.",
        f"lipopt's time in all: {found['seconds']:.1f} s "
        f"({found['seconds'] / total:.3f} s per network).",
        "",
        "| outcome | networks | share |",
        "|---|---|---|",
        *[f"| {o} | {counts[o]} | {counts[o] / total:.2%} |" for o in outcomes],
        "",
        "| feature | networks | " + " | ".join(outcomes) + " |",
        "|---|---|" + "---|" * len(outcomes),
    ]
    for feature, per in sorted(found["by_feature"].items()):
        cells = " | ".join(str(per[o]) for o in outcomes)
        lines.append(f"| {feature} | {sum(per.values())} | {cells} |")
    lines += ["", "Answers other than exact:" if found["wrong"] else "Every answer was exact."]
    lines += [f"- {line}" for line in found["wrong"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    text = report(args, run(args))
    print(text)
    if args.write:
        title = "# Networks not in general position: exact answers (issue 31)\n\n"
        before = RESULTS.read_text() + "\n" if args.append and RESULTS.exists() else title
        RESULTS.write_text(before + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
