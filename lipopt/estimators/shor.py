"""SHOR: the first-order moment (Shor) relaxation of the polynomial problem of Chen, Lasserre,
Magron and Pauwels (NeurIPS 2020) — an upper bound on the local Lipschitz constant.

The problem (:mod:`lipopt.estimators.semialgebraic`) maximises ``vᵀ C v`` over points whose
lifted vector ``v = (1, x, u, t)`` satisfies ``vᵀ G_k v >= 0`` and ``vᵀ H_k v = 0``. Its dual
relaxation, solved here with cvxpy,

    minimise γ  s.t.  M = γ e₀e₀ᵀ − C − Σ_k λ_k G_k − Σ_k μ_k H_k ⪰ 0,  λ >= 0,

bounds it: for a feasible point ``vᵀ C v = γ − Σ λ_k vᵀG_k v − vᵀ M v <= γ``. It equals the
SHOR moment relaxation's value (the SDP dual of ``max ⟨C, P⟩`` over moment matrices ``P ⪰ 0``).

**The number is proven, not read off the solver.** The multipliers the solver returns are
re-checked in numpy: with ``λ`` clipped to ``>= 0``, ``M`` rebuilt and its least eigenvalue
``λ_min``, every feasible point obeys ``vᵀ C v <= γ + max(0, −λ_min + ε) |v|²``, and
``|v|² <= T`` from the box (:attr:`~lipopt.estimators.semialgebraic.Lifted.trace_bound`), ``ε``
a floating-point margin for the eigenvalue. That bound is the value; ``detail`` gives the
solver's γ, ``λ_min`` and the correction.

Two hidden layers: the cubic objective needs the lifted blocks of the seed's appendix; that
relaxation (HR-1, :mod:`lipopt.estimators.two_layers`) is built in the moment form and proven by
:func:`~lipopt.estimators.moments.proven_bound`; ``detail["relaxation"]`` says ``HR-1``.

Scope: one or two hidden layers (deeper ones are refused), the ℓ∞ input norm, boxes and ℓ∞
balls, a scalar ``cᵀ f``. Cost (one layer): an SDP with one PSD block of side ``1 + 2d + n``.
Needs cvxpy (``pip install 'lipopt[sdp]'``: Clarabel, or SCS via ``solver="SCS"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    EstimatorUnavailable,
    FloatArray,
    Kind,
    problem,
    solve_sdp,
    stopwatch,
)
from lipopt.estimators.hr2 import layered_relaxation, solve_proven
from lipopt.estimators.semialgebraic import ALL_NORMS, Layered, Lifted, hidden_layers, lift
from lipopt.network import Network
from lipopt.norms import InputNorm

NAME = "shor"
KIND = Kind.UPPER
INSTALL_HINT = "pip install 'lipopt[sdp]'"

#: floating-point margin on the least eigenvalue, times the matrix's size and norm
EIGEN_MARGIN = 64 * np.finfo(float).eps


def _cvxpy() -> Any:
    try:
        import cvxpy
    except ImportError:
        raise EstimatorUnavailable(f"SHOR needs cvxpy: {INSTALL_HINT}") from None
    return cvxpy


def _columns(size: int, forms: tuple[FloatArray, ...]) -> Any:
    """Sparse ``K`` with ``vec(Σ_k w_k Q_k) = K w`` (column-major vec)."""
    from scipy import sparse

    if not forms:
        return sparse.csc_matrix((size * size, 0))
    flat = np.stack([q.reshape(-1, order="F") for q in forms], axis=1)
    return sparse.csc_matrix(flat)


def certified_bound(
    lifted: Lifted, gamma: float, lam: FloatArray, mu: FloatArray
) -> tuple[float, float]:
    """The proven bound ``γ + max(0, −λ_min(M) + ε)·T`` of multipliers, and ``λ_min(M)``."""
    m = -lifted.objective.copy()
    m[0, 0] += gamma
    for weight, form in zip(np.maximum(lam, 0.0), lifted.inequalities):
        m -= weight * form
    for weight, form in zip(mu, lifted.equalities):
        m -= weight * form
    m = (m + m.T) / 2
    eigen = np.linalg.eigvalsh(m)
    margin = EIGEN_MARGIN * m.shape[0] * float(np.abs(eigen).max())
    shortfall = max(0.0, -float(eigen.min()) + margin)
    return gamma + shortfall * lifted.trace_bound, float(eigen.min())


def _solve(cp: Any, lifted: Lifted, solver: str | None, options: dict[str, Any]) -> dict:
    """Solve the dual SDP; the solver's γ and multipliers."""
    size = lifted.size
    lam = cp.Variable(len(lifted.inequalities), nonneg=True)
    mu = cp.Variable(len(lifted.equalities))
    gamma = cp.Variable()
    corner = np.zeros(size * size)
    corner[0] = 1.0
    flat = (
        gamma * corner
        - lifted.objective.reshape(-1, order="F")
        - _columns(size, lifted.inequalities) @ lam
        - _columns(size, lifted.equalities) @ mu
    )
    m = cp.reshape(flat, (size, size), order="F")
    sdp = cp.Problem(cp.Minimize(gamma), [(m + m.T) / 2 >> 0])
    chosen = solve_sdp(sdp, solver, options, "SHOR: ", tight=True, largest_side=size)
    return {
        "solver": chosen,
        "status": sdp.status,
        "gamma": float(gamma.value),
        "lam": np.asarray(lam.value, dtype=float).reshape(-1),
        "mu": np.asarray(mu.value if mu.size else np.zeros(0), dtype=float).reshape(-1),
    }


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    solver: str | None = None,
    bounds: str = "linear",
    **options: Any,
) -> Estimate:
    """The proven SHOR bound on ``max ||∇(cᵀf)||_1`` over the domain.

    Args:
        solver: a cvxpy SDP solver name (default: Clarabel if installed, else SCS).
        bounds: the pre-activation bounds of the redundant constraints (``linear`` or
            ``interval``).
        options: passed to ``cvxpy.Problem.solve``.
    """
    cp = _cvxpy()
    with stopwatch() as elapsed:
        net = hidden_layers(problem(network, domain, norm, c, norms=ALL_NORMS), "SHOR", 2, bounds)
        if net.depth == 2:
            facts = solve_proven(layered_relaxation(net, 1), solver, options)
            value, detail = facts.pop("value"), {**facts, "relaxation": "HR-1"}
        else:
            value, detail = _one_layer(cp, net, solver, options)
    return Estimate(NAME, value, KIND, elapsed[0], detail)


def _one_layer(cp: Any, net: Layered, solver: str | None, options: dict) -> tuple[float, dict]:
    """SHOR of one hidden layer as quadratic forms, with its eigenvalue proof."""
    lifted = lift(net.weights[0], net.biases[0], net.w, net.box, net.z_bounds[0], net.norm)
    facts = _solve(cp, lifted, solver, options)
    value, least = certified_bound(lifted, facts["gamma"], facts["lam"], facts["mu"])
    return value, {
        "solver": facts["solver"], "status": facts["status"], "gamma_solver": facts["gamma"],
        "least_eigenvalue": least, "correction": value - facts["gamma"],
        "trace_bound": lifted.trace_bound, "block_side": lifted.size,
    }  # fmt: skip
