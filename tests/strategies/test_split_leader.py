"""split_leader=True (the default): where the two formulations race and neither finishes by
LEADER_AFTER, the one with the smaller proven bound is solved again split in halves; and
``start_point``, the point whose value the MIP must beat. The answers stay exact."""

from __future__ import annotations

import importlib
from dataclasses import fields, replace

import numpy as np
import pytest

from lipopt import Box, LipschitzError, lipschitz
from lipopt.norms import dual_norm
from lipopt.parallel.workers import can_fork
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt
from tests.strategies.test_race import _spy_on_race, race_at_once  # noqa: F401 (a fixture)
from tests.test_lipschitz_oracle import SCALAR_CASES, scalar_case

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")
driver_module = importlib.import_module("lipopt.driver")
race_strategy = importlib.import_module("lipopt.strategies.race")
race_module = importlib.import_module("lipopt.parallel.race")
refine_module = importlib.import_module("lipopt.strategies.refine")
policy_module = importlib.import_module("lipopt.policy")

needs_fork = pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")

LINF_CASES = [case for case, (_, _, norm) in enumerate(SCALAR_CASES) if norm == "linf"]


def _unfinished_race(monkeypatch, looser: dict[str, float]) -> dict[str, dict]:
    """Replace the race by one in which neither racer finished: each racer's model is solved
    here, and its answer reported unfinished with the upper bound ``upper * looser[form] + 1``
    (still a sound bound, only a weaker one) and no witness. Records the racers' entries."""
    seen: dict[str, dict] = {}

    def fake(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        seen.update(entries)
        answers = {}
        for name, entry in entries.items():
            solved = lipschitz_module.lipschitz(network, domain, **dict(entry, time_limit=None))
            upper = solved.upper * looser[entry["formulation"].value] + 1.0
            answers[name] = replace(
                solved, status="time_limit", upper=upper, value=upper, lower=None,
                witness=None, exact_certified=False, model=None,
            )  # fmt: skip
        return None, answers

    monkeypatch.setattr(race_module, "race_answers", fake)
    return seen


def _spy_on_leader_solves(monkeypatch) -> list[dict]:
    """Record the keyword arguments of every sub-question the leader's split asks the driver."""
    calls: list[dict] = []
    real = driver_module.Driver.solve

    def spy(self, query, config, ctx):
        arguments = {f.name: getattr(config, f.name) for f in fields(config)}
        if arguments.get("gate_split") or arguments.get("sign_split"):
            calls.append(arguments)
        return real(self, query, config, ctx)

    monkeypatch.setattr(driver_module.Driver, "solve", spy)
    return calls


@needs_fork
@pytest.mark.usefixtures("race_at_once")
@pytest.mark.parametrize("leader", ["forward", "backward"])
@pytest.mark.parametrize("case", LINF_CASES)
def test_the_leader_split_equals_brute_force(case, leader, monkeypatch):
    """The racer with the smaller proven bound is solved again, split the way its formulation
    splits (forward: a first-layer gate; backward: a gradient sign), and the answer is the
    brute-force constant with a witness that attains it."""
    net, domain, norm, c, truth, _ = scalar_case(case)
    other = "backward" if leader == "forward" else "forward"
    seen = _unfinished_race(monkeypatch, {leader: 1.5, other: 3.0})
    calls = _spy_on_leader_solves(monkeypatch)
    said: list[str] = []
    res = lipschitz(net, domain, norm=norm, c=c, split=False, regions=False, progress=said.append)
    assert all(entry["time_limit"] == policy_module.LEADER_AFTER for entry in seen.values())
    assert len(calls) == 1 and calls[0]["formulation"].value == leader
    assert calls[0]["gate_split"] is (leader == "forward")
    assert calls[0]["sign_split"] is (leader == "backward")
    assert calls[0]["attack"] is True
    assert "split in halves" in res.message
    assert any(f"the {leader} (" in line and "split on" in line for line in said)
    # the halves really ran (not the model whole, as where no gate or sign is open)
    assert any(line.startswith("splitting the search on") for line in said)
    key = "gate_split_neuron" if leader == "forward" else "sign_split_entry"
    assert key in res.model_stats
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    cvec = np.ones(1) if c is None else c
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower)
    assert {"race", "solve"} <= set(res.timings)


@needs_fork
@pytest.mark.usefixtures("race_at_once")
def test_the_leader_split_starts_from_the_racers_best_point(monkeypatch):
    """The racers' best attained point is handed to the split as ``start_point``: a point of the
    domain attaining the racers' lower bound."""
    net, domain, norm, c, truth, _ = scalar_case(LINF_CASES[1])
    seen: dict[str, dict] = {}
    point = domain.sample(1, np.random.default_rng(0))[0]
    value = float(dual_norm(net.gradients(point, c), norm))

    def fake(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        seen.update(entries)
        answers = {}
        for name, entry in entries.items():
            solved = lipschitz_module.lipschitz(network, domain, **dict(entry, time_limit=None))
            answers[name] = replace(
                solved, status="time_limit", upper=solved.upper + 1, value=solved.upper + 1,
                lower=value, witness=point, exact_certified=False, model=None,
            )  # fmt: skip
        return None, answers

    monkeypatch.setattr(race_module, "race_answers", fake)
    calls = _spy_on_leader_solves(monkeypatch)
    said: list[str] = []
    # without the attack, the racers' point is the split's only cutoff
    res = lipschitz(
        net, domain, norm=norm, c=c, split=False, regions=False, attack=False,
        progress=said.append,
    )  # fmt: skip
    assert len(calls) == 1 and np.array_equal(calls[0]["start_point"], point)
    assert any(line.startswith(f"start point: {value:.6g}") for line in said)
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


@needs_fork
@pytest.mark.usefixtures("race_at_once")
def test_racers_that_close_the_gap_together_are_not_split(monkeypatch):
    """One racer's proven bound meets the other's attained value: the race has answered, and
    no split runs."""
    net, domain, norm, c, truth, _ = scalar_case(LINF_CASES[0])

    def fake(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        answers = {}
        for n, (name, entry) in enumerate(entries.items()):
            solved = lipschitz_module.lipschitz(network, domain, **dict(entry, time_limit=None))
            # the first keeps its bound and loses its point, the second the other way round
            upper = solved.upper if n == 0 else solved.upper + 1
            lower = None if n == 0 else solved.lower
            answers[name] = replace(
                solved, status="time_limit", upper=upper, value=upper, lower=lower,
                witness=None if n == 0 else solved.witness, exact_certified=False, model=None,
            )  # fmt: skip
        return None, answers

    monkeypatch.setattr(race_module, "race_answers", fake)
    calls = _spy_on_leader_solves(monkeypatch)
    res = lipschitz(net, domain, norm=norm, c=c, split=False, regions=False)
    assert not calls and "closed the gap" in res.message
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


@needs_fork
@pytest.mark.usefixtures("race_at_once")
def test_a_failed_split_answers_with_the_racers_bounds(monkeypatch):
    """The leader's split fails: the racers' certified bounds stand, with a note, under the
    failure's status (not relabelled as a time limit), and the failed split's time is
    counted."""
    net, domain, norm, c, truth, _ = scalar_case(LINF_CASES[0])
    _unfinished_race(monkeypatch, {"forward": 1.5, "backward": 3.0})
    real = race_strategy.Raced.solve

    def fails_when_split(self, **overrides):
        if overrides.get("gate_split") or overrides.get("sign_split"):
            raise lipschitz_module.SolverError("stopped by the test")
        return real(self, **overrides)

    monkeypatch.setattr(race_strategy.Raced, "solve", fails_when_split)
    res = lipschitz(net, domain, norm=norm, c=c, split=False, regions=False)
    assert "split failed (stopped by the test)" in res.message
    assert res.status == "solver_error"
    assert res.upper >= truth.value * (1 - 1e-9)
    assert {"race", "solve"} <= set(res.timings)


@needs_fork
@pytest.mark.usefixtures("race_at_once")
def test_no_bound_by_the_decision_races_for_the_time_left(monkeypatch):
    """Neither racer proved a bound by the decision (a large model): the race goes on for the
    time left, without a split, and still answers exactly."""
    net, domain, norm, c, truth, _ = scalar_case(LINF_CASES[0])
    limits: list[set] = []  # the racers' own time limits, race by race
    waits: list[float | None] = []  # how long each race waits for its racers
    real = race_module.race_answers

    def first_fails(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        limits.append({entry["time_limit"] for entry in entries.values()})
        waits.append(time_limit)
        if len(limits) == 1:
            raise lipschitz_module.NoBoundError("no bound yet (the test)")
        return real(network, domain, entries, time_limit, stop_when=stop_when, run=run)

    monkeypatch.setattr(race_module, "race_answers", first_fails)
    said: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, split=False, regions=False, time_limit=120,
        progress=said.append,
    )  # fmt: skip
    # the racers stop at the decision, but the race waits for them as long as the limit allows
    assert limits[0] == {policy_module.LEADER_AFTER} and 100 < waits[0] < 120
    (second,) = limits[1]
    assert 60 < second < 120 and waits[1] == second
    assert any("racing them for the time left" in line for line in said)
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


@needs_fork
@pytest.mark.usefixtures("race_at_once")
@pytest.mark.parametrize(
    "options, decides",
    [
        (dict(split_leader=False), False),
        (dict(time_limit=35.0), False),  # under LEADER_AFTER + MIN_LEADER_SPLIT_SECONDS
        (dict(time_limit=80.0), False),
        (dict(time_limit=100.0), True),
        (dict(), True),
    ],
)
def test_when_the_racers_stop_at_the_decision(options, decides, monkeypatch):
    """The racers get LEADER_AFTER seconds only where a split can follow: split_leader on and
    enough time left (no time limit, or at least LEADER_AFTER + MIN_LEADER_SPLIT_SECONDS)."""
    net, domain, norm, c, _, _ = scalar_case(LINF_CASES[0])
    seen = _spy_on_race(monkeypatch)
    lipschitz(net, domain, norm=norm, c=c, split=False, regions=False, **options)
    limits = {entry["time_limit"] for entry in seen.values()}
    assert len(seen) == 2 and len(limits) == 1
    if decides:
        assert limits == {policy_module.LEADER_AFTER}
    elif "time_limit" in options:
        assert 30 < limits.pop() < options["time_limit"]
    else:
        assert limits == {None}


def test_split_leader_must_be_a_bool():
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    box = Box([0.0, 0.0], [1.0, 1.0])
    for wrong in (1, np.True_, "yes"):
        with pytest.raises(LipschitzError, match="split_leader must be True or False"):
            lipschitz(net, box, split_leader=wrong)


# ---- start -------------------------------------------------------------------------------


@pytest.mark.parametrize("formulation", ["backward", "forward"])
@pytest.mark.parametrize("case", range(len(SCALAR_CASES)))
def test_a_start_point_keeps_the_answer_exact(case, formulation, monkeypatch):
    """From a start point, its verified value becomes the cutoff (at most the constant, since
    it is attained) and the answer is still the brute-force constant; the ℓ1 decomposition
    takes it as its candidates' first cutoff."""
    net, domain, norm, c, truth, rng = scalar_case(case)
    point = domain.sample(1, rng)[0]
    cuts: list[float | None] = []
    real = refine_module.solve_refined

    def spy(*args):
        cuts.append(args[4])
        return real(*args)

    monkeypatch.setattr(refine_module, "solve_refined", spy)
    said: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation=formulation, split=False, regions=False,
        start_point=point, progress=said.append, workers=1,
    )  # fmt: skip
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    cvec = np.ones(1) if c is None else c
    given = float(dual_norm(net.gradients(point, cvec), norm))
    assert res.lower >= given * (1 - 1e-9)
    # no attack runs here, so the start point's value (a random point's: differentiable, its
    # region full-dimensional) is the cutoff
    assert any(line.startswith("start point:") for line in said)
    assert cuts and all(cut is not None and cut <= truth.value for cut in cuts)
    # the first cutoff is the start point's own value (its region's gradient), less 1e-6
    assert cuts[0] == pytest.approx(given, rel=1e-5, abs=2e-6)


def test_the_start_point_at_the_optimum_is_proven_optimal():
    """Started from the brute-force maximiser's region, the MIP only has to prove that
    nothing beats it: the answer is the constant, attained at the start point's region."""
    net, domain, norm, c, truth, _ = scalar_case(LINF_CASES[2])
    point = np.asarray(truth.argmax_point, dtype=np.float64)
    said: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation="backward", split=False, regions=False,
        start_point=point, progress=said.append,
    )  # fmt: skip
    assert any(line.startswith("start point:") for line in said)
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


def test_a_bad_start_point_is_a_clear_error():
    net = random_network(np.random.default_rng(0), [2, 4, 2])
    box = Box([0.0, 0.0], [1.0, 1.0])
    cases = [
        ([0.5, 0.5, 0.5], "2 entries"),
        ([[0.5, 0.5]], "2 entries"),
        ([0.5, np.nan], "finite"),
        ([1.5, 0.5], "in the domain"),
        (["a", "b"], "a point of 2 numbers"),
        (np.array([0.5, 0.5j]), "a point of 2 numbers"),
    ]
    for start, message in cases:
        with pytest.raises(LipschitzError, match=message):
            lipschitz(net, box, c=[1.0, -1.0], start_point=start)
    with pytest.raises(LipschitzError, match="exact"):
        lipschitz(net, box, c=[1.0, -1.0], start_point=[0.5, 0.5], mode="lp")
    with pytest.raises(LipschitzError, match="fixed c"):
        lipschitz(net, box, output_norm="linf", start_point=[0.5, 0.5])


def test_a_start_point_is_not_used_within_the_parts_of_a_domain_split():
    """A domain split's parts do not take the start point (it lies outside most of them)."""
    rng = np.random.default_rng(3)
    net = random_network(rng, [2, 8, 8, 1])
    box = Box([0.0, 0.0], [1.0, 1.0])
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "linf")
    said: list[str] = []
    res = lipschitz(net, box, split=True, start_point=[0.9, 0.1], progress=said.append)
    assert not any(line.startswith("start point:") for line in said)
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
