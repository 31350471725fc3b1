"""The MIP on a part of the activation branch and bound (lipopt.strategies.bab_parts): exact
answers of ``bab=True`` with it on (at the policy's threshold and a lowered one), a part's
witness inside its sub-domain and its upper bound above every sampled value there, brackets
when stopped."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
import lipopt.policy
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NeuronState
from lipopt.norms import dual_norm
from lipopt.query import Query
from lipopt.search.activation_bab import BabNode
from lipopt.strategies.bab_parts import part_solver
from tests import oracle
from tests.helpers import box_or_ball, random_network

#: (widths, domain kind, input norm, rng seed, hand-off threshold): ten small networks with the
#: hand-off lowered to 4 unstable neurons, so that parts are split first and then handed to the
#: MIP, and four at the policy's own threshold (None)
CASES = [
    ([3, 10, 10, 1], "box", "linf", 100, 4),
    ([3, 10, 10, 1], "linf_ball", "l1", 101, 4),
    ([4, 8, 8, 2], "box", "l1", 102, 4),
    ([2, 12, 12, 1], "linf_ball", "linf", 103, 4),
    ([3, 8, 8, 8, 1], "box", "linf", 104, 4),
    ([4, 10, 6, 2], "linf_ball", "linf", 105, 4),
    ([2, 16, 1], "box", "l1", 106, 4),
    ([3, 12, 12, 2], "box", "linf", 107, 4),
    ([5, 8, 8, 1], "linf_ball", "l1", 108, 4),
    ([3, 9, 9, 1], "box", "l1", 109, 4),
    ([3, 10, 10, 1], "box", "linf", 24, None),
    ([3, 8, 8, 2], "linf_ball", "linf", 21, None),
    ([4, 8, 6, 2], "box", "l1", 20, None),
    ([2, 10, 10, 1], "linf_ball", "l1", 23, None),
]


def _value(net, points, c, norm):
    return np.asarray(dual_norm(net.gradients(np.atleast_2d(points), c), norm))


@pytest.mark.parametrize("widths, kind, norm, seed, mip_at", CASES)
def test_bab_is_exact_against_the_oracle(widths, kind, norm, seed, mip_at, monkeypatch):
    if mip_at is not None:
        monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", mip_at)
    rng = np.random.default_rng(seed)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1])
    domain = box_or_ball(kind, widths[0])
    result = lipopt.lipschitz(net, domain, norm=norm, c=c, bab=True)
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c=c, input_norm=norm)
    assert result.status == "optimal", result.message
    assert result.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert result.exact_certified and result.model_stats["bab_nodes"] >= 1
    witness = np.asarray(result.witness)
    assert domain.contains(witness)
    assert _value(net, witness, c, norm)[0] == pytest.approx(result.lower, rel=1e-9)


def _split_node(net, domain, c, rng, count):
    """A node of ``count`` random splits of root-unstable neurons (re-drawn while empty)."""
    root = split_bounds(net, domain, c, {})
    unstable = [
        (k, i)
        for k, state in enumerate(root.states)
        for i, s in enumerate(state)
        if s == NeuronState.UNSTABLE
    ]
    for _ in range(50):
        picks = rng.choice(len(unstable), size=min(count, len(unstable)), replace=False)
        splits = {unstable[n]: bool(rng.integers(2)) for n in picks}
        bounds = split_bounds(net, domain, c, splits)
        if bounds is not None:
            return BabNode(tuple(splits.items()), bounds, np.inf, bounds.unstable_count)
    raise AssertionError("no non-empty split found")


@pytest.mark.parametrize("seed, norm", [(0, "linf"), (1, "l1"), (2, "linf"), (3, "l1")])
def test_a_part_mip_stays_in_its_part(seed, norm):
    rng = np.random.default_rng(seed)
    net = random_network(rng, [3, 10, 10, 1])
    c = rng.normal(size=1)
    domain = lipopt.Box(np.zeros(3), np.ones(3))
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    solve = part_solver(query, None)
    samples = domain.sample(20_000, rng)
    z = net.pre_activations(samples)
    witnesses = 0
    for count in (1, 2, 3):
        node = _split_node(net, domain, c, rng, count)
        answer = solve(node, 0.0)
        assert answer is not None
        upper, lower, witness = answer
        inside = np.ones(len(samples), dtype=bool)
        for (k, i), active in node.splits:
            inside &= (z[k][:, i] >= 0) if active else (z[k][:, i] <= 0)
        if inside.any():  # the part's upper bound holds on its sampled points
            assert _value(net, samples[inside], c, norm).max() <= upper * (1 + 1e-9) + 1e-12
        if witness is not None:  # ... and its witness lies in the part, with its own value
            witnesses += 1
            wz = net.pre_activations(witness.point)
            for (k, i), active in node.splits:
                assert (wz[k][0, i] > 0) == active
            assert domain.contains(witness.point)
            assert _value(net, witness.point, c, norm)[0] == pytest.approx(lower, rel=1e-9)
            assert lower <= upper * (1 + 1e-9)
    assert witnesses >= 1


def test_a_part_mip_under_a_high_cutoff_proves_the_part_below_it():
    rng = np.random.default_rng(11)
    net = random_network(rng, [3, 10, 10, 1])
    c = np.ones(1)
    domain = lipopt.Box(np.zeros(3), np.ones(3))
    query = Query(net, domain, lipopt.InputNorm.LINF, c)
    node = _split_node(net, domain, c, rng, 2)
    exact = part_solver(query, None)(node, 0.0)
    assert exact is not None
    upper, _, _ = part_solver(query, None)(node, 2.0 * exact[0] + 1.0)
    assert upper <= 2.0 * exact[0] + 1.0


@pytest.mark.parametrize("limit", [0.05, 0.5])
def test_a_stopped_bab_with_part_mips_brackets_the_constant(limit, monkeypatch):
    monkeypatch.setattr(lipopt.policy, "BAB_MIP_AT", 12)
    rng = np.random.default_rng(5)
    net = random_network(rng, [4, 14, 14, 1])
    domain = lipopt.Box(np.zeros(4), np.ones(4))
    truth = oracle.brute_force_lipschitz(
        *oracle.from_lipopt(net, domain), c=[1.0], input_norm="linf"
    ).value
    result = lipopt.lipschitz(net, domain, bab=True, time_limit=limit)
    assert result.lower is not None
    assert result.lower <= truth * (1 + 1e-9) + 1e-12
    assert truth <= result.upper * (1 + 1e-9) + 1e-12
