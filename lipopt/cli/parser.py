"""The top-level ``lipopt`` parser: one-line errors, the subcommands, negative values."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from lipopt.cli import batch, certify, compare, export, report, solve, solvers

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
  lipopt batch instances.csv --out results.jsonl
  lipopt certify net.onnx --points x.npy --labels y.npy --radius 0.01,0.02 --out cert.jsonl
  lipopt report cert.jsonl --plot certified.png

Run 'lipopt solve --help' for its options, 'lipopt solve --help-all' for every speed lever.
"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def make_parser(show_all: bool = False) -> argparse.ArgumentParser:
    """``lipopt`` with its subcommands, in the order ``--help`` lists them; ``show_all``:
    ``solve --help`` lists every speed lever (what ``--help-all`` asks for)."""
    parser = _Parser(
        prog="lipopt",
        description="Exact local Lipschitz constants of piecewise-linear networks by mixed-integer "
        "programming.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from lipopt import __version__

    parser.add_argument("--version", action="version", version=f"lipopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    solve.add_parser(sub, show_all)
    for command in (certify, export, compare, solvers, batch, report):
        command.add_parser(sub)
    return parser


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
