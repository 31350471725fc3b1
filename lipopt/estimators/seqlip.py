"""Greedy SeqLip (Virmaux & Scaman 2018), made local as the LipMIP paper suggests (App. F.1).

Write the scalar network's weights (``W_1, ..., W_{L-1}``, and ``c^T W_L`` last) by their SVDs
``W_k = U_k Σ_k V_k^T``. For any activation pattern the Jacobian is
``W_L D_{L-1} ··· D_1 W_1``, and inserting ``V_k^T V_k`` and ``U_k U_k^T`` splits it into the
per-layer-pair factors of SeqLip (their Theorem 3):

    L_2 <= Π_{k=1}^{L-1} max_{σ_k} || Σ̃_{k+1} V_{k+1}^T diag(σ_k) U_k Σ̃_k ||_2,

with ``Σ̃_k = Σ_k^{1/2}`` except ``Σ̃_1 = Σ_1`` and ``Σ̃_L = Σ_L`` (every singular value is split
between the two factors it appears in). With the exact maxima over ``σ_k ∈ {0,1}^{n_k}`` this is
an upper bound on the global ℓ2 constant; *Greedy* SeqLip replaces each maximum by a greedy
search (start at all ones; flip the single coordinate that most increases the spectral norm;
stop when no flip helps), so the result carries no guarantee: a heuristic.

Local version: neurons that interval bounds prove always active (inactive) on the domain have
``σ = 1`` (``σ = 0``) fixed; only unstable neurons are searched.

Scaling to the input norm as for NaiveUB: ``sqrt(d)`` for ℓ∞ (``||g||_1 <= sqrt(d) ||g||_2``), 1
for ℓ1 (``||g||_∞ <= ||g||_2``). (The paper scales by ``sqrt(d)`` in both cases.)
Cost: per layer pair, O(n_k²) spectral norms of small matrices per greedy pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.bounds.interval import NeuronState, interval_bounds
from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    FloatArray,
    Kind,
    problem,
    runs_lowered,
    stopwatch,
)
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm

NAME = "seqlip"
KIND = Kind.HEURISTIC


def greedy_max_spectral(
    left: FloatArray, right: FloatArray, fixed: NDArray[np.int8] | None = None
) -> tuple[float, FloatArray]:
    """Greedy ``max_σ ||left · diag(σ) · right||_2`` over ``σ ∈ {0,1}^n``.

    ``fixed[i]`` is 0 or 1 for a coordinate that may not change, -1 (or None) for a free one.
    Start at σ = 1 on the free coordinates; repeatedly apply the single flip with the largest
    increase; stop when none increases the norm. Returns ``(norm, σ)``.
    """
    n = left.shape[1]
    free = np.ones(n, dtype=bool) if fixed is None else np.asarray(fixed) < 0
    sigma = np.ones(n) if fixed is None else np.where(free, 1.0, np.asarray(fixed, dtype=float))

    def spectral(s: FloatArray) -> float:
        return float(np.linalg.norm((left * s) @ right, ord=2))

    current = spectral(sigma)
    while True:
        best_gain, best_i = 0.0, -1
        for i in np.flatnonzero(free):
            sigma[i] = 1.0 - sigma[i]
            value = spectral(sigma)
            sigma[i] = 1.0 - sigma[i]
            if value - current > best_gain:
                best_gain, best_i = value - current, int(i)
        if best_i < 0 or best_gain <= 1e-12 * max(current, 1.0):
            return current, sigma
        sigma[best_i] = 1.0 - sigma[best_i]
        current += best_gain


@runs_lowered
def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    local: bool = True,
    **options: Any,
) -> Estimate:
    """Greedy SeqLip ℓ2 estimate of ``c^T f`` times the norm-equivalence factor.

    Args:
        local: fix the neurons that interval bounds show stable on the domain (paper F.1's
            local variant); False: all neurons free (the original, global SeqLip).
    """
    if options:
        raise TypeError(f"seqlip got unexpected options {sorted(options)}")
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)
        weights = prob.scalar_weights()
        svds = [np.linalg.svd(w, full_matrices=False) for w in weights]
        states: list[NDArray[np.int8] | None] = [None] * (len(weights) - 1)
        if local and len(weights) > 1:
            bounds = interval_bounds(network, domain, prob.c)
            states = [
                np.where(
                    s == NeuronState.UNSTABLE, -1, np.where(s == NeuronState.ACTIVE, 1, 0)
                ).astype(np.int8)
                for s in bounds.states
            ]
        last = len(weights) - 1
        factors: list[float] = []
        if last == 0:
            factors.append(float(svds[0][1].max()))
        for k in range(last):
            u_k, s_k, _ = svds[k]
            _, s_next, vt_next = svds[k + 1]
            right = u_k * (s_k if k == 0 else np.sqrt(s_k))  # U_k Σ̃_k
            left = (s_next if k + 1 == last else np.sqrt(s_next))[:, None] * vt_next
            value, _ = greedy_max_spectral(left, right, states[k])
            factors.append(value)
        l2 = float(np.prod(factors))
        value = prob.l2_scale() * l2
    return Estimate(
        NAME,
        value,
        KIND,
        elapsed[0],
        {"l2_estimate": l2, "scale": prob.l2_scale(), "factors": factors, "local": local},
    )
