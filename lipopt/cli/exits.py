"""How a ``lipopt`` command ends: its exit statuses, and SIGTERM handled as Ctrl-C is.

| exit | when |
|------|------|
| 0    | answered: the status is ``optimal``, ``gap_limit``, ``time_limit`` or ``relaxation`` |
| 2    | bad input, or a solver that cannot be used here (not installed, an option refused) |
| 3    | answered with the bounds proven before the solver failed (status ``solver_error``) |
| 130  | interrupted (SIGINT, Ctrl-C): nothing printed on stdout, no partial file |
| 143  | terminated (SIGTERM): as interrupted |

Worker processes are stopped on the way out either way (:class:`lipopt.workers.ForkedWorkers`
closes them; a worker also dies with its parent, :func:`lipopt.workers.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType

EXIT_ANSWERED = 0
EXIT_BAD_INPUT = 2
EXIT_SOLVER_ERROR = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
#: stdout closed early by its reader (``lipopt solve ... | head``): as a shell reports SIGPIPE
EXIT_BROKEN_PIPE = 141


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
    """0 for answers, 3 where any answer ended in a solver error."""
    return EXIT_SOLVER_ERROR if "solver_error" in statuses else EXIT_ANSWERED


def output_closed() -> int:
    """stdout's reader went away (a pipe into ``head``): nothing more can be printed, so point
    stdout at /dev/null (Python would fail again flushing it at exit) and end quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE
