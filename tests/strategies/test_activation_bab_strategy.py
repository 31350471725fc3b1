"""``bab=True``: the activation branch and bound answers instead of the plan (issue 45). Its
brackets when stopped (its exact answers: tests/strategies/test_bab_parts.py), the command
line, the plan and the refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import lipopt
from lipopt.cli import main
from lipopt.plan import describe
from tests import oracle
from tests.helpers import random_network, save_onnx


def test_a_stopped_bab_brackets_the_constant():
    rng = np.random.default_rng(5)
    net = random_network(rng, [4, 12, 12, 1])
    domain = lipopt.Box(np.zeros(4), np.ones(4))
    truth = oracle.brute_force_lipschitz(
        *oracle.from_lipopt(net, domain), c=[1.0], input_norm="linf"
    )
    result = lipopt.lipschitz(net, domain, bab=True, time_limit=0.05)
    assert result.lower is not None
    assert result.lower <= truth.value * (1 + 1e-9) + 1e-12
    assert truth.value <= result.upper * (1 + 1e-9) + 1e-12


def test_the_command_line_takes_bab(tmp_path, capsys):
    net = random_network(np.random.default_rng(2), [2, 8, 8, 1])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    code = main(["solve", path, "--box", "0,1", "--bab", "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "optimal" and out["bab_nodes"] >= 1
    assert out["solver"].startswith("activation branch and bound")


def test_the_plan_names_it_and_the_refusals_are_one_line():
    net = random_network(np.random.default_rng(1), [2, 6, 1])
    box = lipopt.Box(np.zeros(2), np.ones(2))
    from lipopt.config import SolveConfig
    from lipopt.plan import facts_here, plan
    from lipopt.policy import Policy
    from lipopt.query import Query

    node = plan(Query(net, box, lipopt.InputNorm.LINF, np.ones(1)), SolveConfig(bab=True),
                facts_here(frozenset()), Policy.current())  # fmt: skip
    assert describe(node).startswith("activation branch and bound")
    with pytest.raises(lipopt.LipschitzError, match="needs mode 'exact'"):
        lipopt.lipschitz(net, box, bab=True, mode="lp")
    with pytest.raises(lipopt.LipschitzError, match="must be True, False or 'auto'"):
        lipopt.lipschitz(net, box, bab="yes")


def _question(norm="linf", c=(1.0,), domain=None, **config):
    from lipopt.config import SolveConfig
    from lipopt.query import Query

    net = random_network(np.random.default_rng(1), [2, 6, 1])
    domain = domain or lipopt.Box(np.zeros(2), np.ones(2))
    seed = np.asarray(c) if c is not None else lipopt.OutputNorm.ABS
    query = Query(net, domain, lipopt.InputNorm(norm), seed)
    return query, SolveConfig(**config)


@pytest.mark.parametrize(
    "question, wrapped",
    [
        (dict(time_limit=10.0), True),
        (dict(time_limit=10.0, norm="l1"), True),
        (dict(time_limit=10.0, domain=lipopt.L1Ball(np.full(2, 0.5), 0.2)), True),
        (dict(), False),  # no time limit: the plan finishes
        (dict(time_limit=10.0, bab=False), False),
        (dict(time_limit=10.0, norm="l2"), False),
        (dict(time_limit=10.0, c=None), False),  # an output norm
        (dict(time_limit=10.0, mode=lipopt.config.Mode.LP), False),
        (dict(time_limit=10.0, domain=lipopt.L2Ball(np.full(2, 0.5), 0.2)), False),
    ],
)
def test_bab_after_the_plan_only_where_it_takes_the_question(question, wrapped):
    from lipopt.plan.nodes import BabAfter, Mip
    from lipopt.plan.planner import with_bab_after
    from lipopt.policy import Policy

    query, config = _question(**question)
    from lipopt.formulation.build import Formulation

    backward = config.but(formulation=Formulation.BACKWARD)
    placeholder = Mip(backward, "highs", False, False, False, None, False)
    assert with_bab_after(placeholder, query, config, Policy.current()) is placeholder  # 1.0
    policy = replace(Policy.current(), bab_after_share=0.5)  # as measured in bab_after.md
    node = with_bab_after(placeholder, query, config, policy)
    assert isinstance(node, BabAfter) is wrapped
    if wrapped:
        assert node.first is placeholder and "then" not in describe(node)
        assert "if unfinished at 50% of the time limit" in describe(node)


def test_bab_after_an_unfinished_plan_keeps_a_sound_bracket(monkeypatch):
    """[10,20,20,1] on the unit box does not finish in 2 s: the plan stops at half the limit,
    the branch and bound runs for the rest, and the meet is sound (10,000 samples never exceed
    the upper bound; the lower bound is attained at the witness)."""
    monkeypatch.setattr(lipopt.policy, "BAB_AFTER_SHARE", 0.5)
    rng = np.random.default_rng(0)
    net = random_network(rng, [10, 20, 20, 1])
    box = lipopt.Box(np.zeros(10), np.ones(10))
    result = lipopt.lipschitz(net, box, time_limit=5.0)
    assert result.status in ("time_limit", "optimal")
    if result.status == "time_limit":
        assert "the better bounds of both kept" in result.message
    points = rng.uniform(0.0, 1.0, size=(10_000, 10))
    sampled = np.abs(net.gradients(points, np.ones(1))).sum(axis=1).max()
    assert sampled <= result.upper * (1 + 1e-9)
    at_witness = np.abs(net.gradients(np.asarray(result.witness)[None, :], np.ones(1))).sum()
    assert at_witness == pytest.approx(result.lower, rel=1e-9)


@pytest.mark.parametrize(
    "solver",
    [
        pytest.param("scip", marks=pytest.mark.requires_solver("scip")),
        pytest.param("cbc", marks=pytest.mark.requires_solver("cbc")),
    ],
)
def test_the_part_mips_use_the_users_solver(solver, monkeypatch):
    from lipopt.strategies import bab_parts

    asked = []
    original = bab_parts.get
    monkeypatch.setattr(bab_parts, "get", lambda name: asked.append(name) or original(name))
    net = random_network(np.random.default_rng(7), [3, 10, 10, 1])
    domain = lipopt.Box(np.zeros(3), np.ones(3))
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), [1.0], "linf").value
    result = lipopt.lipschitz(net, domain, bab=True, solver=solver)
    assert asked == [solver]  # the parts' adapter (once per search), not HiGHS
    assert f"{solver} MIPs on small parts" in result.solver
    oracle.assert_certified_exact(result.value, truth)
    assert result.status == "optimal"


@pytest.mark.parametrize("attack, runs", [("auto", True), (True, True), (False, False)])
def test_the_start_attack_runs_unless_the_question_turns_it_off(attack, runs, monkeypatch):
    """``attack=False`` (a race's branch and bound, whose MIP racer runs the attack) starts the
    search from its own short attack; the answer is still the oracle's."""
    from lipopt.strategies import activation_bab as strategy

    calls = []
    original = strategy.attack_witness
    monkeypatch.setattr(
        strategy, "attack_witness", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    net = random_network(np.random.default_rng(3), [3, 10, 10, 1])
    domain = lipopt.Box(np.zeros(3), np.ones(3))
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), [1.0], "linf").value
    result = lipopt.lipschitz(net, domain, bab=True, attack=attack, time_limit=60)
    assert bool(calls) is runs
    oracle.assert_certified_exact(result.value, truth)
    assert result.status == "optimal"


@pytest.mark.parametrize("group", [8, 0])
def test_the_planned_search_takes_the_policys_sign_groups(group, monkeypatch):
    """``bab=True`` with the ℓ∞ input norm: the planner hands the policy's sign-group size to
    the search, whose lowered parts ``model_stats`` counts (none where the policy turns the
    groups off); the answer is the oracle's either way."""
    monkeypatch.setattr(lipopt.policy, "BAB_SIGN_GROUP", group)
    net = random_network(np.random.default_rng(7), [4, 10, 10, 1])
    domain = lipopt.Box(-np.ones(4), np.ones(4))
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), [1.0], "linf").value
    result = lipopt.lipschitz(net, domain, bab=True, time_limit=60)
    oracle.assert_certified_exact(result.value, truth)
    assert (result.model_stats["bab_regrouped"] > 0) is (group > 0)


@pytest.mark.parametrize("full_value, entries, kept", [
    (2.0, 60, 2.0), (0.5, 60, 1.0), (2.0, 59, 1.0),
])  # fmt: skip
def test_the_start_runs_the_full_attack_on_small_networks_and_keeps_the_better(
    full_value, entries, kept, monkeypatch
):
    """The start's short attack (``BAB_ATTACK_RESTARTS`` searches), then the full one
    (``ATTACK_RESTARTS``) where hidden neurons x inputs is at most
    ``BAB_FULL_ATTACK_MAX_ENTRIES`` (here 20 x 3 = 60 against a limit of 60 or 59): the better
    of the two is the start. The attacks are stand-ins with known values."""
    from lipopt.config import LEVER_DEFAULTS
    from lipopt.configure import configure
    from lipopt.heuristics.witness import Witness
    from lipopt.plan import Facts, plan
    from lipopt.progress import silent
    from lipopt.strategies import activation_bab as strategy
    from lipopt.strategies.context import Context

    policy = lipopt.policy.Policy.current()
    values = {policy.bab_attack_restarts: 1.0, policy.attack_restarts: full_value}
    asked: list[int] = []

    def stand_in(query, used, *args, **kwargs):
        asked.append(used.attack_restarts)
        return Witness(np.zeros(3), values[used.attack_restarts], True)

    monkeypatch.setattr(strategy, "attack_witness", stand_in)
    net = random_network(np.random.default_rng(3), [3, 10, 10, 1])
    levers = {**LEVER_DEFAULTS, "bab": True}
    query, config = configure(
        net, lipopt.Box(np.zeros(3), np.ones(3)), "linf", (np.ones(1), None), levers, policy
    )
    node = plan(query, config, Facts(2, True, frozenset({"highs"})), policy)
    policy = replace(policy, bab_full_attack_max_entries=entries)
    found = strategy._start(node, query, 60.0, Context(silent, policy, None))
    assert found is not None and found.norm_value == kept
    runs_full = entries >= 60
    assert asked == [policy.bab_attack_restarts, policy.attack_restarts][: 1 + runs_full]
