"""Moment relaxations with a proven bound: polynomials, moment vectors, PSD blocks, and the
dual certificate that turns an SDP solver's approximate answer into a rigorous upper bound.

A relaxation of ``max p(v)`` over a set S of points is written in the moments
``y_α = L(v^α)`` (``y_0 = 1``): the objective ``Σ_α c_α y_α``, PSD blocks ``F_b(y) =
[L(g_b · m_p · m_q)]_{pq} ⪰ 0`` (a moment block when ``g_b = 1``, a localizing block
otherwise), equalities ``L(e_k) = 0`` and inequalities ``L(g_k) >= 0``. Every point of S gives
a feasible ``y`` (its own moments), with ``|y_α| <= B_α`` from bounds on the variables.

For any ``Z_b ⪰ 0``, ``λ >= 0`` and ``μ`` the Lagrangian bounds the objective at such a ``y``:
``cᵀy <= cᵀy + Σ_b ⟨Z_b, F_b(y)⟩ + λᵀG(y) + μᵀE(y) = Σ_α r_α y_α <= r_0 + Σ_{α≠0} |r_α| B_α``.
The SDP dual drives every ``r_α`` (α ≠ 0) to zero and minimises ``r_0``; whatever the solver
returns, :func:`proven_bound` projects its ``Z_b`` onto the PSD cone, clips ``λ`` at zero,
recomputes ``r`` in numpy and adds the residuals times their bounds (and a floating-point
margin): a bound on ``max_S p`` that does not rest on the solver's tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lipopt.estimators.base import FloatArray, solve_sdp

#: a monomial: the sorted tuple of its variables' indices (repeated for powers); () is 1
Monomial = tuple[int, ...]
#: a polynomial: coefficient by monomial
Poly = dict[Monomial, float]


def var(index: int) -> Poly:
    return {(index,): 1.0}


def const(value: float) -> Poly:
    return {(): float(value)}


def add(*polys: Poly) -> Poly:
    out: Poly = {}
    for poly in polys:
        for mono, coeff in poly.items():
            out[mono] = out.get(mono, 0.0) + coeff
    return {m: c for m, c in out.items() if c != 0.0}


def scale(poly: Poly, factor: float) -> Poly:
    return {m: c * factor for m, c in poly.items() if c * factor != 0.0}


def mul(first: Poly, second: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in first.items():
        for m2, c2 in second.items():
            mono = tuple(sorted(m1 + m2))
            out[mono] = out.get(mono, 0.0) + c1 * c2
    return {m: c for m, c in out.items() if c != 0.0}


@dataclass
class Relaxation:
    """A moment relaxation under construction: blocks ``(basis, localizer)``, scalar
    equalities and inequalities, the objective, and each variable's bound ``|v_i| <= bound``.

    Variables in ``binary`` take only the values 0 and 1 on the feasible set (``u² = u``): the
    compiled relaxation reduces every power of them to the first (``L(u² q) = L(u q)``), which
    every feasible point's moments obey, and so drops directions where the SDP would be
    degenerate."""

    bounds: Sequence[float]
    binary: frozenset[int] = frozenset()
    objective: Poly = field(default_factory=dict)
    blocks: list[tuple[list[Poly], Poly]] = field(default_factory=list)
    equalities: list[Poly] = field(default_factory=list)
    inequalities: list[Poly] = field(default_factory=list)

    def localizing_equality(self, basis: list[Poly], poly: Poly) -> None:
        """``L(poly · m_p · m_q) = 0`` for every pair of the basis (e.g. ``u² − u = 0``)."""
        for p, first in enumerate(basis):
            for second in basis[p:]:
                self.equalities.append(mul(poly, mul(first, second)))


@dataclass(frozen=True)
class Compiled:
    """The relaxation as sparse matrices over the moment vector ``y`` (index 0: ``y_0 = 1``)."""

    monomials: list[Monomial]
    objective: FloatArray
    blocks: list[Any]  # per block: sparse (side², |y|), row p·side + q
    sides: list[int]
    equalities: Any  # sparse (#eq, |y|)
    inequalities: Any  # sparse (#ineq, |y|)
    bounds: FloatArray  # B_α


def _reduced(mono: Monomial, binary: frozenset[int]) -> Monomial:
    """The monomial with every power of a binary variable reduced to the first."""
    if not binary:
        return mono
    kept = [v for v in mono if v not in binary]
    return tuple(sorted(kept + sorted({v for v in mono if v in binary})))


def compile_relaxation(relax: Relaxation) -> Compiled:
    """Index every monomial that appears and build the sparse maps from ``y``."""
    from scipy import sparse

    index: dict[Monomial, int] = {(): 0}

    def row(poly: Poly) -> dict[int, float]:
        out: dict[int, float] = {}
        for m, c in poly.items():
            k = index.setdefault(_reduced(m, relax.binary), len(index))
            out[k] = out.get(k, 0.0) + c
        return {k: c for k, c in out.items() if c != 0.0}

    block_rows = []
    for basis, localizer in relax.blocks:
        entries = [row(mul(localizer, mul(bp, bq))) for bp in basis for bq in basis]
        block_rows.append(entries)
    eq_rows = [entry for entry in (row(p) for p in relax.equalities) if entry]
    ineq_rows = [entry for entry in (row(p) for p in relax.inequalities) if entry]
    objective_row = row(relax.objective)
    size = len(index)

    def matrix(rows: list[dict[int, float]]) -> Any:
        data = [(i, j, v) for i, entry in enumerate(rows) for j, v in entry.items()]
        i, j, v = zip(*data) if data else ((), (), ())
        return sparse.csr_matrix((v, (i, j)), shape=(len(rows), size))

    monomials = sorted(index, key=index.__getitem__)
    limits = np.asarray(relax.bounds, dtype=float)
    bounds = np.array([float(np.prod(limits[list(m)])) if m else 1.0 for m in monomials])
    objective = np.zeros(size)
    for j, v in objective_row.items():
        objective[j] = v
    return Compiled(
        monomials, objective, [matrix(rows) for rows in block_rows],
        [len(basis) for basis, _ in relax.blocks], matrix(eq_rows), matrix(ineq_rows), bounds,
    )  # fmt: skip


def solve_dual(compiled: Compiled, solver: str | None, options: dict[str, Any]) -> dict:
    """The dual SDP ``min r_0 s.t. r_α = 0 (α ≠ 0), Z_b ⪰ 0, λ >= 0`` with cvxpy; the solver's
    multipliers."""
    import cvxpy as cp

    zs = [cp.Variable((side, side), symmetric=True) for side in compiled.sides]
    lam = cp.Variable(compiled.inequalities.shape[0], nonneg=True)
    mu = cp.Variable(compiled.equalities.shape[0])
    r = compiled.objective + compiled.inequalities.T @ lam + compiled.equalities.T @ mu
    for z, block in zip(zs, compiled.blocks):
        r = r + block.T @ cp.vec(z, order="C")
    problem = cp.Problem(cp.Minimize(r[0]), [r[1:] == 0, *[z >> 0 for z in zs]])
    largest = max(compiled.sides)
    chosen = solve_sdp(problem, solver, options, "", tight=True, largest_side=largest)
    return {
        "solver": chosen, "status": problem.status, "value": float(problem.value),
        "z": [np.asarray(z.value, dtype=float) for z in zs],
        "lam": np.asarray(lam.value, dtype=float).reshape(-1),
        "mu": np.asarray(mu.value, dtype=float).reshape(-1) if mu.size else np.zeros(0),
    }  # fmt: skip


def _psd_part(z: FloatArray) -> tuple[FloatArray, float]:
    """The nearest PSD matrix (negative eigenvalues set to zero), and how far below zero its
    least eigenvalue may still be after rounding."""
    values, vectors = np.linalg.eigh((z + z.T) / 2)
    part = (vectors * np.maximum(values, 0.0)) @ vectors.T
    slack = 64 * np.finfo(float).eps * z.shape[0] * max(float(np.abs(values).max()), 1e-300)
    least = float(np.linalg.eigvalsh(part).min())
    return part, max(0.0, slack - least)


def proven_bound(compiled: Compiled, duals: dict) -> tuple[float, float]:
    """A proven bound from the multipliers made feasible, and the part of it that the
    residuals and rounding add to ``r_0``.

    ``r_0 + Σ_{α≠0} |r_α| B_α``, plus for each block ``δ_b · tr F_b(y)`` (``δ_b``: how far the
    projected ``Z_b`` may be from PSD after rounding; ``tr F_b(y) <= Σ_p Σ_α |F_b[pp, α]| B_α``),
    plus a rounding margin on every sum."""
    eps = np.finfo(float).eps
    lam = np.maximum(duals["lam"], 0.0)
    terms = [compiled.objective, compiled.inequalities.T @ lam, compiled.equalities.T @ duals["mu"]]
    sizes = [np.abs(compiled.objective), abs(compiled.inequalities).T @ lam,
             abs(compiled.equalities).T @ np.abs(duals["mu"])]  # fmt: skip
    shortfall = 0.0
    for z, block, side in zip(duals["z"], compiled.blocks, compiled.sides):
        part, delta = _psd_part(z)
        terms.append(block.T @ part.reshape(-1))
        sizes.append(abs(block).T @ np.abs(part).reshape(-1))
        diagonal = abs(block[[p * side + p for p in range(side)], :])
        shortfall += delta * float(np.sum(diagonal @ compiled.bounds))
    r = np.sum(terms, axis=0)
    margin = 8 * eps * len(terms) * np.sum(sizes, axis=0)
    residual = float(np.sum((np.abs(r[1:]) + margin[1:]) * compiled.bounds[1:]))
    extra = residual + shortfall + float(margin[0])
    return float(r[0]) + extra, extra
