"""``lipopt export``: write the Lipschitz MIP as .lp or .mps."""

from __future__ import annotations

import argparse

from lipopt.cli.common import _add_problem_arguments, add_config_arguments, domain_from_args
from lipopt.domain import load_vector
from lipopt.io.onnx import load_onnx
from lipopt.lipschitz import build_model

EXPORT_EPILOG = (
    "examples:\n  lipopt export net.onnx --box 0,1 --c 1,-1 -o lip.mps\n"
    "  lipopt export net.onnx --center x.npy --radius 0.1 --mode lp -o liplp.lp\n"
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``export`` subcommand and its options."""
    parser = sub.add_parser(
        "export",
        help="write the Lipschitz MIP as .lp or .mps for an external solver",
        description="Write the model that 'lipopt solve' would solve, to .lp or .mps (by the "
        "suffix of -o). Variable names map back to layers and neurons: x[j] inputs, h{k}[i] "
        "post-activations, a{k}[i] activation binaries, r{k}[i] = relu(z) of a non-ReLU "
        "neuron (h = alpha z + (1 - alpha) r), s{k}[i] / y{k}[i] backward pass.",
        epilog=EXPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_problem_arguments(parser)
    parser.add_argument(
        "-o", "--output", required=True, metavar="PATH", help="where to write: a .lp or .mps file"
    )
    add_config_arguments(
        parser, ("mode", "bounds"), helps={"mode": "the MIP (default) or its LP relaxation"}
    )


def run_export(args: argparse.Namespace) -> int:
    """Build the model ``solve`` would solve and write it to ``--output``."""
    from lipopt.solvers.export import write_model

    network = load_onnx(args.model)
    domain = domain_from_args(args, network)
    c = load_vector(args.c, "--c") if args.c is not None else None
    lip = build_model(
        network, domain, norm=args.norm, c=c, output_norm=args.output_norm,
        relax=args.mode == "lp", bounds=args.bounds,
    )  # fmt: skip
    path = write_model(lip.model, args.output)
    stats = lip.stats
    print(
        f"wrote {path}: {stats['variables']} variables, {stats['constraints']} constraints, "
        f"{stats['binaries']} binaries (maximise the objective)"
    )
    return 0
