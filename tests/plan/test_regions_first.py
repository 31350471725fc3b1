"""In few dimensions the region search runs before the domain split where the policy says so
(``AUTO_REGIONS_FIRST_MIN_DIM``, ``AUTO_REGIONS_FIRST_MAX_HIDDEN``; benchmarks/regions_first.py):
the rule's reach, answers against the brute-force oracle both when the search finishes and when
it stops and the split answers (what such a small solve loads: tests/test_startup.py)."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt import policy as policy_module
from lipopt.config import LEVER_DEFAULTS
from lipopt.configure import configure
from lipopt.network import Network
from lipopt.plan import DomainSplit, RegionSearch, facts_here, plan
from lipopt.policy import Policy
from tests import oracle
from tests.helpers import random_network


def _net(widths: list[int], seed: int = 0) -> Network:
    return random_network(np.random.default_rng(seed), widths)


def _plan(net: Network, policy: Policy | None = None, **levers):
    box = lipopt.Box(np.zeros(net.input_dim), np.ones(net.input_dim))
    policy = policy or Policy.current()
    query, config = configure(net, box, "linf", (None, None), {**LEVER_DEFAULTS, **levers}, policy)
    return plan(query, config, facts_here(frozenset({"scip"})), policy)


def _searches_then_splits(node) -> bool:
    return (
        isinstance(node, RegionSearch)
        and isinstance(node.fallback, DomainSplit)
        and node.race_now is None
    )


@pytest.mark.parametrize(
    "widths",
    [[3, 24, 24, 1], [4, 20, 40, 20, 1], [2, 8, 8, 1], [2, 24, 24, 1]],
    ids=["3 inputs", "4 inputs, 80 neurons", "2 inputs, 16 neurons", "2 inputs, 48 neurons"],
)
def test_the_search_runs_first_then_the_split(widths):
    assert _searches_then_splits(_plan(_net(widths)))


@pytest.mark.parametrize(
    "widths, levers",
    [
        ([2, 20, 40, 20, 1], {}),  # 2 inputs, 80 neurons: the split alone, as before
        ([3, 24, 24, 1], {"split": True}),  # the user's choices stand
        ([3, 24, 24, 1], {"regions": False}),
    ],
)
def test_elsewhere_the_split_alone(widths, levers):
    assert isinstance(_plan(_net(widths), **levers), DomainSplit)


def test_a_polytope_keeps_its_plan():
    """The split takes boxes and ℓ∞ balls: over a polytope the rule does not apply."""
    net = _net([2, 8, 8, 1])
    polytope = lipopt.Polytope(np.array([[1.0, 1.0]]), np.array([1.0]), np.zeros(2), np.ones(2))
    policy = Policy.current()
    query, config = configure(net, polytope, "linf", (None, None), LEVER_DEFAULTS, policy)
    node = plan(query, config, facts_here(frozenset({"scip"})), policy)
    assert not isinstance(node, RegionSearch)  # as before: regions off in low dimension


def test_the_rule_reads_the_policy():
    never = Policy.current().__class__(
        **{
            **vars(Policy.current()),
            "auto_regions_first_min_dim": 10**9,
            "auto_regions_first_max_hidden": -1,
        }
    )
    assert isinstance(_plan(_net([3, 24, 24, 1]), never), DomainSplit)
    assert isinstance(_plan(_net([2, 8, 8, 1]), never), DomainSplit)


def test_many_inputs_are_not_split():
    node = _plan(_net([6, 12, 1]))
    assert not isinstance(node, DomainSplit)
    assert not (isinstance(node, RegionSearch) and isinstance(node.fallback, DomainSplit))


def _truth(net: Network, box: lipopt.Box, c: list[float], norm: str = "linf") -> float:
    return oracle.brute_force_lipschitz(*oracle.from_lipopt(net, box), c=c, input_norm=norm).value


@pytest.mark.parametrize(
    "widths, seed",
    [([2, 8, 8, 1], 0), ([2, 8, 8, 1], 1), ([3, 6, 6, 1], 2), ([3, 5, 5, 2], 3), ([4, 5, 4, 1], 4)],
)
@pytest.mark.parametrize("norm", ["linf", "l1", "l2"])
def test_the_answer_is_the_oracles(widths, seed, norm):
    net = _net(widths, seed)
    box = lipopt.Box(np.zeros(net.input_dim), np.ones(net.input_dim))
    c = [1.0] if widths[-1] == 1 else [1.0, -1.0]
    result = lipopt.lipschitz(net, box, norm, c=np.array(c))
    assert result.status == "optimal"
    assert result.model_stats["region_nodes"] > 0  # the search answered
    assert result.value == pytest.approx(_truth(net, box, c, norm), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_a_stopped_search_leaves_the_answer_to_the_split(monkeypatch, seed):
    monkeypatch.setattr(policy_module, "AUTO_REGION_NODES", 1)
    monkeypatch.setattr(policy_module, "AUTO_REGION_NODES_FEW_UNSTABLE", 1)
    net = _net([3, 8, 8, 1], seed)
    box = lipopt.Box(np.zeros(3), np.ones(3))
    result = lipopt.lipschitz(net, box)
    assert result.status == "optimal"
    assert "regions" in result.timings  # the search ran first
    assert result.model_stats["parts"] >= 1  # the split answered
    assert "region search stopped after 1 nodes; the domain split took over" in result.message
    assert result.value == pytest.approx(_truth(net, box, [1.0]), rel=1e-6, abs=1e-9)
