"""Slices of the activation branch and bound run by the pool's workers (issue 45 item 4, the
nodes' own bounding on every core): a slice run to its end answers the whole sub-domain, one
stopped at its floor gives its node back; a search whose every node goes to slices (answered
late, in reverse order) closes on the oracle's value; a stopped one keeps a sound bracket;
forked workers, one killed under a slice, give the oracle's value too."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import lipopt
import lipopt.policy
from lipopt.query import Query
from lipopt.search import bab_slice
from lipopt.search.activation_bab import ActivationBabOptions, _Search, activation_bab
from lipopt.search.bab_node import BabNode, start_witness
from lipopt.search.kinds import unstable_count
from lipopt.strategies.bab_parts import part_solver
from tests.search.test_bab_parallel import CASES, _problem, _solve, _truth, two_cores  # noqa: F401


def _root(query: Query, options: ActivationBabOptions) -> tuple[_Search, BabNode]:
    """A search of ``query`` and its root node (its bound, not yet filed)."""
    search = _Search((query.network, query.domain, query.seed, query.norm), options, None)
    root = query.split_root()
    assert root is not None
    upper = search.make_node({}, root, None)
    search.heap.clear()  # the slice files the node itself
    return search, BabNode((), root, upper, unstable_count(query.network, root.states))


@pytest.mark.parametrize("widths, kind, norm, seed, mip_at", CASES[1:4])
def test_a_slice_run_to_its_end_answers_the_whole_domain(widths, kind, norm, seed, mip_at):
    """From the root, no cutoff, no floor and no parts: the slice closes the domain, so the
    largest of its attained value and of what it settled is the oracle's constant."""
    net, domain, c = _problem(widths, kind, seed)
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    search, root = _root(query, ActivationBabOptions(attack_restarts=0))
    found = bab_slice.run_slice(search, root, (0.0, 0.0), time.perf_counter() + 600)
    truth = _truth(net, domain, c, norm)
    assert found.open_nodes == () and found.counts[0] >= 2  # it split, and left nothing open
    assert found.point is not None and found.lower <= truth * (1 + 1e-9)
    assert max(found.lower, found.settled, found.unclosed) == pytest.approx(truth, rel=1e-6)


def test_a_slice_below_its_floor_gives_its_node_back():
    widths, kind, norm, seed, _ = CASES[1]
    net, domain, c = _problem(widths, kind, seed)
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    search, root = _root(query, ActivationBabOptions(attack_restarts=0))
    found = bab_slice.run_slice(search, root, (0.0, root.upper * 2), time.perf_counter() + 600)
    assert found.open_nodes == (root,) and found.counts == (0, 0, 0, 0, 0)
    assert found.point is None and found.settled == 0.0


class _SlicePool:
    """A slice pool in this process: parts and slices answered in reverse order of sending
    (late answers), each slice ``seconds`` long; ``hold``: nothing ever answered."""

    def __init__(self, query: Query, solve, seconds: float, hold: bool = False) -> None:
        self.worker = bab_slice.SliceWorker(query)
        self.solve, self.seconds, self.hold = solve, seconds, hold
        self.sent: list[tuple] = []
        self.slices = self.parts = 0
        self.upper_sent = 0.0

    def free(self) -> int:
        return 2 - len(self.sent)

    def submit(self, tag, node, lower) -> None:
        self.parts += 1
        self.sent.append((tag, node, lower, None))

    def expand(self, tag, node, cutoffs, options) -> None:
        self.slices += 1
        self.upper_sent = max(self.upper_sent, node.upper)
        self.sent.append((tag, node, cutoffs, options))

    def answers(self, timeout: float) -> list:
        out = []
        while self.sent and not self.hold:
            tag, node, cut, options = self.sent.pop()
            if options is None:
                out.append((tag, self.solve(node, cut)))
            else:
                until = time.perf_counter() + self.seconds
                out.append((tag, self.worker.run(node, cut, options, until)))
        return out


def _sliced(case, seconds: float, deadline: float | None = None, hold: bool = False, cap=None):
    widths, kind, norm, seed, mip_at = case
    net, domain, c = _problem(widths, kind, seed)
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    pool = _SlicePool(query, part_solver(query, None), seconds, hold)
    options = ActivationBabOptions(mip_at=mip_at, attack_restarts=0, heap_bytes=cap)
    start = start_witness(net, domain, c, query.norm, options)
    found = activation_bab(
        net, domain, c, norm, options=options, solve_part=pool, deadline=deadline, start=start
    )
    return found, pool, _truth(net, domain, c, norm)


@pytest.mark.parametrize("case", CASES)
def test_a_search_on_slices_closes_on_the_oracles_value(case):
    """Every node with more than ``mip_at`` unstable neurons goes to a slice of 5 ms, answered
    late: the nodes they give back, and the parts, close the search on the constant."""
    found, pool, truth = _sliced(case, seconds=0.005)
    assert pool.slices >= 2
    assert found.status.value == "optimal", found
    assert found.upper == pytest.approx(truth, rel=1e-6, abs=1e-9)
    assert found.lower <= found.upper * (1 + 1e-9)


@pytest.mark.parametrize("case", CASES[1:3])
def test_a_search_on_slices_that_park_every_node_closes_on_the_oracles_value(case):
    """The heaps of the search and of its slices capped at one byte: every node they file is
    parked, rebuilt when taken, and the search still closes on the constant."""
    found, pool, truth = _sliced(case, seconds=0.005, cap=1)
    assert pool.slices >= 2 and found.parked > 0
    assert found.status.value == "optimal", found
    assert found.upper == pytest.approx(truth, rel=1e-6, abs=1e-9)


def test_a_search_stopped_with_slices_in_flight_keeps_their_bounds():
    """The slices never come back: at the deadline the bracket still covers the constant, with
    the bound of the node sent."""
    found, pool, truth = _sliced(CASES[1], seconds=0.005, deadline=time.perf_counter() + 1.0,
                                 hold=True)  # fmt: skip
    assert pool.slices == 1 and found.status.value == "time_limit"
    assert found.upper >= pool.upper_sent >= truth * (1 - 1e-9)
    assert found.lower <= truth * (1 + 1e-9)


def _dying_run(marker: str, parent: int):
    real = bab_slice.SliceWorker.run

    def run(self, *args):
        """The first slice any worker (not the test's process) takes kills that worker."""
        if os.getpid() != parent:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(self, *args)

    return run


@pytest.mark.parametrize("kill", [False, True])
def test_forked_slices_give_the_oracles_value(kill, tmp_path, monkeypatch, two_cores):  # noqa: F811
    """``bab=True`` on two forked workers that run slices (5 ms each): the oracle's value,
    also with the first worker to take a slice killed under it (the slice is sent again)."""
    widths, kind, norm, seed, mip_at = CASES[4]
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", mip_at)
    monkeypatch.setattr(lipopt.policy, "BAB_SLICE_SECONDS", 0.005)
    marker = tmp_path / "killed"
    if kill:
        monkeypatch.setattr(bab_slice.SliceWorker, "run", _dying_run(str(marker), os.getpid()))
    net, domain, c = _problem(widths, kind, seed)
    result, said = _solve(net, domain, c, norm, workers=2)
    assert any("parts and part MIPs on 2 processes" in line for line in said)
    assert marker.exists() is kill
    assert result.status == "optimal", result.message
    assert result.value == pytest.approx(_truth(net, domain, c, norm), rel=1e-6, abs=1e-9)


def test_a_certified_value_takes_the_place_of_an_uncertified_equal_one():
    """The search's best value: a slice (or the climb) may attain a value at a point the
    margin LP did not certify before a part MIP or a leaf attains it at a certified one; the
    certified one replaces it (within the exact tolerance), else a closed search would end
    UPPER_BOUND (seen with slices answered late); a lower certified value does not."""
    widths, kind, norm, seed, _ = CASES[0]
    net, domain, c = _problem(widths, kind, seed)
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    search, _ = _root(query, ActivationBabOptions(attack_restarts=0))
    here = np.zeros(widths[0])
    there = here + 1e-3
    search.offer(2.0, here, False)
    search.offer(2.0 * (1 - 1e-12), there, True)
    assert search.certified and search.point is there
    search.offer(1.5, here, True)  # lower: kept out, even certified
    assert search.lower == pytest.approx(2.0) and search.point is there
