"""The activation branch and bound's margin LPs on stable-prefix nodes within a share of its
time (policy ``BAB_PREFIX_LP_SHARE``, option ``prefix_share``). The check only drops nodes
that hold no interior point and offers points, so skipping it must never change a finished
search's answer: checked against the brute-force oracle with every node checked, with none
after the first, and with a slow LP capped by the share."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

from lipopt import Box
from lipopt.plan.nodes import ActivationBab
from lipopt.search.activation_bab import ActivationBabOptions, activation_bab
from tests.helpers import fast_first, planned_bab, random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

policy_module = importlib.import_module("lipopt.policy")
search_module = importlib.import_module("lipopt.search.activation_bab")


def test_the_planner_hands_the_policys_share_to_the_search(monkeypatch):
    monkeypatch.setattr(policy_module, "BAB_PREFIX_LP_SHARE", 0.375)
    node = planned_bab()
    assert isinstance(node, ActivationBab)
    assert node.options.prefix_share == 0.375


def _checks(monkeypatch, delay: float = 0.0) -> list[tuple[float, float]]:
    """Record, at each margin LP on a prefix, the LPs' seconds so far and the search's age;
    each LP is made ``delay`` seconds slower."""
    seen: list[tuple[float, float]] = []
    checking = search_module._Search.margin_check

    def spy(search, node):
        seen.append((search.prefix_seconds, time.perf_counter() - search.began))
        time.sleep(delay)
        return checking(search, node)

    monkeypatch.setattr(search_module._Search, "margin_check", spy)
    return seen


def _truth(net, box, c) -> float:
    return brute_force_lipschitz(*from_lipopt(net, box), c=c, input_norm="linf").value


@pytest.mark.parametrize("seed", fast_first(range(4)))
def test_every_share_gives_the_oracles_answer(monkeypatch, seed):
    """Share 1 checks every stable-prefix node; share 0 checks only the first (no LP time
    yet) and keeps the rest unchecked; both searches finish on the oracle's value."""
    rng = np.random.default_rng(seed)
    net = random_network(rng, [3, 8, 8, 1])
    box = Box(-np.ones(3), np.ones(3))
    c = np.array([1.0])
    truth = _truth(net, box, c)
    counts = []
    for share in (1.0, 0.0):
        seen = _checks(monkeypatch)
        options = ActivationBabOptions(branching="layer", prefix_share=share)
        found = activation_bab(net, box, c, "linf", options=options)
        assert str(found.status) == "optimal"
        assert found.upper == pytest.approx(truth, rel=1e-6)
        assert found.lower == pytest.approx(truth, rel=1e-6)
        counts.append(len(seen))
    assert counts[1] <= 1 < counts[0]  # the LPs skipped at share 0, run at share 1


def test_a_slow_margin_lp_is_held_to_its_share(monkeypatch):
    """Each LP made 20 ms slower, the search stopped after 3 s: an LP starts only while the
    LPs so far took at most the share of the search's age, some nodes go unchecked, and the
    stopped search's bracket holds the oracle's value."""
    rng = np.random.default_rng(7)
    net = random_network(rng, [3, 12, 12, 1])
    box = Box(-np.ones(3), np.ones(3))
    c = np.array([1.0])
    share = 0.25
    seen = _checks(monkeypatch, delay=0.02)
    skipped = []
    gate = search_module._Search.check_prefix

    def counting(search, node):
        before = len(seen)
        kept = gate(search, node)
        skipped.append(len(seen) == before)
        return kept

    monkeypatch.setattr(search_module._Search, "check_prefix", counting)
    options = ActivationBabOptions(branching="layer", prefix_share=share)
    deadline = time.perf_counter() + 3.0
    found = activation_bab(net, box, c, "linf", options=options, deadline=deadline)
    assert all(spent <= share * age for spent, age in seen)
    assert any(skipped) and not all(skipped)
    truth = _truth(net, box, c)
    assert found.lower <= truth * (1 + 1e-9) and truth <= found.upper * (1 + 1e-9)
