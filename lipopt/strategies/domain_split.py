"""The domain split strategy: branch and bound on the input box (:mod:`lipopt.search.split`), each
part that bounds cannot settle answered by the part's plan (a *union*: paper Theorem 1,
``L(X) = max_p L(X_p)`` for ``X = ∪ X_p``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from lipopt.bracket import Bracket
from lipopt.domain import Box
from lipopt.heuristics.witness import Witness, attains
from lipopt.plan.nodes import DomainSplit, Mip
from lipopt.progress import counted
from lipopt.query import Query
from lipopt.search.split import SplitOutcome, SplitProblem, branch_and_bound
from lipopt.status import Status
from lipopt.strategies.context import Context
from lipopt.strategies.refine import refinement_message
from lipopt.verify import Dimension, check_region


@dataclass(frozen=True)
class PartSolver:
    """Solves the question on one part of the box (picklable: worker processes run it)."""

    node: Mip
    query: Query
    ctx: Context

    def __call__(self, part: Box, limit: float | None) -> Bracket:
        query = replace(self.query, domain=part)
        result = self.ctx.runner.run(self.node, query, limit, self.ctx)
        return replace(result, model=None)  # the Pyomo model is not needed after solving


def _no_solver(complete: bool) -> str:
    """The solver field where no part reached a solver: the bounds closed the question, or
    the time ran out while bounding the parts."""
    if complete:
        return "none (bounds sufficed)"
    return "none (the time ran out while the parts were bounded)"


def run_domain_split(node: DomainSplit, query: Query, limit: float | None, ctx: Context) -> Bracket:
    """Answer ``query`` by splitting its box (an ℓ∞ ball as its box) within ``limit``."""
    domain = query.domain
    box = domain if isinstance(domain, Box) else domain.as_box()  # type: ignore[union-attr]
    start = time.perf_counter()
    deadline = None if limit is None else start + limit
    config = node.part.config
    problem = SplitProblem(
        query.network, box, query.seed, query.norm, config.bounds,
        PartSolver(node.part, replace(query, domain=box), ctx.quiet()),
    )  # fmt: skip
    rng = np.random.default_rng(config.random_seed)
    outcome = branch_and_bound(problem, node.options, deadline, ctx.say, rng)
    return _bracket(query, box, outcome, time.perf_counter() - start)


def _bracket(query: Query, box: Box, outcome: SplitOutcome, total: float) -> Bracket:
    solved = outcome.solved
    timings = {
        key: sum(r.timings.get(key, 0.0) for r in solved)
        for key in ("bounds", "build", "solve", "verify")
    }
    timings["bounds"] += outcome.bound_seconds
    timings["split"] = max(total - sum(timings.values()), 0.0)
    stats = {
        key: sum(r.model_stats.get(key, 0) for r in solved)
        for key in ("variables", "constraints", "binaries", "unstable_neurons")
    }
    stats.update(
        parts=outcome.parts_made, parts_solved=len(solved), parts_pruned=outcome.parts_pruned
    )
    pattern = query.network.activation_pattern(outcome.witness)
    full = check_region(query.network, pattern, box).dimension is Dimension.FULL
    witness = Witness(outcome.witness, outcome.lower, full)
    gap_open = any(r.status == Status.GAP_LIMIT for r in solved)
    status = (
        (Status.GAP_LIMIT if gap_open else Status.OPTIMAL)
        if outcome.complete
        else Status.TIME_LIMIT
    )
    exact = outcome.complete and attains(outcome.upper, witness)
    refinements = sum(r.refinements for r in solved)
    split_note = (
        f"domain split into {counted(outcome.parts_made, 'part')}: {len(solved)} solved by MIP, "
        f"{outcome.parts_pruned} pruned by bounds"
    )
    # what the user must know of the answer itself comes first, as on every other path
    notes = [refinement_message(refinements), split_note]
    return Bracket(
        upper=outcome.upper,
        lower=outcome.lower,
        witness=outcome.witness,
        status=status,
        exact_certified=exact,
        model_stats=stats,
        timings=timings,
        solver=solved[0].solver if solved else _no_solver(outcome.complete),
        nodes=sum(r.nodes or 0 for r in solved),
        refinements=refinements,
        message="; ".join(note for note in notes if note),
    )
