"""ECLipsE, ECLipsE-Fast and ECLipsE-Gen-Local (the eclipse-nn package, issue 47) beside LipSDP,
SHOR and HR-2 in ℓ2, against lipopt's exact ℓ2 constant on ℓ2 balls.

    PYTHONPATH=. nice python benchmarks/eclipse.py --write      # -> results/eclipse.md, ~15 min
    PYTHONPATH=. python benchmarks/eclipse.py --quick           # two networks, seconds

Networks:

- ``semialgebraic.py``'s (d, d, 1) networks (its ``network``: PyTorch's default initialisation,
  dense, seeds 0..N-1) on the ℓ2 ball of radius ε around its box's centre x̄ (the ball inscribed
  in the seed's box x̄ ± ε), ε = 0.1 and 10, d = 10 and 20;
- ``l2.py``'s ℓ2 balls (its cases 4-6: ``speed.py``'s networks [16,16,16,2], [10,20,20,1],
  [10,20,30,20,2], the ℓ2 ball of radius 0.1 sqrt(d) around its ℓ∞ ball's centre; c = e_1 - e_2
  for two outputs), seeds 0 and 1.

Per network, in ℓ2: the exact value (``lipopt.lipschitz(net, ball, "l2", c=c,
time_limit=T)``, the shipped default; stopped, its bracket [attained, certified]); then each
method through ``lipopt.compare.compare`` (one method per call, each in its own child process,
``time_limit`` = T; ``--sdp-limit`` for SHOR and HR-2): ``eclipse-fast``, ``eclipse``,
``eclipse-local`` (algo ``Fast``, the package's default, and ``Acc``), ``lipsdp``
(LipSDP-Neuron, global), and ``shor`` and ``hr2``, which take boxes only, on the ball's
bounding box x̄ ± r (which contains the ball, so their bounds hold on it). ``GL as
shipped`` is the package's own ``get_lip_estimates(..., algo="Fast")``, uncertified, for the
record (0.1.7 always ends in CF there; ``lipopt.estimators.eclipse``). Each cell is the relative
gap ``value / exact - 1`` and the method's own seconds; against a bracket, the range of gaps.
A summary table gives per group the median gap of each method.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from benchmarks.l2 import _case as l2_case  # noqa: E402
from benchmarks.machine import run_stamp  # noqa: E402
from benchmarks.semialgebraic import network as semialgebraic_network  # noqa: E402
from benchmarks.speed import _commit  # noqa: E402

METHODS = ("eclipse-fast", "eclipse", "eclipse-local", "local-acc", "package", "lipsdp", "shor",
           "hr2")  # fmt: skip
LABELS = {"eclipse-fast": "ECLipsE-Fast", "eclipse": "ECLipsE", "eclipse-local": "Gen-Local Fast",
          "local-acc": "Gen-Local Acc", "package": "GL as shipped", "lipsdp": "LipSDP",
          "shor": "SHOR (box)", "hr2": "HR-2 (box)"}  # fmt: skip
ON_BOX = ("shor", "hr2")


def cases(quick: bool) -> list[tuple[str, str, Any, Any, Any]]:
    """(group, name, network, ℓ2 ball, c) for every network of the run."""
    import lipopt

    out = []
    sizes, seeds = ((10,), range(1)) if quick else ((10, 20), range(5))
    for d in sizes:
        for eps in (0.1, 10.0):
            for seed in seeds:
                net, centre = semialgebraic_network(d, d, seed)
                group = f"({d},{d},1) ε={eps:g}"
                out.append((group, f"{group} seed {seed}", net, lipopt.L2Ball(centre, eps), None))
    l2_cases = ("10,20,20,1",) if quick else ("16,16,16,2", "10,20,20,1", "10,20,30,20,2")
    for widths in l2_cases:
        for seed in range(1 if quick else 2):
            net, ball, c = l2_case(widths, "l2ball", seed)
            group = f"[{widths}] l2ball"
            out.append((group, f"{group} seed {seed}", net, ball, c))
    return out


def exact(net: Any, ball: Any, c: Any, limit: float) -> dict[str, Any]:
    import lipopt

    start = time.perf_counter()
    res = lipopt.lipschitz(net, ball, "l2", c=c, time_limit=limit)
    return {"status": str(res.status), "lower": float(res.lower), "upper": float(res.upper),
            "seconds": time.perf_counter() - start}  # fmt: skip


def package_as_shipped(net: Any, ball: Any, c: Any) -> tuple[float, float]:
    """The package's Gen-Local (algo Fast) on the scalar network, and its seconds."""
    from eclipse_nn import get_lip_estimates

    from lipopt.heuristics.target import problem

    weights = problem(net, ball, "l2", c).scalar_weights()
    cvec = problem(net, ball, "l2", c).c
    biases = [a.bias for a in net.affine_layers[:-1]] + [
        np.atleast_1d(cvec @ net.affine_layers[-1].bias)
    ]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        value, _t, code = get_lip_estimates(
            weights, ball.center, ball.radius, "relu", biases, "Fast"
        )
    return (float(value) if code == 0 else math.nan), time.perf_counter() - start


def method(name: str, net: Any, ball: Any, c: Any, limit: float) -> tuple[float, float, str]:
    """(value, seconds, note) of one method; NaN value where it did not answer."""
    import lipopt
    from lipopt.compare import Stopped, Unavailable, compare

    if name == "package":
        value, seconds = package_as_shipped(net, ball, c)
        return value, seconds, ""
    domain, options = ball, {}
    if name in ON_BOX:
        domain = lipopt.Box(ball.center - ball.radius, ball.center + ball.radius)
    if name == "local-acc":
        name, options = "eclipse-local", {"eclipse-local": {"algo": "Acc"}}
    result = compare(net, domain, "l2", c, name, options=options, time_limit=limit)[0]
    if isinstance(result, Stopped):
        return math.nan, result.seconds or limit, f"{name}: {result.reason}"
    if isinstance(result, Unavailable):
        return math.nan, math.nan, f"{name}: not run: {result.reason}"
    return float(result.value), float(result.seconds), ""


def gap(value: float, truth: dict[str, Any]) -> str:
    if math.isnan(value):
        return "–"
    if truth["status"] == "optimal":
        return f"{100 * (value / truth['upper'] - 1):+.1f} %"
    low, high = value / truth["upper"] - 1, value / truth["lower"] - 1
    return f"{100 * low:+.1f} … {100 * high:+.1f} %"


def measure(case: tuple[str, str, Any, Any, Any], limits: tuple[float, float]) -> dict[str, Any]:
    _group, name, net, ball, c = case
    row: dict[str, Any] = {"name": name, "exact": exact(net, ball, c, limits[0]), "notes": []}
    for key in METHODS:
        value, seconds, note = method(key, net, ball, c, limits[key in ON_BOX])
        row[key] = (value, seconds)
        if note:
            row["notes"].append(f"{name}, {note}")
    truth = row["exact"]
    for key in (m for m in METHODS if m != "package"):
        if row[key][0] < truth["lower"] * (1 - 1e-9):  # an upper bound below an attained value
            row["notes"].append(
                f"{key}: {row[key][0]:.6g} below the attained {truth['lower']:.6g} ✗"
            )
    return row


def _exact_cell(truth: dict[str, Any]) -> str:
    if truth["status"] == "optimal":
        return f"{truth['upper']:.4g} ({truth['seconds']:.1f} s)"
    return (
        f"[{truth['lower']:.4g}, {truth['upper']:.4g}] {truth['status']} ({truth['seconds']:.0f} s)"
    )


def table(rows: list[dict[str, Any]], groups: dict[str, str]) -> list[str]:
    head = "| network | exact ℓ2 (s) | " + " | ".join(LABELS[m] for m in METHODS) + " |"
    out = [head, "|" + "---|" * (len(METHODS) + 2)]
    for row in rows:
        cells = [f"{gap(row[m][0], row['exact'])} ({row[m][1]:.2f} s)" if not math.isnan(row[m][0])
                 else "–" for m in METHODS]  # fmt: skip
        out.append(f"| {row['name']} | {_exact_cell(row['exact'])} | " + " | ".join(cells) + " |")
    out += ["", "Median gap per group (networks whose exact value was reached):", ""]
    out += ["| group | n | " + " | ".join(LABELS[m] for m in METHODS) + " |",
            "|" + "---|" * (len(METHODS) + 2)]  # fmt: skip
    for group in dict.fromkeys(groups.values()):
        done = [r for r in rows if groups[r["name"]] == group and r["exact"]["status"] == "optimal"]
        if not done:
            continue
        meds = []
        for m in METHODS:
            gaps = [r[m][0] / r["exact"]["upper"] - 1 for r in done if not math.isnan(r[m][0])]
            meds.append(f"{100 * statistics.median(gaps):+.1f} %" if gaps else "–")
        out.append(f"| {group} | {len(done)} | " + " | ".join(meds) + " |")
    return out


def report(
    rows: list[dict[str, Any]],
    groups: dict[str, str],
    command: str,
    minutes: float,
    limits: tuple[float, float],
) -> str:
    from importlib.metadata import version

    title = "# ECLipsE, ECLipsE-Fast and ECLipsE-Gen-Local against the exact ℓ2 constant"
    versions = ", ".join(f"{p} {version(p)}" for p in ("eclipse-nn", "cvxpy", "scs"))
    lines = [
        f"{title} (issue 47)",
        "",
        f"`{command}` on {run_stamp()}; code at commit {_commit()}; {versions}; "
        f"{minutes:.1f} min in all, under `nice`.",
        "",
        f'Exact: `lipschitz(net, ball, "l2", c=c, time_limit={limits[0]:g})` (the shipped '
        "default). Each estimator through `compare` in ℓ2, in its own child process (SHOR "
        f"and HR-2 stopped at {limits[1]:g} s, the others at {limits[0]:g} s), with its own "
        "seconds. Each cell: `value / exact - 1` (a range against a stopped solve's bracket). "
        "ECLipsE, ECLipsE-Fast and LipSDP are global bounds (so also above the local "
        "constant); Gen-Local is on the ball; SHOR and HR-2 on the ball's bounding box. "
        "lipopt's values are all proven (numpy certificates); `GL as shipped` is the "
        "package's own Gen-Local (algo Fast) number.",
        "",
    ]
    lines += table(rows, groups)
    notes = [n for r in rows for n in r["notes"]]
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two networks")
    parser.add_argument("--write", action="store_true", help="write results/eclipse.md")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds, exact solve")
    parser.add_argument("--sdp-limit", type=float, default=30.0, help="seconds, SHOR and HR-2")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows, groups = [], {}
    for case in cases(args.quick):
        groups[case[1]] = case[0]
        rows.append(measure(case, (args.time_limit, args.sdp_limit)))
        print(case[1], {k: v for k, v in rows[-1].items() if k != "notes"}, flush=True)
    command = "PYTHONPATH=. nice python benchmarks/eclipse.py " + " ".join(argv)
    minutes = (time.perf_counter() - start) / 60
    text = report(rows, groups, command.strip(), minutes, (args.time_limit, args.sdp_limit))
    print(text)
    if args.write:
        out = RESULTS / ("eclipse_quick.md" if args.quick else "eclipse.md")
        out.write_text(text)
        print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
