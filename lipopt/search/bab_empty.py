"""When the activation branch and bound spends an LP on showing a node empty.

:func:`~lipopt.bounds.split_empty.proven_empty` costs one LP over the whole network's
relaxation: about a node's expansion on the digits MLP, several on the digits CNN. How often it
finds an empty node depends on the network and on the depth of the search, not on the count of
unstable neurons alone: on the digits MLP at radius 0.1 the open nodes of highest bound with 30-39
unstable neurons were empty in 97 of 166 cases on one image and in 2 of 32 on another (search
alone, 60 s). So the gate measures it as the search runs, in classes of
:data:`CLASS_WIDTH` unstable neurons:

* a class's first :data:`PROBE` nodes get the LP;
* after that, a node gets it while the class's recent hit rate (counts decayed by
  :data:`DECAY` per try) is at least the options' ``empty_lp_rate``;
* below that rate the class is probed again after a wait that doubles with each miss and
  resets on a hit, so a class whose nodes grow empty deeper in the tree is found again.

Dropping fewer empty nodes never makes the search unsound: an empty node kept is split until
its parts' bounds show it (:func:`~lipopt.bounds.constrained.split_bounds`) or is bounded like any
other.
"""

from __future__ import annotations

from dataclasses import dataclass

from lipopt.bounds.split_empty import proven_empty
from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.search.bab_node import BabNode

#: unstable neurons per class of the gate
CLASS_WIDTH = 8
#: LPs a class gets before its rate counts
PROBE = 8
#: each try multiplies a class's earlier counts by this (about the last 20 tries count)
DECAY = 0.95


@dataclass
class _Class:
    count: int = 0  # LPs run
    tries: float = 0.0
    hits: float = 0.0
    seen: int = 0  # nodes of the class met
    wait: int = 1  # nodes to let pass before the next probe while the rate is low
    next_probe: int = 0


class EmptyLpGate:
    """Whether a node with ``unstable`` unstable neurons gets the emptiness LP (module
    docstring); ``limit``: never above this many (0: never); ``rate``: the least hit rate."""

    def __init__(self, limit: int, rate: float) -> None:
        self.limit, self.rate = limit, rate
        self.classes: dict[int, _Class] = {}
        self.tries = self.hits = 0

    def wants(self, unstable: int) -> bool:
        if unstable > self.limit:
            return False
        entry = self.classes.setdefault(unstable // CLASS_WIDTH, _Class())
        entry.seen += 1
        if entry.count < PROBE or entry.hits >= self.rate * entry.tries:
            return True
        return entry.seen >= entry.next_probe

    def drops(
        self, network: Network, domain: Domain, node: BabNode, deadline: float | None
    ) -> bool:
        """Whether ``node`` is let through (:meth:`wants`) and shown empty by the LP."""
        if not self.wants(node.unstable):
            return False
        empty = proven_empty(network, domain, node.bounds, deadline)
        self.record(node.unstable, empty)
        return empty

    def record(self, unstable: int, empty: bool) -> None:
        """The LP's answer on a node ``wants`` let through."""
        entry = self.classes[unstable // CLASS_WIDTH]
        entry.count += 1
        entry.tries = DECAY * entry.tries + 1.0
        entry.hits = DECAY * entry.hits + float(empty)
        entry.wait = 1 if empty else min(2 * entry.wait, 1 << 12)
        entry.next_probe = entry.seen + entry.wait
        self.tries += 1
        self.hits += int(empty)


__all__ = ["CLASS_WIDTH", "DECAY", "PROBE", "EmptyLpGate"]
