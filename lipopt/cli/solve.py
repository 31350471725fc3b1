"""``lipopt solve``: its options, run function and human summary."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from lipopt.cli.common import (
    _add_problem_arguments,
    _progress,
    add_config_arguments,
    config_options,
    domain_from_args,
    limit_left,
)
from lipopt.cli.exits import exit_status
from lipopt.domain import Domain, load_vector
from lipopt.io.onnx import load_onnx
from lipopt.lipschitz import LipschitzResult, check_arguments, lipschitz
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.options import Group
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
  lipopt solve net.onnx --polytope rows.json --clip 0,1 --c 1,-1   # rows A x <= b, in [0,1]^d

domain: one of --box, --center/--radius (--ball l1|l2) or --polytope; --polytope and --clip
also cut the others (docs/domains.md). Negative numbers work as typed (--box -1,1).

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
        "of c^T f, or of the whole output vector under an output norm, over a box, ball or "
        "polytope of inputs.",
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
    speed levers' help only with ``show_all``); the solve options as declared."""
    _add_problem_arguments(parser, l2="")
    add_config_arguments(parser.add_argument_group("solving"), config_options(Group.SOLVING))
    perf = parser.add_argument_group(Group.SPEED.value)
    add_config_arguments(perf, config_options(Group.SPEED))
    if not show_all:  # still accepted, not listed one by one
        for action in perf._group_actions:
            action.help = argparse.SUPPRESS
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_arguments(out, config_options(Group.OUTPUT))
    out.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


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
    names = config_options()
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
