"""Two-piece activation bounds against closed forms and theorems: the relaxation lines enclose
``h`` and the switch and touch ``h`` where they should; an all-identity network's linear bounds
are its affine range; ReLU networks give the same numbers through ``Activation(0)`` as through
``ReLU()``, and nearly so at ``α = ±1e-12``; native interval bounds lie inside the lowered
network's; the OBBT hull is exact where CROWN is not; the slope search's graph is the numpy
bound."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.activation import Activation
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import interval_bounds
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.bounds.linear import linear_bounds
from lipopt.bounds.lp import lp_bounds
from lipopt.bounds.relaxation import activation_relaxation, switch_relaxation
from lipopt.domain import Box, L1Ball, L2Ball, LinfBall
from lipopt.network import Affine, Network, ReLU
from tests import oracle
from tests.bounds.activation_cases import (
    DOMAINS,
    act,
    draw_slopes,
    fields,
    make_domain,
    sampled_case,
)

DUAL = {"linf": 1, "l1": np.inf, "l2": 2}


# ---------------------------------------------------------------------------- relaxations
def test_activation_relaxation_lines_enclose_h_and_touch_its_ends():
    rng = np.random.default_rng(0)
    n = 400
    lower = rng.uniform(-3, 1, size=n)
    upper = lower + rng.uniform(0.01, 4, size=n)
    alpha = draw_slopes(rng, n)
    up_slope, up_shift, low_slope, low_shift = activation_relaxation(lower, upper, alpha)
    for t in np.linspace(0.0, 1.0, 41):
        z = lower + t * (upper - lower)
        h = act(alpha, z)
        assert np.all(h <= up_slope * z + up_shift + 1e-12)
        assert np.all(h >= low_slope * z + low_shift - 1e-12)
    # unstable with α <= 1: the upper line is the chord (touches h at l and u); α > 1: the lower
    kinked = (lower < 0) & (upper > 0) & (alpha != 1.0)
    chord = np.where(alpha <= 1.0, 1, 0)
    for z in (lower, upper):
        line = np.where(chord, up_slope * z + up_shift, low_slope * z + low_shift)
        np.testing.assert_allclose(line[kinked], act(alpha, z)[kinked], atol=1e-12)
    # the other line is s·z through the origin, s between α and 1
    through_origin = np.where(alpha <= 1.0, low_shift, up_shift)
    np.testing.assert_array_equal(through_origin[kinked], 0.0)
    other = np.where(alpha <= 1.0, low_slope, up_slope)[kinked]
    assert np.all((other == 1.0) | (other == alpha[kinked]))


def test_switch_relaxation_lines_enclose_both_slopes():
    rng = np.random.default_rng(1)
    n = 400
    lower = rng.uniform(-3, 1, size=n)
    upper = lower + rng.choice([0.0, 0.5, 3.0], size=n)
    state = rng.integers(0, 3, size=n).astype(np.int8)
    alpha = draw_slopes(rng, n)
    up_slope, up_shift, low_slope, low_shift = switch_relaxation(state, lower, upper, alpha)
    for t in np.linspace(0.0, 1.0, 41):
        y = lower + t * (upper - lower)
        for on in (0.0, 1.0):
            gate = np.where(state == 2, on, state == 1)
            s = (alpha + (1.0 - alpha) * gate) * y
            assert np.all(s <= up_slope * y + up_shift + 1e-12)
            assert np.all(s >= low_slope * y + low_shift - 1e-12)


@pytest.mark.parametrize("kind", DOMAINS[:4])  # the closed forms: boxes and balls
def test_identity_network_linear_bounds_are_its_affine_range(kind):
    """All α = 1: f is affine, z_k = M_k x + m_k; the linear bounds are M_k's exact range over
    the domain and the gradient bounds the one gradient."""
    widths = [3, 5, 4, 4, 2]
    rng = np.random.default_rng(5)
    weights = oracle.random_network_weights(rng, widths)
    slopes = [np.ones(n) for n in widths[1:-1]]
    network = Network.from_affines([Affine(w, b) for w, b in weights], slopes)
    domain = make_domain(kind, rng, 3)
    c = rng.normal(size=2)
    bounds = linear_bounds(network, domain, c)
    matrix, shift = np.eye(3), np.zeros(3)
    for k, (w, b) in enumerate(weights[:-1]):
        matrix, shift = w @ matrix, w @ shift + b
        lo, hi = closed_range(matrix, shift, domain)
        scale = 1e-8 * (1.0 + np.abs(lo) + np.abs(hi))
        assert np.all(np.abs(bounds.pre_lower[k] - lo) <= scale)
        assert np.all(np.abs(bounds.pre_upper[k] - hi) <= scale)
    gradient = (weights[-1][0] @ matrix).T @ c
    assert bounds.unstable_count == 0
    assert np.all(np.abs(bounds.input_grad_lower - gradient) <= 1e-8 * (1 + np.abs(gradient)))
    assert np.all(np.abs(bounds.input_grad_upper - gradient) <= 1e-8 * (1 + np.abs(gradient)))
    value = jacobian_norm_bound(network, domain, c, "linf").value
    assert abs(value - np.abs(gradient).sum()) <= 1e-8 * (1.0 + value)


def closed_range(matrix: np.ndarray, shift: np.ndarray, domain) -> tuple[np.ndarray, np.ndarray]:
    """The exact range of ``M x + m`` over a box or a ball."""
    if isinstance(domain, (L1Ball, L2Ball, LinfBall)):
        dual = {L1Ball: np.inf, L2Ball: 2, LinfBall: 1}[type(domain)]
        mid = matrix @ domain.center + shift
        spread = domain.radius * np.linalg.norm(matrix, ord=dual, axis=1)
        return mid - spread, mid + spread
    centre, radius = (domain.upper + domain.lower) / 2, (domain.upper - domain.lower) / 2
    mid = matrix @ centre + shift
    return mid - np.abs(matrix) @ radius, mid + np.abs(matrix) @ radius


@pytest.mark.parametrize("seed", range(3))
def test_relu_bounds_agree_through_activation_zero_and_relu_layers(seed):
    rng = np.random.default_rng(seed)
    widths = [3, 6, 5, 4, 2]
    affines = [Affine(w, b) for w, b in oracle.random_network_weights(rng, widths)]
    relu = Network.from_affines(affines)
    zero = Network(
        (affines[0], Activation(np.zeros(6)), affines[1], Activation(np.zeros(5)), affines[2],
         Activation(np.zeros(4)), affines[3])
    )  # fmt: skip
    assert isinstance(relu.layers[1], ReLU) and isinstance(zero.layers[1], Activation)
    domain, c = LinfBall(rng.normal(size=3), 0.5), rng.normal(size=2)
    for method in (interval_bounds, linear_bounds, lp_bounds):
        for ours, theirs in zip(
            fields(method(zero, domain, c)), fields(method(relu, domain, c)), strict=True
        ):
            np.testing.assert_array_equal(ours, theirs)
    z = [row[0] for row in relu.pre_activations(domain.center[None, :])]
    splits = {(0, 1): bool(z[0][1] > 0), (1, 2): bool(z[1][2] > 0)}  # the centre's signs
    for ours, theirs in zip(
        fields(split_bounds(zero, domain, c, splits)),
        fields(split_bounds(relu, domain, c, splits)),
        strict=True,
    ):
        np.testing.assert_array_equal(ours, theirs)
    ours_j, theirs_j = (jacobian_norm_bound(n, domain, c, "l1") for n in (zero, relu))
    assert (ours_j.value, ours_j.chord, ours_j.fastlip) == (
        theirs_j.value,
        theirs_j.chord,
        theirs_j.fastlip,
    )


@pytest.mark.parametrize("seed", range(3))
def test_slopes_near_zero_give_bounds_near_the_relu_bounds(seed):
    """The general code at ``α = ±1e-12`` (not the ReLU fast path) lands within 1e-6 of the
    ReLU code's bounds: the composed lines reduce to the ReLU lines as ``α → 0``."""
    rng = np.random.default_rng(seed)
    widths = [3, 6, 5, 4, 2]
    affines = [Affine(w, b) for w, b in oracle.random_network_weights(rng, widths)]
    tiny = [rng.choice([-1e-12, 1e-12], size=n) for n in widths[1:-1]]
    relu, leaky = Network.from_affines(affines), Network.from_affines(affines, tiny)
    assert not leaky.is_relu
    domain, c = L1Ball(rng.normal(size=3), 0.8), rng.normal(size=2)
    for method in (interval_bounds, linear_bounds, lp_bounds):
        for ours, theirs in zip(
            fields(method(leaky, domain, c)), fields(method(relu, domain, c)), strict=True
        ):
            np.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=1e-6)
    ours_j = jacobian_norm_bound(leaky, domain, c, "linf").value
    assert ours_j == pytest.approx(jacobian_norm_bound(relu, domain, c, "linf").value, rel=1e-6)


@pytest.mark.parametrize("norm", sorted(DUAL))
@pytest.mark.parametrize("case", range(3))
def test_slope_search_graph_matches_the_numpy_bound(case, norm):
    """The torch graph the search descends is the numpy back-substitution (before its outward
    rounding) at the chord parameters: the search optimises the bound it claims to."""
    torch = pytest.importorskip("torch")
    from lipopt.bounds import jacobian_slopes as js
    from lipopt.bounds.jacobian import back_substitute, chord_thetas, slope_problem
    from lipopt.norms import InputNorm

    network, _, _, domain, seed, _, _, _ = sampled_case(case, DOMAINS[case % 4], "c")
    problem = slope_problem(network, linear_bounds(network, domain, seed), seed, InputNorm(norm))
    assert problem.slopes is not None
    thetas = chord_thetas(problem)
    params = [torch.tensor(np.array(a)) for pair in thetas[0] for a in pair]
    if thetas[1] is not None:
        params.append(torch.tensor(np.array(thetas[1])))
    products = [js._transposed_product(m, torch) for m in problem.matrices]
    ops = (products, js._torch_seed(seed, torch))
    graph = js._bound(problem, params, ops, torch).numpy()
    numpy = back_substitute(problem, thetas)
    assert np.all(numpy >= graph) and np.allclose(numpy, graph, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("kind", DOMAINS)
@pytest.mark.parametrize("case", range(4))
def test_native_interval_bounds_within_the_lowered_networks(case, kind):
    """A theorem for interval bounds (not for CROWN, whose heuristic lines differ): the lowered
    network (``h = relu(z) - α relu(-z)``, two ReLUs per non-ReLU neuron) sees ``h`` through an
    interval sum that contains ``h``'s exact range, and its switches through two independent
    ones, so by monotonicity of interval arithmetic the native bounds on each ``z`` and on
    ``∇f`` lie inside the lowered network's (up to the outward rounding)."""
    network, _, slopes, domain, seed, _, _, _ = sampled_case(case, kind, "c")
    native = interval_bounds(network, domain, seed)
    lowered = interval_bounds(network.lowered(), domain, seed)
    for k, alpha in enumerate(slopes):
        keep = _plus_rows(alpha)
        slack = 1e-9 * (1.0 + np.abs(native.pre_lower[k]) + np.abs(native.pre_upper[k]))
        assert np.all(native.pre_lower[k] >= lowered.pre_lower[k][keep] - slack)
        assert np.all(native.pre_upper[k] <= lowered.pre_upper[k][keep] + slack)
    slack = 1e-9 * (1.0 + np.abs(native.input_grad_lower) + np.abs(native.input_grad_upper))
    assert np.all(native.input_grad_lower >= lowered.input_grad_lower - slack)
    assert np.all(native.input_grad_upper <= lowered.input_grad_upper + slack)


def _plus_rows(alpha: np.ndarray) -> np.ndarray:
    """Index of the lowered neuron ``relu(z_i)`` of each native neuron ``i``: the rows ``z`` of
    every neuron come first, in order, then ``-z`` of each non-ReLU one
    (:func:`lipopt.activation.lowered`)."""
    return np.arange(alpha.size)


@pytest.mark.parametrize("ends", [(-2.0, 1.0), (-1.0, 2.0)])
@pytest.mark.parametrize("alpha", [0.25, -1.0, 0.0, 1.3, 2.0])
def test_lp_hull_is_exact_where_crown_is_not(alpha, ends):
    """``h(x) - x`` and ``h(x) - α x`` on ``x ∈ [l, u]`` (an identity neuron and a two-piece
    one on the same input): their ranges are the hulls of ``{0, (α - 1) l}`` and
    ``{0, (1 - α) u}``. CROWN's line through the origin (slope α if ``u < -l``, else 1) misses
    the side at 0 of one of them; the hull LP (``h >= z, h >= αz`` or reversed, and the chord)
    gets both sides of both (each of its rows is needed for one of the sides)."""
    pytest.importorskip("highspy")
    network = Network(
        (
            Affine(np.array([[1.0], [1.0]]), np.zeros(2)),
            Activation(np.array([1.0, alpha])),
            Affine(np.array([[-1.0, 1.0], [-alpha, 1.0]]), np.zeros(2)),
            ReLU(),
            Affine(np.array([[1.0, 1.0]]), np.zeros(1)),
        )
    )
    lower, upper = ends
    domain = Box([lower], [upper])
    lp, linear = lp_bounds(network, domain, [1.0]), linear_bounds(network, domain, [1.0])
    fars = ((alpha - 1.0) * lower, (1.0 - alpha) * upper)
    for row, far in enumerate(fars):
        assert lp.pre_lower[1][row] == pytest.approx(min(0.0, far), abs=1e-7)
        assert lp.pre_upper[1][row] == pytest.approx(max(0.0, far), abs=1e-7)
    row = 0 if upper < -lower else 1  # the one CROWN's line misses
    missed = (
        linear.pre_upper[1][row] - max(0.0, fars[row])
        if alpha > 1.0  # concave: the line above; convex: the line below
        else min(0.0, fars[row]) - linear.pre_lower[1][row]
    )
    assert missed > 0.1 or (alpha == 0.0 and row == 1)  # h - 0·x = relu(x): interval is exact
