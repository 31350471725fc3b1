"""The region search strategy: the linear regions of a box searched directly
(:mod:`lipopt.search.regions`), exact when complete; with a fallback, the rest of the plan finishes
an
unfinished search and the better bounds of both are kept (a *meet*)."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from lipopt.bounds import propagate
from lipopt.bracket import Bracket, add_timings, settle, wrong_bound
from lipopt.domain import Box, LinfBall, Polytope
from lipopt.plan.nodes import DomainSplit, Race, RegionSearch
from lipopt.progress import Say, counted
from lipopt.query import Query
from lipopt.search.regions import RegionOptions, search_regions
from lipopt.search.regions import RegionSearch as Found
from lipopt.solvers import NoBoundError, SolverError, SolverFailure
from lipopt.status import Status
from lipopt.strategies.context import Context
from lipopt.strategies.floor import carrying, floor_bracket, kept_after
from lipopt.strategies.raced import bab_alone


def run_regions(node: RegionSearch, query: Query, limit: float | None, ctx: Context) -> Bracket:
    """Answer ``query`` by the region search of ``node`` (or its guard's race) within ``limit``.

    ``node.race_now`` (where the formulations race): run instead of searching here when at
    least ``auto_region_unstable_share`` of the hidden neurons are unstable. There the search
    rarely finishes (never on the unit boxes of benchmarks/speed.py), and its few seconds and
    the backward probe after it only delayed the race; the backward racer still runs the
    search first, so a search that would finish still answers. The same where the race's
    branch and bound takes it by its count of unstable neurons (:func:`_bab_races`)."""
    domain, say, policy = query.domain, ctx.say, ctx.policy
    # a box, an l-inf ball's box, or a polytope (its rows enter the search's LPs)
    box = domain.as_box() if isinstance(domain, LinfBall) else domain
    assert isinstance(box, (Box, Polytope))  # configure.regions_applicable
    c = np.asarray(query.seed, dtype=np.float64)
    start = time.perf_counter()
    if box is domain:  # the query's own domain: its bounds, kept for the root cap after
        net_bounds = query.bounds(node.bounds)
    else:  # an l-inf ball's box (the same set, bounded as a box)
        net_bounds = propagate(query.network, box, c, method=node.bounds)
    bound_seconds = time.perf_counter() - start
    # the neurons with a kink (an identity neuron never is unstable, nor makes regions)
    hidden = query.network.kinked_count
    unstable = net_bounds.unstable_count
    looks_hard = bool(hidden) and unstable >= policy.auto_region_unstable_share * hidden
    looks_hard = looks_hard or _bab_races(node.race_now, unstable)
    left = None if limit is None else limit - bound_seconds
    time_to_race = left is None or left >= policy.min_race_seconds
    if node.race_now is not None and looks_hard and time_to_race:
        at_once = "the branch and bound" if bab_alone(node.race_now, query) else "racing"
        say(f"{node.bounds} bounds: {unstable} of {hidden} neurons unstable; {at_once} at once")
        race_start = time.perf_counter()
        try:
            result = ctx.runner.run(node.race_now, query, left, ctx)
        except (SolverFailure, NoBoundError) as err:
            timings = {"bounds": bound_seconds, "race": time.perf_counter() - race_start}
            carrying(err, floor_bracket(query, net_bounds, None, timings))
            raise
        return replace(result, timings=add_timings(result.timings, {"bounds": bound_seconds}))
    options = _limits(node, left, few_unstable=bool(hidden) and not looks_hard, ctx=ctx)
    say(f"{node.bounds} bounds: {unstable} unstable neurons; searching regions...")
    try:
        found = search_regions(query.network, box, c, query.norm, net_bounds, options, progress=say)
    except RuntimeError as err:  # the LP solver could not decide a node
        raise SolverError(f"region search: {err}") from err
    _report(found, say)
    timings = {"bounds": bound_seconds, "regions": found.seconds}
    used = time.perf_counter() - start
    if not found.complete and node.fallback is not None and (limit is None or used < limit):
        rest = None if limit is None else limit - used
        try:
            result = ctx.runner.run(node.fallback, query, rest, ctx)
        except SolverError as err:
            if not np.isfinite(found.upper):
                raise
            after = f"the {_fallback_name(node)} after it"
            return kept_after(_searched(found, unstable, timings), err, say, after)
        return with_region_bounds(result, found, timings, _fallback_name(node))
    return _searched(found, unstable, timings)


def _fallback_name(node: RegionSearch) -> str:
    """What answers after an unfinished search, as its messages name it."""
    return "domain split" if isinstance(node.fallback, DomainSplit) else "MIP"


def _bab_races(race: Race | None, unstable: int) -> bool:
    """``race`` has the branch and bound race from ``unstable`` neurons on (its count rule).
    Then the search (it found 1 region in 4.3 s on the digits CNN at radius 0.1, 297
    unstable) and the probe after it only took the branch and bound's time."""
    return race is not None and race.bab_by_count(unstable)


def _limits(
    node: RegionSearch, left: float | None, few_unstable: bool, ctx: Context
) -> RegionOptions:
    """The search's limits: the time left (with a fallback, giving up when at its rate it would
    take over ``auto_region_late_factor`` times it), and with a fallback and few neurons
    unstable the larger node budget (and the larger projection limit)."""
    options = node.options
    if left is not None:
        time_limit = left if options.time_limit is None else min(left, options.time_limit)
        late = ctx.policy.auto_region_late_factor if node.fallback is not None else None
        options = replace(options, time_limit=time_limit, late_factor=late)
    if node.fallback is not None and few_unstable:
        budget = ctx.policy.auto_region_nodes_few_unstable
        projected = ctx.policy.auto_region_projected_limit_few_unstable
        options = replace(options, node_limit=budget, projected_limit=projected)
    return options


def _report(found: Found, say: Say) -> None:
    projected = ""
    if not found.complete and found.explored > 0:
        projected = f" (about {found.nodes / found.explored:.2g} nodes in all at this rate)"
    say(
        f"region search: {counted(found.nodes, 'node')}, {counted(found.regions, 'region')}, "
        f"{'complete' if found.complete else 'stopped'} after {found.seconds:.1f} s{projected}"
    )


def _searched(found: Found, unstable: int, timings: dict[str, float]) -> Bracket:
    """The search's own answer: exact when complete (its witness's region is full-dimensional
    by construction), else its proven bound and best region."""
    lower = found.lower if found.witness is not None else None
    upper = found.upper if lower is None else max(found.upper, lower)
    stats = {
        "variables": 0,
        "constraints": 0,
        "binaries": 0,
        "unstable_neurons": unstable,
        "regions": found.regions,
        "region_nodes": found.nodes,
        "region_lps": found.lps,
    }
    return Bracket(
        upper=upper,
        lower=lower,
        witness=found.witness,
        status=Status.OPTIMAL if found.complete else Status.TIME_LIMIT,
        exact_certified=found.complete and found.witness is not None,
        model_stats=stats,
        timings=timings,
        solver="region search (HiGHS LPs)",
        nodes=found.nodes,
        message=f"linear-region search: {counted(found.regions, 'region')} reached, "
        f"{counted(found.nodes, 'node')}, {counted(found.lps, 'LP')}",
    )


def with_region_bounds(
    result: Bracket, found: Found, timings: dict[str, float], after: str = "MIP"
) -> Bracket:
    """The fallback's answer (``after``: the MIP or the domain split), improved by what the
    unfinished region search proved: both upper bounds are certified (keep the smaller), both
    lower bounds attained (keep the larger). An upper bound below the value the other attained
    is wrong and takes no part (:func:`lipopt.bracket.settle`, the rule of every meet); both
    wrong: a solver error."""
    lower, witness = result.lower, result.witness
    if found.witness is not None and (lower is None or found.lower > lower):
        lower, witness = found.lower, found.witness
    bounds = [result.upper, found.upper]
    settled = settle(bounds, lower)
    sound, met = settled.sound, settled.met
    ending = {
        Status.OPTIMAL: "finished",
        Status.TIME_LIMIT: "stopped at the time limit",
        Status.GAP_LIMIT: "stopped at the gap limit",
    }.get(result.status, f"ended with status {result.status}")
    note = f"region search stopped after {found.nodes} nodes; the {after} took over and {ending}"
    if not sound and lower is not None:  # every bound is below the attained value
        note = f"{note}; {wrong_bound(result.solver, min(bounds), lower)}"
    return replace(
        result,
        upper=settled.upper,
        lower=lower,
        witness=witness,
        status=Status.OPTIMAL if met else result.status if sound else Status.SOLVER_ERROR,
        exact_certified=result.exact_certified or (met and witness is found.witness),
        timings=add_timings(result.timings, timings),
        message=f"{result.message}; {note}" if result.message else note,
    )
