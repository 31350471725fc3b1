"""The sign groups' order (lipopt.bounds.sign_order): the greedy coupled order finds groups a
coupling matrix hides; the strided order is an 8x8 image's columns; every candidate is a
permutation; the chosen order's sign-group bound is sound against the brute-force oracle, is
the bound it reports, is no higher than the entries' own order's, and is the same for a seed;
past its time only the own order is taken."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.sign_groups import sign_group_bound
from lipopt.bounds.sign_order import candidate_orders, chosen_order, coupled_order, strided_order
from lipopt.domain import Box, LinfBall
from tests import oracle
from tests.helpers import network_from_weights

REL = 1e-9


def _groups(order: np.ndarray, size: int) -> list[set[int]]:
    return [set(map(int, order[k : k + size])) for k in range(0, order.size, size)]


def test_coupled_order_finds_the_hidden_blocks() -> None:
    """Four blocks of three entries, scattered by a permutation: strongly coupled inside a
    block, weakly across; the greedy groups of three are the blocks."""
    rng = np.random.default_rng(2)
    hidden = rng.permutation(12)
    blocks = [set(map(int, hidden[k : k + 3])) for k in range(0, 12, 3)]
    coupling = rng.uniform(0.0, 0.1, size=(12, 12))
    coupling = coupling + coupling.T
    for block in blocks:
        members = sorted(block)
        coupling[np.ix_(members, members)] += rng.uniform(1.0, 2.0)
    found = _groups(coupled_order(coupling, 3), 3)
    assert sorted(map(sorted, found)) == sorted(map(sorted, blocks))


def test_strided_order_groups_the_columns_of_a_square_image() -> None:
    found = _groups(strided_order(64, 8), 8)
    assert found == [set(range(column, 64, 8)) for column in range(8)]
    assert sorted(strided_order(10, 4)) == list(range(10))  # not a multiple: still every entry


def test_every_candidate_is_a_permutation() -> None:
    rng = np.random.default_rng(4)
    for widths in ([6, 9, 1], [6, 9, 7, 2], [11, 5, 5, 5, 3]):
        net = network_from_weights(oracle.random_network_weights(rng, widths))
        for name, order in candidate_orders(net, 4).items():
            assert sorted(order) == list(range(widths[0])), name


def test_the_chosen_order_is_sound_and_no_worse_than_the_own_order() -> None:
    """10 random networks [6, 8, 8, 2] in groups of 2, on ℓ∞ balls and unit boxes."""
    rng = np.random.default_rng(8)
    for index in range(10):
        net = network_from_weights(oracle.random_network_weights(rng, [6, 8, 8, 2]))
        point = rng.normal(size=6)
        domain = LinfBall(point, 0.5) if index % 2 else Box(-np.ones(6), np.ones(6))
        c = rng.normal(size=2)
        bounds = split_bounds(net, domain, c, {})
        choice = chosen_order(net, bounds, c, (2, 30, None), np.random.default_rng(0))
        exact = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c, "linf").value
        bound = sign_group_bound(net, bounds, c, 2, choice.order)
        assert bound >= exact * (1.0 - REL) - 1e-12, (index, bound, exact)
        assert bound == pytest.approx(choice.bound, rel=1e-12)
        assert bound <= sign_group_bound(net, bounds, c, 2) * (1.0 + 1e-12)
        assert choice.candidates["own"] == pytest.approx(sign_group_bound(net, bounds, c, 2))


def test_the_choice_is_the_same_for_a_seed_and_stops_at_its_time() -> None:
    rng = np.random.default_rng(9)
    net = network_from_weights(oracle.random_network_weights(rng, [8, 10, 10, 1]))
    box = Box(-np.ones(8), np.ones(8))
    bounds = split_bounds(net, box, np.ones(1), {})
    runs = [
        chosen_order(net, bounds, np.ones(1), (2, 40, None), np.random.default_rng(3))
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    past = chosen_order(net, bounds, np.ones(1), (2, 40, 0.0), np.random.default_rng(3))
    assert list(past.candidates) == ["own"]  # past its time: the own order alone, no swap
    assert past.order == tuple(range(8))
    assert past.bound == pytest.approx(sign_group_bound(net, bounds, np.ones(1), 2), rel=1e-12)
