"""The pattern climb: its batched pattern gradients, attained values, the local maximum it stops
at (against the brute-force oracle's regions), its budget, and that it climbs."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lipopt import Affine, Box, L1Ball, LinfBall, Network, ReLU
from lipopt.heuristics import climb as climb_module
from lipopt.heuristics.climb import _deep_point, _flips, pattern_climb, reachable_flips
from lipopt.kinks import is_differentiable_at
from lipopt.norms import dual_norm
from lipopt.verify import Dimension, check_region
from tests.helpers import random_network
from tests.oracle import (
    activation_patterns,
    brute_force_lipschitz,
    from_lipopt,
    jacobian_of_pattern,
)


@pytest.mark.parametrize("widths", [[3, 5, 1], [4, 6, 5, 2], [3, 4, 5, 4, 2]])
def test_pattern_gradients_match_the_oracle_jacobians(widths):
    """``g(σ) = c^T J(σ)`` for random patterns, including patterns no point has."""
    rng = np.random.default_rng(len(widths))
    net = random_network(rng, widths)
    weights = from_lipopt(net, Box(np.zeros(widths[0]), np.ones(widths[0]))).weights
    c = rng.normal(size=widths[-1])
    masks = [rng.integers(0, 2, size=(7, w)).astype(float) for w in widths[1:-1]]
    got = net.pattern_gradients(masks, c)
    for n in range(7):
        expected = c @ jacobian_of_pattern(weights, [m[n] for m in masks])
        np.testing.assert_allclose(got[n], expected, rtol=1e-12, atol=1e-12)


def test_flips_of_one_gate_go_in_layer_order():
    pattern = [np.array([1.0, 0.0, 1.0]), np.array([0.0, 1.0])]
    batch = _flips(pattern, 1)
    assert batch is not None and [b.shape for b in batch] == [(5, 3), (5, 2)]
    flat = np.hstack(batch)
    start = np.concatenate(pattern)
    np.testing.assert_array_equal(flat != start, np.eye(5, dtype=bool))


def test_flips_of_k_gates_are_every_k_subset_once(monkeypatch):
    """Two and three gates of five: C(5, k) rows, each differing in exactly k gates, no two
    alike; a batch larger than MAX_WIDE_ENTRIES allows (patterns × (gates + inputs)), or more
    flips than gates, give None; one gate is never capped."""
    pattern = [np.array([1.0, 0.0, 1.0]), np.array([0.0, 1.0])]
    start = np.concatenate(pattern)
    for k, count in ((2, 10), (3, 10)):
        batch = _flips(pattern, k)
        assert batch is not None
        flat = np.hstack(batch)
        assert flat.shape == (count, 5)
        assert np.all((flat != start).sum(axis=1) == k)
        assert len({row.tobytes() for row in flat}) == count
    assert _flips(pattern, 6) is None
    monkeypatch.setattr(climb_module, "MAX_WIDE_ENTRIES", 50)  # two gates: 10 patterns × 5
    assert _flips(pattern, 2) is not None
    assert _flips(pattern, 2, inputs=1) is None  # 10 patterns × (5 gates + 1 input)
    monkeypatch.setattr(climb_module, "MAX_WIDE_ENTRIES", 1)
    assert _flips(pattern, 2) is None and _flips(pattern, 1) is not None


DOMAINS = [
    lambda d: Box(np.zeros(d), np.ones(d)),
    lambda d: LinfBall(np.full(d, 0.4), 0.3),
    lambda d: L1Ball(np.full(d, 0.5), 0.8),
]


@pytest.mark.parametrize("max_flips", [1, 3])
@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("kind", range(len(DOMAINS)))
@pytest.mark.parametrize("seed", range(3))
def test_climb_stops_at_a_local_maximum_of_the_oracle_regions(seed, kind, norm, max_flips):
    """Against the oracle's full list of regions: the climb's point is strictly inside a region
    of the domain, its value is that region's, no region up to ``max_flips`` gates away scores
    more, and the value is at most the constant; starting from every sampled point's region it
    never ends below its start."""
    rng = np.random.default_rng(300 + seed)
    widths = [3, 6, 5, 1] if seed % 2 == 0 else [2, 5, 4, 3, 1]
    net = random_network(rng, widths)
    domain = DOMAINS[kind](widths[0])
    args = from_lipopt(net, domain)
    truth = brute_force_lipschitz(*args, None, norm, collect_regions=True)
    regions = {tuple(np.concatenate(r.pattern).astype(int)): r.value for r in truth.regions}
    c = np.ones(1)
    starts = list(domain.sample(4, rng))
    for start in starts:
        found = pattern_climb(
            net, domain, c, norm, [start], max_checks=10_000, max_flips=max_flips,
            wide_checks=10_000,
        )  # fmt: skip
        assert found is not None
        point = found.point
        assert domain.contains(point, tol=1e-9) and is_differentiable_at(net, point)
        attained = float(dual_norm(net.gradients(point, c), norm))
        assert found.value == pytest.approx(attained, rel=1e-9, abs=1e-12)
        layers = activation_patterns(args.weights, point[None, :])
        key = tuple(np.concatenate([m[0] for m in layers]).astype(int))
        assert regions[key] == pytest.approx(found.value, rel=1e-9, abs=1e-12)
        for other, value in regions.items():  # every region the oracle knows, near enough
            if sum(a != b for a, b in zip(other, key)) <= max_flips:
                assert value <= found.value * (1 + 1e-9) + 1e-12
        assert found.value <= truth.value * (1 + 1e-9) + 1e-12
        start_value = float(dual_norm(net.gradients(start, c), norm))
        assert found.value >= start_value * (1 - 1e-9) - 1e-12


@pytest.mark.parametrize("kind", range(len(DOMAINS)))
@pytest.mark.parametrize("seed", range(3))
def test_the_flip_screen_keeps_every_one_gate_neighbour_the_oracle_knows(seed, kind):
    """``reachable_flips`` on each region of the oracle's full list: every neuron whose one-gate
    flip is another region of the domain is kept; some neurons are screened out (else the
    screen would be idle), on every domain kind."""
    rng = np.random.default_rng(500 + seed)
    widths = [3, 6, 5, 1] if seed % 2 == 0 else [2, 5, 4, 3, 1]
    net = random_network(rng, widths)
    domain = DOMAINS[kind](widths[0])
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, "linf", collect_regions=True)
    known = {tuple(np.concatenate(r.pattern).astype(int)) for r in truth.regions}
    screened = 0
    for region in truth.regions:
        pattern = [np.asarray(m, dtype=np.float64) for m in region.pattern]
        kept = reachable_flips(net, pattern, domain)
        flat = np.concatenate(pattern).astype(int)
        for j in range(flat.size):
            flipped = flat.copy()
            flipped[j] = 1 - flipped[j]
            if tuple(flipped) in known:
                assert kept[j], (region.pattern, j)
        screened += int(np.count_nonzero(~kept))
    assert len(known) > 1 and screened > 0


@pytest.mark.parametrize("kind", [0, 1])
def test_the_climbs_margin_lp_agrees_with_check_region(kind):
    """The climb's own margin LP (boxes): a point exactly where ``check_region`` proves a
    full-dimensional region, strictly inside that region and the domain; None elsewhere.
    Patterns of sampled points (regions that exist) and the same with random gates flipped
    (mostly regions that do not)."""
    rng = np.random.default_rng(40 + kind)
    net = random_network(rng, [4, 8, 6, 1])
    domain = DOMAINS[kind](4)
    lower, upper = domain.bounding_box()
    found = {True: 0, False: 0}
    for point in domain.sample(30, rng):
        pattern = net.activation_pattern(point)
        for flip in (False, True):
            if flip:
                pattern = [np.where(rng.random(m.size) < 0.3, 1.0 - m, m) for m in pattern]
            check = check_region(net, pattern, domain)
            deep = _deep_point(net, pattern, lower, upper)
            assert check.dimension is not Dimension.UNDECIDED
            assert (deep is not None) == (check.dimension is Dimension.FULL)
            found[deep is not None] += 1
            if deep is not None:
                assert domain.contains(deep) and is_differentiable_at(net, deep)
                got = np.concatenate(net.activation_pattern(deep))
                np.testing.assert_array_equal(got, np.concatenate(pattern))
    assert found[True] >= 30 and found[False] >= 5  # both verdicts were exercised


def test_climb_keeps_to_its_budget_and_climbs():
    """On a [10, 20, 20, 1] unit box the climb from the best of 200 random points goes higher,
    and never solves more margin LPs than allowed."""
    rng = np.random.default_rng(5)
    net = random_network(rng, [10, 20, 20, 1])
    box = Box(np.zeros(10), np.ones(10))
    c = np.ones(1)
    pool = box.sample(200, rng)
    values = dual_norm(net.gradients(pool, c), "linf")
    start = pool[int(np.argmax(values))]
    for budget in (1, 5, 40):
        found = pattern_climb(net, box, c, "linf", [start], max_checks=budget)
        assert found is not None and found.checks <= budget
    assert found.value > values.max() * 1.01
    for budget, wide in ((1, 1), (5, 3), (40, 60)):  # the wider steps: the LPs left, and more
        found = pattern_climb(
            net, box, c, "linf", [start], max_checks=budget, max_flips=3, wide_checks=wide
        )
        assert found is not None and found.checks <= budget + wide
    assert found.checks > 40  # the wider steps did use LPs of their own


def test_a_start_on_no_full_dimensional_region_is_skipped():
    """f(x) = relu(x) on [0, 1]: at x = 0 the pattern is "inactive", whose region x < 0 misses
    the box, so that start yields nothing; from x = 0.5 the active region, slope 1."""
    net = Network.from_layers([Affine([[1.0]], [0.0]), ReLU(), Affine([[1.0]], [0.0])])
    box = Box(np.array([0.0]), np.array([1.0]))
    assert pattern_climb(net, box, np.ones(1), "linf", [np.array([0.0])]) is None
    found = pattern_climb(net, box, np.ones(1), "linf", [np.array([0.0]), np.array([0.5])])
    assert found is not None and found.value == pytest.approx(1.0) and found.checks == 2
    assert 0.0 < found.point[0] < 1.0


def test_a_network_without_hidden_layers_has_one_region():
    """f(x) = W x + b: one region, the whole domain; the climb returns its constant gradient."""
    net = Network.from_layers([Affine([[2.0, -3.0], [1.0, 0.5]], [0.0, 1.0])])
    box = Box(np.zeros(2), np.ones(2))
    found = pattern_climb(net, box, np.array([1.0, -1.0]), "linf", [np.array([0.2, 0.7])])
    assert found is not None and found.checks == 1
    assert found.value == pytest.approx(abs(2.0 - 1.0) + abs(-3.0 - 0.5))
    assert box.contains(found.point)


def test_patterns_met_again_cost_no_lp():
    """Climbing twice from the same point solves the LPs of the first climb only."""
    rng = np.random.default_rng(6)
    net = random_network(rng, [6, 12, 12, 1])
    box = Box(np.zeros(6), np.ones(6))
    c = np.ones(1)
    start = box.sample(1, rng)[0]
    once = pattern_climb(net, box, c, "linf", [start], max_checks=10_000)
    twice = pattern_climb(net, box, c, "linf", [start, start.copy()], max_checks=10_000)
    assert once is not None and twice is not None and once.checks > 1
    assert twice.checks == once.checks and twice.value == once.value


def test_a_passed_deadline_stops_the_climb_before_any_lp():
    rng = np.random.default_rng(7)
    net = random_network(rng, [3, 6, 6, 1])
    box = Box(np.zeros(3), np.ones(3))
    start = box.sample(1, rng)[0]
    late = time.perf_counter() - 1.0
    assert pattern_climb(net, box, np.ones(1), "l1", [start], deadline=late) is None
    soon = time.perf_counter() + 600.0
    assert pattern_climb(net, box, np.ones(1), "l1", [start], deadline=soon) is not None
