"""One method of ``compare`` in a forked child process that the parent can kill.

The SDP methods solve with cvxpy (Clarabel, SCS): not every solver takes a wall-clock limit,
and none returns to Python when a signal arrives, so a solve in this process would hold
SIGINT/SIGTERM and the time limit off for as long as it runs. Run in a child instead, a method
can be stopped at any moment: the parent waits on a pipe (a signal interrupts the wait at once)
and kills the child's whole process group (its solver subprocesses and worker processes too)
at its deadline or on the way out. A killed method has answered nothing.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from lipopt.estimators.base import EstimatorFailed
from lipopt.parallel.workers import die_with_parent, may_fork

T = TypeVar("T")

#: seconds to wait for Pyomo's output-capture lock before killing a child (it is held only
#: while a solve's output capture starts or ends; see lipopt.parallel.workers._terminate)
CAPTURE_LOCK_WAIT = 2.0


#: the signals that stop the command (see lipopt.cli.exits)
SIGNALS = {signal.SIGINT, signal.SIGTERM}


#: children started and not yet stopped: killed at exit if a second signal cut their stop short
#: (multiprocessing would otherwise wait for them at exit; this handler, registered after its
#: own, runs first)
_LIVE: set[Any] = set()


#: modules whose native thread pools a forked child inherits without their threads (Clarabel's
#: rayon pool, SCS's OpenMP): once one has solved in this process, a forked child that solves
#: with it waits forever for workers it does not have (seen: LipSDP hung in a forked child
#: after an earlier Clarabel solve in the same process). Where one is loaded, methods run in a
#: spawned child instead, which starts its own pools.
FORK_UNSAFE_MODULES = ("clarabel", "scs")


def start_method(call: Callable[[], Any], conic: bool = False) -> str:
    """``"fork"`` (cheap: the child has everything loaded), or ``"spawn"`` for a ``conic``
    method (one that solves with a module of :data:`FORK_UNSAFE_MODULES`) where such a module
    is loaded in this process and ``call`` can be sent to a new process (a method defined in a
    function, as a test's stand-in, cannot: it is forked)."""
    if not conic or not any(name in sys.modules for name in FORK_UNSAFE_MODULES):
        return "fork"
    try:
        pickle.dumps(call)
    except (pickle.PicklingError, AttributeError, TypeError):
        return "fork"
    return "spawn"


class OutOfTime(Exception):
    """The child had not answered by its deadline and was killed."""


def can_isolate() -> bool:
    """This process may fork a child per method (POSIX, not a daemonic process)."""
    return may_fork()


def run_killable(call: Callable[[], T], kill_at: float | None, conic: bool = False) -> T:
    """``call()`` in a child process (forked, or spawned: :func:`start_method`): its answer,
    or its exception raised here.

    ``conic``: the method solves with cvxpy (:func:`start_method`). Raises :class:`OutOfTime`
    when no answer came by ``kill_at`` (a :func:`time.monotonic`
    time; None: no deadline). On every way out (answer, deadline, KeyboardInterrupt from a
    signal received while waiting) the child and its process group are stopped."""
    ctx: Any = mp.get_context(start_method(call, conic))
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(there, call, os.getpid()), daemon=False)
    # no signal lands between the fork and the try below, which stops the child on every way
    # out (one left running would be waited for by multiprocessing at exit): held until then
    held = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        proc.start()
        _LIVE.add(proc)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    answered = False
    try:
        there.close()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a signal held lands here, in the try
        timeout = None if kill_at is None else max(0.0, kill_at - time.monotonic())
        if not wait([here], timeout=timeout):
            raise OutOfTime
        try:
            kind, payload = here.recv()
        except EOFError:
            proc.join(timeout=5)
            raise EstimatorFailed(
                f"its process ended without an answer (exit code {proc.exitcode})"
            ) from None
        answered = True
    finally:
        _stop(proc, wait_for_exit=answered)
        here.close()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    if kind == "error":
        raise payload
    return payload


def _child(conn: Connection, call: Callable[[], Any], parent: int) -> None:
    """In the child: its own process group (a terminal's Ctrl-C reaches the parent alone,
    which decides; a kill of the group reaches whatever the method started), dead with its
    parent; sends ``("ok", answer)`` or ``("error", exception)`` with the traceback as a note."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)  # blocked by the parent around fork
    try:
        answer: tuple[str, Any] = ("ok", call())
    except BaseException as exc:  # noqa: BLE001 - raised again in the parent
        exc.add_note("in the method's process:\n" + traceback.format_exc())
        answer = ("error", exc)
    try:
        conn.send(answer)
    except Exception:  # noqa: BLE001 - an answer that does not pickle
        what = answer[1]
        conn.send(("error", EstimatorFailed(f"{type(what).__name__}: {what}")))
    conn.close()


def _stop(proc: Any, wait_for_exit: bool) -> None:
    """Kill the child's process group (the child first if it has no group of its own yet;
    one that has answered is given half a second to end by itself) while holding Pyomo's
    output-capture lock, which forked processes share: a child killed inside that short
    section would leave the lock held for every later process."""
    proc.join(timeout=0.5 if wait_for_exit else 0)
    if not proc.is_alive():
        _LIVE.discard(proc)
        return
    pyomo = sys.modules.get("pyomo.common.dependencies")
    lock: Any = getattr(pyomo, "capture_output_lock", None)
    held = lock is not None and lock.acquire(timeout=CAPTURE_LOCK_WAIT)
    try:
        _kill(proc)
        proc.join(timeout=5)
        _LIVE.discard(proc)
    finally:
        if held:
            lock.release()


def _kill(proc: Any) -> None:
    """SIGKILL to the child's process group, and to the child."""
    for kill in (lambda: os.killpg(proc.pid, signal.SIGKILL), proc.kill):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass


@atexit.register
def _kill_leftovers() -> None:
    """At exit: kill the children whose stop was cut short."""
    for proc in list(_LIVE):
        _kill(proc)
