"""``SolveOptions.stop``: HiGHS and SCIP report their incumbent and proven bound while solving a
MIP, stop when the hook says so, and keep bounds that bracket the optimum."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from lipopt import Box, lipschitz
from lipopt.solvers import SolveOptions, Termination
from lipopt.solvers.registry import get
from tests.helpers import random_network


@pytest.fixture(scope="module")
def hard_model():
    """A backward Lipschitz model whose MIP needs a branch-and-bound tree, and its optimum."""
    net = random_network(np.random.default_rng(5), [6, 12, 12, 1])
    # a second is enough to build the model; its MIP is solved below
    res = lipschitz(
        net, Box(np.zeros(6), np.ones(6)), "linf", formulation="backward", regions=False,
        split=False, attack=False, time_limit=1.0,
    )  # fmt: skip
    model = res.model.model
    whole = get("highs").solve(model, SolveOptions(time_limit=120))
    assert whole.termination is Termination.OPTIMAL
    return model, whole.incumbent


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_a_solve_stops_when_asked_with_bounds_around_the_optimum(solver, hard_model, caplog):
    if not get(solver).available():
        pytest.skip(f"{solver} is not installed")
    model, optimum = hard_model
    asked: list[tuple[float, float]] = []

    def at_first_incumbent(incumbent: float, bound: float) -> bool:
        asked.append((incumbent, bound))
        return incumbent > -np.inf

    with caplog.at_level(logging.WARNING):
        stopped = get(solver).solve(model, SolveOptions(time_limit=120, stop=at_first_incumbent))
    assert asked, f"{solver} never asked"
    assert all(bound >= optimum - 1e-6 for _, bound in asked)  # every reported bound is sound
    assert all(incumbent <= optimum + 1e-6 for incumbent, _ in asked)
    assert stopped.termination is Termination.INTERRUPTED
    assert stopped.incumbent is not None and stopped.bound is not None
    assert stopped.incumbent <= optimum + 1e-6 <= stopped.bound + 2e-6
    assert stopped.bound > optimum + 1e-6  # it stopped before the bound closed
    assert not [r for r in caplog.records if "kInterrupt" in r.getMessage()]  # Pyomo's warning


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_a_hook_that_never_stops_changes_nothing(solver, hard_model):
    if not get(solver).available():
        pytest.skip(f"{solver} is not installed")
    model, optimum = hard_model
    asked: list[float] = []

    def never(incumbent: float, bound: float) -> bool:
        asked.append(bound)
        return False

    result = get(solver).solve(model, SolveOptions(time_limit=120, stop=never))
    assert asked
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == pytest.approx(optimum, rel=1e-6)
