"""Dual-norm objectives over the input gradient ``g`` (paper Lemma 7).

ℓ∞ input norm — maximise ``||g||_1 = Σ_j |g_j|``.  With ``g_j ∈ [l_j, u_j]``:
``|g_j| = g_j`` if ``l_j >= 0``, ``-g_j`` if ``u_j <= 0``; otherwise a variable ``t_j`` and a sign
binary ``σ_j`` (1 = positive):  ``t_j <= g_j - 2 l_j (1 - σ_j)``,  ``t_j <= -g_j + 2 u_j σ_j``,
``t_j <= u_j σ_j - l_j (1 - σ_j)``.  Maximising ``t_j`` then gives exactly ``|g_j|``.

ℓ1 input norm — maximise ``||g||_∞ = max_{j, ±} ±g_j``.  Candidates ``(j, ±)`` whose upper bound is
below the best guaranteed lower bound of another candidate are dropped; among the rest one
selection binary ``q`` per candidate, ``Σ q = 1``, and ``t <= ±g_j + M (1 - q)`` with
``M = max_candidates_ub - lb(±g_j)``.  With one candidate left, ``t = ±g_j`` needs no binary.

Decomposed ℓ1 input norm (``decompose=True``): ``max_x ||g(x)||_∞ = max_{(j, ±)} max_x ±g_j(x)``,
so no selection binaries at all; :func:`linf_candidates` lists the candidates with their bounds
and the caller solves one MIP per candidate with ``model.objective`` set to ``±g_j``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lipopt.formulation.terms import Term, is_constant
from lipopt.lazy import PYOMO, lazy_module
from lipopt.norms import InputNorm, OutputNorm

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)


def _l1_of_gradient(
    model: pe.ConcreteModel, g: Sequence[Term], lower: np.ndarray, upper: np.ndarray, relax: bool
) -> Term:
    terms: list[Term] = []
    straddle = [j for j in range(len(g)) if not is_constant(g[j]) and lower[j] < 0 < upper[j]]
    model.g_abs = pe.Var(
        straddle, bounds=lambda _, j: (0.0, max(-float(lower[j]), float(upper[j])))
    )
    model.g_sign = pe.Var(straddle, domain=pe.UnitInterval if relax else pe.Binary)
    model.g_abs_def = pe.ConstraintList()
    for j, gj in enumerate(g):
        if is_constant(gj):
            terms.append(abs(float(gj)))
        elif lower[j] >= 0:
            terms.append(gj)
        elif upper[j] <= 0:
            terms.append(-gj)
        else:
            t, sigma, lo, hi = model.g_abs[j], model.g_sign[j], float(lower[j]), float(upper[j])
            model.g_abs_def.add(t <= gj - 2 * lo * (1 - sigma))
            model.g_abs_def.add(t <= -gj + 2 * hi * sigma)
            model.g_abs_def.add(t <= hi * sigma - lo * (1 - sigma))
            terms.append(t)
    return pe.quicksum(terms)


@dataclass(frozen=True)
class Candidate:
    """One piece ``sign · g_index`` of ``||g||_∞ = max_{j, ±} ±g_j``, with sound bounds.

    Attributes:
        index: the gradient entry j.
        sign: +1.0 or -1.0 (for a constant entry: the sign making the value ``|g_j|``).
        lower, upper: ``lower <= sign · g_j(x) <= upper`` for every x in the domain.
        constant: whether ``g_j`` is a number (then ``lower == upper == |g_j|``).
    """

    index: int
    sign: float
    lower: float
    upper: float
    constant: bool = False

    def expression(self, gradient: Sequence[Term]) -> Term:
        """``sign · g_index`` as a number or a Pyomo expression."""
        gj = gradient[self.index]
        return abs(float(gj)) if is_constant(gj) else self.sign * gj


def linf_candidates(g: Sequence[Term], lower: np.ndarray, upper: np.ndarray) -> list[Candidate]:
    """The candidates ``(j, ±)`` of ``max ||g||_∞``, best upper bound first.

    Candidates whose upper bound lies below the largest lower bound of any candidate (a value
    ``||g||_∞`` certainly reaches everywhere) can never be the maximum and are dropped.
    """
    out: list[Candidate] = []
    for j, gj in enumerate(g):
        if is_constant(gj):
            v = abs(float(gj))
            out.append(Candidate(j, 1.0 if float(gj) >= 0 else -1.0, v, v, True))
            continue
        out.append(Candidate(j, 1.0, float(lower[j]), float(upper[j])))
        out.append(Candidate(j, -1.0, -float(upper[j]), -float(lower[j])))
    floor = max(c.lower for c in out)
    kept = [c for c in out if c.upper >= floor]
    return sorted(kept, key=lambda c: (-c.upper, c.index, -c.sign))


def _linf_of_gradient(
    model: pe.ConcreteModel, g: Sequence[Term], lower: np.ndarray, upper: np.ndarray, relax: bool
) -> Term:
    # candidate (j, sign): value sign*g_j in [lb, ub]
    kept = [
        (c.index, c.sign, c.lower, c.upper)
        for c in sorted(linf_candidates(g, lower, upper), key=lambda c: (c.index, -c.sign))
    ]
    floor = max(c[2] for c in kept)
    if len(kept) == 1:
        j, sign, _, _ = kept[0]
        return sign * g[j] if not is_constant(g[j]) else abs(float(g[j]))
    top = max(c[3] for c in kept)
    model.g_max = pe.Var(bounds=(floor, top))
    model.g_pick = pe.Var(range(len(kept)), domain=pe.UnitInterval if relax else pe.Binary)
    model.g_pick_one = pe.Constraint(
        expr=pe.quicksum(model.g_pick[n] for n in range(len(kept))) == 1
    )
    model.g_max_def = pe.ConstraintList()
    for n, (j, sign, lb, _) in enumerate(kept):
        value = abs(float(g[j])) if is_constant(g[j]) else sign * g[j]
        model.g_max_def.add(model.g_max <= value + (top - lb) * (1 - model.g_pick[n]))
    return model.g_max


def box_ball(model: pe.ConcreteModel, m: int, name: str = "w") -> list[Term]:
    """``w ∈ [-1, 1]^m`` (variables ``name``): the unit ball of ℓ∞, the dual ball of ℓ1 (and
    of |·| for one output)."""
    var = pe.Var(range(m), bounds=(-1.0, 1.0))
    setattr(model, name, var)
    return [var[o] for o in range(m)]


def _split_ball(model: pe.ConcreteModel, m: int, name: str = "w") -> list[Term]:
    """``w = w⁺ - w⁻`` with ``w⁺, w⁻ >= 0`` (``name_pos``, ``name_neg``); the caller bounds the
    sums."""
    pos = pe.Var(range(m), bounds=(0.0, 1.0))
    neg = pe.Var(range(m), bounds=(0.0, 1.0))
    setattr(model, f"{name}_pos", pos)
    setattr(model, f"{name}_neg", neg)
    return [pos[o] - neg[o] for o in range(m)]


def l1_ball(model: pe.ConcreteModel, m: int, name: str = "w") -> list[Term]:
    """``Σ (w⁺ + w⁻) <= 1`` (constraint ``name_ball``): the unit ball of ℓ1, the dual ball of
    ℓ∞."""
    w = _split_ball(model, m, name)
    pos, neg = model.component(f"{name}_pos"), model.component(f"{name}_neg")
    setattr(
        model,
        f"{name}_ball",
        pe.Constraint(expr=pe.quicksum(pos[o] + neg[o] for o in range(m)) <= 1),
    )
    return w


def _cross_ball(model: pe.ConcreteModel, m: int) -> list[Term]:
    """E of the cross-norm (Proposition 6): ``Σ w⁺ <= 1, Σ w⁻ <= 1, Σ w⁺ >= Σ w⁻``."""
    w = _split_ball(model, m)
    pos = pe.quicksum(model.w_pos[o] for o in range(m))
    neg = pe.quicksum(model.w_neg[o] for o in range(m))
    model.w_pos_sum = pe.Constraint(expr=pos <= 1)
    model.w_neg_sum = pe.Constraint(expr=neg <= 1)
    model.w_balance = pe.Constraint(expr=pos >= neg)
    return w


def l2_ball(model: pe.ConcreteModel, m: int) -> list[Term]:
    """``w ∈ [-1, 1]^m`` with ``Σ w_i^2 <= 1`` (constraint ``w_ball``, convex quadratic): the
    unit ball of ℓ2, its own dual. Only a solver with quadratic rows takes it (SCIP); the LP
    relaxation keeps the box alone, an outer ball, so its bound stays an upper bound."""
    w = box_ball(model, m)
    model.w_ball = pe.Constraint(expr=pe.quicksum(v * v for v in w) <= 1)
    return w


DUAL_BALLS: dict[OutputNorm, Callable[[pe.ConcreteModel, int], list[Term]]] = {
    OutputNorm.ABS: box_ball,
    OutputNorm.L1: box_ball,
    OutputNorm.LINF: l1_ball,
    OutputNorm.CROSS: _cross_ball,
    OutputNorm.L2: l2_ball,
}


def add_dual_ball(
    model: pe.ConcreteModel, norm: OutputNorm, m: int, relax: bool = False
) -> list[Term]:
    """Variables ``w`` ranging over the dual ball of the output norm (paper eq. 92); the LP
    relaxation's ℓ2 ball is the box around it."""
    if relax and not norm.is_polyhedral:
        return box_ball(model, m)
    return DUAL_BALLS[norm](model, m)


OBJECTIVES: dict[InputNorm, Callable[..., Term]] = {
    InputNorm.LINF: _l1_of_gradient,
    InputNorm.L1: _linf_of_gradient,
}


def add_objective(
    model: pe.ConcreteModel,
    gradient: Sequence[Term],
    lower: np.ndarray,
    upper: np.ndarray,
    norm: InputNorm,
    relax: bool,
    decompose: bool = False,
) -> list[Candidate]:
    """Set ``model.objective`` to maximise the dual norm of the gradient.

    With ``decompose`` and the ℓ1 input norm, the objective is instead the first of the
    returned candidates (``max ||g||_∞`` is the largest of the candidates' maxima); the caller
    swaps it with :func:`set_candidate`. Otherwise the returned list is empty.
    """
    if decompose and norm.decomposes:
        candidates = linf_candidates(gradient, lower, upper)
        model.objective = pe.Objective(expr=candidates[0].expression(gradient), sense=pe.maximize)
        return candidates
    expr = OBJECTIVES[norm](model, gradient, lower, upper, relax)
    model.objective = pe.Objective(expr=expr, sense=pe.maximize)
    return []


def set_candidate(
    model: pe.ConcreteModel,
    gradient: Sequence[Term],
    candidate: Candidate,
    cutoff: float | None = None,
) -> None:
    """Maximise ``sign · g_j`` of ``candidate``; with ``cutoff``, also require it ``>= cutoff``
    (then an infeasible model proves ``max sign · g_j < cutoff``)."""
    model.objective.set_value(candidate.expression(gradient))
    set_cutoff(model, cutoff)


def set_cutoff(model: pe.ConcreteModel, cutoff: float | None) -> None:
    """Require ``model.objective >= cutoff`` as the constraint ``model.cutoff``, replacing any
    earlier one (None: no cutoff). An objective without free variables gets no constraint: the
    solver then returns its value, a number the caller compares with the cutoff itself."""
    if model.component("cutoff") is not None:
        model.del_component("cutoff")
    expr = model.objective.expr
    if cutoff is not None and not pe.is_fixed(expr):
        model.cutoff = pe.Constraint(expr=expr >= cutoff)
