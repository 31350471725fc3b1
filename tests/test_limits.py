"""A time limit bounds the whole call (issue 44, item 7): loading the solve's modules and the
work after the strategies (an attained value, the witness's region, the result) count against
it, and the CLI counts its own start-up too. Wall times are measured in benchmarks/limits.py;
these tests check the budget each step is handed."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, lipschitz
from lipopt import driver as driver_module
from lipopt.cli import common
from lipopt.policy import Policy
from tests.helpers import random_network


def test_the_strategies_get_the_limit_less_the_time_spent_and_the_reserve():
    policy = Policy.current()
    assert policy.for_strategies(None, 3.0) is None
    reserve = min(policy.finish_reserve_share * 20.0, policy.finish_reserve_seconds)
    assert reserve > 0
    assert policy.for_strategies(20.0, 3.0) == pytest.approx(20.0 - 3.0 - reserve)
    assert policy.for_strategies(20.0, 50.0) == pytest.approx(0.2)  # never below 1 %


def test_lipschitz_hands_its_strategies_less_than_the_limit(monkeypatch):
    seen: list[float | None] = []
    real_run = driver_module.DRIVER.run

    def spy(node, query, limit, ctx):
        seen.append(limit)
        return real_run(node, query, limit, ctx)

    monkeypatch.setattr(driver_module.DRIVER, "run", spy)
    net = random_network(np.random.default_rng(0), [2, 6, 1])
    res = lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), time_limit=10.0, workers=1)
    assert res.status == "optimal"
    policy = Policy.current()
    assert seen[0] is not None and seen[0] <= 10.0 - min(0.5, policy.finish_reserve_seconds)


def test_the_cli_counts_its_start_up_against_the_limit(monkeypatch):
    monkeypatch.setattr(common, "process_seconds", lambda: 4.0)
    assert common.limit_left(20.0) == pytest.approx(16.0)
    assert common.limit_left(2.0) == pytest.approx(0.02)  # spent already: a hundredth is left
    assert common.limit_left(None) is None
    assert common.limit_left(-5.0) == -5.0  # left for the checks to refuse as given


def test_the_process_clock_reads_this_process():
    assert 0.0 <= common.process_seconds() < 24 * 3600
