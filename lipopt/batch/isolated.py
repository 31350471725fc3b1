"""A query in a child process of a Dask worker, so that a cancelled query stops at once.

A Dask worker runs a task in a thread, and Python cannot stop a thread: a query cancelled by
Ctrl-C would keep its worker busy until its solve ended. Here the task's thread starts a child
Python (``python -m lipopt.batch.isolated``) that answers the query, and kills it as soon as
the worker no longer wants the task (cancelled, or its client gone). The child dies with the
worker, even when the worker is killed. A child that dies without an answer raises
:class:`ChildDied`, which Dask retries (the ``retries`` of the submission).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import Any

from lipopt.batch.execute import run_safely
from lipopt.batch.tasks import Task
from lipopt.network import Network
from lipopt.parallel.workers import die_with_parent

#: seconds between two looks at whether the worker still wants the task
POLL_SECONDS = 0.25

#: the states of a task its worker is still answering
_WANTED = ("executing", "long-running")


class ChildDied(RuntimeError):
    """The query's child process ended without an answer (killed, or out of memory)."""


def _still_wanted() -> bool:
    """The task running in this thread is still wanted by its Dask worker (True outside a
    worker, or where the worker's state cannot be read)."""
    try:
        from distributed import get_worker

        worker = get_worker()
        key = worker.get_current_task()
        state = worker.state.tasks.get(key)
    except Exception:  # noqa: BLE001 - not on a worker, or another distributed: keep going
        return True
    return state is not None and state.state in _WANTED


def run_in_child(task: Task, network: Network, attempt: int = 1) -> dict[str, Any] | None:
    """The line of ``task``, answered in a child process; None when the task was cancelled
    meanwhile (the child is killed; nobody waits for the line)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "lipopt.batch.isolated", str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    payload: bytes | None = pickle.dumps((task, network, attempt))
    try:
        while True:
            try:
                out, _ = child.communicate(payload, timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                payload = None  # sent already
                if not _still_wanted():
                    return None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if child.returncode != 0 or not out:
        raise ChildDied(
            f"its process died (exit code {child.returncode}: killed, or out of memory)"
        )
    return pickle.loads(out)


def _main(parent: int) -> None:
    """The child: read ``(task, network, attempt)`` on stdin, write the line on stdout. What
    the solvers print goes to stderr (discarded), never into the answer."""
    die_with_parent(parent)
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    task, network, attempt = pickle.load(sys.stdin.buffer)
    line = run_safely(task, network, attempt)
    answer.write(pickle.dumps(line))
    answer.close()


if __name__ == "__main__":
    _main(int(sys.argv[1]))
