"""The race's early decision (split_leader): the racers report their proven bounds while they
solve, and once one is DECISIVE_RATIO times the other's (after EARLY_LEADER_AFTER seconds),
both stop and the leader is split then instead of at LEADER_AFTER."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Box, lipschitz
from lipopt.driver import context, solve_entry
from lipopt.norms import dual_norm
from lipopt.parallel.race import race_answers
from lipopt.parallel.workers import can_fork
from lipopt.policy import DECISIVE_RATIO, EARLY_LEADER_AFTER, Policy
from tests.helpers import random_network
from tests.strategies.test_race import race_at_once  # noqa: F401 (a fixture)

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")
race_module = importlib.import_module("lipopt.parallel.race")
race_strategy = importlib.import_module("lipopt.strategies.race")
policy_module = importlib.import_module("lipopt.policy")

needs_fork = pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")


def test_the_rule_waits_for_its_time_and_a_clear_lead():
    said: list[str] = []
    decisive = race_strategy.decisive(said.append, Policy.current())
    clear = {"forward (highs)": 10.0, "backward (scip)": 10.0 * DECISIVE_RATIO + 0.01}
    assert not decisive(EARLY_LEADER_AFTER - 0.1, clear)  # too early
    close = {"forward (highs)": 10.0, "backward (scip)": 10.0 * DECISIVE_RATIO - 0.01}
    assert not decisive(EARLY_LEADER_AFTER + 5, close)
    silent = {"forward (highs)": 10.0, "backward (scip)": np.inf}  # not reporting yet
    assert not decisive(EARLY_LEADER_AFTER + 5, silent)
    assert not said
    assert decisive(EARLY_LEADER_AFTER + 5, clear)
    assert len(said) == 1 and "the forward (highs) model's proven bound 10 " in said[0]


def test_no_racer_hook_outside_a_racer():
    """The hook travels in the context: a user's query has none (only a racer's process gets
    one, from the race)."""
    assert context(None, Policy.current()).stop is None


def _hard_problem():
    """A network whose race takes minutes: both racers report bounds long before finishing."""
    net = random_network(np.random.default_rng(1001), [10, 20, 20, 1])
    return net, Box(np.zeros(10), np.ones(10))


@needs_fork
def test_stop_when_stops_both_racers_with_sound_bounds():
    net, box = _hard_problem()
    base = dict(norm="linf", split=False, regions=False, attack=False, time_limit=120)
    entries = {
        "forward (highs)": dict(base, formulation="forward", solver="highs"),
        "backward (scip)": dict(base, formulation="backward", solver="scip"),
    }
    seen: list[tuple[float, dict[str, float]]] = []

    def once_both_report(seconds: float, bounds: dict[str, float]) -> bool:
        seen.append((seconds, bounds))
        return all(np.isfinite(b) for b in bounds.values())

    def run(name, entry, stop):  # each racer's process: its question, reporting to its hook
        return solve_entry(net, box, entry, stop)

    winner, answers = race_answers(net, box, entries, 120, stop_when=once_both_report, run=run)
    assert winner is None and set(answers) == set(entries)
    stopped_at = seen[-1][0]
    assert stopped_at < 60, "the racers were not stopped when asked"
    points = box.sample(2000, np.random.default_rng(0))
    sampled = max(float(dual_norm(net.gradients(x, np.ones(1)), "linf")) for x in points)
    for name, answer in answers.items():
        assert answer.status == "interrupted", name
        # what a racer reported is what it answers with: a proven bound, above every sample
        assert answer.upper <= seen[-1][1][name] + 1e-6
        assert answer.upper >= sampled - 1e-9
        assert answer.lower is None or answer.lower <= answer.upper


@needs_fork
def test_split_leader_races_with_the_early_rule_and_without_it_none(monkeypatch):
    seen: list[object] = []

    def fake(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        seen.append(stop_when)
        return next(iter(entries)), {
            name: lipschitz_module.lipschitz(network, domain, **dict(entry, time_limit=None))
            for name, entry in list(entries.items())[:1]
        }

    monkeypatch.setattr(race_module, "race_answers", fake)
    net = random_network(np.random.default_rng(5), [3, 10, 10, 2])
    box = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    monkeypatch.setattr(policy_module, "RACE_AFTER", 1e-4)
    for split_leader in (True, False):
        lipschitz(
            net, box, c=[1.0, -1.0], split=False, regions=False, split_leader=split_leader
        )  # fmt: skip
    assert len(seen) == 2
    assert callable(seen[0]) and seen[1] is None


@needs_fork
@pytest.mark.usefixtures("race_at_once")
def test_an_early_decision_splits_the_leader_and_the_answer_stays_sound(monkeypatch):
    """With the rule made eager (any lead, from the start) the racers stop as soon as both
    report, well before LEADER_AFTER, the leader is split from then on, and the answer's
    bounds hold every sample."""
    monkeypatch.setattr(policy_module, "EARLY_LEADER_AFTER", 0.0)
    monkeypatch.setattr(policy_module, "DECISIVE_RATIO", 1.0)
    # a short test: the decision would come at 20 s (well after the early one, even on a busy
    # machine), and the split may have little time
    monkeypatch.setattr(policy_module, "LEADER_AFTER", 20.0)
    monkeypatch.setattr(policy_module, "MIN_LEADER_SPLIT_SECONDS", 0.0)
    net, box = _hard_problem()
    said: list[str] = []
    res = lipschitz(net, box, "linf", time_limit=35, progress=said.append)
    stop = [line for line in said if "stopping the racers" in line]
    assert len(stop) == 1 and int(stop[0].split("after ")[1].split(" s")[0]) < 20, said
    assert any("split on" in line for line in said), said
    points = box.sample(2000, np.random.default_rng(1))
    sampled = max(float(dual_norm(net.gradients(x, np.ones(1)), "linf")) for x in points)
    assert res.upper >= sampled - 1e-9
    assert res.lower is not None and res.lower <= res.upper
    assert float(dual_norm(net.gradients(res.witness, np.ones(1)), "linf")) == pytest.approx(
        res.lower
    )
