"""A maximum as the larger of two halves (a *union* of two): the backward model split on the sign
of a gradient entry (``sign_split``), or the domain cut by a first-layer neuron's hyperplane
(``gate_split``). Every point of the domain lies in one half."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from lipopt.bounds.interval import NetworkBounds
from lipopt.bracket import Bracket
from lipopt.formulation import LipschitzModel
from lipopt.formulation.objective import set_cutoff
from lipopt.heuristics.witness import Witness, best_witness
from lipopt.policy import Policy
from lipopt.strategies.pieces import Piece, Pieces, Union, solve_pieces
from lipopt.strategies.refine import ModelProblem


def sign_split_entry(lip: LipschitzModel, net_bounds: NetworkBounds) -> int | None:
    """The gradient entry whose sign splits the search: of the entries with a sign binary
    (their sign open on the domain), the one of widest range ``u_j - l_j``; None if none."""
    signs = lip.model.component("g_sign")
    if signs is None:
        return None
    entries = [j for j in signs if not signs[j].fixed]
    if not entries:
        return None
    width = net_bounds.input_grad_upper - net_bounds.input_grad_lower
    return max(entries, key=lambda j: (float(width[j]), -j))


def gate_split_neuron(lip: LipschitzModel, net_bounds: NetworkBounds) -> int | None:
    """The first-layer neuron whose hyperplane splits the search: of the unstable neurons of
    the first hidden layer (those with a gate), the one whose pre-activation range ``[l, u]``
    is most balanced, largest ``min(-l, u)``; None if none."""
    gates = lip.activations[0] if lip.activations else {}
    neurons = [i for i in gates if not gates[i].fixed]
    if not neurons:
        return None
    lower, upper = net_bounds.pre_lower[0], net_bounds.pre_upper[0]
    return max(neurons, key=lambda i: (min(-float(lower[i]), float(upper[i])), -i))


@dataclass(frozen=True)
class Halves:
    """Two halves: ``binary`` fixed to 1 (the half ``labels[0]``), then to 0 (``labels[1]``);
    ``subject`` names the split in progress lines; ``stats`` go into the model statistics."""

    binary: Any
    labels: tuple[str, str]
    subject: str
    stats: dict[str, int]


def sign_halves(problem: ModelProblem, entry: int) -> Halves:
    """``max_x ||g(x)||_1 = max(max_{x: g_j(x) >= 0} ||g(x)||_1, max_{x: g_j(x) <= 0} ||g(x)||_1)``:
    the model with the sign binary ``σ_j`` of ``entry`` fixed to 1, then to 0 (``|g_j| = g_j``,
    resp. ``-g_j``, and the other sign infeasible)."""
    return Halves(
        problem.lip.model.g_sign[entry], (f"g[{entry}] >= 0", f"g[{entry}] <= 0"),
        f"the sign of g[{entry}]", dict(sign_split_entry=entry),
    )  # fmt: skip


def gate_halves(problem: ModelProblem, neuron: int) -> Halves:
    """The domain cut by the hyperplane ``z_1i(x) = W_1[i] x + b_1[i] = 0`` of the first-layer
    neuron ``i``: its gate fixed to 1 (``z_1i >= 0``, the neuron passes ``z_1i``), then to 0
    (``z_1i <= 0``, it passes ``α z_1i``: 0 for a ReLU), two MIPs whose union covers the
    domain, in either formulation."""
    return Halves(
        problem.lip.activations[0][neuron], (f"z1[{neuron}] >= 0", f"z1[{neuron}] <= 0"),
        f"neuron {neuron} of the first layer", dict(gate_split_neuron=neuron),
    )  # fmt: skip


def binary_split(
    problem: ModelProblem,
    timings: dict[str, float],
    start_witness: Witness | None,
    halves: Halves,
    policy: Policy,
) -> Bracket:
    """The maximum as the larger of the two ``halves``.

    Both run under the cutoff ``objective >= L`` (less 1e-6 relative) of the best attained
    value ``L``: ``start_witness`` (the attack's) or, without one, the best of a few sampled
    points, so a half that cannot beat ``L`` answers "infeasible" and is bounded by the cutoff.
    With several workers the halves run side by side on forked copies of the model; in one
    process the second half takes the cutoff of what the first attained. The upper bound is
    the larger of the halves' proven bounds (a half without one keeps ``Σ_k max(|l_k|, |u_k|)``
    over the input-gradient bounds, at least ``||g||_1`` everywhere: the ℓ∞ input norm's
    constant; where that bound is already attained, no half is solved); the witness is the best
    point attained.
    """
    lip, query, rng = problem.lip, problem.query, problem.rng
    pieces = Pieces(start_witness)
    if pieces.best is None:  # random points are differentiable with probability one: attained
        pieces.best = best_witness(
            query.network, query.domain, query.seed, query.norm,
            list(query.domain.sample(8, rng)), rng,
        )  # fmt: skip
    low, high = problem.net_bounds.input_grad_lower, problem.net_bounds.input_grad_upper
    static = float(np.sum(np.maximum(np.abs(low), np.abs(high))))  # >= ||g||_1 everywhere

    def describe(value: float) -> Callable[[float], str]:
        label = halves.labels[0] if value else halves.labels[1]
        return lambda _: f"half {label} (best {_attained(pieces.best)})"

    @contextlib.contextmanager
    def arrange(value: float, cutoff: float | None) -> Iterator[None]:
        halves.binary.fix(value)
        set_cutoff(lip.model, cutoff)
        try:
            yield
        finally:
            halves.binary.unfix()
            set_cutoff(lip.model, None)

    def intro(count: int) -> str:
        side_by_side = f": two halves on {count} processes" if count > 1 else ""
        return f"splitting the search on {halves.subject}{side_by_side}"

    items = [Piece(value, static, describe(value)) for value in (1.0, 0.0)]
    union = Union(items, arrange, -np.inf, intro)
    solve_pieces(problem, union, pieces, timings, policy)
    stats = dict(halves.stats, halves_cut_off=pieces.cut_off)
    return pieces.bracket(problem, -np.inf, timings, stats, "none")


def _attained(witness: Witness | None) -> str:
    """The value a witness attains, for a progress message."""
    return "none" if witness is None else f"{witness.norm_value:.6g}"
