"""The brute-force oracle (tests/oracle.py) on networks with per-neuron two-piece activations,
``h = alpha z + (1 - alpha) relu(z)`` (issue 46: identity, ReLU, leaky, ``|z|``).

Reference values are computed here without the oracle's region search: closed forms (an
all-identity network is one affine map; ``|w.x + b|``; a MaxMin layer, ``max(a, b) =
b + relu(a - b)`` with ``b`` an identity neuron), exact 1-D breakpoints, and the same function
written with ReLUs only (``h = relu(z) - alpha relu(-z)``, built here by hand), whose constant
is the same number because it is the same function.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.oracle import (
    SlopedWeights,
    brute_force_lipschitz,
    forward,
    from_lipopt,
    gradient_norms,
    jacobians,
    random_network_weights,
    sampled_max_gradient_norm,
)

DUAL_ORD = {"linf": 1, "l1": np.inf, "l2": 2}
KINDS = (0.0, 1.0, 0.1, 0.25, -1.0)
DOMAINS = {
    "box": ("box", -np.ones(2), np.ones(2)),
    "l1": ("l1", np.array([0.1, -0.2]), 1.7),
    "l2": ("l2", np.array([-0.1, 0.1]), 1.2),
}


# --------------------------------------------------------------------------- independent helpers


def act(alpha: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.where(z > 0, z, alpha * z)


def plain_forward(weights, slopes, x: np.ndarray) -> np.ndarray:
    h = np.asarray(x, dtype=np.float64)
    for alpha, (w, b) in zip(slopes, weights[:-1], strict=True):
        h = act(alpha, h @ w.T + b)
    w, b = weights[-1]
    return h @ w.T + b


def lowered(weights, slopes):
    """The same function with ReLUs only: a neuron with ``alpha != 0`` becomes two,
    ``relu(z)`` and ``relu(-z)``, read out with weights ``1`` and ``-alpha``."""
    out = [(np.array(w, dtype=np.float64), np.array(b, dtype=np.float64)) for w, b in weights]
    for k, alpha in enumerate(slopes):
        w, b = out[k]
        extra = np.flatnonzero(alpha != 0)
        out[k] = (np.vstack([w, -w[extra]]), np.concatenate([b, -b[extra]]))
        w_next, b_next = out[k + 1]
        out[k + 1] = (np.hstack([w_next, -alpha[extra] * w_next[:, extra]]), b_next)
    return out


def hidden_outputs(weights, slopes, x: np.ndarray, layers: int) -> np.ndarray:
    """The first ``layers`` hidden layers' output at a batch ``x`` (n, d)."""
    h = np.asarray(x, dtype=np.float64)
    for alpha, (w, b) in zip(slopes[:layers], weights[:layers], strict=True):
        h = act(alpha, h @ w.T + b)
    return h


def exact_1d(weights, slopes, lo: float, hi: float) -> float:
    """max |f'| over [lo, hi] for a scalar network of one input: f is linear between its
    breakpoints, found layer by layer (each pre-activation is linear between the breakpoints
    found so far, so its zeros are where it changes sign between two of them)."""
    points = np.array([lo, hi])
    for k, (alpha, (w, b)) in enumerate(zip(slopes, weights[:-1], strict=True)):
        z = hidden_outputs(weights, slopes, points[:, None], k) @ w.T + b
        roots = []
        for i in range(len(points) - 1):
            left, right = z[i], z[i + 1]
            cross = (left * right < 0) & (alpha != 1)
            t = left[cross] / (left[cross] - right[cross])
            roots.extend(points[i] + t * (points[i + 1] - points[i]))
        points = np.unique(np.concatenate([points, roots]))
    f = plain_forward(weights, slopes, points[:, None])[:, 0]
    widths = np.diff(points)
    keep = widths > 1e-12 * (hi - lo)
    return float(np.max(np.abs(np.diff(f)[keep] / widths[keep])))


def affine_value(jac: np.ndarray, c, input_norm: str, output_norm: str) -> float:
    """``max_{||w||_* <= 1} ||J^T w||_{alpha*}`` for one Jacobian, written out per case."""
    ord_ = DUAL_ORD[input_norm]
    if c is not None:
        return float(np.linalg.norm(np.asarray(c) @ jac, ord_))
    if output_norm == "linf":  # dual ball: l1, vertices ±e_i
        return float(max(np.linalg.norm(row, ord_) for row in jac))
    if output_norm == "l2" and input_norm == "l2":
        return float(np.linalg.svd(jac, compute_uv=False)[0])
    raise AssertionError(output_norm)


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("input_norm", ["linf", "l1", "l2"])
@pytest.mark.parametrize("domain", ["box", "l1", "l2"])
def test_all_identity_network_is_its_affine_map(input_norm: str, domain: str) -> None:
    rng = np.random.default_rng(11)
    weights = random_network_weights(rng, [2, 4, 3, 2])
    slopes = [np.ones(4), np.ones(3)]
    jac = weights[2][0] @ weights[1][0] @ weights[0][0]
    cases = [(np.array([1.0, -2.0]), "abs"), (None, "linf")]
    if input_norm == "l2":
        cases.append((None, "l2"))
    for c, output_norm in cases:
        result = brute_force_lipschitz(
            weights, DOMAINS[domain], c, input_norm, output_norm, slopes=slopes
        )
        assert result.n_regions == 1
        truth = affine_value(jac, c, input_norm, output_norm)
        assert result.value == pytest.approx(truth, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("input_norm", ["linf", "l1", "l2"])
def test_abs_neuron_is_the_norm_of_its_row(input_norm: str) -> None:
    w, b = np.array([0.7, -1.3, 0.4]), 0.2
    weights = [(w[None, :], np.array([b])), (np.array([[1.0]]), np.zeros(1))]
    box = ("box", -np.ones(3), np.ones(3))  # contains the kink w.x + b = 0
    result = brute_force_lipschitz(weights, box, np.ones(1), input_norm, slopes=[[-1.0]])
    assert result.n_regions == 2
    assert result.value == pytest.approx(np.linalg.norm(w, DUAL_ORD[input_norm]), rel=1e-12)
    # leaky: kink inside, the steeper side wins; kink outside below: only the slope 0.1 side
    leaky = brute_force_lipschitz(weights, box, np.ones(1), input_norm, slopes=[[0.1]])
    assert leaky.value == pytest.approx(np.linalg.norm(w, DUAL_ORD[input_norm]), rel=1e-12)
    shifted = [(w[None, :], np.array([-10.0])), weights[1]]  # w.x - 10 < 0 on the unit box
    only = brute_force_lipschitz(shifted, box, np.ones(1), input_norm, slopes=[[0.1]])
    assert only.n_regions == 1
    assert only.value == pytest.approx(0.1 * np.linalg.norm(w, DUAL_ORD[input_norm]), rel=1e-12)


def test_one_input_networks_match_their_breakpoints() -> None:
    rng = np.random.default_rng(5)
    for trial in range(20):
        widths = [1, 4, 3, 1] if trial % 2 else [1, 5, 1]
        weights = random_network_weights(rng, widths, bias_std=1.0)
        if trial % 3 == 2:
            slopes = [rng.uniform(-1.5, 1.5, size=n) for n in widths[1:-1]]
        else:
            slopes = [rng.choice(KINDS, size=n) for n in widths[1:-1]]
        truth = exact_1d(weights, slopes, -2.0, 1.5)
        for input_norm in ("linf", "l1", "l2"):
            result = brute_force_lipschitz(
                weights, ("box", [-2.0], [1.5]), np.ones(1), input_norm, slopes=slopes
            )
            assert result.value == pytest.approx(truth, rel=1e-9, abs=1e-12), (trial, slopes)


@pytest.mark.parametrize("input_norm", ["linf", "l1", "l2"])
def test_maxmin_layer(input_norm: str) -> None:
    """Hidden ``[a - b (ReLU), b (identity)]``: ``max(a, b) = b + relu(a - b)`` and
    ``min(a, b) = a - relu(a - b)`` with ``a = u.x``, ``b = v.x``; the kink ``(u - v).x = 0``
    crosses the box, so both orders occur: ``max(||u||*, ||v||*)`` for the max, the same per
    output for (max, min) under the linf output norm, ``max ||u ± v||*`` under l1."""
    u, v = np.array([1.5, -0.3]), np.array([0.2, 0.9])
    hidden = (np.vstack([u - v, v, u]), np.zeros(3))
    slopes = [np.array([0.0, 1.0, 1.0])]
    readout = (np.array([[1.0, 1.0, 0.0], [-1.0, 0.0, 1.0]]), np.zeros(2))
    box = DOMAINS["box"]
    ord_ = DUAL_ORD[input_norm]
    nu, nv = np.linalg.norm(u, ord_), np.linalg.norm(v, ord_)
    first = brute_force_lipschitz(
        [hidden, readout], box, np.array([1.0, 0.0]), input_norm, slopes=slopes
    )
    assert first.n_regions == 2  # identity neurons cut nothing
    assert first.value == pytest.approx(max(nu, nv), rel=1e-12)
    both = brute_force_lipschitz([hidden, readout], box, None, input_norm, "linf", slopes=slopes)
    assert both.value == pytest.approx(max(nu, nv), rel=1e-12)
    summed = brute_force_lipschitz([hidden, readout], box, None, input_norm, "l1", slopes=slopes)
    truth = max(np.linalg.norm(u + v, ord_), np.linalg.norm(u - v, ord_))
    assert summed.value == pytest.approx(truth, rel=1e-12)
    # the kink outside the domain: one order only
    far = ("box", np.array([5.0, -6.0]), np.array([6.0, -5.0]))  # (u - v).x > 0 there
    one = brute_force_lipschitz(
        [hidden, readout], far, np.array([0.0, 1.0]), input_norm, slopes=slopes
    )
    assert one.n_regions == 1
    assert one.value == pytest.approx(nv, rel=1e-12)  # min(a, b) = b there


# --------------------------------------------------------------------------- the lowered network


COMBOS = [(norm, dom) for norm in ("linf", "l1", "l2") for dom in ("box", "l1", "l2")]


def _random_sloped(rng: np.random.Generator, trial: int):
    widths = [2, 3, 3, 1] if trial % 2 else [2, 4, 1]
    if trial % 4 == 3:
        weights = random_network_weights(rng, widths, slope_range=(-1.5, 1.5))
    else:
        weights = random_network_weights(rng, widths, slopes=KINDS)
    return weights, weights.slopes


def _agrees_with_lowered(weights, slopes, input_norm: str, domain: str) -> None:
    spec = DOMAINS[domain]
    value = brute_force_lipschitz(weights, spec, np.ones(1), input_norm).value
    truth = brute_force_lipschitz(lowered(weights, slopes), spec, np.ones(1), input_norm).value
    assert value == pytest.approx(truth, rel=1e-9, abs=1e-12), (slopes, input_norm, domain)


def test_lowered_network_is_the_same_function() -> None:
    rng = np.random.default_rng(0)
    for trial in range(10):
        weights, slopes = _random_sloped(rng, trial)
        x = rng.uniform(-2, 2, size=(50, 2))
        lower = lowered(weights, slopes)
        relu = [np.zeros(w.shape[0]) for w, _ in lower[:-1]]
        np.testing.assert_allclose(
            forward(weights, x), plain_forward(lower, relu, x), rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(
            forward(weights, x), plain_forward(weights, slopes, x), rtol=1e-12, atol=1e-12
        )


def test_agrees_with_lowered_relu_network() -> None:
    """30 random small networks, each with one (input norm, domain) pair in turn."""
    rng = np.random.default_rng(1)
    for trial in range(30):
        weights, slopes = _random_sloped(rng, trial)
        _agrees_with_lowered(weights, slopes, *COMBOS[trial % len(COMBOS)])


@pytest.mark.slow
@pytest.mark.parametrize("input_norm", ["linf", "l1", "l2"])
@pytest.mark.parametrize("domain", ["box", "l1", "l2"])
def test_agrees_with_lowered_relu_network_sweep(input_norm: str, domain: str) -> None:
    rng = np.random.default_rng(2)
    for trial in range(30):
        weights, slopes = _random_sloped(rng, trial)
        _agrees_with_lowered(weights, slopes, input_norm, domain)


# --------------------------------------------------------------------------- gradients, plumbing


def test_gradients_use_the_slopes() -> None:
    """The Jacobian at sampled points is ``W_2 diag(D) W_1`` with ``D`` read off z here, and the
    sampled maximum is a lower bound of the exact value."""
    rng = np.random.default_rng(3)
    weights = random_network_weights(rng, [3, 5, 2], slopes=KINDS)
    (w1, b1), (w2, _) = weights
    alpha = weights.slopes[0]
    x = rng.uniform(-1, 1, size=(40, 3))
    d = np.where(x @ w1.T + b1 > 0, 1.0, alpha)
    expected = np.einsum("ij,nj,jk->nik", w2, d, w1)
    np.testing.assert_allclose(jacobians(weights, x), expected, rtol=1e-12, atol=1e-12)
    c = np.array([1.0, -0.5])
    norms = gradient_norms(weights, x, c, "linf")
    np.testing.assert_allclose(norms, np.abs(np.einsum("i,nik->nk", c, expected)).sum(axis=1))
    box = ("box", -np.ones(3), np.ones(3))
    exact = brute_force_lipschitz(weights, box, c, "linf").value
    sampled = sampled_max_gradient_norm(weights, box, c, "linf", n=2000)
    assert sampled <= exact + 1e-12
    assert sampled >= 0.5 * exact


def test_slopes_travel_with_the_weights_and_are_checked() -> None:
    rng = np.random.default_rng(4)
    plain = random_network_weights(rng, [2, 3, 1])
    again = random_network_weights(np.random.default_rng(4), [2, 3, 1], slopes=KINDS)
    assert isinstance(again, SlopedWeights)
    for (w, b), (w2, b2) in zip(plain, again, strict=True):  # the weights drawn as without
        assert np.array_equal(w, w2) and np.array_equal(b, b2)
    box = ("box", -np.ones(2), np.ones(2))
    carried = brute_force_lipschitz(again, box, np.ones(1), "linf").value
    given = brute_force_lipschitz(plain, box, np.ones(1), "linf", slopes=again.slopes).value
    assert carried == given
    with pytest.raises(ValueError, match="differs"):
        brute_force_lipschitz(again, box, np.ones(1), "linf", slopes=[np.zeros(3)])
    with pytest.raises(ValueError, match="sizes"):
        brute_force_lipschitz(plain, box, np.ones(1), "linf", slopes=[np.zeros(2)])


def _fake_network(weights, slopes):
    layers = [SimpleNamespace(weight=w, bias=b) for w, b in weights]
    return SimpleNamespace(affine_layers=layers, slopes=tuple(slopes))


def test_from_lipopt_reads_the_slopes() -> None:
    rng = np.random.default_rng(6)
    weights = random_network_weights(rng, [2, 4, 1], slopes=(0.1, -1.0))
    box = SimpleNamespace(lower=-np.ones(2), upper=np.ones(2))
    args = from_lipopt(_fake_network(weights, weights.slopes), box)
    assert args.slopes is not None
    assert all(np.array_equal(a, b) for a, b in zip(args.slopes, weights.slopes, strict=True))
    truth = brute_force_lipschitz(weights, ("box", -np.ones(2), np.ones(2)), None, "l1").value
    assert brute_force_lipschitz(*args, None, "l1").value == truth
    relu = from_lipopt(_fake_network(weights, [np.zeros(4)]), box)
    assert relu.slopes is None and not isinstance(relu.weights, SlopedWeights)


def test_from_lipopt_reads_a_lipopt_network() -> None:
    from lipopt import Box
    from lipopt.affine import Affine
    from lipopt.network import Network

    rng = np.random.default_rng(7)
    weights = random_network_weights(rng, [2, 3, 3, 1], slopes=KINDS)
    net = Network.from_affines([Affine(w, b) for w, b in weights], slopes=weights.slopes)
    args = from_lipopt(net, Box(-np.ones(2), np.ones(2)))
    assert args.slopes is not None
    x = rng.uniform(-1, 1, size=(30, 2))
    np.testing.assert_allclose(forward(args.weights, x), net.forward(x), rtol=1e-12, atol=1e-12)
