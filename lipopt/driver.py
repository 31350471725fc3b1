"""The driver: runs a plan's nodes, each by its strategy, and builds the one result users see.

``answer(...)`` is the life of one query: check it (:func:`lipopt.config.configure`), plan it
(:func:`lipopt.plan.plan`), run the plan (:meth:`Driver.run`, dispatching on the node's type),
and turn the :class:`~lipopt.bracket.Bracket` into a :class:`~lipopt.result.LipschitzResult`
(:func:`to_result`, the only place one is built). Strategies ask sub-questions through the
:class:`Driver` they receive in their context, never through the public facade.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lipopt.bracket import Bracket, closed, contradicts, status_note, wrong_bound
from lipopt.config import LEVER_DEFAULTS, SolveConfig
from lipopt.configure import configure
from lipopt.domain import Disjunction, Domain, L2Ball, ball_part
from lipopt.heuristics.witness import Witness
from lipopt.kinks import is_inside_a_region
from lipopt.lazy import defer_scipy_extras, load_for_solving
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.plan import DomainSplit, Facts, Mip, Node, Race, RegionSearch, facts_here, plan
from lipopt.plan.nodes import ActivationBab, BabAfter, UnionParts
from lipopt.plan.planner import uses_l2, with_bab_after
from lipopt.policy import Policy
from lipopt.progress import Say, silent
from lipopt.query import Query
from lipopt.result import LipschitzResult
from lipopt.solvers import NoBoundError, SolverFailure
from lipopt.solvers.registry import available, is_auto
from lipopt.status import Status
from lipopt.strategies.activation_bab import run_activation_bab, run_bab_after
from lipopt.strategies.context import Context, StopHook
from lipopt.strategies.domain_split import run_domain_split
from lipopt.strategies.floor import capped_by_root, floor_bracket, kept_after, quick_witness
from lipopt.strategies.mip import run_mip
from lipopt.strategies.race import run_race
from lipopt.strategies.region_search import run_regions
from lipopt.strategies.union_parts import run_union_parts

Strategy = Callable[[Any, Query, "float | None", Context], Bracket]

#: node type -> the strategy that runs it
STRATEGIES: dict[type, Strategy] = {
    Mip: run_mip,
    RegionSearch: run_regions,
    DomainSplit: run_domain_split,
    Race: run_race,
    ActivationBab: run_activation_bab,
    BabAfter: run_bab_after,
    UnionParts: run_union_parts,
}


@dataclass(frozen=True)
class Budget:
    """The time of one question: its ``limit`` in seconds (None: none) from ``started`` on
    (:func:`time.perf_counter`); with ``reserve`` (a user's question) the strategies stop
    early enough for the work after them (:meth:`~lipopt.policy.Policy.for_strategies`: what
    is spent already, less the finish reserve); a sub-question's strategies get its limit."""

    limit: float | None
    started: float = field(default_factory=time.perf_counter)
    reserve: bool = False

    def spent(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.started

    def left(self) -> float | None:
        """Seconds left of the limit (None: no limit)."""
        return None if self.limit is None else self.limit - self.spent()

    def for_strategies(self, policy: Policy) -> float | None:
        """The limit the strategies run under, from now."""
        if not self.reserve:
            return self.limit
        return policy.for_strategies(self.limit, self.spent())


class Driver:
    """Runs nodes and sub-questions (the strategies' :class:`~lipopt.strategies.context.Runner`)."""

    def run(self, node: Node, query: Query, limit: float | None, ctx: Context) -> Bracket:
        """Run ``node`` by its strategy within ``limit`` seconds."""
        return STRATEGIES[type(node)](node, query, limit, ctx)

    def solve(self, query: Query, config: SolveConfig, ctx: Context) -> Bracket:
        """A sub-question: ``query`` under ``config``, within ``config.time_limit`` from now."""
        return self.within(query, config, ctx, Budget(config.time_limit))

    def within(self, query: Query, config: SolveConfig, ctx: Context, budget: Budget) -> Bracket:
        """Plan and run ``query`` under the checked ``config`` within ``budget``: the one path
        of every question and sub-question."""
        node = plan(query, config, here(ctx.policy, config, query), ctx.policy)
        if budget.reserve:  # the question a user asked (a sub-question never gets it)
            node = with_bab_after(node, query, config, ctx.policy)
            load_for_solving(_has_l2_ball(query.domain), models=not _starts_with_search(node))
        return self.run(node, query, budget.for_strategies(ctx.policy), ctx)


DRIVER = Driver()


def here(policy: Policy, config: SolveConfig, query: Query) -> Facts:
    """This machine's facts; the solvers a plan may pick by itself (with ``solver="auto"``:
    the race's where the formulations may race, the ℓ2 solver for the ℓ2 norm) are checked
    only there."""
    picks: set[str] = set()
    if is_auto(config.solver) and config.formulation is None:
        picks |= set(policy.auto_race_solvers.values())
    if is_auto(config.solver) and uses_l2(query):
        picks.add(policy.auto_l2_solver)
    return facts_here(frozenset(picks))


def _starts_with_search(node: Node) -> bool:
    """The plan is the region search, not raced: no model is built before it stops (then
    Pyomo is imported with the first model, :data:`lipopt.lazy.SEARCH_MODULES`)."""
    return isinstance(node, RegionSearch) and node.race_now is None


def _has_l2_ball(domain: Domain) -> bool:
    """An ℓ2 ball is the domain's, or one of its union's parts' (their margins need
    :data:`lipopt.lazy.BALL_MODULES`)."""
    parts = domain.parts if isinstance(domain, Disjunction) else (domain,)
    return any(isinstance(ball_part(part), L2Ball) for part in parts)


def context(progress: Say | None, policy: Policy, stop: StopHook | None = None) -> Context:
    """The context of a query asked by a user (no racer hook outside a racer)."""
    return Context(progress or silent, policy, DRIVER, stop)


def answer(
    network: Network,
    domain: Domain,
    norm: InputNorm | str,
    objective_args: tuple[Any, Any],
    levers: dict[str, Any],
    progress: Say | None,
) -> LipschitzResult:
    """The life of one query: check, plan, run, and the result. ``objective_args`` is
    ``(c, output_norm)``; ``levers`` are :func:`lipopt.lipschitz`'s options (unset ones at
    their defaults)."""
    unknown = sorted(set(levers) - set(LEVER_DEFAULTS))
    if unknown:  # what Python says of lipschitz() called with that keyword
        raise TypeError(f"lipschitz() got an unexpected keyword argument {unknown[0]!r}")
    if progress is not None and not callable(progress):  # e.g. progress=True
        raise TypeError(
            f"progress must be a function taking a message (e.g. print), not "
            f"{type(progress).__name__} {progress!r}"
        )
    started = time.perf_counter()
    defer_scipy_extras()  # before a solver check imports Pyomo (Gurobi's does), loading after
    policy = Policy.current()
    levers = {**LEVER_DEFAULTS, **levers}
    query, config = configure(network, domain, norm, objective_args, levers, policy)
    ctx = context(progress, policy)
    # the limit bounds the whole call: loading and the work after the strategies count too
    budget = Budget(config.time_limit, started, reserve=True)
    try:
        bracket = DRIVER.within(query, config, ctx, budget)
    except (SolverFailure, NoBoundError) as err:
        if err.bracket is None:  # nothing proven on the way: the interval bounds' bracket
            err.bracket = propagated_floor(query, None, {})
        bracket = kept_after(None, err, ctx.say)
    bracket = with_a_lower(bracket, query)
    if config.exact:
        bracket = capped_by_root(bracket, query, ctx.say)
    hint = takeover(config.solver, bracket.status)
    if hint:
        ctx.say(hint)
        bracket = replace(bracket, message=f"{bracket.message}; {hint}")
    return to_result(honest(bracket, query), query)


#: why an answer the solvers call optimal is reported as ``upper_bound``
NOT_PROVEN_EXACT = (
    "not proven exact: the solver's optimum sits on a kink shared by several neurons (the "
    "network is not in general position here) and no input attaining it was found; the "
    "constant lies in [lower, value]"
)


def honest(bracket: Bracket, query: Query) -> Bracket:
    """``optimal`` only when ``value`` is proven to be the constant: ``lower`` meets it
    (:func:`~lipopt.bracket.closed`) and is attained at a point inside a full-dimensional linear
    region (certified by the margin LP, or :func:`~lipopt.kinks.is_inside_a_region`), so
    ``lower <= L <= value`` pins ``L``. Otherwise ``upper_bound``, with the reason."""
    if bracket.status != Status.OPTIMAL:
        return bracket
    witness = bracket.witness
    if witness is not None and closed(bracket.upper, bracket.lower):
        if bracket.exact_certified or is_inside_a_region(query.network, query.domain, witness):
            return replace(bracket, exact_certified=True)
    message = f"{bracket.message}; {NOT_PROVEN_EXACT}" if bracket.message else NOT_PROVEN_EXACT
    return replace(bracket, status=Status.UPPER_BOUND, exact_certified=False, message=message)


def with_a_lower(bracket: Bracket, query: Query) -> Bracket:
    """``bracket`` with an attained lower bound where it has none (a search stopped before any
    point was verified): the value at the centre or a few sampled points
    (:func:`~lipopt.strategies.floor.quick_witness`)."""
    if bracket.lower is not None:
        return bracket
    found = quick_witness(query)
    if found is None:
        return bracket
    if contradicts(bracket.upper, found.norm_value):  # the bound is wrong: bound propagation's
        floor = propagated_floor(query, found, bracket.timings)
        reason = wrong_bound(bracket.solver, bracket.upper, found.norm_value)
        return replace(floor, status=Status.SOLVER_ERROR, message=reason)
    upper = max(bracket.upper, found.norm_value)
    return replace(bracket, lower=found.norm_value, witness=found.point, upper=upper)


def propagated_floor(query: Query, witness: Witness | None, timings: dict[str, float]) -> Bracket:
    """The bracket linear bound propagation and the Jacobian-norm bound prove, where no
    strategy left one (:func:`~lipopt.strategies.floor.floor_bracket`)."""
    return floor_bracket(query, query.bounds(), witness, timings)


def takeover(solver: str, status: Status) -> str:
    """Which other installed solvers could take over from a failed explicit ``solver`` ("" for
    ``auto``, whose race already runs two, and for any other status)."""
    if is_auto(solver) or status != Status.SOLVER_ERROR:
        return ""
    others = [name for name in available() if name != solver.strip().lower()]
    return f"installed solvers that could take over: {', '.join(others)}" if others else ""


def solve_entry(
    network: Network, domain: Domain, entry: dict[str, Any], stop: StopHook | None = None
) -> Bracket:
    """A racer's question as :func:`lipopt.lipschitz`'s keywords (with ``norm`` and ``c``),
    silently, its MIPs reporting to ``stop`` (what a race's racer runs)."""
    arguments = {k: v for k, v in entry.items() if k not in ("norm", "c", "output_norm")}
    load_for_solving(_has_l2_ball(domain))  # before configure, whose solver checks may import
    policy = Policy.current()
    query, config = configure(
        network, domain, entry.get("norm", "linf"), (entry.get("c"), entry.get("output_norm")),
        {**LEVER_DEFAULTS, **arguments}, policy,
    )  # fmt: skip
    return DRIVER.within(query, config, context(None, policy, stop), Budget(config.time_limit))


def to_result(bracket: Bracket, query: Query) -> LipschitzResult:
    """The one place a :class:`LipschitzResult` is built: ``value`` is the proven upper bound."""
    return LipschitzResult(
        value=bracket.upper,
        lower=bracket.lower,
        upper=bracket.upper,
        status=bracket.status,
        witness=bracket.witness,
        exact_certified=bracket.exact_certified,
        model_stats=bracket.model_stats,
        timings=bracket.timings,
        solver=bracket.solver,
        norm=query.norm.value,
        c=query.c,
        output_norm=query.output_norm,
        nodes=bracket.nodes,
        refinements=bracket.refinements,
        message=bracket.message or status_note(bracket),
        model=bracket.model,
    )


__all__ = [
    "DRIVER", "Budget", "Driver", "SolveConfig", "answer", "honest", "solve_entry", "status_note",
    "to_result",
]  # fmt: skip
