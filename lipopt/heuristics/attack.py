"""Attack: a local search for the input with the largest gradient dual norm (a lower bound).

The objective ``x -> ||∇(c^T f)(x)||_{α*}`` of a ReLU network is piecewise constant (constant on
each linear region), so plain gradient ascent on it sees a zero gradient. This search instead
moves between neighbouring linear regions, guided by the network's structure:

*Region-flip moves.* On the current region the gradient is ``g = W_1^T D_1 ··· W_L^T c``. If only
hidden neuron ``(k, j)`` changed state, the gradient would become

    g' = g ± (1 - α_kj) y_kj · a_kj,

where ``y_kj = ∂(c^T f)/∂h_kj`` (backward pass) and ``a_kj = ∂z_kj/∂x`` (forward-mode Jacobian of
the pre-activation; + when the neuron switches on, - when it switches off; ``α_kj`` its slope left
of the kink, ``h = α z + (1 - α) relu(z)``: 0 for ReLU, and an identity neuron, ``α = 1``, has no
kink to flip). All these predicted neighbours are scored at once; the search steps just across
the hyperplane ``z_kj(x) = 0`` of the most promising one (``x + δ``,
``δ = -(z_kj ± η) a_kj / ||a_kj||²``), projected onto the domain.

*Random moves.* When no flip is predicted to help (or every promising flip failed), a Gaussian
perturbation with a per-start adaptive step size (grown on success, shrunk on failure).

A move is kept when the true gradient norm at the new point is at least the current one (equal
values let the search walk across plateaus). Starts are the best points of a uniform random
pool. Every value reported is a gradient norm actually evaluated at a point of the domain, so
it is attained: a lower bound (points on the domain's boundary are fine — a linear region is
open, so it also meets the domain's interior).

Projections: a box or ℓ∞ ball by clipping; an ℓ1 ball by the sort-based Euclidean projection of
Duchi et al. (2008).
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.domain import Domain, Intersection, L1Ball, L2Ball, Polytope
from lipopt.domain.interior import pull_inside
from lipopt.heuristics.target import FloatArray, Problem, as_rng, problem
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.policy import Policy

#: initial standard deviation of random moves, relative to the domain's extent per coordinate
SIGMA_START = 0.25


# ----------------------------------------------------------------------------- projections
def project_l1_ball(v: ArrayLike, radius: float) -> FloatArray:
    """Euclidean projection of each row of ``v`` onto ``{w : ||w||_1 <= radius}``.

    Sort ``|v|`` decreasingly into ``u``; ``ρ`` = the largest k with ``u_k > (Σ_{i<=k} u_i - r)/k``;
    ``θ = (Σ_{i<=ρ} u_i - r)/ρ``; the projection is ``sign(v) max(|v| - θ, 0)`` (rows already in
    the ball are unchanged).
    """
    arr = np.atleast_2d(np.asarray(v, dtype=np.float64))
    n, d = arr.shape
    absv = np.abs(arr)
    inside = absv.sum(axis=1) <= radius
    u = -np.sort(-absv, axis=1)
    css = np.cumsum(u, axis=1)
    k = np.arange(1, d + 1)
    cond = u - (css - radius) / k > 0
    rho = d - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    theta = (css[np.arange(n), rho] - radius) / (rho + 1)
    out = np.sign(arr) * np.maximum(absv - theta[:, None], 0.0)
    out[inside] = arr[inside]
    return out if np.ndim(v) > 1 else out[0]


def project(domain: Domain, x: ArrayLike) -> FloatArray:
    """Euclidean projection of points (rows) onto the domain (a polytope, or a ball ∩ one: the
    map of :func:`lipopt.domain.interior.pull_inside`)."""
    arr = np.asarray(x, dtype=np.float64)
    if isinstance(domain, (Polytope, Intersection)):  # a map into the set, not the projection
        return pull_inside(domain, arr)
    if isinstance(domain, L1Ball):
        return domain.center + project_l1_ball(arr - domain.center, domain.radius)
    if isinstance(domain, L2Ball):
        return domain.project(arr)
    lower, upper = domain.bounding_box()
    return np.clip(arr, lower, upper)


def _scale(domain: Domain) -> FloatArray:
    """Per-coordinate extent of the domain (step sizes are relative to it)."""
    lower, upper = domain.bounding_box()
    return np.asarray(upper - lower, dtype=np.float64)


# ----------------------------------------------------------------------------- the search
def _row_norms(v: FloatArray, order: float) -> FloatArray:
    """``||v[..., :]||_order`` over the last axis, ``v`` overwritten (order 1, 2 or inf): the
    same sums as ``np.linalg.norm`` with one temporary fewer."""
    if order == 1:
        return np.abs(v, out=v).sum(axis=-1)
    if order == np.inf:
        return np.abs(v, out=v).max(axis=-1)
    return np.linalg.norm(v, ord=order, axis=-1)


def _forward_jacobians(
    network: Network, x: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, list[FloatArray]]:
    """For a batch of points (R, d): every hidden pre-activation ``z`` (R, N), its Jacobian
    ``a = ∂z/∂x`` (R, N, d; forward mode, ``a_k = W_k D_{k-1} a_{k-1}``, ``a_1 = W_1``),
    the 0/1 states (R, N) and each layer's ``D = α + (1 - α) σ`` (R, n_k)."""
    r, d = x.shape
    n_all = sum(network.hidden_widths)
    z_all, on = np.empty((r, n_all)), np.empty((r, n_all))
    a_all = np.empty((r, n_all, d))
    slopes: list[FloatArray] = []
    h, jac_h, offset = x, None, 0
    for k, affine in enumerate(network.affine_layers[:-1]):
        rows = slice(offset, offset + affine.out_features)
        z = h @ affine.weight.T + affine.bias
        if jac_h is None:  # the first layer: W_1 itself, copied, no product with I
            a_all[:, rows, :] = affine.weight
        else:  # BLAS into the slice: no per-layer array to concatenate afterwards
            np.matmul(affine.weight, jac_h, out=a_all[:, rows, :])
        mask = (z > 0).astype(np.float64)
        slope = network.derivatives(k, mask)  # D = α + (1 - α) σ: the mask itself for ReLU
        z_all[:, rows], on[:, rows] = z, mask
        slopes.append(slope)
        h = slope * z
        jac_h = slope[:, :, None] * a_all[:, rows, :]
        offset = rows.stop
    return z_all, a_all, on, slopes


def _flip_candidates(
    prob: Problem, x: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """For a batch of points, every single-neuron flip: predicted value, and the step across.

    Returns ``(value, step, distance, current)`` with shapes (R, N), (R, N, d), (R, N), (R,),
    N the number of hidden neurons (all layers concatenated).
    """
    network = prob.network
    affines = network.affine_layers
    z_all, a_all, on_mask, slopes = _forward_jacobians(network, x)
    r = x.shape[0]
    # backward: y_k = d(c^T f)/d h_k, from the last hidden layer down
    ys: list[FloatArray] = [np.empty(0)] * len(slopes)
    y = np.broadcast_to(affines[-1].weight.T @ prob.c, (r, affines[-1].in_features))
    for k in reversed(range(len(slopes))):
        ys[k] = np.asarray(y)
        y = (y * slopes[k]) @ affines[k].weight
    grad = y  # after the loop: (y_1 * D_1) @ W_1, the input gradient
    current = np.linalg.norm(grad, ord=prob.norm.dual_order, axis=-1)
    y_all = np.concatenate(ys, axis=1)  # (R, N)
    on = on_mask > 0
    # switching off removes (1 - α) y a from the gradient, switching on adds it (α = 0: all of
    # the term); an identity neuron (α = 1) has no kink to cross
    sign = np.where(on, -1.0, 1.0)
    if not network.is_relu:
        sign = sign * (1.0 - np.concatenate(network.slopes))
    predicted = (sign * y_all)[:, :, None] * a_all
    predicted += grad[:, None, :]
    value = _row_norms(predicted, prob.norm.dual_order)
    sq = np.einsum("rnd,rnd->rn", a_all, a_all)
    safe = np.where(sq > 0, sq, 1.0)
    margin = 1e-7 * (1.0 + np.abs(z_all)) + 1e-9
    target = np.where(on, -margin, margin)  # just across the hyperplane
    step = ((target - z_all) / safe)[:, :, None] * a_all
    distance = np.abs(z_all) / np.sqrt(safe)
    value = np.where((sq > 0) & (sign != 0), value, -np.inf)
    return value, step, distance, current


def _flips_fit(network: Network, restarts: int) -> bool:
    """The flip moves' Jacobians (searches x hidden neurons x inputs) fit the policy's cap."""
    size = restarts * sum(network.hidden_widths) * network.input_dim
    return size <= Policy.current().attack_flip_max_entries


def _pool(
    prob: Problem, domain: Domain, restarts: int, pool: int, gen: np.random.Generator
) -> tuple[FloatArray, FloatArray, NDArray[np.int64], list[int]]:
    """``max(pool, restarts)`` uniform points and their values, the best ``restarts`` of them
    (indices) to start from, and the next-best as spares (popped from the end)."""
    start = domain.sample(max(int(pool), restarts), gen)
    start_values = prob.dual_norms(start)
    ranked = np.argsort(-start_values, kind="stable")
    return start, start_values, ranked[:restarts], list(ranked[restarts:][::-1])


def gradient_attack(
    network: Network,
    domain: Domain,
    c: ArrayLike | None = None,
    norm: InputNorm | str = InputNorm.LINF,
    restarts: int = 8,
    steps: int = 100,
    rng: int | np.random.Generator | None = None,
    *,
    pool: int = 200,
    flips: bool = True,
    patience: int | None = 10,
    deadline: float | None = None,
) -> tuple[FloatArray, float]:
    """Best point found and its gradient dual norm ``(x, ||∇(c^T f)(x)||_{α*})``.

    Reusable as a warm start (the MIP can take ``x``). Gradient evaluations: ``pool`` for the
    starting pool plus ``restarts · steps`` for the moves (each move costs one evaluation; a
    flip move also reads the pre-activation Jacobians of the current point, about the cost of
    ``d`` gradients per start and step, but no extra evaluation at another point).

    Args:
        network, domain, c, norm: the problem (``c`` defaults to ``[1]`` for one output).
        restarts: number of searches run side by side, started at the best points of the pool.
        steps: moves per search.
        rng: seed or generator.
        pool: uniform random points scored to pick the starts.
        flips: use region-flip moves (False: random moves only); off where their Jacobians
            would pass the policy's ``ATTACK_FLIP_MAX_ENTRIES``.
        patience: a search whose random moves failed this many times in a row restarts from
            the next-best unused pool point (None: never).
        deadline: stop moving at this ``time.perf_counter()`` time (None: after ``steps``).
    """
    prob = problem(network, domain, norm, c)
    gen = as_rng(rng)
    restarts = max(int(restarts), 1)
    start, start_values, order, spare = _pool(prob, domain, restarts, pool, gen)
    x = start[order].copy()
    values = start_values[order].copy()
    best_x, best = start[order[0]].copy(), float(start_values[order[0]])
    if not network.hidden_widths:  # affine network: the gradient is constant
        return best_x, best

    extent = _scale(domain)
    flips = flips and _flips_fit(network, restarts)
    sigma = np.full(restarts, SIGMA_START)
    tabu = np.zeros((restarts, sum(network.hidden_widths)), dtype=bool)
    stall = np.zeros(restarts, dtype=int)
    for _ in range(int(steps)):
        if deadline is not None and time.perf_counter() >= deadline:
            break
        proposal = np.empty_like(x)
        use_flip = np.zeros(restarts, dtype=bool)
        chosen = np.full(restarts, -1)
        if flips:
            predicted, step, distance, _ = _flip_candidates(prob, x)
            gain = predicted - values[:, None]
            ok = (gain > 1e-12 * (1.0 + values[:, None])) & ~tabu
            # most promising flip; ties broken by the nearest hyperplane
            score = np.where(ok, predicted - 1e-9 * distance, -np.inf)
            chosen = np.argmax(score, axis=1)
            use_flip = np.isfinite(score[np.arange(restarts), chosen])
            proposal[use_flip] = x[use_flip] + step[use_flip, chosen[use_flip]]
        rand = ~use_flip
        if np.any(rand):
            noise = gen.normal(size=(int(rand.sum()), x.shape[1]))
            proposal[rand] = x[rand] + (sigma[rand, None] * extent) * noise
        proposal = project(domain, proposal)
        new_values = prob.dual_norms(proposal)
        accept = new_values >= values
        improved = new_values > values
        # bookkeeping: tabu for failed flips (reset whenever the point moves), step sizes
        rows = np.flatnonzero(use_flip & ~accept)
        tabu[rows, chosen[rows]] = True
        tabu[accept] = False
        sigma = np.where(rand & improved, np.minimum(sigma * 1.5, 1.0), sigma)
        sigma = np.where(rand & ~accept, np.maximum(sigma * 0.8, 1e-4), sigma)
        x[accept] = proposal[accept]
        values[accept] = new_values[accept]
        stall = np.where(rand & ~improved, stall + 1, 0)
        if patience is not None:
            for row in np.flatnonzero(stall >= patience):
                if not spare:
                    break
                i = spare.pop()
                x[row], values[row] = start[i], start_values[i]
                sigma[row], stall[row], tabu[row] = SIGMA_START, 0, False
        k = int(np.argmax(values))
        if values[k] > best:
            best, best_x = float(values[k]), x[k].copy()
    return best_x, best
