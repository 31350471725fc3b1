"""Linear (CROWN-style) bounds: sound by sampling, never looser than interval, tighter on average,
and the exact Lipschitz constant does not change with them."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import lipschitz
from lipopt.bounds import propagate
from lipopt.bounds.interval import NetworkBounds, NeuronState, interval_bounds
from lipopt.bounds.linear import (
    input_gradient_linear,
    linear_bounds,
    relu_relaxation,
    switch_relaxation,
)
from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.network import Affine, Network, ReLU
from lipopt.norms import OutputNorm
from tests.helpers import random_network

TOL = 1e-9


# ---------------------------------------------------------------------------- sampling helpers
def backward_values(
    network: Network, masks: list[np.ndarray], w: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray]:
    """Per hidden layer ``y_k`` (n, n_k), and the input gradient (n, d), for batches of 0/1
    activation masks (n, n_k) and output weightings ``w`` (n, m): ``y_{K-1} = W_K^T w``,
    ``y_{k-1} = W_k^T (a_k ⊙ y_k)``."""
    affines = network.affine_layers
    y = w @ affines[-1].weight
    ys = []
    for mask, affine in zip(reversed(masks), reversed(affines[:-1]), strict=True):
        ys.append(y)
        y = (mask * y) @ affine.weight
    return ys[::-1], y


def sample_seed(seed: object, m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points of the seed set: the vector c, or the dual ball the MIP uses for a norm."""
    if not isinstance(seed, OutputNorm):
        return np.broadcast_to(np.asarray(seed, dtype=np.float64), (n, m))
    if seed in (OutputNorm.ABS, OutputNorm.L1):
        points = rng.uniform(-1.0, 1.0, size=(n, m))
        points[: n // 4] = rng.choice([-1.0, 1.0], size=(n // 4, m))  # vertices too
        return points
    if seed is OutputNorm.LINF:
        points = L1Ball(np.zeros(m), 1.0).sample(n, rng)
        vertices = np.vstack([np.eye(m), -np.eye(m)])
        points[: n // 4] = vertices[rng.integers(len(vertices), size=n // 4)]
        return points
    # cross: E = conv({e_i} ∪ {e_i - e_j}); random convex combinations of its vertices (and 0)
    eye = np.eye(m)
    verts = [eye[i] for i in range(m)] + [
        eye[i] - eye[j] for i in range(m) for j in range(m) if i != j
    ]
    verts.append(np.zeros(m))
    vert = np.array(verts)
    weights = rng.dirichlet(np.full(len(vert), 0.3), size=n)
    points = weights @ vert
    points[: n // 4] = vert[rng.integers(len(vert), size=n // 4)]
    return points


def assert_sound(
    network: Network,
    domain: object,
    seed: object,
    bounds: NetworkBounds,
    rng: np.random.Generator,
    n: int = 4000,
) -> None:
    """Sampled pre-activations, backward values and input gradients lie inside the bounds —
    for the network's own activation pattern at each sampled x, and for random switch patterns
    that agree with the bounds' stable neurons (the patterns the MIP can choose)."""
    points = domain.sample(n, rng)  # type: ignore[attr-defined]
    pre = network.pre_activations(points)
    for z, lo, hi in zip(pre, bounds.pre_lower, bounds.pre_upper, strict=True):
        assert np.all(z >= lo - TOL) and np.all(z <= hi + TOL)
    w = sample_seed(seed, network.output_dim, n, rng)
    own = [(z > 0).astype(np.float64) for z in pre]
    free = []
    for state in bounds.states:
        mask = (state == NeuronState.ACTIVE).astype(np.float64) * np.ones((n, state.size))
        unstable = state == NeuronState.UNSTABLE
        mask[:, unstable] = rng.integers(0, 2, size=(n, int(unstable.sum())))
        free.append(mask)
    for masks in (own, free):
        ys, grad = backward_values(network, masks, w)
        for y, lo, hi in zip(ys, bounds.grad_lower, bounds.grad_upper, strict=True):
            assert np.all(y >= lo - TOL) and np.all(y <= hi + TOL)
        assert np.all(grad >= bounds.input_grad_lower - TOL)
        assert np.all(grad <= bounds.input_grad_upper + TOL)


def assert_inside(inner: NetworkBounds, outer: NetworkBounds) -> None:
    """Every bound of ``inner`` is at least as tight as ``outer``'s, elementwise."""
    pairs = [
        (inner.pre_lower, inner.pre_upper, outer.pre_lower, outer.pre_upper),
        (inner.grad_lower, inner.grad_upper, outer.grad_lower, outer.grad_upper),
        (
            (inner.input_grad_lower,),
            (inner.input_grad_upper,),
            (outer.input_grad_lower,),
            (outer.input_grad_upper,),
        ),
    ]
    for in_lo, in_hi, out_lo, out_hi in pairs:
        for a, b, c, d in zip(in_lo, in_hi, out_lo, out_hi, strict=True):
            assert np.all(a >= c) and np.all(b <= d)
            assert np.all(a <= b)


def total_width(bounds: NetworkBounds) -> tuple[float, float]:
    """Summed widths of the forward bounds, and of the backward bounds (with ∇f)."""
    pre = sum(
        float(np.sum(hi)) - float(np.sum(lo))
        for lo, hi in zip(bounds.pre_lower, bounds.pre_upper, strict=True)
    )
    grad = sum(
        float(np.sum(hi)) - float(np.sum(lo))
        for lo, hi in zip(bounds.grad_lower, bounds.grad_upper, strict=True)
    )
    grad += float(np.sum(bounds.input_grad_upper - bounds.input_grad_lower))
    return pre, grad


DOMAINS = {
    "box": lambda d, rng: Box(np.zeros(d), np.ones(d)),
    "linf": lambda d, rng: LinfBall(rng.uniform(size=d), 0.3),
    "l1": lambda d, rng: L1Ball(rng.uniform(size=d), 0.8),
}
SEEDS = {
    "c": lambda m, rng: rng.normal(size=m),
    "abs_or_l1": lambda m, rng: OutputNorm.ABS if m == 1 else OutputNorm.L1,
    "linf": lambda m, rng: OutputNorm.LINF,
    "cross": lambda m, rng: OutputNorm.CROSS,
}
WIDTHS = [[3, 8, 8, 6, 2], [4, 10, 10, 10, 10, 1], [2, 20, 40, 20, 3], [6, 12, 12, 12, 12, 12, 2]]


# ---------------------------------------------------------------------------- relaxations
def test_relu_relaxation_lines_enclose_relu():
    rng = np.random.default_rng(0)
    lower = rng.uniform(-3, 1, size=200)
    upper = lower + rng.uniform(0.01, 4, size=200)
    up_slope, up_shift, low_slope = relu_relaxation(lower, upper)
    for t in np.linspace(0.0, 1.0, 41):
        z = lower + t * (upper - lower)
        h = np.maximum(z, 0.0)
        assert np.all(h <= up_slope * z + up_shift + 1e-12)
        assert np.all(h >= low_slope * z - 1e-12)
    unstable = (lower < 0) & (upper > 0)
    assert np.all(np.isin(low_slope[unstable], [0.0, 1.0]))
    np.testing.assert_array_equal(low_slope[unstable], (upper >= -lower)[unstable])


def test_switch_relaxation_lines_enclose_both_switch_values():
    rng = np.random.default_rng(1)
    n = 300
    lower = rng.uniform(-3, 1, size=n)
    upper = lower + rng.choice([0.0, 0.5, 3.0], size=n)
    state = rng.integers(0, 3, size=n).astype(np.int8)
    up_slope, up_shift, low_slope, low_shift = switch_relaxation(state, lower, upper)
    for t in np.linspace(0.0, 1.0, 41):
        y = lower + t * (upper - lower)
        for a in (0.0, 1.0):
            gate = np.where(state == NeuronState.UNSTABLE, a, state == NeuronState.ACTIVE)
            s = gate * y
            assert np.all(s <= up_slope * y + up_shift + 1e-12)
            assert np.all(s >= low_slope * y + low_shift - 1e-12)


# ---------------------------------------------------------------------------- soundness
@pytest.mark.parametrize("seed_name", sorted(SEEDS))
@pytest.mark.parametrize("domain_name", sorted(DOMAINS))
@pytest.mark.parametrize("case", range(len(WIDTHS)))
def test_linear_bounds_contain_sampled_values(case, domain_name, seed_name):
    rng = np.random.default_rng(10 * case + len(domain_name) + len(seed_name))
    widths = WIDTHS[case]
    net = random_network(rng, widths)
    domain = DOMAINS[domain_name](widths[0], rng)
    seed = SEEDS[seed_name](widths[-1], rng)
    bounds = linear_bounds(net, domain, seed)
    assert bounds.method == "linear"
    assert_sound(net, domain, seed, bounds, rng)
    assert_inside(bounds, interval_bounds(net, domain, seed))


@pytest.mark.parametrize("domain_name", sorted(DOMAINS))
@pytest.mark.parametrize("case", range(len(WIDTHS)))
def test_one_pass_input_gradient_bounds_contain_sampled_gradients(case, domain_name):
    """input_gradient_linear from the interval pass's y ranges (as the region search uses it):
    every sampled gradient inside, and the states may fix neurons as a partial pattern does."""
    rng = np.random.default_rng(7 * case + len(domain_name))
    widths = WIDTHS[case]
    net = random_network(rng, widths)
    domain = DOMAINS[domain_name](widths[0], rng)
    c = rng.normal(size=widths[-1])
    plain = interval_bounds(net, domain, c)
    lo, hi = input_gradient_linear(net, plain.states, c, plain.grad_lower, plain.grad_upper)
    grads = net.gradients(domain.sample(4000, rng), c)
    assert np.all(grads >= lo - TOL) and np.all(grads <= hi + TOL)
    # points of one region: fix every neuron to its pattern there, the bound must hold
    point = domain.sample(1, rng)[0]
    states = [
        np.where(z > 0, NeuronState.ACTIVE, NeuronState.INACTIVE).astype(np.int8)
        for z in net.pre_activations(point[None, :])
    ]
    states = [s[0] for s in states]
    fixed = interval_bounds(net, domain, c)  # y ranges of the unfixed pass stay sound
    lo, hi = input_gradient_linear(net, states, c, fixed.grad_lower, fixed.grad_upper)
    grad = net.gradients(point, c)
    assert np.all(grad >= lo - TOL) and np.all(grad <= hi + TOL)


def test_linear_bounds_sound_at_extreme_points_of_the_domain():
    """Vertices of the box and of the ℓ1 ball, where the ranges are attained."""
    rng = np.random.default_rng(3)
    net = random_network(rng, [4, 12, 12, 12, 2])
    box = Box(-np.ones(4), np.ones(4))
    corners = np.array(np.meshgrid(*[[-1.0, 1.0]] * 4)).reshape(4, -1).T
    ball = L1Ball(np.full(4, 0.2), 0.7)
    tips = np.vstack([ball.center + 0.7 * np.eye(4), ball.center - 0.7 * np.eye(4)])
    for domain, points in ((box, corners), (ball, tips)):
        bounds = linear_bounds(net, domain, [1.0, -1.0])
        pre = net.pre_activations(points)
        for z, lo, hi in zip(pre, bounds.pre_lower, bounds.pre_upper, strict=True):
            assert np.all(z >= lo - TOL) and np.all(z <= hi + TOL)


def test_propagate_dispatches_linear():
    net = random_network(np.random.default_rng(4), [3, 6, 6, 1])
    domain = Box(np.zeros(3), np.ones(3))
    bounds = propagate(net, domain, [1.0], method="linear")
    assert bounds.method == "linear"
    direct = linear_bounds(net, domain, [1.0])
    for a, b in zip(bounds.pre_upper, direct.pre_upper, strict=True):
        np.testing.assert_array_equal(a, b)


def test_linear_bounds_on_a_network_without_hidden_layers():
    net = Network((Affine(np.array([[1.0, -2.0]]), np.array([0.5])),))
    bounds = linear_bounds(net, Box([0.0, 0.0], [1.0, 1.0]), [2.0])
    assert bounds.pre_lower == () and bounds.grad_lower == ()
    np.testing.assert_allclose(bounds.input_grad_lower, [2.0, -4.0])
    np.testing.assert_allclose(bounds.input_grad_upper, [2.0, -4.0])


# ---------------------------------------------------------------------------- tightness
def test_linear_bounds_see_a_cancellation_that_intervals_miss():
    """z_2 = relu(x + 2) - relu(x + 2) - 0.5 = -0.5 on [-1, 1]: interval gives [-2.5, 1.5]
    (unstable), the back-substitution gives -0.5 (inactive): one binary fewer."""
    first = Affine(np.array([[1.0], [1.0]]), np.array([2.0, 2.0]))
    second = Affine(np.array([[1.0, -1.0]]), np.array([-0.5]))
    net = Network.from_layers([first, ReLU(), second, ReLU(), Affine(np.ones((1, 1)), [0.0])])
    domain = Box([-1.0], [1.0])
    coarse = interval_bounds(net, domain, [1.0])
    fine = linear_bounds(net, domain, [1.0])
    assert coarse.unstable_count == 1
    assert fine.unstable_count == 0
    assert fine.pre_upper[1][0] == pytest.approx(-0.5)
    assert fine.pre_lower[1][0] == pytest.approx(-0.5)


def test_linear_backward_bounds_see_shared_switches():
    """Two always-active neurons feed one unstable neuron z = 2 x_2:
    ∇f = 2 a (W_2 W_1) = 2 a (0, 2). The interval pass adds the two switches as if independent
    (∇f_1 ∈ [-2, 2]); the back-substitution keeps the shared ``a`` and finds ∇f_1 = 0."""
    first = Affine(np.array([[1.0, 1.0], [-1.0, 1.0]]), np.array([3.0, 3.0]))  # z_0 ∈ [1, 5]
    second = Affine(np.array([[1.0, 1.0]]), np.array([-6.0]))  # z_1 = 2 x_2 ∈ [-2, 2]
    top = Affine(np.array([[2.0]]), np.array([0.0]))
    net = Network.from_layers([first, ReLU(), second, ReLU(), top])
    domain = Box([-1.0, -1.0], [1.0, 1.0])
    fine = linear_bounds(net, domain, [1.0])
    coarse = interval_bounds(net, domain, [1.0])
    assert fine.states[1][0] == NeuronState.UNSTABLE
    close = {"rtol": 0.0, "atol": 1e-8}  # bounds are rounded outward by ~1e-10
    np.testing.assert_allclose(fine.pre_lower[1], [-2.0], **close)
    np.testing.assert_allclose(fine.pre_upper[1], [2.0], **close)
    np.testing.assert_allclose(fine.input_grad_lower, [0.0, 0.0], **close)
    np.testing.assert_allclose(fine.input_grad_upper, [0.0, 4.0], **close)
    np.testing.assert_allclose(coarse.input_grad_lower, [-2.0, 0.0], **close)
    np.testing.assert_allclose(coarse.input_grad_upper, [2.0, 4.0], **close)


@pytest.mark.parametrize("domain_name", sorted(DOMAINS))
def test_linear_bounds_are_tighter_on_average(domain_name):
    fewer, narrower_pre, narrower_grad, total = 0, 0, 0, 0
    for trial in range(12):
        rng = np.random.default_rng(1000 + trial)
        widths = [[8, 16, 16, 16, 2], [10, 20, 30, 20, 2], [2, 20, 40, 20, 2]][trial % 3]
        net = random_network(rng, widths)
        domain = DOMAINS[domain_name](widths[0], rng)
        if domain_name != "box":  # small balls: where bound tightness decides stability
            domain = type(domain)(domain.center, 0.1)
        c = np.array([1.0, -1.0])
        coarse = interval_bounds(net, domain, c)
        fine = linear_bounds(net, domain, c)
        assert fine.unstable_count <= coarse.unstable_count
        fewer += fine.unstable_count < coarse.unstable_count
        (pre_f, grad_f), (pre_c, grad_c) = total_width(fine), total_width(coarse)
        narrower_pre += pre_f < pre_c
        narrower_grad += grad_f < grad_c
        total += 1
    assert fewer >= 1
    assert narrower_pre == total and narrower_grad == total


# ---------------------------------------------------------------------------- exactness
EXACT_CASES = [
    ([3, 8, 8, 2], "box", "linf"),
    ([3, 8, 8, 2], "l1", "l1"),
    ([4, 10, 6, 1], "linf", "linf"),
    ([4, 10, 6, 1], "box", "l1"),
    ([2, 12, 12, 8, 2], "linf", "l1"),
    ([2, 12, 12, 8, 2], "l1", "linf"),
    ([5, 10, 10, 2], "box", "linf"),
]


@pytest.mark.parametrize("case", range(len(EXACT_CASES)))
def test_lipschitz_with_linear_bounds_equals_interval(case):
    widths, domain_name, norm = EXACT_CASES[case]
    rng = np.random.default_rng(300 + case)
    net = random_network(rng, widths)
    domain = DOMAINS[domain_name](widths[0], rng)
    c = [1.0, -1.0] if widths[-1] == 2 else None
    # one formulation for both: model sizes are compared, and a race's winner may differ
    coarse = lipschitz(net, domain, norm=norm, c=c, bounds="interval", formulation="backward")
    fine = lipschitz(net, domain, norm=norm, c=c, bounds="linear", formulation="backward")
    assert coarse.status == fine.status == "optimal"
    assert fine.value == pytest.approx(coarse.value, rel=1e-6)
    assert fine.model_stats["unstable_neurons"] <= coarse.model_stats["unstable_neurons"]
    assert fine.model_stats["binaries"] <= coarse.model_stats["binaries"]


@pytest.mark.parametrize("output_norm", ["l1", "linf", "cross"])
def test_lipschitz_with_linear_bounds_equals_interval_for_output_norms(output_norm):
    net = random_network(np.random.default_rng(77), [2, 8, 8, 3])
    domain = LinfBall([0.2, 0.1], 0.6)
    coarse = lipschitz(net, domain, norm="linf", output_norm=output_norm, bounds="interval")
    fine = lipschitz(net, domain, norm="linf", output_norm=output_norm, bounds="linear")
    assert fine.value == pytest.approx(coarse.value, rel=1e-6)
