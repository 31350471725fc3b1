"""Cases with answers known in closed form."""

import numpy as np
import pytest

from lipopt import Affine, Box, L1Ball, LinfBall, Network, ReLU, lipschitz

NORM_ORDERS = {"linf": 1, "l1": np.inf}  # dual norm of the gradient


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_no_hidden_layer_gives_dual_norm_of_ct_w(norm, rng):
    w = rng.normal(size=(3, 5))
    net = Network.from_layers([Affine(w, rng.normal(size=3))])
    c = np.array([0.5, -2.0, 1.0])
    res = lipschitz(net, Box(-np.ones(5), np.ones(5)), norm=norm, c=c)
    expected = np.linalg.norm(c @ w, ord=NORM_ORDERS[norm])
    assert res.status == "optimal"
    assert res.value == pytest.approx(expected, rel=1e-9)
    assert res.lower == pytest.approx(expected, rel=1e-9)
    assert res.model_stats["binaries"] == 0 and res.exact_certified


def _all_stable_network(rng):
    """Positive weights and biases on a nonnegative box: every neuron is always active,
    except a second-layer neuron with a large negative bias, which is always inactive."""
    w1 = rng.uniform(0.1, 1.0, size=(6, 3))
    w2 = rng.uniform(0.1, 1.0, size=(4, 6))
    b2 = np.array([0.1, 0.2, 0.3, -100.0])
    w3 = rng.normal(size=(2, 4))
    net = Network.from_layers(
        [Affine(w1, np.full(6, 0.1)), ReLU(), Affine(w2, b2), ReLU(), Affine(w3, np.zeros(2))]
    )
    linear_map = w3 @ np.diag([1.0, 1.0, 1.0, 0.0]) @ w2 @ w1
    return net, linear_map


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize(
    "domain",
    [
        Box([0.0, 0.0, 0.0], [1.0, 2.0, 1.0]),
        LinfBall([0.5, 0.5, 0.5], 0.4),
        L1Ball([0.5, 0.5, 0.5], 0.4),
    ],
)
def test_all_stable_network_needs_no_neuron_binaries(norm, domain, rng):
    net, linear_map = _all_stable_network(rng)
    c = np.array([1.0, -1.0])
    res = lipschitz(net, domain, norm=norm, c=c)
    assert res.model_stats["unstable_neurons"] == 0
    assert res.model_stats["binaries"] == 0
    assert res.value == pytest.approx(
        np.linalg.norm(c @ linear_map, ord=NORM_ORDERS[norm]), rel=1e-9
    )
    assert res.exact_certified


def test_one_relu_scalar_slope():
    """f(x) = 3 relu(x) - relu(x - 1) on [-1, 2]: slopes 0, 3, 2; L = 3."""
    net = Network.from_layers(
        [Affine([[1.0], [1.0]], [0.0, -1.0]), ReLU(), Affine([[3.0, -1.0]], [0.0])]
    )
    for norm in ("linf", "l1"):
        res = lipschitz(net, Box([-1.0], [2.0]), norm=norm)
        assert res.value == pytest.approx(3.0, rel=1e-9)
        assert 0 < res.witness[0] < 1 and res.exact_certified
