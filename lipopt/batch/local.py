"""The local pool: queries answered side by side by worker processes on this machine.

Each worker is a fresh (``spawn``) Python process that answers one query at a time, in one
process and one solver thread, so ``jobs`` workers use ``jobs`` cores. Fresh rather than forked:
a forked worker would share the parent's locks (Pyomo's output-capture lock among them), and one
killed while holding such a lock would stall the others. A worker ignores Ctrl-C (the parent
stops it) and dies with the parent, even when the parent is killed. A worker that dies under a
query (killed, out of memory) is replaced, and the query is started again, up to
:data:`~lipopt.policy.BATCH_ATTEMPTS` times in all, then recorded as ``failed``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from lipopt import policy
from lipopt.batch.execute import failed_line, run_safely
from lipopt.batch.tasks import Task
from lipopt.parallel.workers import _serve


def _answer(request: tuple[Task, int]) -> dict[str, Any]:
    """A worker's handler: the line of ``(task, attempt)``."""
    task, attempt = request
    return run_safely(task, None, attempt)


def _own_output_lock() -> None:
    """Pyomo guards its output capture with a process-shared lock, a named semaphore that
    multiprocessing's resource tracker (shared with the parent) reports as leaked when a
    worker is killed mid-query. A worker never forks and solves on one thread, so a thread
    lock does; the shared one is released (and unregistered) now. SciPy's extras are deferred
    first, as a solve's loading does (else Pyomo's import here loads them: about 1 s)."""
    from lipopt.lazy import defer_scipy_extras

    defer_scipy_extras()
    from pyomo.common import dependencies

    dependencies.multiprocessing.Lock  # noqa: B018 - resolves Pyomo's deferred import first
    dependencies.capture_output_lock = threading.Lock()


def _work(conn: Connection, parent: int, scratch: str) -> None:
    """A worker's life: Ctrl-C is the parent's to handle; temporary files (a solver's model and
    solution files) go to the pool's ``scratch`` folder, removed with the pool even when the
    worker is killed mid-solve; answer tasks until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch
    _own_output_lock()
    _serve(conn, _answer, parent)


@dataclass
class _Slot:
    """One worker process, its end of the pipe, and the task it is answering (or None)."""

    conn: Connection
    process: Any
    task: Task | None = None


class LocalPool:
    """``jobs`` worker processes; :meth:`results` yields the lines of the tasks as they finish,
    and None about once a second while none does (for progress)."""

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {jobs}")
        self.jobs = jobs
        self.slots: list[_Slot] = []
        self.attempts: dict[str, int] = {}
        self.scratch = ""

    @property
    def running(self) -> int:
        """Queries being answered now."""
        return sum(slot.task is not None for slot in self.slots)

    def _start(self) -> _Slot:
        """A fresh worker process."""
        ctx = mp.get_context("spawn")
        here, there = ctx.Pipe(duplex=True)
        process = ctx.Process(target=_work, args=(there, os.getpid(), self.scratch), daemon=True)
        process.start()
        there.close()
        return _Slot(here, process)

    def results(self, tasks: Sequence[Task]) -> Iterator[dict[str, Any] | None]:
        """Answer ``tasks``; the workers are stopped on the way out, however it is left."""
        queue = deque(tasks)
        self.scratch = tempfile.mkdtemp(prefix="lipopt-batch-")
        try:
            self.slots = [self._start() for _ in range(min(self.jobs, len(queue)))]
            while queue or self.running:
                self._assign(queue)
                ready = wait([s.conn for s in self.slots if s.task is not None], timeout=1.0)
                if not ready:
                    yield None
                for conn in ready:
                    line = self._collect(next(s for s in self.slots if s.conn is conn), queue)
                    if line is not None:
                        yield line
        finally:
            self.close()

    def _assign(self, queue: deque[Task]) -> None:
        """Give each idle worker the next task; an idle worker found dead (killed between
        tasks) is replaced first, and the task counts no attempt for it."""
        for index, slot in enumerate(self.slots):
            if slot.task is not None or not queue:
                continue
            task = queue[0]
            try:
                slot.conn.send((task, self.attempts.get(task.id, 0) + 1))
            except (BrokenPipeError, OSError):
                slot.process.join(timeout=5)
                slot.conn.close()
                slot = self.slots[index] = self._start()
                slot.conn.send((task, self.attempts.get(task.id, 0) + 1))
            queue.popleft()
            self.attempts[task.id] = self.attempts.get(task.id, 0) + 1
            slot.task = task

    def _collect(self, slot: _Slot, queue: deque[Task]) -> dict[str, Any] | None:
        """The line ``slot``'s worker answered; if it died instead, a fresh worker in its place
        and the task queued again (or its ``failed`` line after the last attempt)."""
        task = slot.task
        assert task is not None
        slot.task = None
        try:
            kind, payload = slot.conn.recv()
        except (EOFError, OSError):
            return self._replace(slot, task, queue)
        if kind != "ok":
            return failed_line(task, f"{type(payload).__name__}: {payload}", self.attempts[task.id])
        return payload

    def _replace(self, slot: _Slot, task: Task, queue: deque[Task]) -> dict[str, Any] | None:
        """After a worker died: its replacement, and the task's next attempt or its end."""
        slot.process.join(timeout=5)
        code = slot.process.exitcode
        slot.conn.close()
        self.slots[self.slots.index(slot)] = self._start()
        tries = self.attempts[task.id]
        if tries < policy.BATCH_ATTEMPTS:
            queue.appendleft(task)
            return None
        why = f"its worker process died {tries} times (last exit code {code}: killed, or out "
        why += "of memory)"
        return failed_line(task, why, tries)

    def close(self) -> None:
        """Stop every worker: idle ones by message, busy ones by SIGKILL (a query's partial
        work is worth nothing, and its line is not written)."""
        for slot in self.slots:
            try:
                if slot.task is None:
                    slot.conn.send(None)
                else:
                    slot.process.kill()
            except (BrokenPipeError, OSError):
                pass
        for slot in self.slots:
            slot.process.join(timeout=5)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=5)
            slot.conn.close()
        self.slots = []
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""
