"""Tangent (forward-mode) bounds: sound by sampling x and directions v, exact on the first
layer, never looser than plain interval propagation of the tangents."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.bounds import propagate
from lipopt.bounds.interval import NeuronState
from lipopt.bounds.tangent import direction_ball, tangent_bounds
from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.norms import InputNorm
from tests.helpers import random_network

TOL = 1e-9

CASES = [
    ([2, 10, 10, 1], Box([0.0, 0.0], [1.0, 1.0])),
    ([3, 8, 8, 8, 2], LinfBall([0.5, 0.5, 0.5], 0.3)),
    ([4, 12, 6, 3], L1Ball([0.1, 0.2, 0.3, 0.4], 0.8)),
    ([6, 16, 16, 16, 2], Box(np.zeros(6), np.ones(6))),
]


def sample_directions(norm: InputNorm, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Points of the unit ball of the input norm, a quarter of them vertices."""
    points = direction_ball(norm, d).sample(n, rng)
    if norm is InputNorm.LINF:
        vertices = rng.choice([-1.0, 1.0], size=(n // 4, d))
    else:
        signed = np.vstack([np.eye(d), -np.eye(d)])
        vertices = signed[rng.integers(2 * d, size=n // 4)]
    points[: n // 4] = vertices
    return points


def sampled_tangents(network, x: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    """``t_k = J_k(x) v`` per hidden layer, by numpy: pattern masks from the forward pass."""
    masks = [(z > 0).astype(np.float64) for z in network.pre_activations(x)]
    affines = network.affine_layers
    out = []
    t = v @ affines[0].weight.T
    for k in range(len(affines) - 1):
        out.append(t)
        t = (masks[k] * t) @ affines[k + 1].weight.T
    return out


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_tangent_bounds_contain_sampled_directional_derivatives(case, norm):
    widths, domain = CASES[case]
    rng = np.random.default_rng(40 + case)
    net = random_network(rng, widths)
    bounds = propagate(net, domain, np.ones(widths[-1]), "linear")
    tangent = tangent_bounds(net, bounds.states, norm)
    n = 20_000
    x = domain.sample(n, rng)
    v = sample_directions(InputNorm.parse(norm), widths[0], n, rng)
    for k, t in enumerate(sampled_tangents(net, x, v)):
        assert np.all(t >= tangent.lower[k] - TOL), f"layer {k}: below the lower bound"
        assert np.all(t <= tangent.upper[k] + TOL), f"layer {k}: above the upper bound"


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_tangent_bounds_first_layer_is_exact(norm):
    """``t_1 = W_1 v``: ±||W_1[i]||_1 over the box, ±max_j |W_1[i, j]| over the ℓ1 ball."""
    net = random_network(np.random.default_rng(3), [5, 7, 4, 1])
    bounds = propagate(net, Box(np.zeros(5), np.ones(5)), np.ones(1), "linear")
    tangent = tangent_bounds(net, bounds.states, norm)
    weight = np.abs(net.affine_layers[0].weight)
    radius = weight.sum(axis=1) if norm == "linf" else weight.max(axis=1)
    np.testing.assert_allclose(tangent.upper[0], radius, rtol=1e-8)
    np.testing.assert_allclose(tangent.lower[0], -radius, rtol=1e-8)


def _interval_tangents(net, states, norm: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Plain interval propagation of the tangents, written out independently."""
    affines = net.affine_layers
    weight = affines[0].weight
    radius = np.abs(weight).sum(axis=1) if norm == "linf" else np.abs(weight).max(axis=1)
    out = [(-radius, radius)]
    for k in range(1, len(affines) - 1):
        lo, hi = out[-1]
        state = states[k - 1]
        d_lo = np.where(state == NeuronState.ACTIVE, lo, np.minimum(lo, 0.0))
        d_hi = np.where(state == NeuronState.ACTIVE, hi, np.maximum(hi, 0.0))
        d_lo[state == NeuronState.INACTIVE] = 0.0
        d_hi[state == NeuronState.INACTIVE] = 0.0
        w = affines[k].weight
        pos, neg = np.maximum(w, 0.0), np.minimum(w, 0.0)
        out.append((pos @ d_lo + neg @ d_hi, pos @ d_hi + neg @ d_lo))
    return out


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_tangent_bounds_never_looser_than_interval_and_tighter_on_deep_layers(norm):
    rng = np.random.default_rng(11)
    net = random_network(rng, [8, 16, 16, 16, 1])
    bounds = propagate(net, Box(np.zeros(8), np.ones(8)), np.ones(1), "linear")
    tangent = tangent_bounds(net, bounds.states, norm)
    plain = _interval_tangents(net, bounds.states, norm)
    width_gain = []
    for k, (lo, hi) in enumerate(plain):
        assert np.all(tangent.lower[k] >= lo - 1e-7 * (1 + np.abs(lo)))
        assert np.all(tangent.upper[k] <= hi + 1e-7 * (1 + np.abs(hi)))
        width_gain.append(np.sum(hi - lo) - np.sum(tangent.upper[k] - tangent.lower[k]))
    assert width_gain[-1] > 0  # the back-substitution pays on the last layer
