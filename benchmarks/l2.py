"""The exact ℓ2 input norm against ℓ∞, on the speed benchmark's networks, with the estimators'
true errors in ℓ2.

    PYTHONPATH=. python benchmarks/l2.py                        # 4 cases, seed 0, 120 s limit
    PYTHONPATH=. python benchmarks/l2.py --cases 0,1 --seeds 0,1 --time-limit 60
    PYTHONPATH=. python benchmarks/l2.py --no-regions           # the MIPs, not the region search
    PYTHONPATH=. python benchmarks/l2.py --quick                # case 0, seed 0, 30 s limit
    PYTHONPATH=. python benchmarks/l2.py --cases 4,5,6 --no-regions --time-limit 60 \
        --seeds 0,1 --out benchmarks/results/l2_ball.md         # the ℓ2 balls

Networks are ``benchmarks/speed.py``'s (its ``make_case``, imported: He-normal weights, N(0, 0.5²)
biases, seeds 1000 + seed; ``unit`` = [0, 1]^d, ``ball`` = ℓ∞ ball of radius 0.1 around a uniform
random centre; ``l2ball`` = the ℓ2 ball of radius ``0.1 sqrt(d)`` around the same centre, which
contains that ℓ∞ ball, so its constants are never smaller) with its c: ``e_1 - e_2`` for two
outputs, lipopt's default ``[1]`` for one. The cases (:data:`CASES`, chosen by index with
``--cases``) are the speed benchmark's that finish in ℓ∞. Per case and seed, each in a fresh
process (so peak memory is the solve's own, and no solve warms another's caches):

- ℓ∞: ``lipopt.lipschitz(net, domain, "linf", c=c, time_limit=T)``, the shipped default;
- ℓ2 SCIP: the same with ``"l2"``, the shipped default, whose plan solves the MIP with SCIP on
  the quadratic objective ``t <= ||g||_2^2`` (spatial branching);
- ℓ2 HiGHS: the same with ``"l2", solver="highs"``, whose MIP over-estimates ``||g||_2^2`` by
  chords refined at each solution (the outer approximation's rounds);
- the estimators: ``lipopt.compare.compare(net, domain, "l2", c=c, methods=...)`` with
  :data:`ESTIMATORS` at their default options, one process for all of them.

The default plan tries the linear-region search first on a box or ℓ∞ ball, and on small cases
that search answers before any MIP runs: the status cells say what answered (``regions``,
``scip``, ``highs``). ``--no-regions`` passes ``regions=False`` to all three solves, so that
the ℓ2 columns measure the two MIPs themselves.

Seconds are wall-clock around the ``lipschitz`` call in the solving process (imports and the
network's construction excluded; the solvers' modules are loaded before the clock starts, as in
speed.py); an estimator's seconds are its own ``Estimate.seconds``.

The markdown table (default ``benchmarks/results/l2.md``; ``--quick``: ``l2_quick.md``) starts
with the command, the machine (CPU, logical CPUs, OS, Python), the date and the commit. Its
first table has one row per case and seed:

- network, d, domain, seed: the widths (d inputs first), the domain, the seed;
- ℓ∞ s / ℓ∞: seconds, then status (what answered) and value;
- ℓ2 SCIP s / ℓ2 SCIP: seconds, status (what answered) and value (the certified upper bound,
  with the attained lower bound where it stopped);
- ℓ2 HiGHS s / ℓ2 HiGHS: seconds, status (what answered) and ``[lower, upper]``;
- SCIP/ℓ∞: ℓ2 SCIP seconds over ℓ∞ seconds (the price of the exact ℓ2 norm).

The second table gives each estimator's relative error ``value / exact - 1`` in percent (and
its seconds) against the exact ℓ2 value, taken from ℓ2 SCIP if optimal, else from ℓ2 HiGHS if
optimal. Where neither finished, the error is given against the bracket of both solves (the
highest attained lower bound, the lowest certified upper bound) as ``a … b % (bracket)``: the
true error lies between. ``✗`` marks a bound that contradicts its guarantee (an upper bound
below the attained value, a lower bound above the certified one). Notes list each solve's
message and the estimators that did not run. The rows are also written as JSON lines beside
the table (``l2.jsonl``), with every value, bound, message and peak memory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import multiprocessing as mp
import resource
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from benchmarks.machine import run_stamp  # noqa: E402
from benchmarks.speed import _commit, make_case  # noqa: E402

#: (widths, domain): the speed benchmark's cases that finish in ℓ∞ (benchmarks/results/speed.md)
CASES: list[tuple[str, str]] = [
    ("16,16,16,2", "ball"),
    ("10,20,20,1", "ball"),
    ("10,20,30,20,2", "ball"),
    ("16,16,16,2", "unit"),
    # the ℓ2 balls that circumscribe the ℓ∞ balls above (radius 0.1 sqrt(d), same centres)
    ("16,16,16,2", "l2ball"),
    ("10,20,20,1", "l2ball"),
    ("10,20,30,20,2", "l2ball"),
]
#: column key -> (input norm, lipschitz options beyond the default)
SOLVES: dict[str, tuple[str, dict[str, Any]]] = {
    "linf": ("linf", {}),
    "l2": ("l2", {}),  # solver="auto": SCIP's quadratic model where installed
    "l2_highs": ("l2", {"solver": "highs"}),  # the chords' outer approximation
}
LABELS = {"linf": "ℓ∞", "l2": "ℓ2 SCIP", "l2_highs": "ℓ2 HiGHS"}
#: the estimators compared in ℓ2, in compare's order (names of lipopt.estimators.ESTIMATORS)
ESTIMATORS = ("naive", "random", "attack", "fastlip", "clever", "seqlip", "lipsdp")


@dataclass
class Solve:
    """One ``lipschitz`` call: its answer, what answered it, and its cost."""

    norm: str
    options: str
    status: str
    value: float
    lower: float | None
    upper: float
    solver: str
    message: str
    seconds: float
    peak_mb: float


@dataclass
class Bound:
    """One estimator's answer (value None: it did not run, see ``reason``)."""

    name: str
    kind: str
    value: float | None
    seconds: float | None
    reason: str = ""


@dataclass
class Case:
    """Everything measured on one network and domain."""

    widths: str
    domain: str
    seed: int
    time_limit: float
    regions: bool
    solves: dict[str, Solve] = field(default_factory=dict)
    bounds: list[Bound] = field(default_factory=list)
    commit: str = ""

    @property
    def d(self) -> int:
        return int(self.widths.split(",")[0])


def _preload() -> None:
    """What a solve loads, imported before the clock starts (as speed.py does)."""
    import highspy  # noqa: F401
    import pyomo.environ  # noqa: F401
    import pyscipopt  # noqa: F401
    import scipy.optimize  # noqa: F401
    import scipy.sparse  # noqa: F401


def _peak_mb() -> float:
    """The largest resident set of this process and its children (a race's processes), MB."""
    return (
        max(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        )
        / 1024
    )


def _case(widths: str, domain: str, seed: int) -> tuple[Any, Any, Any]:
    """speed.py's case; ``l2ball``: the ℓ2 ball around its ℓ∞ ball's centre that contains that
    ball (radius ``0.1 sqrt(d)``), so its constants are at least the ℓ∞ ball's."""
    import lipopt

    if domain != "l2ball":
        return make_case(widths, domain, seed)
    net, box, c = make_case(widths, "ball", seed)
    return net, lipopt.L2Ball(box.center, box.radius * math.sqrt(box.dim)), c


def _solve_job(args: tuple[str, str, int, str, float, bool], queue: Any) -> None:
    widths, domain, seed, key, time_limit, regions = args
    _preload()
    import lipopt

    net, region, c = _case(widths, domain, seed)
    norm, options = SOLVES[key]
    if not regions:
        options = {**options, "regions": False}
    start = time.perf_counter()
    res = lipopt.lipschitz(net, region, norm, c=c, time_limit=time_limit, **options)
    seconds = time.perf_counter() - start
    solve = Solve(
        norm,
        ", ".join(f"{k}={v!r}" for k, v in options.items()),
        res.status,
        float(res.value),
        None if res.lower is None else float(res.lower),
        float(res.upper),
        res.solver,
        res.message,
        seconds,
        _peak_mb(),
    )
    queue.put(asdict(solve))  # plain dicts: the classes live in __mp_main__ here


def _estimators_job(args: tuple[str, str, int], queue: Any) -> None:
    widths, domain, seed = args
    try:
        import cvxpy  # noqa: F401  (lipsdp's solver; its import is not the estimator's cost)
    except ImportError:
        pass
    from lipopt.compare import Unavailable, compare

    net, region, c = _case(widths, domain, seed)
    out = []
    for r in compare(net, region, "l2", c=c, methods=ESTIMATORS):
        if isinstance(r, Unavailable):
            out.append(asdict(Bound(r.name, r.kind.value, None, None, r.reason)))
        else:
            out.append(asdict(Bound(r.name, r.kind.value, float(r.value), float(r.seconds))))
    queue.put(out)


def run_fresh(target: Any, args: tuple, deadline: float) -> Any:
    """``target(args, queue)`` in a fresh spawned process; its answer, or a string saying why
    there is none (the process died, or outlived ``deadline`` seconds and was stopped)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(args, queue))
    proc.start()
    end = time.monotonic() + deadline
    try:
        while True:
            try:
                answer = queue.get(timeout=1.0)
            except Empty:
                if not proc.is_alive():
                    try:  # the answer may have arrived just as the process ended
                        return queue.get(timeout=1.0)
                    except Empty:
                        return f"crashed (exit code {proc.exitcode})"
                if time.monotonic() > end:
                    return f"stopped after {deadline:.0f} s"
                continue
            proc.join()
            return answer
    finally:
        if proc.is_alive():
            proc.terminate()
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join()


def measure(widths: str, domain: str, seed: int, time_limit: float, regions: bool) -> Case:
    """The three solves and the estimators on one network, each in its own process."""
    case = Case(widths, domain, seed, time_limit, regions, commit=_commit())
    deadline = 3 * time_limit + 120  # only a hung or runaway process gets this far
    for key in SOLVES:
        got = run_fresh(_solve_job, (widths, domain, seed, key, time_limit, regions), deadline)
        if isinstance(got, str):
            norm = SOLVES[key][0]
            nan = float("nan")
            got = asdict(Solve(norm, "", got, nan, None, nan, "", got, nan, nan))
        case.solves[key] = Solve(**got)
    got = run_fresh(_estimators_job, (widths, domain, seed), deadline)
    if isinstance(got, str):
        case.bounds = [Bound(name, "?", None, None, got) for name in ESTIMATORS]
    else:
        case.bounds = [Bound(**b) for b in got]
    return case


def reference(case: Case) -> tuple[float, float, str]:
    """The exact ℓ2 value as ``(v, v, label of the solve it came from)``, or the bracket
    ``(lower, upper, "")`` of both ℓ2 solves when neither finished (NaN where a side is
    missing)."""
    l2 = [case.solves[k] for k in ("l2", "l2_highs") if k in case.solves]
    for key in ("l2", "l2_highs"):
        s = case.solves.get(key)
        if s is not None and s.status == "optimal":
            return s.value, s.value, LABELS[key]
    lows = [s.lower for s in l2 if s.lower is not None and math.isfinite(s.lower)]
    highs = [s.upper for s in l2 if math.isfinite(s.upper)]
    return max(lows, default=math.nan), min(highs, default=math.nan), ""


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def error_cell(bound: Bound, low: float, high: float, exact: bool) -> str:
    """An estimator's relative error (and seconds) against the exact value or the bracket."""
    if bound.value is None:
        return "n/a"
    v = bound.value
    slack = 1e-6 * max(abs(high), 1.0) if math.isfinite(high) else 0.0
    wrong = (bound.kind == "upper" and math.isfinite(low) and v < low - slack) or (
        bound.kind == "lower" and math.isfinite(high) and v > high + slack
    )
    mark = " ✗" if wrong else ""
    secs = f" ({bound.seconds:.3f} s)"
    if exact and high > 0:
        return f"{_pct(v / high - 1)} %{mark}{secs}"
    if low > 0 and math.isfinite(high):
        return f"{_pct(v / high - 1)} … {_pct(v / low - 1)} % (bracket){mark}{secs}"
    return f"{v:.6g} (no reference){secs}"


def _by(solve: Solve) -> str:
    """What answered a solve, short: ``regions``, ``scip``, ``highs``, ..."""
    if solve.solver.startswith("region search"):
        return "regions"
    return solve.solver.split()[0] if solve.solver else "–"


def _status(solve: Solve) -> str:
    return f"{solve.status} ({_by(solve)})" if solve.solver else solve.status


def _secs(solve: Solve) -> str:
    return f"{solve.seconds:.2f}" if math.isfinite(solve.seconds) else "–"


def _num(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.6g}"


def solves_row(case: Case) -> str:
    """One row of the first table."""
    linf, l2, hi = case.solves["linf"], case.solves["l2"], case.solves["l2_highs"]
    scip_value = _num(l2.value)
    if l2.status != "optimal" and l2.lower is not None:
        scip_value = f"{_num(l2.upper)} (attained {_num(l2.lower)})"
    ratio = "–"
    if math.isfinite(l2.seconds) and math.isfinite(linf.seconds) and linf.seconds > 0:
        ratio = f"{l2.seconds / linf.seconds:.2f}"
    cells = [
        f"[{case.widths}]",
        str(case.d),
        case.domain,
        str(case.seed),
        _secs(linf),
        f"{_status(linf)}, {_num(linf.value)}",
        _secs(l2),
        f"{_status(l2)}, {scip_value}",
        _secs(hi),
        f"{_status(hi)}, [{_num(hi.lower)}, {_num(hi.upper)}]",
        ratio,
    ]
    return "| " + " | ".join(cells) + " |"


def errors_row(case: Case) -> str:
    """One row of the second table."""
    low, high, source = reference(case)
    if source:
        ref = f"{_num(high)} ({source})"
    else:
        ref = f"[{_num(low)}, {_num(high)}] (bracket)"
    by_name = {b.name: b for b in case.bounds}
    cells = [f"[{case.widths}]", case.domain, str(case.seed), ref]
    for name in ESTIMATORS:
        b = by_name.get(name)
        cells.append("–" if b is None else error_cell(b, low, high, bool(source)))
    return "| " + " | ".join(cells) + " |"


def notes(cases: list[Case]) -> list[str]:
    """Each solve's message, the estimators that did not run, and the two ℓ2 solves' agreement."""
    out = []
    for case in cases:
        name = f"[{case.widths}] {case.domain} seed {case.seed}"
        for key, s in case.solves.items():
            said = "; ".join(x for x in (s.solver, s.message) if x)
            if said:
                out.append(f"- {name}, {LABELS[key]}: {said}.")
        for b in case.bounds:
            if b.value is None:
                out.append(f"- {name}, {b.name} did not run: {b.reason}")
    both = [
        (c, abs(c.solves["l2"].value / c.solves["l2_highs"].value - 1))
        for c in cases
        if c.solves["l2"].status == c.solves["l2_highs"].status == "optimal"
    ]
    if both:
        worst = max(diff for _, diff in both)
        out.append(
            f"- Where both ℓ2 solves finished ({len(both)} of {len(cases)}), their values differ "
            f"by at most {worst:.1e} (relative)."
        )
    return out


def report(cases: list[Case], command: str, started: str) -> str:
    """The markdown page."""
    commits = ", ".join(sorted({c.commit for c in cases})) or "unknown"
    regions = (
        "regions=False on every solve, otherwise lipopt's defaults"
        if cases and not cases[0].regions
        else "lipopt's defaults"
    )
    limit = ", ".join(sorted({f"{c.time_limit:g}" for c in cases}))
    heads = [LABELS[k] for k in SOLVES]
    lines = [
        "# The exact ℓ2 input norm against ℓ∞ (speed.py's networks)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {run_stamp()}; started {started}; code at commit {commits}.  ",
        f"Time limit {limit} s per solve; {regions}; each solve in a fresh process. "
        'ℓ∞ = `lipschitz(net, dom, "linf", c=c)`, ℓ2 SCIP = `lipschitz(..., "l2")` (SCIP, '
        '`t <= ||g||_2^2`), ℓ2 HiGHS = `lipschitz(..., "l2", solver="highs")` (chords, '
        "outer approximation). Each status says in brackets what answered (regions = the "
        "linear-region search, scip or highs = the MIP). Times in seconds.",
        "",
        "## Exact solves",
        "",
        f"| network | d | domain | seed | {heads[0]} s | {heads[0]} | {heads[1]} s | {heads[1]} "
        f"| {heads[2]} s | {heads[2]} [lower, upper] | SCIP/ℓ∞ s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(solves_row(c) for c in cases),
        "",
        "## Estimators in ℓ2: relative error to the exact value",
        "",
        "`value / exact - 1` in percent (seconds); the exact value from ℓ2 SCIP, else ℓ2 HiGHS, "
        "where optimal; else against the bracket of both (the true error lies in the range). "
        "✗ = contradicts the method's guarantee.",
        "",
        "| network | domain | seed | exact ℓ2 | "
        + " | ".join(f"{name} ({_kind(cases, name)})" for name in ESTIMATORS)
        + " |",
        "|---|---|---|---|" + "---|" * len(ESTIMATORS),
        *(errors_row(c) for c in cases),
    ]
    more = notes(cases)
    if more:
        lines += ["", "## Notes", "", *more]
    return "\n".join(lines) + "\n"


def _kind(cases: list[Case], name: str) -> str:
    """An estimator's guarantee (upper, lower, heuristic), as compare reported it."""
    for case in cases:
        for b in case.bounds:
            if b.name == name and b.kind != "?":
                return b.kind
    return "?"


def save(cases: list[Case], out: Path, command: str, started: str) -> None:
    """The table and, beside it, the rows as JSON lines."""
    from lipopt.atomic import write_text_atomic

    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, report(cases, command, started))
    rows = "".join(json.dumps(asdict(c)) + "\n" for c in cases)
    write_text_atomic(out.with_suffix(".jsonl"), rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cases",
        help="comma list of indices into CASES: "
        + "; ".join(f"{i}: [{w}] {d}" for i, (w, d) in enumerate(CASES))
        + " (default 0,1,2,3; --quick: 0)",
    )
    parser.add_argument("--seeds", help='comma list of seeds (default "0")')
    parser.add_argument(
        "--time-limit", type=float, help="seconds per solve (default 120; --quick: 30)"
    )
    parser.add_argument("--quick", action="store_true", help="case 0, seed 0, 30 s limit")
    parser.add_argument(
        "--no-regions",
        dest="regions",
        action="store_false",
        help="regions=False on every solve: measure the MIPs, not the region search",
    )
    parser.add_argument(
        "--out", type=Path, help="markdown table (default results/l2.md; --quick: l2_quick.md)"
    )
    args = parser.parse_args(argv)
    shown = sys.argv[1:] if argv is None else argv
    command = " ".join(["PYTHONPATH=. python benchmarks/l2.py", *shown])
    chosen = args.cases or ("0" if args.quick else "0,1,2,3")
    cases = [CASES[int(i)] for i in chosen.split(",")]
    seeds = [int(s) for s in (args.seeds or "0").split(",")]
    limit = args.time_limit if args.time_limit is not None else (30.0 if args.quick else 120.0)
    out = args.out or RESULTS / ("l2_quick.md" if args.quick else "l2.md")
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    done: list[Case] = []
    for widths, domain in cases:
        for seed in seeds:
            case = measure(widths, domain, seed, limit, args.regions)
            done.append(case)
            s = case.solves
            print(
                f"[{widths}] {domain} seed {seed}: "
                + ", ".join(
                    f"{LABELS[k]} {_status(s[k])} {_num(s[k].value)} in {_secs(s[k])} s"
                    for k in SOLVES
                ),
                flush=True,
            )
            print("  " + errors_row(case), flush=True)
            save(done, out, command, started)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
