"""Shared cases of the sloped-network MIP tests (#46): random networks with per-neuron slopes
``h = α z + (1 - α) relu(z)`` and a brute force of their own (numpy's chain rule with
``D = α + (1 - α)[z > 0]``, no lipopt code) over a fine grid of the 2-d box."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lipopt import Box
from lipopt.activation import Activation
from lipopt.network import Affine, Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.solvers import SolveOptions, Termination, get

#: slope pools: ReLU, identity among ReLUs, leaky, |z|, the brief's mix, uniform reals (None)
POOLS = {
    "relu": (0.0,),
    "identity": (0.0, 1.0),
    "leaky": (0.1,),
    "abs": (-1.0, 0.0),
    "mix": (0.0, 1.0, 0.1, 0.25, -1.0),
    "uniform": None,
}
#: the dual norm of each input norm, as numpy's ``ord``
DUAL = {InputNorm.LINF: 1, InputNorm.L1: np.inf, InputNorm.L2: 2}
BOX = Box(-np.ones(2), np.ones(2))
GRID = np.array(list(itertools.product(np.linspace(-1.0, 1.0, 401), repeat=2)))
TOLERANCE = 1e-6


def sloped_weights(seed: int, widths: list[int], pool: str) -> tuple[list, list]:
    """Random ``[(W, b), ...]`` and one slope array per hidden layer drawn from ``pool``."""
    rng = np.random.default_rng(seed)
    weights = [
        (rng.normal(size=(n, m)), rng.normal(size=n) * 0.5) for m, n in zip(widths, widths[1:])
    ]
    choices = POOLS[pool]
    slopes = [
        rng.uniform(-1.5, 1.5, size=n) if choices is None else rng.choice(choices, size=n)
        for n in widths[1:-1]
    ]
    return weights, slopes


def sloped_network(weights: list, slopes: list) -> Network:
    layers: list = []
    for (w, b), alpha in zip(weights, [*slopes, None]):
        layers.append(Affine(w, b))
        if alpha is not None:
            layers.append(Activation(alpha))
    return Network(tuple(layers))


def jacobians(weights: list, slopes: list, points: np.ndarray) -> np.ndarray:
    """``J(x)`` at every point, shape (n, m, d): the chain rule with ``D = α + (1 - α)[z > 0]``."""
    h, jac = points, np.broadcast_to(np.eye(points.shape[1]), (len(points), *[points.shape[1]] * 2))
    for (w, b), alpha in zip(weights[:-1], slopes):
        z = h @ w.T + b
        derivative = alpha + (1.0 - alpha) * (z > 0)
        jac = derivative[:, :, None] * np.einsum("ij,njk->nik", w, jac)
        h = alpha * z + (1.0 - alpha) * np.maximum(z, 0.0)
    return np.einsum("ij,njk->nik", weights[-1][0], jac)


def objective_values(
    weights: list, slopes: list, points: np.ndarray, seed, norm: InputNorm
) -> np.ndarray:
    """The objective at every point: ``||c^T J||_{norm*}``, or for the ℓ∞ output norm
    ``max_i ||J_i||_{norm*}`` (its dual ball's vertices ``±e_i``)."""
    jac = jacobians(weights, slopes, points)
    if isinstance(seed, OutputNorm):
        assert seed is OutputNorm.LINF
        return np.linalg.norm(jac, ord=DUAL[norm], axis=2).max(axis=1)
    return np.linalg.norm(np.einsum("m,nmd->nd", seed, jac), ord=DUAL[norm], axis=1)


def solved(lip, solver: str = "highs") -> tuple[float, np.ndarray]:
    result = get(solver).solve(lip.model, SolveOptions())
    assert result.termination is Termination.OPTIMAL and result.bound is not None
    point = np.array([result.values.get(v, 0.0) for v in lip.x])
    return float(result.bound), np.clip(point, -1.0, 1.0)


def _near(point: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dense samples within 1e-4 of ``point`` in the box: the optimal region meets the ball
    around its maximiser in a cone, which some of them hit."""
    return np.clip(point + rng.uniform(-1e-4, 1e-4, size=(20000, point.size)), -1.0, 1.0)


def check_exact(value: float, point: np.ndarray, weights, slopes, seed, norm: InputNorm) -> None:
    sampled = objective_values(weights, slopes, GRID, seed, norm).max()
    near = _near(point, np.random.default_rng(0))
    local = objective_values(weights, slopes, near, seed, norm).max()
    scale = max(1.0, value)
    assert value >= sampled - TOLERANCE * scale  # an upper bound on every gradient
    assert value == pytest.approx(max(sampled, local), abs=TOLERANCE * scale)  # attained
