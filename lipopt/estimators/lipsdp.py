"""LipSDP (Fazlyab et al. 2019): an ℓ2 Lipschitz bound from a semidefinite program.

For the scalar network ``x -> c^T f(x)`` with hidden weights ``W_1..W_{L-1}`` (N hidden neurons
in all) and last row ``w = c^T W_L``, stack ``v = (x, h_1, ..., h_{L-1})`` and let
``A v = (W_1 x, W_2 h_1, ..., W_{L-1} h_{L-2})`` (all pre-activations) and
``B v = (h_1, ..., h_{L-1})``.
ReLU is slope-restricted in ``[α, β] = [0, 1]``: for two inputs,
``(Δφ - α Δz)(β Δz - Δφ) >= 0`` per neuron. With multipliers T (PSD-compatible, see below) the
quadratic constraint reads ``[Δz; Δφ]^T Q [Δz; Δφ] >= 0``,
``Q = [[-2αβ T, (α+β) T], [(α+β) T, -2T]]``. If

    M(ρ, T) = [A; B]^T Q [A; B] - diag(ρ I_d, 0) + E^T w^T w E  ⪯ 0

(E picks the last hidden layer), then ``|c^T f(x) - c^T f(y)| <= sqrt(ρ) ||x - y||_2``: the SDP
``min ρ`` over ``(ρ, T)`` gives the ℓ2 bound ``sqrt(ρ*)``.

Multipliers:

* ``variant="neuron"`` (LipSDP-Neuron, the default): ``T = diag(λ)``, ``λ >= 0``. Each term is
  one neuron's slope restriction, so the bound is sound. With ``local=True``, neurons that interval
  bounds prove stable on the domain get their exact slope (``α = β = 1`` active, ``0`` inactive):
  a tighter bound valid on the domain.
* ``variant="network"`` (LipSDP-Network, what the LipMIP paper ran): adds couplings
  ``Σ_{i<j} λ_ij (e_i - e_j)(e_i - e_j)^T``, ``λ_ij >= 0``. These coupled constraints do not hold
  for ReLU in general: lipopt's tests exhibit networks with one hidden layer of three neurons
  whose "network" value is below the exact ℓ2 constant (found by enumerating the activation
  regions). lipopt therefore reports this variant as a *heuristic*.

Soundness of the number: the solver's ρ is re-certified in numpy. With the returned multipliers
(clipped to ``>= 0``) and ``M_0 = M(0, T) = [[X, Y], [Yᵀ, Z]]`` (input block first), ``M(ρ, T) ⪯ 0``
iff ``Z ⪯ 0`` and ``ρ >= λ_max(X - Y Z⁺ Yᵀ)`` (Schur complement); that ρ is used, and
``detail["certified"]`` says whether ``Z ⪯ 0`` held (if not, the solver's ρ inflated by 1e-6 is
returned and the bound rests on the solver's tolerance).

Scaling to the input norm: ``sqrt(d)`` for ℓ∞ (``||g||_1 <= sqrt(d) ||g||_2``), 1 for ℓ1
(``||g||_∞ <= ||g||_2``); the paper scales by ``sqrt(d)`` for both. Cost: an SDP of size
``d + N`` with ``N`` (neuron) or ``N²/2`` (network) multipliers — seconds. Needs cvxpy and an
SDP solver (``pip install 'lipopt[sdp]'``: Clarabel; SCS also works).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.bounds.interval import NeuronState, interval_bounds
from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    EstimatorUnavailable,
    FloatArray,
    Kind,
    problem,
    runs_lowered,
    solve_sdp,
    stopwatch,
)
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm

NAME = "lipsdp"
KIND = Kind.UPPER
INSTALL_HINT = "pip install 'lipopt[sdp]'"
VARIANTS = ("neuron", "network")


def _cvxpy() -> Any:
    try:
        import cvxpy
    except ImportError:
        raise EstimatorUnavailable(f"LipSDP needs cvxpy: {INSTALL_HINT}") from None
    return cvxpy


def _structure(
    weights: list[FloatArray],
) -> tuple[int, int, FloatArray, FloatArray, FloatArray]:
    """``(d, N, A, B, E^T w^T w E)`` of the stacked vector ``v = (x, h_1, ..., h_{L-1})``."""
    d = weights[0].shape[1]
    hidden = [w.shape[0] for w in weights[:-1]]
    n = int(sum(hidden))
    a = np.zeros((n, d + n))
    row, col = 0, 0
    for w in weights[:-1]:
        a[row : row + w.shape[0], col : col + w.shape[1]] = w
        row += w.shape[0]
        col += w.shape[1]
    b = np.hstack([np.zeros((n, d)), np.eye(n)])
    last = np.zeros((d + n, d + n))
    w_out = weights[-1].reshape(-1)
    start = d + n - w_out.size
    last[start:, start:] = np.outer(w_out, w_out)
    return d, n, a, b, last


def _m0(
    t: FloatArray,
    alpha: FloatArray,
    beta: FloatArray,
    a: FloatArray,
    b: FloatArray,
    last: FloatArray,
) -> FloatArray:
    """``M(0, T) = [A;B]^T Q [A;B] + E^T w^T w E`` for numeric multipliers T.

    ``Q = [[-2 T diag(αβ), T diag(α+β)], [diag(α+β) T, -2T]]`` (per-neuron slopes need a
    diagonal T; with α = 0, β = 1 it is Fazlyab et al.'s ``[[0, T], [T, -2T]]`` for any T).
    """
    q_zz = -2.0 * t * (alpha * beta)[None, :]
    q_zh = t * (alpha + beta)[None, :]
    cross = a.T @ q_zh @ b
    return a.T @ q_zz @ a + cross + cross.T - 2.0 * b.T @ t @ b + last


def certify_rho(m0: FloatArray, d: int) -> tuple[float, bool]:
    """Smallest ρ with ``M_0 - diag(ρ I_d, 0) ⪯ 0``, and whether it could be certified.

    Schur complement on ``M_0 = [[X, Y], [Yᵀ, Z]]``: ``ρ = λ_max(X - Y Z⁺ Yᵀ)`` when ``Z ⪯ 0``;
    the answer is then checked directly (``λ_max(M_0 - diag(ρ I, 0)) <= 1e-9 ||M_0||``), which
    also covers the range condition of the pseudo-inverse.
    """
    x, y, z = m0[:d, :d], m0[:d, d:], m0[d:, d:]
    scale = max(1.0, float(np.abs(np.linalg.eigvalsh(m0)).max()))
    if z.size == 0:
        return float(np.linalg.eigvalsh(x).max()), True
    if np.linalg.eigvalsh(z).max() > 1e-9 * scale:
        return float("nan"), False
    schur = x - y @ np.linalg.pinv(z, rcond=1e-12, hermitian=True) @ y.T
    rho = float(np.linalg.eigvalsh((schur + schur.T) / 2).max()) + 1e-12 * scale
    check = m0.copy()
    check[:d, :d] -= rho * np.eye(d)
    return rho, bool(np.linalg.eigvalsh(check).max() <= 1e-9 * scale)


def _term_matrix(size: int, pairs: list[tuple[FloatArray, FloatArray, float, float]]) -> Any:
    """Sparse ``K`` with ``vec(Σ_k μ_k S_k) = K μ``, one column per multiplier.

    Each ``S_k`` is ``γ u uᵀ + δ (u vᵀ + v uᵀ) - 2 v vᵀ`` for a pre-activation row ``u`` (of A)
    and post-activation row ``v`` (of B): the matrix ``[A;B]ᵀ Q [A;B]`` that one multiplier
    contributes (γ = -2αβ, δ = α+β for one neuron; differences of rows for a coupling).
    """
    from scipy import sparse

    rows, cols, vals = [], [], []
    for k, (u, v, gamma, delta) in enumerate(pairs):
        term = gamma * np.outer(u, u) + delta * (np.outer(u, v) + np.outer(v, u))
        term -= 2.0 * np.outer(v, v)
        flat = term.reshape(-1, order="F")
        nz = np.flatnonzero(flat)
        rows.append(nz)
        cols.append(np.full(nz.size, k))
        vals.append(flat[nz])
    return sparse.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(size * size, len(pairs)),
    )


def _solve(
    cp: Any,
    structure: tuple[int, int, FloatArray, FloatArray, FloatArray],
    alpha: FloatArray,
    beta: FloatArray,
    variant: str,
    solver: str | None,
    options: dict[str, Any],
) -> tuple[float, dict[str, Any]]:
    """Solve ``min ρ s.t. M(ρ, T) ⪯ 0``; return the re-certified ρ and solver facts.

    ``M`` is assembled as ``vec(M) = K μ + vec(E^T w^T w E) - ρ vec(diag(I_d, 0))`` with a sparse
    ``K`` (one column per multiplier μ), which keeps cvxpy's compilation fast.
    """
    d, n, a, b, last = structure
    size = d + n
    terms = [(a[i], b[i], -2.0 * alpha[i] * beta[i], alpha[i] + beta[i]) for i in range(n)]
    couples: list[tuple[int, int]] = []
    if variant == "network":
        couples = [(i, j) for i in range(n) for j in range(i + 1, n)]
        terms += [(a[i] - a[j], b[i] - b[j], 0.0, 1.0) for i, j in couples]
    k_mat = _term_matrix(size, terms)
    mu = cp.Variable(len(terms), nonneg=True)
    rho = cp.Variable(nonneg=True)
    selector = np.zeros((size, size))
    selector[:d, :d] = np.eye(d)
    m = cp.reshape(k_mat @ mu, (size, size), order="F") + last - rho * selector
    sdp = cp.Problem(cp.Minimize(rho), [(m + m.T) / 2 << 0])
    chosen = solve_sdp(sdp, solver, options, "LipSDP: ")  # ρ is re-certified below
    weights = np.maximum(np.asarray(mu.value).reshape(-1), 0.0)
    t_num = np.diag(weights[:n])
    for (i, j), lam in zip(couples, weights[n:]):
        t_num[i, i] += lam
        t_num[j, j] += lam
        t_num[i, j] -= lam
        t_num[j, i] -= lam
    rho_cert, certified = certify_rho(_m0(t_num, alpha, beta, a, b, last), d)
    rho_solver = float(rho.value)
    rho_used = max(rho_cert, 0.0) if certified else rho_solver * (1 + 1e-6)
    facts = {
        "solver": chosen,
        "status": sdp.status,
        "rho_solver": rho_solver,
        "certified": certified,
    }
    return rho_used, facts


@runs_lowered
def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    variant: str = "neuron",
    local: bool = False,
    solver: str | None = None,
    **options: Any,
) -> Estimate:
    """``scale · sqrt(ρ*)`` from the LipSDP program of the scalar network ``c^T f``.

    Args:
        variant: ``"neuron"`` (diagonal multipliers; a certified upper bound) or ``"network"``
            (the paper's coupled multipliers; reported as heuristic, see the module docs).
        local: neuron variant only — exact slopes for neurons stable on the domain.
        solver: a cvxpy SDP solver name (default: Clarabel if installed, else SCS).
        options: passed to ``cvxpy.Problem.solve``.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if local and variant == "network":
        raise ValueError("local slopes are only supported for variant='neuron'")
    cp = _cvxpy()
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)
        weights = prob.scalar_weights()
        structure = _structure(weights)
        n = structure[1]
        if n == 0:  # an affine map: its l2 constant is ||c^T W||_2, no SDP needed
            rho_used, facts = float(np.sum(weights[0] ** 2)), {"status": "affine"}
        else:
            alpha, beta = np.zeros(n), np.ones(n)
            if local:
                state = np.concatenate(interval_bounds(network, domain, prob.c).states)
                alpha = np.where(state == NeuronState.ACTIVE, 1.0, 0.0)
                beta = np.where(state == NeuronState.INACTIVE, 0.0, 1.0)
            rho_used, facts = _solve(cp, structure, alpha, beta, variant, solver, options)
        l2 = float(np.sqrt(rho_used))
        value = prob.l2_scale() * l2
    kind = KIND if variant == "neuron" else Kind.HEURISTIC
    detail = {"l2_bound": l2, "scale": prob.l2_scale(), "variant": variant, "local": local}
    return Estimate(NAME, value, kind, elapsed[0], {**detail, **facts})
