"""Issue 45: an answer is never looser than the root's Jacobian-norm bound on linear bounds.

A strategy stopped by the time limit may hold only a weak bound (e.g. the region search's, or a
MIP that proved little); :func:`lipopt.strategies.floor.capped_by_root` lowers its upper bound
to the Jacobian-norm bound. Checked against the brute-force oracle (the capped bound stays
sound) and through :func:`lipopt.lipschitz` with the driver's answer replaced by a loose one."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt import driver
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.bracket import Bracket
from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.norms import InputNorm
from lipopt.progress import silent
from lipopt.query import Query
from lipopt.status import Status
from lipopt.strategies.floor import capped_by_root
from tests import oracle
from tests.helpers import random_network

DOMAINS = [
    Box(np.zeros(3), np.ones(3)),
    LinfBall(np.full(3, 0.5), 0.25),
    L1Ball(np.full(3, 0.5), 0.5),
]

LOOSE = 1e6


def _bracket(upper: float, lower: float | None, status: Status) -> Bracket:
    return Bracket(upper, lower, None, status, False, {}, {"solve": 1.0}, "test")


@pytest.mark.parametrize("norm", [InputNorm.LINF, InputNorm.L1, InputNorm.L2])
def test_a_loose_stopped_bracket_is_capped_at_a_sound_bound(norm):
    rng = np.random.default_rng(45)
    for trial in range(6):
        net = random_network(rng, [3, 8, 8, 2])
        c = rng.normal(size=2)
        domain = DOMAINS[trial % len(DOMAINS)]
        query = Query(net, domain, norm, c)
        capped = capped_by_root(_bracket(LOOSE, 0.0, Status.TIME_LIMIT), query, silent)
        truth = oracle.brute_force_lipschitz(
            *oracle.from_lipopt(net, domain), c=c, input_norm=norm.value
        ).value
        assert capped.upper < LOOSE
        assert truth <= capped.upper * (1 + 1e-9) + 1e-12
        assert capped.status == Status.TIME_LIMIT and "Jacobian-norm bound" in capped.message
        bound = jacobian_norm_bound(net, domain, c, norm).value
        assert capped.upper == pytest.approx(bound, rel=1e-12)


def test_exact_answers_tighter_brackets_and_the_lower_bound_are_kept():
    rng = np.random.default_rng(3)
    net = random_network(rng, [3, 8, 8, 1])
    query = Query(net, DOMAINS[0], InputNorm.LINF, np.ones(1))
    bound = jacobian_norm_bound(net, DOMAINS[0], np.ones(1), "linf").value
    exact = _bracket(LOOSE, LOOSE, Status.OPTIMAL)
    assert capped_by_root(exact, query, silent) is exact
    tight = _bracket(bound / 2, 0.1, Status.TIME_LIMIT)
    assert capped_by_root(tight, query, silent) is tight
    # a lower bound above the propagated one (cannot be attained unless the bound were wrong,
    # but the bracket must stay a bracket): the upper bound never falls below it
    high = _bracket(LOOSE, 2 * bound, Status.TIME_LIMIT)
    assert capped_by_root(high, query, silent).upper == 2 * bound


def test_lipschitz_caps_a_strategy_that_stopped_with_a_loose_bound(monkeypatch):
    rng = np.random.default_rng(7)
    net = random_network(rng, [4, 10, 10, 1])
    domain = Box(np.zeros(4), np.ones(4))
    monkeypatch.setattr(
        driver.DRIVER, "within", lambda *args: _bracket(LOOSE, None, Status.TIME_LIMIT)
    )
    result = lipopt.lipschitz(net, domain, c=np.ones(1), time_limit=5)
    bound = jacobian_norm_bound(net, domain, np.ones(1), "linf").value
    truth = oracle.brute_force_lipschitz(
        *oracle.from_lipopt(net, domain), c=np.ones(1), input_norm="linf"
    ).value
    assert result.status == "time_limit"
    assert result.upper == pytest.approx(bound, rel=1e-12)
    assert result.lower <= truth * (1 + 1e-9) <= result.upper * (1 + 1e-9)
