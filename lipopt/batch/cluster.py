"""Queries on a Dask distributed cluster (``lipopt batch --scheduler ADDRESS``).

Each query is one Dask task running :func:`lipopt.batch.execute.run_safely`; the networks are
loaded here once and copied to every worker, so workers need lipopt installed but not the
files. Start each
worker with ``--nthreads 1`` (one query per process, one core each). When a worker dies, Dask
runs its queries again on the others, up to its ``distributed.scheduler.allowed-failures``
setting; past it the query is recorded as ``failed`` (never a wrong or missing line).
Dask is the ``cluster`` extra: ``pip install 'lipopt[cluster]'``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from lipopt import policy
from lipopt.batch.execute import failed_line, run_safely
from lipopt.batch.tasks import Task
from lipopt.io.onnx import load_onnx


class ClusterError(ValueError):
    """Dask missing, or its scheduler unreachable (one line)."""


def _client(address: str) -> Any:
    """A client of the scheduler at ``address``, or a one-line error."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError(
            "--scheduler needs Dask distributed: pip install 'lipopt[cluster]'"
        ) from None
    try:
        return Client(address, timeout=policy.CLUSTER_CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


class DaskCluster:
    """The queries of a batch as Dask tasks; :meth:`results` yields their lines as they
    finish, and None about once a second while none does."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.client = _client(address)
        self.pending = 0

    @property
    def running(self) -> int:
        """Queries being answered now (at most one per worker thread)."""
        threads = sum(self.client.nthreads().values())
        return min(self.pending, threads)

    def note(self) -> str | None:
        """A warning worth printing before the run, e.g. workers with several threads."""
        threads = self.client.nthreads()
        if not threads:
            return f"the scheduler at {self.address} has no workers yet; queries wait for one"
        if any(n > 1 for n in threads.values()):
            return "some Dask workers run several threads: start them with --nthreads 1"
        return None

    def results(self, tasks: Sequence[Task]) -> Iterator[dict[str, Any] | None]:
        """Submit every task, then yield the lines in the order they finish; on the way out
        (finished, interrupted) what is still queued is cancelled and the client closed."""
        from distributed import as_completed

        networks = {  # a copy on every worker: one that dies takes no network with it
            model: self.client.scatter(load_onnx(model), broadcast=True)
            for model in {task.model for task in tasks}
        }
        futures = {
            self.client.submit(run_safely, task, networks[task.model], pure=False): task
            for task in tasks
        }
        self.pending = len(futures)
        done = as_completed(list(futures))
        try:
            while self.pending:
                batch = done.next_batch(block=False) if done.has_ready() else []
                if not batch:
                    time.sleep(0.2)
                    yield None
                    continue
                for future in batch:
                    self.pending -= 1
                    yield self._line(future, futures[future])
        finally:
            self.client.cancel(list(futures))
            self.client.close()

    @staticmethod
    def _line(future: Any, task: Task) -> dict[str, Any]:
        """A finished future's line; a task Dask gave up on (its workers kept dying) is
        ``failed``."""
        if future.status == "finished":
            return future.result()
        error = future.exception() if future.status == "error" else None
        why = f"{type(error).__name__}: {error}" if error else f"Dask {future.status} it"
        return failed_line(task, why, 1)  # Dask's own reruns are not seen from here
