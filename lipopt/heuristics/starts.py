"""Start points for the MIP: the attack, the best sampled points and the pattern climb from them.

Each returns verified witnesses (:mod:`lipopt.heuristics.witness`): the value a strategy then
requires the MIP to beat (``objective >= L``, less 1e-6 relative), so that the solver prunes
every branch that cannot, and an infeasible verdict proves the constant is ``L``. Budgets come
from the :class:`~lipopt.policy.Policy`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lipopt.heuristics import attack as attack_module
from lipopt.heuristics import climb as climb_module
from lipopt.heuristics.witness import Witness, best_witness
from lipopt.norms import dual_norm
from lipopt.policy import Policy
from lipopt.query import Query

FloatArray = NDArray[np.float64]


def attack_witness(
    query: Query, policy: Policy, random_seed: int, deadline: float | None = None
) -> Witness | None:
    """The best of the gradient attack's point, the ``climb_sampled_starts`` best sampled
    points and the pattern climb's point from them (the climb stops at ``deadline``), verified
    as any other witness (its region checked to be full-dimensional, the value recomputed at a
    differentiable point). All three stop at ``deadline``."""
    rng = np.random.default_rng(random_seed)
    network, domain, norm = query.network, query.domain, query.norm
    c = np.asarray(query.seed, dtype=np.float64)
    point, _ = attack_module.gradient_attack(
        network, domain, c, norm, restarts=policy.attack_restarts, steps=policy.attack_steps,
        rng=rng, deadline=deadline,
    )  # fmt: skip
    sampled = top_sampled(query, rng, policy.decompose_samples, policy.climb_sampled_starts)
    starts = [point, *sampled]
    climbed = climb(query, starts, deadline, policy)
    points = starts if climbed is None else [*starts, climbed]
    return best_witness(network, domain, query.seed, norm, points, rng, False, deadline)


def top_sampled(
    query: Query, rng: np.random.Generator, samples: int, count: int
) -> list[FloatArray]:
    """The ``count`` best of ``samples`` uniform random points of the domain (their gradients
    in one batch: milliseconds)."""
    pool = np.asarray(query.domain.sample(samples, rng))
    c = np.asarray(query.seed, dtype=np.float64)
    values = np.asarray(dual_norm(query.network.gradients(pool, c), query.norm))
    return [pool[n] for n in np.argsort(-values)[:count]]


def climb(
    query: Query,
    starts: list[FloatArray],
    deadline: float | None,
    policy: Policy,
    wide: bool = False,
) -> FloatArray | None:
    """The point of the best region :func:`~lipopt.heuristics.climb.pattern_climb` reaches
    from ``starts`` within ``climb_checks`` margin LPs and by ``deadline``
    (``time.perf_counter()`` seconds; None: no start in a full-dimensional region); with
    ``wide``, then moving up to ``wide_flips`` gates at a time with ``wide_checks`` more LPs."""
    c = np.asarray(query.seed, dtype=np.float64)
    found = climb_module.pattern_climb(
        query.network, query.domain, c, query.norm, starts, policy.climb_checks, deadline,
        max_flips=policy.wide_flips if wide else 1, wide_checks=policy.wide_checks if wide else 0,
    )  # fmt: skip
    return None if found is None else found.point


def sampled_witness(
    query: Query, rng: np.random.Generator, deadline: float | None, policy: Policy
) -> Witness | None:
    """The best verified point among the ``decompose_verified`` best of ``decompose_samples``
    uniform random points and the wide pattern climb's point from them (fixed c; the climb
    stops at ``deadline``): a cutoff for the ℓ1 decomposition's first candidates."""
    points = top_sampled(query, rng, policy.decompose_samples, policy.decompose_verified)
    climbed = climb(query, points, deadline, policy, wide=True)
    candidates = points if climbed is None else [*points, climbed]
    return best_witness(
        query.network, query.domain, query.seed, query.norm, candidates, rng, fallback=False
    )
