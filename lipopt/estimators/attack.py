"""The gradient-norm attack as an estimator: the best point of
:func:`lipopt.heuristics.attack.gradient_attack` (a lower bound, attained)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import Estimate, Kind, stopwatch
from lipopt.heuristics.attack import gradient_attack, project, project_l1_ball
from lipopt.network import Network
from lipopt.norms import InputNorm

NAME = "attack"
KIND = Kind.LOWER

__all__ = ["KIND", "NAME", "estimate", "gradient_attack", "project", "project_l1_ball"]


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    restarts: int = 8,
    steps: int = 100,
    pool: int = 200,
    seed: int | np.random.Generator | None = 0,
    **options: Any,
) -> Estimate:
    """The best gradient dual norm found by :func:`gradient_attack` (a lower bound).

    Default budget: a pool of 200 random points and 8 searches of 100 moves, 1000 gradient
    evaluations in all — RandomLB's 1000 in the paper. ``options``: ``flips``, ``patience``.
    """
    with stopwatch() as elapsed:
        x, value = gradient_attack(
            network, domain, c, norm, restarts, steps, seed, pool=pool, **options
        )
    budget = max(pool, restarts) + restarts * steps
    return Estimate(NAME, value, KIND, elapsed[0], {"witness": x, "evaluations": budget})
