"""LipSDP against cvxpy-free facts: exact ℓ2 constants of one-hidden-layer networks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lipopt import Affine, Box, Network
from lipopt.estimators import Kind, lipsdp, naive
from lipopt.estimators.base import EstimatorUnavailable
from tests.helpers import random_network, require_module
from tests.oracle import brute_force_lipschitz, from_lipopt

require_module("cvxpy")


def _exact_l2_one_hidden_layer(net: Network) -> float:
    """Global ℓ2 constant of x -> w2 relu(W1 x + b1) when d >= n: every 0/1 pattern is a
    region of the hyperplane arrangement (n <= d generic hyperplanes), so it is the max over
    all patterns of ||w2 diag(σ) W1||_2."""
    w1, w2 = (a.weight for a in net.affine_layers)
    assert w1.shape[1] >= w1.shape[0]
    return max(
        float(np.linalg.norm((w2 * np.array(s)) @ w1))
        for s in itertools.product([0.0, 1.0], repeat=w1.shape[0])
    )


@pytest.mark.parametrize("seed", range(5))
def test_neuron_variant_brackets_the_exact_l2_constant(seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, [4, 4, 1])
    domain = Box(-np.ones(4), np.ones(4))
    exact_l2 = _exact_l2_one_hidden_layer(net)
    est = lipsdp.estimate(net, domain, "l1")
    assert est.kind is Kind.UPPER and est.detail["certified"]
    assert est.detail["l2_bound"] >= exact_l2 * (1 - 1e-7)
    # and it is never worse than the naive product of spectral norms
    assert est.detail["l2_bound"] <= naive.estimate(net, domain, "l1").detail["l2_bound"] * (
        1 + 1e-6
    )


def test_neuron_variant_against_the_region_oracle_in_l2():
    """Deeper net, ℓ2 constant over a large box by region enumeration (a lower bound on the
    global ℓ2 constant that LipSDP bounds)."""
    rng = np.random.default_rng(7)
    net = random_network(rng, [2, 4, 4, 1], bias_std=0.3)
    big = Box(np.full(2, -50.0), np.full(2, 50.0))
    oracle = brute_force_lipschitz(*from_lipopt(net, big), np.ones(1), "l2").value
    est = lipsdp.estimate(net, big, "l1")
    assert est.detail["l2_bound"] >= oracle * (1 - 1e-7)


def test_network_variant_can_undercut_the_exact_constant_so_it_is_a_heuristic():
    """The coupled multipliers of LipSDP-Network are not valid for ReLU: a counterexample."""
    rng = np.random.default_rng(0)
    found = False
    for _ in range(10):
        net = random_network(rng, [3, 3, 1], bias_std=0.3)
        exact_l2 = _exact_l2_one_hidden_layer(net)
        est = lipsdp.estimate(net, Box(-np.ones(3), np.ones(3)), "l1", variant="network")
        assert est.kind is Kind.HEURISTIC
        found |= est.detail["l2_bound"] < exact_l2 * (1 - 1e-4)
    assert found


def test_local_slopes_tighten_and_stay_sound():
    rng = np.random.default_rng(3)
    net = random_network(rng, [4, 4, 1])
    domain = Box(np.full(4, 0.2), np.full(4, 0.3))
    glob = lipsdp.estimate(net, domain, "linf")
    loc = lipsdp.estimate(net, domain, "linf", local=True)
    assert loc.value <= glob.value * (1 + 1e-6)
    grads = net.gradients(domain.sample(2000, rng), np.ones(1))
    assert np.abs(grads).sum(axis=1).max() <= loc.value * (1 + 1e-7)


def test_affine_network_needs_no_sdp():
    net = Network((Affine(np.array([[3.0, 4.0]]), np.zeros(1)),))
    est = lipsdp.estimate(net, Box([0, 0], [1, 1]), "l1")
    assert est.value == pytest.approx(5.0) and est.detail["status"] == "affine"


def test_missing_cvxpy_is_reported(monkeypatch):
    def unavailable():
        raise EstimatorUnavailable("LipSDP needs cvxpy: pip install 'lipopt[sdp]'")

    monkeypatch.setattr(lipsdp, "_cvxpy", unavailable)
    with pytest.raises(EstimatorUnavailable, match="lipopt\\[sdp\\]"):
        lipsdp.estimate(Network((Affine(np.eye(2)[:1], np.zeros(1)),)), Box([0, 0], [1, 1]))


def test_bad_variant_is_rejected():
    net = Network((Affine(np.eye(2)[:1], np.zeros(1)),))
    with pytest.raises(ValueError, match="variant"):
        lipsdp.estimate(net, Box([0, 0], [1, 1]), variant="layer")
