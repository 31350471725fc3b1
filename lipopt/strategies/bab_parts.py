"""The MIP on one part of the activation branch and bound (its ``solve_part`` hook).

A node of :mod:`lipopt.search.activation_bab` stands for ``D_S = {x ∈ D : z_{k,i}(x) >= 0 for
(k, i) split active, <= 0 for split inactive}`` and carries bounds sound on ``D_S``
(:func:`lipopt.bounds.constrained.split_bounds`). :func:`part_solver` answers such a node by the
model of :func:`lipopt.formulation.build` on those bounds, with **sign rows** on the model's own
pre-activations ``z = W h + b``:

* for every split neuron, its split's sign (``z >= 0`` or ``z <= 0``);
* for every neuron that the node's bounds make stable but the root's do not, its sign.

**Soundness.** Let ``F`` be the set of ``x`` the model admits. (1) ``F ⊆ D_S`` and the model
computes the network there, by induction on the layers: the first layer's ``z`` is exact; an
unstable neuron's big-M rows hold only for ``z ∈ [l, u]`` and then force ``h = relu(z)`` and its
binary to the sign of ``z`` (either one at ``z = 0``); a stable active neuron is ``h = z`` with
``h >= l >= 0`` by its variable's bound, so ``h = relu(z)``; a stable inactive one is ``h = 0``,
and its sign row (or, stable at the root, the root's bounds, sound on all of ``D``) gives
``z <= 0``, so ``h = relu(z)`` again; the next layer's ``z`` is then exact. The split rows put
``x`` in ``D_S``. (2) ``D_S ⊆ F``: the node's bounds hold at every ``x ∈ D_S``, so every big-M
and sign row does. So the model maximises over ``D_S`` exactly, with the true gradient of a
pattern of each point (the paper's model on a smaller domain): the solver's **proven bound** is
an upper bound on the part's supremum, and the refinement loop
(:func:`lipopt.strategies.refine.solve_refined`, no-good cuts on lower-dimensional optima)
gives a point deep inside a full-dimensional region. That point is checked once more here, in
numpy: differentiable, in ``D``, the split signs holding strictly, the value recomputed; only
then is it a lower bound. The model is solved under ``objective >= lower`` (less 1e-6
relative), also for ``lower = 0``: infeasible, it proves the part holds nothing above the
cutoff (an empty part included), which prunes it.

Per-neuron activations ``h = α z + (1 - α) relu(z)`` read the same with ``relu`` replaced by
the activation (the model's ``h`` is exact on an unstable neuron, ``z`` on an active one and
``α z`` on an inactive one, which the sign row again holds to ``z <= 0``); an identity neuron
(``α = 1``) is ACTIVE everywhere, so it never gets a sign row.

Without the sign rows the model admits a superset of ``D_S`` (every ``x ∈ D_S`` still
satisfies every row), so its optimum would still bound the part from above; but a neuron folded
to ``h = 0`` could then have ``z > 0`` at an ``x`` outside ``D_S``, which the model values by a
pattern that is not its own: its optimum need not be attained, and its point is no witness.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lipopt.bounds.interval import NetworkBounds, NeuronState
from lipopt.formulation import LipschitzModel, build
from lipopt.formulation.objective import set_cutoff
from lipopt.formulation.terms import Term, is_constant, linear_map
from lipopt.heuristics.witness import Witness, below, value_at
from lipopt.kinks import is_differentiable_at
from lipopt.lazy import PYOMO, lazy_module
from lipopt.network import Network
from lipopt.query import Query
from lipopt.search.activation_bab import BabNode, PartAnswer, SolvePart
from lipopt.solvers import SolveOptions, SolverError, get
from lipopt.strategies.refine import ModelProblem, solve_refined

pe = lazy_module(PYOMO)


def part_solver(
    query: Query, deadline: float | None, solver: str = "highs", refinements: int = 20
) -> SolvePart:
    """``solve_part`` for :func:`~lipopt.search.activation_bab.activation_bab`: a node's MIP
    under the cutoff ``objective >= lower`` (the search's best attained value), within the time
    left to ``deadline``, with at most ``refinements`` no-good-cut re-solves; None where the
    solver proved nothing."""
    root, adapter = query.split_root(), get(solver)

    def solve_part(node: BabNode, lower: float) -> PartAnswer | None:
        left = None if deadline is None else deadline - time.perf_counter()
        return _solve(query, root, adapter, node, (lower, left), refinements)

    return solve_part


def solve_node(
    query: Query,
    root: NetworkBounds | None,
    solver: str,
    node: BabNode,
    lower_left: tuple[float, float | None],
    refinements: int,
) -> PartAnswer | None:
    """One part's MIP as :func:`part_solver`'s ``solve_part`` answers it, given the root's
    bounds ``root`` (``split_bounds`` with no split), the best value attained ``lower`` and the
    seconds ``left`` (None: no limit; at most 0: None)."""
    return _solve(query, root, get(solver), node, lower_left, refinements)


def _solve(
    query: Query,
    root: NetworkBounds | None,
    adapter: object,
    node: BabNode,
    lower_left: tuple[float, float | None],
    refinements: int,
) -> PartAnswer | None:
    """One part's MIP (see :func:`part_solver`); None without time left."""
    lower, left = lower_left
    if left is not None and left <= 0.0:
        return None
    lip = build(query.network, query.domain, query.seed, query.norm, node.bounds)
    add_sign_rows(lip, query.network, node, root)
    cutoff = below(lower)  # also below 0: an infeasible model then proves the part empty
    set_cutoff(lip.model, cutoff)
    options = SolveOptions(time_limit=left, threads=1)
    problem = ModelProblem(
        query, lip, node.bounds, adapter, options,
        None if left is None else time.perf_counter() + left, refinements, None,
        np.random.default_rng(0), lambda _: None, None,
    )  # fmt: skip
    try:
        solved = solve_refined(problem, options, False, problem.say, cutoff)
    except SolverError:
        return None
    if solved.upper is None:
        return None
    witness = checked_witness(query, node, solved.witness)
    upper = float(solved.upper)
    if witness is None:
        return upper, 0.0, None
    return max(upper, witness.norm_value), witness.norm_value, witness


def pre_activations(
    lip: LipschitzModel, network: Network, states: Sequence[np.ndarray]
) -> list[list[Term]]:
    """The model's pre-activations ``z_k = W_k h_{k-1} + b_k`` per hidden layer, written on its
    own variables (``x``, then ``h{k}``; a stable inactive neuron's ``h`` is ``α z``: 0 for a
    ReLU)."""
    out: list[list[Term]] = []
    h: list[Term] = list(lip.x)
    layers = zip(network.affine_layers[:-1], states, network.slopes)
    for k, (affine, state, alpha) in enumerate(layers, start=1):
        z = linear_map(affine.matrix, h, affine.bias)
        out.append(z)
        h_var = lip.model.component(f"h{k}")
        h = [
            (float(alpha[i]) * z[i] if alpha[i] else 0.0) if s == NeuronState.INACTIVE else h_var[i]
            for i, s in enumerate(state)
        ]
    return out


def sign_rows(node: BabNode, root: NetworkBounds | None) -> dict[tuple[int, int], bool]:
    """The neurons whose sign the model must state (module docstring): every split, and every
    neuron stable at the node but not at the root (True: ``z >= 0``)."""
    rows: dict[tuple[int, int], bool] = {}
    for k, state in enumerate(node.bounds.states):
        for i, s in enumerate(state):
            if s == NeuronState.UNSTABLE or (root is not None and root.states[k][i] == s):
                continue
            rows[(k, i)] = bool(s == NeuronState.ACTIVE)
    rows.update(dict(node.splits))
    return rows


def add_sign_rows(
    lip: LipschitzModel, network: Network, node: BabNode, root: NetworkBounds | None
) -> None:
    """The rows of :func:`sign_rows` as the constraint list ``part_signs``."""
    z = pre_activations(lip, network, node.bounds.states)
    lip.model.part_signs = pe.ConstraintList()
    for (k, i), active in sign_rows(node, root).items():
        term = z[k][i]
        if is_constant(term):  # no variable: the bounds decided it already
            continue
        lip.model.part_signs.add(term >= 0.0 if active else term <= 0.0)


def checked_witness(query: Query, node: BabNode, found: Witness | None) -> Witness | None:
    """``found`` again, in numpy: in ``D``, differentiable, each split's sign strict, the
    value recomputed (None where any check fails)."""
    if found is None or not found.certified_pattern:
        return None
    point = np.asarray(found.point, dtype=np.float64)
    if not query.domain.contains(point) or not is_differentiable_at(query.network, point):
        return None
    z = query.network.pre_activations(point)
    if any((z[k][0, i] > 0.0) != active for (k, i), active in node.splits):
        return None
    value = value_at(query.network, point, query.seed, query.norm)
    return Witness(point, value, True)


__all__ = [
    "add_sign_rows", "checked_witness", "part_solver", "sign_rows", "solve_node",
]  # fmt: skip
