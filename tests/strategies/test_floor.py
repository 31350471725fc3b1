"""The bracket proven without a solver (strategies/floor.py): its upper bound is the
Jacobian-norm bound on the given bounds, sound against the brute-force oracle and never above
FastLip (the dual norm of the gradient's interval box) on the same bounds."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.bounds.interval import interval_bounds
from lipopt.bounds.linear import linear_bounds
from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.norms import InputNorm, dual_norm
from lipopt.query import Query
from lipopt.strategies.floor import floor_bracket
from tests import oracle
from tests.helpers import random_network

DOMAINS = [
    Box(np.zeros(3), np.ones(3)),
    LinfBall(np.full(3, 0.5), 0.25),
    L1Ball(np.full(3, 0.5), 0.5),
]


def _fastlip(bounds) -> np.ndarray:
    magnitude = np.maximum(np.abs(bounds.input_grad_lower), np.abs(bounds.input_grad_upper))
    return magnitude


@pytest.mark.parametrize("norm", [InputNorm.LINF, InputNorm.L1])
@pytest.mark.parametrize("method", [interval_bounds, linear_bounds])
def test_the_floor_brackets_the_exact_constant_and_is_at_most_fastlip(norm, method):
    rng = np.random.default_rng(11)
    tighter = 0
    for trial in range(6):
        net = random_network(rng, [3, 8, 8, 2])
        c = rng.normal(size=2)
        domain = DOMAINS[trial % len(DOMAINS)]
        bounds = method(net, domain, c)
        query = Query(net, domain, norm, c)
        floor = floor_bracket(query, bounds, None, {})
        truth = oracle.brute_force_lipschitz(
            *oracle.from_lipopt(net, domain), c=c, input_norm=norm.value
        ).value
        fastlip = float(dual_norm(_fastlip(bounds), norm))
        assert truth <= floor.upper * (1 + 1e-9) + 1e-12
        assert floor.lower is None or floor.lower <= truth * (1 + 1e-9) + 1e-12
        assert floor.upper <= fastlip * (1 + 1e-12) + 1e-12
        tighter += floor.upper < fastlip * (1 - 1e-6)
    if (
        norm is InputNorm.LINF
    ):  # the chords of |g_j| gain on some network; for l1 they are FastLip's rows
        assert tighter >= 1
