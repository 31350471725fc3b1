"""split_bounds against sampled points: every pre-activation, backward variable and gradient of a
point of the sub-domain (the split signs hold there) lies in the bounds; an empty sub-domain
gives None (or bounds no sample contradicts); without splits, never looser than linear_bounds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NeuronState
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.bounds.linear import backward_linear, linear_bounds
from lipopt.domain import Box, L1Ball, L2Ball, LinfBall
from lipopt.network import Affine, Network
from tests import oracle
from tests.helpers import network_from_weights

SLACK = 1e-9


def _domain(kind: int, rng: np.random.Generator, d: int):
    return [
        Box(-np.ones(d), np.ones(d)),
        LinfBall(rng.normal(size=d), 0.5),
        L1Ball(rng.normal(size=d), 1.0),
        L2Ball(rng.normal(size=d), 0.7),
    ][kind % 4]


def _trace(weights, points: np.ndarray, c: np.ndarray):
    """Independently of lipopt: pre-activations per hidden layer, the backward variables
    ``y_k = ∂(c^T f)/∂h_k`` per hidden layer, and the input gradient, at each point."""
    pre, h = [], points
    for w, b in weights[:-1]:
        z = h @ w.T + b
        pre.append(z)
        h = np.maximum(z, 0.0)
    y = np.broadcast_to(weights[-1][0].T @ c, (len(points), weights[-1][0].shape[1]))
    grads = []
    for (w, _), z in zip(reversed(weights[:-1]), reversed(pre), strict=True):
        grads.append(y)
        y = (y * (z > 0)) @ w
    return pre, grads[::-1], y


def _inside(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> bool:
    scale = SLACK * (1.0 + np.abs(lower) + np.abs(upper))
    return bool(np.all(values >= lower - scale) and np.all(values <= upper + scale))


@pytest.mark.parametrize("seed", range(4))
def test_sound_on_sampled_points(seed: int) -> None:
    """Random networks, four kinds of domain, random splits of unstable neurons (1 to 4, both
    signs): every sampled point satisfying the signs lies in the bounds; where none does, the
    bounds may be None."""
    rng = np.random.default_rng(100 + seed)
    checked = 0
    for trial in range(6):
        weights = oracle.random_network_weights(rng, [3, 8, 8, 2])
        net = network_from_weights(weights)
        domain = _domain(trial + seed, rng, 3)
        c = rng.normal(size=2)
        root = split_bounds(net, domain, c, {})
        assert root is not None
        unstable = [
            (k, int(i))
            for k, s in enumerate(root.states)
            for i in np.flatnonzero(s == NeuronState.UNSTABLE)
        ]
        points = domain.sample(6000, rng)
        pre, grads, gradient = _trace(weights, points, c)
        for _ in range(4):
            count = min(len(unstable), int(rng.integers(1, 5)))
            picks = rng.permutation(len(unstable))[:count]
            splits = {unstable[j]: bool(rng.integers(2)) for j in picks}
            bounds = split_bounds(net, domain, c, splits, reference=root)
            keep = np.ones(len(points), dtype=bool)
            for (k, i), active in splits.items():
                keep &= pre[k][:, i] >= 0 if active else pre[k][:, i] <= 0
            if bounds is None:
                assert not keep.any(), "a sub-domain holding sampled points was called empty"
                continue
            checked += int(keep.sum())
            for k in range(2):
                assert _inside(pre[k][keep], bounds.pre_lower[k], bounds.pre_upper[k])
                assert _inside(grads[k][keep], bounds.grad_lower[k], bounds.grad_upper[k])
            assert _inside(gradient[keep], bounds.input_grad_lower, bounds.input_grad_upper)
    assert checked > 1000


def test_no_splits_never_looser_than_linear_bounds() -> None:
    """Without splits, no range a relaxation reads is looser than :func:`linear_bounds`': the
    pre-activations, the input gradient and ``y_k`` of every unstable neuron (a stable
    neuron's ``y_k`` keeps the interval step's bound: ``backward_linear(unstable_only=True)``)."""
    rng = np.random.default_rng(7)
    for trial in range(8):
        net = network_from_weights(oracle.random_network_weights(rng, [4, 10, 10, 1]))
        domain = _domain(trial, rng, 4)
        ours, linear = split_bounds(net, domain, [1.0], {}), linear_bounds(net, domain, [1.0])
        assert ours is not None
        unstable = [s == NeuronState.UNSTABLE for s in ours.states]
        for mine, theirs in (
            (ours.pre_lower, linear.pre_lower),
            ([g[u] for g, u in zip(ours.grad_lower, unstable, strict=True)],
             [g[u] for g, u in zip(linear.grad_lower, unstable, strict=True)]),
            ((ours.input_grad_lower,), (linear.input_grad_lower,)),
        ):  # fmt: skip
            assert all(np.all(a >= b - 1e-12) for a, b in zip(mine, theirs, strict=True))
        for mine, theirs in (
            (ours.pre_upper, linear.pre_upper),
            ([g[u] for g, u in zip(ours.grad_upper, unstable, strict=True)],
             [g[u] for g, u in zip(linear.grad_upper, unstable, strict=True)]),
            ((ours.input_grad_upper,), (linear.input_grad_upper,)),
        ):  # fmt: skip
            assert all(np.all(a <= b + 1e-12) for a, b in zip(mine, theirs, strict=True))


@pytest.mark.parametrize("seed", range(3))
def test_unstable_only_rows_match_the_full_pass(seed: int) -> None:
    """``backward_linear(unstable_only=True)`` gives every unstable neuron's ``y_k`` the full
    pass's bound, a range holding the full pass's on every stable neuron, and a Jacobian bound
    no looser than the full pass's."""
    rng = np.random.default_rng(40 + seed)
    stable_seen = 0
    for trial in range(4):
        net = network_from_weights(oracle.random_network_weights(rng, [5, 12, 12, 12, 2]))
        domain, c = _domain(trial + seed, rng, 5), rng.normal(size=2)
        bounds = linear_bounds(net, domain, c)
        states = list(bounds.states)
        full = backward_linear(net, states, c)
        cheap = backward_linear(net, states, c, unstable_only=True)
        for k, state in enumerate(states):
            u = state == NeuronState.UNSTABLE
            stable_seen += int((~u).sum())
            np.testing.assert_allclose(cheap[0][k][u], full[0][k][u], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(cheap[1][k][u], full[1][k][u], rtol=1e-12, atol=1e-12)
            assert np.all(cheap[0][k] <= full[0][k] + 1e-12)
            assert np.all(cheap[1][k] >= full[1][k] - 1e-12)
        assert np.all(cheap[2] <= full[2] + 1e-12) and np.all(cheap[3] >= full[3] - 1e-12)
        norms = [
            jacobian_norm_bound(net, domain, c, "linf", bounds=assembled(bounds, grads)).value
            for grads in (full, cheap)
        ]
        assert norms[1] <= norms[0] * (1.0 + 1e-9) + 1e-12
    assert stable_seen > 0


def assembled(bounds, grads):
    """``bounds`` with the backward ranges ``grads`` (hidden layers' and the input gradient's)."""
    return replace(
        bounds, grad_lower=tuple(grads[0]), grad_upper=tuple(grads[1]),
        input_grad_lower=grads[2], input_grad_upper=grads[3],
    )  # fmt: skip


def test_split_tightens_and_stabilises() -> None:
    """A split neuron is stable in the child and its children's bounds lie inside the root's."""
    rng = np.random.default_rng(3)
    net = network_from_weights(oracle.random_network_weights(rng, [3, 8, 8, 1]))
    box = Box(-np.ones(3), np.ones(3))
    root = split_bounds(net, box, [1.0], {})
    assert root is not None
    k, i = next(
        (k, int(np.flatnonzero(s == NeuronState.UNSTABLE)[0]))
        for k, s in enumerate(root.states)
        if np.any(s == NeuronState.UNSTABLE)
    )
    for active, state in ((True, NeuronState.ACTIVE), (False, NeuronState.INACTIVE)):
        child = split_bounds(net, box, [1.0], {(k, i): active}, reference=root, fresh_from=k + 1)
        assert child is not None
        assert child.states[k][i] == state
        assert child.unstable_count < root.unstable_count
        for a, b in zip(child.pre_upper, root.pre_upper, strict=True):
            assert np.all(a <= b)


def test_impossible_split_is_empty() -> None:
    """``z_0 = x`` split inactive makes ``h_0 = 0``, so ``v = h_0 - 0.5`` is -0.5 on the
    sub-domain: splitting ``v`` active leaves nothing (the clip reaches the next layer)."""
    net = Network.from_affines(
        [
            Affine(np.array([[1.0]]), np.zeros(1)),
            Affine(np.array([[1.0]]), np.array([-0.5])),
            Affine(np.array([[1.0]]), np.zeros(1)),
        ]
    )
    box = Box([-1.0], [1.0])
    root = split_bounds(net, box, [1.0], {})
    assert root is not None and root.unstable_count == 2
    assert split_bounds(net, box, [1.0], {(0, 0): False, (1, 0): True}) is None
    assert split_bounds(net, box, [1.0], {(0, 0): False, (1, 0): False}) is not None
    assert split_bounds(net, box, [1.0], {(0, 0): True, (1, 0): True}) is not None


def test_rejects_a_neuron_outside_the_network() -> None:
    net = network_from_weights(oracle.random_network_weights(np.random.default_rng(0), [2, 3, 1]))
    with pytest.raises(ValueError, match="not a hidden neuron"):
        split_bounds(net, Box([0.0, 0.0], [1.0, 1.0]), [1.0], {(0, 5): True})
