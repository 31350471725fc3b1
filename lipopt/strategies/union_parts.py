"""A union of input sets (:class:`~lipopt.domain.Disjunction`), answered part by part.

The paper's Theorem 1 makes the local Lipschitz constant over an open set the supremum of the
gradient's dual norm over it, so over ``X_1 ∪ ... ∪ X_k`` it is ``max_i L(X_i)``: the brackets
``lower_i <= L(X_i) <= upper_i`` give ``max_i lower_i <= L <= max_i upper_i``, the lower one
attained at the witness of the part that attains it. The union is exact when that bracket
closes, which needs only the parts that could hold the maximum to be exact.
"""

from __future__ import annotations

import time
from dataclasses import replace

from lipopt.bracket import Bracket, add_timings
from lipopt.config import OWN
from lipopt.plan.nodes import UnionParts
from lipopt.query import Query
from lipopt.status import Status
from lipopt.strategies.context import Context


def run_union_parts(node: UnionParts, query: Query, limit: float | None, ctx: Context) -> Bracket:
    """Each part a sub-question with an equal share of the time left; the brackets merged."""
    parts = query.domain.parts  # type: ignore[union-attr]
    start = time.perf_counter()
    found: list[Bracket] = []
    for i, part in enumerate(parts):
        left = None if limit is None else max(limit - (time.perf_counter() - start), 1e-3)
        share = None if left is None else left / (len(parts) - i)
        ctx.say(f"input set {i + 1} of {len(parts)}: {part.describe()}")
        own = {name: getattr(node.config, name) for name in OWN}
        config = node.config.sub(**{**own, "time_limit": share})
        found.append(ctx.runner.solve(replace(query, domain=part), config, ctx))
    return merged(found)


def merged(brackets: list[Bracket]) -> Bracket:
    """``max`` of the uppers and of the attained lowers; optimal when that bracket closes and
    every part that could beat the lower one finished, else the first such part's status."""
    attained = [b for b in brackets if b.lower is not None]
    best = max(attained, key=lambda b: float(b.lower or 0.0), default=None)
    upper = max(b.upper for b in brackets)
    lower = None if best is None else best.lower
    open_parts = [
        b for b in brackets if b.status != Status.OPTIMAL and (lower is None or b.upper > lower)
    ]
    status = open_parts[0].status if open_parts else Status.OPTIMAL
    timings: dict[str, float] = {}
    for b in brackets:
        timings = add_timings(timings, b.timings)
    solvers = sorted({b.solver for b in brackets})
    nodes = [b.nodes for b in brackets if b.nodes is not None]
    return Bracket(
        upper=upper,
        lower=lower,
        witness=None if best is None else best.witness,
        status=status,
        exact_certified=best is not None and best.exact_certified and best.upper >= upper,
        model_stats={},
        timings=timings,
        solver=", ".join(solvers),
        nodes=sum(nodes) if nodes else None,
        refinements=sum(b.refinements for b in brackets),
        message=f"the maximum over {len(brackets)} input sets (paper Theorem 1)",
    )
