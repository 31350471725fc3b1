"""Queries on a Dask distributed cluster (``lipopt batch --scheduler ADDRESS``).

Each query is one Dask task running :func:`lipopt.batch.isolated.run_in_child` (the query in a
child process of the worker, killed when the task is cancelled); the networks are loaded here
once and sent as Dask tasks of their own, which the scheduler computes again when the worker
holding one dies, so workers need lipopt installed but not the files. Start each worker with
``--nthreads 1`` (one query per process, one core each). When a worker dies, Dask runs its
queries again on the others, up to its ``distributed.scheduler.allowed-failures`` setting; past
it the query is recorded as ``failed`` (never a wrong or missing line). A query Dask drops
(cancelled without being asked) is submitted again, up to
:data:`~lipopt.policy.BATCH_ATTEMPTS` times. On the way out (Ctrl-C) every query is cancelled,
the running ones too: their workers kill their child processes and are free at once.
Dask is the ``cluster`` extra: ``pip install 'lipopt[cluster]'``; the client and its one-line
errors are :mod:`lipopt.parallel.cluster`'s, shared with ``lipopt solve --bab --scheduler``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from lipopt import policy
from lipopt.batch.execute import failed_line, network_of
from lipopt.batch.isolated import run_in_child
from lipopt.batch.tasks import Task
from lipopt.network import Network
from lipopt.parallel.cluster import ClusterError
from lipopt.parallel.cluster import connect as _client


def _network(network: Network) -> Network:
    """A Dask task whose result is ``network``: the scheduler keeps the network in the task, so
    it computes it again when the worker holding it dies (scattered data would be lost)."""
    return network


class DaskCluster:
    """The queries of a batch as Dask tasks; :meth:`results` yields their lines as they
    finish, and None about once a second while none does."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.client = _client(address)
        self.pending = 0
        self.threads = 0
        self._threads_seen = -float("inf")
        self._networks: dict[str, Any] = {}
        self.tries: dict[str, int] = {}

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
        (finished, interrupted) every query is cancelled, running ones too, and the client
        closed."""
        from distributed import as_completed

        first = {task.model: task for task in tasks}  # one network task per network file
        with warnings.catch_warnings():  # a large network is sent once: Dask's size warning
            warnings.simplefilter("ignore")
            self._networks = {
                model: self.client.submit(_network, network_of(task), pure=False)
                for model, task in first.items()
            }
        futures = {self._submit(task): task for task in tasks}
        self.pending = len(futures)
        done = as_completed(list(futures))
        try:
            while self.pending:
                try:
                    batch = done.next_batch(block=False) if done.has_ready() else []
                    lines = [self._line(future, futures, done) for future in batch]
                except ClusterError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a lost scheduler, in any of its forms
                    raise self._lost(exc) from None
                if not batch:
                    time.sleep(0.2)
                    yield None
                for line in lines:
                    if line is not None:
                        self.pending -= 1
                        yield line
        finally:
            self._close([*futures, *self._networks.values()])

    def _submit(self, task: Task) -> Any:
        """One query as a Dask task; a child process that dies under it is retried by Dask."""
        self.tries[task.id] = self.tries.get(task.id, 0) + 1
        network = self._networks[task.model]
        retries = policy.BATCH_ATTEMPTS - 1
        attempt = self.tries[task.id]
        return self.client.submit(run_in_child, task, network, attempt, pure=False, retries=retries)

    def _close(self, futures: list[Any]) -> None:
        """Cancel every query, running ones too (their workers kill the child processes), and
        close the client, quietly if the scheduler is gone."""
        try:
            self.client.cancel(futures, force=True)
            self.client.close(timeout=5)
        except Exception:  # noqa: BLE001 - nothing more can be done for a lost scheduler
            pass

    def _line(self, future: Any, futures: dict[Any, Task], done: Any) -> dict[str, Any] | None:
        """A finished future's line; a task Dask gave up on (its workers kept dying:
        ``KilledWorker``) is ``failed``. A query Dask dropped (cancelled, e.g. with a lost
        worker) is submitted again (None: no line yet), up to the attempts of a query."""
        task = futures[future]
        if future.status == "finished":
            line = future.result()
            if line is not None:
                return line
        elif future.status == "error":
            error = future.exception()
            return failed_line(task, f"{type(error).__name__}: {error}", self.tries[task.id])
        if self.tries[task.id] >= policy.BATCH_ATTEMPTS:
            why = f"the Dask scheduler dropped it {self.tries[task.id]} times ({future.status})"
            return failed_line(task, why, self.tries[task.id])
        again = self._submit(task)
        futures[again] = task
        done.add(again)
        return None
