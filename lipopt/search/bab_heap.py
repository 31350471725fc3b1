"""The open nodes of the activation branch and bound, best bound first, under a memory cap.

Each open node holds its bounds: four arrays per hidden layer and two on the input gradient
(27 KB a node on the digits CNN, 77 KB on the MNIST-shaped CNN of 1568, 392 and 100 neurons),
and its sign shortlist. Best first, the heap grows by up to one node per node expanded: 1 GB
after about 13 000 nodes of that CNN. Past ``cap`` bytes of bounds the heap **parks** the
nodes with the lowest bounds until at most half the cap is held: a :class:`ParkedNode` keeps
the node's splits, its bound ``U_S`` and its counts, and drops the arrays. When a parked node
reaches the top it is rebuilt from its splits (:meth:`~lipopt.search.activation_bab._Search.take`:
the bounds of ``D_S`` computed again from the root's, sound as any node's).

Parking changes which bounds a node's children start from (the rebuilt bounds may be looser
than those the chain of its ancestors' splits made), never which sub-domain a node stands for
nor the ``U_S`` that covers it; so every bracket stays sound, and a search that finishes has
the same value.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from lipopt.bounds.constrained import Neuron, split_bounds
from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.search.bab_node import BabNode
from lipopt.search.kinds import unstable_count


@dataclass(frozen=True)
class ParkedNode:
    """A node without its bounds (module docstring): its splits, ``U_S``, unstable count,
    margin-checked layers and whether ``U_S`` holds its sign-group bound."""

    splits: tuple[tuple[Neuron, bool], ...]
    upper: float
    unstable: int
    checked: int
    grouped: bool


#: a node of the heap: with its bounds, or parked
HeapNode = BabNode | ParkedNode


def node_bytes(node: BabNode) -> int:
    """The bytes of the arrays a node holds: its bounds and its sign shortlist."""
    bounds = node.bounds
    arrays = [*bounds.pre_lower, *bounds.pre_upper, *bounds.grad_lower, *bounds.grad_upper]
    held = sum(array.nbytes for array in arrays)
    held += bounds.input_grad_lower.nbytes + bounds.input_grad_upper.nbytes
    if node.signs is not None:
        held += node.signs.index.nbytes + node.signs.values.nbytes + node.signs.rest.nbytes
    return int(held)


def parked(node: BabNode) -> ParkedNode:
    return ParkedNode(node.splits, node.upper, node.unstable, node.checked, node.grouped)


def unparked(
    node: ParkedNode, problem: tuple[Network, Domain, Seed], root: NetworkBounds | None
) -> BabNode | None:
    """The node with bounds on ``D_S`` made again from its splits (:func:`split_bounds`, the
    root's bounds intersected in; None: they show ``D_S`` empty). Its ``U_S`` is the one it was
    filed with: it covers ``D_S`` whatever the new bounds give."""
    network, domain, seed = problem
    bounds = split_bounds(network, domain, seed, dict(node.splits), root)
    if bounds is None:
        return None
    unstable = unstable_count(network, bounds.states)
    return BabNode(node.splits, bounds, node.upper, unstable, node.checked, node.grouped)


class NodeHeap:
    """Open nodes on ``-U_S`` (ties: first filed first), with at most ``cap`` bytes of bounds
    held past each filing (None: no cap); ``parked``: how many nodes it parked."""

    def __init__(self, cap: int | None = None) -> None:
        self.entries: list[tuple[float, int, HeapNode]] = []
        self.order = itertools.count()
        self.cap, self.held, self.parked = cap, 0, 0

    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def push(self, node: HeapNode) -> None:
        """File a node; past the cap, park the lowest (:meth:`park`)."""
        heapq.heappush(self.entries, (-node.upper, next(self.order), node))
        if isinstance(node, BabNode):
            self.held += node_bytes(node)
            if self.cap is not None and self.held > self.cap:
                self.park()

    def top(self) -> HeapNode:
        """The node of largest ``U_S``."""
        return self.entries[0][2]

    def pop(self) -> HeapNode:
        """The node of largest ``U_S``, taken off."""
        node = heapq.heappop(self.entries)[2]
        if isinstance(node, BabNode):
            self.held -= node_bytes(node)
        return node

    def clear(self) -> None:
        self.entries.clear()
        self.held = 0

    def nodes(self) -> tuple[HeapNode, ...]:
        """Every open node, in no particular order."""
        return tuple(entry[2] for entry in self.entries)

    def park(self) -> None:
        """Keep the bounds of the best nodes within half the cap; park every other node. Each
        entry keeps its key, so the heap's order holds."""
        budget = 0 if self.cap is None else self.cap // 2
        kept = 0
        for index in sorted(range(len(self.entries)), key=lambda i: self.entries[i][:2]):
            key, tie, node = self.entries[index]
            if not isinstance(node, BabNode):
                continue
            size = node_bytes(node)
            if kept + size <= budget:
                kept += size
                continue
            self.entries[index] = (key, tie, parked(node))
            self.parked += 1
        self.held = kept


__all__ = ["HeapNode", "NodeHeap", "ParkedNode", "node_bytes", "parked", "unparked"]
