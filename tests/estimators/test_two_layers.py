"""SHOR (HR-1), HR-2 and LiPopt-k on two hidden layers (issue 27, ``../shared/semialgebraic.md``
§1, §3 and §7): the constraint builder on feasible points, and every proven bound against the
exact constant from the MIP and from the independent brute force, and the sampled maximum."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, LinfBall, lipschitz
from lipopt.bounds import propagate
from lipopt.estimators import Kind, hr2, lipopt_k, shor
from lipopt.estimators.base import problem
from lipopt.estimators.moments import compile_relaxation
from lipopt.estimators.semialgebraic import hidden_layers
from lipopt.estimators.two_layers import lifted_point, relaxation
from tests.estimators.test_shor import ORDER_TOLERANCE, TOLERANCE
from tests.helpers import assert_feasible_moments, random_network, require_module
from tests.oracle import brute_force_lipschitz, from_lipopt, sampled_max_gradient_norm

require_module("cvxpy")


def _cases() -> list[tuple[int, object, object]]:
    """12 networks of two hidden layers (d, n₁, n₂ from 2 to 8), boxes and linf balls."""
    rng = np.random.default_rng(272)
    cases = []
    for seed in range(12):
        d, n1, n2 = (int(v) for v in rng.integers(2, 9, size=3))
        net = random_network(np.random.default_rng(100 + seed), [d, n1, n2, 1])
        centre = rng.uniform(-1, 1, d)
        domain = Box(centre - 0.5, centre + 0.5) if seed % 2 else LinfBall(centre, 0.2)
        cases.append((seed, net, domain))
    return cases


@pytest.mark.parametrize("seed, net, domain", _cases(), ids=lambda v: str(v)[:12])
def test_every_bound_is_above_the_exact_constant(seed, net, domain):
    """``shor >= hr2 >= exact >= sampled`` and ``lipopt4 <= lipopt3``, both >= exact."""
    exact = lipschitz(net, domain, workers=1).value
    oracle = brute_force_lipschitz(*from_lipopt(net, domain), np.ones(1), "linf").value
    sampled = sampled_max_gradient_norm(*from_lipopt(net, domain), np.ones(1), "linf")
    assert exact == pytest.approx(oracle, rel=1e-6, abs=1e-9)
    assert oracle >= sampled * (1 - 1e-9) - 1e-12
    high, second = shor.estimate(net, domain), hr2.estimate(net, domain)
    three, four = lipopt_k.estimate3(net, domain), lipopt_k.estimate4(net, domain)
    for est in (high, second, three, four):
        assert est.kind is Kind.UPPER
        assert est.value >= oracle * (1 - 1e-9) - 1e-12, est.name  # proven: no tolerance
    assert high.detail["relaxation"] == "HR-1"
    assert second.value <= high.value + ORDER_TOLERANCE * max(1.0, high.value)
    assert four.value <= three.value + 1e-7 * max(1.0, three.value)


def test_a_feasible_points_moments_satisfy_every_constraint():
    """The moment vector of a feasible point (x in the box, u₁, u₂ its pattern, t the gradient's
    signs, η and ω its hidden output and pre-activations) meets every block, equality and
    inequality of HR-2, and its objective is that point's gradient ℓ1 norm."""
    rng = np.random.default_rng(4)
    net = random_network(rng, [4, 5, 3, 1])
    domain = Box(-np.ones(4), np.ones(4))
    layered = hidden_layers(problem(net, domain, "linf", None), "HR-2", 2)
    compiled = compile_relaxation(relaxation(layered, level=2))
    (a1, b1), (a2, b2), (a3, _b3) = ((a.weight, a.bias) for a in net.affine_layers)
    for x in rng.uniform(-1, 1, (40, 4)):
        u1 = (a1 @ x + b1 > 0).astype(float)
        u2 = (a2 @ (u1 * (a1 @ x + b1)) + b2 > 0).astype(float)
        gradient = a1.T @ (u1 * (a2.T @ (u2 * a3[0])))
        v = lifted_point(layered, x, np.sign(gradient))
        assert np.all(np.abs(v) <= 1 + 1e-12)  # every variable normalised: bounds of 1
        assert_feasible_moments(compiled, v, np.abs(gradient).sum())


def test_every_neuron_stable_gives_the_exact_value():
    rng = np.random.default_rng(9)
    net = random_network(rng, [3, 5, 4, 1])
    domain = LinfBall(rng.uniform(-1, 1, 3), 1e-3)
    found = propagate(net, domain, np.ones(1), method="linear")
    assert all(np.all((lo > 0) | (hi < 0)) for lo, hi in zip(found.pre_lower, found.pre_upper))
    exact = lipschitz(net, domain, workers=1).value
    for method in (shor, hr2):
        assert method.estimate(net, domain).value == pytest.approx(exact, rel=TOLERANCE)
    assert lipopt_k.estimate3(net, domain).value == pytest.approx(exact, rel=1e-7)


def test_hr2_is_strictly_tighter_than_hr1_somewhere():
    gains = []
    for _seed, net, domain in _cases()[:6]:
        gains.append(shor.estimate(net, domain).value - hr2.estimate(net, domain).value)
    assert max(gains) > 1e-3


def test_a_block_too_large_for_clarabel_is_refused_in_one_line(monkeypatch):
    """Above policy.CLARABEL_MAX_SIDE the SDP is not handed to Clarabel (it would exhaust the
    memory): a one-line refusal naming SCS; with SCS the same network runs."""
    from lipopt import policy
    from lipopt.estimators.base import EstimatorOutOfScope

    net = random_network(np.random.default_rng(3), [3, 4, 3, 1])
    domain = Box(-np.ones(3), np.ones(3))
    monkeypatch.setattr(policy, "CLARABEL_MAX_SIDE", 5)
    for method in (shor, hr2):
        with pytest.raises(EstimatorOutOfScope, match=r"too large for Clarabel.*--sdp-solver scs"):
            method.estimate(net, domain)
    one_layer = random_network(np.random.default_rng(3), [3, 4, 1])
    with pytest.raises(EstimatorOutOfScope, match="side 11 is too large for Clarabel"):
        shor.estimate(one_layer, domain)
    assert hr2.estimate(net, domain, solver="SCS").value > 0
