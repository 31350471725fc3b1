"""formulation="auto": the backward probe, then forward and backward raced on two processes."""

from __future__ import annotations

import importlib
import re
from dataclasses import replace

import numpy as np
import pytest

from lipopt import Box, LinfBall, lipschitz
from lipopt.norms import dual_norm
from lipopt.parallel.race import merge
from lipopt.parallel.workers import can_fork
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")
race_module = importlib.import_module("lipopt.parallel.race")
policy_module = importlib.import_module("lipopt.policy")

pytestmark = pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")


@pytest.fixture
def race_at_once(monkeypatch):
    """No probe time: every auto solve races (the probe stops before proving anything)."""
    monkeypatch.setattr(policy_module, "RACE_AFTER", 1e-4)


def _through_driver(net, box):
    """What a racer's process runs: its entry, planned and run by the driver."""
    from lipopt.driver import solve_entry

    return lambda name, entry, stop: solve_entry(net, box, entry, stop)


def _spy_on_race(monkeypatch) -> dict[str, dict]:
    """Record the entries of every race lipschitz() starts."""
    seen: dict[str, dict] = {}
    real_race = race_module.race_answers

    def spy(network, domain, entries, time_limit, stop_when=None, run=None, slack=0.0):
        seen.update(entries)
        return real_race(
            network, domain, entries, time_limit, stop_when=stop_when, run=run, slack=slack
        )

    monkeypatch.setattr(race_module, "race_answers", spy)
    return seen


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize(
    "widths, domain",
    [
        ([3, 10, 10, 2], Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])),
        ([3, 8, 8, 8, 1], LinfBall([0.5, 0.2, 0.4], 0.5)),
    ],
)
def test_raced_solve_equals_brute_force(race_at_once, widths, domain, norm):
    rng = np.random.default_rng(sum(widths))
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    res = lipschitz(net, domain, norm=norm, c=c, split=False, regions=False)
    raced = norm == "linf"  # the l1 norm keeps the decomposed backward model (AUTO_RACE_NORMS)
    assert ("raced" in res.message) == raced and ("race" in res.timings) == raced
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    cvec = np.ones(1) if c is None else c
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower)


def test_raced_solve_under_a_time_limit_brackets_the_constant(race_at_once):
    rng = np.random.default_rng(8)
    net = random_network(rng, [5, 14, 14, 2])
    domain = Box(np.zeros(5), np.ones(5))
    c = np.array([1.0, -1.0])
    exact = lipschitz(net, domain, c=c, split=False, regions=False, formulation="backward")
    res = lipschitz(net, domain, c=c, split=False, regions=False, time_limit=1.5)
    assert "raced" in res.message
    assert res.status in ("optimal", "time_limit")
    assert res.upper >= exact.value * (1 - 1e-9)
    if res.lower is not None:
        assert res.lower <= exact.value * (1 + 1e-9)
        assert dual_norm(net.gradients(res.witness, c), "linf") == pytest.approx(res.lower)


def test_explicit_formulations_and_output_norms_never_race(race_at_once):
    net = random_network(np.random.default_rng(4), [3, 8, 8, 2])
    box = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    for kwargs in ({"c": [1, -1], "formulation": "forward"}, {"output_norm": "linf"}):
        res = lipschitz(net, box, split=False, regions=False, **kwargs)
        assert "raced" not in res.message and res.model is not None


def test_merge_keeps_the_smallest_upper_and_the_largest_attained_lower():
    net = random_network(np.random.default_rng(1), [2, 6, 1])
    base = lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), split=False, regions=False)
    a = replace(base, value=5.0, upper=5.0, lower=1.0, status="time_limit", exact_certified=False)
    b = replace(base, value=4.0, upper=4.0, lower=2.0, status="time_limit", exact_certified=False)
    witness_b = np.array([0.25, 0.75])
    b = replace(b, witness=witness_b)
    merged = merge([a, b])
    assert (merged.upper, merged.lower, merged.status) == (4.0, 2.0, "time_limit")
    np.testing.assert_array_equal(merged.witness, witness_b)
    closed = merge([a, replace(b, lower=4.0, exact_certified=True)])
    assert closed.status == "optimal" and closed.upper == 4.0 and closed.exact_certified


def test_merge_breaks_ties_toward_the_finished_certified_answer():
    """The probe often found the optimal region before the winner proved it: equal values."""
    net = random_network(np.random.default_rng(1), [2, 6, 1])
    winner = lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), split=False, regions=False)
    assert winner.status == "optimal" and winner.exact_certified
    probe = replace(winner, status="time_limit", exact_certified=False, upper=winner.upper * 2)
    probe = replace(probe, value=probe.upper)
    for order in ([probe, winner], [winner, probe]):
        merged = merge(order)
        assert merged.status == "optimal" and merged.exact_certified
        assert merged.upper == winner.upper
    same_upper = replace(probe, upper=winner.upper, value=winner.upper)
    assert merge([same_upper, winner]).status == "optimal"


def test_race_after_a_probe_with_bounds_stays_exact(monkeypatch):
    """A probe long enough to prove bounds but not to finish, then the race: the merged answer
    equals the backward model solved alone."""
    monkeypatch.setattr(policy_module, "RACE_AFTER", 0.3)
    rng = np.random.default_rng(8)
    net = random_network(rng, [5, 14, 14, 2])
    domain = Box(np.zeros(5), np.ones(5))
    c = np.array([1.0, -1.0])
    alone = lipschitz(net, domain, c=c, split=False, regions=False, formulation="backward")
    res = lipschitz(net, domain, c=c, split=False, regions=False)
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(alone.value, rel=1e-6)
    assert res.seconds == pytest.approx(sum(res.timings.values()))
    assert set(res.timings) >= {"probe", "race", "solve"}


def test_too_little_time_after_the_probe_is_a_clear_error_or_the_probe(race_at_once):
    """No race with less than MIN_RACE_SECONDS left: the probe's answer, or its own error."""
    from lipopt import LipschitzError
    from lipopt.solvers import SolverError

    net = random_network(np.random.default_rng(8), [5, 14, 14, 2])
    domain = Box(np.zeros(5), np.ones(5))
    try:
        res = lipschitz(net, domain, c=[1.0, -1.0], split=False, regions=False, time_limit=2e-4)
    except LipschitzError as err:  # pragma: no cover - the failure this test guards against
        pytest.fail(f"a negative time limit reached the racers: {err}")
    except SolverError as err:
        assert "without a proven bound" in str(err)
    else:
        assert "raced" not in res.message


def test_no_race_for_a_subprocess_solver_or_inside_a_daemonic_worker():
    assert not can_fork("cbc")
    import multiprocessing as mp

    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply(can_fork, ("highs",)) is False


def test_auto_solver_races_the_backward_model_on_scip_and_the_forward_on_highs(monkeypatch):
    from lipopt.formulation.build import Formulation
    from lipopt.plan import facts_here, race_solver
    from lipopt.policy import Policy
    from lipopt.solvers import registry

    def pick(solver, form):  # the machine's facts as they are at each call
        return race_solver(solver, form, facts_here(frozenset({"highs", "scip"})), Policy.current())

    assert pick("auto", Formulation.FORWARD) == "highs"
    assert pick(" AUTO ", Formulation.BACKWARD) == "scip"
    assert pick("highs", Formulation.BACKWARD) == "highs"  # a named solver solves both
    assert pick("scip", Formulation.FORWARD) == "scip"
    missing = registry.ADAPTERS["scip"]()
    monkeypatch.setattr(type(missing), "available", lambda self: False)
    assert pick("auto", Formulation.BACKWARD) == "highs"  # SCIP missing: HiGHS solves both


def test_auto_race_names_each_racers_solver(race_at_once, monkeypatch):
    seen = _spy_on_race(monkeypatch)
    rng = np.random.default_rng(5)
    net = random_network(rng, [3, 10, 10, 2])
    box = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    res = lipschitz(net, box, c=[1.0, -1.0], split=False, regions=False)
    assert {name: kw["solver"] for name, kw in seen.items()} == {
        "forward (highs)": "highs",
        "backward (scip)": "scip",
    }
    truth = brute_force_lipschitz(*from_lipopt(net, box), np.array([1.0, -1.0]), "linf")
    assert res.status == "optimal" and res.value == pytest.approx(truth.value, rel=1e-6)
    assert res.solver.split()[0] in ("highs", "scip")


def _race_problem():
    net = random_network(np.random.default_rng(5), [3, 10, 10, 2])
    box = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    base = dict(norm="linf", c=[1.0, -1.0], split=False, regions=False)
    return net, box, base


def test_one_racers_error_does_not_stop_the_other():
    from lipopt.parallel.race import race_answers

    net, box, base = _race_problem()
    alone = lipschitz(net, box, formulation="backward", **base)
    entries = {
        "broken": dict(base, formulation="backward", bounds="no-such-bounds"),
        "good": dict(base, formulation="forward"),
    }
    name, answers = race_answers(net, box, entries, time_limit=60, run=_through_driver(net, box))
    res = answers[name]
    assert name == "good" and res.status == "optimal"
    assert res.value == pytest.approx(alone.value, rel=1e-6)


def test_every_racer_failing_raises_the_first_error():
    from lipopt.parallel.race import race_answers

    net, box, base = _race_problem()
    entries = {
        "first": dict(base, formulation="backward", bounds="no-such-bounds"),
        "second": dict(base, formulation="forward", bounds="no-such-bounds"),
    }
    with pytest.raises(ValueError, match="unknown bound method"):
        race_answers(net, box, entries, time_limit=60, run=_through_driver(net, box))


def test_a_racer_that_dies_is_an_error_and_the_other_answers(monkeypatch):
    import os

    from lipopt.parallel.race import race_answers
    from lipopt.solvers import SolverError

    net, box, base = _race_problem()
    real = lipschitz_module.lipschitz

    def dies_on_forward(network, domain, **kwargs):
        if kwargs.get("formulation") == "forward":
            os._exit(3)  # the racer's process ends without answering
        return real(network, domain, **kwargs)

    def run(name, entry, stop):  # what each racer's (forked) process runs
        return dies_on_forward(net, box, **entry)

    entries = {
        "dies": dict(base, formulation="forward"),
        "lives": dict(base, formulation="backward"),
    }
    name, answers = race_answers(net, box, entries, time_limit=60, run=run)
    assert name == "lives" and answers[name].status == "optimal"
    with pytest.raises(SolverError, match="'dies' ended without an answer"):
        race_answers(net, box, {"dies": entries["dies"]}, time_limit=60, run=run)


def test_a_problem_that_looks_hard_races_at_once(monkeypatch):
    """At least AUTO_REGION_UNSTABLE_SHARE of the neurons unstable: no region search in this
    process and no probe; the backward racer searches the regions before its MIP; exact."""
    from lipopt.bounds import propagate

    rng = np.random.default_rng(9)
    net = random_network(rng, [6, 10, 6, 2])
    box = Box(np.zeros(6), np.ones(6))
    c = rng.normal(size=2)
    unstable = propagate(net, box, c).unstable_count
    assert unstable >= policy_module.AUTO_REGION_UNSTABLE_SHARE * 16  # the premise
    seen = _spy_on_race(monkeypatch)
    said: list[str] = []
    res = lipschitz(net, box, c=c, progress=said.append)
    assert any("racing at once" in line for line in said)
    assert not any("searching regions" in line for line in said[:2])
    assert {name: kw["regions"] for name, kw in seen.items()} == {
        "forward (highs)": False,
        "backward (scip)": "auto",
    }
    assert "probe" not in res.timings and "race" in res.timings
    assert res.seconds == pytest.approx(sum(res.timings.values()), rel=0.05, abs=0.05)
    truth = brute_force_lipschitz(*from_lipopt(net, box), c, "linf")
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert dual_norm(net.gradients(res.witness, c), "linf") == pytest.approx(res.lower)


def test_a_problem_that_looks_easy_searches_regions_here_first(monkeypatch):
    """Under AUTO_REGION_UNSTABLE_SHARE unstable (a small ball): the search runs in this process
    and answers without any race."""
    rng = np.random.default_rng(7)
    net = random_network(rng, [5, 8, 8, 1])
    ball = LinfBall([0.5] * 5, 0.3)
    seen = _spy_on_race(monkeypatch)
    res = lipschitz(net, ball)
    assert not seen and "race" not in res.timings and "regions" in res.timings
    truth = brute_force_lipschitz(*from_lipopt(net, ball), None, "linf")
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


def test_a_problem_that_looks_hard_under_a_short_time_limit_still_brackets_the_constant():
    """Racing at once with too little time to finish: a certified bracket, never an error.
    The upper bound is checked against sampled gradients, the lower one against its witness."""
    rng = np.random.default_rng(8)
    net = random_network(rng, [8, 16, 16, 2])  # 32 of 32 neurons unstable
    box = Box(np.zeros(8), np.ones(8))
    c = np.array([1.0, -1.0])
    said: list[str] = []
    res = lipschitz(net, box, c=c, time_limit=1.5, progress=said.append)
    assert any("racing at once" in line for line in said)
    assert res.status in ("optimal", "time_limit") and res.lower <= res.upper
    sampled = dual_norm(net.gradients(box.sample(20_000, rng), c), "linf").max()
    assert sampled <= res.upper * (1 + 1e-9)
    assert dual_norm(net.gradients(res.witness, c), "linf") == pytest.approx(res.lower)


def test_a_raced_answer_says_how_long_the_race_ran(race_at_once):
    """``timings["race"]`` is the race's time beyond the answering racer's own stages (so the
    timings add up to the wall time); the note gives the race's whole wall time (issue 44)."""
    net = random_network(np.random.default_rng(16), [3, 10, 10, 2])
    box = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    res = lipschitz(net, box, c=[1.0, -1.0], split=False, regions=False)
    found = re.search(r"the race ran (\d+\.\d) s", res.message)
    assert found is not None, res.message
    stages = sum(v for k, v in res.timings.items() if k != "probe")
    assert float(found.group(1)) == pytest.approx(stages, abs=0.1 + 0.05 * stages)
