"""Badly scaled neurons are rescaled by powers of two (issue 31): the same function to the last
bit, and nothing changes for networks without such neurons."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import lipopt
from lipopt import Affine, Network, ReLU
from lipopt.balance import balanced
from lipopt.policy import BALANCE_RATIO
from tests.helpers import random_network

MODELS = Path(__file__).resolve().parent.parent / "models"


def _skewed(seed: int) -> Network:
    """A random [3, 6, 5, 2] network with one neuron per hidden layer scaled by 1e6 on the way
    in and 1e-6 on the way out, and one the other way round."""
    rng = np.random.default_rng(seed)
    affines = [layer for layer in random_network(rng, [3, 6, 5, 2]).affine_layers]
    weights = [(a.weight.copy(), a.bias.copy()) for a in affines]
    for k, factor in ((0, 1e6), (1, 1e-6)):
        w, b = weights[k]
        w[1], b[1] = w[1] * factor, b[1] * factor
        weights[k + 1][0][:, 1] /= factor
    return Network.from_layers([Affine(*weights[0]), ReLU(), Affine(*weights[1]), ReLU(),
                                Affine(*weights[2])])


@pytest.mark.parametrize("seed", range(5))
def test_the_balanced_network_is_the_same_function_bit_for_bit(seed):
    net = _skewed(seed)
    even = balanced(net, BALANCE_RATIO)
    assert even is not net
    x = np.random.default_rng(seed + 100).uniform(-1, 1, size=(2000, 3))
    assert np.array_equal(even.forward(x), net.forward(x))
    for z_even, z in zip(even.pre_activations(x), net.pre_activations(x)):
        assert np.array_equal(z_even > 0, z > 0)
    assert np.array_equal(even.gradients(x, np.array([1.0, -1.0])),
                          net.gradients(x, np.array([1.0, -1.0])))


def test_the_balanced_neurons_have_comparable_norms_in_and_out():
    even = balanced(_skewed(0), BALANCE_RATIO)
    for incoming, outgoing in zip(even.affine_layers, even.affine_layers[1:]):
        inward = np.linalg.norm(np.column_stack([incoming.weight, incoming.bias]), axis=1)
        outward = np.linalg.norm(outgoing.weight, axis=0)
        assert np.all(inward / outward < BALANCE_RATIO)
        assert np.all(outward / inward < BALANCE_RATIO)


@pytest.mark.parametrize("model", sorted(p.name for p in MODELS.glob("*.onnx")))
def test_a_trained_network_is_left_alone(model):
    net = lipopt.load_onnx(MODELS / model)
    assert balanced(net, BALANCE_RATIO) is net


def test_zero_rows_and_columns_are_left_alone():
    first = Affine(np.array([[0.0, 0.0], [1e7, 1.0]]), np.array([0.0, 0.0]))
    last = Affine(np.array([[5.0, 0.0]]), np.zeros(1))
    net = Network.from_layers([first, ReLU(), last])
    assert balanced(net, BALANCE_RATIO) is net  # the dead second neuron has no outgoing weight
