"""Input-space cuts of split neurons (lipopt.bounds.split_cuts), against independent truth:
the cut holds every sampled point of the child, the tightened ranges hold every sampled
pre-activation of the child, and each cut's bound equals the LP optimum over the box and the
halfspace (scipy's HiGHS), never below it."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from scipy.optimize import linprog

from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NeuronState
from lipopt.bounds.split_cuts import Cut, cut_children, cut_upper, is_empty
from lipopt.domain import Box
from lipopt.plan.nodes import ActivationBab
from tests.helpers import planned_bab, random_network

policy_module = importlib.import_module("lipopt.policy")


def _pre_activations(net, points):
    """Every hidden pre-activation at each point, layer by layer (numpy, no lipopt bounds)."""
    values, h = [], points
    for affine in net.affine_layers[:-1]:
        z = (
            h
            @ np.asarray(
                affine.matrix.toarray() if hasattr(affine.matrix, "toarray") else affine.matrix
            ).T
            + affine.bias
        )
        values.append(z)
        h = np.maximum(z, 0.0)
    return values


@pytest.mark.parametrize("seed", range(3))
def test_cut_and_tightened_ranges_hold_every_sampled_point_of_the_child(seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, [4, 12, 12, 12, 1])
    box = Box(-np.ones(4), np.ones(4))
    root = split_bounds(net, box, np.array([1.0]), {})
    points = rng.uniform(-1.0, 1.0, size=(40_000, 4))
    values = _pre_activations(net, points)
    tighter = 0
    for k in (1, 2):  # split every unstable neuron of the deeper layers in turn
        for i in np.flatnonzero(root.states[k] == NeuronState.UNSTABLE):
            children = cut_children(net, root, (k, int(i)), box.bounding_box())
            for active, child in children.items():
                inside = values[k][:, i] >= 0 if active else values[k][:, i] <= 0
                assert child is not None or not inside.any()
                if child is None:
                    continue
                reference, fresh = child
                assert 1 <= fresh <= k + 1
                for j, z in enumerate(values):
                    assert np.all(z[inside] >= reference.pre_lower[j] - 1e-9)
                    assert np.all(z[inside] <= reference.pre_upper[j] + 1e-9)
                    tighter += int(np.sum(reference.pre_upper[j] < root.pre_upper[j] - 1e-6))
                    tighter += int(np.sum(reference.pre_lower[j] > root.pre_lower[j] + 1e-6))
    assert tighter > 0  # the cuts did tighten ranges (else this test would check nothing)


@pytest.mark.parametrize("seed", range(5))
def test_each_cuts_bound_is_the_lp_optimum_over_box_and_halfspace(seed):
    rng = np.random.default_rng(100 + seed)
    d, n = 6, 40
    lower, upper = -rng.uniform(0.5, 2.0, d), rng.uniform(0.5, 2.0, d)
    normal = rng.normal(size=d)
    centre, radius = (lower + upper) / 2, (upper - lower) / 2
    offset = normal @ centre + rng.uniform(-0.8, 0.8) * (np.abs(normal) @ radius)
    cut = Cut(normal, float(offset))
    coeffs = rng.normal(size=(n, d))
    coeffs[:, 0] = np.where(rng.random(n) < 0.2, 0.0, coeffs[:, 0])  # zero coefficients too
    shift = rng.normal(size=n)
    bound = cut_upper((coeffs, shift, np.abs(shift)), cut, (lower, upper))
    binding = 0
    for row in range(n):
        lp = linprog(
            -coeffs[row], A_ub=normal[None, :], b_ub=[offset], bounds=list(zip(lower, upper))
        )
        assert lp.status == 0
        best = -lp.fun + shift[row]
        box_max = coeffs[row] @ centre + np.abs(coeffs[row]) @ radius + shift[row]
        if np.isfinite(bound[row]):
            binding += 1
            assert best - 1e-9 <= bound[row] <= best + 1e-7 * (1 + abs(best))
        else:  # the cut does not bind: the box's maximum is the LP's
            assert best == pytest.approx(box_max, rel=1e-9, abs=1e-9)
    assert binding > 0


def test_a_cut_that_misses_the_box_is_empty():
    box = (-np.ones(3), np.ones(3))
    assert is_empty(Cut(np.array([1.0, 1.0, 0.0]), -2.5), box)  # x1 + x2 <= -2.5: nothing
    assert not is_empty(Cut(np.array([1.0, 1.0, 0.0]), -2.0), box)  # the corner (-1, -1)


@pytest.mark.parametrize(("inputs", "expected"), [(3, True), (300, False)])
def test_the_planner_uses_cuts_up_to_the_policys_input_count(monkeypatch, inputs, expected):
    monkeypatch.setattr(policy_module, "BAB_CUT_MAX_INPUTS", 64)
    node = planned_bab(inputs=inputs)
    assert isinstance(node, ActivationBab)
    assert node.options.split_cuts is expected
