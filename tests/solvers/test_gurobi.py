"""Gurobi specifics: the size-limited licence's refusal is one clear line suggesting HiGHS."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt import Box, SolverError
from lipopt.solvers import SolveOptions, Termination
from lipopt.solvers.gurobi import SIZE_LIMIT, GurobiSolver
from tests.helpers import random_network


def _size_limited() -> bool:
    from pyomo.contrib.solver.common.base import Availability
    from pyomo.contrib.solver.solvers.gurobi.gurobi_direct import GurobiDirect

    return GurobiDirect().available() == Availability.LimitedLicense


@pytest.mark.requires_solver("gurobi")
def test_gurobi_size_limited_licence_refusal_is_one_clear_line():
    if not _size_limited():
        pytest.skip("a full Gurobi licence is installed here")
    net = random_network(np.random.default_rng(0), [3, 420, 420, 2])
    with pytest.raises(SolverError) as info:
        lipopt.lipschitz(
            net,
            Box([0.0] * 3, [1.0] * 3),
            "linf",
            [1.0, -1.0],
            solver="gurobi",
            bounds="interval",
            split=False,
            regions=False,  # one model, built fast
        )
    message = str(info.value)
    assert "size-limited licence" in message and "--solver highs" in message
    variables = int(message.split("(")[1].split(" variables")[0])
    assert variables > SIZE_LIMIT
    assert "\n" not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no traceback chain


@pytest.mark.requires_solver("gurobi")
def test_gurobi_gap_stop_is_reported_as_gap_limit():
    """Gurobi calls a MIPGap stop OPTIMAL; the adapter says GAP_LIMIT when the bound is above."""
    net = random_network(np.random.default_rng(3), [2, 16, 16, 2])
    lip = lipopt.build_model(net, Box([0.0] * 2, [1.0] * 2), "linf", [1.0, -1.0])
    result = GurobiSolver().solve(lip.model, SolveOptions(rel_gap=0.3))
    assert result.incumbent is not None and result.bound is not None
    assert result.bound - result.incumbent <= 0.3 * result.bound + 1e-9
    above = result.bound - result.incumbent > 1e-9 * result.bound
    assert result.termination is (Termination.GAP_LIMIT if above else Termination.OPTIMAL)
    assert result.nodes is not None and result.nodes >= 0
    assert "Gurobi" in result.log
