"""Progress of a batch on stderr: a bar redrawn in place on a terminal, a line every
:data:`~lipopt.policy.BATCH_PROGRESS_SECONDS` otherwise (a log file), nothing with ``--quiet``.

``12/30 done (2 before), 2 running, 1 failed, 4.1/min, ETA 4m24s``: the rate counts the
queries finished in this run, so the estimate of time left holds for a resumed batch too.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from lipopt import policy
from lipopt.batch.tasks import FAILED

#: the bar's width in characters on a terminal
BAR_WIDTH = 24


def _duration(seconds: float) -> str:
    """``45s``, ``4m24s``, ``2h05m``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class BatchProgress:
    """Counts of a batch's queries, shown as they change."""

    def __init__(
        self,
        total: int,
        before: int,
        quiet: bool = False,
        stream: TextIO | None = None,
        command: str = "batch",
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.prefix = f"lipopt {command}: "
        self.total, self.before, self.quiet = total, before, quiet
        self.done = self.failed = self.running = 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.last_shown = -float("inf")

    def line(self) -> str:
        """The counts, rate and time left, as one line."""
        elapsed = time.monotonic() - self.start
        finished = self.before + self.done
        text = f"{finished}/{self.total} done"
        if self.before:
            text += f" ({self.before} before)"
        text += f", {self.running} running, {self.failed} failed"
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            text += f", {60 * rate:.1f}/min"
            if finished < self.total:
                text += f", ETA {_duration((self.total - finished) / rate)}"
        return text

    def _bar(self) -> str:
        share = (self.before + self.done) / max(self.total, 1)
        filled = int(round(BAR_WIDTH * share))
        return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "] "

    def update(self, running: int, line: dict[str, Any] | None = None) -> None:
        """Record a finished query's ``line`` (if any) and the number running; show the counts
        when due (a terminal: every change; otherwise every few seconds)."""
        self.running = running
        if line is not None:
            self.done += 1
            self.failed += line.get("status") == FAILED
        now = time.monotonic()
        if self.quiet:
            return
        if self.tty:
            self.stream.write("\r\033[K" + self._bar() + self.line())
            self.stream.flush()
        elif now - self.last_shown >= policy.BATCH_PROGRESS_SECONDS:
            self.last_shown = now
            print(self.prefix + self.line(), file=self.stream, flush=True)

    def end_line(self) -> None:
        """End the bar's line on a terminal (before an interruption or error is printed)."""
        if self.tty and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()

    def finish(self) -> None:
        """The final counts, on a line of their own."""
        if self.quiet:
            return
        if self.tty:
            self.stream.write("\r\033[K")
        print(self.prefix + self.line(), file=self.stream, flush=True)
