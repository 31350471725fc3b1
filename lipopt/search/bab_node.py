"""The values of the activation branch and bound (:mod:`lipopt.search.activation_bab`): its
options, a node ``D_S`` of the search, what a part's MIP answers for one, the attained value
the search starts from, and what it proved. Here so that the search and the dispatch of its
parts to other processes (:mod:`lipopt.search.bab_pool`) share them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.constrained import Neuron
from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.bounds.sign_order import chosen_order
from lipopt.bounds.sign_shortlist import SignShortlist
from lipopt.bracket import closed
from lipopt.domain import Domain
from lipopt.heuristics.attack import gradient_attack
from lipopt.heuristics.witness import Witness, best_witness, value_at
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.query import Query
from lipopt.status import Status

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ActivationBabOptions:
    """Knobs of the activation branch and bound.

    Attributes:
        gap: stop when the largest open upper bound is at most ``lower (1 + gap)``.
        node_limit: stop after this many nodes were expanded (None: no limit).
        mip_at: hand a node with at most this many unstable neurons to ``solve_part``.
        attack_restarts, attack_steps: the starting gradient attack (0 restarts: none).
        branching: one of :data:`BRANCHING`; ``"auto"``: ``"score"`` where the root has at
            least ``score_from`` unstable neurons with a kink, else ``"layer"``.
        score_from: see ``branching``.
        slope_iterations: slope-search steps of each node's Jacobian bound (0: chords).
        prefix_share: the share of the search's time the margin LPs on nodes whose first
            layers are stable may take (1: every such node is checked).
        split_cuts: tighten each child's ranges over the input-space cut its split implies
            (:mod:`lipopt.bounds.split_cuts`).
        sign_group: with the ℓ∞ input norm, a node taken from the heap is first bounded by
            :func:`~lipopt.bounds.sign_groups.sign_group_bound` with groups of this many
            gradient entries, and filed again where that is lower (0: never).
        sign_group_probe, sign_group_min_gain: after ``sign_group_probe`` of those bounds,
            they stop where they lowered the nodes' bounds by less than ``sign_group_min_gain``
            (relative) on average.
        sign_order: the groups are consecutive runs of this permutation of the entries (None:
            their own order).
        sign_order_swaps, sign_order_share: with ``sign_order_swaps >= 0`` the search chooses
            ``sign_order`` on its root (:func:`~lipopt.bounds.sign_order.chosen_order`, at
            most that many swaps, within ``sign_order_share`` of the time left); negative:
            it keeps ``sign_order``.
        dense_below: the nodes' bounds hold every sparse weight matrix of at most this many
            entries dense (0: as stored): their products have few rows, where scipy.sparse's
            cost per call outweighs the entries; the sign-group bound, with thousands of rows,
            keeps them sparse.
        heap_bytes: the open nodes hold at most this many bytes of bounds; past it the lowest
            are parked (:mod:`lipopt.search.bab_heap`; None: no cap).
        empty_lp_at, empty_lp_rate: a node taken from the heap with at most ``empty_lp_at``
            unstable neurons may first be checked by
            :func:`~lipopt.bounds.split_empty.proven_empty`, and is dropped where its
            sub-domain is shown empty; :class:`~lipopt.search.bab_empty.EmptyLpGate` decides,
            from how often that LP found nodes of its size empty (at least ``empty_lp_rate``
            times the LP's cost in nodes, of the recent tries; 0: every node; ``empty_lp_at``
            0: never).
        rng_seed: seeds the attack and the fallback samples.
    """

    gap: float = 1e-9
    node_limit: int | None = None
    mip_at: int = 0
    attack_restarts: int = 8
    attack_steps: int = 100
    branching: str = "layer"
    score_from: int = 0
    slope_iterations: int = 0
    prefix_share: float = 1.0
    split_cuts: bool = False
    sign_group: int = 0
    sign_group_probe: int = 16
    sign_group_min_gain: float = 0.0
    sign_order: tuple[int, ...] | None = None
    sign_order_swaps: int = -1
    sign_order_share: float = 1.0
    dense_below: int = 0
    heap_bytes: int | None = None
    empty_lp_at: int = 0
    empty_lp_rate: float = 0.0
    rng_seed: int = 0


@dataclass(frozen=True)
class BabNode:
    """One sub-domain ``D_S``: its splits (neuron, True for ``z >= 0``), its bounds, its
    certified upper bound on the objective, its count of unstable neurons and how many of the
    first hidden layers (all stable) the margin LP showed to meet ``D`` in a full-dimensional
    set (:meth:`_Search.check_prefix`); ``grouped``: its bound already holds the sign-group
    bound (:meth:`_Search.regroup`); ``signs``: the sign vectors its sign-group bound starts
    from (:class:`~lipopt.bounds.sign_shortlist.SignShortlist`, listed by its parent, or its
    own once bounded; None: every one)."""

    splits: tuple[tuple[Neuron, bool], ...]
    bounds: NetworkBounds
    upper: float
    unstable: int
    checked: int = 0
    grouped: bool = False
    signs: SignShortlist | None = None


@dataclass
class ActivationBabOutcome:
    """What the activation branch and bound proved.

    Attributes:
        upper: certified upper bound on the constant (:mod:`lipopt.search.activation_bab`),
            never below ``lower``.
        lower: the best value attained, at ``witness``; ``certified``: that point's region was
            shown full-dimensional by the margin LP.
        status: OPTIMAL (closed), GAP_LIMIT (within a gap wider than the exact tolerance),
            TIME_LIMIT (deadline), INTERRUPTED (node limit), UPPER_BOUND (finished, but a leaf
            the margin LP left undecided, or a ``solve_part`` answer, keeps it open beyond the
            exact tolerance, or no attained value was certified).
        nodes: nodes expanded; pruned: nodes dropped by their upper bound; leaves: fixed-pattern
            nodes checked; empty: sub-domains shown empty or lower-dimensional; solved: nodes
            handed to ``solve_part``; regrouped: nodes filed again with a lower sign-group
            bound; parked: nodes whose bounds the heap dropped under its cap (rebuilt when
            reached); root_upper, root_unstable: the root's bound and count.
    """

    upper: float
    lower: float
    witness: FloatArray | None
    certified: bool
    status: Status
    nodes: int
    pruned: int
    leaves: int
    empty: int
    solved: int
    regrouped: int
    parked: int
    seconds: float
    root_upper: float
    root_unstable: int


#: what ``solve_part`` answers for a node, given the best value attained so far (which it
#: need only beat): a proven upper bound over ``D_S``, an attained value, and where (None: no
#: point)
PartAnswer = tuple[float, float, Witness | None]
SolvePart = Callable[[BabNode, float], PartAnswer | None]


def start_witness(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm,
    options: ActivationBabOptions,
    deadline: float | None = None,
) -> Witness | None:
    """An attained value to start from: the best of the domain's centre and a short gradient
    attack (fixed c) or the best of 64 samples (an output norm), each through the margin LP
    (:func:`best_witness`)."""
    rng = np.random.default_rng(options.rng_seed)
    lower, upper = domain.bounding_box()
    inside = getattr(domain, "interior_point", None)  # a polytope's centre may lie outside it
    candidates = [(lower + upper) / 2.0 if inside is None else inside]
    if isinstance(seed, OutputNorm):
        points = domain.sample(64, rng)
        values = [value_at(network, p, seed, norm) for p in points]
        candidates.append(points[int(np.argmax(values))])
    elif options.attack_restarts > 0:
        point, _ = gradient_attack(
            network, domain, np.asarray(seed, dtype=np.float64), norm,
            options.attack_restarts, options.attack_steps, rng, pool=200, deadline=deadline,
        )  # fmt: skip
        candidates.append(point)
    return best_witness(network, domain, seed, norm, candidates, rng, deadline=deadline)


def ended_status(
    stopped: str, upper: float, attained: tuple[float, bool], within_gap: bool
) -> Status:
    """How a search that proved ``upper`` ended (see :class:`ActivationBabOutcome`):
    ``stopped`` is ``"time"``, ``"nodes"`` or ``"done"``; ``attained``: its best value and
    whether the margin LP certified it; ``within_gap``: ``upper`` is within the search's gap of
    that value."""
    if stopped == "time":
        return Status.TIME_LIMIT
    if stopped == "nodes":
        return Status.INTERRUPTED
    lower, certified = attained
    if not certified:
        return Status.UPPER_BOUND
    if closed(upper, lower):  # every strategy's exactness (a part MIP's bound, e.g.
        return Status.OPTIMAL  # CBC's, may sit a few 1e-9 above the value it attains)
    return Status.GAP_LIMIT if within_gap else Status.UPPER_BOUND


def with_sign_order(
    options: ActivationBabOptions, query: Query, root: NetworkBounds, deadline: float | None
) -> ActivationBabOptions:
    """``options`` with the sign groups' order chosen on the root's bounds
    (:func:`~lipopt.bounds.sign_order.chosen_order`, seeded by ``rng_seed``, its swaps within
    ``sign_order_share`` of the time left) where ``sign_order_swaps >= 0`` and the search
    bounds nodes by sign groups (the ℓ∞ input norm, more entries than one group holds)."""
    size = options.sign_group
    if options.sign_order_swaps < 0 or size <= 0 or query.norm is not InputNorm.LINF:
        return options
    if query.network.input_dim <= size:  # one group: its order changes nothing
        return options
    now = time.perf_counter()
    until = None if deadline is None else now + options.sign_order_share * max(deadline - now, 0.0)
    budget = (size, options.sign_order_swaps, until)
    rng = np.random.default_rng(options.rng_seed)
    choice = chosen_order(query.network, root, query.seed, budget, rng)
    return replace(options, sign_order=choice.order)


__all__ = [
    "ActivationBabOptions",
    "ActivationBabOutcome",
    "BabNode",
    "PartAnswer",
    "SolvePart",
    "ended_status",
    "start_witness",
    "with_sign_order",
]
