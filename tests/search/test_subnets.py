"""Tangent bounds from sub-network Lipschitz constants (lipopt.search.subnets): sound, never looser
than
CROWN's, equal to the sub-network's constant (by sub-MIP or by region search), and the forward
model stays exact with them."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall, lipschitz
from lipopt.bounds import propagate
from lipopt.bounds.interval import NeuronState
from lipopt.bounds.tangent import direction_ball, tangent_bounds
from lipopt.norms import InputNorm
from lipopt.search import subnets
from lipopt.search.subnets import SUB_GAP, WIDEN, prefix_network, subnet_tangent_bounds
from lipopt.solvers import get
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

CASES = [
    ([3, 8, 8, 8, 2], Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "linf"),
    ([3, 8, 8, 8, 2], Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "l1"),
    ([2, 10, 10, 1], LinfBall([0.2, -0.3], 0.8), "linf"),
    ([4, 6, 6, 6, 2], L1Ball([0.5, 0.5, 0.5, 0.5], 1.0), "l1"),
]


def _case(index: int):
    widths, domain, norm = CASES[index]
    rng = np.random.default_rng(40 + index)
    net = random_network(rng, widths)
    bounds = propagate(net, domain, np.ones(net.output_dim), method="linear")
    return net, domain, norm, bounds, rng


def _directions(norm: str, dim: int, rng: np.random.Generator, count: int) -> np.ndarray:
    """Points of the unit ball of the input norm: its vertices and random interior points."""
    ball = direction_ball(InputNorm.parse(norm), dim)
    if norm == "l1":
        vertices = np.vstack([np.eye(dim), -np.eye(dim)])
    else:
        vertices = rng.choice([-1.0, 1.0], size=(count, dim))
    return np.vstack([vertices, ball.sample(count, rng)])


@pytest.mark.parametrize("index", range(len(CASES)))
def test_tightened_tangents_are_sound_and_never_looser_than_crown(index):
    net, domain, norm, bounds, rng = _case(index)
    crown = tangent_bounds(net, bounds.states, norm)
    tight, stats = subnet_tangent_bounds(net, domain, bounds, norm, get("highs"))
    assert stats["sub_mips"] + stats["searched"] > 0
    for k in range(len(net.hidden_widths)):
        assert np.all(tight.lower[k] >= crown.lower[k]) and np.all(tight.upper[k] <= crown.upper[k])
    xs = domain.sample(400, rng)
    vs = _directions(norm, net.input_dim, rng, 200)
    for k in range(len(net.hidden_widths)):
        prefix = prefix_network(net, k)
        jacobians = np.stack([prefix.jacobian_at(x) for x in xs])  # (points, width_k, d)
        tangents = jacobians @ vs.T  # every sampled x with every sampled direction
        assert np.all(tangents <= tight.upper[k][None, :, None] + 1e-9)
        assert np.all(tangents >= tight.lower[k][None, :, None] - 1e-9)


@pytest.mark.parametrize("search", [True, False])
@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_tightened_tangent_bound_is_the_sub_networks_constant(monkeypatch, index, search):
    """Below the first hidden layer each live neuron's bound is ±L_ki, the constant of
    x -> z_k[i](x) (brute force): within the sub-MIPs' gap, or, where the one-hidden-layer
    sub-network's region search finished, within the widening alone. CROWN's bound is looser
    there. (An inactive neuron's tangent is switched off, so its bound is left as it was.)"""
    if not search:
        monkeypatch.setattr(subnets, "SEARCH_NODES", 0)
    net, domain, norm, bounds, _ = _case(index)
    crown = tangent_bounds(net, bounds.states, norm)
    tight, stats = subnet_tangent_bounds(net, domain, bounds, norm, get("highs"))
    live = np.flatnonzero(bounds.states[1] != NeuronState.INACTIVE)
    # these sub-networks are small: every search finishes and no layer-1 neuron needs a MIP
    assert stats["searched"] == (len(live) if search else 0)
    tolerance = 2 * WIDEN if search else 2 * SUB_GAP
    prefix = prefix_network(net, 1)
    looser = 0
    for i in live:
        c = np.eye(prefix.output_dim)[i]
        truth = brute_force_lipschitz(*from_lipopt(prefix, domain), c, norm).value
        assert truth * (1 - 1e-9) <= tight.upper[1][i] <= truth * (1 + tolerance) + 1e-9
        assert tight.lower[1][i] == pytest.approx(-tight.upper[1][i])
        looser += crown.upper[1][i] > tight.upper[1][i] * (1 + 1e-6)
    assert looser > 0  # the lever buys something on this network


def test_a_search_that_cannot_decide_an_lp_hands_the_neuron_to_its_sub_mip(monkeypatch):
    def undecided(*args, **kwargs):
        raise RuntimeError("HiGHS could not decide the feasibility LP")

    monkeypatch.setattr(subnets, "search_regions", undecided)
    net, domain, norm, bounds, _ = _case(2)  # two hidden layers: every sub-network is searched
    tight, stats = subnet_tangent_bounds(net, domain, bounds, norm, get("highs"))
    live = np.flatnonzero(bounds.states[1] != NeuronState.INACTIVE)
    assert stats["searches"] == stats["sub_mips"] == len(live) and stats["searched"] == 0
    prefix = prefix_network(net, 1)
    for i in live:
        c = np.eye(prefix.output_dim)[i]
        truth = brute_force_lipschitz(*from_lipopt(prefix, domain), c, norm).value
        assert truth * (1 - 1e-9) <= tight.upper[1][i] <= truth * (1 + 2 * SUB_GAP) + 1e-9


def test_an_l1_ball_domain_is_never_searched_as_a_box():
    # the search runs on boxes; the box around an l1 ball is larger, and the ball's stable
    # neurons need not be stable on it
    net, domain, norm, bounds, _ = _case(3)
    _, stats = subnet_tangent_bounds(net, domain, bounds, norm, get("highs"))
    assert stats["searches"] == 0 and stats["sub_mips"] > 0


@pytest.mark.parametrize("budget", [1e-6, 0.05])
def test_a_spent_budget_keeps_crowns_bounds_where_nothing_was_proven(budget):
    net, domain, norm, bounds, _ = _case(0)
    crown = tangent_bounds(net, bounds.states, norm)
    tight, stats = subnet_tangent_bounds(net, domain, bounds, norm, get("highs"), budget)
    for k in range(len(net.hidden_widths)):
        assert np.all(tight.upper[k] <= crown.upper[k]) and np.all(tight.lower[k] >= crown.lower[k])
    if budget < 1e-3:
        assert stats["sub_mips"] == 0 and stats["searches"] == 0
        assert all(np.array_equal(a, b) for a, b in zip(tight.upper, crown.upper))


@pytest.mark.parametrize("subnet_bounds", [True, False])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_forward_model_with_and_without_subnet_bounds_equals_brute_force(index, subnet_bounds):
    net, domain, norm, _, rng = _case(index)
    c = rng.normal(size=net.output_dim) if net.output_dim > 1 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    messages: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation="forward", regions=False, split=False,
        subnet_bounds=subnet_bounds, progress=messages.append,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert any("sub-network MIPs" in m for m in messages) == subnet_bounds


def test_subnet_bounds_option_is_checked_and_backward_ignores_it():
    from lipopt import LipschitzError

    net, domain, norm, _, _ = _case(2)
    with pytest.raises(LipschitzError, match="subnet_bounds"):
        lipschitz(net, domain, norm=norm, subnet_bounds="yes")
    messages: list[str] = []
    lipschitz(
        net, domain, norm=norm, formulation="backward", regions=False, subnet_bounds=True,
        progress=messages.append,
    )  # fmt: skip
    assert not any("sub-network MIPs" in m for m in messages)
