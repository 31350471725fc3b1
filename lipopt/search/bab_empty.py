"""When the activation branch and bound spends an LP on showing a node empty.

:func:`~lipopt.bounds.split_empty.proven_empty` costs one LP over the whole network's
relaxation: about a node's expansion on the digits MLP (7-9 ms), ten or more on the digits CNN
(0.1-0.2 s). How often it finds an empty node depends on the network and on the depth of the
search, not on the count of unstable neurons alone: on the digits MLP at radius 0.1 the open
nodes of highest bound with 30-39 unstable neurons were empty in 97 of 166 cases on one image
and in 2 of 32 on another (search alone, 60 s). So the gate measures both as the search runs:

* ``cost``: the LP's mean time over the mean time between two nodes taken (less the LPs', and
  less a pool worker's waits between slices: :meth:`EmptyLpGate.pause`), in nodes; the hit
  rate an LP needs is the options' ``empty_lp_rate`` times ``cost``: the rate at which it pays
  where an empty node kept would cost ``1 / empty_lp_rate`` nodes. Where that rate is above 1
  no LP runs (no hit rate can pay for it);
* per class of :data:`CLASS_WIDTH` unstable neurons, its first :data:`PROBE` nodes get the LP;
  after that a node gets it while the class's recent hit rate (counts decayed by :data:`DECAY`
  per try) is at least the rate needed;
* below that rate the class is probed again after a wait that doubles with each miss (up to
  :data:`MAX_WAIT` of its nodes) and resets on a hit, so a class whose nodes grow empty deeper
  in the tree is found again.

Dropping fewer empty nodes never makes the search unsound: an empty node kept is split until
its parts' bounds show it (:func:`~lipopt.bounds.constrained.split_bounds`) or is bounded like
any other.
"""

from __future__ import annotations

import time
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
#: the longest wait (in nodes of the class) between two probes of a class below its rate
MAX_WAIT = 64
#: weight of the newest sample in the running means of the LP's and a node's time
SMOOTHING = 0.05


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
    docstring); ``limit``: never above this many (0: never); ``rate``: the hit rate needed where
    an LP costs one node."""

    def __init__(self, limit: int, rate: float) -> None:
        self.limit, self.rate = limit, rate
        self.classes: dict[int, _Class] = {}
        self.tries = self.hits = 0
        self.lp_seconds: float | None = None  # running mean of one LP
        self.node_seconds: float | None = None  # of the time between two nodes, LPs left out
        self.last: float | None = None  # when the last node was met
        self.spent = 0.0  # LP time since then

    def cost(self) -> float:
        """The LP's time in nodes (1 until both have been measured)."""
        if self.lp_seconds is None or not self.node_seconds:
            return 1.0
        return self.lp_seconds / self.node_seconds

    def wants(self, unstable: int) -> bool:
        self._tick()
        if self.limit <= 0 or unstable > self.limit:
            return False
        needed = self.rate * self.cost()
        if needed > 1.0:
            return False
        entry = self.classes.setdefault(unstable // CLASS_WIDTH, _Class())
        entry.seen += 1
        if entry.count < PROBE or entry.hits >= needed * entry.tries:
            return True
        return entry.seen >= entry.next_probe

    def pause(self) -> None:
        """The search stops taking nodes for a while (a pool's worker between two slices): the
        wait until the next node is not a node's time."""
        self.last = None

    def _tick(self) -> None:
        """A node is met: the time since the last one, less the LPs', enters the mean."""
        now = time.perf_counter()
        if self.last is not None:
            self.node_seconds = _mean(self.node_seconds, max(now - self.last - self.spent, 0.0))
        self.last, self.spent = now, 0.0

    def drops(
        self, network: Network, domain: Domain, node: BabNode, deadline: float | None
    ) -> bool:
        """Whether ``node`` is let through (:meth:`wants`) and shown empty by the LP."""
        if not self.wants(node.unstable):
            return False
        began = time.perf_counter()
        empty = proven_empty(network, domain, node.bounds, deadline)
        seconds = time.perf_counter() - began
        self.spent += seconds
        self.lp_seconds = _mean(self.lp_seconds, seconds)
        self.record(node.unstable, empty)
        return empty

    def record(self, unstable: int, empty: bool) -> None:
        """The LP's answer on a node ``wants`` let through."""
        entry = self.classes[unstable // CLASS_WIDTH]
        entry.count += 1
        entry.tries = DECAY * entry.tries + 1.0
        entry.hits = DECAY * entry.hits + float(empty)
        if empty or entry.count <= PROBE:
            entry.wait = 1
        else:
            entry.wait = min(2 * entry.wait, MAX_WAIT)
        entry.next_probe = entry.seen + entry.wait
        self.tries += 1
        self.hits += int(empty)


def _mean(mean: float | None, sample: float) -> float:
    return sample if mean is None else (1.0 - SMOOTHING) * mean + SMOOTHING * sample


__all__ = ["CLASS_WIDTH", "DECAY", "MAX_WAIT", "PROBE", "SMOOTHING", "EmptyLpGate"]
