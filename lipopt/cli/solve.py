"""``lipopt solve``: its options, run function and human summary."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from lipopt.cli.common import (
    _add_problem_arguments,
    _add_switch,
    _progress,
    domain_from_args,
    limit_left,
)
from lipopt.cli.exits import exit_status
from lipopt.cli.solvers import solver_help
from lipopt.domain import Domain, load_vector
from lipopt.io.onnx import load_onnx
from lipopt.lipschitz import LipschitzResult, check_arguments, lipschitz
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.progress import counted
from lipopt.schema import TIMING_KEYS
from lipopt.solvers import registry
from lipopt.status import Status

SOLVE_EPILOG = """\
examples:
  lipopt solve models/synthetic-2x20x40x20x2.onnx --box 0,1 --c 1,-1   # f_1 - f_2, exact
  lipopt solve net.onnx --center 0.1,0.5,0.3 --radius 0.05 --norm l1 --json
  lipopt solve net.onnx --center x.npy --radius 0.1 --time-limit 60
  lipopt solve net.onnx --center x.npy --radius 0.5 --ball l2 --norm l2   # Euclidean
  lipopt solve net.onnx --box 0,1 --output-norm cross      # the whole output vector
  lipopt solve net.onnx --box 0,1 --c 1,-1 --norm l2        # max ||grad||_2, exact

domain: exactly one of --box or --center/--radius (--ball l1|l2 for an l1 or l2 ball).
Negative numbers work as typed (--box -1,1). Vectors are comma lists or .npy/.json/.txt files.

output: 'value' is a certified upper bound on the local Lipschitz constant, the exact constant
when the status is 'optimal'; 'lower' is attained at the witness input. Exit status: 0
answered; 2 bad input or an unusable solver; 3 answered with the bounds proven before the
solver failed; 130 interrupted; 143 terminated (docs/cli.md#statuses-and-exit-status).

speed levers (--bounds, --split, --regions, --formulation, --attack, --workers, ...): each
is listed by 'lipopt solve --help-all' and measured in docs/performance.md.
"""

#: the stages of a solve in the order they run; a result's ``timings`` holds those it went through
STAGES = tuple(TIMING_KEYS)


def add_parser(sub: argparse._SubParsersAction, show_all: bool = False) -> None:
    """The ``solve`` subcommand and its options; its ``--help`` lists the speed levers only
    with ``show_all`` (``--help-all``), though every one of them is always accepted."""
    parser = sub.add_parser(
        "solve",
        help="compute the local Lipschitz constant of an ONNX network over a domain",
        description="Compute the exact local Lipschitz constant (or certified bounds on it) "
        "of c^T f, or of the whole output vector under an output norm, over a box or ball of "
        "inputs.",
        epilog=SOLVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        # argparse cannot lay out a usage line with hidden options in exclusive groups
        usage="lipopt solve MODEL (--box LO,HI | --center X --radius R) [options]",
    )
    parser.add_argument(
        "--help-all", action="help", help="show this help with every speed lever, and exit"
    )
    _add_solve_arguments(parser, show_all)


def _add_solve_arguments(parser: argparse.ArgumentParser, show_all: bool = True) -> None:
    """Every option of ``solve``, group by group, in the order ``--help`` lists them (the
    speed levers' help only with ``show_all``)."""
    _add_problem_arguments(parser, l2="")
    _add_solving_arguments(parser)
    perf = parser.add_argument_group("speed levers (each can be switched off)")
    _add_model_levers(perf)
    _add_search_levers(perf)
    if not show_all:  # still accepted, not listed one by one
        for action in perf._group_actions:
            action.help = argparse.SUPPRESS
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--verbose", action="store_true", help="show the solver's log")
    out.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _add_solving_arguments(parser: argparse.ArgumentParser) -> None:
    """The solver, the mode and the limits."""
    sol = parser.add_argument_group("solving")
    sol.add_argument(
        "--solver",
        default="auto",
        help=solver_help(),
    )
    sol.add_argument(
        "--mode",
        choices=["exact", "lp"],
        default="exact",
        help="exact MIP (default) or its LP relaxation (an upper bound)",
    )
    sol.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="stop after this long with certified bounds",
    )
    sol.add_argument(
        "--gap", type=float, metavar="REL", help="stop at this relative gap, e.g. 0.05"
    )
    sol.add_argument("--threads", type=int, help="solver threads")


def _add_model_levers(perf: Any) -> None:
    """Speed levers that shape the problem: bounds, splitting, decomposition, regions, and
    the formulation."""
    perf.add_argument(
        "--bounds",
        choices=["linear", "interval", "lp"],
        default="linear",
        help="bound propagation before modelling (default: linear)",
    )
    _add_switch(
        perf,
        "split",
        on="always split the domain (boxes and l-inf balls)",
        off="never split the domain (default: split boxes of <= 4 inputs)",
    )
    _add_switch(
        perf,
        "decompose",
        on="--norm l1: one small MIP per gradient entry and sign, best bound first, "
        "skipping those that cannot win (default: for inputs of >= 5 dimensions)",
        off="--norm l1: one MIP with a selection binary per entry and sign",
    )
    _add_switch(
        perf,
        "regions",
        on="answer by searching the linear regions alone (fixed c, boxes and l-inf balls)",
        off="skip the region search (default: unless the domain is split, try it for "
        "4000 nodes (fewer if it projects more than 100000), 60000 if under 90%% of neurons "
        "are unstable, then the MIP)",
    )
    perf.add_argument(
        "--formulation",
        choices=["auto", "backward", "forward"],
        default="auto",
        help="how the MIP differentiates the network: backward (the paper's chain rule) or "
        "forward (directional derivative, fixed c only); default auto: backward, and with "
        "--norm linf, if it has not finished in 5 s, both raced on two processes (at once "
        "when 90%% or more of the neurons are unstable)",
    )


def _add_search_levers(perf: Any) -> None:
    """Speed levers of the search itself: tangent bounds, attack, splits, products, the
    split leader and worker processes."""
    _add_switch(
        perf,
        "subnet-bounds",
        on="bound the forward model's tangents by sub-network constants (small MIPs or region "
        "searches), also on a split's parts",
        off="keep the propagated tangent bounds (default: for the forward model, a small MIP "
        "per neuron below the first hidden layer, at most 30 s and a tenth of the time limit)",
    )
    _add_switch(
        perf,
        "attack",
        on="start every MIP from the attained value of a gradient attack and a pattern climb "
        "(about 1 s): the solver must beat it, which prunes from the start (exact mode, "
        "fixed c)",
        off="no attack (default: only in the two racers of --formulation auto, or the "
        "--sign-split in their place, the leader's split after them, and before the halves of "
        "--gate-split)",
    )
    perf.add_argument(
        "--sign-split",
        action="store_true",
        help="split the backward model's search on the sign of one gradient entry (--norm "
        "linf): two halves solved side by side, instead of any race (off by default)",
    )
    perf.add_argument(
        "--gate-split",
        action="store_true",
        help="split the domain by the hyperplane of the first-layer neuron with the most "
        "balanced range (--norm linf, fixed c, with --formulation forward or backward): two "
        "halves solved side by side (off by default)",
    )
    _add_parallel_levers(perf)


def _add_parallel_levers(perf: Any) -> None:
    """Speed levers that are on by default: products, the split leader, worker processes."""
    perf.add_argument(
        "--no-products",
        dest="products",
        action="store_false",
        help="--norm l1 with the decomposition: maximise each candidate through the backward "
        "pass's switches (default: for a network of two hidden layers and a fixed c, as a sum "
        "of products of the two layers' gates, a tighter model)",
    )
    perf.add_argument(
        "--no-split-leader",
        dest="split_leader",
        action="store_false",
        help="let the two racers of --formulation auto run to the end (default: if neither has "
        "finished after 30 s, or from 10 s on once one's proven bound is 1.3 times below the "
        "other's, and at least 90 s are left, the one with the smaller proven bound is solved "
        "again split in halves on two processes)",
    )
    perf.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes for independent solves: the race of the two formulations, and the "
        "l1 norm's candidates solved side by side (HiGHS, SCIP); default: one per core; 1: none",
    )


def _format_vector(vec: np.ndarray | None, limit: int = 6) -> str:
    """``[a, b, ...]``: the first ``limit`` entries to 4 digits, ``-`` for none."""
    if vec is None:
        return "-"
    shown = ", ".join(f"{v:.4g}" for v in vec[:limit])
    return f"[{shown}{', ...' if vec.size > limit else ''}]"


def _format_stages(timings: dict[str, float]) -> str:
    """``bounds 0.01, build 0.03, ...``: the four main stages always, the others when they ran,
    so that the parts add up to the total."""
    shown = [k for k in STAGES if k in timings or k in STAGES[:4]]
    shown += [k for k in timings if k not in STAGES]
    return ", ".join(f"{k} {timings.get(k, 0.0):.2f}" for k in shown)


def _no_model(result: LipschitzResult) -> str:
    """What the summary says of an answer without a MIP model: "no MIP needed" only where it
    is exact; an unfinished answer may have come after a MIP that proved nothing."""
    return "no MIP needed" if result.status == Status.OPTIMAL else "no MIP model in this answer"


def format_result(result: LipschitzResult, network: Network, domain: Domain, model: str) -> str:
    """The short human summary printed without --json."""
    target = (
        f"c = {_format_vector(result.c)}"
        if result.c is not None
        else f"output norm {result.output_norm}"
    )
    verdict = Status(result.status).facts.verdict
    lower = "-" if result.lower is None else f"{result.lower:.10g}"
    stats = result.model_stats
    lines = [
        f"network   {model}  {list(network.widths)}",
        f"domain    {domain.describe()}    norm {InputNorm.parse(result.norm).label}    {target}",
        f"value     {result.value:.10g}   [{result.status}: {verdict}]",
        f"lower     {lower}   attained at x = {_format_vector(result.witness)}",
        f"upper     {result.upper:.10g}",
        (
            f"model     {stats['variables']} variables, {stats['constraints']} constraints, "
            f"{stats['binaries']} binaries ({stats['unstable_neurons']} unstable neurons)"
            if stats["variables"]
            else f"model     {_no_model(result)} ({stats['unstable_neurons']} unstable neurons)"
        ),
        f"time      {result.seconds:.2f} s ({_format_stages(result.timings)})    "
        f"solver {result.solver}",
    ]
    if "regions" in stats:
        lines.insert(
            -1,
            f"regions   {counted(stats['regions'], 'linear region')} reached, "
            f"{counted(stats['region_nodes'], 'search node')}, "
            f"{counted(stats['region_lps'], 'LP')}",
        )
    if result.message:
        lines.append(f"note      {result.message}")
    return "\n".join(lines)


def _solve_options(args: argparse.Namespace, progress: Callable[[str], None]) -> dict[str, Any]:
    """The keyword options of :func:`lipopt.lipschitz` that ``lipopt solve`` passes on."""
    names = (
        "solver", "mode", "time_limit", "gap", "threads", "verbose", "bounds", "split",
        "decompose", "regions", "formulation", "workers", "subnet_bounds", "attack",
        "sign_split", "gate_split", "split_leader", "products",
    )  # fmt: skip
    return {name: getattr(args, name) for name in names} | {"progress": progress}


def run_solve(args: argparse.Namespace) -> int:
    """Check every option, then solve and print the summary or the JSON; 0 when answered."""
    say = _progress(args.quiet)
    network = load_onnx(args.model)
    domain = domain_from_args(args, network)
    c = load_vector(args.c, "--c") if args.c is not None else None
    options = _solve_options(args, say)
    checked = {key: value for key, value in options.items() if key != "progress"}
    check_arguments(network, domain, args.norm, c, output_norm=args.output_norm, **checked)
    options["time_limit"] = limit_left(args.time_limit)  # start-up counts against the limit
    solver = args.solver
    if registry.is_auto(solver):
        solver = "auto (HiGHS; SCIP on the backward model if the two formulations race)"
    say(f"loaded {args.model}: widths {list(network.widths)}; solving with {solver}...")
    result = lipschitz(
        network, domain, norm=args.norm, c=c, output_norm=args.output_norm, **options
    )
    if args.json:
        out = result.to_dict()
        out["model"] = args.model
        print(json.dumps(out, indent=2))
    else:
        print(format_result(result, network, domain, args.model))
    return exit_status([result.status])
