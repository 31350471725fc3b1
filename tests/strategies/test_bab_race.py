"""The activation branch and bound in the race's place (policy ``BAB_RACE_*``).

Where the formulations race, the planner offers the branch and bound as the alternative; the
race strategy takes it when at least ``BAB_RACE_MIN_UNSTABLE`` of the kinked neurons are
unstable, or, on networks of ``BAB_RACE_MIN_INPUTS`` inputs or more, at least
``BAB_RACE_UNSTABLE_SHARE`` of them, and then runs it alone on every core instead of the race
(on a Dask cluster it races the backward MIP in the forward one's place). Checked: the planner's
rule, the share against a count of neurons whose sign changes over samples (a lower bound on
the truly unstable ones), whole answers against the brute-force oracle with the branch and
bound taking the question (the policy lowered so that small networks take it), and the
cluster's case of the rule."""

from __future__ import annotations

import importlib
from dataclasses import replace

import numpy as np
import pytest

from lipopt import Box, LinfBall, lipschitz
from lipopt.config import LEVER_DEFAULTS
from lipopt.configure import configure
from lipopt.norms import InputNorm
from lipopt.parallel.workers import can_fork
from lipopt.plan import Facts, plan
from lipopt.plan.nodes import Race, RegionSearch
from lipopt.policy import Policy
from lipopt.query import Query
from lipopt.strategies.raced import bab_alone, bab_takes, unstable_share
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

policy_module = importlib.import_module("lipopt.policy")
race_module = importlib.import_module("lipopt.parallel.race")


def _race_node(node):
    """The race of a plan (at its root, or the region search's guard)."""
    if isinstance(node, RegionSearch):
        return node.race_now if node.race_now is not None else _race_node(node.fallback)
    return node


@pytest.mark.parametrize("inputs, by_share", [(10, False), (31, False), (32, True), (40, True)])
def test_the_planner_takes_the_share_rule_from_the_policys_inputs(inputs, by_share):
    """Every race offers the branch and bound by the count of unstable neurons; from
    ``BAB_RACE_MIN_INPUTS`` inputs also by their share."""
    net = random_network(np.random.default_rng(0), [inputs, 6, 6, 2])
    ball = LinfBall(np.full(inputs, 0.5), 0.1)
    policy = Policy.current()
    levers = {**LEVER_DEFAULTS, "time_limit": 60.0}
    query, config = configure(net, ball, "linf", (np.array([1.0, -1]), None), levers, policy)
    facts = Facts(2, True, frozenset({"highs", "scip"}))
    node = _race_node(plan(query, config, facts, policy))
    assert isinstance(node, Race)
    assert node.bab_racer is not None and node.bab_racer.bab
    assert node.bab_from_count == policy_module.BAB_RACE_MIN_UNSTABLE
    share = policy_module.BAB_RACE_UNSTABLE_SHARE if by_share else None
    assert node.bab_from_share == share
    never = _race_node(plan(query, config.but(bab=False), facts, policy))
    assert never.bab_racer is None  # bab=False: the plan never runs it


def _sampled_unstable(net, domain, count: int = 4000) -> int:
    """Neurons whose pre-activation takes both signs over samples of the domain."""
    points = domain.sample(count, np.random.default_rng(1))
    h, changing = points, 0
    for affine in net.affine_layers[:-1]:
        z = h @ affine.weight.T + affine.bias
        changing += int(np.count_nonzero((z > 0).any(axis=0) & (z < 0).any(axis=0)))
        h = np.maximum(z, 0.0)
    return changing


def test_the_unstable_share_is_at_least_the_sampled_share():
    rng = np.random.default_rng(5)
    for radius in (0.05, 0.2, 0.5):
        net = random_network(rng, [8, 12, 12, 1])
        domain = LinfBall(np.full(8, 0.5), radius)
        share = unstable_share(Query(net, domain, InputNorm.LINF, np.ones(1)))
        assert _sampled_unstable(net, domain) / 24 <= share <= 1.0


def _raced_entries(monkeypatch) -> dict:
    """Race at once, and collect the racers' questions (their entries, by racer name)."""
    monkeypatch.setattr(policy_module, "RACE_AFTER", 1e-4)
    seen: dict = {}
    real = race_module.race_answers

    def spy(network, domain, entries, *args, **kwargs):
        seen.update(entries)
        return real(network, domain, entries, *args, **kwargs)

    monkeypatch.setattr(race_module, "race_answers", spy)
    return seen


ALONE = "alone on every core instead of the race"


@pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_branch_and_bound_alone_answers_the_oracles_value(monkeypatch, seed):
    """Where the rule takes the branch and bound, no race runs: the branch and bound alone
    (its progress line says so) answers the oracle's value, exact."""
    monkeypatch.setattr(policy_module, "BAB_RACE_MIN_INPUTS", 1)
    monkeypatch.setattr(policy_module, "BAB_RACE_UNSTABLE_SHARE", 0.0)
    seen = _raced_entries(monkeypatch)
    net = random_network(np.random.default_rng(seed), [3, 10, 10, 1])
    box = Box(np.zeros(3), np.ones(3))
    said: list[str] = []
    res = lipschitz(
        net, box, c=np.ones(1), time_limit=60, regions=False, split=False, progress=said.append
    )
    truth = brute_force_lipschitz(*from_lipopt(net, box), c=np.ones(1), input_norm="linf").value
    assert not seen, seen.keys()
    assert any(ALONE in line for line in said), said
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth, rel=1e-6)


@pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")
@pytest.mark.parametrize("by_count", [True, False])
def test_many_unstable_neurons_take_the_branch_and_bound_below_the_share(monkeypatch, by_count):
    """On a network below ``BAB_RACE_MIN_INPUTS`` inputs the branch and bound takes the race's
    place where at least ``BAB_RACE_MIN_UNSTABLE`` neurons are unstable, and only there (a
    share of 0 does not make it): there no race runs, elsewhere the formulations race without
    it; the answer is the oracle's."""
    net = random_network(np.random.default_rng(0), [3, 10, 10, 1])
    box = Box(np.zeros(3), np.ones(3))
    query = Query(net, box, InputNorm.LINF, np.ones(1))
    count = query.bounds().unstable_count
    assert 0 < count and unstable_share(query) < 1.0
    # 3 inputs, below BAB_RACE_MIN_INPUTS: the count rule alone decides, whatever the share
    monkeypatch.setattr(policy_module, "BAB_RACE_UNSTABLE_SHARE", 0.0)
    monkeypatch.setattr(policy_module, "BAB_RACE_MIN_UNSTABLE", count if by_count else count + 1)
    seen = _raced_entries(monkeypatch)
    said: list[str] = []
    res = lipschitz(
        net, box, c=np.ones(1), time_limit=60, regions=False, split=False, progress=said.append
    )
    truth = brute_force_lipschitz(*from_lipopt(net, box), c=np.ones(1), input_norm="linf").value
    assert bool(seen) is not by_count, "the race ran" if by_count else "the race did not run"
    assert not any(entry["bab"] is True for entry in seen.values())
    assert any(ALONE in line for line in said) is by_count
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth, rel=1e-6)


def test_on_a_dask_cluster_the_branch_and_bound_races_instead(monkeypatch):
    """With a scheduler the rule still takes the branch and bound, but not alone: it races the
    backward MIP in the forward racer's place (its own search keeps one process there)."""
    net = random_network(np.random.default_rng(1), [6, 10, 10, 1])
    box = LinfBall(np.full(6, 0.5), 0.5)
    policy = Policy.current()
    levers = {**LEVER_DEFAULTS, "time_limit": 60.0}
    query, config = configure(net, box, "linf", (np.ones(1), None), levers, policy)
    facts = Facts(2, True, frozenset({"highs", "scip"}))
    count = query.bounds().unstable_count
    monkeypatch.setattr(policy_module, "BAB_RACE_MIN_UNSTABLE", count)
    node = _race_node(plan(query, config, facts, Policy.current()))
    assert isinstance(node, Race) and bab_takes(node, query)
    assert bab_alone(node, query)
    clustered = replace(node, config=node.config.but(scheduler="tcp://127.0.0.1:1"))
    assert bab_takes(clustered, query) and not bab_alone(clustered, query)
    monkeypatch.setattr(policy_module, "BAB_RACE_MIN_UNSTABLE", count + 1)
    fewer = _race_node(plan(query, config, facts, Policy.current()))
    assert not bab_takes(fewer, query) and not bab_alone(fewer, query)


@pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")
@pytest.mark.parametrize("by_count", [True, False])
def test_where_the_branch_and_bound_takes_it_by_its_count_it_starts_at_once(monkeypatch, by_count):
    """Below ``AUTO_REGION_UNSTABLE_SHARE``, a region search would run here first and the probe
    after it; where the branch and bound takes the race's place by ``BAB_RACE_MIN_UNSTABLE``,
    it starts at once instead, alone. The answer is the oracle's either way."""
    net = random_network(np.random.default_rng(1), [6, 10, 10, 1])
    ball = LinfBall(np.full(6, 0.5), 0.5)
    count = Query(net, ball, InputNorm.LINF, np.ones(1)).bounds().unstable_count
    assert count < policy_module.AUTO_REGION_UNSTABLE_SHARE * 20  # the share rule would not
    # 6 inputs, below BAB_RACE_MIN_INPUTS: the count rule alone decides
    monkeypatch.setattr(policy_module, "BAB_RACE_MIN_UNSTABLE", count if by_count else count + 1)
    said: list[str] = []
    res = lipschitz(net, ball, c=np.ones(1), time_limit=60, progress=said.append)
    assert any("the branch and bound at once" in line for line in said) is by_count
    assert any(ALONE in line for line in said) is by_count
    assert any("searching regions" in line for line in said) is not by_count
    truth = brute_force_lipschitz(*from_lipopt(net, ball), c=np.ones(1), input_norm="linf").value
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth, rel=1e-6)
