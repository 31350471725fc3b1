"""Independent solves on several cores: forked worker processes.

Two callers run solves side by side. The ℓ1 input norm's decomposition
(:mod:`lipopt.strategies.decompose`) solves one small MIP per candidate ``±∂_j f``; the race
(:mod:`lipopt.parallel.race`) solves the forward and the backward model of one problem at once. Each
worker here is a ``fork`` of the process that built the Pyomo model, so it owns a copy of
everything without rebuilding or pickling it; tasks and answers (small, picklable) travel over
pipes. A task's error comes back as an answer (:meth:`ForkedWorkers.next_outcome`) or is
re-raised (:meth:`ForkedWorkers.next_result`): the race keeps going past one racer's error, the
decomposition stops. :class:`InProcess` runs every task at once in this process behind the
same ``submit`` / ``next_result`` interface, so that the decomposition has one loop for both."""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from lipopt.solvers import SolverError, SolverFailure
from lipopt.solvers.registry import FORKABLE, capabilities

#: solvers that may solve in a forked worker (those whose adapter declares ``FORKABLE``: they
#: run inside the Python process, so a terminated worker stops its solve)
FORK_SOLVERS = FORKABLE

#: seconds to wait for Pyomo's output-capture lock before stopping a worker (see
#: :func:`_terminate`; the lock is held only while a solve's output capture starts or ends)
CAPTURE_LOCK_WAIT = 10.0

#: Linux's prctl option: the signal a process receives when its parent dies
PR_SET_PDEATHSIG = 1

#: native thread pools (OpenBLAS, OpenMP) of this process held to one thread while it has
#: forked workers: how many :class:`ForkedWorkers` hold them, and the limiter to restore
_HELD: list[Any] = []


class WorkerLost(SolverFailure):
    """A worker process ended (killed, out of memory) before it answered its task."""


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def may_fork() -> bool:
    """This process may fork children (POSIX; not a daemonic worker such as a
    ``multiprocessing.Pool``'s or a racer)."""
    return "fork" in mp.get_all_start_methods() and not mp.current_process().daemon


def can_fork(solver: str) -> bool:
    """An in-process solver, two cores or more, and a process that may fork children."""
    return capabilities(solver).forkable and available_cores() >= 2 and may_fork()


def process_count(solver: str, workers: int | None, tasks: int, cores: int, fork: bool) -> int:
    """Processes for ``tasks`` independent solves on ``cores`` cores: ``workers`` (None: every
    core), never more than the tasks or the cores, and 1 (no process) where ``solver`` cannot
    be forked (a subprocess solver, one core, or ``fork`` False)."""
    if workers is not None and workers <= 1:
        return 1
    if not (capabilities(solver).forkable and cores >= 2 and fork):
        return 1
    limit = cores if workers is None else min(workers, cores)
    return max(1, min(limit, tasks))


def worker_count(solver: str, workers: int | None, tasks: int) -> int:
    """:func:`process_count` on this process's cores and fork permission."""
    return process_count(solver, workers, tasks, available_cores(), may_fork())


def die_with_parent(parent: int) -> None:
    """In a worker: SIGTERM ends it at once (the parent stops workers so, and may itself turn
    SIGTERM into an exception, :mod:`lipopt.cli.exits`), and on Linux the kernel kills it when
    its parent (process ``parent``) dies, even by SIGKILL, so no worker outlives the command."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # no prctl here: ForkedWorkers.close() still stops it
            pass
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)


def one_native_thread() -> Any:
    """Limit this process's native thread pools (numpy's OpenBLAS, OpenMP) to one thread and
    return the limiter (its ``restore_original_limits()`` undoes it).

    Workers and their parent share the cores one process each; a BLAS pool of one thread per
    core in every process oversubscribes them, and OpenBLAS's threads then spin waiting for
    each other: two racers of the branch and bound on the 2-core machine expanded 432 and
    410 parts in 20 s with two BLAS threads each, 1762 and 1514 with one
    (docs/performance.md, "Native threads")."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _hold_native_threads() -> None:
    """This process starts forked workers: its own pools go to one thread until the last
    :class:`ForkedWorkers` closes (:func:`_release_native_threads`)."""
    _HELD.append(one_native_thread() if not _HELD else None)


def _release_native_threads() -> None:
    if _HELD:
        limiter = _HELD.pop()
        if limiter is not None:
            limiter.restore_original_limits()


def _serve(conn: Connection, handle: Callable[[Any], Any], parent: int) -> None:
    """A worker's loop: answer each task with ``("ok", handle(task))`` or ``("error", err)``
    until it receives None. An error that cannot cross the pipe is sent as a
    :class:`SolverError` naming it. The worker's native thread pools run one thread
    (:func:`one_native_thread`)."""
    die_with_parent(parent)
    _HELD.clear()  # the parent's holds are not this process's
    one_native_thread()
    try:
        while True:
            task = conn.recv()
            if task is None:
                break
            try:
                answer: tuple[str, Any] = ("ok", handle(task))
            except BaseException as err:  # noqa: BLE001 - reported to the parent, which raises
                answer = ("error", err)
            try:
                conn.send(answer)
            except Exception as err:  # noqa: BLE001 - e.g. an answer that does not pickle
                what = answer[1] if answer[0] == "error" else err
                conn.send(("error", SolverError(f"worker: {type(what).__name__}: {what}")))
    except (EOFError, KeyboardInterrupt):  # the parent went away or was interrupted
        pass
    finally:
        conn.close()


class InProcess:
    """Runs each task when it is submitted, in this process."""

    def __init__(self, handle: Callable[[Any], Any]) -> None:
        self.handle = handle
        self.done: list[tuple[Any, Any]] = []

    def idle(self) -> bool:
        return not self.done

    def busy(self) -> bool:
        return bool(self.done)

    def pending(self) -> list[Any]:
        return []

    def submit(self, task: Any, tag: Any) -> None:
        self.done.append((tag, self.handle(task)))

    def next_result(self, timeout: float | None = None) -> tuple[Any, Any] | None:
        return self.done.pop(0)

    def close(self) -> None:
        self.done.clear()


def shared_floats(count: int) -> Any:
    """``count`` floats (zeros) in shared memory that this process and the processes it forks
    afterwards all read and write, without a lock: each float is one aligned 8-byte store,
    atomic on the platforms that fork."""
    return mp.get_context("fork").RawArray("d", count)


class ForkedWorkers:
    """``count`` forked processes, each calling ``handle`` (with everything it closes over
    inherited from this process) on the tasks sent to it."""

    def __init__(self, count: int, handle: Callable[[Any], Any]) -> None:
        self.handle = handle
        self.started: list[tuple[Connection, Any]] = []  # every worker, until close()
        self.free: list[tuple[Connection, Any]] = []
        self.running: dict[Connection, tuple[Any, Any]] = {}
        self.holding = False
        try:
            _hold_native_threads()
            self.holding = True
            for _ in range(count):
                self.add_worker()
        except BaseException:
            self.close()
            raise

    def add_worker(self) -> None:
        """Fork one more worker (e.g. in place of one that died), free for a task."""
        ctx = mp.get_context("fork")
        here, there = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_serve, args=(there, self.handle, os.getpid()), daemon=True)
        proc.start()
        there.close()
        self.started.append((here, proc))
        self.free.append((here, proc))

    def idle(self) -> bool:
        return bool(self.free)

    def busy(self) -> bool:
        return bool(self.running)

    def pending(self) -> list[Any]:
        """Tags of the tasks still running."""
        return [tag for tag, _proc in self.running.values()]

    def submit(self, task: Any, tag: Any) -> None:
        conn, proc = self.free.pop()
        try:
            conn.send(task)
        except (BrokenPipeError, OSError):
            raise SolverError("a worker process ended before its task") from None
        self.running[conn] = (tag, proc)

    def next_outcome(self, timeout: float | None = None) -> tuple[Any, str, Any] | None:
        """``(tag, "ok", answer)`` or ``(tag, "error", err)`` of the next task to finish, or None
        if none finishes within ``timeout`` seconds. A worker that dies without answering gives
        a :class:`SolverError` and is not given another task."""
        ready = wait(list(self.running), timeout=timeout)
        if not ready:
            return None
        conn: Connection = ready[0]  # type: ignore[assignment]
        tag, proc = self.running.pop(conn)
        try:
            kind, payload = conn.recv()
        except EOFError:
            died = WorkerLost(f"the worker process for task {tag!r} ended without an answer")
            return tag, "error", died
        self.free.append((conn, proc))
        return tag, kind, payload

    def next_result(self, timeout: float | None = None) -> tuple[Any, Any] | None:
        """The tag and answer of the next task to finish, or None if none finishes within
        ``timeout`` seconds; re-raises a task's error."""
        outcome = self.next_outcome(timeout)
        if outcome is None:
            return None
        tag, kind, payload = outcome
        if kind == "error":
            raise payload
        return tag, payload

    def close(self) -> None:
        """Stop every worker: idle ones by message, then any still alive (busy, stuck or
        interrupted) by signal."""
        for conn, _proc in self.free:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for conn, proc in self.started:
            proc.join(timeout=0 if conn in self.running else 5)
            if proc.is_alive():
                _terminate(proc)
            conn.close()
        self.started, self.free, self.running = [], [], {}
        if self.holding:
            self.holding = False
            _release_native_threads()


def _terminate(proc: Any) -> None:
    """Stop a worker by signal without leaving Pyomo's output-capture lock held.

    Pyomo guards the redirection of the standard streams (around every HiGHS solve) with one
    ``multiprocessing.Lock`` that all forked processes share. A worker terminated while holding
    it would leave this process and every other worker waiting on it (for 200 s, then failing
    with "Deadlock starting capture_output"). So the lock is taken here first: the worker is
    then outside that short section, or blocked waiting for it."""
    from pyomo.common import dependencies

    lock = dependencies.capture_output_lock
    held = lock.acquire(timeout=CAPTURE_LOCK_WAIT)
    try:
        proc.terminate()
        proc.join(timeout=5)
    finally:
        if held:
            lock.release()


__all__ = [
    "FORK_SOLVERS",
    "ForkedWorkers",
    "InProcess",
    "WorkerLost",
    "can_fork",
    "one_native_thread",
    "shared_floats",
    "worker_count",
]
