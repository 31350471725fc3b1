"""The open nodes under a memory cap (lipopt.search.bab_heap): past the cap the lowest nodes are
parked and the heap still gives its nodes best first, never holding more than the cap after a
filing; a parked node comes back with bounds on its own sub-domain; searches whose heap parks
nodes (every node, with a cap of one byte) give the brute-force oracle's value, exact and
attained, serial and with the pool's slices."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt.bounds.interval import NeuronState
from lipopt.query import Query
from lipopt.search.activation_bab import ActivationBabOptions, activation_bab
from lipopt.search.bab_heap import NodeHeap, ParkedNode, node_bytes, parked, unparked
from lipopt.search.bab_node import BabNode
from lipopt.search.kinds import unstable_count
from lipopt.status import Status
from tests import oracle
from tests.search.test_bab_parallel import CASES, _problem, _truth


def _root_node(case) -> tuple[Query, BabNode]:
    widths, kind, norm, seed, _ = case
    net, domain, c = _problem(widths, kind, seed)
    query = Query(net, domain, lipopt.InputNorm.parse(norm), c)
    root = query.split_root()
    assert root is not None
    return query, BabNode((), root, 1.0, unstable_count(net, root.states))


def test_past_its_cap_the_heap_parks_its_lowest_nodes_and_stays_best_first() -> None:
    _, node = _root_node(CASES[1])
    size = node_bytes(node)
    heap = NodeHeap(cap=int(3.5 * size))
    uppers = np.random.default_rng(0).permutation(20).astype(float) + 1.0
    for upper in uppers:
        heap.push(BabNode(node.splits, node.bounds, upper, node.unstable))
        assert heap.held <= heap.cap
        kept = [n for n in heap.nodes() if isinstance(n, BabNode)]
        assert heap.held == sum(node_bytes(n) for n in kept)
    assert heap.parked > 0 and len(heap) == 20
    popped = [heap.pop() for _ in range(20)]
    assert [n.upper for n in popped] == sorted(uppers, reverse=True)
    assert isinstance(popped[-1], ParkedNode) and heap.held == 0


def test_a_parked_node_comes_back_with_bounds_on_its_sub_domain() -> None:
    """A node split on two neurons of the first layer, parked and rebuilt: its splits fixed in
    the rebuilt bounds, its bound and counts kept, its bounds no wider than the root's."""
    query, root = _root_node(CASES[4])
    open_ = np.flatnonzero(root.bounds.states[0] == NeuronState.UNSTABLE)[:2]
    splits = (((0, int(open_[0])), True), ((0, int(open_[1])), False))
    node = BabNode(splits, root.bounds, 7.0, root.unstable, checked=1, grouped=True)
    rebuilt = unparked(parked(node), (query.network, query.domain, query.seed), root.bounds)
    assert rebuilt is not None
    assert (rebuilt.splits, rebuilt.upper, rebuilt.checked, rebuilt.grouped) == (
        splits, 7.0, 1, True
    )  # fmt: skip
    states = rebuilt.bounds.states[0]
    assert states[open_[0]] == NeuronState.ACTIVE and states[open_[1]] == NeuronState.INACTIVE
    for low, up, root_low, root_up in zip(
        rebuilt.bounds.pre_lower, rebuilt.bounds.pre_upper,
        root.bounds.pre_lower, root.bounds.pre_upper, strict=True,
    ):  # fmt: skip
        assert np.all(low >= root_low) and np.all(up <= root_up)
    assert rebuilt.unstable < root.unstable


@pytest.mark.parametrize("cap", [1, 2000], ids=["every-node", "some-nodes"])
@pytest.mark.parametrize("case", CASES)
def test_a_search_that_parks_is_exact(case, cap: int) -> None:
    """Serial: the oracle's value, attained at the witness, with nodes parked on the way (a
    cap of 2000 bytes holds the bounds of 2-3 nodes of these networks)."""
    widths, kind, norm, seed, _ = case
    net, domain, c = _problem(widths, kind, seed)
    options = ActivationBabOptions(heap_bytes=cap, sign_group=2 if norm == "linf" else 0)
    found = activation_bab(net, domain, c, norm, options=options)
    truth = _truth(net, domain, c, norm)
    assert found.status == Status.OPTIMAL, found
    assert found.upper == pytest.approx(truth, rel=1e-6, abs=1e-9)
    assert found.lower == pytest.approx(truth, rel=1e-6, abs=1e-9)
    assert found.parked > 0
    assert found.witness is not None
    spec = oracle.from_lipopt(net, domain)
    attained = oracle.gradient_norms(spec.weights, found.witness[None, :], c, norm)[0]
    assert attained == pytest.approx(found.lower, rel=1e-9, abs=1e-12)
