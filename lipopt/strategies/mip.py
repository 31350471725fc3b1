"""The MIP strategy: one model of the query, maximised (paper §5, app. D).

Bounds on every pre-activation and backward variable, the forward model's tangent bounds from
sub-networks where planned, the model, start points (attack and pattern climb, a given point)
whose attained value becomes the cutoff ``objective >= L``, then the model whole (with its
refinements), or as a union: the ℓ1 candidates, or two halves of a sign or gate split.
"""

from __future__ import annotations

import time

import numpy as np

from lipopt.bounds.interval import NetworkBounds
from lipopt.bracket import Bracket, closed, contradicts, wrong_bound
from lipopt.formulation import ModelSpec, build
from lipopt.formulation.l2 import first_breakpoints
from lipopt.formulation.objective import set_cutoff
from lipopt.formulation.products import gate_products
from lipopt.heuristics.starts import attack_witness
from lipopt.heuristics.witness import Witness, attains, below, best_witness
from lipopt.plan.nodes import Mip
from lipopt.query import Query
from lipopt.search.subnets import budget_for, subnet_tangent_bounds
from lipopt.solvers import NoBoundError, SolveOptions, Solver, SolverFailure, get
from lipopt.status import Status
from lipopt.strategies import refine
from lipopt.strategies.context import Context
from lipopt.strategies.decompose import decomposed
from lipopt.strategies.floor import carrying, floor_bracket
from lipopt.strategies.halves import (
    binary_split,
    gate_halves,
    gate_split_neuron,
    sign_halves,
    sign_split_entry,
)
from lipopt.strategies.l2_outer import outer_approximation
from lipopt.strategies.refine import (
    ModelProblem,
    Solved,
    model_stats,
    refinement_message,
    solve_status,
)


def run_mip(node: Mip, query: Query, limit: float | None, ctx: Context) -> Bracket:
    """Answer ``query`` by the model of ``node`` within ``limit`` seconds. Where the solver
    fails or proves nothing in time, the error carries what the bounds and the start points
    proved (:func:`lipopt.strategies.floor.floor_bracket`)."""
    config, say = node.config, ctx.say
    adapter = get(config.solver)
    call_start = start = time.perf_counter()
    net_bounds = query.bounds(config.bounds)
    say(f"{config.bounds} bounds: {net_bounds.unstable_count} unstable neurons")
    timings = {"bounds": time.perf_counter() - start}
    found: list[Witness] = []
    try:
        clock = (limit, call_start)
        return _built_and_solved(node, query, clock, adapter, net_bounds, found, timings, ctx)
    except (SolverFailure, NoBoundError) as err:  # the time up to the error counts as solving
        rest = time.perf_counter() - call_start - sum(timings.values())
        timings["solve"] = timings.get("solve", 0.0) + max(rest, 0.0)
        carrying(err, floor_bracket(query, net_bounds, next(iter(found), None), timings))
        raise


def _built_and_solved(
    node: Mip,
    query: Query,
    clock: tuple[float | None, float],
    adapter: Solver,
    net_bounds: NetworkBounds,
    found: list[Witness],
    timings: dict[str, float],
    ctx: Context,
) -> Bracket:
    """The rest of :func:`run_mip` after the bounds (``clock``: the limit and when the call
    started): tangent bounds, the model (if its build fits in the time left),
    the start points (put in ``found``), the solve; each stage's seconds into ``timings``."""
    config, say = node.config, ctx.say
    limit, call_start = clock
    tangent = None
    if node.subnets:
        tangent, _ = subnet_tangent_bounds(
            query.network, query.domain, net_bounds, query.norm, adapter, budget_for(limit), say
        )
        timings["bounds"] = time.perf_counter() - call_start
    _check_build_fits(query, limit, call_start, ctx)
    start = time.perf_counter()
    lip = build(
        query.network, query.domain, query.seed, query.norm, net_bounds,
        ModelSpec(not config.exact, node.decompose, node.formulation, tangent,
                  quadratic=node.quadratic_rows, ball_row=node.quadratic_rows),
    )  # fmt: skip
    timings["build"] = time.perf_counter() - start
    start_witness = _start_witness(node, query, limit, call_start, timings, ctx)
    found.extend([] if start_witness is None else [start_witness])
    if limit is not None:  # the bounds, the build and the attack came out of the limit
        spent = time.perf_counter() - call_start
        limit = max(limit - spent, ctx.policy.min_solve_share * limit)
    relax = not config.exact
    say(
        f"{node.formulation.value} model: {lip.stats['variables']} variables, "
        f"{lip.stats['binaries']} binaries; solving {'LP relaxation' if relax else 'MIP'} "
        f"with {adapter.name}{f' (for at most {limit:.3g} s)' if limit else ''}..."
    )
    options = SolveOptions(
        time_limit=limit, rel_gap=config.gap if config.gap else SolveOptions.rel_gap,
        threads=config.threads, verbose=config.verbose, stop=ctx.stop,
        options=_large_model_options(query, adapter.name, limit, ctx),
    )  # fmt: skip
    problem = ModelProblem(
        query, lip, net_bounds, adapter, options,
        None if limit is None else time.perf_counter() + limit, config.max_refinements,
        config.gap, np.random.default_rng(config.random_seed), say, config.workers,
    )  # fmt: skip
    return _answer(node, problem, timings, start_witness, ctx)


def _weights(query: Query) -> int:
    """The network's nonzero weights, what a model's size and build time follow (the rows hold
    only these; dense layers: every weight)."""
    return sum(layer.nonzeros for layer in query.network.affine_layers)


def _check_build_fits(query: Query, limit: float | None, call_start: float, ctx: Context) -> None:
    """Refuse to start a build that cannot end within the limit (Pyomo's build cannot be
    interrupted): :class:`NoBoundError`, the bounds then answer."""
    if limit is None:
        return
    left = limit - (time.perf_counter() - call_start)
    weights = _weights(query)
    needs = weights * ctx.policy.build_seconds_per_weight
    if needs > left:
        raise NoBoundError(
            f"the model of {weights} weights takes about {needs:.0f} s to build, more "
            f"than the {max(left, 0.0):.1f} s left of the time limit"
        )


def _large_model_options(
    query: Query, solver: str, limit: float | None, ctx: Context
) -> dict[str, object]:
    """The solver's options for a model too large for its presolve to keep the time limit
    (:data:`lipopt.policy.PRESOLVE_SECONDS_PER_WEIGHT`), else none."""
    policy = ctx.policy
    if limit is None:
        return {}
    presolve = _weights(query) * policy.presolve_seconds_per_weight
    if presolve <= policy.presolve_limit_share * limit:
        return {}
    return dict(policy.large_model_options.get(solver, {}))


def _answer(
    node: Mip,
    problem: ModelProblem,
    timings: dict[str, float],
    start_witness: Witness | None,
    ctx: Context,
) -> Bracket:
    """The built model maximised: the ℓ2 model by outer approximation, as a union where planned
    and possible, else whole."""
    lip, net_bounds, query = problem.lip, problem.net_bounds, problem.query
    if lip.squared:
        first = first_breakpoints(net_bounds.input_grad_lower, net_bounds.input_grad_upper)
        return outer_approximation(problem, first, timings, start_witness)
    if lip.candidates:
        products = None
        if node.products and query.c is not None:  # planned for a fixed c only
            products = gate_products(query.network, query.c, net_bounds.states)
        return decomposed(problem, timings, start_witness, products, ctx.policy)
    entry = sign_split_entry(lip, net_bounds) if node.split == "sign" else None
    if entry is not None:
        halves = sign_halves(problem, entry)
        return binary_split(problem, timings, start_witness, halves, ctx.policy)
    neuron = gate_split_neuron(lip, net_bounds) if node.split == "gate" else None
    if neuron is not None:
        halves = gate_halves(problem, neuron)
        return binary_split(problem, timings, start_witness, halves, ctx.policy)
    if node.split == "gate":
        ctx.say("gate split: no unstable neuron in the first layer; solving the model whole")
    return _whole(node, problem, timings, start_witness)


def _start_witness(
    node: Mip,
    query: Query,
    limit: float | None,
    call_start: float,
    timings: dict[str, float],
    ctx: Context,
) -> Witness | None:
    """The best attained point before the MIP: the attack's (where planned) and the given
    start point's, each verified; its value becomes the cutoff."""
    config, found = node.config, None
    if node.attack:
        start = time.perf_counter()
        climb_by = None if limit is None else call_start + ctx.policy.attack_limit_share * limit
        found = attack_witness(query, ctx.policy, config.random_seed, climb_by)
        timings["attack"] = time.perf_counter() - start
        if found is not None:
            ctx.say(f"attack: {found.norm_value:.6g} attained; the MIP must beat it")
    if config.start_point is not None and config.exact:
        start = time.perf_counter()
        given = best_witness(
            query.network, query.domain, query.seed, query.norm, [config.start_point],
            np.random.default_rng(0), False,
        )  # fmt: skip
        # checking the start point is part of finding the cutoff, as the attack is
        timings["attack"] = timings.get("attack", 0.0) + time.perf_counter() - start
        if given is not None and (found is None or given.norm_value > found.norm_value):
            found = given
            ctx.say(f"start point: {given.norm_value:.6g} attained; the MIP must beat it")
    return found


def _whole(
    node: Mip, problem: ModelProblem, timings: dict[str, float], start_witness: Witness | None
) -> Bracket:
    """The model whole, under the start witness's cutoff, refined."""
    lip, config = problem.lip, node.config
    start = time.perf_counter()
    cutoff = None if start_witness is None else below(start_witness.norm_value)
    set_cutoff(lip.model, cutoff)
    try:
        solved = refine.solve_refined(
            problem, problem.options, not config.exact, problem.say, cutoff
        )
    finally:
        set_cutoff(lip.model, None)  # the returned model is the plain problem
    if solved.upper is None:
        raise NoBoundError(
            f"the solver stopped ({solved.first.termination.value}) without a proven bound; "
            "give it more time (--time-limit)"
        )
    witness, proof = _witness(problem, solved, start_witness, config.random_seed)
    timings["solve"] = solved.solve_seconds
    timings["verify"] = time.perf_counter() - start - solved.solve_seconds
    return _bracket(node, problem, solved, witness, proof, timings)


def _witness(
    problem: ModelProblem, solved: Solved, start_witness: Witness | None, random_seed: int
) -> tuple[Witness | None, Witness | None]:
    """The best attained point, and the same point where it certifies the solve's optimum
    (the refinement's witness, or a start point in a full-dimensional region); without either,
    the solver's point or random points, verified."""
    witness = proof = solved.witness
    if start_witness is not None and (
        witness is None or start_witness.norm_value > witness.norm_value
    ):
        witness = start_witness  # the MIP found nothing better than the attack's point
        proof = witness if witness.certified_pattern else None
    if witness is None:
        query, rng = problem.query, np.random.default_rng(random_seed)
        witness = best_witness(
            query.network, query.domain, query.seed, query.norm, solved.points, rng
        )
    return witness, proof


def _bracket(
    node: Mip,
    problem: ModelProblem,
    solved: Solved,
    witness: Witness | None,
    proof: Witness | None,
    timings: dict[str, float],
) -> Bracket:
    upper = float(solved.upper)  # type: ignore[arg-type]
    lower = witness.norm_value if witness is not None else None
    if lower is not None and lower > upper:
        if contradicts(upper, lower):  # a proof below a fact: the solver's numerics failed
            raise carrying(
                SolverFailure(wrong_bound(solved.first.solver, upper, lower)),
                floor_bracket(problem.query, problem.net_bounds, witness, timings),
            )
        upper = lower  # within the solvers' tolerance: the attained value is a fact
    status = solve_status(node.config.mode, node.config.gap, solved.last)
    if solved.cut_off:  # nothing reaches the cutoff: upper is the cutoff, below the attained
        status = Status.OPTIMAL if closed(upper, lower) else Status.GAP_LIMIT  # (unless above)
    exact = status == Status.OPTIMAL and attains(upper, proof)
    return Bracket(
        upper=upper,
        lower=lower,
        witness=None if witness is None else witness.point,
        status=status,
        exact_certified=exact,
        model_stats=model_stats(problem.lip),
        timings=timings,
        solver=solved.first.solver,
        nodes=solved.nodes if solved.nodes > 0 else None,
        refinements=solved.refinements,
        message=refinement_message(solved.refinements),
        model=problem.lip,
    )
