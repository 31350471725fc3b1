"""Exact constant by branch and bound over activation patterns (linear regions).

On a linear region R_A = {x : sign(z(x)) = A} of a ReLU network the gradient of ``c^T f`` is one
vector g_A, so ``L(f, X) = max ||g_A||_{α*}`` over the patterns A whose region meets the
interior of X in a full-dimensional set (paper Theorem 1: the sup of the gradient norm over
points where f is differentiable). This module searches those patterns depth first:

- Neurons are fixed layer by layer. Once layers 1..k-1 are fixed, ``z_k = A_k x + b_k`` is
  affine in x, so fixing a neuron of layer k adds one linear inequality, and a partial pattern
  is *feasible* when the polytope it cuts from the box has an interior point: the LP
  ``max e  s.t.  ±(a_i x + b_i) >= e ||a_i||,  x ∈ box,  0 <= e <= 1`` has ``e > 0``.
- Neurons whose sign is fixed on the whole box (from the propagated bounds, or from the exact
  affine map of a layer once the layers before it are fixed) are never branched on.
- Each node gets a sound upper bound on the gradient norm of every completion of its pattern:
  interval arithmetic through the backward pass (:func:`lipopt.bounds.interval.backward_interval`
  with the node's neuron states); the next layer's signs are re-bounded from the node's partial
  pattern through the CROWN relaxation (:func:`lipopt.bounds.linear.relu_relaxation`).
  A node whose bound does not exceed the best attained value is discarded.
- A leaf (a complete pattern) is checked in numpy: the LP's interior point x must have every
  pre-activation strictly of its pattern's sign. Its gradient norm is then attained in a
  full-dimensional region, so it is a certified lower bound, and x is the witness.

Per-neuron activations ``h = α z + (1 - α) relu(z)`` (:mod:`lipopt.search.kinds`): a pattern
fixes each neuron's sign, and on its region ``h = D z`` with ``D = α + (1 - α) σ``, so the
gradient is ``g_A`` with ``D`` for ``σ`` and the next layer's map composes ``D``; an identity
neuron (``α = 1``) has no kink, so it is never branched on and adds no row.

When the search ends the best leaf is the exact constant. Stopped early (node or time limit)
the certified upper bound is the largest bound of the nodes left open. A leaf whose interior
point fails the numpy check is not taken as a lower bound; its value is kept as an upper-bound
term. A polytope whose LP margin is 0 is taken as empty: regions thinner than about 1e-13 (the
LP's precision) are missed, as the MIP's feasibility tolerance and the brute force miss them.

It pays when the domain holds few linear regions (small balls, low-dimensional boxes) and
costs one small warm-started LP per branch; the MIP is better where regions are many.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lipopt.bounds.interval import NetworkBounds, NeuronState
from lipopt.domain import Box, Polytope
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.progress import counted
from lipopt.search.region_tree import (
    PRUNE_SLACK,
    Backward,
    FeasibilityLP,
    FloatArray,
    Node,
    SearchState,
)

#: seconds between progress messages
PROGRESS_SECONDS = 5.0
#: nodes after which ``projected_limit`` is first checked (then at each doubling)
PROJECTION_START = 500


@dataclass(frozen=True)
class RegionOptions:
    """Limits of the pattern search.

    Attributes:
        node_limit: stop after this many feasible nodes (None: no limit).
        time_limit: stop after this many seconds (None: no limit).
        linear_bound: before a node's LP, tighten its interval gradient bound by one CROWN
            back-substitution of ``∇f`` (:func:`~lipopt.bounds.linear.input_gradient_linear`);
            False keeps the interval bound alone.
        projected_limit: give up early, at :data:`PROJECTION_START` nodes and at each doubling
            after, when the projected size of the whole search exceeds this many nodes (None:
            never). The projection is ``nodes / explored`` (see :class:`RegionSearch`).
        late_factor: give up early too (checked as ``projected_limit``) when at its rate so
            far the whole search would take more than this many times ``time_limit``
            (``elapsed / explored`` seconds in all): for a search with a fallback that can use
            the time better (None: never).
    """

    node_limit: int | None = None
    time_limit: float | None = None
    linear_bound: bool = True
    projected_limit: int | None = None
    late_factor: float | None = None


@dataclass
class RegionSearch:
    """What the search proved.

    Attributes:
        lower: the largest gradient norm attained on a verified full-dimensional region
            (``-inf`` if none was reached).
        witness: an interior point of that region.
        upper: certified upper bound on the constant (equal to ``lower`` when complete).
        complete: every pattern was either reached or discarded by its bound.
        nodes: feasible partial patterns visited; ``lps``: feasibility LPs solved;
            ``regions``: complete patterns reached.
        seconds: wall time.
        explored: share of the pattern tree closed (pruned, infeasible or a complete pattern),
            a node at branching depth ``k`` counting ``2^-k``; 1.0 when ``complete``.
    """

    lower: float
    witness: FloatArray | None
    upper: float
    complete: bool
    nodes: int
    lps: int
    regions: int
    seconds: float
    explored: float = 0.0


class _Walk:
    """The depth-first walk of one search: the open nodes (the larger bound popped first), the
    share ``explored = Σ 2^-depth`` of the tree closed, and whether a limit stopped it (then
    ``open_bound``, the largest bound of a node left open, bounds what was not explored)."""

    def __init__(
        self,
        search: SearchState,
        options: RegionOptions,
        start: float,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.search = search
        self.lp = FeasibilityLP(search.domain)
        self.options = options
        self.start = start
        self.deadline = None if options.time_limit is None else start + options.time_limit
        self.progress = progress
        self.stack: list[Node] = []
        self.next_report = start + PROGRESS_SECONDS
        self.open_bound = -np.inf  # largest bound of a node left unexplored at a limit
        self.stopped = False
        self.explored = 0.0  # Σ 2^-depth over the closed nodes
        self.next_projection = PROJECTION_START
        self.next_late = 0.0  # when the projected time is next checked

    def run(self, root: Node) -> None:
        """Walk the tree from ``root`` until every node is closed or left open at a limit."""
        search = self.search
        self.stack.append(root)
        while self.stack:
            node = self.stack.pop()
            if node.bound <= search.best:
                self.close(node)
                continue
            if self.at_limit():
                self.stopped = True
                self.open_bound = max(self.open_bound, node.bound)
                continue
            if not self.reach(node):
                continue
            search.nodes += 1
            self.report()
            self.expand(node)

    def close(self, node: Node) -> None:
        """The node's subtree is settled (pruned, empty or a complete pattern)."""
        self.explored += 2.0**-node.depth

    def at_limit(self) -> bool:
        """Whether a limit stops the search: time, nodes, or (checked at
        :data:`PROJECTION_START` nodes and each doubling) a projected size ``nodes / explored``
        above ``projected_limit``, or (from then on, also each tenth of the time limit) a
        projected time ``elapsed / explored`` above ``late_factor`` times the limit."""
        options, nodes = self.options, self.search.nodes
        if not self.stopped and nodes >= self.next_projection:
            self.next_projection *= 2
            self.next_late = 0.0  # check the time now too
            # nodes / explored: the tree's size if the rest is like the part already closed
            if options.projected_limit is not None:
                self.stopped = nodes > options.projected_limit * self.explored
        if options.late_factor is not None and self.deadline is not None and not self.stopped:
            now = time.perf_counter()
            if nodes >= PROJECTION_START and now >= self.next_late:
                budget = self.deadline - self.start
                self.next_late = now + budget / 10.0
                # elapsed / explored: the whole search's time at this rate
                self.stopped = now - self.start > options.late_factor * budget * self.explored
        return (
            self.stopped
            or (self.deadline is not None and time.perf_counter() > self.deadline)
            or (options.node_limit is not None and nodes >= options.node_limit)
        )

    def reach(self, node: Node) -> bool:
        """Tighten the node's bound and find an interior point of its polytope (the parent's
        point when it is inside the new row by over 1e-7, else the LP's); False if the node is
        closed instead (pruned, empty, or an LP that cannot decide, whose bound is kept)."""
        search, lp = self.search, self.lp
        if self.options.linear_bound and node.backward is not None:
            node.bound = min(node.bound, search.linear_bound(node.states, node.backward))
            if node.bound <= search.best:
                self.close(node)
                return False
        lp.truncate(node.depth - (node.row is not None))
        if node.row is None:
            return True
        lp.push(*node.row)
        a, b = node.row
        inside = (a @ node.point + b) / np.linalg.norm(a)
        if inside > 1e-7 and node.margin > 1e-7:
            node.margin = min(node.margin, float(inside))
            return True
        try:
            node.margin, point = lp.solve()
        except RuntimeError:  # cannot decide: keep the node's bound, do not drop it
            search.unverified = max(search.unverified, node.bound)
            self.close(node)
            return False
        if point is None or node.margin <= 0.0:
            self.close(node)
            return False
        node.point = point
        return True

    def report(self) -> None:
        """Call ``progress`` every :data:`PROGRESS_SECONDS`."""
        if self.progress is not None and time.perf_counter() >= self.next_report:
            self.next_report = time.perf_counter() + PROGRESS_SECONDS
            search = self.search
            self.progress(
                f"region search: {counted(search.nodes, 'node')}, "
                f"{counted(search.regions, 'region')}, "
                f"best {search.best:.6g}, {len(self.stack)} branches waiting"
            )

    def expand(self, node: Node) -> None:
        """Check a complete pattern; move on to the next layer when the node's layer is fixed;
        else branch on its unstable neuron of the largest impact."""
        search = self.search
        if node.layer == search.hidden:
            search.leaf(node)
            self.close(node)
            return
        free = np.flatnonzero(node.states[node.layer] == NeuronState.UNSTABLE)
        if free.size == 0:
            nxt = search.next_layer(node)
            if nxt.layer < search.hidden:
                search.enter_layer(nxt)
                # the deeper layers' states re-bounded on this node, as for a branch's children
                nxt.bound, nxt.states, nxt.backward = search.child_bounds(
                    nxt, nxt.states[nxt.layer]
                )
            self.stack.append(nxt)
            return
        i = int(free[np.argmax(search.impact(node)[free])])
        self.stack.extend(search.branch(node, i))  # the larger bound is popped first


def search_regions(
    network: Network,
    domain: Box | Polytope,
    c: FloatArray,
    norm: InputNorm | str,
    bounds: NetworkBounds,
    options: RegionOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> RegionSearch:
    """Search the linear regions of ``c^T f`` on a box or polytope for the largest gradient
    dual norm.

    ``bounds`` must be sound pre-activation bounds on the domain (any :mod:`lipopt.bounds`
    method); the result is exact when ``complete`` and a certified bracket otherwise.
    ``progress`` is called every ``PROGRESS_SECONDS`` with the nodes, regions and best value.
    """
    start = time.perf_counter()
    options = options or RegionOptions()
    search = SearchState(network, domain, c, InputNorm.parse(norm), bounds)
    walk = _Walk(search, options, start, progress)
    walk.run(search.root(bounds.states))
    upper = max(search.best, search.unverified, walk.open_bound)
    return RegionSearch(
        lower=search.best,
        witness=search.best_point,
        upper=upper,
        complete=not walk.stopped and search.unverified <= search.best,
        nodes=search.nodes,
        lps=walk.lp.solves,
        regions=search.regions,
        seconds=time.perf_counter() - start,
        explored=walk.explored,
    )


__all__ = [
    "PROGRESS_SECONDS",
    "PROJECTION_START",
    "PRUNE_SLACK",
    "Backward",
    "FloatArray",
    "RegionOptions",
    "RegionSearch",
    "search_regions",
]
