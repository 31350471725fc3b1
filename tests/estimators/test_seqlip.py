"""Greedy SeqLip: the greedy search and the layer-pair bound."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lipopt import Box
from lipopt.estimators import seqlip
from lipopt.estimators.seqlip import greedy_max_spectral
from tests.helpers import random_network


def _brute(left, right):
    n = left.shape[1]
    return max(
        np.linalg.norm((left * np.array(s)) @ right, ord=2)
        for s in itertools.product([0.0, 1.0], repeat=n)
    )


def test_greedy_is_a_feasible_value_below_the_brute_force_maximum():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(10):
        left, right = rng.normal(size=(3, 6)), rng.normal(size=(6, 4))
        value, sigma = greedy_max_spectral(left, right)
        assert set(np.unique(sigma)) <= {0.0, 1.0}
        assert value == pytest.approx(np.linalg.norm((left * sigma) @ right, ord=2))
        best = _brute(left, right)
        assert value <= best + 1e-9
        hits += value >= best - 1e-9
    assert hits >= 5  # greedy usually finds the maximum on small problems


def test_fixed_coordinates_do_not_move():
    rng = np.random.default_rng(1)
    left, right = rng.normal(size=(3, 5)), rng.normal(size=(5, 3))
    fixed = np.array([1, 0, -1, -1, 0], dtype=np.int8)
    _, sigma = greedy_max_spectral(left, right, fixed)
    assert sigma[0] == 1 and sigma[1] == 0 and sigma[4] == 0


def test_one_hidden_layer_is_the_greedy_max_of_w2_d_w1():
    rng = np.random.default_rng(2)
    net = random_network(rng, [3, 5, 1])
    w1, w2 = (a.weight for a in net.affine_layers)
    est = seqlip.estimate(net, Box(np.full(3, -100.0), np.full(3, 100.0)), "l1", local=False)
    value, _ = greedy_max_spectral(w2, w1)
    assert est.detail["l2_estimate"] == pytest.approx(value, rel=1e-9)
    assert est.value == pytest.approx(value)  # l1 input: factor 1
    lin = seqlip.estimate(net, Box(np.zeros(3), np.ones(3)), "linf", local=False)
    assert lin.value == pytest.approx(np.sqrt(3) * value)


def test_local_version_is_never_above_the_global_one_on_small_domains():
    rng = np.random.default_rng(4)
    net = random_network(rng, [3, 8, 8, 1])
    domain = Box(np.full(3, 0.4), np.full(3, 0.45))
    local = seqlip.estimate(net, domain, "linf")
    assert local.detail["local"] is True
    assert np.all(np.isfinite(local.detail["factors"]))
