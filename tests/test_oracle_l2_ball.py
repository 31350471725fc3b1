"""The brute-force oracle (tests/oracle.py) on Euclidean-ball domains ``("l2", center, radius)``.

Reference values are computed here without the oracle's region search: closed forms (no hidden
layer, a single hand-placed hyperplane), the Jacobian at a point of a ball inside one region,
the 1-D case (the l2 ball is an interval), the subset relations inscribed cube ⊂ ball ⊂ bounding
box, and uniform samples of the ball.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from tests.oracle import (
    brute_force_lipschitz,
    from_lipopt,
    gradient_norms,
    random_network_weights,
    sample_domain,
)

DUAL_ORD = {"linf": 1, "l1": np.inf, "l2": 2}


def _jacobian(weights, x):
    """The Jacobian of the network at one point x, computed here (relu'(0) = 0)."""
    jac, h = np.eye(len(x)), np.asarray(x, dtype=np.float64)
    for w, b in weights[:-1]:
        z = w @ h + b
        jac = (z > 0)[:, None] * (w @ jac)
        h = np.maximum(z, 0.0)
    return weights[-1][0] @ jac


def _norm_of_jacobian(jac, c, input_norm, output_norm):
    """``max_{w in dual ball} ||J^T w||_{alpha*}`` by brute force over the dual ball's vertices,
    or the closed form for the l2 output norm with l2 input (largest singular value)."""
    if c is not None:
        return float(np.linalg.norm(jac.T @ c, DUAL_ORD[input_norm]))
    m = jac.shape[0]
    if output_norm == "l1":  # dual ball: the unit cube
        signs = itertools.product((1.0, -1.0), repeat=m)
        return max(float(np.linalg.norm(jac.T @ np.array(s), DUAL_ORD[input_norm])) for s in signs)
    assert output_norm == "l2" and input_norm == "l2"
    return float(np.linalg.norm(jac, 2))


def _uniform_ball(center, radius, n, rng):
    """Uniform points of the Euclidean ball, by rejection from the bounding box."""
    d = len(center)
    out = np.zeros((0, d))
    while len(out) < n:
        x = rng.uniform(-1.0, 1.0, size=(4 * n, d))
        out = np.vstack([out, x[np.linalg.norm(x, axis=1) <= 1.0]])
    return center + radius * out[:n]


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize(
    ("c", "input_norm", "output_norm"),
    [
        (np.array([1.0, -2.0]), "linf", "abs"),
        (np.array([1.0, -2.0]), "l2", "abs"),
        (np.array([0.5, 3.0]), "l1", "abs"),
        (None, "linf", "l1"),
        (None, "l2", "l1"),
        (None, "l2", "l2"),
    ],
)
def test_no_hidden_layer_is_the_weight_norm(c, input_norm, output_norm):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(2, 3))
    res = brute_force_lipschitz(
        [(w, rng.normal(size=2))], ("l2", rng.normal(size=3), 0.7), c, input_norm, output_norm
    )
    assert res.value == pytest.approx(_norm_of_jacobian(w, c, input_norm, output_norm), rel=1e-12)
    assert res.n_regions == 1


def test_hyperplane_missing_or_touching_the_ball_does_not_count():
    """f = 5 relu(x1 + x2 - s) + relu(x1) - relu(-x1) on the unit disc: the kink of the first
    neuron is at distance s/sqrt(2) from the centre (beyond 1: only gradient (1, 0) in the disc;
    exactly 1: a tangent, not full-dimensional), but cuts the bounding box's corner."""
    for offset, inside in [(1.6, False), (np.sqrt(2.0), False), (np.sqrt(2.0) - 1e-3, True)]:
        weights = [
            (np.array([[1.0, 1.0], [1.0, 0.0], [-1.0, 0.0]]), np.array([-offset, 0.0, 0.0])),
            (np.array([[5.0, 1.0, -1.0]]), np.zeros(1)),
        ]
        res = brute_force_lipschitz(weights, ("l2", [0.0, 0.0], 1.0), np.ones(1), "l2")
        box = brute_force_lipschitz(weights, ("box", [-1.0, -1.0], [1.0, 1.0]), np.ones(1), "l2")
        steep = float(np.hypot(6.0, 5.0))  # gradient (6, 5) where the kink neuron is on
        assert box.value == pytest.approx(steep, rel=1e-12)
        assert res.value == pytest.approx(steep if inside else 1.0, rel=1e-12)
        assert res.value <= box.value
        if inside:  # the cap beyond the chord has inradius (1 - s/sqrt(2)) / 2
            cap = (1.0 - offset / np.sqrt(2.0)) / 2
            assert res.argmax_margin == pytest.approx(cap, rel=1e-6)


def test_one_dimensional_ball_is_the_interval():
    rng = np.random.default_rng(2)
    for widths in ([1, 6, 1], [1, 5, 4, 1], [1, 8, 2]):
        weights = random_network_weights(rng, widths)
        center, radius = float(rng.normal()), 1.5
        c = np.ones(widths[-1])
        ball = brute_force_lipschitz(weights, ("l2", [center], radius), c, "linf")
        box = brute_force_lipschitz(
            weights, ("box", [center - radius], [center + radius]), c, "linf"
        )
        assert ball.value == box.value
        assert ball.n_regions == box.n_regions


def test_ball_inside_one_region_is_the_gradient_there():
    rng = np.random.default_rng(3)
    weights = random_network_weights(rng, [2, 6, 5, 1])
    x0 = np.array([0.3, -0.2])
    h, clearance = x0, np.inf
    for w, b in weights[:-1]:
        z = w @ h + b
        clearance = min(clearance, float(np.min(np.abs(z))))
        h = np.maximum(z, 0.0)
    # with the signs fixed, every pre-activation moves by at most r * prod ||W_i||_2
    lipschitz = np.prod([np.linalg.norm(w, 2) for w, _ in weights[:-1]])
    radius = 0.5 * clearance / lipschitz
    assert radius > 1e-6
    c = np.array([1.0])
    jac = _jacobian(weights, x0)
    for input_norm in ("l2", "linf"):
        res = brute_force_lipschitz(weights, ("l2", x0, radius), c, input_norm)
        assert res.n_regions == 1
        assert res.value == pytest.approx(_norm_of_jacobian(jac, c, input_norm, "abs"), rel=1e-12)
        assert res.argmax_margin == pytest.approx(radius, rel=1e-6)  # the whole ball


# --------------------------------------------------------------------------- random networks


CASES = [
    # (seed, widths, input norm, c or None, output norm)
    (10, [2, 5, 1], "l2", [1.0], "abs"),
    (11, [2, 8, 1], "linf", [1.0], "abs"),
    (12, [2, 4, 6, 1], "l2", [1.0], "abs"),
    (13, [2, 8, 3, 1], "linf", [1.0], "abs"),
    (14, [3, 6, 1], "l2", [1.0], "abs"),
    (15, [3, 5, 4, 1], "linf", [1.0], "abs"),
    (16, [2, 6, 2], "l2", None, "l2"),
    (17, [2, 7, 2], "linf", None, "l1"),
    (18, [3, 4, 5, 2], "l2", None, "l1"),
    (19, [3, 8, 2], "l2", None, "l2"),
]


@pytest.mark.parametrize(("seed", "widths", "input_norm", "c", "output_norm"), CASES)
def test_random_network_against_samples_and_subsets(seed, widths, input_norm, c, output_norm):
    rng = np.random.default_rng(seed)
    weights = random_network_weights(rng, widths)
    d = widths[0]
    center, radius = rng.normal(size=d), float(rng.uniform(0.5, 1.5))
    c = None if c is None else np.array(c)
    res = brute_force_lipschitz(
        weights, ("l2", center, radius), c, input_norm, output_norm, collect_regions=True
    )
    scale = max(1.0, res.value)

    # a lower bound: the largest gradient norm at uniform samples of the ball
    x = _uniform_ball(center, radius, 20_000, rng)
    grads = gradient_norms(weights, x, c, input_norm, output_norm)
    assert res.value >= grads.max() - 1e-12 * scale

    # attained: the returned point lies in the ball, and the gradient norm there is the value
    point = res.argmax_point
    assert np.linalg.norm(point - center) + res.argmax_margin <= radius + 1e-9
    jac = _jacobian(weights, point)
    assert _norm_of_jacobian(jac, c, input_norm, output_norm) == pytest.approx(
        res.value, abs=1e-9 * scale
    )
    if c is not None or output_norm != "l2":  # the reported dual vector attains it
        w = c if c is not None else res.argmax_dual
        norm = np.linalg.norm(jac.T @ w, DUAL_ORD[input_norm])
        assert norm == pytest.approx(res.value, abs=1e-9 * scale)

    # the margin is a certificate: the gradient norm is the value within it, so in 2-D a wide
    # enough argmax region (area fraction >= 1/400: ~50 samples expected) is found by sampling
    near = np.linalg.norm(x - point, axis=1) < res.argmax_margin
    np.testing.assert_allclose(grads[near], res.value, rtol=1e-9)
    if d == 2 and res.argmax_margin >= 0.05 * radius:
        assert grads.max() == pytest.approx(res.value, rel=1e-9)

    # every collected region carries a certificate point inside the ball with its value
    assert res.regions is not None and len(res.regions) == res.n_regions
    for region in res.regions:
        assert np.linalg.norm(region.point - center) + region.margin <= radius + 1e-9
        got = _norm_of_jacobian(_jacobian(weights, region.point), c, input_norm, output_norm)
        assert got == pytest.approx(region.value, abs=1e-9 * scale)

    # inscribed cube ⊂ ball ⊂ bounding box
    box = brute_force_lipschitz(weights, ("linf", center, radius), c, input_norm, output_norm)
    cube = brute_force_lipschitz(
        weights, ("linf", center, radius / np.sqrt(d)), c, input_norm, output_norm
    )
    assert cube.value - 1e-12 * scale <= res.value <= box.value + 1e-12 * scale
    assert res.n_regions <= box.n_regions


# --------------------------------------------------------------------------- helpers


def test_sample_domain_l2_is_inside_and_uniform():
    rng = np.random.default_rng(30)
    center = np.array([1.0, -1.0, 0.5])
    pts = sample_domain(("l2", center, 2.0), 3, 200_000, rng)
    r = np.linalg.norm(pts - center, axis=1)
    assert np.all(r <= 2.0)
    assert np.mean(r <= 1.0) == pytest.approx(1 / 8, abs=0.004)  # volume ∝ r^3
    assert np.mean(pts[:, 0] > 1.0) == pytest.approx(0.5, abs=0.004)
    assert np.mean(pts[:, 2] - 0.5 > 1.0) == pytest.approx(5 / 32, abs=0.004)  # cap of height 1


def test_l2_domain_validation_and_from_lipopt():
    weights = [(np.array([[1.0, -2.0]]), np.zeros(1))]
    with pytest.raises(ValueError, match="radius"):
        brute_force_lipschitz(weights, ("l2", [0.0, 0.0], 0.0), np.ones(1), "l2")
    res = brute_force_lipschitz(weights, ("l2", 0.0, 1.0), np.ones(1), "l2")  # broadcast center
    assert res.value == pytest.approx(np.sqrt(5.0), rel=1e-12)

    class L2Ball:
        center = np.array([0.5, 0.5])
        radius = 0.25

    layers = [SimpleNamespace(weight=w, bias=b) for w, b in weights]
    got_w, got_d = from_lipopt(layers, L2Ball())
    assert got_d[0] == "l2" and got_d[2] == 0.25
    np.testing.assert_array_equal(got_d[1], [0.5, 0.5])
    np.testing.assert_array_equal(got_w[0][0], weights[0][0])
