"""Interval bounds are sound: sampled pre-activations and backward-pass values lie inside."""

import numpy as np
import pytest

from lipopt.bounds import interval_bounds
from lipopt.bounds.interval import NeuronState
from lipopt.domain import Box, L1Ball, LinfBall
from tests.helpers import random_network


def _backward_values(network, x, c):
    """Per hidden layer, y_k = d(c^T f)/d h_k at x, and the input gradient (numpy, relu'(0)=0)."""
    affines = network.affine_layers
    masks = [(z[0] > 0).astype(float) for z in network.pre_activations(x[None, :])]
    y = affines[-1].weight.T @ c
    ys = []
    for mask, affine in zip(reversed(masks), reversed(affines[:-1])):
        ys.append(y)
        y = affine.weight.T @ (mask * y)
    return ys[::-1], y


DOMAINS = [
    Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]),
    LinfBall([0.2, -0.1, 0.4], 0.3),
    L1Ball([0.2, -0.1, 0.4], 0.6),
]


@pytest.mark.parametrize("domain", DOMAINS, ids=["box", "linf", "l1"])
@pytest.mark.parametrize("seed", range(4))
def test_interval_bounds_contain_sampled_values(domain, seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, [3, 8, 8, 6, 2])
    c = np.array([1.0, -1.0])
    bounds = interval_bounds(net, domain, c)
    points = domain.sample(3000, rng)
    for z, lo, hi in zip(net.pre_activations(points), bounds.pre_lower, bounds.pre_upper):
        assert np.all(z >= lo - 1e-9) and np.all(z <= hi + 1e-9)
    for x in points[:500]:
        ys, g = _backward_values(net, x, c)
        for y, lo, hi in zip(ys, bounds.grad_lower, bounds.grad_upper):
            assert np.all(y >= lo - 1e-9) and np.all(y <= hi + 1e-9)
        assert np.all(g >= bounds.input_grad_lower - 1e-9)
        assert np.all(g <= bounds.input_grad_upper + 1e-9)


def test_first_layer_bounds_are_exact_on_l1_ball():
    """w·x over an l1 ball of radius r is w·x0 ± r·max|w_j| (attained at a vertex)."""
    net = random_network(np.random.default_rng(1), [4, 5, 1])
    ball = L1Ball([0.1, 0.2, 0.3, 0.4], 0.5)
    bounds = interval_bounds(net, ball, [1.0])
    w, b = net.affine_layers[0].weight, net.affine_layers[0].bias
    vertices = np.concatenate([ball.center + 0.5 * np.eye(4), ball.center - 0.5 * np.eye(4)])
    z = vertices @ w.T + b
    np.testing.assert_allclose(bounds.pre_lower[0], z.min(axis=0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(bounds.pre_upper[0], z.max(axis=0), rtol=0, atol=1e-9)


def test_interval_states_classify_stable_neurons():
    from lipopt.network import Affine, Network, ReLU

    w = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    net = Network.from_layers(
        [Affine(w, np.array([0.5, -0.5, 0.0])), ReLU(), Affine(np.ones((1, 3)), [0.0])]
    )
    bounds = interval_bounds(net, Box([0.0, 0.0], [1.0, 1.0]), [1.0])
    assert list(bounds.states[0]) == [
        NeuronState.ACTIVE,
        NeuronState.INACTIVE,
        NeuronState.UNSTABLE,
    ]
    assert bounds.unstable_count == 1


def test_interval_bounds_are_rounded_outward():
    """A bound computed exactly equal to the true extreme is widened, never tightened."""
    from lipopt.bounds.interval import widen

    lo, hi = widen(np.array([-1.0, 0.0, 2.0]), np.array([1.0, 0.0, 3.0]))
    assert np.all(lo < [-1.0, 0.0, 2.0]) and np.all(hi > [1.0, 0.0, 3.0])
    assert np.all(hi - lo < [2.0 + 1e-8, 1e-8, 1.0 + 1e-8])
