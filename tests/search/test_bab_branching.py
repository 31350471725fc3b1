"""The planned activation branch and bound's branching rule (policy ``BAB_SCORE_MIN_UNSTABLE``).

``auto`` splits by the ``score`` rule where the root has at least ``score_from`` unstable
neurons with a kink, else by the ``layer`` rule. Checked: the rule itself at the threshold, that
the planner hands the policy's threshold to the search, that the search splits by the rule it
resolved, and whole ``bab=True`` answers against the brute-force oracle either way."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Box, lipschitz
from lipopt.bounds.constrained import split_bounds
from lipopt.plan.nodes import ActivationBab
from lipopt.search.activation_rules import resolved_branching
from lipopt.search.kinds import unstable_count
from tests.helpers import planned_bab, random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

policy_module = importlib.import_module("lipopt.policy")
search_module = importlib.import_module("lipopt.search.activation_bab")


@pytest.mark.parametrize(
    "rule, count, expected",
    [("auto", 63, "layer"), ("auto", 64, "score"), ("auto", 500, "score"),
     ("layer", 500, "layer"), ("score", 0, "score")],
)  # fmt: skip
def test_auto_is_score_from_the_threshold_on(rule, count, expected):
    assert resolved_branching(rule, 64, count) == expected


def test_the_planner_hands_the_policys_threshold_to_the_search():
    node = planned_bab()
    assert isinstance(node, ActivationBab)
    assert node.options.branching == "auto"
    assert node.options.score_from == policy_module.BAB_SCORE_MIN_UNSTABLE


def _rules_used(monkeypatch) -> list[str]:
    """Record the rule of every split the search makes."""
    used: list[str] = []
    original = search_module.branch_neuron

    def spy(bounds, rule, slopes=None):
        used.append(rule)
        return original(bounds, rule, slopes)

    monkeypatch.setattr(search_module, "branch_neuron", spy)
    return used


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("below", [True, False])
def test_bab_answers_are_exact_with_the_rule_the_root_picks(monkeypatch, seed, below):
    """``bab=True`` with the threshold just above or at the root's unstable count: every split
    uses the resolved rule, and the answer is the oracle's."""
    net = random_network(np.random.default_rng(seed), [3, 8, 8, 1])
    box = Box(-np.ones(3), np.ones(3))
    unstable = unstable_count(net, split_bounds(net, box, np.array([1.0]), {}).states)
    assert unstable > 0
    monkeypatch.setattr(
        policy_module, "BAB_SCORE_MIN_UNSTABLE", unstable + 1 if below else unstable
    )
    monkeypatch.setattr(policy_module, "BAB_MIP_AT", 0)  # the search alone: it must split
    used = _rules_used(monkeypatch)
    res = lipschitz(net, box, "linf", bab=True)
    truth = brute_force_lipschitz(*from_lipopt(net, box), c=np.ones(1), input_norm="linf").value
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth, rel=1e-6)
    assert used and set(used) == {"layer" if below else "score"}
