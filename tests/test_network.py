import numpy as np
import pytest

from lipopt.network import Affine, Network, NetworkError, ReLU
from tests.helpers import random_network


def _manual_forward(network: Network, x: np.ndarray) -> np.ndarray:
    h = x
    affines = network.affine_layers
    for affine in affines[:-1]:
        h = np.maximum(affine.weight @ h + affine.bias, 0)
    return affines[-1].weight @ h + affines[-1].bias


def test_network_forward_matches_manual_loop(rng):
    net = random_network(rng, [3, 5, 4, 2])
    for x in rng.normal(size=(10, 3)):
        np.testing.assert_allclose(net.forward(x), _manual_forward(net, x))
    batch = rng.normal(size=(7, 3))
    np.testing.assert_allclose(
        net.forward(batch), np.array([_manual_forward(net, x) for x in batch])
    )


def test_network_from_layers_merges_consecutive_affines(rng):
    a1 = Affine(rng.normal(size=(4, 3)), rng.normal(size=4))
    a2 = Affine(rng.normal(size=(4, 4)), rng.normal(size=4))
    a3 = Affine(rng.normal(size=(2, 4)), rng.normal(size=2))
    net = Network.from_layers([a1, a2, ReLU(), ReLU(), a3])
    assert net.widths == (3, 4, 2)
    x = rng.normal(size=3)
    expected = a3.weight @ np.maximum(a2.weight @ (a1.weight @ x + a1.bias) + a2.bias, 0) + a3.bias
    np.testing.assert_allclose(net.forward(x), expected)


def test_network_jacobian_matches_finite_differences(rng):
    net = random_network(rng, [4, 6, 6, 3])
    x = rng.normal(size=4)
    eps = 1e-6
    fd = np.stack(
        [(net.forward(x + eps * e) - net.forward(x - eps * e)) / (2 * eps) for e in np.eye(4)],
        axis=1,
    )
    np.testing.assert_allclose(net.jacobian_at(x), fd, atol=1e-6)
    c = rng.normal(size=3)
    np.testing.assert_allclose(net.gradients(x, c), c @ net.jacobian_at(x), atol=1e-12)


def test_network_is_immutable(rng):
    net = random_network(rng, [2, 3, 1])
    with pytest.raises(ValueError):
        net.affine_layers[0].weight[0, 0] = 1.0


@pytest.mark.parametrize(
    "make_layers, fragment",
    [
        (lambda: [], "at least one"),
        (lambda: [ReLU()], "canonical"),
        (
            lambda: [
                Affine(np.ones((2, 3)), np.ones(2)),
                ReLU(),
                Affine(np.ones((1, 3)), np.ones(1)),
            ],
            "chain",
        ),
        (lambda: [Affine(np.ones((2, 3)), np.ones(3))], "bias"),
        (lambda: [Affine(np.full((2, 3), np.nan), np.ones(2))], "non-finite"),
    ],
)
def test_network_rejects_malformed_layers(make_layers, fragment):
    with pytest.raises(NetworkError, match=fragment):
        Network(tuple(make_layers()))


def test_from_affines_puts_a_relu_between_each_two():
    first = Affine(np.array([[1.0, -2.0], [0.5, 1.0]]), np.array([0.1, -0.2]))
    last = Affine(np.array([[1.0, -1.0]]), np.zeros(1))
    net = Network.from_affines([first, last])
    assert net.layers == (first, net.layers[1], last) and isinstance(net.layers[1], ReLU)
    x = np.array([[0.3, -0.7], [1.0, 2.0]])
    expected = Network.from_layers([first, ReLU(), last]).forward(x)
    assert np.array_equal(net.forward(x), expected)
    assert Network.from_affines([last]).layers == (last,)
