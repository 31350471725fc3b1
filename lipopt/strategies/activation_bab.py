"""The activation branch and bound as a strategy (``bab=True``): the search of
:mod:`lipopt.search.activation_bab` within the time limit, its outcome as a bracket.

Its upper bound is the largest of the open parts' Jacobian bounds and the closed parts' values
(the parts cover the domain); its lower bound a value attained at a point whose region the
margin LP certified, so a closed search is exact and a stopped one a certified bracket. The
part MIPs are solved side by side on ``workers`` forked processes or on the Dask cluster of
``scheduler`` (:mod:`lipopt.strategies.bab_pool`); with one worker, in turn in this process.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from lipopt.bracket import FINISHED, Bracket, add_timings, meet
from lipopt.heuristics.starts import attack_witness
from lipopt.heuristics.witness import Witness, value_at
from lipopt.plan.nodes import ActivationBab, BabAfter
from lipopt.policy import Policy
from lipopt.progress import counted
from lipopt.query import Query
from lipopt.search.activation_bab import ActivationBabOutcome, SolvePart, activation_bab_on
from lipopt.search.activation_rules import supports_parts
from lipopt.solvers import NoBoundError, SolverFailure
from lipopt.strategies.bab_parts import part_solver
from lipopt.strategies.bab_pool import (
    DaskParts,
    LocalParts,
    LocalSlices,
    PartSettings,
    open_pool,
)
from lipopt.strategies.context import Context

#: how the answer names its solver
SOLVER = "activation branch and bound (Jacobian bounds, HiGHS LPs and {solver} MIPs on small parts)"


def run_activation_bab(
    node: ActivationBab, query: Query, limit: float | None, ctx: Context
) -> Bracket:
    """Answer ``query`` by branch and bound on the activations within ``limit`` seconds."""
    return _searched(node, query, limit, ctx, None)


def run_bab_after(node: BabAfter, query: Query, limit: float | None, ctx: Context) -> Bracket:
    """``node.first`` within ``node.share`` of ``limit``; unless it finished (or too little time
    is left), the branch and bound for the rest from its best point. Both brackets answer the
    same question, so their meet is one: the smaller proven upper bound, the larger attained
    lower bound."""
    began = time.perf_counter()
    assert limit is not None  # the planner makes this node only under a time limit
    try:
        first = ctx.runner.run(node.first, query, node.share * limit, ctx)
    except (SolverFailure, NoBoundError) as err:
        if err.bracket is None:
            raise
        first = err.bracket
    left = limit - (time.perf_counter() - began)
    if first.status in FINISHED or left < ctx.policy.min_bab_seconds:
        return first
    ctx.say(
        f"unfinished at {node.share:.0%} of the time limit: the activation branch and bound "
        f"for the {left:.1f} s left, from the value {first.lower or 0.0:.6g} attained"
    )
    start = _witness_of(first, query)
    after = _searched(node.bab, query, left, ctx, start)
    met = meet([first, after])
    timings = add_timings(first.timings, after.timings)
    note = (
        f"the plan stopped at {node.share:.0%} of the time limit with [{_shown(first.lower)}, "
        f"{first.upper:.6g}]; the activation branch and bound after it: [{_shown(after.lower)}, "
        f"{after.upper:.6g}]; the better bounds of both kept"
    )
    message = f"{met.message}; {note}" if met.message else note
    return replace(met, timings=timings, message=message, model=None)


def _shown(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _witness_of(bracket: Bracket, query: Query) -> Witness | None:
    """The bracket's witness as a start of the search (its value recomputed here)."""
    if bracket.witness is None or bracket.lower is None:
        return None
    point = np.asarray(bracket.witness, dtype=np.float64)
    value = value_at(query.network, point, query.seed, query.norm)
    return Witness(point, value, bracket.exact_certified)


def _searched(
    node: ActivationBab, query: Query, limit: float | None, ctx: Context, start: Witness | None
) -> Bracket:
    """The search within ``limit``, from ``start`` or else from the attack's point."""
    ctx.say("activation branch and bound: Jacobian bounds on each part...")
    began = time.perf_counter()
    deadline = None if limit is None else began + limit
    solve_part: SolvePart | None = None
    parts = None
    if node.options.mip_at > 0 and supports_parts(query):  # first: a cluster error at once
        refinements = ctx.policy.bab_part_refinements
        solve_part = part_solver(query, deadline, node.solver, refinements=refinements)
        slices = ctx.policy.bab_slice_seconds
        settings = PartSettings(node.solver, refinements, deadline, ctx.say, slices)
        parts = open_pool(query, settings, node.workers, node.scheduler)
        ctx.say(_pool_line(parts))
    try:
        if start is None:
            start = _start(node, query, limit, ctx)
        attack_seconds = time.perf_counter() - began
        found = activation_bab_on(
            query, options=node.options, deadline=deadline, start=start,
            solve_part=solve_part if parts is None else parts,
        )  # fmt: skip
    finally:
        if parts is not None:
            parts.close()
    ctx.say(
        f"activation branch and bound: {counted(found.nodes, 'part')}, "
        f"{found.pruned} pruned, {counted(found.leaves, 'leaf LP')}, "
        f"bracket [{found.lower:.6g}, {found.upper:.6g}] after {found.seconds:.1f} s"
    )
    bracket = _bracket(found, node.solver)
    return replace(bracket, timings={"attack": attack_seconds, **bracket.timings})


def _pool_line(parts: LocalParts | DaskParts | None) -> str:
    """Where the part MIPs are solved (a progress line)."""
    if isinstance(parts, DaskParts):
        where = f"activation branch and bound: part MIPs on the Dask cluster at {parts.address}"
        return where + parts.note()
    if isinstance(parts, LocalSlices):
        return f"activation branch and bound: parts and part MIPs on {parts.count} processes"
    if isinstance(parts, LocalParts):
        return f"activation branch and bound: part MIPs on {parts.count} processes"
    return "activation branch and bound: part MIPs in this process, in turn"


def _start(node: ActivationBab, query: Query, limit: float | None, ctx: Context) -> Witness | None:
    """The MIP strategy's start point (the gradient attack, the best samples and the pattern
    climb, verified), with the policy's ``bab_attack_restarts`` searches, for a fixed c, within
    its share of the limit; then, where :func:`_full_attack_pays`, again with the MIP's
    ``attack_restarts`` (the race's MIP racer ran that one), the better point kept. None for an
    output norm or where the node has no attack (the search then starts from its own short
    attack)."""
    if not query.fixed_c or not node.attack:
        return None
    short = replace(ctx.policy, attack_restarts=ctx.policy.bab_attack_restarts)
    by = None if limit is None else time.perf_counter() + short.attack_limit_share * limit
    found = attack_witness(query, short, node.options.rng_seed, by)
    if _full_attack_pays(query, ctx.policy):
        full = attack_witness(query, ctx.policy, node.options.rng_seed, by)
        if full is not None and (found is None or full.norm_value > found.norm_value):
            found = full
    if found is not None:
        ctx.say(f"attack: {found.norm_value:.6g} attained")
    return found


def _full_attack_pays(query: Query, policy: Policy) -> bool:
    """The network has at most ``bab_full_attack_max_entries`` hidden neurons x inputs (the
    size of the attack's flip Jacobians per search): there the full attack is cheap."""
    network = query.network
    return sum(network.hidden_widths) * network.input_dim <= policy.bab_full_attack_max_entries


def _bracket(found: ActivationBabOutcome, solver: str) -> Bracket:
    """The outcome as a bracket (no model was built)."""
    stats = {
        "variables": 0,
        "constraints": 0,
        "binaries": 0,
        "unstable_neurons": found.root_unstable,
        "bab_nodes": found.nodes,
        "bab_pruned": found.pruned,
        "bab_leaves": found.leaves,
        "bab_parts_solved": found.solved,
        "bab_regrouped": found.regrouped,
        "bab_parked": found.parked,
    }
    witness = found.witness
    return Bracket(
        upper=found.upper,
        lower=None if witness is None else found.lower,
        witness=witness,
        status=found.status,
        exact_certified=found.certified and witness is not None,
        model_stats=stats,
        timings={"bab": found.seconds},
        solver=SOLVER.format(solver=solver),
        message=(
            f"activation branch and bound: {counted(found.nodes, 'part')}, {found.pruned} "
            f"pruned; the root's Jacobian bound was {found.root_upper:.6g}"
        ),
    )
