"""The ℓ2 input norm's objective: a piecewise-linear over-estimate of ``||g||_2^2``.

The dual of ℓ2 is ℓ2, so the constant is ``max_x ||g(x)||_2`` with ``g`` the input gradient:
a convex function maximised, which a MILP cannot state directly. With each ``g_j`` bounded,
``g_j ∈ [b_0, b_K]``, and breakpoints ``b_0 < b_1 < ... < b_K``, the chord interpolant

    s_j(g) = b_{k-1}^2 + (b_{k-1} + b_k)(g - b_{k-1})    for g ∈ [b_{k-1}, b_k]

satisfies ``s_j(g) >= g^2`` (``g^2`` is convex, a chord lies above it) with equality at every
breakpoint, and ``s_j(g) - g^2 = (g - b_{k-1})(b_k - g)``. So ``B = max Σ_j s_j(g_j)`` over
the model is a proven ``B >= max ||g||_2^2`` and ``sqrt(B)`` a proven upper bound on the
constant; where the maximiser's entries all sit on breakpoints, ``B`` is attained.

Maximising a convex piecewise-linear function needs binaries (the incremental formulation):
``g = b_0 + Σ_k δ_k``, ``0 <= δ_k <= Δ_k = b_k - b_{k-1}``, and per inner breakpoint a binary
``y_k`` (k = 1..K-1, "segment k is full"): ``δ_k >= Δ_k y_k``, ``δ_{k+1} <= Δ_{k+1} y_k``,
and ``y_k <= y_{k-1}`` (implied, but stated: on a short segment the rows above hold it only
within the solver's tolerance).
Then ``Σ_k (b_{k-1} + b_k) δ_k + b_0^2 = s_j(g)`` exactly. Two breakpoints (the entry's bounds)
need no binary; relaxed binaries give the chord over ``[b_0, b_K]``, still an over-estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from lipopt.formulation.terms import Term, is_constant
from lipopt.lazy import PYOMO, lazy_module

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)

FloatArray = NDArray[np.float64]

#: a new breakpoint closer than this (relative to the entry's range) to an old one is not added:
#: the chord's error there is at most (spacing · range / 2)^2, and a shorter segment's rows
#: would sit within the solvers' feasibility tolerance
BREAKPOINT_SPACING = 1e-6


def first_breakpoints(lower: FloatArray, upper: FloatArray) -> list[FloatArray]:
    """Each entry's bounds ``[l_j, u_j]``: the chord over the whole range, no binary (measured:
    adding 0 where the sign is open, the shape of the ℓ∞ model's sign binary, saved no round)."""
    return [np.array([lo, max(hi, lo)], dtype=np.float64) for lo, hi in zip(lower, upper)]


def chord_value(points: FloatArray, g: float) -> float:
    """``s(g)``: the chord interpolant of ``g^2`` through ``points`` (sorted), at ``g``."""
    g = float(np.clip(g, points[0], points[-1]))
    k = int(np.clip(np.searchsorted(points, g, side="right"), 1, len(points) - 1))
    lo, hi = float(points[k - 1]), float(points[k])
    return lo * lo + (lo + hi) * (g - lo)


def with_breakpoint(points: FloatArray, g: float) -> FloatArray | None:
    """``points`` with ``g`` added, or None where ``g`` lies outside their range or (within
    :data:`BREAKPOINT_SPACING` of the range) on one of them."""
    lo, hi = float(points[0]), float(points[-1])
    spacing = BREAKPOINT_SPACING * max(hi - lo, 1e-300)
    if not lo < g < hi or np.min(np.abs(points - g)) <= spacing:
        return None
    return np.sort(np.append(points, g))


def gradient_variables(
    model: pe.ConcreteModel, gradient: Sequence[Term], lower: FloatArray, upper: FloatArray
) -> list[Term]:
    """One variable ``g_l2[j] = g_j`` (bounded by ``[l_j, u_j]``) per non-constant entry, so the
    solver reports the gradient; constant entries stay numbers."""
    free = [j for j, gj in enumerate(gradient) if not is_constant(gj)]
    model.g_l2 = pe.Var(free, bounds=lambda _, j: (float(lower[j]), float(max(upper[j], lower[j]))))
    model.g_l2_def = pe.Constraint(free, rule=lambda m, j: m.g_l2[j] == gradient[j])
    return [model.g_l2[j] if j in model.g_l2 else float(gj) for j, gj in enumerate(gradient)]


def set_squared_objective(
    model: pe.ConcreteModel, g: Sequence[Term], breakpoints: Sequence[FloatArray], relax: bool
) -> None:
    """``model.objective``: maximise ``Σ_j s_j(g_j)`` over the current ``breakpoints`` (the
    block ``model.l2_chords``, replaced on every call; a constant entry adds ``g_j^2``)."""
    _clear(model)
    model.l2_chords = block = pe.Block()
    terms: list[Term] = []
    for j, gj in enumerate(g):
        if is_constant(gj):
            terms.append(float(gj) ** 2)
            continue
        terms.append(_chords(block, j, gj, np.asarray(breakpoints[j], dtype=np.float64), relax))
    model.objective = pe.Objective(expr=pe.quicksum(terms), sense=pe.maximize)


def set_quadratic_objective(
    model: pe.ConcreteModel, g: Sequence[Term], lower: FloatArray, upper: FloatArray
) -> None:
    """``model.objective``: maximise ``t`` subject to ``t <= Σ_j g_j^2`` (``model.l2_square``),
    the exact nonconvex quadratic form for solvers with spatial branching (SCIP); ``t`` is
    bounded by ``Σ_j max(l_j^2, u_j^2)``."""
    _clear(model)
    top = float(np.sum(np.maximum(np.square(lower), np.square(upper))))
    model.l2_square = block = pe.Block()
    block.t = pe.Var(bounds=(0.0, top))
    block.square = pe.Constraint(expr=block.t <= pe.quicksum(gj * gj for gj in g))
    model.objective = pe.Objective(expr=block.t, sense=pe.maximize)


def _clear(model: pe.ConcreteModel) -> None:
    """Remove the last objective and the blocks that define it."""
    for name in ("l2_chords", "l2_square", "objective"):
        if model.component(name) is not None:
            model.del_component(name)


def _chords(block: pe.Block, j: int, gj: Term, points: FloatArray, relax: bool) -> Term:
    """The incremental formulation of ``s_j(g_j)`` over ``points`` (see the module's text)."""
    widths = np.diff(points)
    if len(widths) == 0 or widths.sum() <= 0:
        return float(points[0]) ** 2
    slopes = points[:-1] + points[1:]
    segments = range(len(widths))
    fill = pe.Var(segments, bounds=lambda _, k: (0.0, float(widths[k])))
    full = pe.Var(range(len(widths) - 1), domain=pe.UnitInterval if relax else pe.Binary)
    links = pe.ConstraintList()
    block.add_component(f"fill_{j}", fill)
    block.add_component(f"full_{j}", full)
    block.add_component(f"links_{j}", links)
    links.add(gj == float(points[0]) + pe.quicksum(fill[k] for k in segments))
    for k in range(len(widths) - 1):
        links.add(fill[k] >= float(widths[k]) * full[k])
        links.add(fill[k + 1] <= float(widths[k + 1]) * full[k])
        if k:  # implied by the two rows above, but not within a solver's tolerance on a short
            links.add(full[k] <= full[k - 1])  # segment: measured, it let later ones fill first
    return float(points[0]) ** 2 + pe.quicksum(float(slopes[k]) * fill[k] for k in segments)


def chord_binaries(model: pe.ConcreteModel) -> list[object]:
    """The binaries of the chords' segments (``y_k`` of every entry)."""
    block = model.component("l2_chords")
    if block is None:
        return []
    return [
        var
        for component in block.component_objects(pe.Var, descend_into=False)
        if component.local_name.startswith("full_")
        for var in component.values()
    ]
