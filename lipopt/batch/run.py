"""Run a batch: the queries not yet in the results file, on an executor, each line written as
soon as its query finishes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from lipopt.batch.progress import BatchProgress
from lipopt.batch.store import ResultStore
from lipopt.batch.tasks import FAILED, Task
from lipopt.progress import counted


class Executor(Protocol):
    """Where queries run: :class:`~lipopt.batch.local.LocalPool` or
    :class:`~lipopt.batch.cluster.DaskCluster`."""

    @property
    def running(self) -> int: ...

    def results(self, tasks: Sequence[Task]) -> Iterator[dict[str, Any] | None]: ...


@dataclass
class BatchSummary:
    """What a run did: queries in the batch, found in the file before, run now, and the
    statuses of every line in the file."""

    total: int
    before: int
    run: int
    statuses: Counter = field(default_factory=Counter)

    def text(self, out: str | Path) -> str:
        """``results.jsonl: 30 queries (28 run now, 2 before): 27 optimal, 3 time_limit``."""
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.statuses.items()))
        return (
            f"{out}: {counted(self.total, 'query', 'queries')} ({self.run} run now, "
            f"{self.before} before): {counts or 'none finished'}"
        )


def run_batch(
    tasks: Sequence[Task],
    out: str | Path,
    executor: Executor,
    quiet: bool = False,
    stream: TextIO | None = None,
    command: str = "batch",
) -> BatchSummary:
    """Answer the ``tasks`` without a line in ``out`` (refusing a file that belongs to other
    inputs) and append a line for each as it finishes; ``command`` names the progress lines."""
    with ResultStore(out) as store:
        pending = store.pending(tasks)
        progress = BatchProgress(len(tasks), len(tasks) - len(pending), quiet, stream, command)
        progress.failed = sum(line.get("status") == FAILED for line in store.lines.values())
        if store.dropped_incomplete and not quiet:
            print(
                f"{progress.prefix}{out}: dropped an incomplete last line (a run was killed while "
                "writing it); that query runs again",
                file=progress.stream,
            )
        run = 0
        try:
            for line in executor.results(pending):
                if line is not None:
                    store.append(line)
                    run += 1
                progress.update(executor.running, line)
        except BaseException:
            progress.end_line()  # what is printed next (interrupted, an error) gets its own line
            raise
        progress.finish()
        statuses = Counter(str(line.get("status")) for line in store.lines.values())
        return BatchSummary(len(tasks), len(tasks) - len(pending), run, statuses)
