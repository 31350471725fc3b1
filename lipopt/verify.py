"""Checks on a solver's answer, in numpy, SciPy and HiGHS (:mod:`lipopt.highs_lp`).

For a fixed activation pattern σ every pre-activation is affine in x: ``z_k(x) = A_k x + d_k``
(the post-activation is ``h_k = D_k z_k`` with ``D_k = α_k + (1 - α_k) σ_k``: ``σ z`` for a
ReLU, ``α z`` on an inactive neuron of slope ``α``). The pattern's linear region meets the
domain's interior in a full-dimensional set iff the *margin LP*

    max t  s.t.  (2σ_i - 1)(A_i x + d_i) >= t ||A_i||_2  for every hidden neuron i with a kink,
                 x at distance >= t from the domain's boundary,   t <= 1

has ``t* > 0``; its optimal x is then a point deep inside the region, where f is
differentiable and its gradient is the pattern's gradient. The LP is solved in the domain's
unit frame (:func:`_unit_frame`), so ``t*`` and the verdicts are relative to the domain's size.
An identity neuron (``α = 1``) has no kink: its gate changes nothing, so it gives no row.
Over an ℓ2 ball the problem is conic (``||u||_2 + t <= 1``); a weak-duality certificate decides
it lower-dimensional and a checked point full-dimensional (:func:`_ball_margin`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.domain import Box, Domain, Intersection, L1Ball, L2Ball, ball_part, cut_rows
from lipopt.highs_lp import LpStatus, solve_lp
from lipopt.network import Network

FloatArray = NDArray[np.float64]

#: margins above this prove a full-dimensional region
FULL_DIM_MARGIN = 1e-9
#: margins at or below this (or an infeasible LP) prove a lower-dimensional one
NULL_MARGIN = 1e-12


class Dimension(str, Enum):
    FULL = "full"
    LOWER = "lower"
    UNDECIDED = "undecided"


#: a hidden neuron, as (layer, index), both 0-based
Neuron = tuple[int, int]


@dataclass(frozen=True)
class RegionCheck:
    """Outcome of the margin LP: the verdict, the margin ``t*`` and the deepest point.

    ``support`` (a ``LOWER`` verdict only): the neurons whose rows carry the proof, those with a
    nonzero dual value (over an ℓ2 ball, a nonzero multiplier of the certificate). Every pattern
    that agrees with this one on them, and on every neuron of the layers below the deepest of
    them (which shape their rows), has the same rows, so its margin LP is no larger: its region
    is lower-dimensional too. None where unknown.
    """

    dimension: Dimension
    margin: float
    point: FloatArray | None
    support: tuple[Neuron, ...] | None = None


def _chain(
    weights: list[FloatArray], biases: list[FloatArray], slopes: list[FloatArray]
) -> list[tuple[FloatArray, FloatArray]]:
    """Per hidden layer k, ``(A_k, d_k)`` of ``A_1 = W_1, d_1 = b_1`` and
    ``A_{k+1} = W_{k+1} D_k A_k, d_{k+1} = W_{k+1} D_k d_k + b_{k+1}`` (``slopes[k] = D_k``,
    the pattern's derivatives)."""
    maps = []
    a_mat, d_vec = weights[0], biases[0]
    for k, scale in enumerate(slopes):
        maps.append((a_mat, d_vec))
        a_mat = weights[k + 1] @ (scale[:, None] * a_mat)
        d_vec = weights[k + 1] @ (scale * d_vec) + biases[k + 1]
    return maps


def _derivatives(network: Network, pattern: list[FloatArray]) -> list[FloatArray]:
    """``D_k = α_k + (1 - α_k) σ_k`` per hidden layer (the pattern itself on a ReLU layer)."""
    return [network.derivatives(k, mask) for k, mask in enumerate(pattern)]


def pattern_affine_maps(
    network: Network, pattern: list[FloatArray]
) -> list[tuple[FloatArray, FloatArray]]:
    """``(A_k, d_k)`` with ``z_k = A_k x + d_k`` on the pattern's region, per hidden layer."""
    affines = network.affine_layers
    slopes = _derivatives(network, pattern)
    return _chain([a.weight for a in affines], [a.bias for a in affines], slopes)


def _magnitudes(network: Network, pattern: list[FloatArray]) -> list[tuple[FloatArray, FloatArray]]:
    """Per hidden layer, what each ``A_i`` and ``d_i`` of :func:`pattern_affine_maps` is
    computed from, without cancellation: the same chain with ``|W|``, ``|b|`` and ``|D|`` for
    ``W``, ``b`` and ``D``. Rounding is relative to these, so a row is zero, or a constant has a
    sign, only relative to them, whatever the neuron's scale."""
    affines = network.affine_layers
    slopes = [np.abs(scale) for scale in _derivatives(network, pattern)]
    return _chain([np.abs(a.weight) for a in affines], [np.abs(a.bias) for a in affines], slopes)


def kinked(network: Network) -> list[NDArray[np.bool_]]:
    """Per hidden layer, the neurons with a kink: every one but the identity neurons
    (``α = 1``), whose gate changes nothing."""
    return [alpha != 1.0 for alpha in network.slopes]


def _unit_frame(domain: Domain) -> tuple[FloatArray, FloatArray, Domain]:
    """``(c, s, unit)`` with ``x = c + s ∘ u`` mapping ``unit`` onto the domain: the box
    ``[-1, 1]^d`` for a box or ℓ∞ ball (per-coordinate half widths), the unit ℓ1 or ℓ2 ball for
    an ℓ1 or ℓ2 ball. The margin LP works in ``u``, so its margin and its solver's tolerances
    are relative to the domain's size: a region 1e-12 wide in a domain 1e-6 wide is as clear as
    one 1e-6 wide in the unit box. (Full-dimensionality is the same in both frames.) A polytope
    takes its bounding box's frame, a ball ∩ a polytope its ball's; their rows are added by
    :func:`_add_cut_rows`."""
    lower, upper = domain.bounding_box()
    d = len(lower)
    ball = ball_part(domain)
    if ball is not None:
        center = np.asarray(ball.center, dtype=np.float64)
        return center, np.full(d, float(ball.radius)), type(ball)(np.zeros(d), 1.0)
    return (lower + upper) / 2.0, (upper - lower) / 2.0, Box(-np.ones(d), np.ones(d))


@dataclass
class _PatternRows:
    """The margin LP's rows ``A u + t <= b`` in blocks of ``A``'s rows (``normals``) and of
    ``b`` (``limits``): the neuron rows first, one per neuron of ``neurons``, then a
    polytope's; or the neuron that empties the region."""

    normals: list[FloatArray]
    limits: list[FloatArray]
    neurons: list[Neuron]
    empty_at: Neuron | None = None

    def arrays(self, dim: int) -> tuple[FloatArray, FloatArray]:
        """``(A, b)``, ``A`` with ``dim`` columns."""
        if not self.normals:
            return np.zeros((0, dim)), np.zeros(0)
        return np.vstack(self.normals), np.concatenate(self.limits)


def _pattern_rows(
    network: Network, pattern: list[FloatArray], frame: tuple[FloatArray, FloatArray]
) -> _PatternRows:
    """The margin LP's rows ``-σ_i A_i u / ||A_i|| + t <= σ_i d_i / ||A_i||`` (``σ_i = ±1``),
    with ``z_i = A_i u + d_i`` in the unit frame ``x = c + s ∘ u`` (``frame = (c, s)``), one
    per hidden neuron with a kink whose ``A_i`` is not zero. A constant pre-activation
    (``A_i = 0``) of the wrong sign empties the region (``empty_at``: the first such)."""
    shift, scale = frame
    found = _PatternRows([], [], [])
    maps = zip(pattern_affine_maps(network, pattern), _magnitudes(network, pattern), pattern)
    for k, (((a_x, d_x), (a_abs, d_abs), mask), kinks) in enumerate(zip(maps, kinked(network))):
        a_mat, d_vec = a_x * scale, d_x + a_x @ shift
        a_size = np.linalg.norm(a_abs * scale, axis=1)
        d_size = d_abs + a_abs @ np.abs(shift)
        sign = 2.0 * mask - 1.0
        norms = np.linalg.norm(a_mat, axis=1)
        flat = kinks & (norms <= 1e-12 * a_size)  # A_i = 0 up to rounding (0 if none cancels)
        wrong = flat & (sign * d_vec < -1e-12 * np.maximum(d_size, 1e-300))  # of the wrong sign
        if wrong.any():
            found.empty_at = (k, int(np.flatnonzero(wrong)[0]))
            return found
        rows = np.flatnonzero(kinks & ~flat)
        found.normals.append(-sign[rows, None] * a_mat[rows] / norms[rows, None])
        found.limits.append(sign[rows] * d_vec[rows] / norms[rows])
        found.neurons.extend((k, int(i)) for i in rows)
    return found


def _add_cut_rows(
    found: _PatternRows, domain: Domain, frame: tuple[FloatArray, FloatArray]
) -> None:
    """After the neuron rows, a polytope's rows ``a·x <= b`` in the unit frame with the margin:
    ``(a ∘ s)·u / ||a ∘ s|| + t <= (b - a·c) / ||a ∘ s||``; for a ball ∩ a polytope also the
    polytope's box bounds that cut into the ball's box. They are not neurons (``neurons`` stays
    shorter than the rows)."""
    rows = cut_rows(domain)
    a, b = rows if rows is not None else (np.zeros((0, len(frame[0]))), np.zeros(0))
    if isinstance(domain, Intersection):
        d = domain.dim
        ball_low, ball_high = domain.ball.bounding_box()
        low, high = domain.polytope.lower, domain.polytope.upper
        eye = np.eye(d)
        a = np.vstack([a, eye[high < ball_high], -eye[low > ball_low]])
        b = np.concatenate([b, high[high < ball_high], -low[low > ball_low]])
    if not len(b):
        return
    shift, scale = frame
    scaled = a * scale
    norms = np.array([np.linalg.norm(row) for row in scaled])  # per row: see below
    # (a last-bit change of a row can move a degenerate LP's tiny duals, and so the support;
    # these are the rows linprog was given)
    found.normals.append(scaled / norms[:, None])
    found.limits.append((b - a @ shift) / norms)


def _domain_rows(unit: Domain, d: int) -> tuple[Any, FloatArray, tuple[FloatArray, FloatArray]]:
    """The rows keeping ``u`` at distance ``t`` inside the unit box or ℓ1 ball, over
    ``(u, t[, dev])``, as a CSR matrix, their right sides, and the variables' bounds
    (``u`` in ``[-1, 1]^d``, ``t <= 1``, ``dev >= 0``): the box ``-1 + t <= u_j <= 1 - t``; the
    ℓ1 ball ``±u_j <= dev_j`` and ``Σ_j dev_j + sqrt(d) t <= 1`` (an ℓ2 ball of radius t fits)."""
    pairs = np.repeat(np.arange(d), 2)  # rows 2j and 2j + 1, two entries each: u_j's
    signs = np.tile([-1.0, 1.0], d)
    starts = np.arange(0, 4 * d + 1, 2)
    lower, upper = np.full(d + 1, -1.0), np.ones(d + 1)
    lower[d] = -np.inf
    if not isinstance(unit, L1Ball):  # ±u_j + t <= 1
        columns = np.column_stack([pairs, np.full(2 * d, d)]).ravel()
        values = np.column_stack([signs, np.ones(2 * d)]).ravel()
        shape, rhs = (2 * d, d + 1), np.ones(2 * d)
    else:  # ±u_j - dev_j <= 0 (+u_j first), then Σ dev + sqrt(d) t <= 1 (d + 1 entries)
        columns = np.concatenate(
            [np.column_stack([pairs, d + 1 + pairs]).ravel(), d + np.arange(d + 1)]
        )
        values = np.concatenate(
            [np.column_stack([-signs, -np.ones(2 * d)]).ravel(), [np.sqrt(d)], np.ones(d)]
        )
        shape, rhs = (2 * d + 1, 2 * d + 1), np.append(np.zeros(2 * d), 1.0)
        lower, upper = np.append(lower, np.zeros(d)), np.append(upper, np.full(d, np.inf))
        starts = np.append(starts, len(columns))
    return sparse.csr_array((values, columns, starts), shape=shape), rhs, (lower, upper)


def _margin_lp(
    found: _PatternRows, unit: Domain, d: int
) -> tuple[Any, FloatArray, tuple[Any, Any]]:
    """The margin LP's constraints ``M (u, t[, dev]) <= rhs`` as a CSR matrix (the rows of
    ``found`` with the margin's column of ones, then :func:`_domain_rows`), and the bounds."""
    domain, domain_rhs, bounds = _domain_rows(unit, d)
    normals, limits = found.arrays(d)
    block = np.zeros((len(limits), domain.shape[1]))
    block[:, :d], block[:, d] = normals, 1.0
    matrix = sparse.vstack([sparse.csr_array(block), domain], format="csr")
    return matrix, np.concatenate([limits, domain_rhs]), bounds


def check_region(
    network: Network, pattern: list[FloatArray], domain: Domain, time_limit: float | None = None
) -> RegionCheck:
    """Solve the margin LP for ``pattern`` over ``domain`` (variables: u, t[, ℓ1 deviations]
    in the unit frame); undecided where it does not finish within ``time_limit`` seconds (on
    2000 inputs and 2000 neurons the dense LP took 120 s). The ℓ2 ball by :func:`_ball_margin`."""
    d = network.input_dim
    shift, scale, unit = _unit_frame(domain)
    found = _pattern_rows(network, pattern, (shift, scale))
    if found.empty_at is not None:
        return RegionCheck(Dimension.LOWER, -np.inf, None, (found.empty_at,))
    _add_cut_rows(found, domain, (shift, scale))
    if time_limit is not None and time_limit <= 0:
        return RegionCheck(Dimension.UNDECIDED, float("nan"), None)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    if isinstance(unit, L2Ball):
        check = _ball_margin(found, d, deadline)
    else:
        check = _polytope_margin(found, unit, d, deadline)
    if check.point is None:
        return check
    lower, upper = domain.bounding_box()
    point = np.clip(shift + scale * check.point, lower, upper)
    return replace(check, point=point)


def _polytope_margin(
    found: _PatternRows, unit: Domain, d: int, deadline: float | None
) -> RegionCheck:
    """The margin LP of a box or an ℓ1 ball (in the unit frame ``unit``, over ``d`` inputs),
    by HiGHS within the time to ``deadline``; its point in the unit frame."""
    matrix, rhs, bounds = _margin_lp(found, unit, d)
    objective = np.zeros(matrix.shape[1])
    objective[d] = -1.0  # max t
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return RegionCheck(Dimension.UNDECIDED, float("nan"), None)
    answer = solve_lp(objective, matrix, rhs, bounds, left)
    if answer.status is LpStatus.INFEASIBLE:  # even t -> -inf cannot satisfy it: cannot happen
        return RegionCheck(Dimension.LOWER, -np.inf, None)
    if answer.status is not LpStatus.OPTIMAL or answer.x is None:
        return RegionCheck(Dimension.UNDECIDED, float("nan"), None)
    margin, point = -answer.objective, np.asarray(answer.x[:d], dtype=np.float64)
    if margin > FULL_DIM_MARGIN:
        return RegionCheck(Dimension.FULL, margin, point)
    if margin <= NULL_MARGIN:
        return RegionCheck(
            Dimension.LOWER, margin, point, _support(answer.row_duals, found.neurons)
        )
    return RegionCheck(Dimension.UNDECIDED, margin, point)


#: shares of ``1 - ||u_0||`` kept as the neuron rows' slack in the search for a deep point
BALL_DEPTHS = (0.5, 0.125, 1 / 64, 1 / 512, 1 / 4096, 1e-5, 1e-7)


def _ball_margin(found: _PatternRows, dim: int, deadline: float | None) -> RegionCheck:
    """The margin over the unit ℓ2 ball, ``max t`` s.t. ``A u + t <= b`` (the neuron rows)
    and ``||u||_2 + t <= 1``, a second-order cone program, decided without a conic solver.

    *Lower-dimensional*: weak duality gives, for any ``λ >= 0``,
    ``t* <= (b·λ + ||A^T λ||_2) / (Σ λ + ||A^T λ||_2)`` (``t Σλ <= b·λ - (A^T λ)·u`` and
    ``-(A^T λ)·u <= ||A^T λ|| (1 - t)``); the ``λ`` is the multiplier of the least-norm point
    ``u_0`` of the region ``A u <= b`` (least distance programming by non-negative least
    squares, Lawson & Hanson ch. 23), which proves ``t* < 0`` when ``||u_0|| > 1`` and, by
    Farkas, when the region is empty. *Full-dimensional*: the least-norm points of the regions
    shrunk by ``τ`` (``A u <= b - τ``) for decreasing ``τ``, each checked in numpy:
    ``min(b - A u, 1 - ||u||)`` is its margin for certain."""
    a_mat, b_vec = found.arrays(dim)
    if not len(b_vec):  # no neuron row: the whole ball
        return RegionCheck(Dimension.FULL, 1.0, np.zeros(dim))
    try:
        u_0, multipliers = _least_norm_point(a_mat, b_vec, 0.0)
    except RuntimeError:  # nnls's iteration limit
        return RegionCheck(Dimension.UNDECIDED, float("nan"), None)
    bound = _dual_margin(a_mat, b_vec, multipliers)
    if bound <= NULL_MARGIN:
        support = tuple(n for n, y in zip(found.neurons, multipliers) if y > 0.0) or None
        return RegionCheck(Dimension.LOWER, bound, None, support)
    distance = np.inf if u_0 is None else float(np.linalg.norm(u_0))
    for depth in BALL_DEPTHS if distance < 1.0 else ():
        if deadline is not None and time.perf_counter() > deadline:
            break
        shrink = depth * (1.0 - distance)
        if shrink <= FULL_DIM_MARGIN:
            break
        try:
            u, _ = _least_norm_point(a_mat, b_vec, shrink)
        except RuntimeError:
            break
        if u is None:
            continue
        margin = min(float(np.min(b_vec - a_mat @ u)), 1.0 - float(np.linalg.norm(u)))
        if margin > FULL_DIM_MARGIN:
            return RegionCheck(Dimension.FULL, margin, u)
    return RegionCheck(Dimension.UNDECIDED, bound, None)


def _least_norm_point(
    a_mat: FloatArray, b_vec: FloatArray, shrink: float
) -> tuple[FloatArray | None, FloatArray]:
    """``argmin ||u||_2`` s.t. ``A u <= b - shrink`` (None where empty), and the multipliers
    ``λ >= 0`` of the rows: with ``G = -A``, ``h = shrink - b``, the non-negative least squares
    ``min ||E λ - e_{d+1}||`` with ``E = [G^T; h^T]`` has residual ``r``, and
    ``u = -r_{1..d} / r_{d+1}`` (empty where ``r = 0``)."""
    from scipy.optimize import nnls  # scipy.optimize takes ~0.5 s to import

    dim = a_mat.shape[1]
    lifted = np.vstack([-a_mat.T, (shrink - b_vec)[None, :]])
    target = np.zeros(dim + 1)
    target[dim] = 1.0
    multipliers, _ = nnls(lifted, target, maxiter=max(50 * len(b_vec), 1000))
    residual = lifted @ multipliers - target
    if abs(residual[dim]) <= 1e-14:
        return None, multipliers
    return -residual[:dim] / residual[dim], multipliers


def _dual_margin(a_mat: FloatArray, b_vec: FloatArray, multipliers: FloatArray) -> float:
    """The weak-duality bound on the ball's margin from ``λ`` (see :func:`_ball_margin`), plus
    the rounding of its sums; ``inf`` for ``λ = 0``."""
    pull = float(np.linalg.norm(a_mat.T @ multipliers))
    total = float(multipliers.sum()) + pull
    if total <= 0.0:
        return np.inf
    rounding = 1e-14 * (float(np.abs(multipliers) @ np.abs(b_vec)) + pull)
    return (float(multipliers @ b_vec) + pull + rounding) / total


def _support(duals: FloatArray | None, neurons: list[Neuron]) -> tuple[Neuron, ...] | None:
    """The neurons whose rows have a nonzero dual value (``duals``: the margin LP's rows', the
    neuron rows first) in the LP's optimum: the LP over those rows and the domain's alone has
    the same optimum (its dual keeps the same solution), so they alone prove the region
    lower-dimensional."""
    if duals is None:
        return None
    support = tuple(neuron for neuron, dual in zip(neurons, duals[: len(neurons)]) if dual != 0.0)
    return support or None  # no neuron row in the proof: numerical noise, cut the whole pattern


#: an upper bound and an attained value meet within this, relative (absolute below 1): the
#: solvers hold each row to 1e-6, so an optimum may exceed the true maximum by about that much
EXACT_TOLERANCE = 1e-6
