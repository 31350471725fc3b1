"""A certified upper bound on ``max_{x ∈ D} ||∇(c^T f)(x)||_{α*}`` by back-substituting the
dual norm itself through the backward pass, tighter than FastLip's interval box.

Notation of :mod:`lipopt.bounds.linear`: ``y_{K-1} = W_K^T w``, ``s_k = a_k ⊙ y_k``,
``y_{k-1} = W_k^T s_k``, ``g = ∇f = W_0^T s_0``; sound bounds ``y_k ∈ [ly, uy]`` and
``g ∈ [l, u]`` (any :class:`NetworkBounds` for the same seed, by default :func:`linear_bounds`).
Every line below holds for every value of every binary ``a`` that the bounds allow, i.e. for
every activation pattern reachable in ``D``; so is the number it leads to.

**The objective.** ``||g||_1 = Σ_j φ(g_j)`` with ``φ = |·|`` (ℓ∞ input) and
``||g||_2^2 = Σ_j φ(g_j)`` with ``φ = (·)^2`` (ℓ2 input) are sums of convex terms. For any slope
``λ`` the line ``λ g + max(φ(l) - λ l, φ(u) - λ u)`` lies above ``φ`` at both ends of ``[l, u]``,
hence (φ convex) on all of it. The chord (``λ = (φ(u) - φ(l)) / (u - l)``) is the default; a
search may take any ``λ`` between ``φ'(l)`` and ``φ'(u)`` (``[-1, 1]`` for ``|·|``, ``[2l, 2u]``
for the square). So ``Σ_j φ(g_j) <= λ·g + μ``: one linear objective on ``g``. For ℓ1 input,
``||g||_∞ = max_j max(g_j, -g_j)``: the ``2d`` rows ``±e_j``, each bounded on its own.

**The switches.** An unstable neuron has ``s ∈ {0, y}``, so ``min(y, 0) <= s <= max(y, 0)`` for
both values of ``a``; take ``[l', u'] = [min(ly, 0), max(uy, 0)] ⊇ [ly, uy]``. For every
``t ∈ [0, 1]`` (indeed every real ``t``):

* ``U_t(y) = t y + max(-t l', (1 - t) u')`` has ``U_t(l') >= 0 = max(l', 0)`` and
  ``U_t(u') >= u' = max(u', 0)``; ``max(y, 0)`` is convex, so ``U_t >= max(y, 0) >= s`` on
  ``[l', u']``;
* ``L_t(y) = t y + min((1 - t) l', -t u')`` has ``L_t(l') <= l'`` and ``L_t(u') <= 0``;
  ``min(y, 0)`` is concave, so ``L_t <= min(y, 0) <= s`` on ``[l', u']``.

``t = u'/(u' - l')`` (upper) and ``t = -l'/(u' - l')`` (lower) are the chords of
:func:`lipopt.bounds.relaxation.switch_relaxation`. Stable neurons are exact (``s = y``,
``s = 0``).

**Two-piece activations** ``h = α z + (1 - α) relu(z)`` (:mod:`lipopt.activation`). The switch
is ``s = D y`` with ``D = 1`` on an ACTIVE neuron (every identity neuron), ``D = α`` on an
INACTIVE one and, on an UNSTABLE one, ``D = α + (1 - α) a`` with ``a ∈ {0, 1}`` free, so
``D ∈ [min(α, 1), max(α, 1)]`` once relaxed. Write ``s = α y + (1 - α) t`` with ``t = a y``: ``t``
is the ReLU switch above, so ``L_t <= t <= U_t`` on ``[l', u']`` for every ``a``, and a
coefficient ``c`` on ``s`` splits into ``c α`` on ``y`` (exact) and ``c (1 - α)`` on ``t``, which
takes ``U`` where it is ``>= 0`` and ``L`` where ``< 0`` (each term only grows; the sign of
``1 - α`` decides, so ``α > 1`` simply swaps the lines). Every step of the argument holds for
every ``a``, so for every reachable pattern; ``α = 0`` is the ReLU case (and takes its code).

**Back-substitution.** ``λ·g = (W_0 λ)·s_0``; a coefficient ``≥ 0`` on ``s_k`` takes ``U``, one
``< 0`` takes ``L`` (each term only grows), ``y_k = W_{k+1}^T s_{k+1}`` is substituted exactly, and
at the top ``Λ·w`` is maximised exactly over the seed set (``Λ·c``, or the support function of an
output norm's dual ball). The number is at least ``φ``-sum (or ``±g_j``) at every reachable
pattern and seed, hence at least the Lipschitz constant (the square root of it for ℓ2).

**Slopes.** The bound holds for every ``t`` and ``λ`` in their boxes, so a projected gradient
search over them (:mod:`lipopt.bounds.jacobian_slopes`, each iterate clipped into the box) never
leaves the sound set; the best parameters are re-evaluated here, in numpy with outward rounding
(``ROUNDING`` and ``OUTWARD`` of :mod:`lipopt.bounds.linear`), and that is the number reported.

**The result** is the least of the chord bound, the searched bound and FastLip's
``||max(|l|, |u|)||_{α*}`` (each sound): never above FastLip on the same bounds. For ℓ2 input
FastLip is ``sqrt(Σ_j max(l_j^2, u_j^2))``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.back_substitution import back_substitute_rows
from lipopt.bounds.concretise import _outward, _seed_range
from lipopt.bounds.interval import NetworkBounds, NeuronState, Seed, slopes_of
from lipopt.bounds.jacobian_slopes import SlopeProblem, Thetas, search_slopes
from lipopt.bounds.linear import linear_bounds
from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.norms import InputNorm, dual_norm

FloatArray = NDArray[np.float64]

#: the convex term of each input norm's objective; ``None``: the rows ``±e_j`` (ℓ1 input)
TERMS: dict[InputNorm, str | None] = {
    InputNorm.LINF: "abs",
    InputNorm.L2: "square",
    InputNorm.L1: None,
}


@dataclass(frozen=True)
class JacobianBound:
    """A certified upper bound on the local Lipschitz constant of ``c^T f`` (or of ``f`` under
    an output norm).

    Attributes:
        value: the bound: the least of ``chord``, the searched bound and ``fastlip``.
        fastlip: ``||max(|l|, |u|)||_{α*}`` of the gradient bounds used.
        chord: the back-substituted bound with the chord lines (no search).
        seconds: wall time, bounds included when they were computed here.
        iterations: slope-search steps taken (0: none).
    """

    value: float
    fastlip: float
    chord: float
    seconds: float
    iterations: int


def fastlip_value(bounds: NetworkBounds, norm: InputNorm) -> float:
    """FastLip: the dual norm of the elementwise magnitude of the gradient's bounds."""
    magnitude = np.maximum(np.abs(bounds.input_grad_lower), np.abs(bounds.input_grad_upper))
    return float(dual_norm(magnitude, norm))


def slope_problem(
    network: Network, bounds: NetworkBounds, seed: Seed, norm: InputNorm
) -> SlopeProblem:
    """The arrays the back-substitution reads, from the bounds and the norm."""
    states = bounds.states
    slopes = slopes_of(network)  # the network's, even if the bounds were built without them
    return SlopeProblem(
        matrices=tuple(a.matrix for a in network.affine_layers),
        unstable=tuple((s == NeuronState.UNSTABLE).astype(np.float64) for s in states),
        active=tuple((s == NeuronState.ACTIVE).astype(np.float64) for s in states),
        low=tuple(np.minimum(lo, 0.0) for lo in bounds.grad_lower),
        up=tuple(np.maximum(hi, 0.0) for hi in bounds.grad_upper),
        kind=TERMS[norm],
        g_low=np.asarray(bounds.input_grad_lower, dtype=np.float64),
        g_up=np.asarray(bounds.input_grad_upper, dtype=np.float64),
        seed=seed,
        slopes=slopes,
    )


def chord_switches(problem: SlopeProblem) -> list[tuple[FloatArray, FloatArray]]:
    """Per hidden layer, the chords' ``t``: ``(u'/(u'-l'), -l'/(u'-l'))`` (1 and 0 where the
    range is a point), one row each."""
    switch = []
    for low, up in zip(problem.low, problem.up, strict=True):
        width = up - low
        safe = np.where(width > 0.0, width, 1.0)
        t_up = np.where(width > 0.0, up / safe, 1.0)
        t_low = np.where(width > 0.0, -low / safe, 0.0)
        switch.append((t_up[None, :], t_low[None, :]))
    return switch


def chord_thetas(problem: SlopeProblem) -> Thetas:
    """The chord lines' parameters: per hidden layer :func:`chord_switches` (one row per
    objective row), and for a convex term the chord slope's place in ``[φ'(l), φ'(u)]``."""
    rows = 2 * problem.g_low.shape[0] if problem.kind is None else 1
    switch = [
        (np.tile(t_up, (rows, 1)), np.tile(t_low, (rows, 1)))
        for t_up, t_low in chord_switches(problem)
    ]
    if problem.kind is None:
        return switch, None
    if problem.kind == "square":  # chord slope u + l, the middle of [2l, 2u]
        return switch, np.full(problem.g_low.shape, 0.5)
    lo, hi = problem.g_low, problem.g_up
    width = hi - lo
    chord = (np.abs(hi) - np.abs(lo)) / np.where(width > 0.0, width, 1.0)
    chord = np.where(width > 0.0, chord, np.sign(lo))
    return switch, np.clip((chord + 1.0) / 2.0, 0.0, 1.0)


def _objective_rows(
    problem: SlopeProblem, theta: FloatArray | None
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rows on ``g``, their constants and the constants' magnitudes: the lines ``λ g + μ`` of
    ``Σ φ(g_j)`` (one row), or ``±e_j``."""
    lo_g, hi_g = problem.g_low, problem.g_up
    if problem.kind is None or theta is None:
        eye = np.eye(lo_g.shape[0])
        return np.vstack([eye, -eye]), np.zeros(2 * lo_g.shape[0]), np.zeros(2 * lo_g.shape[0])
    if problem.kind == "abs":
        phi_lo, phi_hi = np.abs(lo_g), np.abs(hi_g)
        slope = -1.0 + 2.0 * theta
    else:
        phi_lo, phi_hi = lo_g**2, hi_g**2
        slope = 2.0 * lo_g + theta * 2.0 * (hi_g - lo_g)
    shift = np.maximum(phi_lo - slope * lo_g, phi_hi - slope * hi_g)
    return slope[None, :], np.array([shift.sum()]), np.array([np.abs(shift).sum()])


def back_substitute(
    problem: SlopeProblem, thetas: Thetas, objective: FloatArray | None = None
) -> FloatArray:
    """Upper bound of each objective row over every reachable pattern and seed, rounded up.

    The lines are ``U_t, L_t`` of the module docstring with ``t`` from ``thetas`` (one row of
    them, or one per objective row); the rounding allowance grows with the magnitude of every
    term summed (as in :mod:`linear`). ``objective``: rows on ``g`` to bound instead of the
    norm's own (each a linear function of ``g``, no constant: :mod:`lipopt.bounds.sign_groups`).
    The layers are walked by :func:`~lipopt.bounds.back_substitution.back_substitute_rows`.
    """
    switch, theta = thetas
    if objective is None:
        coeffs, shift, magnitude = _objective_rows(problem, theta)
    else:
        coeffs = objective
        shift = magnitude = np.zeros(objective.shape[0])
    coeffs, shift, magnitude = back_substitute_rows(problem, switch, coeffs, (shift, magnitude))
    _, hi, size = _seed_range(coeffs, problem.seed)
    return _outward(hi + shift, magnitude + size)


def norm_value(problem: SlopeProblem, thetas: Thetas) -> float:
    """The bound on ``||g||_{α*}`` from the back-substituted rows: ``max_j max(±g_j)`` for ℓ1
    input, the single row for ℓ∞, its square root for ℓ2."""
    rows = back_substitute(problem, thetas)
    if problem.kind is None:
        return float(max(rows.max(), 0.0))
    if problem.kind == "square":
        return float(np.sqrt(max(rows[0], 0.0)))
    return float(max(rows[0], 0.0))


def jacobian_norm_bound(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm | str,
    *,
    bounds: NetworkBounds | None = None,
    iterations: int = 0,
    rate: float = 0.1,
) -> JacobianBound:
    """A certified upper bound on ``max_{x ∈ domain} ||∇(c^T f)(x)||_{α*}`` (``seed`` = c) or
    on the Lipschitz constant under an output norm (``seed`` an :class:`OutputNorm`).

    ``bounds`` default to :func:`linear_bounds` for the same seed; ``iterations > 0`` runs that
    many projected-gradient steps on the lines' slopes (needs torch) from the chords.
    """
    start = time.perf_counter()
    norm = InputNorm.parse(norm)
    if bounds is None:
        bounds = linear_bounds(network, domain, seed)
    problem = slope_problem(network, bounds, seed, norm)
    fastlip = fastlip_value(bounds, norm)
    thetas = chord_thetas(problem)
    chord = norm_value(problem, thetas)
    best, used = min(chord, fastlip), 0
    if iterations > 0:
        searched, used = search_slopes(problem, thetas, iterations, rate)
        best = min(best, norm_value(problem, searched))
    return JacobianBound(best, fastlip, chord, time.perf_counter() - start, used)


__all__ = [
    "JacobianBound",
    "back_substitute",
    "chord_switches",
    "chord_thetas",
    "fastlip_value",
    "jacobian_norm_bound",
    "norm_value",
    "slope_problem",
]
