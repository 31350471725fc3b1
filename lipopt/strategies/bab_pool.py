"""Pools that solve the activation branch and bound's part MIPs side by side
(:class:`lipopt.search.bab_pool.PartPool`): forked processes of this machine
(:class:`LocalParts`, ``workers``) or the workers of a Dask cluster (:class:`DaskParts`,
``scheduler``, through :mod:`lipopt.parallel.cluster` as ``lipopt batch --scheduler``).

Every part is answered by :func:`solve_remote`: the MIP of
:func:`lipopt.strategies.bab_parts.solve_node` on the node's bounds, under the cutoff it was
sent with, within the seconds left to the query's deadline. It proves the same things wherever
it runs (:mod:`lipopt.strategies.bab_parts`): a bound over ``D_S`` and a value attained at a
point that is checked again in numpy, on that worker. A worker that dies under a part gives
:data:`~lipopt.search.bab_pool.PartLost.LOST` (a forked one is replaced at once; Dask's scheduler
first runs the part again on another worker itself, up to its ``allowed-failures``), and the
search sends the part again or keeps its node's bound (:func:`~lipopt.search.bab_pool.run_pooled`).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lipopt.parallel.cluster import connect, held
from lipopt.parallel.workers import ForkedWorkers, WorkerLost, available_cores, worker_count
from lipopt.query import Query
from lipopt.search.bab_node import ActivationBabOptions, BabNode, PartAnswer
from lipopt.search.bab_pool import Expanded, PartLost, PartOutcome
from lipopt.search.bab_slice import SliceWorker
from lipopt.strategies.bab_parts import solve_node

#: Dask's client log, silenced from a lost scheduler on until the pool closes
CLIENT_LOG = logging.getLogger("distributed.client")

#: seconds between two questions to the Dask scheduler about its workers' threads
THREADS_SEEN_SECONDS = 1.0


def solve_remote(
    query: Query, node: BabNode, lower: float, left: float | None, solver: str, refinements: int
) -> PartAnswer | None:
    """One part on a worker: :func:`~lipopt.strategies.bab_parts.solve_node` under the cutoff
    ``lower`` within ``left`` seconds (None: no limit)."""
    return solve_node(query, query.split_root(), solver, node, (lower, left), refinements)


@dataclass(frozen=True)
class PartSettings:
    """How every part is solved, wherever: the MIP solver, the refinements of its bounds, the
    query's deadline (``time.perf_counter()``; None: none), and where progress lines go; and
    the seconds of a slice of the search below a node (0: the workers take parts only)."""

    solver: str
    refinements: int
    deadline: float | None
    say: Callable[[str], None]
    slice_seconds: float = 0.0

    def solve_here(self, query: Query, node: BabNode, lower: float) -> PartAnswer | None:
        """:func:`solve_remote` in this process, within what is left of the deadline."""
        return solve_remote(query, node, lower, _left(self.deadline), self.solver, self.refinements)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.perf_counter()


class LocalParts:
    """``count`` forked processes, each a copy of this one (the query and the root's bounds
    inherited, not sent); a part is its node and cutoff over a pipe."""

    def __init__(self, count: int, query: Query, settings: PartSettings) -> None:
        query.split_root()  # once, here: the workers inherit it
        self.count = count
        self.workers = ForkedWorkers(count, self.handler(query, settings))

    def handler(self, query: Query, settings: PartSettings) -> Callable[[Any], Any]:
        """What each worker calls on a task: a part's MIP."""

        def handle(task: tuple[BabNode, float]) -> PartAnswer | None:
            node, lower = task
            return settings.solve_here(query, node, lower)

        return handle

    def free(self) -> int:
        return len(self.workers.free)

    def submit(self, tag: int, node: BabNode, lower: float) -> None:
        self.workers.submit((node, lower), tag)

    def answers(self, timeout: float) -> list[tuple[int, PartOutcome]]:
        """The parts that finished (the first waited for up to ``timeout`` seconds); a dead
        worker's part is LOST and a new worker forked in its place; a part's error is raised."""
        out: list[tuple[int, PartOutcome]] = []
        wait: float = timeout
        while self.workers.busy():
            outcome = self.workers.next_outcome(wait)
            if outcome is None:
                break
            tag, kind, payload = outcome
            if kind == "ok":
                out.append((tag, payload))
            elif isinstance(payload, WorkerLost):
                self.workers.add_worker()
                out.append((tag, PartLost.LOST))
            else:
                raise payload
            wait = 0.0
        return out

    def close(self) -> None:
        self.workers.close()


@dataclass(frozen=True)
class SliceTask:
    """A slice of the search below ``node`` from the ``cutoffs`` (the best value attained, the
    best bound left open), with its options."""

    node: BabNode
    cutoffs: tuple[float, float]
    options: ActivationBabOptions


class LocalSlices(LocalParts):
    """:class:`LocalParts` whose workers also run slices of the search below a node
    (:class:`~lipopt.search.bab_pool.SlicePool`): each keeps its own
    :class:`~lipopt.search.bab_slice.SliceWorker` from slice to slice."""

    def handler(self, query: Query, settings: PartSettings) -> Callable[[Any], Any]:
        """What each worker calls on a task: a slice, or a part's MIP."""
        slices = SliceWorker(query)  # each forked worker has its own copy
        part = super().handler(query, settings)

        def handle(task: tuple[BabNode, float] | SliceTask) -> PartAnswer | Expanded | None:
            if not isinstance(task, SliceTask):
                return part(task)  # type: ignore[no-any-return]
            until = time.perf_counter() + settings.slice_seconds
            if settings.deadline is not None:
                until = min(until, settings.deadline)
            return slices.run(task.node, task.cutoffs, task.options, until)

        return handle

    def expand(
        self, tag: int, node: BabNode, cutoffs: tuple[float, float], options: ActivationBabOptions
    ) -> None:
        self.workers.submit(SliceTask(node, cutoffs, options), tag)


class DaskParts:
    """The parts as Dask tasks on the cluster of the scheduler at ``address``; the query is a
    task of its own (computed again if the worker holding it dies), sent to each worker once,
    with the root's bounds it keeps (:meth:`~lipopt.query.Query.split_root`).

    A lost scheduler (the client no longer running after a call to it failed) ends the
    cluster's part of the search, not the search: the parts in flight come back LOST, and every
    part from then on is solved in this process, in turn, as without a pool (``say`` tells)."""

    def __init__(self, address: str, query: Query, settings: PartSettings) -> None:
        self.address, self.local, self.settings = address, query, settings
        self.client = connect(address)
        with warnings.catch_warnings():  # a large network is sent once: Dask's size warning
            warnings.simplefilter("ignore")
            self.query = self.client.submit(held, query, pure=False)
        self.futures: dict[Any, int] = {}
        self.threads, self.threads_seen = 0, -float("inf")
        self.lost, self.log_level = False, logging.NOTSET
        self.here: list[tuple[int, PartOutcome]] = []  # answered or lost, not yet given back

    def note(self) -> str:
        """What the workers' threads call for (batch's wording), or ""."""
        threads = self.client.nthreads()
        if not threads:
            return f"; the scheduler at {self.address} has no workers yet; parts wait for one"
        if any(n > 1 for n in threads.values()):
            return "; some Dask workers run several threads: start them with --nthreads 1"
        return ""

    def free(self) -> int:
        """The cluster's worker threads (at least 1) less the parts in flight; 1 once the
        scheduler is lost (this process)."""
        now = time.monotonic()
        if not self.lost and now - self.threads_seen >= THREADS_SEEN_SECONDS:
            self.threads_seen = now
            try:
                self.threads = sum(self.client.nthreads().values())
            except Exception as error:  # noqa: BLE001 - a lost scheduler, or a real error
                self._failed(error)
        if self.lost:
            return 1
        return max(self.threads, 1) - len(self.futures)

    def submit(self, tag: int, node: BabNode, lower: float) -> None:
        if not self.lost:
            try:
                future = self.client.submit(
                    solve_remote, self.query, node, lower, _left(self.settings.deadline),
                    self.settings.solver, self.settings.refinements, pure=False,
                )  # fmt: skip
            except Exception as error:  # noqa: BLE001 - a lost scheduler, or a real error
                self._failed(error)
            else:
                self.futures[future] = tag
                return
        self.here.append((tag, self.settings.solve_here(self.local, node, lower)))

    def answers(self, timeout: float) -> list[tuple[int, PartOutcome]]:
        """The parts that finished (the first waited for up to ``timeout`` seconds): a worker
        Dask gave up on (``KilledWorker``) or a part it dropped is LOST; a part's error is
        raised. Once the scheduler is lost: the parts solved here, and those it held, LOST."""
        from distributed import wait

        if self.futures and not any(future.done() for future in self.futures) and timeout > 0:
            try:
                wait(list(self.futures), timeout=timeout, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            except Exception as error:  # noqa: BLE001 - a lost scheduler, or a real error
                self._failed(error)
        if self.futures and self.client.status != "running":
            self._failed(None)
        done = [future for future in self.futures if future.done()]
        found = [(self.futures.pop(future), _outcome(future)) for future in done]
        found, self.here = [*self.here, *found], []
        return found

    def _failed(self, error: Exception | None) -> None:
        """A call to the cluster failed (``error``) or its client stopped running: where the
        client is not running, the scheduler is lost (every part in flight LOST, the rest
        solved here); otherwise ``error`` is raised."""
        if self.client.status == "running" and error is not None:
            raise error
        if not self.lost:  # the client's reconnection attempts would log tracebacks
            self.lost, self.log_level = True, CLIENT_LOG.level
            CLIENT_LOG.setLevel(logging.CRITICAL)
            self.settings.say(
                f"activation branch and bound: lost the Dask scheduler at {self.address}; "
                "the parts left are solved in this process"
            )
        self.here.extend((tag, PartLost.LOST) for tag in self.futures.values())
        self.futures.clear()

    def close(self) -> None:
        """Cancel the parts still in flight and the query, and close the client (quietly if
        the scheduler is gone); the client's log gets its level back."""
        try:
            self.client.cancel([*self.futures, self.query], force=True)
            self.client.close(timeout=5)
        except Exception:  # noqa: BLE001 - nothing more can be done for a lost scheduler
            pass
        finally:
            if self.lost:
                CLIENT_LOG.setLevel(self.log_level)


def _outcome(future: Any) -> PartOutcome:
    """A finished Dask part's outcome (see :meth:`DaskParts.answers`)."""
    if future.status == "finished":
        answer: PartAnswer | None = future.result()
        return answer
    if future.status == "error":
        error = future.exception()
        if type(error).__name__ == "KilledWorker":
            return PartLost.LOST
        raise error
    return PartLost.LOST  # cancelled: Dask dropped it


def open_pool(
    query: Query, settings: PartSettings, workers: int | None, scheduler: str | None
) -> LocalParts | DaskParts | None:
    """The pool for the parts of ``query``: the Dask cluster of ``scheduler``, else
    ``workers`` forked processes (None: one per core) where the solver can be forked and two
    or more are allowed (:func:`~lipopt.parallel.workers.worker_count`); None: none, the
    parts are solved in this process in turn."""
    if scheduler is not None:
        return DaskParts(scheduler, query, settings)
    count = worker_count(settings.solver, workers, available_cores())
    if count <= 1:
        return None
    if settings.slice_seconds > 0:
        return LocalSlices(count, query, settings)
    return LocalParts(count, query, settings)


__all__ = ["DaskParts", "LocalParts", "LocalSlices", "PartSettings", "open_pool", "solve_remote"]
