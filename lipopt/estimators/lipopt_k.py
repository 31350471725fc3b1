"""LiPopt-k (Latorre, Rolland, Cevher, ICLR 2020) — not this package: an LP hierarchy bounding
the gradient polynomial over a box (``../shared/semialgebraic.md`` §4).

For one hidden layer the ℓ∞ constant is at most the maximum over the box of

    F(t, s) = Σ_ij A_ji w_j t_i s_j,   t ∈ [−1, 1]^d,  s ∈ [0, 1]^n

(``s`` relaxes ReLU's derivative; the *local* variant fixes ``s_j`` of neurons stable on the
domain). With every variable mapped to ``g ∈ [0, 1]`` (``t = 2g − 1``, ``s = g``), LiPopt-k
finds the least γ with

    γ − F = Σ λ_{α,β} Π g^α (1 − g)^β,   λ >= 0,

over products of total degree <= k (Krivine/Handelman), the sparse version only over variables
joined in the network graph (here: the pairs ``(t_i, s_j)`` with ``A_ji ≠ 0``, and single
variables). Each product is >= 0 on the box, so γ >= max F. Solved with HiGHS; **proven**: with
``λ`` clipped at 0 the identity's residual polynomial ``r`` is recomputed in numpy and
``γ + Σ |r_m|`` is the value (every monomial of g lies in [0, 1] on the box).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import Estimate, EstimatorFailed, FloatArray, Kind, problem, stopwatch
from lipopt.estimators.moments import Poly, add, const, mul, scale, var
from lipopt.estimators.semialgebraic import one_layer
from lipopt.network import Network
from lipopt.norms import InputNorm

KIND = Kind.UPPER


def _factors(index: int, degree: int) -> list[Poly]:
    """``g^a (1 − g)^b`` for ``1 <= a + b <= degree`` (and 1 for a = b = 0)."""
    g, one_minus = var(index), add(const(1.0), scale(var(index), -1.0))
    out = []
    for a in range(degree + 1):
        for b in range(degree + 1 - a):
            poly = const(1.0)
            for _ in range(a):
                poly = mul(poly, g)
            for _ in range(b):
                poly = mul(poly, one_minus)
            out.append(poly)
    return out


def _products(groups: list[tuple[int, ...]], k: int) -> list[Poly]:
    """Every product over a group of its variables' factors, of total degree <= k (each
    distinct product once)."""
    seen: dict[tuple, Poly] = {}
    for group in groups:
        per = [list(enumerate(_factors(i, k))) for i in group]
        for combo in itertools.product(*per):
            poly = const(1.0)
            for _, factor in combo:
                poly = mul(poly, factor)
            if max((len(m) for m in poly), default=0) > k:
                continue
            seen.setdefault(tuple(sorted(poly.items())), poly)
    return list(seen.values())


def objective(weight: FloatArray, w: FloatArray, fixed: dict[int, float]) -> tuple[Poly, list]:
    """``F`` in the g variables (t_i → index i, s_j → index d + j; a fixed s_j is its value),
    and the groups of variables joined in the graph."""
    n, d = weight.shape
    poly: Poly = {}
    groups: list[tuple[int, ...]] = [(i,) for i in range(d)]
    for j in range(n):
        s_j = const(fixed[j]) if j in fixed else var(d + j)
        if j not in fixed:
            groups.append((d + j,))
        for i in np.flatnonzero(weight[j]):
            t_i = add(scale(var(i), 2.0), const(-1.0))
            poly = add(poly, scale(mul(t_i, s_j), float(weight[j, i] * w[j])))
            if j not in fixed:
                groups.append((int(i), d + j))
    return poly, groups


def solve(poly: Poly, groups: list[tuple[int, ...]], k: int) -> tuple[float, float, int]:
    """The proven LiPopt-k bound on ``max F`` over ``[0, 1]^vars``, the residual's part, and
    the number of products."""
    from scipy import sparse
    from scipy.optimize import linprog

    products = _products(groups, k)
    monomials = sorted({m for p in [poly, *products] for m in p} | {()})
    row = {m: r for r, m in enumerate(monomials)}
    entries = [(row[m], c, v) for c, p in enumerate(products) for m, v in p.items()]
    r_idx, c_idx, vals = zip(*entries)
    basis = sparse.csc_matrix((vals, (r_idx, c_idx)), shape=(len(monomials), len(products)))
    # unknowns (γ, λ): γ·[m = 1] − Σ λ_p p = F  ⇔  rows: e_1 γ − basis λ = F
    gamma_col = sparse.csc_matrix(([1.0], ([row[()]], [0])), shape=(len(monomials), 1))
    target = np.array([poly.get(m, 0.0) for m in monomials])
    lp = linprog(
        np.r_[1.0, np.zeros(len(products))],
        A_eq=sparse.hstack([gamma_col, -basis]).tocsc(), b_eq=target,
        bounds=[(None, None)] + [(0, None)] * len(products), method="highs",
    )  # fmt: skip
    if lp.status != 0:
        raise EstimatorFailed(f"LiPopt-{k}: HiGHS ended with status {lp.status}: {lp.message}")
    gamma, lam = float(lp.x[0]), np.maximum(lp.x[1:], 0.0)
    residual = gamma_col @ np.array([gamma]) - basis @ lam - target  # γ − F − Σλp, by monomial
    extra = float(np.sum(np.abs(residual)))
    return gamma + extra, extra, len(products)


def estimate_k(
    k: int,
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    local: bool = True,
    bounds: str = "linear",
    **options: Any,
) -> Estimate:
    """The proven LiPopt-k bound on ``max ||∇(cᵀf)||_1`` (``local``: stable neurons fixed)."""
    with stopwatch() as elapsed:
        net = one_layer(problem(network, domain, norm, c), f"LiPopt-{k}", bounds)
        lo, hi = net.z_bounds
        fixed = {j: float(lo[j] > 0) for j in range(lo.size) if local and (lo[j] > 0 or hi[j] < 0)}
        poly, groups = objective(net.weight, net.w, fixed)
        value, extra, count = solve(poly, groups, k) if poly else (0.0, 0.0, 0)
    detail = {"k": k, "local": local, "products": count, "correction": extra,
              "method": f"LiPopt-{k} (Latorre et al. 2020)"}  # fmt: skip
    return Estimate(f"lipopt{k}", value, KIND, elapsed[0], detail)


def estimate3(network: Network, domain: Domain, norm: InputNorm | str = InputNorm.LINF,
              c: ArrayLike | None = None, **options: Any) -> Estimate:  # fmt: skip
    """LiPopt-3 (Latorre et al. 2020)."""
    return estimate_k(3, network, domain, norm, c, **options)


def estimate4(network: Network, domain: Domain, norm: InputNorm | str = InputNorm.LINF,
              c: ArrayLike | None = None, **options: Any) -> Estimate:  # fmt: skip
    """LiPopt-4 (Latorre et al. 2020)."""
    return estimate_k(4, network, domain, norm, c, **options)
