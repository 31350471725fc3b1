"""Every bound method on networks with per-neuron two-piece activations ``h = α z + (1 - α)
relu(z)``, against independent truth (:mod:`tests.bounds.activation_cases`): sampled
pre-activations, post-activations, backward variables, switches, tangents and gradients lie
inside the interval, linear, LP, split and tangent bounds over boxes and ℓ∞/ℓ1/ℓ2 balls, and the
Jacobian-norm bound and FastLip lie above every sampled gradient's dual norm."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NetworkBounds, interval_bounds
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.bounds.linear import linear_bounds
from lipopt.bounds.lp import lp_bounds
from lipopt.bounds.tangent import tangent_bounds
from lipopt.domain import L1Ball
from lipopt.estimators import fastlip
from tests.bounds.activation_cases import (
    DOMAINS,
    SAMPLES,
    TOL,
    act,
    backward_truth,
    forward_truth,
    sampled_case,
    slope_of,
)

DUAL = {"linf": 1, "l1": np.inf, "l2": 2}


def assert_within(values: np.ndarray, lower: np.ndarray, upper: np.ndarray, what: str) -> None:
    slack = TOL * (1.0 + np.abs(values))
    assert np.all(values >= lower - slack), f"{what} below its lower bound"
    assert np.all(values <= upper + slack), f"{what} above its upper bound"


def assert_sound(bounds: NetworkBounds, weights, slopes, x, top) -> None:
    """Every sampled ``z_k``, ``h_k``, ``y_k`` and ``∇f`` inside ``bounds``."""
    zs = forward_truth(weights, slopes, x)
    ys, grad = backward_truth(weights, slopes, zs, top)
    for k, z in enumerate(zs):
        assert_within(z, bounds.pre_lower[k], bounds.pre_upper[k], f"z_{k}")
        assert_within(act(slopes[k], z), *bounds.hidden_range(k), f"h_{k}")
        assert_within(ys[k], bounds.grad_lower[k], bounds.grad_upper[k], f"y_{k}")
        assert_within(slope_of(slopes[k], z) * ys[k], *bounds.switch_bounds(k), f"s_{k}")
    assert_within(grad, bounds.input_grad_lower, bounds.input_grad_upper, "grad")


METHODS = {"interval": interval_bounds, "linear": linear_bounds, "lp": lp_bounds}


@pytest.mark.parametrize("seed_kind", ["c", "norm"])
@pytest.mark.parametrize("kind", DOMAINS)
@pytest.mark.parametrize("case", range(6))
def test_bounds_contain_sampled_values(case, kind, seed_kind):
    network, weights, slopes, domain, seed, x, top, _ = sampled_case(case, kind, seed_kind)
    found = {name: method(network, domain, seed) for name, method in METHODS.items()}
    for bounds in found.values():
        assert bounds.slopes is not None
        assert_sound(bounds, weights, slopes, x, top)
    # by construction each method is met with the one before it (a documented property)
    for tight, loose in (("linear", "interval"), ("lp", "linear")):
        for k in range(len(slopes)):
            assert np.all(found[tight].pre_lower[k] >= found[loose].pre_lower[k])
            assert np.all(found[tight].pre_upper[k] <= found[loose].pre_upper[k])
    # an identity neuron is never unstable
    for state, alpha in zip(found["lp"].states, slopes, strict=True):
        assert np.all(state[alpha == 1.0] == 1)


@pytest.mark.parametrize("kind", DOMAINS)
@pytest.mark.parametrize("case", range(6))
def test_split_bounds_contain_the_samples_of_their_sub_domain(case, kind):
    network, weights, slopes, domain, seed, x, top, rng = sampled_case(case, kind, "c")
    zs = forward_truth(weights, slopes, x)
    root = split_bounds(network, domain, seed, {})
    assert root is not None
    assert_sound(root, weights, slopes, x, top)
    for _ in range(6):
        splits = {}
        for _ in range(int(rng.integers(1, 4))):
            k = int(rng.integers(len(slopes)))
            splits[(k, int(rng.integers(slopes[k].size)))] = bool(rng.random() < 0.5)
        inside = np.ones(SAMPLES, dtype=bool)
        for (k, i), active in splits.items():
            inside &= zs[k][:, i] >= 0 if active else zs[k][:, i] <= 0
        bounds = split_bounds(network, domain, seed, splits, reference=root)
        if bounds is None:
            assert not inside.any(), "a sub-domain with sampled points was called empty"
            continue
        assert_sound(bounds, weights, slopes, x[inside], top[inside])


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("case", range(6))
def test_tangent_bounds_contain_sampled_tangents(case, norm):
    kind = DOMAINS[case % len(DOMAINS)]
    network, weights, slopes, domain, seed, x, _, rng = sampled_case(case, kind, "c")
    tangent = tangent_bounds(network, linear_bounds(network, domain, seed).states, norm)
    d = x.shape[1]
    if norm == "linf":
        v = rng.uniform(-1.0, 1.0, size=(SAMPLES, d))
        v[: SAMPLES // 3] = rng.choice([-1.0, 1.0], size=(SAMPLES // 3, d))
    else:
        v = L1Ball(np.zeros(d), 1.0).sample(SAMPLES, rng)
        tips = np.vstack([np.eye(d), -np.eye(d)])
        v[: SAMPLES // 3] = tips[rng.integers(2 * d, size=SAMPLES // 3)]
    t = v @ weights[0][0].T
    for k, z in enumerate(forward_truth(weights, slopes, x)):
        assert_within(t, tangent.lower[k], tangent.upper[k], f"t_{k}")
        t = (slope_of(slopes[k], z) * t) @ weights[k + 1][0].T


@pytest.mark.parametrize("norm", sorted(DUAL))
@pytest.mark.parametrize("case", range(6))
def test_jacobian_bound_and_fastlip_above_sampled_gradients(case, norm):
    kind = DOMAINS[case % len(DOMAINS)]
    network, weights, slopes, domain, seed, x, top, _ = sampled_case(case, kind, "c")
    _, grad = backward_truth(weights, slopes, forward_truth(weights, slopes, x), top)
    largest = float(np.max(np.linalg.norm(grad, ord=DUAL[norm], axis=1)))
    chord = jacobian_norm_bound(network, domain, seed, norm)
    assert chord.value >= largest * (1.0 - TOL)
    assert chord.value <= chord.fastlip * (1.0 + TOL)
    if norm != "l2":
        assert fastlip.estimate(network, domain, norm, seed).value >= largest * (1.0 - TOL)
    pytest.importorskip("torch")
    searched = jacobian_norm_bound(network, domain, seed, norm, iterations=5)
    assert searched.value >= largest * (1.0 - TOL)
