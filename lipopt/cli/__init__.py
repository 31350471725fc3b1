"""``lipopt`` command line: a thin layer that parses, calls the API and prints.

One module per command (its options, run function and formatter); ``parser`` builds the
top-level parser and ``common`` holds what several commands share.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from lipopt.cli.batch import BATCH_EPILOG, run_batch_command
from lipopt.cli.certify import CERTIFY_EPILOG, format_certificate, run_certify
from lipopt.cli.common import domain_from_args
from lipopt.cli.compare import COMPARE_EPILOG, run_compare
from lipopt.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_TERMINATED,
    interruption,
    output_closed,
    signals_as_interrupts,
)
from lipopt.cli.export import run_export
from lipopt.cli.parser import MAIN_EPILOG, VALUE_OPTIONS, _join_negative_values, make_parser
from lipopt.cli.report import run_report
from lipopt.cli.solve import SOLVE_EPILOG, STAGES, _format_stages, format_result, run_solve
from lipopt.cli.solvers import run_solvers
from lipopt.domain import DomainError
from lipopt.io.onnx import OnnxImportError
from lipopt.lipschitz import LipschitzError
from lipopt.network import NetworkError
from lipopt.solvers import SolverError

__all__ = [
    "BATCH_EPILOG",
    "CERTIFY_EPILOG",
    "COMMANDS",
    "COMPARE_EPILOG",
    "MAIN_EPILOG",
    "SOLVE_EPILOG",
    "STAGES",
    "USER_ERRORS",
    "VALUE_OPTIONS",
    "_format_stages",
    "_join_negative_values",
    "domain_from_args",
    "format_certificate",
    "format_result",
    "main",
    "make_parser",
    "run_batch_command",
    "run_certify",
    "run_compare",
    "run_export",
    "run_report",
    "run_solve",
    "run_solvers",
]

#: errors a user can cause; each becomes one line on stderr and exit status 2
USER_ERRORS = (DomainError, OnnxImportError, LipschitzError, SolverError, NetworkError, ValueError)

#: the run function of each command
COMMANDS: dict[str, Callable[..., int]] = {
    "solve": run_solve,
    "certify": run_certify,
    "export": run_export,
    "compare": run_compare,
    "solvers": run_solvers,
    "batch": run_batch_command,
    "report": run_report,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's arguments), run the command; the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser(show_all="--help-all" in arguments)
    args = parser.parse_args(_join_negative_values(arguments))
    if args.command is None:
        parser.print_help()
        return 2
    try:
        with signals_as_interrupts():
            return COMMANDS[args.command](args)
    except (KeyboardInterrupt, Exception) as exc:
        code = interruption(exc)  # a signal first: a library may fail in its own way after it
        if code is not None:
            how = "terminated" if code == EXIT_TERMINATED else "interrupted"
            print(f"lipopt {args.command}: {how}", file=sys.stderr)
            return code
        if isinstance(exc, BrokenPipeError):
            return output_closed()
        if isinstance(exc, USER_ERRORS):
            print(f"lipopt {args.command}: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        raise
