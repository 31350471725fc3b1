"""attack=True: the MIP starts from the gradient attack's attained value as a cutoff, and stays
exact (brute force), including when the solver proves that nothing beats the cutoff."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Box, LinfBall, LipschitzError, lipschitz
from lipopt.heuristics.starts import attack_witness
from lipopt.norms import dual_norm
from lipopt.plan import Facts
from lipopt.policy import Policy
from lipopt.query import Query
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt
from tests.test_lipschitz_oracle import SCALAR_CASES, scalar_case

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")
race_module = importlib.import_module("lipopt.parallel.race")
driver_module = importlib.import_module("lipopt.driver")
mip_module = importlib.import_module("lipopt.strategies.mip")
refine_module = importlib.import_module("lipopt.strategies.refine")
policy_module = importlib.import_module("lipopt.policy")


def _spy_on_cutoffs(monkeypatch) -> list[tuple[float | None, bool]]:
    """Record (cutoff, cut_off) of every _solve_refined call."""
    seen: list[tuple[float | None, bool]] = []
    real = refine_module.solve_refined

    def spy(*args):
        solved = real(*args)
        seen.append((args[4] if len(args) > 4 else None, solved.cut_off))
        return solved

    monkeypatch.setattr(refine_module, "solve_refined", spy)
    return seen


# (case, formulation, decompose): the ℓ1 decomposition only for the ℓ1 input norm
ATTACK_CASES = [
    (case, formulation, decompose)
    for case, (_, _, norm) in enumerate(SCALAR_CASES)
    for formulation, decompose in [("backward", False), ("backward", True), ("forward", False)]
    if norm == "l1" or not decompose
]


@pytest.mark.parametrize("case, formulation, decompose", ATTACK_CASES)
def test_attack_start_equals_brute_force(case, formulation, decompose, monkeypatch):
    """Single models and (ℓ1 norm) the decomposition's candidates, one process so that the spy
    sees every solve."""
    net, domain, norm, c, truth, rng = scalar_case(case)
    seen = _spy_on_cutoffs(monkeypatch)
    messages: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation=formulation, split=False, regions=False,
        decompose=decompose, workers=1, attack=True, progress=messages.append,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert "attack" in res.timings and any(m.startswith("attack: ") for m in messages)
    # every MIP ran under a cutoff below the constant (decomposed: candidates whose bound is
    # below the attained value are skipped without one)
    assert all(cut is not None and cut <= truth.value for cut, _ in seen)
    assert seen or decompose
    if not decompose:  # the single model comes back as the plain problem
        assert res.model.model.component("cutoff") is None
    cvec = np.ones(1) if c is None else c
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower)


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_a_cutoff_nothing_reaches_gives_a_certified_bracket(norm, monkeypatch):
    """Where the solver proves that nothing reaches the cutoff, the cutoff is the upper bound
    and the attack's point the lower. In use the cutoff sits 1e-6 below the attained value, so
    the two meet; it is raised above the constant here (which the attack attains on this small
    network) so that the solver must answer "infeasible", and the bracket must hold the truth."""
    rng = np.random.default_rng(12)
    net = random_network(rng, [3, 8, 6, 1])
    box = Box(np.zeros(3), np.ones(3))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, norm)
    norm_kind = lipschitz_module.InputNorm.parse(norm)
    query = Query(net, box, norm_kind, np.ones(1))
    found = attack_witness(query, Policy.current(), 0)
    assert found is not None and found.norm_value == pytest.approx(truth.value, rel=1e-9)
    monkeypatch.setattr(mip_module, "below", lambda value: value * (1 + 1e-3))
    seen = _spy_on_cutoffs(monkeypatch)
    res = lipschitz(
        net, box, norm=norm, split=False, regions=False, attack=True, formulation="backward",
        workers=1,
    )  # fmt: skip
    assert seen and all(cut_off for _, cut_off in seen)
    assert res.status == "gap_limit" and not res.exact_certified
    assert res.upper == pytest.approx(truth.value * (1 + 1e-3), rel=1e-9)
    assert res.lower == pytest.approx(truth.value, rel=1e-9)
    assert dual_norm(net.gradients(res.witness, np.ones(1)), norm) == pytest.approx(res.lower)


@pytest.mark.parametrize("time_limit", [1.5, 3.0])
def test_time_limited_attack_start_brackets_the_constant(time_limit):
    """Stopped early under the cutoff, the upper bound is still certified (the larger of the
    solver's bound and the attained value) and the lower bound attained. No timing asserted;
    the attack's time comes out of the limit."""
    rng = np.random.default_rng(8)
    net = random_network(rng, [5, 14, 14, 2])
    box = Box(np.zeros(5), np.ones(5))
    c = np.array([1.0, -1.0])
    exact = lipschitz(net, box, c=c, formulation="backward", regions=False, attack=False)
    assert exact.status == "optimal"
    res = lipschitz(
        net, box, c=c, formulation="backward", regions=False, attack=True, time_limit=time_limit
    )
    assert res.status in ("optimal", "time_limit")
    assert res.lower <= exact.value * (1 + 1e-9) <= res.upper * (1 + 2e-9)
    assert dual_norm(net.gradients(res.witness, c), "linf") == pytest.approx(res.lower)
    if res.status == "optimal":
        assert res.value == pytest.approx(exact.value, rel=1e-6)


def test_attack_option_is_checked():
    net = random_network(np.random.default_rng(2), [2, 6, 3])
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(LipschitzError, match="attack must be"):
        lipschitz(net, box, c=[1, 0, 0], attack="yes")
    with pytest.raises(LipschitzError, match="exact"):
        lipschitz(net, box, c=[1, 0, 0], attack=True, mode="lp")
    with pytest.raises(LipschitzError, match="fixed c"):
        lipschitz(net, box, output_norm="linf", attack=True)


def test_auto_attacks_only_in_the_racers(monkeypatch):
    """ "auto" leaves a plain solve alone and hands True to both racers."""
    net = random_network(np.random.default_rng(5), [3, 10, 10, 2])
    box = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    res = lipschitz(net, box, c=[1.0, -1.0], split=False, regions=False, formulation="backward")
    assert "attack" not in res.timings
    seen: dict[str, dict] = {}

    def fake_race(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        seen.update(entries)
        raise lipschitz_module.SolverError("stopped by the test")

    monkeypatch.setattr(race_module, "race_answers", fake_race)
    two_cores = Facts(cores=2, fork=True, solvers=frozenset({"highs", "scip"}))
    monkeypatch.setattr(driver_module, "here", lambda policy, config, query: two_cores)
    monkeypatch.setattr(policy_module, "RACE_AFTER", 1e-4)
    try:
        lipschitz(net, box, c=[1.0, -1.0], split=False, regions=False)
    except lipschitz_module.SolverError:
        pass  # no probe answer to fall back on: the race's error is the answer
    assert len(seen) == 2 and all(kw["attack"] is True for kw in seen.values())
    seen.clear()
    try:
        lipschitz(net, box, c=[1.0, -1.0], split=False, regions=False, attack=False)
    except lipschitz_module.SolverError:
        pass
    assert len(seen) == 2 and all(kw["attack"] is False for kw in seen.values())


@pytest.mark.parametrize("formulation", ["backward", "forward"])
@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_attack_start_with_a_constant_gradient(norm, formulation):
    """No hidden layer, or every neuron stable on a tiny ball: the gradient is one vector, the
    objective a number with nothing to cut off; the answer is its dual norm."""
    rng = np.random.default_rng(0)
    linear = random_network(rng, [3, 2])
    stable = random_network(rng, [3, 5, 1])
    cases = [
        (linear, Box(np.zeros(3), np.ones(3)), np.array([1.0, -1.0])),
        (stable, LinfBall(np.full(3, 0.5), 1e-6), np.ones(1)),
    ]
    for net, domain, c in cases:
        truth = dual_norm(net.gradients(domain.sample(1, rng), c)[0], norm)
        res = lipschitz(
            net, domain, norm, c=c, attack=True, formulation=formulation, regions=False,
            split=False,
        )  # fmt: skip
        assert res.status == "optimal" and res.exact_certified
        assert res.value == pytest.approx(truth, rel=1e-9)
