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
from lipopt.batch.execute import failed_line, network_of, run_safely
from lipopt.batch.tasks import Task


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
    except Exception as exc:  # noqa: BLE001 - distributed raises many kinds; each is one line
        hint = " (tls:// needs Dask's TLS settings)" if address.startswith("tls://") else ""
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {why}{hint}") from None


class DaskCluster:
    """The queries of a batch as Dask tasks; :meth:`results` yields their lines as they
    finish, and None about once a second while none does."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.client = _client(address)
        self.pending = 0
        self.threads = 0
        self._threads_seen = -float("inf")

    @property
    def running(self) -> int:
        """Queries being answered now (at most one per worker thread). The workers' threads
        are asked of the scheduler at most once a second: progress asks five times a second,
        and each question is a round trip."""
        now = time.monotonic()
        if now - self._threads_seen >= 1.0:
            self._threads_seen = now
            try:
                self.threads = sum(self.client.nthreads().values())
            except Exception:  # noqa: BLE001 - the loop in results() reports a lost scheduler
                pass
        return min(self.pending, self.threads)

    def _lost(self, exc: BaseException) -> ClusterError:
        """The one-line error of a scheduler lost mid-run."""
        return ClusterError(
            f"lost the Dask scheduler at {self.address} ({type(exc).__name__}); the lines "
            "written so far are kept: rerun the command to go on"
        )

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

        first = {task.model: task for task in tasks}  # one task per network file
        networks = {  # a copy on every worker: one that dies takes no network with it
            model: self.client.scatter(network_of(task), broadcast=True)
            for model, task in first.items()
        }
        futures = {
            self.client.submit(run_safely, task, networks[task.model], pure=False): task
            for task in tasks
        }
        self.pending = len(futures)
        done = as_completed(list(futures))
        try:
            while self.pending:
                try:
                    batch = done.next_batch(block=False) if done.has_ready() else []
                    lines = [self._line(future, futures[future]) for future in batch]
                except ClusterError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a lost scheduler, in any of its forms
                    raise self._lost(exc) from None
                if not batch:
                    time.sleep(0.2)
                    yield None
                for line in lines:
                    self.pending -= 1
                    yield line
        finally:
            self._close(list(futures))

    def _close(self, futures: list[Any]) -> None:
        """Cancel what is still queued and close the client, quietly if the scheduler is gone."""
        try:
            self.client.cancel(futures)
            self.client.close(timeout=5)
        except Exception:  # noqa: BLE001 - nothing more can be done for a lost scheduler
            pass

    def _line(self, future: Any, task: Task) -> dict[str, Any]:
        """A finished future's line; a task Dask gave up on (its workers kept dying:
        ``KilledWorker``) is ``failed``. A future cancelled or lost with the scheduler is no
        answer at all: no line, the run stops (a rerun runs that query again)."""
        if future.status == "finished":
            return future.result()
        if future.status != "error":
            raise ClusterError(
                f"the Dask scheduler at {self.address} dropped the query {task.id!r} "
                f"({future.status}); the lines written so far are kept: rerun to go on"
            )
        error = future.exception()
        return failed_line(task, f"{type(error).__name__}: {error}", 1)
