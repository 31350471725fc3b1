"""Branch and bound on the activations: split unstable neurons, bound each part's Jacobian.

A node is a set of splits ``S`` (neurons with a fixed sign) and stands for the sub-domain
``D_S`` of :mod:`lipopt.bounds.constrained`. Splitting a neuron ``(k, i)`` makes two children,
``z_{k,i} >= 0`` and ``z_{k,i} <= 0``, which cover their parent; so the local Lipschitz constant
``L = sup ||∇(c^T f)(x)||_{α*}`` over the differentiable points of the interior of ``D`` is the
largest of the leaves' suprema, at every stage of the tree. Only neurons with a kink are split
and counted (never an identity neuron: :mod:`lipopt.search.kinds`). Each node carries:

* an **upper bound** ``U_S >= sup`` over ``D_S``: :func:`jacobian_norm_bound` on the node's
  bounds (:func:`split_bounds`), which holds for every activation pattern those bounds allow,
  and so for the pattern of every differentiable point of ``D_S``; never above the parent's
  (the child's supremum is at most the parent's); ℓ∞ input: lowered to its (as sound)
  sign-group bound where lower, as it first leaves the heap (:meth:`_Search.regroup`), from the
  sign vectors its parent listed (:func:`shortlist_bound`);
* once no neuron is unstable, **one pattern** ``p``: every differentiable point of ``D_S`` has
  it, so the node's supremum is ``v_p = ||J_p^T c||_{α*}`` if ``p``'s linear region meets the
  interior of ``D`` in a full-dimensional set, and the node holds no such point otherwise. The
  margin LP (:func:`lipopt.verify.check_region`) decides: ``FULL`` gives a point deep inside the
  region, where ``v_p`` is attained (a witness, recomputed there); ``LOWER`` drops the node
  (docs/encoding.md §11); ``UNDECIDED`` keeps ``v_p`` as an upper bound that is not closed.

**Lower bound** ``lower``: the best value attained at a checked point (the caller's witness, or a
short gradient attack and the domain's centre, each through the margin LP; then every closed
leaf). **Upper bound** ``upper``: the largest of ``lower``, the open nodes' ``U_S``, the closed
leaves' ``v_p`` and the bounds that pruned nodes (``U_S <= lower (1 + gap)``): each covers its
part of ``D``, and the parts cover ``D``. The nodes are taken best ``U_S`` first, so ``upper``
falls as the search runs; it stops when the largest open ``U_S`` is within the gap of ``lower``
(the bracket is then closed: status ``optimal``), at the deadline or at the node limit.

A node with at most ``mip_at`` unstable neurons may be handed to the caller's ``solve_part``,
which answers ``(upper, lower, witness)`` for ``D_S`` (or None: keep splitting); it is given
the best attained value, and an upper bound at or below it prunes the part. With a pool of
workers (:mod:`lipopt.search.bab_pool`) such parts are solved several at once while the search
goes on; a part in flight keeps its node's ``U_S`` in ``upper`` until its answer arrives.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.constrained import Neuron, split_bounds
from lipopt.bounds.interval import NetworkBounds, NeuronState, Seed
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.bounds.sign_shortlist import shortlist_bound
from lipopt.bounds.split_cuts import cut_children
from lipopt.bracket import closed
from lipopt.domain import Domain
from lipopt.heuristics.witness import Witness, best_witness, value_at
from lipopt.kinks import is_differentiable_at
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.query import Query
from lipopt.search.activation_rules import (
    BRANCHING,
    branch_neuron,
    check_supported,
    linear_part,
    pattern_value,
    resolved_branching,
)
from lipopt.search.bab_empty import EmptyLpGate
from lipopt.search.bab_heap import NodeHeap, unparked
from lipopt.search.bab_node import (
    ActivationBabOptions,
    ActivationBabOutcome,
    BabNode,
    PartAnswer,
    SolvePart,
    ended_status,
    start_witness,
    with_sign_order,
)
from lipopt.search.bab_pool import PartPool, prune_open, run_pooled
from lipopt.search.kinds import identity_active, unstable_count
from lipopt.verify import Dimension, check_region

FloatArray = NDArray[np.float64]

#: the options of a search not given any
DEFAULT_OPTIONS = ActivationBabOptions()
Problem = tuple[Network, Domain, Seed, InputNorm]  # a search's network, domain, c, input norm


class _Search:
    """The open nodes (a heap on ``-U_S``), the best attained value and what closed nodes and
    pruned nodes leave of the upper bound."""

    def __init__(self, problem: Problem, options: ActivationBabOptions, deadline: float | None):
        network, self.domain, self.seed, self.norm = problem
        self.sparse_network = network  # the sign-group bound's: its many rows pay for sparse
        self.network = network.dense(options.dense_below) if options.dense_below else network
        self.options, self.deadline = options, deadline
        self.heap = NodeHeap(options.heap_bytes)
        self.root: NetworkBounds | None = None  # what parked nodes' bounds are rebuilt from
        self.lower, self.certified = 0.0, False
        self.point: FloatArray | None = None
        self.settled = 0.0  # closed leaves' values and pruned nodes' bounds: covered parts
        self.unclosed = 0.0  # undecided leaves' values, solve_part's upper bounds
        self.nodes = self.pruned = self.leaves = self.empty = self.solved = 0
        self.flying: dict[int, BabNode] = {}  # parts sent to a pool, by tag, until answered
        self.rng = np.random.default_rng(options.rng_seed)
        self.began, self.prefix_seconds = time.perf_counter(), 0.0  # the margin LPs' time
        self.group_tries, self.group_gain = 0, 0.0  # their count, their relative gains summed
        self.regrouped = 0  # nodes filed again with a lower sign-group bound
        self.empty_gate = EmptyLpGate(options.empty_lp_at, options.empty_lp_rate)
        self.problem = (self.network, self.domain, self.seed)  # what parked nodes are rebuilt on

    def offer(self, value: float, point: FloatArray | None, certified: bool) -> None:
        """An attained value (at ``point``): the best so far is kept, and a certified one that
        meets an uncertified best (within the exact tolerance) takes its place."""
        upgrade = certified and not self.certified and closed(value, self.lower)
        if point is not None and (value > self.lower or upgrade):
            self.lower, self.point, self.certified = value, np.asarray(point), certified

    def prunable(self, upper: float) -> bool:
        return upper <= self.lower * (1.0 + self.options.gap)

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def make_node(
        self, splits: dict[Neuron, bool], bounds: NetworkBounds, parent: BabNode | None
    ) -> float:
        """Bound a sub-domain and file it: pruned when its bound cannot beat ``lower``, closed
        at once when no neuron is unstable, dropped when its stable first layers' region holds
        no interior point, else pushed on the heap. Returns its bound."""
        bound = jacobian_norm_bound(
            self.network, self.domain, self.seed, self.norm, bounds=bounds,
            iterations=self.options.slope_iterations,
        )  # fmt: skip
        cap, checked = (np.inf, 0) if parent is None else (parent.upper, parent.checked)
        upper = min(bound.value, cap)
        unstable = unstable_count(self.network, bounds.states)
        signs = None if parent is None else parent.signs
        node = BabNode(tuple(splits.items()), bounds, upper, unstable, checked, signs=signs)
        if self.prunable(node.upper):
            self.pruned += 1
            self.settled = max(self.settled, node.upper)
        elif node.unstable == 0:
            self.close_leaf(node)
        else:
            kept = self.check_prefix(node)
            if kept is None:
                self.empty += 1
            else:
                self.heap.push(kept)
        return upper

    def take(self) -> BabNode | None:
        """The heap's best node, a parked one rebuilt; None: empty (EmptyLpGate) or a leaf."""
        popped = self.heap.pop()
        node = popped if isinstance(popped, BabNode) else unparked(popped, self.problem, self.root)
        if node is not None and node.unstable == 0:  # rebuilt with one pattern left
            self.close_leaf(node)
            return None
        gate = self.empty_gate
        empty = node is None or gate.drops(self.network, self.domain, node, self.deadline)
        self.empty += empty
        return None if empty else node

    def regroup(self, node: BabNode) -> BabNode | None:
        """A node just taken from the heap, with the ℓ∞ input norm: its sign-group bound
        (:func:`shortlist_bound`, groups of the options' ``sign_group`` entries, from the sign
        vectors its parent listed). Where that is below its ``U_S`` the node is filed again with
        it (or pruned by it) and None is returned; else the node to expand, with the list its
        children start from."""
        if node.grouped or not self.grouping():
            return node
        grouping = (self.options.sign_group, self.options.sign_order)
        found = shortlist_bound(self.sparse_network, node.bounds, self.seed, grouping, node.signs)
        bound, node = found[0], replace(node, signs=found[1])
        self.group_tries += 1
        if bound >= node.upper:
            return node
        self.group_gain += 1.0 - bound / node.upper
        self.regrouped += 1
        if self.prunable(bound):
            self.pruned += 1
            self.settled = max(self.settled, bound)
        else:
            kept = replace(node, upper=bound, grouped=True)
            self.heap.push(kept)
        return None

    def grouping(self) -> bool:
        """Whether the sign-group bounds run: ℓ∞ input, a group size, after the probe a gain."""
        options = self.options
        if options.sign_group <= 0 or self.norm is not InputNorm.LINF:
            return False
        probed = self.group_tries >= options.sign_group_probe
        return not probed or self.group_gain >= options.sign_group_min_gain * self.group_tries

    def check_prefix(self, node: BabNode) -> BabNode | None:
        """:meth:`margin_check` within the options' ``prefix_share`` of the search's time so
        far: past it the node is kept unchecked (sound: the check only drops nodes and offers
        points)."""
        began = time.perf_counter()
        if self.prefix_seconds > self.options.prefix_share * (began - self.began):
            return node
        try:
            return self.margin_check(node)
        finally:
            self.prefix_seconds += time.perf_counter() - began

    def margin_check(self, node: BabNode) -> BabNode | None:
        """The margin LP on the polytope of :meth:`linear_part`, which holds ``D_S``: the node
        is dropped when the polytope meets ``D`` in no full-dimensional set (no interior point
        of ``D_S`` is left), and its deep point is tried as a witness."""
        states = identity_active(self.network, node.bounds.states)
        part = linear_part(self.network, states, dict(node.splits), node.checked)
        if part is None:
            return node
        check = check_region(part[0], part[1], self.domain, self.left())
        if check.dimension is Dimension.LOWER:
            return None
        if check.dimension is Dimension.FULL and check.point is not None:
            self.try_point(check.point)
            count = sum(len(m) for m in part[1])
            return replace(node, checked=count)
        return node

    def try_point(self, point: FloatArray) -> None:
        """A point of ``D``: where its value beats ``lower``, its own pattern's deepest point
        (:func:`best_witness`) is offered."""
        if not is_differentiable_at(self.network, point):
            return
        if value_at(self.network, point, self.seed, self.norm) <= self.lower:
            return
        found = best_witness(
            self.network, self.domain, self.seed, self.norm, [point], self.rng, fallback=False,
            deadline=self.deadline,
        )  # fmt: skip
        if found is not None:
            self.offer(found.norm_value, found.point, found.certified_pattern)

    def close_leaf(self, node: BabNode) -> None:
        """A node with one pattern: its value is attained in a full-dimensional region (closed),
        it holds no interior point (dropped), or the margin LP cannot tell (kept, unclosed)."""
        self.leaves += 1
        states = identity_active(self.network, node.bounds.states)
        pattern = [(s == NeuronState.ACTIVE).astype(np.float64) for s in states]
        check = check_region(self.network, pattern, self.domain, self.left())
        if check.dimension is Dimension.LOWER:
            self.empty += 1
            return
        value = pattern_value(self.network, pattern, self.seed, self.norm)
        if check.dimension is Dimension.FULL and check.point is not None:
            attained = value_at(self.network, check.point, self.seed, self.norm)
            self.offer(attained, check.point, True)
            self.settled = max(self.settled, value, attained)
        else:
            self.unclosed = max(self.unclosed, value)

    def expand(self, node: BabNode, solve_part: SolvePart | None) -> None:
        """Hand the node to ``solve_part`` if small enough and it answers, else split it."""
        self.nodes += 1
        if solve_part is not None and node.unstable <= self.options.mip_at:
            answer = solve_part(node, self.lower)
            if answer is not None:
                self.fold(node, answer)
                return
        self.split(node)

    def fold(self, node: BabNode, answer: PartAnswer) -> None:
        """A part's answer: its attained value is offered, and the smaller of its proven bound
        and the node's own (a part MIP stopped early may prove less) covers ``D_S``."""
        self.solved += 1
        upper, lower, witness = answer
        if witness is not None:
            self.offer(lower, witness.point, witness.certified_pattern)
        self.unclosed = max(self.unclosed, min(upper, node.upper))

    def split(self, node: BabNode) -> None:
        """Split the node on the branching rule's neuron: two children that cover it, each
        bounded from the node's bounds (tightened over the split's input-space cut when the
        options ask for it, :func:`cut_children`)."""
        k, i = branch_neuron(node.bounds, self.options.branching, self.network.slopes)
        children: dict[bool, tuple[NetworkBounds, int] | None] = {
            True: (node.bounds, k + 1), False: (node.bounds, k + 1),
        }  # fmt: skip
        if self.options.split_cuts:
            children = cut_children(self.network, node.bounds, (k, i), self.domain.bounding_box())
        for active, child in children.items():
            splits = dict(node.splits)
            splits[(k, i)] = active
            bounds = None if child is None else split_bounds(
                self.network, self.domain, self.seed, splits, child[0], fresh_from=child[1]
            )  # fmt: skip
            if bounds is None:
                self.empty += 1
            else:
                self.make_node(splits, bounds, node)

    def run(self, solve_part: SolvePart | None) -> str:
        """Expand best-first until closed or a limit: ``"done"``, ``"time"`` or ``"nodes"``."""
        limit = self.options.node_limit
        while self.heap:
            if prune_open(self):  # the heap's largest bound: every open node goes
                break
            if self.deadline is not None and time.perf_counter() >= self.deadline:
                return "time"
            if limit is not None and self.nodes >= limit:
                return "nodes"
            node = self.take()
            node = None if node is None else self.regroup(node)
            if node is not None:
                self.expand(node, solve_part)
        return "done"


def activation_bab(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm | str,
    *,
    options: ActivationBabOptions = DEFAULT_OPTIONS,
    deadline: float | None = None,
    start: Witness | None = None,
    solve_part: SolvePart | PartPool | None = None,
) -> ActivationBabOutcome:
    """Bracket (and, run to the end, find) ``max ||∇(c^T f)||_{α*}`` over ``domain`` by branch
    and bound on the activations (module docstring).

    ``seed``: the vector c or an :class:`OutputNorm`; ``deadline``: a ``time.perf_counter()``
    time; ``start``: an attained value to begin with (default: :func:`start_witness`);
    ``solve_part``: answers one part at a time, or a :class:`~lipopt.search.bab_pool.PartPool`
    that solves several at once while the search goes on
    (:func:`~lipopt.search.bab_pool.run_pooled`).
    """
    query = Query(network, domain, InputNorm.parse(norm), seed)
    return activation_bab_on(
        query, options=options, deadline=deadline, start=start, solve_part=solve_part
    )


def activation_bab_on(
    query: Query,
    *,
    options: ActivationBabOptions = DEFAULT_OPTIONS,
    deadline: float | None = None,
    start: Witness | None = None,
    solve_part: SolvePart | PartPool | None = None,
) -> ActivationBabOutcome:
    """:func:`activation_bab` on ``query``, whose root bounds are the ones it keeps
    (:meth:`~lipopt.query.Query.split_root`, which its part MIPs' sign rows read too)."""
    began = time.perf_counter()
    network, domain, seed, norm = query.network, query.domain, query.seed, query.norm
    if options.branching not in BRANCHING:
        raise ValueError(f"unknown branching rule {options.branching!r}; one of {BRANCHING}")
    check_supported(network, domain, seed, norm)
    root = query.split_root()
    if root is None:  # cannot happen for a non-empty domain; kept for the type
        raise ValueError("activation branch and bound: the domain's bounds are empty")
    root_unstable = unstable_count(network, root.states)
    rule = resolved_branching(options.branching, options.score_from, root_unstable)
    witness = start or start_witness(network, domain, seed, norm, options, deadline)
    options = with_sign_order(replace(options, branching=rule), query, root, deadline)
    search = _Search((network, domain, seed, norm), options, deadline)
    if witness is not None:
        search.offer(witness.norm_value, witness.point, witness.certified_pattern)
    search.root = root
    root_upper = search.make_node({}, root, None)
    if isinstance(solve_part, PartPool):
        stopped = run_pooled(search, solve_part)
    else:
        stopped = search.run(solve_part)
    opened = search.heap.top().upper if search.heap else 0.0
    flying = max((node.upper for node in search.flying.values()), default=0.0)
    upper = max(search.lower, search.settled, search.unclosed, opened, flying)
    return ActivationBabOutcome(
        upper=float(upper),
        lower=float(search.lower),
        witness=search.point,
        certified=search.certified,
        status=ended_status(
            stopped, upper, (search.lower, search.certified), search.prunable(upper)
        ),
        nodes=search.nodes,
        pruned=search.pruned,
        leaves=search.leaves,
        empty=search.empty,
        solved=search.solved,
        regrouped=search.regrouped,
        parked=search.heap.parked,
        seconds=time.perf_counter() - began,
        root_upper=float(root_upper),
        root_unstable=root_unstable,
    )


__all__ = [
    "ActivationBabOptions", "ActivationBabOutcome", "BabNode", "PartAnswer", "SolvePart",
    "activation_bab", "activation_bab_on",
]  # fmt: skip
