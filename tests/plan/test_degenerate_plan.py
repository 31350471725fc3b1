"""A degenerate network in few dimensions (every hidden bias exactly 0) is answered by the region
search alone (issue 45, item 5): the MIP's relaxation is weak where its hyperplanes meet, while
its regions are few. The rule's reach, and the answer against the brute-force oracle."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt.config import LEVER_DEFAULTS
from lipopt.configure import configure
from lipopt.network import Affine, Network, ReLU
from lipopt.plan import DomainSplit, RegionSearch, facts_here, plan
from lipopt.policy import Policy
from tests import oracle


def _network(widths: list[int], seed: int, zero_bias: bool = True) -> Network:
    rng = np.random.default_rng(seed)
    layers: list = []
    for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        bias = np.zeros(fan_out) if zero_bias else rng.normal(size=fan_out)
        layers.append(Affine(rng.integers(-3, 4, size=(fan_out, fan_in)).astype(float), bias))
        if i < len(widths) - 2:
            layers.append(ReLU())
    return Network.from_layers(layers)


def _plan(net: Network, **levers):
    box = lipopt.Box(-np.ones(net.input_dim), np.ones(net.input_dim))
    policy = Policy.current()
    query, config = configure(net, box, "linf", (None, None), {**LEVER_DEFAULTS, **levers}, policy)
    return plan(query, config, facts_here(frozenset()), policy)


def test_a_degenerate_network_in_few_dimensions_gets_the_region_search_alone():
    node = _plan(_network([3, 24, 24, 1], 0))
    assert isinstance(node, RegionSearch) and node.fallback is None


def test_the_users_split_stands():
    assert isinstance(_plan(_network([3, 24, 24, 1], 0), split=True), DomainSplit)


def test_in_general_position_the_split_follows_the_search():
    node = _plan(_network([3, 24, 24, 1], 0, zero_bias=False))  # tests/plan/test_regions_first.py
    assert isinstance(node, RegionSearch) and isinstance(node.fallback, DomainSplit)


def test_many_inputs_keep_their_plan():
    node = _plan(_network([6, 12, 1], 0))
    assert not (isinstance(node, RegionSearch) and node.fallback is None)


@pytest.mark.parametrize("seed", range(4))
def test_the_answer_is_the_oracles(seed):
    net = _network([2, 8, 8, 1], seed)
    box = lipopt.Box(-np.ones(2), np.ones(2))
    result = lipopt.lipschitz(net, box)
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, box), c=[1.0], input_norm="linf")
    assert result.status == "optimal"
    assert result.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
