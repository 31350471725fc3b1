"""The certificate behind ECLipsE and ECLipsE-Gen-Local (Xu & Sivaranjani, NeurIPS 2024, TMLR
2026), checked in numpy: any multipliers give a sound ℓ2 bound once these matrices are
positive definite, so the SDP solver only chooses them and its tolerance cannot make the
number unsound.

For the scalar network with hidden weights ``W_1..W_{L-1}`` and last row ``w``, let ``v_0 = Δx``
and ``v_i = Δh_i`` for two inputs. Each hidden neuron's slope lies in ``[α_j, β_j]`` (ReLU:
``[0, 1]``; a neuron of known sign on the domain: ``[1, 1]`` or ``[0, 0]``), so with ``λ_j >= 0``
``q_i = Σ_j λ_j (Δh_j - α_j Δz_j)(β_j Δz_j - Δh_j) >= 0``. With ``M_0 = I`` and

    X_i = M_{i-1} + W_iᵀ diag(λ α β) W_i,     G_i = ½ diag(λ (α + β)) W_i,
    M_i = diag(λ) - G_i X_i⁻¹ G_iᵀ,

the block matrix ``B_i = [[X_i, -G_iᵀ], [-G_i, diag(λ) - M_i]] ⪰ 0`` gives, by induction,
``||Δx||² - Σ_{k<=i} q_k >= v_iᵀ M_i v_i`` (minimise over ``v_{i-1}``); so with ``M = M_{L-1}``,
``|w v| <= sqrt(w M⁻¹ wᵀ) ||Δx||`` and the same bounds each pre-activation ``z_j = w_j v`` of the
next layer, which is how the local variant finds its slopes. (α = 0, β = 1 everywhere is
ECLipsE's recursion ``X_i = Λ_i - ¼ Λ_i W_i X_{i-1}⁻¹ W_iᵀ Λ_i``.)

Rounding: :func:`step` shifts ``M_i`` down by a small multiple of its norm and then checks
``X_i ≻ 0``, ``M_i ≻ 0`` and ``B_i ⪰ 0`` with eigenvalues, each beyond ``n ε`` times the
matrix's norm; :func:`final_bound` checks ``L² M - wᵀw ⪰ 0`` for the value it returns.
"""

from __future__ import annotations

import numpy as np

from lipopt.estimators.base import FloatArray

#: first relative shift of M_i below the computed value; doubled up to SHIFT_TRIES times
SHIFT = 1e-10
SHIFT_TRIES = 12


def _sym(matrix: FloatArray) -> FloatArray:
    return 0.5 * (matrix + matrix.T)


def _noise(matrix: FloatArray) -> float:
    """What an eigenvalue of ``matrix`` may be off by in float64 (a generous ``8 n ε ||A||``)."""
    return 8.0 * matrix.shape[0] * np.finfo(np.float64).eps * float(np.abs(matrix).sum(1).max())


def positive(matrix: FloatArray, strict: bool = True) -> bool:
    """``matrix ≻ 0`` (``⪰ 0`` if not ``strict``) beyond float64's eigenvalue error."""
    if not np.all(np.isfinite(matrix)):
        return False
    lowest = float(np.linalg.eigvalsh(_sym(matrix)).min())
    return lowest > _noise(matrix) if strict else lowest >= _noise(matrix)


def step(
    m_prev: FloatArray, w: FloatArray, lam: FloatArray, alpha: FloatArray, beta: FloatArray
) -> FloatArray | None:
    """``M_i`` from ``M_{i-1}``, the layer's weights and slopes and multipliers ``λ >= 0``,
    checked (module docs); None where the multipliers do not certify a step."""
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
    x = _sym(m_prev + w.T @ ((lam * alpha * beta)[:, None] * w))
    if not positive(x):
        return None
    g = 0.5 * (lam * (alpha + beta))[:, None] * w
    raw = _sym(np.diag(lam) - g @ np.linalg.solve(x, g.T))
    scale = max(float(np.linalg.norm(raw, 2)), np.finfo(np.float64).tiny)
    shift = SHIFT * scale
    for _ in range(SHIFT_TRIES):
        m = raw - shift * np.eye(raw.shape[0])
        if not positive(m):
            return None
        block = np.block([[x, -g.T], [-g, np.diag(lam) - m]])
        if positive(block, strict=False):
            return m
        shift *= 4.0
    return None


#: a solver's ``λ`` may leave ``M_i`` singular (some ``λ_j = 0``, or the SDP pushed ``M_i`` to
#: the edge of the cone); any ``λ >= 0`` is sound, so before giving up ``λ`` is floored at a
#: share of its largest entry and scaled by ``t < 1``, which adds ``t (1 - t)/4 · ΛWX⁻¹WᵀΛ`` to
#: ``M_i / t`` and costs at most a factor ``1/sqrt(t)`` on the bound: (floor, t) pairs
REPAIRS = ((0.0, 1.0), (0.0, 1 - 1e-6), (1e-6, 1 - 1e-6), (1e-3, 1 - 1e-3))


def repaired_step(
    m_prev: FloatArray, w: FloatArray, lam: FloatArray, alpha: FloatArray, beta: FloatArray
) -> FloatArray | None:
    """:func:`step` with ``λ``, else with each repair of :data:`REPAIRS`; None if none
    certifies."""
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
    top = float(lam.max()) if lam.size else 0.0
    for floor, t in REPAIRS:
        new = step(m_prev, w, t * np.maximum(lam, floor * top), alpha, beta)
        if new is not None:
            return new
    return None


def final_bound(m: FloatArray, w: FloatArray) -> float | None:
    """The least ``L`` found with ``L² M - wᵀw ⪰ 0`` (checked), from ``L² = λ_max(w M⁻¹ wᵀ)``;
    None if ``M`` is not positive definite."""
    if not positive(m):
        return None
    square = float(np.linalg.eigvalsh(_sym(w @ np.linalg.solve(m, w.T))).max())
    value = np.sqrt(max(square, 0.0)) * (1.0 + 1e-9)
    for _ in range(SHIFT_TRIES):
        if positive(value**2 * m - w.T @ w, strict=False):
            return float(value)
        value *= 1.0 + 1e-6
    return None


def neuron_bounds(m: FloatArray, w: FloatArray) -> FloatArray:
    """``sqrt(w_j M⁻¹ w_jᵀ)`` per row: ``|Δz_j| <= it · ||Δx||_2`` (``M`` certified)."""
    quad = np.einsum("ij,ji->i", w, np.linalg.solve(m, w.T))
    return np.sqrt(np.maximum(quad, 0.0)) * (1.0 + 1e-9)


def fast_multipliers(
    m: FloatArray, w: FloatArray, alpha: FloatArray, beta: FloatArray
) -> FloatArray:
    """ECLipsE-Fast's closed form (Gen-Local's CF for slopes ``[0, β]``):
    ``λ = 2 / λ_max(D W M⁻¹ Wᵀ D)`` for every neuron, ``D = diag(α + β)``; then
    ``M_i ⪰ (λ/2) I`` when ``α = 0``."""
    d = (alpha + beta)[:, None] * w
    top = float(np.linalg.eigvalsh(_sym(d @ np.linalg.solve(m, d.T))).max())
    return np.full(w.shape[0], 2.0 / top if top > 0 else 1.0)
