"""The sign-group bound from a parent's shortlist of sign vectors (lipopt.bounds.sign_shortlist),
against independent truth: on every sub-domain of a tree of first-layer splits (each child
bounded from its parent's list, one sign vector listed per group so that groups are recomputed)
never below the brute-force oracle's exact constant over that sub-domain (the split's half-spaces
as linear constraints), and never below 10,000 sampled gradient norms on each side of a split on
the bundled digits CNN; the root's bound is the full sign-group bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.margins import top_two_margin
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NeuronState
from lipopt.bounds.jacobian import slope_problem
from lipopt.bounds.sign_groups import row_bounds, sign_group_bound, sign_rows
from lipopt.bounds.sign_shortlist import SignShortlist, shortlist_bound
from lipopt.domain import Box, LinfBall
from lipopt.norms import InputNorm
from tests import oracle
from tests.helpers import network_from_weights

REL = 1e-9
MODELS = Path(__file__).resolve().parents[2] / "models"


def _half_spaces(weights, splits: dict[tuple[int, int], bool]):
    """The first-layer splits as ``A x <= b``: ``z_i >= 0`` is ``-w_i x <= b_i``."""
    w, b = weights[0]
    rows = [(-w[i], b[i]) if active else (w[i], -b[i]) for (_, i), active in splits.items()]
    return np.array([row for row, _ in rows]), np.array([rhs for _, rhs in rows])


def _first_layer_open(bounds, count: int) -> list[int]:
    return [int(i) for i in np.flatnonzero(bounds.states[0] == NeuronState.UNSTABLE)[:count]]


@pytest.mark.parametrize("kind", ["box", "linf"])
def test_never_below_the_exact_constant_on_a_tree_of_splits(kind: str) -> None:
    """6 random networks [4, 8, 8, 2], groups of 2 (4 sign vectors), one listed per group: the
    four grandchildren of two first-layer splits, each from its parent's list."""
    rng = np.random.default_rng(11 if kind == "box" else 12)
    checked = 0
    for _ in range(6):
        weights = oracle.random_network_weights(rng, [4, 8, 8, 2])
        net = network_from_weights(weights)
        domain = (
            Box(-np.ones(4), np.ones(4)) if kind == "box" else LinfBall(rng.normal(size=4), 0.6)
        )
        c = rng.normal(size=2)
        spec = oracle.from_lipopt(net, domain)
        root = split_bounds(net, domain, c, {})
        value, listed = shortlist_bound(net, root, c, (2, None), None, kept=1)
        assert value == sign_group_bound(net, root, c, 2)  # no list: every sign vector
        opened = _first_layer_open(root, 2)
        if len(opened) < 2:
            continue
        first, second = opened
        for a in (True, False):
            child = split_bounds(net, domain, c, {(0, first): a}, root)
            if child is None:
                continue
            _, child_list = shortlist_bound(net, child, c, (2, None), listed, kept=1)
            for b in (True, False):
                splits = {(0, first): a, (0, second): b}
                leaf = split_bounds(net, domain, c, splits, child)
                if leaf is None:
                    continue
                bound, _ = shortlist_bound(net, leaf, c, (2, None), child_list, kept=1)
                cut = _half_spaces(spec.weights, splits)
                try:
                    exact = oracle.brute_force_lipschitz(*spec, c, "linf", constraints=cut).value
                except ValueError as empty:  # no interior point: nothing to bound
                    assert "no interior" in str(empty)
                    continue
                assert bound >= exact * (1.0 - REL) - 1e-12, (splits, bound, exact)
                checked += 1
    assert checked >= 8


def test_a_group_past_its_list_is_bounded_in_full() -> None:
    """A node's own list holds each group's largest bounds and ``rest`` the next one; it gives
    the node's bound again; a group whose ``rest`` is above its listed values is recomputed over
    every sign vector: the full bound, a new list."""
    rng = np.random.default_rng(4)
    net = network_from_weights(oracle.random_network_weights(rng, [6, 10, 10, 1]))
    box, c = Box(-np.ones(6), np.ones(6)), np.ones(1)
    bounds = split_bounds(net, box, c, {})
    full, own = shortlist_bound(net, bounds, c, (3, None), None, kept=2)
    assert own.index.size == 2 * 2 and np.all(own.rest > -np.inf)  # 2 groups of 8 sign vectors
    rows, owners = sign_rows(6, 3)  # the list: each group's 2 largest, ``rest`` the next one
    values = row_bounds(slope_problem(net, bounds, c, InputNorm.L1), rows)
    for group in (0, 1):
        ranked = np.sort(values[owners == group])[::-1]
        mine = owners[own.index] == group
        assert np.array_equal(np.sort(own.values[mine])[::-1], ranked[:2])
        assert np.array_equal(values[own.index[mine]], own.values[mine])
        assert own.rest[group] == ranked[2]
    again, _ = shortlist_bound(net, bounds, c, (3, None), own, kept=2)
    assert again == full
    raised = SignShortlist(own.index, own.values, own.rest + np.array([1e9, 0.0]))
    redone, relisted = shortlist_bound(net, bounds, c, (3, None), raised, kept=2)
    assert redone == full
    assert relisted.rest[0] == own.rest[0] and relisted.rest[1] == raised.rest[1]


def test_never_below_sampled_gradients_on_each_side_of_a_split() -> None:
    """The bundled digits CNN, ℓ∞ ball of radius 0.05 around a test image, c the top-2 margin,
    groups of 8: each child of a split on a first-layer neuron, bounded from the root's list,
    is at least every sampled gradient norm (10,000, each attained) on its side of the split."""
    pytest.importorskip("onnx")
    from lipopt.io import load_onnx

    net = load_onnx(MODELS / "digits-cnn.onnx")
    x = np.load(MODELS / "digits-test.npz")["images"][1].reshape(-1)
    ball, c = LinfBall(x, 0.05), top_two_margin(net, x)
    spec = oracle.from_lipopt(net, ball)
    root = split_bounds(net, ball, c, {})
    _, listed = shortlist_bound(net, root, c, (8, None), None)
    (neuron,) = _first_layer_open(root, 1)
    points = np.random.default_rng(0).uniform(x - 0.05, x + 0.05, size=(10_000, x.size))
    w, b = spec.weights[0]
    side = points @ w[neuron] + b[neuron] >= 0.0
    norms = oracle.gradient_norms(spec.weights, points, c, "linf")
    for active in (True, False):
        child = split_bounds(net, ball, c, {(0, neuron): active}, root)
        assert child is not None
        bound, _ = shortlist_bound(net, child, c, (8, None), listed)
        assert norms[side == active].max() <= bound * (1.0 + REL)
