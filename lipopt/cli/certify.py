"""``lipopt certify``: its options, run function and human summary."""

from __future__ import annotations

import argparse
import json

from lipopt.certify import BUDGET_SPENT, CertifyMethod, CertifyResult, certify, check_certify
from lipopt.cli.batch import run_tasks
from lipopt.cli.common import _progress, add_clip_argument, add_config_arguments
from lipopt.cli.exits import exit_status
from lipopt.domain import parse_ball, parse_clip
from lipopt.io.onnx import load_onnx
from lipopt.norms import InputNorm
from lipopt.status import Status

CERTIFY_EPILOG = """\
examples:
  # certified l-inf radius around x, one LipMIP with the cross-norm (the default)
  lipopt certify net.onnx --center x.npy --radius 0.1
  # one LipMIP per class pair (tighter, slower); or their per-pair maximum
  lipopt certify net.onnx --center x.npy --radius 0.1 --method pairwise
  lipopt certify net.onnx --center x.npy --radius 0.1 --method naive
  # one LipMIP with the cross-norm of the predicted class i only (dual vertices e_i, e_i - e_j)
  lipopt certify net.onnx --center x.npy --radius 0.1 --method class
  # at most 60 s per constant and 300 s for the whole call
  lipopt certify net.onnx --center x.npy --radius 0.1 --method pairwise --time-limit 60 \
      --total-time-limit 300
  # an l1 ball and l1 radius
  lipopt certify net.onnx --center 0.2,0.7 --radius 0.5 --ball l1 --json
  # an l2 ball and l2 radius (the exact l2 constant; SCIP by default)
  lipopt certify net.onnx --center x.npy --radius 0.5 --ball l2
  # a dataset: every point at every radius, one JSON line each, resumable (docs/batch.md)
  lipopt certify net.onnx --points test_x.npy --labels test_y.npy --radius 0.01,0.02,0.05 \
      --out cert.jsonl --time-limit 60
  lipopt report cert.jsonl --plot certified.png      # certified accuracy at each radius

The predicted class of x is argmax f(x) (sign of f for one output). The Lipschitz constants are
taken over the requested ball, so the radius is certified within it; a radius beyond the ball
is capped at the ball's radius and reported as such. Each constant is shown as exact, or as a
proven upper bound (<=) with its status and the value attained; the radius is certified either
way, from the upper bounds.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``certify`` subcommand and its options."""
    parser = sub.add_parser(
        "certify",
        help="certified robustness radius around an input",
        description="Certified radius around x within which the predicted class cannot change "
        "(paper appendix E.2).",
        epilog=CERTIFY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_certify_arguments(parser)


def _add_certify_arguments(parser: argparse.ArgumentParser) -> None:
    """The classifier, the ball around x, the method, solver and output."""
    parser.add_argument(
        "model",
        help="ONNX file of a feed-forward piecewise-linear classifier",
    )
    parser.add_argument(
        "--center",
        metavar="X|FILE",
        help="the input x: comma list or .npy/.json/.txt",
    )
    parser.add_argument(
        "--radius",
        required=True,
        metavar="R[,R...]",
        help="radius of the ball around x over which constants are taken (with --points: a "
        "comma list, each radius certified separately)",
    )
    parser.add_argument(
        "--ball",
        choices=InputNorm.choices(),
        default="linf",
        help="ball and radius norm (default: linf; l2: the exact l2 constant)",
    )
    add_clip_argument(parser)
    parser.add_argument(
        "--method",
        choices=[m.value for m in CertifyMethod],
        default="cross",
        help="cross: one MIP with the cross-norm (default); class: one MIP with the "
        "predicted class's cross-norm (between cross and naive); pairwise: one MIP per class "
        "pair; naive: the pairs' maximum constant",
    )
    add_config_arguments(parser, ("solver", "time_limit"), helps=CERTIFY_HELPS)
    parser.add_argument(
        "--total-time-limit",
        type=float,
        metavar="SECONDS",
        help="time limit of the whole call: each constant gets min(--time-limit, what is "
        "left); constants left when it is spent are bounded by interval bounds, not solved "
        "(the radius stays certified)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    _add_points_arguments(parser)


#: the help of the solve options certify takes, where it differs from ``lipopt solve``'s
CERTIFY_HELPS = {
    "time_limit": "time limit of each constant's solve (pairwise/naive solve one per other "
    "class); bounds stay certified",
}


def _add_points_arguments(parser: argparse.ArgumentParser) -> None:
    """A dataset of points certified as a batch, instead of one centre."""
    points = parser.add_argument_group("a dataset of points (instead of --center)")
    points.add_argument(
        "--points", metavar="FILE", help=".npy of n inputs, shape (n, d) or (n, ...)"
    )
    points.add_argument("--labels", metavar="FILE", help=".npy of the n true classes")
    points.add_argument(
        "--out", metavar="FILE", help="with --points: the results file (JSON lines, resumable)"
    )
    points.add_argument(
        "--jobs", type=int, metavar="N", help="points side by side (default: one per core)"
    )
    points.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler to run on")


def _constant_entry(result: CertifyResult, name: str) -> str:
    """``cross: 218.695 (exact)``, or ``cross: <= 218.695 (time_limit; attained 201.3)``."""
    value, status = result.lipschitz[name], result.statuses[name]
    if result.exact.get(name, status == Status.OPTIMAL):
        return f"{name}: {value:.6g} (exact)"
    if status == BUDGET_SPENT:
        return f"{name}: <= {value:.6g} (not solved: total time limit spent; interval bound)"
    lower = result.lower.get(name)
    attained = "" if lower is None else f"; attained {lower:.6g}"
    return f"{name}: <= {value:.6g} ({status}{attained})"


def _notes(result: CertifyResult) -> list[str]:
    """Why the radius may be below the exact one: brackets, constants left unsolved, the cap."""
    notes = []
    names = list(result.lipschitz)
    inexact = [n for n in names if not result.exact.get(n, result.statuses[n] == Status.OPTIMAL)]
    if inexact:
        notes.append(
            f"{len(inexact)} of {len(names)} constants not exact: the radius is certified from "
            "their proven upper bounds and may be below the exact one"
        )
    spent = [n for n in names if result.statuses[n] == BUDGET_SPENT]
    if spent:
        notes.append(
            f"the total time limit ({result.total_time_limit:g} s) was spent before "
            f"{len(spent)} of them: bounded by interval bounds, not solved"
        )
    if result.clip is not None:
        notes.append(
            f"constants taken over the ball ∩ [{result.clip[0]:g}, {result.clip[1]:g}]^d "
            "(--clip): the radius certifies the points of the ball within that range"
        )
    if result.capped:
        notes.append(
            f"margin/L = {result.uncapped_radius:.6g} exceeds the ball; capped at "
            f"its radius (constants only hold inside it)"
        )
    return notes


def format_certificate(result: CertifyResult, model: str) -> str:
    """The short human summary of a certificate; each constant marked exact or a bracket."""
    constants = [_constant_entry(result, name) for name in result.lipschitz]
    margins = ", ".join(f"{k}: {v:.6g}" for k, v in result.margins.items())
    if result.certified_ball:
        verdict = "the whole ball is certified"
    else:
        verdict = f"certified up to {result.radius:.6g} of the ball's {result.ball_radius:g}"
    lines = [
        f"network     {model}",
        f"predicted   class {result.predicted}",
        f"margins     {margins}",
        f"lipschitz   {constants[0]}   ({result.norm} input norm, method {result.method})",
        *(f"            {entry}" for entry in constants[1:]),
        f"radius      {result.radius:.6g}   [{verdict}]",
    ]
    lines += [f"note        {note}" for note in _notes(result)]
    limit = (
        "" if result.total_time_limit is None else f" (total limit {result.total_time_limit:g} s)"
    )
    lines.append(f"time        {result.seconds:.2f} s{limit}")
    return "\n".join(lines)


def _radii(text: str) -> tuple[float, ...]:
    """``--radius``: one number, or a comma list with --points."""
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--radius must be a number or a comma list, got {text!r}") from None


def _check_mode(args: argparse.Namespace) -> None:
    """Exactly one of --center (one input) and --points (a dataset), with their options."""
    if (args.center is None) == (args.points is None):
        raise ValueError("give either --center (one input) or --points (a dataset)")
    if args.points is None:
        extra = [o for o in ("labels", "out", "jobs", "scheduler") if getattr(args, o) is not None]
        if extra:
            raise ValueError(f"--{extra[0]} goes with --points, not with --center")
    elif args.total_time_limit is not None:
        raise ValueError(
            "--total-time-limit goes with --center; with --points, --time-limit bounds each "
            "constant of each point"
        )
    elif args.out is None:
        raise ValueError("--points needs --out FILE for the results (JSON lines)")
    elif args.json:
        raise ValueError("with --points every result is a JSON line of --out; drop --json")


def _run_points(args: argparse.Namespace) -> int:
    """``--points``: one certify query per point and radius, run as a batch into --out."""
    from lipopt.batch import PointSet, point_tasks  # a batch's modules: not for one centre

    spec = PointSet(
        model=args.model, points=args.points, labels=args.labels, radii=_radii(args.radius),
        ball=args.ball, method=args.method,
        solve_options=(("solver", args.solver), ("time_limit", args.time_limit)),
        clip=None if args.clip is None else parse_clip(args.clip),
    )  # fmt: skip
    return run_tasks(point_tasks(spec), args, "certify")


def run_certify(args: argparse.Namespace) -> int:
    """Certify a radius around the centre, then print the summary or the JSON; with
    --points, every point at every radius into --out."""
    _check_mode(args)
    if args.points is not None:
        return _run_points(args)
    radii = _radii(args.radius)
    if len(radii) != 1:
        raise ValueError("--radius takes one number with --center (a list goes with --points)")
    say = _progress(args.quiet)
    network = load_onnx(args.model)
    ball = parse_ball(args.center, radii[0], args.ball, network.input_dim)
    clip = None if args.clip is None else parse_clip(args.clip)
    options = {"solver": args.solver, "time_limit": args.time_limit, "clip": clip}
    check_certify(network, ball, args.method, args.total_time_limit, **options)
    say(f"loaded {args.model}: widths {list(network.widths)}; certifying ({args.method})...")
    result = certify(
        network, ball, method=args.method, total_time_limit=args.total_time_limit, **options
    )
    if args.json:
        print(json.dumps({**result.to_dict(), "model": args.model}, indent=2))
    else:
        print(format_certificate(result, args.model))
    return exit_status(list(result.statuses.values()))
