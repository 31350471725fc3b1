"""SHOR (issue 27, ``../shared/semialgebraic.md`` §7): the constraint builder on feasible
points, and the proven bound against the exact constant from the MIP and from the independent
brute force, the sampled lower bound, and the closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall, lipschitz
from lipopt.bounds import propagate
from lipopt.estimators import Kind, hr2, shor
from lipopt.estimators.base import EstimatorOutOfScope
from lipopt.estimators.moments import compile_relaxation
from tests.helpers import assert_feasible_moments, random_network, require_module
from tests.oracle import brute_force_lipschitz, from_lipopt, sampled_max_gradient_norm

require_module("cvxpy")

#: the solver's tolerance where SHOR should equal a value (it is an SDP solved to ~1e-8, then
#: proven with a correction of the same order times the trace bound)
TOLERANCE = 1e-5

#: where two relaxations' proven bounds are compared: these SDPs are degenerate (the equalities
#: u² = u and the fixed u of stable neurons leave no strictly feasible moment matrix), and an
#: interior-point solver's dual stops up to ~2e-5 from the optimum there (measured on these
#: networks; each bound stays proven, only their order can blur by that much)
ORDER_TOLERANCE = 1e-4


def _cases() -> list[tuple[int, object, object]]:
    """12 networks of one hidden layer (d, n from 2 to 8), each on a box and an linf ball."""
    rng = np.random.default_rng(27)
    cases = []
    for seed in range(12):
        d, n = int(rng.integers(2, 9)), int(rng.integers(2, 9))
        net = random_network(np.random.default_rng(seed), [d, n, 1])
        centre = rng.uniform(-1, 1, d)
        domain = Box(centre - 1.0, centre + 1.0) if seed % 2 else LinfBall(centre, 0.2)
        cases.append((seed, net, domain))
    return cases


@pytest.mark.parametrize("seed, net, domain", _cases(), ids=lambda v: str(v)[:12])
def test_shor_is_above_the_exact_constant_and_the_samples(seed, net, domain):
    est = shor.estimate(net, domain)
    exact = lipschitz(net, domain, workers=1).value
    oracle = brute_force_lipschitz(*from_lipopt(net, domain), np.ones(1), "linf").value
    sampled = sampled_max_gradient_norm(*from_lipopt(net, domain), np.ones(1), "linf")
    assert exact == pytest.approx(oracle, rel=1e-6, abs=1e-9)
    assert est.kind is Kind.UPPER
    assert est.value >= oracle * (1 - 1e-9) - 1e-12  # proven: no solver tolerance needed
    assert oracle >= sampled * (1 - 1e-9) - 1e-12
    w1, w2 = (a.weight for a in net.affine_layers)
    assert est.value <= np.abs(w2.T * w1).sum() + TOLERANCE  # Σ |c_j A_ji|
    assert est.detail["correction"] >= 0
    assert est.detail["block_side"] <= 1 + 2 * w1.shape[1] + w1.shape[0]  # stable u: constants


def test_a_feasible_points_moments_satisfy_every_constraint():
    """The moment vector of a feasible point (x in the box, u its pattern, t the gradient's
    signs, ω its normalised pre-activations) meets every block, equality and inequality of
    HR-2 (so of SHOR, its first part), and its objective is that point's gradient ℓ1 norm."""
    rng = np.random.default_rng(3)
    net = random_network(rng, [5, 7, 1])
    domain = Box(-np.ones(5), np.ones(5))
    (w1, b1), (w2, _b2) = ((a.weight, a.bias) for a in net.affine_layers)
    found = propagate(net, domain, np.ones(1), method="linear")
    z_lo, z_hi = found.pre_lower[0], found.pre_upper[0]
    relax = hr2.relaxation((w1, b1, w2[0]), (domain.lower, domain.upper), (z_lo, z_hi), level=2)
    compiled = compile_relaxation(relax)
    for x in rng.uniform(-1, 1, (50, 5)):
        z = w1 @ x + b1
        u = (z > 0).astype(float)
        gradient = w1.T @ (u * w2[0])
        omega = (z - (z_lo + z_hi) / 2) / ((z_hi - z_lo) / 2)
        v = np.concatenate([x, u, np.sign(gradient), omega])  # the box is [-1, 1]: ξ = x
        assert_feasible_moments(compiled, v, np.abs(gradient).sum())


def test_one_neuron_that_can_be_active_gives_c_times_its_l1_norm():
    net = random_network(np.random.default_rng(5), [4, 1, 1])
    a, c = net.affine_layers[0].weight[0], net.affine_layers[1].weight[0, 0]
    centre = -net.affine_layers[0].bias[0] * a / (a @ a)  # the kink crosses the box
    est = shor.estimate(net, Box(centre - 1, centre + 1))
    assert est.value == pytest.approx(abs(c) * np.abs(a).sum(), rel=TOLERANCE)


def test_every_neuron_stable_gives_the_exact_value():
    rng = np.random.default_rng(8)
    net = random_network(rng, [3, 6, 1])
    domain = LinfBall(rng.uniform(-1, 1, 3), 1e-3)
    bounds = propagate(net, domain, np.ones(1), method="linear")
    assert np.all((bounds.pre_lower[0] > 0) | (bounds.pre_upper[0] < 0))  # all stable
    exact = lipschitz(net, domain, workers=1).value
    assert shor.estimate(net, domain).value == pytest.approx(exact, rel=TOLERANCE)


@pytest.mark.parametrize(
    "widths, domain, norm, phrase",
    [
        ([2, 4, 4, 4, 1], Box(-np.ones(2), np.ones(2)), "linf", "up to 2 hidden layers"),
        ([2, 4, 1], Box(-np.ones(2), np.ones(2)), "l1", "linf and l2 input norms"),
        ([2, 4, 1], L1Ball(np.zeros(2), 1.0), "linf", "a box, an linf ball or a polytope"),
    ],
)
def test_outside_its_scope_it_says_why(widths, domain, norm, phrase):
    net = random_network(np.random.default_rng(1), widths)
    with pytest.raises(EstimatorOutOfScope, match=phrase):
        shor.estimate(net, domain, norm)


@pytest.mark.parametrize("seed, net, domain", _cases(), ids=lambda v: str(v)[:12])
def test_hr2_is_between_the_exact_value_and_shor(seed, net, domain):
    """HR-2 keeps every SHOR constraint and adds valid ones: exact <= HR-2 <= SHOR (the two
    proven bounds may differ from their SDP values by their corrections, ~1e-6)."""
    high = shor.estimate(net, domain)
    est = hr2.estimate(net, domain)
    oracle = brute_force_lipschitz(*from_lipopt(net, domain), np.ones(1), "linf").value
    assert est.kind is Kind.UPPER
    assert est.value >= oracle * (1 - 1e-9) - 1e-12  # proven: no tolerance
    assert est.value <= high.value + ORDER_TOLERANCE * max(1.0, high.value)


def test_hr2_is_strictly_tighter_somewhere():
    """On a local box the second-order blocks cut SHOR's bound (as the seed measured)."""
    rng = np.random.default_rng(0)
    gains = []
    for _ in range(6):
        d, n = int(rng.integers(2, 8)), int(rng.integers(2, 8))
        net = random_network(rng, [d, n, 1])
        x = rng.uniform(-1, 1, d)
        for domain in (Box(x - 1, x + 1), LinfBall(x, 0.1)):
            gains.append(shor.estimate(net, domain).value - hr2.estimate(net, domain).value)
    assert max(gains) > 1e-3


def test_hr2_one_neuron_and_stable_closed_forms():
    net = random_network(np.random.default_rng(5), [4, 1, 1])
    a, c = net.affine_layers[0].weight[0], net.affine_layers[1].weight[0, 0]
    centre = -net.affine_layers[0].bias[0] * a / (a @ a)
    est = hr2.estimate(net, Box(centre - 1, centre + 1))
    assert est.value == pytest.approx(abs(c) * np.abs(a).sum(), rel=TOLERANCE)
    rng = np.random.default_rng(8)
    net = random_network(rng, [3, 6, 1])
    domain = LinfBall(rng.uniform(-1, 1, 3), 1e-3)
    exact = lipschitz(net, domain, workers=1).value
    assert hr2.estimate(net, domain).value == pytest.approx(exact, rel=TOLERANCE)


def test_hr2_outside_its_scope_says_why():
    net = random_network(np.random.default_rng(1), [2, 4, 4, 4, 1])
    with pytest.raises(EstimatorOutOfScope, match="up to 2 hidden layers; this network has 3"):
        hr2.estimate(net, Box(-np.ones(2), np.ones(2)))


def test_with_scs_the_bounds_stay_proven():
    """SCS stops at ~1e-4 to 1e-6 accuracy: the proof's correction absorbs it, so the bound is
    still above the exact value (only looser than Clarabel's)."""
    for seed, net, domain in _cases()[:4]:
        oracle = brute_force_lipschitz(*from_lipopt(net, domain), np.ones(1), "linf").value
        for method in (shor, hr2):
            est = method.estimate(net, domain, solver="SCS")
            assert est.detail["solver"] == "SCS"
            assert est.value >= oracle * (1 - 1e-9) - 1e-12, (seed, method.NAME)
