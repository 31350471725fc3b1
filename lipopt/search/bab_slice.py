"""A slice of the activation branch and bound below one node, run by a worker process of the
search's pool (:class:`~lipopt.search.bab_pool.SlicePool`; issue 45 item 4: the nodes' own
bounding on every core, not only the part MIPs).

The worker keeps one search (:class:`SliceWorker`) for the whole query: each slice empties its
heap, files the node it was sent, takes the best value attained so far as its cutoff, and runs
the serial search's steps best-first (:meth:`~lipopt.search.activation_bab._Search.regroup`,
:meth:`~lipopt.search.activation_bab._Search.split`, which bounds, prunes, closes and drops the
children as the serial search does) until the slice's time is up or the heap is empty. A node
with at most ``mip_at`` unstable neurons is not expanded here but given back, for the pool's
part MIPs. What it gives back (:class:`~lipopt.search.bab_pool.Expanded`) is sound as the
serial search's state is: every step keeps the open nodes, the given-back parts, the closed
leaves and the pruned and dropped nodes a cover of the node's ``D_S``, each open node's bound
at most the node's; the cutoff is a value attained in ``D``, so a node bounded within the gap
of it cannot hold a larger maximum.

Between slices the worker keeps what the serial search learns as it goes (the sign-group
bounds' running gain, the margin LPs' share of its time), so a slice is not a fresh start.
"""

from __future__ import annotations

import time

from lipopt.query import Query
from lipopt.search.activation_bab import _Search
from lipopt.search.bab_node import ActivationBabOptions, BabNode
from lipopt.search.bab_pool import Expanded, prune_open


def run_slice(
    search: _Search, node: BabNode, cutoffs: tuple[float, float], until: float
) -> Expanded:
    """The search below ``node`` from the cutoff ``lower`` until ``until`` (a
    ``time.perf_counter()`` time), its heap is empty, or its best bound is below ``floor``, the
    best one the sending search holds (module docstring); ``cutoffs = (lower, floor)``."""
    lower, floor = cutoffs
    search.heap.clear()
    search.lower, search.point, search.certified = lower, None, False
    search.settled = search.unclosed = 0.0
    search.nodes = search.pruned = search.leaves = search.empty = search.regrouped = 0
    search.deadline = until
    search.empty_gate.pause()  # the time since the last slice is no node's
    held: list[BabNode] = []  # parts, for the pool's MIPs
    search.heap.push(node)
    while search.heap and time.perf_counter() < until:
        top = search.heap.top()
        if prune_open(search):  # the heap's largest bound: every open node goes
            break
        if top.upper < floor:  # the sending search holds a better node: back to best first
            break
        taken = search.take()
        regrouped = None if taken is None else search.regroup(taken)
        if regrouped is None:
            continue
        if regrouped.unstable <= search.options.mip_at:
            held.append(regrouped)
            continue
        search.nodes += 1
        search.split(regrouped)
    left = tuple(held) + search.heap.nodes()
    counts = (search.nodes, search.pruned, search.leaves, search.empty, search.regrouped)
    point = search.point
    return Expanded(
        left, search.lower, point, search.certified, search.settled, search.unclosed, counts
    )


class SliceWorker:
    """The search one worker process keeps for a query's slices, made at its first slice with
    the options the search sent (its branching rule already resolved)."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self.search: _Search | None = None

    def run(
        self,
        node: BabNode,
        cutoffs: tuple[float, float],
        options: ActivationBabOptions,
        until: float,
    ) -> Expanded:
        """One slice (:func:`run_slice`)."""
        if self.search is None:
            query = self.query
            problem = (query.network, query.domain, query.seed, query.norm)
            self.search = _Search(problem, options, until)
        return run_slice(self.search, node, cutoffs, until)


__all__ = ["SliceWorker", "run_slice"]
