"""Random networks with per-neuron two-piece activations ``h = α z + (1 - α) relu(z)`` and the
independent truth the activation bound tests compare with: pre-activations, backward variables
and gradients computed in numpy from the raw weights and slopes, not by lipopt."""

from __future__ import annotations

import numpy as np

from lipopt.bounds.interval import NetworkBounds
from lipopt.domain import Box, L1Ball, L2Ball, LinfBall, Polytope
from lipopt.network import Affine, Network
from lipopt.norms import OutputNorm
from tests import oracle

TOL = 1e-9
SAMPLES = 5000
NAMED = np.array([0.0, 1.0, 0.1, 0.25, -1.0])
DOMAINS = ("box", "linf", "l1", "l2", "polytope")
WIDTHS = ([3, 6, 6, 5, 2], [2, 8, 7, 1], [4, 5, 5, 5, 5, 3])


# ---------------------------------------------------------------------------- independent truth
def draw_slopes(rng: np.random.Generator, width: int) -> np.ndarray:
    """α per neuron: the named kinds, and uniform reals in [-1.5, 1.5] for about a third."""
    alpha = rng.choice(NAMED, size=width)
    real = rng.random(width) < 0.35
    return np.where(real, rng.uniform(-1.5, 1.5, size=width), alpha)


def make_case(seed: int, widths: list[int]) -> tuple[Network, list, list[np.ndarray]]:
    """A random network, its raw ``(W, b)`` per layer and its slopes per hidden layer."""
    rng = np.random.default_rng(seed)
    weights = oracle.random_network_weights(rng, widths)
    slopes = [draw_slopes(rng, n) for n in widths[1:-1]]
    network = Network.from_affines([Affine(w, b) for w, b in weights], slopes)
    return network, weights, slopes


def make_domain(kind: str, rng: np.random.Generator, dim: int):
    centre = rng.normal(size=dim)
    return {
        "box": lambda: Box(centre - 0.6, centre + rng.uniform(0.2, 0.9, size=dim)),
        "linf": lambda: LinfBall(centre, 0.5),
        "l1": lambda: L1Ball(centre, 0.9),
        "l2": lambda: L2Ball(centre, 0.7),
        "polytope": lambda: Polytope(np.ones((1, dim)), [centre.sum()], centre - 0.7, centre + 0.7),
    }[kind]()


def act(alpha: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.where(z > 0, z, alpha * z)


def slope_of(alpha: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``D = 1`` where ``z > 0``, else ``α``."""
    return np.where(z > 0, 1.0, alpha)


def forward_truth(weights: list, slopes: list, x: np.ndarray) -> list[np.ndarray]:
    """Pre-activations ``z_k`` (n, n_k) of every hidden layer."""
    zs, h = [], x
    for (w, b), alpha in zip(weights[:-1], slopes, strict=True):
        z = h @ w.T + b
        zs.append(z)
        h = act(alpha, z)
    return zs


def backward_truth(
    weights: list, slopes: list, zs: list[np.ndarray], top: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray]:
    """``y_k`` per hidden layer (n, n_k) and the input gradient (n, d) for output weightings
    ``top`` (n, m): ``y_{K-1} = W_K^T w``, ``y_{k-1} = W_k^T (D_k y_k)``."""
    y = top @ weights[-1][0]
    ys = []
    for k in range(len(zs) - 1, -1, -1):
        ys.append(y)
        y = (slope_of(slopes[k], zs[k]) * y) @ weights[k][0]
    return ys[::-1], y


def seed_points(seed: object, m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Points of the seed set: ``c``, or the ℓ∞ unit ball (the dual ball of the ℓ1 output
    norm) with its vertices."""
    if seed is OutputNorm.L1:
        points = rng.uniform(-1.0, 1.0, size=(n, m))
        points[: n // 3] = rng.choice([-1.0, 1.0], size=(n // 3, m))
        return points
    return np.broadcast_to(np.asarray(seed, dtype=np.float64), (n, m))


def sampled_case(case: int, kind: str, seed_kind: str):
    """Case ``case``'s network, raw weights and slopes, a ``kind`` domain, a seed (``c``, or the
    ℓ1 output norm for ``"norm"``), ``SAMPLES`` points of the domain and of the seed set, and
    the generator."""
    widths = WIDTHS[case % len(WIDTHS)]
    network, weights, slopes = make_case(100 + case, widths)
    rng = np.random.default_rng(200 + case + 7 * DOMAINS.index(kind))
    domain = make_domain(kind, rng, widths[0])
    seed = OutputNorm.L1 if seed_kind == "norm" else rng.normal(size=widths[-1])
    x = domain.sample(SAMPLES, rng)
    top = seed_points(seed, widths[-1], SAMPLES, rng)
    return network, weights, slopes, domain, seed, x, top, rng


def fields(bounds: NetworkBounds | None) -> list[np.ndarray]:
    """Every array of ``bounds`` (which must exist), in a fixed order."""
    assert bounds is not None
    return [
        *bounds.pre_lower, *bounds.pre_upper, *bounds.grad_lower, *bounds.grad_upper,
        bounds.input_grad_lower, bounds.input_grad_upper,
    ]  # fmt: skip
