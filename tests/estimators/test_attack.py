"""The attack lower bound: projections, attained values, soundness, and it beats RandomLB."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall
from lipopt.estimators import attack, gradient_attack
from lipopt.estimators import random as random_lb
from lipopt.estimators.attack import project, project_l1_ball
from lipopt.norms import dual_norm
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt


def _bisection_projection(v: np.ndarray, radius: float) -> np.ndarray:
    """Soft-thresholding at the θ with ``Σ max(|v| - θ, 0) = radius``, found by bisection."""
    lo, hi = 0.0, float(np.abs(v).max())
    for _ in range(200):
        theta = (lo + hi) / 2
        if np.maximum(np.abs(v) - theta, 0).sum() > radius:
            lo = theta
        else:
            hi = theta
    return np.sign(v) * np.maximum(np.abs(v) - hi, 0)


def test_project_l1_ball_matches_a_bisection_projection():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(30, 5)) * 2
    out = project_l1_ball(vectors, 1.3)
    for v, w in zip(vectors, out):
        if np.abs(v).sum() <= 1.3:
            assert np.allclose(w, v)
        else:
            assert np.allclose(w, _bisection_projection(v, 1.3), atol=1e-9)
            assert np.abs(w).sum() == pytest.approx(1.3)


def test_project_keeps_points_in_the_domain():
    rng = np.random.default_rng(1)
    points = rng.normal(size=(50, 3)) * 3
    for domain in (Box([0, 0, 0], [1, 2, 3]), LinfBall([1, 1, 1], 0.5), L1Ball([0, 1, 0], 0.7)):
        for x in project(domain, points):
            assert domain.contains(x, tol=1e-9)


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_attack_value_is_attained_in_the_domain(norm):
    rng = np.random.default_rng(2)
    net = random_network(rng, [4, 12, 12, 2])
    c = np.array([1.0, -1.0])
    for domain in (Box(np.zeros(4), np.ones(4)), L1Ball(np.full(4, 0.5), 0.6)):
        x, value = gradient_attack(net, domain, c, norm, restarts=4, steps=30, rng=3)
        assert domain.contains(x, tol=1e-9)
        assert value == pytest.approx(float(dual_norm(net.gradients(x, c), norm)), rel=1e-12)


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("seed", range(4))
def test_attack_never_exceeds_the_exact_value(seed, norm):
    rng = np.random.default_rng(50 + seed)
    net = random_network(rng, [3, 10, 10, 1])
    domain = [Box(np.zeros(3), np.ones(3)), L1Ball(np.zeros(3), 1.0)][seed % 2]
    exact = brute_force_lipschitz(*from_lipopt(net, domain), None, norm)  # independent truth
    est = attack.estimate(net, domain, norm, seed=seed)
    assert est.value <= exact.value * (1 + 1e-6)


def test_attack_beats_random_on_average_with_the_same_budget():
    """1000 gradient evaluations each; the attack wins (or ties) on most networks."""
    rng = np.random.default_rng(11)
    ratios = []
    for trial in range(8):
        widths = [[5, 16, 16, 2], [8, 20, 20, 1]][trial % 2]
        net = random_network(rng, widths)
        c = np.array([1.0, -1.0]) if widths[-1] == 2 else None
        domain = Box(np.zeros(widths[0]), np.ones(widths[0]))
        for norm in ("linf", "l1"):
            att = attack.estimate(net, domain, norm, c, seed=trial)
            rnd = random_lb.estimate(net, domain, norm, c, samples=1000, seed=trial)
            assert att.detail["evaluations"] == 1000
            ratios.append(att.value / rnd.value)
    ratios_arr = np.array(ratios)
    assert np.mean(ratios_arr >= 1.0) >= 0.75
    assert ratios_arr.mean() > 1.02


def test_attack_on_an_affine_network_returns_its_constant():
    from lipopt import Affine, Network

    net = Network((Affine(np.array([[2.0, -1.0]]), np.zeros(1)),))
    x, value = gradient_attack(net, Box([0, 0], [1, 1]), None, "linf", restarts=2, steps=3, rng=0)
    assert value == pytest.approx(3.0)
