"""The gate of the emptiness LP (lipopt.search.bab_empty): which nodes it lets through, on a
clock of its own (each node taken 10 ms apart), with the LP's answers given."""

from __future__ import annotations

import itertools

import pytest

from lipopt.search import bab_empty
from lipopt.search.bab_empty import MAX_WAIT, PROBE, EmptyLpGate


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """``time.perf_counter`` of the module, advanced by hand."""
    now = [0.0]
    monkeypatch.setattr(bab_empty.time, "perf_counter", lambda: now[0])
    return now


def _run(gate: EmptyLpGate, clock: list[float], unstable: int, empty: bool, nodes: int) -> int:
    """``nodes`` nodes 10 ms apart; an LP let through takes 5 ms and answers ``empty``.
    Returns how many LPs ran."""
    ran = 0
    for _ in range(nodes):
        clock[0] += 0.010
        if gate.wants(unstable):
            ran += 1
            clock[0] += 0.005
            gate.spent += 0.005
            gate.lp_seconds = 0.005
            gate.record(unstable, empty)
    return ran


def test_a_class_whose_lps_find_empty_nodes_keeps_them(clock: list[float]) -> None:
    gate = EmptyLpGate(limit=64, rate=0.25)
    assert _run(gate, clock, 20, True, 200) == 200
    assert gate.hits == 200


def test_a_class_whose_lps_find_nothing_is_probed_ever_more_rarely(clock: list[float]) -> None:
    """After the probe the waits double up to MAX_WAIT: about 4000 / 64 LPs, not 4000."""
    gate = EmptyLpGate(limit=64, rate=0.25)
    ran = _run(gate, clock, 20, False, 4000)
    assert PROBE < ran <= PROBE + 6 + 4000 // MAX_WAIT, ran
    other = _run(gate, clock, 40, True, 50)  # another class is probed on its own
    assert other == 50


def test_a_class_found_again_once_its_nodes_grow_empty(clock: list[float]) -> None:
    gate = EmptyLpGate(limit=64, rate=0.25)
    _run(gate, clock, 20, False, 500)
    later = _run(gate, clock, 20, True, 500)  # the next probe hits and resets the wait
    assert later >= 500 - MAX_WAIT, later


def test_no_lp_above_the_limit_nor_where_it_costs_more_than_any_rate_repays(
    clock: list[float],
) -> None:
    gate = EmptyLpGate(limit=16, rate=0.25)
    assert _run(gate, clock, 17, True, 50) == 0
    costly = EmptyLpGate(limit=64, rate=0.25)
    costly.lp_seconds = 0.050  # five nodes of 10 ms: needs a hit rate of 1.25
    for _ in itertools.repeat(None, 3):
        clock[0] += 0.010
        costly.wants(8)
    assert costly.cost() == pytest.approx(5.0)
    assert not any(costly.wants(8) for _ in range(20))


def test_never_with_a_limit_of_zero(clock: list[float]) -> None:
    assert _run(EmptyLpGate(limit=0, rate=0.0), clock, 0, True, 10) == 0


def test_a_pause_keeps_the_wait_out_of_a_nodes_time(clock: list[float]) -> None:
    """Nodes 10 ms apart, then a 5 s wait (a worker between two slices): paused, the mean stays
    10 ms; not paused, the wait would enter it."""
    for paused in (True, False):
        gate = EmptyLpGate(limit=64, rate=0.25)
        _run(gate, clock, 80, False, 20)
        clock[0] += 5.0
        if paused:
            gate.pause()
        gate.wants(80)
        if paused:
            assert gate.node_seconds == pytest.approx(0.010)
        else:
            assert gate.node_seconds > 0.2
