"""``lipopt`` command line: a thin layer that parses, calls the API and prints."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from lipopt.certify import CertifyResult, certify
from lipopt.domain import Domain, DomainError, load_vector, parse_ball, parse_box
from lipopt.io.onnx import OnnxImportError, load_onnx
from lipopt.lipschitz import LipschitzError, LipschitzResult, build_model, lipschitz
from lipopt.network import Network, NetworkError
from lipopt.solvers import SolverError, registry

#: errors a user can cause; each becomes one line on stderr and exit status 2
USER_ERRORS = (DomainError, OnnxImportError, LipschitzError, SolverError, NetworkError, ValueError)

#: options whose value may start with "-" (negative numbers): "--box -1,1" -> "--box=-1,1"
VALUE_OPTIONS = ("--box", "--center", "--c")

MAIN_EPILOG = """\
examples:
  lipopt solve models/synthetic-2x20x40x20x2.onnx --box 0,1 --c 1,-1
  lipopt solve net.onnx --center 0.1,0.5,0.3 --radius 0.05 --norm l1 --json
  lipopt solve net.onnx --center x.npy --radius 0.1 --time-limit 60
  lipopt solve net.onnx --box 0,1 --output-norm linf
  lipopt certify net.onnx --center x.npy --radius 0.1
  lipopt export net.onnx --box 0,1 --c 1,-1 -o lip.mps
  lipopt compare net.onnx --box 0,1 --c 1,-1
  lipopt solvers

Run 'lipopt solve --help' for every option.
"""

SOLVE_EPILOG = """\
examples:
  # exact constant of f_1 - f_2 over the unit square, l-inf input norm (max ||grad||_1)
  lipopt solve models/synthetic-2x20x40x20x2.onnx --box 0,1 --c 1,-1
  # l1 input norm (max ||grad||_inf) on an l-inf ball, as JSON
  lipopt solve net.onnx --center 0.1,0.5,0.3 --radius 0.05 --norm l1 --json
  # centre from a file, stop after 60 s with certified bounds
  lipopt solve net.onnx --center x.npy --radius 0.1 --time-limit 60
  # the whole output vector: l-inf in, l-inf out; or the cross-norm for multi-class robustness
  lipopt solve net.onnx --box 0,1 --output-norm linf
  lipopt solve net.onnx --center x.npy --radius 0.1 --output-norm cross
  # an l1 ball, and per-input box bounds from a file
  lipopt solve net.onnx --center x.npy --radius 0.5 --ball l1
  lipopt solve net.onnx --box bounds.json      # {"lower": [...], "upper": [...]}

domain: give exactly one of --box or --center/--radius. Negative numbers work as typed
(--box -1,1, --center -0.5,0.2). Vectors are comma lists or .npy/.json/.txt files.

output: the value is a certified upper bound on the local Lipschitz constant, and the exact
constant when the status is 'optimal'; 'lower' is attained at the witness input (recomputed
in numpy). Exit status: 0 answered, 2 bad input or solver failure, 130 interrupted.
"""


CERTIFY_EPILOG = """\
examples:
  # certified l-inf radius around x, one LipMIP with the cross-norm (the default)
  lipopt certify net.onnx --center x.npy --radius 0.1
  # one LipMIP per class pair (tighter, slower); or their per-pair maximum
  lipopt certify net.onnx --center x.npy --radius 0.1 --method pairwise
  lipopt certify net.onnx --center x.npy --radius 0.1 --method naive
  # an l1 ball and l1 radius
  lipopt certify net.onnx --center 0.2,0.7 --radius 0.5 --ball l1 --json

The predicted class of x is argmax f(x) (sign of f for one output). The Lipschitz constants are
taken over the requested ball, so the radius is certified within it; a radius beyond the ball
is capped at the ball's radius and reported as such.
"""


COMPARE_EPILOG = """\
examples:
  # every estimator side by side, cheapest first, LipMIP's exact value last
  lipopt compare models/synthetic-2x20x40x20x2.onnx --box 0,1 --c 1,-1
  # a few methods on an l-inf ball, as JSON
  lipopt compare net.onnx --center x.npy --radius 0.1 --methods fastlip,liplp,lipmip --json
  # cap LipMIP at 60 s (then its value is a certified upper bound, labelled as such)
  lipopt compare net.onnx --box 0,1 --c 1,-1 --time-limit 60

methods: naive, random, attack, fastlip, liplp, clever, seqlip, lipsdp, lipmip.
guarantees: upper (certified upper bound), lower (attained at some input), heuristic (no
guarantee), exact (LipMIP solved to optimality). Relative errors are against LipMIP's exact
value. A method that cannot run here (lipsdp without 'pip install lipopt[sdp]') is listed with
the reason. See docs/estimators.md for what each method computes.
"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _add_problem_arguments(parser: argparse.ArgumentParser, output_norm: bool = True) -> None:
    """The network, domain and norms: shared by solve, export and compare (without
    ``--output-norm``: the estimators take a weighting c)."""
    parser.add_argument("model", help="ONNX file of a feed-forward ReLU network")
    dom = parser.add_argument_group("domain (one of)")
    dom.add_argument(
        "--box",
        metavar="LO,HI|FILE",
        help="box: LO,HI for every input, or a "
        '.json {"lower": [...], "upper": [...]} / .npy of shape (2, d)',
    )
    dom.add_argument(
        "--center", metavar="X|FILE", help="ball centre: comma list or .npy/.json/.txt"
    )
    dom.add_argument("--radius", type=float, help="ball radius (with --center)")
    dom.add_argument(
        "--ball", choices=["linf", "l1"], help="ball type for --center/--radius (default: linf)"
    )
    prob = parser.add_argument_group("problem")
    prob.add_argument(
        "--norm",
        choices=["linf", "l1"],
        default="linf",
        help="input norm: linf (max ||grad||_1, default) or l1 (max ||grad||_inf)",
    )
    prob.add_argument("--c", metavar="C|FILE", help="output weighting c: the constant of c^T f")
    if not output_norm:
        return
    prob.add_argument(
        "--output-norm",
        choices=["abs", "l1", "linf", "cross"],
        help="instead of --c: the output norm of the (input, output) constant "
        "of the whole output vector; cross is the multi-class robustness norm",
    )


def _add_switch(group: Any, name: str, on: str, off: str) -> None:
    """``--name`` / ``--no-name``: True / False, and "auto" when neither is given."""
    pair = group.add_mutually_exclusive_group()
    dest = name.replace("-", "_")
    pair.add_argument(
        f"--{name}", dest=dest, action="store_const", const=True, default="auto", help=on
    )
    pair.add_argument(f"--no-{name}", dest=dest, action="store_const", const=False, help=off)


def _add_solve_arguments(parser: argparse.ArgumentParser) -> None:
    _add_problem_arguments(parser)
    sol = parser.add_argument_group("solving")
    sol.add_argument(
        "--solver",
        default="auto",
        help="solver adapter: auto (the default: HiGHS, with SCIP solving the backward model "
        "where the two formulations are raced), highs, scip, cbc or gurobi",
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
    perf = parser.add_argument_group("speed levers (each can be switched off)")
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
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--verbose", action="store_true", help="show the solver's log")
    out.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lipopt",
        description="Exact local Lipschitz constants of ReLU networks by mixed-integer "
        "programming.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from lipopt import __version__

    parser.add_argument("--version", action="version", version=f"lipopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    solve = sub.add_parser(
        "solve",
        help="compute the local Lipschitz constant of an ONNX network over a domain",
        description="Compute the exact local Lipschitz constant (or certified bounds on it) "
        "of c^T f, or of the whole output vector under an output norm, over a box or ball of "
        "inputs.",
        epilog=SOLVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_solve_arguments(solve)
    cert = sub.add_parser(
        "certify",
        help="certified robustness radius around an input",
        description="Certified radius around x within which the predicted class cannot change "
        "(paper appendix E.2).",
        epilog=CERTIFY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_certify_arguments(cert)
    export = sub.add_parser(
        "export",
        help="write the Lipschitz MIP as .lp or .mps for an external solver",
        description="Write the model that 'lipopt solve' would solve, to .lp or .mps (by the "
        "suffix of -o). Variable names map back to layers and neurons: x[j] inputs, h{k}[i] "
        "post-activations, a{k}[i] activation binaries, s{k}[i] / y{k}[i] backward pass.",
        epilog="examples:\n  lipopt export net.onnx --box 0,1 --c 1,-1 -o lip.mps\n"
        "  lipopt export net.onnx --center x.npy --radius 0.1 --mode lp -o liplp.lp\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_problem_arguments(export)
    export.add_argument(
        "-o", "--output", required=True, metavar="PATH", help="where to write: a .lp or .mps file"
    )
    export.add_argument(
        "--mode",
        choices=["exact", "lp"],
        default="exact",
        help="the MIP (default) or its LP relaxation",
    )
    comp = sub.add_parser(
        "compare",
        help="every Lipschitz estimator side by side (FastLip, LipLP, CLEVER, ..., LipMIP)",
        description="Run the Lipschitz estimators of the LipMIP paper on one network and "
        "domain and print value, guarantee, relative error to the exact value, and seconds.",
        epilog=COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_compare_arguments(comp)
    sub.add_parser(
        "solvers",
        help="list the solver adapters and whether each is usable here",
        description="List every solver adapter, whether it is installed and usable, and how to "
        "install the missing ones.",
    )
    return parser


def _add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    _add_problem_arguments(parser, output_norm=False)
    run = parser.add_argument_group("methods")
    run.add_argument(
        "--methods",
        metavar="A,B,...",
        help="comma list of estimators (default: all, cheapest first)",
    )
    run.add_argument(
        "--solver",
        default="auto",
        help="solver for liplp and lipmip: auto (as in lipopt solve; the default), highs, scip, "
        "cbc or gurobi",
    )
    run.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds for lipmip; stopped early it reports a certified upper bound",
    )
    run.add_argument(
        "--seed", type=int, default=0, help="seed of the sampling methods (default: 0)"
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _add_certify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="ONNX file of a feed-forward ReLU classifier")
    parser.add_argument(
        "--center",
        required=True,
        metavar="X|FILE",
        help="the input x: comma list or .npy/.json/.txt",
    )
    parser.add_argument(
        "--radius",
        required=True,
        type=float,
        help="radius of the ball around x over which constants are taken",
    )
    parser.add_argument(
        "--ball",
        choices=["linf", "l1"],
        default="linf",
        help="ball and radius norm (default: linf)",
    )
    parser.add_argument(
        "--method",
        choices=["cross", "pairwise", "naive"],
        default="cross",
        help="cross: one MIP with the cross-norm (default); pairwise: one MIP "
        "per class pair; naive: the pairs' maximum constant",
    )
    parser.add_argument(
        "--solver",
        default="auto",
        help="solver adapter: auto (the default: HiGHS, with SCIP solving the backward model "
        "where the two formulations are raced), highs, scip, cbc or gurobi",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="per-constant time limit; bounds stay certified",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _join_negative_values(argv: Sequence[str]) -> list[str]:
    """Let values that start with '-' follow their option: '--box -1,1' -> '--box=-1,1'."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        if (
            args[i] in VALUE_OPTIONS
            and i + 1 < len(args)
            and args[i + 1].startswith("-")
            and not args[i + 1].startswith("--")
        ):
            out.append(f"{args[i]}={args[i + 1]}")
            i += 2
        else:
            out.append(args[i])
            i += 1
    return out


def domain_from_args(args: argparse.Namespace, network: Network) -> Domain:
    """The domain the options describe; exactly one of --box or --center/--radius."""
    d = network.input_dim
    if args.box is not None and (args.center is not None or args.radius is not None):
        raise DomainError("give either --box or --center/--radius, not both")
    if args.box is not None:
        if args.ball is not None:
            raise DomainError("--ball goes with --center/--radius, not with --box")
        return parse_box(args.box, d)
    if args.center is None and args.radius is None:
        raise DomainError("no domain given: use --box LO,HI or --center X --radius R")
    if args.center is None or args.radius is None:
        raise DomainError("a ball needs both --center and --radius")
    return parse_ball(args.center, args.radius, args.ball or "linf", d)


def _format_vector(vec: np.ndarray | None, limit: int = 6) -> str:
    if vec is None:
        return "-"
    shown = ", ".join(f"{v:.4g}" for v in vec[:limit])
    return f"[{shown}{', ...' if vec.size > limit else ''}]"


#: the stages of a solve in the order they run; a result's ``timings`` holds those it went through
STAGES = ("bounds", "build", "solve", "verify", "regions", "split", "probe", "race")


def _format_stages(timings: dict[str, float]) -> str:
    """``bounds 0.01, build 0.03, ...``: the four main stages always, the others when they ran,
    so that the parts add up to the total."""
    shown = [k for k in STAGES if k in timings or k in STAGES[:4]]
    shown += [k for k in timings if k not in STAGES]
    return ", ".join(f"{k} {timings.get(k, 0.0):.2f}" for k in shown)


def format_result(result: LipschitzResult, network: Network, domain: Domain, model: str) -> str:
    """The short human summary printed without --json."""
    dual = {"linf": "max ||grad||_1", "l1": "max ||grad||_inf"}[result.norm]
    target = (
        f"c = {_format_vector(result.c)}"
        if result.c is not None
        else f"output norm {result.output_norm}"
    )
    verdict = {
        "optimal": "exact" if result.exact_certified else "optimal, not certified attained",
        "relaxation": "LP relaxation: upper bound only",
        "gap_limit": "stopped at the gap limit: bounds only",
        "time_limit": "stopped at the time limit: bounds only",
    }.get(result.status, result.status)
    lower = "-" if result.lower is None else f"{result.lower:.10g}"
    stats = result.model_stats
    lines = [
        f"network   {model}  {list(network.widths)}",
        f"domain    {domain.describe()}    norm {result.norm} ({dual})    {target}",
        f"value     {result.value:.10g}   [{result.status}: {verdict}]",
        f"lower     {lower}   attained at x = {_format_vector(result.witness)}",
        f"upper     {result.upper:.10g}",
        (
            f"model     {stats['variables']} variables, {stats['constraints']} constraints, "
            f"{stats['binaries']} binaries ({stats['unstable_neurons']} unstable neurons)"
            if stats["variables"]
            else f"model     no MIP needed ({stats['unstable_neurons']} unstable neurons)"
        ),
        f"time      {result.seconds:.2f} s ({_format_stages(result.timings)})    "
        f"solver {result.solver}",
    ]
    if "regions" in stats:
        lines.insert(
            -1,
            f"regions   {stats['regions']} linear regions reached, {stats['region_nodes']} "
            f"search nodes, {stats['region_lps']} LPs",
        )
    if result.message:
        lines.append(f"note      {result.message}")
    return "\n".join(lines)


def _progress(quiet: bool):  # type: ignore[no-untyped-def]
    def say(message: str) -> None:
        if not quiet:
            print(f"lipopt: {message}", file=sys.stderr, flush=True)

    return say


def run_solve(args: argparse.Namespace) -> int:
    say = _progress(args.quiet)
    network = load_onnx(args.model)
    domain = domain_from_args(args, network)
    c = load_vector(args.c, "--c") if args.c is not None else None
    solver = args.solver
    if registry.is_auto(solver):
        solver = "auto (HiGHS; SCIP on the backward model if the two formulations race)"
    say(f"loaded {args.model}: widths {list(network.widths)}; solving with {solver}...")
    result = lipschitz(
        network,
        domain,
        norm=args.norm,
        c=c,
        output_norm=args.output_norm,
        solver=args.solver,
        mode=args.mode,
        time_limit=args.time_limit,
        gap=args.gap,
        threads=args.threads,
        verbose=args.verbose,
        progress=say,
        bounds=args.bounds,
        split=args.split,
        decompose=args.decompose,
        regions=args.regions,
        formulation=args.formulation,
        workers=args.workers,
        subnet_bounds=args.subnet_bounds,
        attack=args.attack,
        sign_split=args.sign_split,
        gate_split=args.gate_split,
        split_leader=args.split_leader,
        products=args.products,
    )
    if args.json:
        out = result.to_dict()
        out["model"] = args.model
        print(json.dumps(out, indent=2))
    else:
        print(format_result(result, network, domain, args.model))
    return 0


def format_certificate(result: CertifyResult, model: str) -> str:
    """The short human summary of a certificate."""
    constants = ", ".join(f"{k}: {v:.6g}" for k, v in result.lipschitz.items())
    margins = ", ".join(f"{k}: {v:.6g}" for k, v in result.margins.items())
    if result.certified_ball:
        verdict = "the whole ball is certified"
    else:
        verdict = f"certified up to {result.radius:.6g} of the ball's {result.ball_radius:g}"
    lines = [
        f"network     {model}",
        f"predicted   class {result.predicted}",
        f"margins     {margins}",
        f"lipschitz   {constants}   ({result.norm} input norm, method {result.method})",
        f"radius      {result.radius:.6g}   [{verdict}]",
    ]
    if result.capped:
        lines.append(
            f"note        margin/L = {result.uncapped_radius:.6g} exceeds the ball; capped at "
            f"its radius (constants only hold inside it)"
        )
    lines.append(f"time        {result.seconds:.2f} s")
    return "\n".join(lines)


def run_certify(args: argparse.Namespace) -> int:
    say = _progress(args.quiet)
    network = load_onnx(args.model)
    ball = parse_ball(args.center, args.radius, args.ball, network.input_dim)
    say(f"loaded {args.model}: widths {list(network.widths)}; certifying ({args.method})...")
    result = certify(
        network, ball, method=args.method, solver=args.solver, time_limit=args.time_limit
    )
    if args.json:
        print(json.dumps({**result.to_dict(), "model": args.model}, indent=2))
    else:
        print(format_certificate(result, args.model))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from lipopt.solvers.export import write_model

    network = load_onnx(args.model)
    domain = domain_from_args(args, network)
    c = load_vector(args.c, "--c") if args.c is not None else None
    lip = build_model(
        network, domain, norm=args.norm, c=c, output_norm=args.output_norm, relax=args.mode == "lp"
    )
    path = write_model(lip.model, args.output)
    stats = lip.stats
    print(
        f"wrote {path}: {stats['variables']} variables, {stats['constraints']} constraints, "
        f"{stats['binaries']} binaries (maximise the objective)"
    )
    return 0


def _compare_options(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    """Per-method options from the command line: solver, LipMIP's time limit, seeds."""
    lipmip: dict[str, object] = {"solver": args.solver}
    if args.time_limit is not None:
        if args.time_limit <= 0:
            raise ValueError(f"--time-limit must be positive, got {args.time_limit}")
        lipmip["time_limit"] = args.time_limit
    return {
        "liplp": {"solver": args.solver},
        "lipmip": lipmip,
        "random": {"seed": args.seed},
        "attack": {"seed": args.seed},
        "clever": {"seed": args.seed},
    }


def run_compare(args: argparse.Namespace) -> int:
    from lipopt.compare import compare, format_table, parse_methods, to_json

    say = _progress(args.quiet)
    methods = parse_methods(args.methods)
    network = load_onnx(args.model)
    domain = domain_from_args(args, network)
    c = load_vector(args.c, "--c") if args.c is not None else None
    if c is None and network.output_dim > 1:
        raise ValueError(
            f"the network has {network.output_dim} outputs; pass --c (a vector of "
            f"{network.output_dim} numbers, e.g. --c 1,-1): the estimators bound c^T f"
        )
    say(f"loaded {args.model}: widths {list(network.widths)}; running {', '.join(methods)}")
    options = {k: v for k, v in _compare_options(args).items() if k in methods}
    results = compare(network, domain, args.norm, c, methods, progress=say, options=options)
    if args.json:
        print(json.dumps({**to_json(results), "model": args.model, "norm": args.norm}, indent=2))
    else:
        print(format_table(results))
    return 0


def run_solvers(args: argparse.Namespace) -> int:
    usable = set(registry.available())
    for name in registry.ADAPTERS:
        if name in usable:
            print(f"{name:10s} usable   {registry.get(name).version()}")
        else:
            hint = getattr(registry, "INSTALL_HINTS", {}).get(name, "")
            print(f"{name:10s} missing  {hint}")
    print("default: auto = highs, with scip on the backward model where the two formulations race")
    return 0


COMMANDS = {
    "solve": run_solve,
    "certify": run_certify,
    "export": run_export,
    "compare": run_compare,
    "solvers": run_solvers,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(_join_negative_values(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return COMMANDS[args.command](args)
    except USER_ERRORS as exc:
        print(f"lipopt {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"lipopt {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
