"""The synthetic "leaders" classification dataset of Jordan & Dimakis (NeurIPS 2020), App. F.1.

Points are drawn sequentially and uniformly from the unit hypercube ``[0, 1)^dim``; a draw that
lies within ``min_separation`` (Euclidean) of an already accepted point is rejected and redrawn.
Then ``num_leaders`` of the points are chosen uniformly at random and each is given a uniformly
random label; every other point takes the label of its nearest leader.

The paper numbers labels ``1..num_classes``; here they are ``0..num_classes-1`` (what
cross-entropy losses expect).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: Consecutive rejected draws for one point after which the packing is declared infeasible.
MAX_TRIES_PER_POINT = 10_000
#: Label redraws (to cover every class) before falling back to a direct construction.
MAX_LABEL_REDRAWS = 1_000


def _sample_points(
    rng: np.random.Generator, dim: int, num_points: int, min_separation: float
) -> NDArray[np.float64]:
    """Sequential rejection sampling of well-separated points in the unit hypercube."""
    points = np.empty((num_points, dim), dtype=np.float64)
    min_sq = float(min_separation) ** 2
    for i in range(num_points):
        for _ in range(MAX_TRIES_PER_POINT):
            candidate = rng.random(dim)
            if i == 0 or min_sq == 0.0:
                break
            sq_dists = np.sum((points[:i] - candidate) ** 2, axis=1)
            if sq_dists.min() >= min_sq:
                break
        else:
            raise ValueError(
                f"could not place point {i + 1} of {num_points} at distance >= {min_separation} "
                f"from the others in [0, 1]^{dim} after {MAX_TRIES_PER_POINT} tries; "
                "lower min_separation or num_points"
            )
        points[i] = candidate
    return points


def _leader_labels(
    rng: np.random.Generator, num_leaders: int, num_classes: int
) -> NDArray[np.int64]:
    """Uniform random leader labels, covering every class when ``num_leaders >= num_classes``."""
    labels = rng.integers(0, num_classes, size=num_leaders, dtype=np.int64)
    if num_leaders < num_classes:
        return labels
    for _ in range(MAX_LABEL_REDRAWS):
        if np.unique(labels).size == num_classes:
            return labels
        labels = rng.integers(0, num_classes, size=num_leaders, dtype=np.int64)
    # Coverage is very unlikely by chance (e.g. num_leaders == num_classes, both large):
    # give a random subset of leaders one class each, the remaining leaders uniform labels.
    labels = rng.integers(0, num_classes, size=num_leaders, dtype=np.int64)
    labels[rng.choice(num_leaders, size=num_classes, replace=False)] = rng.permutation(num_classes)
    return labels


def make_dataset(
    dim: int,
    num_points: int,
    min_separation: float,
    num_classes: int,
    num_leaders: int,
    seed: int,
) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """Generate the paper's synthetic dataset.

    Returns ``(X, y)``: ``X`` float32 of shape ``(num_points, dim)`` in the unit hypercube and
    ``y`` int64 of shape ``(num_points,)`` with labels in ``0..num_classes-1``. Deterministic
    for a given ``seed``. Raises ``ValueError`` on bad arguments or an infeasible separation.
    """
    if dim < 1 or num_points < 1 or num_classes < 1:
        raise ValueError("dim, num_points and num_classes must be positive")
    if not 1 <= num_leaders <= num_points:
        raise ValueError(f"num_leaders must be in 1..num_points={num_points}, got {num_leaders}")
    if not (np.isfinite(min_separation) and min_separation >= 0):
        raise ValueError(f"min_separation must be finite and >= 0, got {min_separation}")
    if num_points > 1 and min_separation > np.sqrt(dim):
        raise ValueError(
            f"min_separation={min_separation} exceeds the diameter sqrt({dim}) of the hypercube"
        )

    rng = np.random.default_rng(seed)
    points = _sample_points(rng, dim, num_points, min_separation)
    leaders = rng.choice(num_points, size=num_leaders, replace=False)
    leader_labels = _leader_labels(rng, num_leaders, num_classes)

    # Nearest leader for every point (a leader is its own nearest leader, at distance 0).
    sq_dists = np.sum((points[:, None, :] - points[None, leaders, :]) ** 2, axis=2)
    labels = leader_labels[np.argmin(sq_dists, axis=1)]
    return points.astype(np.float32), labels.astype(np.int64)
