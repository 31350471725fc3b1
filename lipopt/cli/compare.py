"""``lipopt compare``: every Lipschitz estimator side by side."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lipopt.cli.common import (
    _add_problem_arguments,
    _progress,
    add_config_arguments,
    domain_from_args,
    limit_left,
)
from lipopt.cli.solvers import solver_list
from lipopt.domain import load_vector
from lipopt.io.onnx import load_onnx
from lipopt.progress import example_c

if TYPE_CHECKING:
    from lipopt.compare import Result

COMPARE_EPILOG = """\
examples:
  # every estimator side by side, cheapest first, LipMIP's exact value last
  lipopt compare models/synthetic-2x20x40x20x2.onnx --box 0,1 --c 1,-1
  # a few methods on an l-inf ball, as JSON
  lipopt compare net.onnx --center x.npy --radius 0.1 --methods fastlip,liplp,lipmip --json
  # the whole command in 60 s: each method gets what is left; LipMIP stopped early reports a
  # certified upper bound, any other method still running is stopped and listed with no value
  lipopt compare net.onnx --box 0,1 --c 1,-1 --time-limit 60
  # the polynomial-optimization bounds (Chen et al. 2020) beside the exact value
  lipopt compare net.onnx --center x.npy --radius 0.1 --methods shor,hr2,lipopt3,lipmip
  # the l2 input norm: upper bounds (naive, fastlip, lipsdp, shor, hr2) and sampled lower
  # bounds; no exact value yet
  lipopt compare net.onnx --box 0,1 --c 1,-1 --norm l2
  # ECLipsE's global and local l2 bounds beside the exact l2 constant on an l2 ball
  lipopt compare net.onnx --center x.npy --radius 0.5 --ball l2 --norm l2 \
      --methods eclipse-fast,eclipse,eclipse-local,lipmip

methods: naive, random, attack, fastlip, liplp, clever, seqlip, lipsdp, eclipse-fast,
eclipse, eclipse-local (ECLipsE of Xu & Sivaranjani; l2 only), shor, hr2, lipopt3, lipopt4
(LiPopt-k of Latorre et al. 2020, not this package), lipmip.
guarantees: upper (certified upper bound), lower (attained at some input), heuristic (no
guarantee), exact (LipMIP solved to optimality). Relative errors are against LipMIP's exact
value. A method that cannot run here (lipsdp, shor or hr2 without 'pip install lipopt[sdp]';
eclipse* without 'pip install lipopt[eclipse]', or on another norm; eclipse-local off l2 balls;
shor, hr2 and lipopt3/4 beyond two hidden layers; a method not built for --norm l2) is listed
with the reason. Ctrl-C or SIGTERM stops the command within seconds: it prints the finished
methods and lists the others as stopped (exit status 130 or 143). See docs/estimators.md for
what each method computes.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``compare`` subcommand and its options."""
    parser = sub.add_parser(
        "compare",
        help="every Lipschitz estimator side by side (FastLip, LipLP, CLEVER, ..., LipMIP)",
        description="Run the Lipschitz estimators of the LipMIP paper on one network and "
        "domain and print value, guarantee, relative error to the exact value, and seconds.",
        epilog=COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_compare_arguments(parser)


#: the help of the solve options compare takes, where it differs from ``lipopt solve``'s
def _add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The problem (weighting c, no output norm), the methods and output."""
    _add_problem_arguments(parser, output_norm=False, l2="; not liplp, lipopt3/4, lipmip")
    run = parser.add_argument_group("methods")
    run.add_argument(
        "--methods",
        metavar="A,B,...",
        help="comma list of estimators (default: all, cheapest first)",
    )
    solver = f"solver for liplp and lipmip: auto (as in lipopt solve; the default), {solver_list()}"
    add_config_arguments(run, ("solver",), helps={"solver": solver})
    run.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds for the whole command: each method gets what is left (lipmip as its "
        "time limit: stopped early it reports a certified upper bound; any other method still "
        "running then is stopped and listed with no value; a method with no time left is not "
        "run)",
    )
    run.add_argument(
        "--seed", type=int, default=0, help="seed of the sampling methods (default: 0)"
    )
    run.add_argument(
        "--sdp-solver",
        choices=["clarabel", "scs"],
        help="SDP solver of lipsdp, shor and hr2 (default: Clarabel; SCS for large blocks, "
        "less accurate: the bounds stay proven, only looser)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _compare_options(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    """Per-method options from the command line: solvers and seeds."""
    if args.time_limit is not None and not args.time_limit > 0:
        raise ValueError(f"--time-limit must be positive, got {args.time_limit}")
    sdp = {} if args.sdp_solver is None else {"solver": args.sdp_solver.upper()}
    return {
        "liplp": {"solver": args.solver},
        "lipmip": {"solver": args.solver},
        "lipsdp": sdp,
        "shor": sdp,
        "hr2": sdp,
        "random": {"seed": args.seed},
        "attack": {"seed": args.seed},
        "clever": {"seed": args.seed},
    }


def run_compare(args: argparse.Namespace) -> int:
    """Run the chosen estimators, then print their table or the JSON (interrupted: those of
    the finished methods and the stopped ones, then the interruption goes on to its exit)."""
    from lipopt.compare import CompareInterrupted, check_compare, compare, parse_methods

    say = _progress(args.quiet)
    methods = parse_methods(args.methods)
    network = load_onnx(args.model)
    domain = domain_from_args(args, network)
    c = load_vector(args.c, "--c") if args.c is not None else None
    if c is None and network.output_dim > 1:
        raise ValueError(
            f"the network has {network.output_dim} outputs; pass --c (a vector of "
            f"{network.output_dim} numbers, e.g. --c {example_c(network.output_dim)}): the "
            "estimators bound c^T f"
        )
    options = {k: v for k, v in _compare_options(args).items() if k in methods}
    check_compare(network, domain, args.norm, c, methods, options, args.time_limit)
    limit = limit_left(args.time_limit)  # the command's start-up counts against the limit
    say(f"loaded {args.model}: widths {list(network.widths)}; running {', '.join(methods)}")
    try:
        results = compare(
            network, domain, args.norm, c, methods, say, options=options, time_limit=limit
        )
    except CompareInterrupted as stop:
        _print_results(args, stop.results)
        raise
    _print_results(args, results)
    return 0


def _print_results(args: argparse.Namespace, results: Sequence[Result]) -> None:
    """The table, or the JSON with the model and the norm."""
    from lipopt.compare import format_table, to_json

    if args.json:
        print(json.dumps({**to_json(results), "model": args.model, "norm": args.norm}, indent=2))
    else:
        print(format_table(results))
