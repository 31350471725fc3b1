"""Forked workers (lipopt.parallel.workers): tasks answered by processes that inherit this
one's state."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pytest

from lipopt import LinfBall, LipschitzError, lipschitz
from lipopt.parallel.workers import ForkedWorkers, InProcess, can_fork, worker_count
from tests.helpers import random_network

needs_fork = pytest.mark.skipif(not can_fork("highs"), reason="needs two cores and fork")


class _Unpicklable:
    """State a worker inherits by fork; pickling it (as a spawned process would) fails."""

    def __init__(self) -> None:
        self.offset = 10
        self.callback = lambda v: v * 2  # lambdas do not pickle

    def __reduce__(self):  # noqa: D105
        raise TypeError("not picklable")


def _collect(runner, tasks):
    answers, position = {}, 0
    try:
        while True:
            while runner.idle() and position < len(tasks):
                runner.submit(tasks[position], position)
                position += 1
            if not runner.busy():
                break
            tag, value = runner.next_result()
            answers[tag] = value
    finally:
        runner.close()
    return answers


@pytest.mark.parametrize("count", [1, 2])
def test_workers_answer_every_task_with_inherited_state(count):
    if count > 1 and not can_fork("highs"):
        pytest.skip("needs two cores and fork")
    state = _Unpicklable()
    handle = lambda task: (task, state.callback(task) + state.offset)  # noqa: E731
    runner = ForkedWorkers(count, handle) if count > 1 else InProcess(handle)
    answers = _collect(runner, list(range(7)))
    assert answers == {i: (i, 2 * i + 10) for i in range(7)}


@needs_fork
def test_a_task_error_reaches_the_parent_and_the_workers_stop():
    def handle(task):
        if task == 3:
            raise ValueError("bad task 3")
        return task

    runner = ForkedWorkers(2, handle)
    processes = [proc for _conn, proc in runner.started]
    with pytest.raises(ValueError, match="bad task 3"):
        _collect(runner, list(range(6)))
    assert not any(proc.is_alive() for proc in processes)


def test_worker_count_limits():
    assert worker_count("highs", 1, 10) == 1
    assert worker_count("cbc", None, 10) == 1  # a subprocess solver is never forked
    assert worker_count("highs", None, 1) == 1  # one task: no process
    if can_fork("highs"):
        assert worker_count("highs", None, 10) >= 2
        assert worker_count("highs", 2, 10) == 2
    with mp.get_context("fork").Pool(1) as pool:  # inside a daemonic worker: never fork
        assert pool.apply(worker_count, ("highs", None, 10)) == 1


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_lipschitz_rejects_bad_worker_counts(bad):
    net = random_network(np.random.default_rng(0), [3, 4, 1])
    with pytest.raises(LipschitzError, match="workers"):
        lipschitz(net, LinfBall([0.5] * 3, 0.1), norm="l1", workers=bad)


class _UnpicklableError(Exception):
    def __init__(self) -> None:
        super().__init__("holds a lock")
        self.lock = __import__("threading").Lock()  # locks do not pickle


@needs_fork
def test_an_error_that_cannot_cross_the_pipe_is_named_and_no_worker_is_left():
    from lipopt.solvers import SolverError

    def handle(task):
        raise _UnpicklableError()

    runner = ForkedWorkers(2, handle)
    processes = [proc for _conn, proc in runner.started]
    with pytest.raises(SolverError, match="_UnpicklableError: holds a lock"):
        _collect(runner, [1, 2])
    assert not any(proc.is_alive() for proc in processes)


@needs_fork
def test_a_stuck_worker_times_out_and_is_stopped():
    import time

    runner = ForkedWorkers(2, lambda task: time.sleep(task) or task)
    processes = [proc for _conn, proc in runner.started]
    runner.submit(0.0, "quick")
    runner.submit(60.0, "stuck")
    assert runner.next_result(timeout=20) == ("quick", 0.0)
    assert runner.next_result(timeout=0.2) is None
    assert runner.pending() == ["stuck"]
    runner.close()
    assert not any(proc.is_alive() for proc in processes)


def test_lipschitz_accepts_numpy_integer_workers():
    net = random_network(np.random.default_rng(0), [3, 4, 1])
    res = lipschitz(net, LinfBall([0.5] * 3, 0.1), norm="l1", workers=np.int64(1))
    assert res.status == "optimal"


@needs_fork
def test_a_worker_that_dies_is_reported_and_the_others_keep_working():
    import os

    from lipopt.solvers import SolverError

    def handle(task):
        if task == "die":
            os._exit(1)
        return task * 2

    runner = ForkedWorkers(2, handle)
    processes = [proc for _conn, proc in runner.started]
    runner.submit("die", "dying")
    tag, kind, err = runner.next_outcome(timeout=20)
    assert (tag, kind) == ("dying", "error") and isinstance(err, SolverError)
    assert "'dying' ended without an answer" in str(err)
    runner.submit(21, "alive")  # the dead worker gets no task; the other one answers
    assert runner.next_result(timeout=20) == ("alive", 42)
    assert not runner.busy() and len(runner.free) == 1
    runner.close()
    assert not any(proc.is_alive() for proc in processes)


@needs_fork
def test_stopping_a_worker_never_leaves_pyomos_capture_lock_held():
    """A worker stopped while it holds Pyomo's output-capture lock (shared by every forked
    process; held while a solve's output capture starts or ends) must not take it along: close()
    waits for the lock, so afterwards this process can still take it, and HiGHS still solves."""
    import time

    from pyomo.common import dependencies

    lock = dependencies.capture_output_lock
    holding = mp.get_context("fork").Event()

    def hold_briefly(_task):
        with lock:
            holding.set()
            time.sleep(1.0)
        time.sleep(60.0)  # then stuck, outside the lock

    runner = ForkedWorkers(1, hold_briefly)
    runner.submit(0, "holder")
    assert holding.wait(20)
    runner.close()  # while the worker holds the lock
    assert lock.acquire(timeout=5), "a stopped worker left the capture lock held"
    lock.release()
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    res = lipschitz(net, LinfBall([0.5, 0.5], 0.5), solver="highs", regions=False, split=False)
    assert res.status == "optimal"


def _blas_threads(paths: frozenset) -> int:
    """The smallest thread count of the BLAS libraries at ``paths`` in this process."""
    from threadpoolctl import threadpool_info

    return min(p["num_threads"] for p in threadpool_info() if p["filepath"] in paths)


def _settable_blas() -> frozenset:
    """The BLAS libraries loaded here that take two threads (numpy's; some packages bring a
    single-threaded OpenBLAS of their own, which always reports one)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        pools = threadpool_info()
    return frozenset(
        p["filepath"] for p in pools if p["user_api"] == "blas" and p["num_threads"] == 2
    )


def test_workers_and_their_parent_run_one_blas_thread_and_the_parent_gets_its_own_back():
    """Oversubscribed BLAS threads spin (docs/performance.md, "Native threads"): each worker
    runs one, the parent too while it has workers, and its own number once they close."""
    from threadpoolctl import threadpool_limits

    paths = _settable_blas()
    if not paths:
        pytest.skip("no BLAS library here takes two threads")
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads(paths) == 2
        runner = ForkedWorkers(2, _blas_threads)
        try:
            assert _blas_threads(paths) == 1
            assert set(_collect(runner, [paths] * 3).values()) == {1}
        finally:
            runner.close()
        assert _blas_threads(paths) == 2
        again = ForkedWorkers(1, _blas_threads)  # a second pool holds and gives back as well
        again.close()
        assert _blas_threads(paths) == 2
