"""RandomLB: the largest gradient dual norm at random points of the domain.

At a point x in the domain where f is differentiable, ``||∇(c^T f)(x)||_{α*}`` is attained, so it
is a lower bound on ``L^α(c^T f, X)``; so is the largest of n of them. Points are uniform in
the domain (almost surely interior and differentiable). The paper uses n = 1000 (App. F.1).
Cost: n gradient evaluations (one batched backward pass).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import Estimate, Kind, as_rng, problem, stopwatch
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm

NAME = "random"
KIND = Kind.LOWER


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    samples: int = 1000,
    seed: int | np.random.Generator | None = 0,
    batch: int = 4096,
    **options: Any,
) -> Estimate:
    """``max_{i <= samples} ||∇(c^T f)(x_i)||_{α*}`` with ``x_i`` uniform in the domain.

    Args:
        samples: number of random points (paper: 1000).
        seed: seed or generator for the points.
        batch: points per vectorised gradient evaluation (memory only).
    """
    if options:
        raise TypeError(f"random got unexpected options {sorted(options)}")
    if samples < 1:
        raise ValueError(f"samples must be positive, got {samples}")
    rng = as_rng(seed)
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)  # sampled: any norm
        best, best_x = -np.inf, None
        remaining = samples
        while remaining > 0:
            n = min(batch, remaining)
            x = domain.sample(n, rng)
            values = prob.dual_norms(x)
            k = int(np.argmax(values))
            if values[k] > best:
                best, best_x = float(values[k]), x[k]
            remaining -= n
    return Estimate(NAME, best, KIND, elapsed[0], {"samples": samples, "witness": best_x})
