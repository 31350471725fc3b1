"""How a ``lipopt`` command ends: its exit statuses, and SIGTERM handled as Ctrl-C is.

| exit | when |
|------|------|
| 0    | answered, with any status but ``solver_error`` (and ``failed``, a batch line's)   |
| 2    | bad input, or a solver that cannot be used here (not installed, an option refused) |
| 3    | answered with the bounds proven before the solver failed (status ``solver_error``) |

Each status's exit status is declared with it (:data:`lipopt.status.FACTS`); the statuses'
table of docs/cli.md is generated from them and :data:`NO_ANSWER` (:func:`statuses_table`).
| 130  | interrupted (SIGINT, Ctrl-C): nothing printed on stdout, no partial file |
| 143  | terminated (SIGTERM): as interrupted |

Worker processes are stopped on the way out either way
(:class:`lipopt.parallel.workers.ForkedWorkers`
closes them; a worker also dies with its parent, :func:`lipopt.parallel.workers.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType

from lipopt.status import Status, exit_code

EXIT_ANSWERED = 0
EXIT_BAD_INPUT = 2
EXIT_SOLVER_ERROR = Status.SOLVER_ERROR.facts.exit_code  # 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
#: stdout closed early by its reader (``lipopt solve ... | head``): as a shell reports SIGPIPE
EXIT_BROKEN_PIPE = 141

#: the ends of a command without an answer (no status): exit status -> (when, what is left)
NO_ANSWER: dict[int, tuple[str, str]] = {
    EXIT_BAD_INPUT: (
        "bad input, or a solver that cannot be used here (not installed, an option it refuses): "
        "one line on stderr; in Python `LipschitzError`, `SolverError`, `DomainError`, ...",
        "no answer",
    ),
    EXIT_INTERRUPTED: (
        "Ctrl-C (SIGINT): `lipopt solve: interrupted` on stderr, nothing on stdout; in Python "
        "the `KeyboardInterrupt` propagates",
        "no answer; worker processes stopped, no partial file",
    ),
    EXIT_TERMINATED: ("SIGTERM: `lipopt solve: terminated`", "as for Ctrl-C"),
    EXIT_BROKEN_PIPE: (
        "stdout closed by its reader (`lipopt solve ... \\| head -1`)",
        "what was printed before; no traceback",
    ),
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is: every clean-up that runs on Ctrl-C runs (the
    workers stopped, a file being written removed)."""


class _Received:
    """The last of SIGINT/SIGTERM this process received within :func:`signals_as_interrupts`."""

    signal: int | None = None


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _Received.signal = signum
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Within: SIGINT raises KeyboardInterrupt and SIGTERM :class:`Terminated` (the default
    would end the process at once, leaving worker processes and temporary files behind), and
    either is remembered (:func:`interruption`)."""
    _Received.signal = None
    try:
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def interruption(exc: BaseException) -> int | None:
    """The exit status when ``exc`` ended the command because of SIGINT or SIGTERM, else None.
    A library may swallow the KeyboardInterrupt and fail with its own error instead (Pyomo's
    bare ``except:`` in ``ComponentData.index`` then raises ``DeveloperError``): what counts is
    the signal received."""
    if isinstance(exc, Terminated) or _Received.signal == signal.SIGTERM:
        return EXIT_TERMINATED
    if isinstance(exc, KeyboardInterrupt) or _Received.signal == signal.SIGINT:
        return EXIT_INTERRUPTED
    return None


def exit_status(statuses: list[str]) -> int:
    """0 for answers, 3 where any answer ended in a solver error (or a batch line failed): the
    largest exit status of the statuses (:func:`lipopt.status.exit_code`)."""
    return exit_code(statuses)


def statuses_table() -> str:
    """docs/cli.md's table of statuses: every :class:`~lipopt.status.Status` with how the solve
    ended, what its bounds are and its exit status, then the ends without an answer."""
    rows = [
        "| `status` | how the solve ended | what `value` (= `upper`) and `lower` are "
        "| exit status of `lipopt solve` / `certify` |",
        "|---|---|---|---|",
    ]
    for status in Status:
        facts = status.facts
        rows.append(f"| `{status}` | {facts.ended} | {facts.answer} | {facts.exit_code} |")
    rows += [f"| (none) | {when} | {what} | {code} |" for code, (when, what) in NO_ANSWER.items()]
    return "\n".join(rows)


def output_closed() -> int:
    """stdout's reader went away (a pipe into ``head``): nothing more can be printed, so point
    stdout at /dev/null (Python would fail again flushing it at exit) and end quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE
