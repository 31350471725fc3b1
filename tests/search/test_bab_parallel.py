"""The activation branch and bound's part MIPs on a pool (issue 45 item 4): one process, two
forked processes and a two-worker Dask cluster give the same exact value, the oracle's; a worker
killed under a part loses nothing (the part is solved again); a stopped search, or one whose
parts never come back, keeps a sound bracket (a part in flight keeps its node's bound)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import lipopt
import lipopt.policy
from lipopt.parallel import workers as workers_module
from lipopt.query import Query
from lipopt.search.activation_bab import ActivationBabOptions, activation_bab
from lipopt.search.bab_node import start_witness
from lipopt.search.bab_pool import PartLost
from lipopt.strategies import bab_pool
from lipopt.strategies.bab_parts import part_solver
from tests import oracle
from tests.helpers import box_or_ball, random_network

#: (widths, domain kind, input norm, rng seed, hand-off threshold): small networks on which
#: ``bab=True`` finishes after several part MIPs (measured with one process: 24, 16, 5, 4 and
#: 12 parts solved)
CASES = [
    ([4, 8, 8, 2], "box", "l1", 102, 4),
    ([3, 8, 8, 8, 1], "box", "linf", 104, 4),
    ([2, 12, 12, 1], "linf_ball", "linf", 103, 4),
    ([4, 10, 6, 2], "linf_ball", "linf", 105, 4),
    ([3, 12, 12, 2], "box", "linf", 107, 8),
]


def _problem(widths, kind, seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1])
    return net, box_or_ball(kind, widths[0]), c


def _truth(net, domain, c, norm) -> float:
    return oracle.brute_force_lipschitz(
        *oracle.from_lipopt(net, domain), c=c, input_norm=norm
    ).value


def _solve(net, domain, c, norm, **options):
    """``bab=True`` with ``options``, and the progress lines it said."""
    lines: list[str] = []
    result = lipopt.lipschitz(
        net, domain, norm=norm, c=c, bab=True, progress=lines.append, **options
    )
    return result, lines


@pytest.fixture(autouse=True)
def no_split_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool is under test, so the searches run without the splits' input-space cuts and
    the sign-group bounds: with the cuts the cases above need fewer parts (measured: 15, 0, 2,
    3 and 5 against 26, 16, 6, 4 and 12 without) and one needs none at all; with the sign
    groups one of them needed 3."""
    monkeypatch.setattr(lipopt.policy, "BAB_CUT_MAX_INPUTS", 0)
    monkeypatch.setattr(lipopt.policy, "BAB_SIGN_GROUP", 0)


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes allowed even on a one-core machine (the rule of worker_count)."""
    monkeypatch.setattr(workers_module, "available_cores", lambda: 2)
    monkeypatch.setattr(bab_pool, "available_cores", lambda: 2)


@pytest.fixture(scope="module")
def dask_address() -> Iterator[str]:
    """A local Dask cluster: a scheduler and two single-thread worker processes (with nannies,
    which start a killed worker again); a worker Dask sees die under a task is reported to the
    client at once (``allowed-failures`` 0), so the search's own resubmission is exercised."""
    pytest.importorskip("distributed")
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def dying_solve_remote(*args, _marker=None, _parent=None, _real=bab_pool.solve_remote):
    """The first part any worker (a process other than ``_parent``, the test's) takes kills
    that worker (SIGKILL) before it answers."""
    if _marker is not None and os.getpid() != _parent:
        try:
            os.close(os.open(_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    return _real(*args)


def _dying(marker: Path):
    parent = os.getpid()

    def solve(*args):
        return dying_solve_remote(*args, _marker=str(marker), _parent=parent)

    return solve


@pytest.mark.parametrize("widths, kind, norm, seed, mip_at", CASES)
def test_bab_pool_same_value_on_one_and_two_processes(
    widths, kind, norm, seed, mip_at, monkeypatch, two_cores
):
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", mip_at)
    net, domain, c = _problem(widths, kind, seed)
    serial, said = _solve(net, domain, c, norm, workers=1)
    pooled, said2 = _solve(net, domain, c, norm, workers=2)
    assert any("part MIPs in this process" in line for line in said)
    assert any("part MIPs on 2 processes" in line for line in said2)
    truth = _truth(net, domain, c, norm)
    for result in (serial, pooled):
        assert result.status == "optimal", result.message
        assert result.value == pytest.approx(truth, rel=1e-6, abs=1e-9)
        assert result.exact_certified
    assert serial.model_stats["bab_parts_solved"] >= 4
    assert pooled.model_stats["bab_parts_solved"] >= 1  # answered by the workers
    assert pooled.value == pytest.approx(serial.value, rel=1e-6)
    if seed == CASES[0][3]:  # and again: the same value run after run
        again, _ = _solve(net, domain, c, norm, workers=2)
        assert again.value == pytest.approx(pooled.value, rel=1e-6)


def test_bab_pool_worker_killed_mid_part_same_value(tmp_path, monkeypatch, two_cores):
    """The root is the one part (the hand-off raised), and its first worker is killed."""
    widths, kind, norm, seed, _ = CASES[0]
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", 100)
    net, domain, c = _problem(widths, kind, seed)
    marker = tmp_path / "killed"
    monkeypatch.setattr(bab_pool, "solve_remote", _dying(marker))
    result, said = _solve(net, domain, c, norm, workers=2)
    assert marker.exists()  # a worker was killed under its part
    assert any("part MIPs on 2 processes" in line for line in said)
    assert result.model_stats["bab_parts_solved"] == 1  # solved again, not dropped
    assert result.status == "optimal", result.message
    assert result.value == pytest.approx(_truth(net, domain, c, norm), rel=1e-6, abs=1e-9)


def test_bab_pool_stopped_keeps_a_sound_bracket(monkeypatch, two_cores):
    widths, kind, norm, seed, _ = CASES[1]
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", 16)  # big parts: one may still fly
    net, domain, c = _problem(widths, kind, seed)
    truth = _truth(net, domain, c, norm)
    result, _ = _solve(net, domain, c, norm, workers=2, time_limit=0.3)
    assert result.lower is None or result.lower <= truth * (1 + 1e-9)
    assert result.value >= truth * (1 - 1e-9)


class _Pool:
    """A pool in this process that answers parts in reverse order of sending (late answers),
    with LOST (``lose``: each part's worker dies, every time), or never (``hold``)."""

    def __init__(self, solve, lose: bool = False, hold: bool = False) -> None:
        self.solve, self.lose, self.hold = solve, lose, hold
        self.sent: list[tuple[int, object, float]] = []
        self.submitted = 0
        self.nodes: list = []

    def free(self) -> int:
        return 3 - len(self.sent)

    def submit(self, tag, node, lower) -> None:
        self.submitted += 1
        self.nodes.append(node)
        self.sent.append((tag, node, lower))

    def answers(self, timeout: float):
        out = []
        while self.sent and not self.hold:
            tag, node, lower = self.sent.pop()
            out.append((tag, PartLost.LOST if self.lose else self.solve(node, lower)))
        return out


def _search(widths, kind, norm, seed, mip_at, pool_of, seconds=None, **options):
    """The search on a pool of ``pool_of(solve_part)``, stopped ``seconds`` after its start
    point is found (None: not stopped)."""
    net, domain, c = _problem(widths, kind, seed)
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    pool = pool_of(part_solver(query, None))
    bab = ActivationBabOptions(mip_at=mip_at, **options)
    start = start_witness(net, domain, c, query.norm, bab)
    deadline = None if seconds is None else time.perf_counter() + seconds
    found = activation_bab(
        net, domain, c, norm, options=bab, solve_part=pool, deadline=deadline, start=start
    )
    return found, pool, _truth(net, domain, c, norm)


def test_bab_pool_parts_in_flight_keep_their_bounds_when_stopped():
    """The root is a part and never comes back: stopped (at the deadline), the bracket's upper
    bound is the root's own, not the start point's value (the domain's centre: no attack)."""
    widths, kind, norm, seed, _ = CASES[0]
    found, pool, truth = _search(
        widths, kind, norm, seed, 100, lambda solve: _Pool(solve, hold=True), seconds=2.0,
        attack_restarts=0,
    )  # fmt: skip
    assert pool.submitted == 1 and found.nodes == 1 and found.status.value == "time_limit"
    assert found.lower < truth * (1 - 1e-6)  # the centre's value: below the constant
    assert found.upper >= truth * (1 - 1e-9)


@pytest.mark.parametrize("widths, kind, norm, seed, mip_at", CASES[:3])
def test_bab_pool_late_answers_same_value(widths, kind, norm, seed, mip_at):
    found, pool, truth = _search(widths, kind, norm, seed, mip_at, _Pool)
    assert pool.submitted >= 2 and found.solved >= 2
    assert found.status.value == "optimal"
    assert found.upper == pytest.approx(truth, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("widths, kind, norm, seed, mip_at", CASES[:3])
def test_bab_pool_parts_lost_for_good_keep_their_bounds(widths, kind, norm, seed, mip_at):
    found, pool, truth = _search(
        widths, kind, norm, seed, mip_at, lambda solve: _Pool(solve, lose=True)
    )
    assert pool.submitted >= lipopt.policy.BATCH_ATTEMPTS  # a part sent again, then kept
    assert found.solved == 0
    assert found.lower <= truth * (1 + 1e-9) <= found.upper * (1 + 2e-9)
    assert found.upper >= max(node.upper for node in pool.nodes)  # no part's bound dropped


@pytest.mark.parametrize("case", [CASES[0], CASES[4]])
def test_bab_pool_dask_same_value(case, dask_address, monkeypatch):
    widths, kind, norm, seed, mip_at = case
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", mip_at)
    net, domain, c = _problem(widths, kind, seed)
    result, said = _solve(net, domain, c, norm, scheduler=dask_address)
    serial, _ = _solve(net, domain, c, norm, workers=1)
    assert any(f"on the Dask cluster at {dask_address}" in line for line in said)
    assert result.status == "optimal", result.message
    assert result.model_stats["bab_parts_solved"] >= 4
    assert result.value == pytest.approx(_truth(net, domain, c, norm), rel=1e-6, abs=1e-9)
    assert result.value == pytest.approx(serial.value, rel=1e-6)


def test_bab_pool_dask_worker_killed_mid_part_same_value(tmp_path, dask_address, monkeypatch):
    """As on the local pool: the root is the one part, and its first worker is killed."""
    widths, kind, norm, seed, _ = CASES[0]
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", 100)
    net, domain, c = _problem(widths, kind, seed)
    marker = tmp_path / "killed"
    monkeypatch.setattr(bab_pool, "solve_remote", _dying(marker))
    result, _ = _solve(net, domain, c, norm, scheduler=dask_address)
    assert marker.exists()  # a worker was killed under its part
    assert result.model_stats["bab_parts_solved"] == 1  # solved again, not dropped
    assert result.status == "optimal", result.message
    assert result.value == pytest.approx(_truth(net, domain, c, norm), rel=1e-6, abs=1e-9)


@pytest.fixture
def own_scheduler() -> Iterator[tuple[str, int]]:
    """A Dask scheduler and one single-thread worker, each a process of its own (so that a
    test can kill the scheduler): its address and the scheduler's process id."""
    pytest.importorskip("distributed")
    from distributed import Client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    cli = [sys.executable, "-m"]
    scheduler = subprocess.Popen(
        [*cli, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--no-dashboard"], **quiet,
    )  # fmt: skip
    worker = subprocess.Popen(
        [*cli, "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
         "--no-dashboard"], **quiet,
    )  # fmt: skip
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
        yield address, scheduler.pid
    finally:
        for process in (worker, scheduler):
            process.kill()
            process.wait()


def test_bab_pool_lost_scheduler_the_search_goes_on_here_same_value(
    tmp_path, own_scheduler, monkeypatch
):
    """The first part sent to the cluster kills its scheduler (SIGKILL): that part and the
    rest are solved in this process, and the answer is still the oracle's."""
    address, scheduler_pid = own_scheduler
    widths, kind, norm, seed, mip_at = CASES[0]
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", mip_at)
    net, domain, c = _problem(widths, kind, seed)
    marker = str(tmp_path / "killed")

    def killing(*args, _real=bab_pool.solve_remote, _marker=marker, _pid=scheduler_pid):
        import os as os_here
        import signal as signal_here

        first = os_here.O_CREAT | os_here.O_EXCL | os_here.O_WRONLY
        try:
            os_here.close(os_here.open(_marker, first))
        except FileExistsError:
            pass
        else:
            os_here.kill(_pid, signal_here.SIGKILL)
        return _real(*args)

    monkeypatch.setattr(bab_pool, "solve_remote", killing)
    result, said = _solve(net, domain, c, norm, scheduler=address, time_limit=120)
    assert Path(marker).exists()  # the scheduler was killed under the first part
    assert any(f"lost the Dask scheduler at {address}" in line for line in said), said
    assert result.status == "optimal", result.message
    assert result.model_stats["bab_parts_solved"] >= 4
    assert result.value == pytest.approx(_truth(net, domain, c, norm), rel=1e-6, abs=1e-9)


def test_bab_pool_unreachable_scheduler_is_one_line(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(lipopt.policy, "CLUSTER_CONNECT_SECONDS", 0.5)
    net, domain, c = _problem([2, 4, 1], "box", 0)
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        lipopt.lipschitz(net, domain, c=c, bab=True, scheduler="tcp://127.0.0.1:9")


def test_bab_pool_scheduler_without_bab_is_refused():
    net, domain, c = _problem([2, 4, 1], "box", 0)
    with pytest.raises(lipopt.LipschitzError, match="it needs bab=True"):
        lipopt.lipschitz(net, domain, c=c, scheduler="tcp://127.0.0.1:9")


def test_bab_pool_missing_dask_is_one_line(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    net, domain, c = _problem([2, 4, 1], "box", 0)
    with pytest.raises(ValueError) as err:
        lipopt.lipschitz(net, domain, c=c, bab=True, scheduler="tcp://127.0.0.1:8786")
    assert str(err.value) == "--scheduler needs Dask distributed: pip install 'lipopt[cluster]'"
