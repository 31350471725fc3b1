"""The activation branch and bound as a strategy (``bab=True``): the search of
:mod:`lipopt.search.activation_bab` within the time limit, its outcome as a bracket.

Its upper bound is the largest of the open parts' Jacobian bounds and the closed parts' values
(the parts cover the domain); its lower bound a value attained at a point whose region the
margin LP certified, so a closed search is exact and a stopped one a certified bracket.
"""

from __future__ import annotations

import time

from lipopt.bracket import Bracket
from lipopt.plan.nodes import ActivationBab
from lipopt.progress import counted
from lipopt.query import Query
from lipopt.search.activation_bab import ActivationBabOutcome, activation_bab
from lipopt.strategies.context import Context

#: how the answer names its solver
SOLVER = "activation branch and bound (Jacobian bounds, HiGHS LPs)"


def run_activation_bab(
    node: ActivationBab, query: Query, limit: float | None, ctx: Context
) -> Bracket:
    """Answer ``query`` by branch and bound on the activations within ``limit`` seconds."""
    ctx.say("activation branch and bound: Jacobian bounds on each part...")
    deadline = None if limit is None else time.perf_counter() + limit
    found = activation_bab(
        query.network, query.domain, query.seed, query.norm,
        options=node.options, deadline=deadline,
    )  # fmt: skip
    ctx.say(
        f"activation branch and bound: {counted(found.nodes, 'part')}, "
        f"{found.pruned} pruned, {counted(found.leaves, 'leaf LP')}, "
        f"bracket [{found.lower:.6g}, {found.upper:.6g}] after {found.seconds:.1f} s"
    )
    return _bracket(found)


def _bracket(found: ActivationBabOutcome) -> Bracket:
    """The outcome as a bracket (no model was built)."""
    stats = {
        "variables": 0,
        "constraints": 0,
        "binaries": 0,
        "unstable_neurons": found.root_unstable,
        "bab_nodes": found.nodes,
        "bab_pruned": found.pruned,
        "bab_leaves": found.leaves,
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
        solver=SOLVER,
        message=(
            f"activation branch and bound: {counted(found.nodes, 'part')}, {found.pruned} "
            f"pruned; the root's Jacobian bound was {found.root_upper:.6g}"
        ),
    )
