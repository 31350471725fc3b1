"""LP-based bound tightening (OBBT): sound by sampling, inside the linear bounds, safe LP bounds,
and the exact Lipschitz constant does not change with it."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lipopt import lipschitz
from lipopt.bounds import propagate
from lipopt.bounds.interval import interval_bounds
from lipopt.bounds.linear import forward_linear, linear_bounds
from lipopt.bounds.lp import NetworkRelaxation, lp_bounds, tighten
from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.norms import OutputNorm
from tests.bounds.test_linear import DOMAINS, assert_inside, assert_sound
from tests.helpers import random_network

WIDTHS = [[3, 8, 8, 6, 2], [2, 20, 40, 20, 3], [6, 12, 12, 12, 12, 2]]
SEEDS = {
    "c": lambda m, rng: rng.normal(size=m),
    "l1": lambda m, rng: OutputNorm.L1,
    "cross": lambda m, rng: OutputNorm.CROSS,
}


@pytest.mark.parametrize("seed_name", sorted(SEEDS))
@pytest.mark.parametrize("domain_name", sorted(DOMAINS))
@pytest.mark.parametrize("case", range(len(WIDTHS)))
def test_lp_bounds_contain_sampled_values(case, domain_name, seed_name):
    rng = np.random.default_rng(50 + 10 * case + len(domain_name) + len(seed_name))
    widths = WIDTHS[case]
    net = random_network(rng, widths)
    domain = DOMAINS[domain_name](widths[0], rng)
    seed = SEEDS[seed_name](widths[-1], rng)
    bounds = lp_bounds(net, domain, seed)
    assert bounds.method == "lp"
    assert_sound(net, domain, seed, bounds, rng)
    assert_inside(bounds, interval_bounds(net, domain, seed))
    finer = linear_bounds(net, domain, seed)
    for lo, hi, lin_lo, lin_hi in zip(
        bounds.pre_lower, bounds.pre_upper, finer.pre_lower, finer.pre_upper, strict=True
    ):
        assert np.all(lo >= lin_lo) and np.all(hi <= lin_hi)


def test_lp_bounds_stabilise_neurons_the_linear_bounds_miss():
    fewer = 0
    for trial in range(6):
        rng = np.random.default_rng(500 + trial)
        widths = [[2, 20, 40, 20, 2], [10, 20, 30, 20, 2]][trial % 2]
        net = random_network(rng, widths)
        domain = Box(np.zeros(widths[0]), np.ones(widths[0]))
        linear = linear_bounds(net, domain, [1.0, -1.0])
        tight = lp_bounds(net, domain, [1.0, -1.0])
        assert tight.unstable_count <= linear.unstable_count
        fewer += tight.unstable_count < linear.unstable_count
    assert fewer >= 1


def test_tighten_with_no_time_keeps_the_linear_bounds():
    rng = np.random.default_rng(8)
    net = random_network(rng, [4, 10, 10, 10, 1])
    domain = Box(np.zeros(4), np.ones(4))
    lowers, uppers = forward_linear(net, domain)
    new_lo, new_hi, stats = tighten(net, domain, lowers, uppers, time_budget=0.0)
    assert stats["lps"] == 0
    for a, b, c, d in zip(new_lo, new_hi, lowers, uppers, strict=True):
        assert np.all(a >= c) and np.all(b <= d)  # at most the linear re-bounding


def test_tighten_respects_its_time_budget():
    net = random_network(np.random.default_rng(9), [10, 20, 30, 20, 2])
    domain = Box(np.zeros(10), np.ones(10))
    lowers, uppers = forward_linear(net, domain)
    start = time.perf_counter()
    tighten(net, domain, lowers, uppers, time_budget=0.05)
    assert time.perf_counter() - start < 1.0


def test_tighten_on_a_network_with_one_hidden_layer_changes_nothing():
    net = random_network(np.random.default_rng(10), [3, 5, 1])
    domain = Box(np.zeros(3), np.ones(3))
    lowers, uppers = forward_linear(net, domain)
    new_lo, new_hi, stats = tighten(net, domain, lowers, uppers)
    assert stats["lps"] == 0
    np.testing.assert_array_equal(new_lo[0], lowers[0])
    np.testing.assert_array_equal(new_hi[0], uppers[0])


@pytest.mark.parametrize(
    "domain",
    [Box([0.0, -1.0, 0.5], [1.0, 2.0, 0.7]), L1Ball([0.3, -0.2, 0.1], 0.6)],
    ids=["box", "l1"],
)
def test_relaxation_of_the_domain_is_exact(domain):
    """min w·x over the domain: the box's and the lifted ℓ1 ball's LPs give the closed form."""
    relaxation = NetworkRelaxation(domain)
    rng = np.random.default_rng(11)
    for _ in range(5):
        w = rng.normal(size=3)
        cost = np.zeros(relaxation.n_cols)
        cost[relaxation.inputs] = w
        got = relaxation.minimum(cost, time.perf_counter() + 10)
        if isinstance(domain, L1Ball):
            exact = w @ domain.center - domain.radius * np.max(np.abs(w))
        else:
            exact = np.sum(np.minimum(w * domain.lower, w * domain.upper))
        assert got is not None
        assert got <= exact + 1e-12
        assert got == pytest.approx(exact, abs=1e-6)


def test_safe_bound_is_valid_for_any_multipliers():
    """The Neumaier–Shcherbina bound never exceeds the LP optimum, whatever the multipliers,
    and equals it (to the solver's tolerance) with the solver's duals."""
    net = random_network(np.random.default_rng(12), [3, 6, 4, 1])
    domain = LinfBall([0.1, 0.2, 0.3], 0.5)
    lowers, uppers = forward_linear(net, domain)
    relaxation = NetworkRelaxation(domain)
    previous = relaxation.add_layer(
        relaxation.inputs,
        net.affine_layers[0].weight,
        net.affine_layers[0].bias,
        lowers[0],
        uppers[0],
    )
    rng = np.random.default_rng(13)
    cost = np.zeros(relaxation.n_cols)
    cost[previous] = net.affine_layers[1].weight[0]
    optimum = relaxation.minimum(cost, time.perf_counter() + 10)
    assert optimum is not None
    assert optimum == pytest.approx(relaxation.highs.getInfo().objective_function_value, abs=1e-6)
    for _ in range(50):
        duals = rng.normal(size=relaxation.row_lo.size) * rng.choice([0.0, 1.0, 10.0])
        assert relaxation.safe_bound(cost, duals) <= optimum + 1e-9


def test_propagate_dispatches_lp():
    net = random_network(np.random.default_rng(14), [3, 6, 6, 1])
    bounds = propagate(net, Box(np.zeros(3), np.ones(3)), [1.0], method="lp")
    assert bounds.method == "lp"


EXACT_CASES = [
    ([3, 8, 8, 2], "box", "linf"),
    ([4, 10, 6, 1], "l1", "l1"),
    ([2, 12, 12, 8, 2], "linf", "linf"),
    ([2, 12, 12, 8, 2], "box", "l1"),
]


@pytest.mark.parametrize("case", range(len(EXACT_CASES)))
def test_lipschitz_with_lp_bounds_equals_interval(case):
    widths, domain_name, norm = EXACT_CASES[case]
    rng = np.random.default_rng(400 + case)
    net = random_network(rng, widths)
    domain = DOMAINS[domain_name](widths[0], rng)
    c = [1.0, -1.0] if widths[-1] == 2 else None
    coarse = lipschitz(net, domain, norm=norm, c=c, bounds="interval")
    fine = lipschitz(net, domain, norm=norm, c=c, bounds="lp")
    assert coarse.status == fine.status == "optimal"
    assert fine.value == pytest.approx(coarse.value, rel=1e-6)
    assert fine.model_stats["binaries"] <= coarse.model_stats["binaries"]
