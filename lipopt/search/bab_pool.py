"""The activation branch and bound with its part MIPs solved by a pool of workers.

:func:`run_pooled` is :meth:`lipopt.search.activation_bab._Search.run` with the parts (nodes of
at most ``mip_at`` unstable neurons) sent to a :class:`PartPool` (forked processes, a Dask
cluster: :mod:`lipopt.strategies.bab_pool`) instead of solved in turn: the search keeps
expanding the other open nodes while parts are in flight, and folds each answer in as the
serial search does (:meth:`~lipopt.search.activation_bab._Search.fold`).

**Soundness.** The open nodes, the parts in flight, the closed leaves, the answered parts and
the pruned nodes cover ``D`` at every step (a node leaves the heap only to be split into
children that cover it, to be pruned, closed or dropped as before, or to fly). A node in flight
keeps its certified ``U_S`` in the search's upper bound until its answer arrives
(:func:`~lipopt.search.activation_bab.activation_bab` takes the largest ``U_S`` of
``search.flying``), so the bracket is sound whenever the search stops. A node in flight whose
``U_S`` falls to ``lower (1 + gap)`` is pruned there (its answer, when it comes, only offers its
attained value). A part whose worker died (:data:`PartLost.LOST`) is sent again, up to
:data:`~lipopt.policy.BATCH_ATTEMPTS` times (a batch query's attempts); after that its node's
``U_S`` is kept as an unclosed upper bound — never dropped. A part the solver proved nothing on
(None) is split, as the serial search splits it.

**Slices.** A pool that also takes slices (:class:`SlicePool`, forked processes) is sent the
open nodes with more unstable neurons too: a worker runs the search below the node for a short
slice (:mod:`lipopt.search.bab_slice`) and gives back the nodes it left open, with what it
proved (:class:`Expanded`); they join the heap. The search here then only dispatches. The
nodes given back, with the parts the slice pruned, closed and dropped, cover the node's
``D_S``, so the cover above holds; a node in flight keeps its ``U_S`` as a part does.

**The same answer.** Each part's answer is a proven bound and an attained value on its own
``D_S``, whichever worker gives it and whenever; only the cutoff (the best value attained when
it was sent) and the order of pruning differ with the workers. So a search that finishes closes
on the same exact constant (within the exact tolerance) for any pool, and for the serial search.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from lipopt import policy
from lipopt.search.bab_heap import HeapNode, NodeHeap
from lipopt.search.bab_node import ActivationBabOptions, BabNode, PartAnswer

#: seconds to wait for a part's answer in one go while nothing else can be done (the deadline
#: is checked between waits)
WAIT_SECONDS = 0.5


class PartLost(Enum):
    """A part's worker died before it answered."""

    LOST = "lost"


@dataclass(frozen=True)
class Expanded:
    """What a slice of the search below one node proved (:mod:`lipopt.search.bab_slice`).

    Attributes:
        open_nodes: the nodes it left open, its parts (at most ``mip_at`` unstable neurons)
            among them; with what it pruned, closed and dropped they cover the node's ``D_S``.
        lower, point, certified: the best value it attained, where, and whether the margin LP
            certified that point's region (``point`` None: nothing above the value it was sent).
        settled, unclosed: the largest bound of what it pruned or closed, and of its leaves the
            margin LP could not decide (as :class:`~lipopt.search.activation_bab._Search`'s).
        counts: nodes expanded, pruned, leaves, empty and regrouped in the slice.
    """

    open_nodes: tuple[HeapNode, ...]
    lower: float
    point: NDArray[np.float64] | None
    certified: bool
    settled: float
    unclosed: float
    counts: tuple[int, int, int, int, int]


#: what a pool gives back for a part: its answer, None (the solver proved nothing: split it) or
#: :data:`PartLost.LOST`; for a slice, :class:`Expanded` or :data:`PartLost.LOST`
PartOutcome = PartAnswer | Expanded | None | PartLost


@runtime_checkable
class PartPool(Protocol):
    """Workers that solve parts: ``submit`` sends one (with the best value attained so far, its
    cutoff), ``answers`` gives back those that finished, waiting up to ``timeout`` seconds for
    the first."""

    def free(self) -> int:
        """How many parts it takes now without queueing them."""
        ...

    def submit(self, tag: int, node: BabNode, lower: float) -> None: ...

    def answers(self, timeout: float) -> list[tuple[int, PartOutcome]]: ...


@runtime_checkable
class SlicePool(PartPool, Protocol):
    """A :class:`PartPool` whose workers also run slices of the search below a node (with the
    search's ``options``), giving back :class:`Expanded`."""

    def expand(
        self, tag: int, node: BabNode, cutoffs: tuple[float, float], options: ActivationBabOptions
    ) -> None:
        """Send a slice below ``node``; ``cutoffs``: the best value attained and the largest
        bound left open here (the slice stops below it)."""
        ...


class Searching(Protocol):
    """What :func:`run_pooled` uses of the search
    (:class:`~lipopt.search.activation_bab._Search`)."""

    heap: NodeHeap
    flying: dict[int, BabNode]
    options: ActivationBabOptions
    deadline: float | None
    lower: float
    settled: float
    unclosed: float
    nodes: int
    pruned: int
    leaves: int
    empty: int
    regrouped: int

    def prunable(self, upper: float) -> bool: ...

    def offer(self, value: float, point: NDArray[np.float64] | None, certified: bool) -> None: ...

    def fold(self, node: BabNode, answer: PartAnswer) -> None: ...

    def split(self, node: BabNode) -> None: ...

    def regroup(self, node: BabNode) -> BabNode | None: ...

    def take(self) -> BabNode | None: ...


def run_pooled(search: Searching, pool: PartPool) -> str:
    """Expand best-first, parts sent to ``pool``, until closed or a limit: ``"done"``,
    ``"time"`` or ``"nodes"`` (as the serial run). A stop leaves the parts in flight in
    ``search.flying``, their ``U_S`` counted in the bracket."""
    tags = itertools.count()
    tries: dict[int, int] = {}
    limit = search.options.node_limit
    slicing = isinstance(pool, SlicePool)  # once: a runtime protocol check reads every member
    while search.heap or search.flying:
        _prune(search)
        wait = _waits(search, pool, slicing)
        for tag, outcome in pool.answers(_wait_time(search) if wait else 0.0):
            _land(search, pool, tag, outcome, tries)
        _prune(search)
        if search.deadline is not None and time.perf_counter() >= search.deadline:
            return "time"
        if not search.heap or _waits(search, pool, slicing):
            continue
        if limit is not None and search.nodes >= limit:
            return "nodes"
        popped = search.take()
        if popped is None:  # a parked node whose rebuilt bounds leave its D_S empty
            continue
        sliced = slicing and popped.unstable > search.options.mip_at
        node = popped if sliced else search.regroup(popped)
        if node is None:  # filed again with a lower bound, or pruned
            continue
        if not sliced:  # a slice counts the nodes it expands itself
            search.nodes += 1
        if sliced or node.unstable <= search.options.mip_at:
            tag = next(tags)
            tries[tag] = 1
            search.flying[tag] = node
            _send(search, pool, tag, node)
        else:
            search.split(node)
    return "done"


def _send(search: Searching, pool: PartPool, tag: int, node: BabNode) -> None:
    """A node to the pool: a part to solve, or (a larger one, to a :class:`SlicePool`) a slice
    to run below it."""
    if node.unstable <= search.options.mip_at:
        pool.submit(tag, node, search.lower)
    else:
        assert isinstance(pool, SlicePool)
        floor = search.heap.top().upper if search.heap else 0.0
        pool.expand(tag, node, (search.lower, floor), search.options)


def _waits(search: Searching, pool: PartPool, slicing: bool) -> bool:
    """Nothing to expand now: no open node, or the best one goes to the pool (a part, or any
    node where the pool runs slices) and no worker is free."""
    if not search.heap:
        return bool(search.flying)
    to_pool = slicing or search.heap.top().unstable <= search.options.mip_at
    return to_pool and pool.free() <= 0


def _wait_time(search: Searching) -> float:
    if search.deadline is None:
        return WAIT_SECONDS
    return max(0.0, min(WAIT_SECONDS, search.deadline - time.perf_counter()))


def prune_open(search: Searching) -> bool:
    """Every open node, where the heap's largest bound is within the gap of ``lower``: pruned
    (that bound settled); whether they went."""
    if not search.heap or not search.prunable(search.heap.top().upper):
        return False
    search.pruned += len(search.heap)
    search.settled = max(search.settled, search.heap.top().upper)
    search.heap.clear()
    return True


def _prune(search: Searching) -> None:
    """Every open node and part in flight whose ``U_S`` is within the gap of ``lower``."""
    prune_open(search)
    for tag, node in list(search.flying.items()):
        if search.prunable(node.upper):
            del search.flying[tag]
            search.pruned += 1
            search.settled = max(search.settled, node.upper)


def _land(
    search: Searching, pool: PartPool, tag: int, outcome: PartOutcome, tries: dict[int, int]
) -> None:
    """One part's outcome: folded in; split (None); sent again or kept unclosed (lost)."""
    node = search.flying.pop(tag, None)
    if isinstance(outcome, PartLost):
        if node is None:
            return
        if tries[tag] < policy.BATCH_ATTEMPTS:
            tries[tag] += 1
            search.flying[tag] = node
            _send(search, pool, tag, node)
        else:  # its own bound still covers D_S
            search.unclosed = max(search.unclosed, node.upper)
        return
    if isinstance(outcome, Expanded):
        _merge(search, outcome, node is not None)
        return
    if outcome is None:
        if node is not None:
            search.split(node)
        return
    if node is None:  # pruned while in flight: only its attained value counts
        _, lower, witness = outcome
        if witness is not None:
            search.offer(lower, witness.point, witness.certified_pattern)
        return
    search.fold(node, outcome)


def _merge(search: Searching, expanded: Expanded, open_: bool) -> None:
    """A slice's outcome: its attained value offered, its settled and unclosed bounds and its
    counts added, and the nodes it left open filed (unless its node was pruned in flight: then
    they are pruned too, their bounds being at most its bound)."""
    if expanded.point is not None:
        search.offer(expanded.lower, expanded.point, expanded.certified)
    search.settled = max(search.settled, expanded.settled)
    search.unclosed = max(search.unclosed, expanded.unclosed)
    nodes, pruned, leaves, empty, regrouped = expanded.counts
    search.nodes += nodes
    search.pruned += pruned
    search.leaves += leaves
    search.empty += empty
    search.regrouped += regrouped
    for child in expanded.open_nodes:
        if open_ and not search.prunable(child.upper):
            search.heap.push(child)
        else:
            search.pruned += 1
            search.settled = max(search.settled, child.upper)


__all__ = [
    "Expanded", "PartLost", "PartOutcome", "PartPool", "SlicePool", "prune_open", "run_pooled",
]  # fmt: skip
