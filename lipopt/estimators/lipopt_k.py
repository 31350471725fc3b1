"""LiPopt-k (Latorre, Rolland, Cevher, ICLR 2020) — not this package: an LP hierarchy bounding
the gradient polynomial over a box (``../shared/semialgebraic.md`` §4).

The ℓ∞ constant is at most the maximum over the box of the gradient polynomial

    F(t, s) = tᵀ A₁ᵀ diag(s₁) ⋯ A_mᵀ diag(s_m) w,   t ∈ [−1, 1]^d,  s ∈ [0, 1]^N

(``s`` relaxes ReLU's derivatives; the *local* variant fixes the s of neurons stable on the
domain; m = 1 or 2 hidden layers, F of degree m + 1). With every variable mapped to
``g ∈ [0, 1]`` (``t = 2g − 1``, ``s = g``), LiPopt-k finds the least γ with

    γ − F = Σ λ_{α,β} Π g^α (1 − g)^β,   λ >= 0,

over products of total degree <= k (Krivine/Handelman), the sparse version only over variables
joined in the network graph (here: the variables along each path ``t_i → s₁_j → s₂_k`` of
nonzero weights, and single variables). Each product is >= 0 on the box, so γ >= max F.
Solved with HiGHS; **proven**: with ``λ`` clipped at 0 the identity's residual polynomial ``r``
is recomputed in numpy and ``γ + Σ |r_m|`` is the value (every monomial of g lies in [0, 1]
on the box).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    EstimatorFailed,
    EstimatorOutOfScope,
    FloatArray,
    Kind,
    problem,
    runs_lowered,
    stopwatch,
)
from lipopt.estimators.moments import Poly, add, const, mul, scale, var
from lipopt.estimators.semialgebraic import LINF_ONLY, Layered, box_note, hidden_layers
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


def _paths(weights: tuple[FloatArray, ...], w: FloatArray) -> list[tuple[tuple[int, ...], float]]:
    """Every path ``(i, j₁, …, j_m)`` from an input through nonzero weights to the last hidden
    layer, with its coefficient ``w_{j_m} Π A``: ``F = Σ_paths coeff · t_i s₁_{j₁} ⋯ s_m_{j_m}``."""
    paths: list[tuple[tuple[int, ...], float]] = [((i,), 1.0) for i in range(weights[0].shape[1])]
    for weight in weights:
        paths = [(path + (int(j),), coeff * float(weight[j, path[-1]]))
                 for path, coeff in paths for j in np.flatnonzero(weight[:, path[-1]])]  # fmt: skip
    return [(path, coeff * float(w[path[-1]])) for path, coeff in paths if w[path[-1]] != 0.0]


def objective(net: Layered, fixed: list[dict[int, float]]) -> tuple[Poly, list]:
    """``F`` in the g variables (t_i → index i, then each layer's s in order; a fixed s is its
    value), and the groups of variables joined in the graph (one per path, and every single
    variable)."""
    d = net.weights[0].shape[1]
    starts = np.cumsum([d] + [weight.shape[0] for weight in net.weights])
    groups: set[tuple[int, ...]] = {(i,) for i in range(d)}
    terms: list[Poly] = []
    for path, coeff in _paths(net.weights, net.w):
        term = add(scale(var(path[0]), 2.0), const(-1.0))
        group = [path[0]]
        for layer, j in enumerate(path[1:]):
            if j in fixed[layer]:
                term = scale(term, fixed[layer][j])
            else:
                term = mul(term, var(int(starts[layer]) + j))
                group.append(int(starts[layer]) + j)
                groups.add((group[-1],))
        terms.append(scale(term, coeff))
        groups.add(tuple(group))
    return add(*terms), sorted(groups)


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


def _stable(lower: FloatArray, upper: FloatArray) -> dict[int, float]:
    """The derivative of each neuron stable on the domain (1 if always active, 0 if never)."""
    return {j: float(lower[j] > 0) for j in range(lower.size) if lower[j] > 0 or upper[j] < 0}


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
    """The proven LiPopt-k bound on ``max ||∇(cᵀf)||_1`` (``local``: stable neurons fixed),
    for ReLU networks: :func:`estimate3` and :func:`estimate4` take the others lowered
    (:func:`~lipopt.estimators.base.runs_lowered`)."""
    if not network.is_relu:
        raise EstimatorOutOfScope(
            f"LiPopt-{k} reads ReLU networks only; estimate3/estimate4 run others lowered"
        )
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=LINF_ONLY, method=f"LiPopt-{k}")
        net = hidden_layers(prob, f"LiPopt-{k}", 2, bounds)
        fixed = [_stable(lo, hi) if local else {} for lo, hi in net.z_bounds]
        poly, groups = objective(net, fixed)
        value, extra, count = solve(poly, groups, k) if poly else (0.0, 0.0, 0)
    detail = {"k": k, "local": local, "products": count, "correction": extra,
              "method": f"LiPopt-{k} (Latorre et al. 2020)", **box_note(net)}  # fmt: skip
    return Estimate(f"lipopt{k}", value, KIND, elapsed[0], detail)


@runs_lowered
def estimate3(network: Network, domain: Domain, norm: InputNorm | str = InputNorm.LINF,
              c: ArrayLike | None = None, **options: Any) -> Estimate:  # fmt: skip
    """LiPopt-3 (Latorre et al. 2020)."""
    return estimate_k(3, network, domain, norm, c, **options)


@runs_lowered
def estimate4(network: Network, domain: Domain, norm: InputNorm | str = InputNorm.LINF,
              c: ArrayLike | None = None, **options: Any) -> Estimate:  # fmt: skip
    """LiPopt-4 (Latorre et al. 2020)."""
    return estimate_k(4, network, domain, norm, c, **options)
