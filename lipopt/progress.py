"""Progress messages: the silent sink, and a heartbeat during long blocking steps.

A MIP solve or a race can run for minutes without a message of its own (the solvers' logs
appear only with ``verbose``). :func:`heartbeat` reports the elapsed time every
:data:`HEARTBEAT_SECONDS` from a daemon thread while the step runs, so a user watching the
progress messages knows the tool is still at work and how much of the time limit is gone.
HiGHS releases the GIL while it solves, and a race's parent process only waits on pipes, so the
thread gets to run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Say = Callable[[str], None]

#: seconds between two heartbeat messages
HEARTBEAT_SECONDS = 30.0


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``"1 region"``, ``"3 regions"``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def example_c(outputs: int) -> str:
    """An example ``--c`` for a network of ``outputs`` outputs: ``1,-1`` then zeros (the
    difference of the first two outputs)."""
    return ",".join(["1", "-1", *["0"] * (outputs - 2)]) if outputs >= 2 else "1"


def silent(_message: str) -> None:
    """No progress messages (no progress callback given, or a forked worker whose lines would
    interleave with the parent's)."""


@contextmanager
def heartbeat(
    say: Say, what: str, limit: float | None, every: float | None = None
) -> Iterator[None]:
    """While the block runs, ``say(f"{what}: {elapsed} s")`` every ``every`` seconds (default
    :data:`HEARTBEAT_SECONDS`), with ``of {limit} s`` when there is a time limit. Nothing (no
    thread) when ``say`` is :func:`silent`."""
    if say is silent:
        yield
        return
    interval = HEARTBEAT_SECONDS if every is None else every
    start = time.perf_counter()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(interval):
            elapsed = time.perf_counter() - start
            of = "" if limit is None else f" of {limit:.0f} s"
            say(f"{what}: {elapsed:.0f} s{of}")

    thread = threading.Thread(target=beat, name="lipopt-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


__all__ = ["HEARTBEAT_SECONDS", "Say", "heartbeat", "silent"]
