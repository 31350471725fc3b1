"""Certified radii are sound: nothing within the radius changes the predicted class."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import L1Ball, L2Ball, LinfBall, certify
from lipopt.certify import predicted_class
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt


def _points_within(center: np.ndarray, radius: float, norm: str, n: int, rng) -> np.ndarray:
    """Uniform points of the open ball of the given norm (the certified set)."""
    ball = BALLS[norm](center, radius * (1 - 1e-9))
    return ball.sample(n, rng)


BALLS = {"linf": LinfBall, "l1": L1Ball, "l2": L2Ball}


def _step(g: np.ndarray, norm: str) -> np.ndarray:
    """The steepest ascent direction of the norm's unit ball for the gradient ``g``."""
    if norm == "linf":
        return np.sign(g)
    if norm == "l2":
        return g / max(float(np.linalg.norm(g)), 1e-300)
    return np.eye(len(g))[np.argmax(np.abs(g))] * np.sign(g)


def _attack(net, x, predicted, radius, norm, rng, steps=60):
    """Projected gradient ascent on max_j f_j - f_i from random starts within the radius."""
    worst = []
    m = net.output_dim
    for start in _points_within(x, radius, norm, 8, rng):
        y = start.copy()
        for _ in range(steps):
            out = net.forward(y)
            if m == 1:
                c = np.array([-1.0 if predicted == 1 else 1.0])
            else:
                rival = max((j for j in range(m) if j != predicted), key=lambda j: out[j])
                c = np.eye(m)[rival] - np.eye(m)[predicted]
            g = net.gradients(y, c)
            step = radius / 10
            y = y + step * _step(g, norm)
            delta = y - x
            if norm == "linf":
                delta = np.clip(delta, -radius, radius)
            elif norm == "l2" and np.linalg.norm(delta) > radius:  # the l2 PGD's projection
                delta *= radius / np.linalg.norm(delta)
            elif norm == "l1" and np.abs(delta).sum() > radius:
                delta *= radius / np.abs(delta).sum()
            y = x + delta * (1 - 1e-9)
        worst.append(y)
    return np.array(worst)


CASES = [
    ([2, 10, 10, 3], "linf", 0.3),
    ([3, 8, 8, 4], "l1", 0.5),
    ([2, 8, 8, 1], "linf", 0.3),
    ([3, 8, 8, 3], "l2", 0.5),
    ([2, 8, 8, 1], "l2", 0.3),
]


@pytest.mark.parametrize("widths, norm, ball_radius", CASES)
@pytest.mark.parametrize("method", ["cross", "pairwise", "naive"])
def test_certified_radius_is_sound(widths, norm, ball_radius, method):
    rng = np.random.default_rng(sum(widths) + len(method))
    net = random_network(rng, widths)
    x = rng.uniform(0, 1, size=widths[0])
    ball = BALLS[norm](x, ball_radius)
    res = certify(net, ball, method=method)
    assert res.norm == norm
    assert res.predicted == predicted_class(net, x)[0]
    assert 0 <= res.radius <= ball_radius
    if res.radius == 0:
        return
    points = _points_within(x, res.radius, norm, 10_000, rng)
    assert np.all(predicted_class(net, points) == res.predicted)
    attacked = _attack(net, x, res.predicted, res.radius, norm, rng)
    assert np.all(predicted_class(net, attacked) == res.predicted)


def test_cross_radius_never_exceeds_pairwise():
    """Proposition 7: cross <= naive <= pairwise."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        net = random_network(rng, [2, 8, 8, 4])
        ball = LinfBall(rng.uniform(0, 1, size=2), 0.2)
        radii = {
            m: certify(net, ball, method=m).uncapped_radius for m in ("cross", "naive", "pairwise")
        }
        assert radii["cross"] <= radii["naive"] * (1 + 1e-9)
        assert radii["naive"] <= radii["pairwise"] * (1 + 1e-9)


def test_radius_beyond_the_ball_is_capped():
    from lipopt import Affine, Network, ReLU

    # f(x) = relu(x) + 10 on [0.5 ± 0.1]: margin 10.5, L = 1, radius 10.5 > 0.1
    net = Network.from_layers([Affine([[1.0]], [0.0]), ReLU(), Affine([[1.0]], [10.0])])
    res = certify(net, LinfBall([0.5], 0.1))
    assert res.capped and res.certified_ball
    assert res.radius == pytest.approx(0.1)
    assert res.uncapped_radius == pytest.approx(10.5)


@pytest.mark.parametrize("seed", range(3))
def test_the_l2_radius_is_the_margin_over_the_exact_l2_constant(seed):
    """An ℓ2 ball's radius is the margin over the ℓ2 constant of the cross-norm, which the
    oracle gives over the same ball: never more (the constant is an upper bound), and equal
    when the solve is exact."""
    rng = np.random.default_rng(40 + seed)
    net = random_network(rng, [2, 6, 6, 3])
    ball = L2Ball(rng.uniform(0, 1, size=2), 0.4)
    res = certify(net, ball)
    truth = brute_force_lipschitz(*from_lipopt(net, ball), None, "l2", output_norm="cross")
    margin = min(res.margins.values())
    assert res.statuses == {"cross": "optimal"}
    assert res.lipschitz["cross"] == pytest.approx(truth.value, rel=1e-6)
    assert res.uncapped_radius <= margin / truth.value * (1 + 1e-6)
    assert res.uncapped_radius == pytest.approx(margin / truth.value, rel=1e-6)
