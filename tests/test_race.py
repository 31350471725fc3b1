"""formulation="auto": the backward probe, then forward and backward raced on two processes."""

from __future__ import annotations

import importlib
from dataclasses import replace

import numpy as np
import pytest

from lipopt import Box, LinfBall, lipschitz
from lipopt.norms import dual_norm
from lipopt.race import merge
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")

pytestmark = pytest.mark.skipif(
    not lipschitz_module._can_race(), reason="racing needs two cores and fork"
)


@pytest.fixture
def race_at_once(monkeypatch):
    """No probe time: every auto solve races (the probe stops before proving anything)."""
    monkeypatch.setattr(lipschitz_module, "RACE_AFTER", 1e-4)


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
    assert "raced" in res.message and "race" in res.timings
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
    res = lipschitz(net, domain, c=c, split=False, regions=False, time_limit=0.3)
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
