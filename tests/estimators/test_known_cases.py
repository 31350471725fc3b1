"""Estimators on networks whose constant is known in closed form."""

from __future__ import annotations

import os

import numpy as np
import pytest

from lipopt import Affine, Box, L1Ball, LinfBall, Network, ReLU
from lipopt.estimators import ESTIMATORS, Kind, naive, seqlip
from lipopt.estimators.base import EstimatorOutOfScope, EstimatorUnavailable

LINEAR = Network((Affine(np.array([[1.0, -2.0, 0.5], [0.3, 0.0, -1.0]]), np.zeros(2)),))
C = np.array([1.0, -1.0])
GRAD = LINEAR.affine_layers[0].weight.T @ C  # the constant gradient of c^T f: (0.7, -2, 1.5)
DUAL = {"linf": float(np.abs(GRAD).sum()), "l1": float(np.abs(GRAD).max())}
L2 = float(np.linalg.norm(GRAD))
#: estimators that must be exact on an affine map; the ℓ2-based ones are only >= there
EXACT_ON_AFFINE = ("random", "attack", "fastlip", "liplp", "clever", "lipmip")
L2_BASED = ("naive", "seqlip", "lipsdp")


def _run(name, net, domain, norm, c):
    try:
        return ESTIMATORS[name](net, domain, norm, c)
    except EstimatorUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs every extra, yet: {exc}")
        pytest.skip(str(exc))


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("name", EXACT_ON_AFFINE)
def test_affine_network_every_estimator_is_exact(name, norm):
    est = _run(name, LINEAR, Box(-np.ones(3), np.ones(3)), norm, C)
    assert est.value == pytest.approx(DUAL[norm], rel=1e-7)


@pytest.mark.parametrize("norm, scale", [("linf", np.sqrt(3)), ("l1", 1.0)])
@pytest.mark.parametrize("name", L2_BASED)
def test_affine_network_l2_estimators_are_the_scaled_l2_norm(name, norm, scale):
    est = _run(name, LINEAR, Box(-np.ones(3), np.ones(3)), norm, C)
    assert est.value == pytest.approx(scale * L2, rel=1e-6)
    assert est.value >= DUAL[norm]  # ||g||_1 <= sqrt(d) ||g||_2 and ||g||_inf <= ||g||_2


def test_naive_is_tight_for_l1_when_the_gradient_has_one_coordinate():
    net = Network((Affine(np.array([[0.0, 3.0, 0.0]]), np.zeros(1)),))
    est = naive.estimate(net, Box(np.zeros(3), np.ones(3)), "l1")
    assert est.value == pytest.approx(3.0)


def _all_active_network() -> tuple[Network, float]:
    """Positive weights and biases on the positive orthant: every neuron is always active,
    so f is affine on the domain with Jacobian W_3 W_2 W_1."""
    rng = np.random.default_rng(3)
    w1, w2 = rng.uniform(0.1, 1.0, (4, 3)), rng.uniform(0.1, 1.0, (5, 4))
    w3 = rng.normal(size=(2, 5))
    layers = [Affine(w1, np.full(4, 0.5)), ReLU(), Affine(w2, np.full(5, 0.5)), ReLU()]
    net = Network.from_layers([*layers, Affine(w3, np.zeros(2))])
    return net, w3, w2, w1  # type: ignore[return-value]


@pytest.mark.parametrize("norm", ["linf", "l1", "l2"])
def test_all_stable_network(norm):
    net, w3, w2, w1 = _all_active_network()
    domain = Box(np.zeros(3), np.ones(3))
    grad = (C @ w3) @ w2 @ w1
    exact = float(np.linalg.norm(grad, ord={"linf": 1, "l1": np.inf, "l2": 2}[norm]))
    for name in ESTIMATORS:
        try:
            est = ESTIMATORS[name](net, domain, norm, C)
        except (EstimatorUnavailable, EstimatorOutOfScope):  # shor/hr2/lipopt-k: <= 2 hidden layers
            continue
        if name in EXACT_ON_AFFINE:
            assert est.value == pytest.approx(exact, rel=1e-6), name
        else:
            assert est.value >= exact * (1 - 1e-6), name
    # local SeqLip fixes every neuron: it is exactly the product bound of the fixed Jacobian
    local = seqlip.estimate(net, domain, norm, C)
    assert local.kind is Kind.HEURISTIC
    assert local.detail["l2_estimate"] >= np.linalg.norm(grad) * (1 - 1e-9)


def test_naive_bound_holds_on_deep_random_networks():
    from tests.helpers import random_network

    rng = np.random.default_rng(9)
    for widths in ([6, 20, 20, 20, 1], [3, 30, 5, 30, 2]):
        net = random_network(rng, widths)
        c = np.ones(widths[-1])
        domain = LinfBall(np.zeros(widths[0]), 3.0)
        grads = net.gradients(domain.sample(20_000, rng), c)
        for norm, order in (("linf", 1), ("l1", np.inf)):
            bound = naive.estimate(net, domain, norm, c).value
            assert np.linalg.norm(grads, ord=order, axis=1).max() <= bound


def test_l1_ball_domain_is_supported():
    est = ESTIMATORS["fastlip"](LINEAR, L1Ball(np.zeros(3), 1.0), "linf", C)
    assert est.value == pytest.approx(DUAL["linf"])
