"""Gurobi specifics: the size-limited licence's refusal is one clear line suggesting HiGHS."""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
import lipopt.policy as policy_module
from lipopt import Box
from lipopt.solvers import SolveOptions, SolverFailure, Termination
from lipopt.solvers.gurobi import SIZE_LIMIT, GurobiSolver
from tests.helpers import random_network


def _size_limited() -> bool:
    from pyomo.contrib.solver.common.base import Availability
    from pyomo.contrib.solver.solvers.gurobi.gurobi_direct import GurobiDirect

    return GurobiDirect().available() == Availability.LimitedLicense


@pytest.mark.requires_solver("gurobi")
def test_gurobi_size_limited_licence_refusal_is_one_clear_line():
    """The adapter's refusal is one line naming the size, without a traceback chain."""
    if not _size_limited():
        pytest.skip("a full Gurobi licence is installed here")
    net = random_network(np.random.default_rng(0), [3, 420, 420, 2])
    lip = lipopt.build_model(net, Box([0.0] * 3, [1.0] * 3), "linf", [1.0, -1.0], bounds="interval")
    with pytest.raises(SolverFailure) as info:
        GurobiSolver().solve(lip.model, SolveOptions())
    message = str(info.value)
    assert "size-limited licence" in message and "--solver highs" in message
    variables = int(message.split("(")[1].split(" variables")[0])
    assert variables > SIZE_LIMIT
    assert "\n" not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no traceback chain


@pytest.mark.requires_solver("gurobi")
@pytest.mark.parametrize("regions", [False, "auto"])
def test_gurobi_licence_refusal_is_a_solver_error_never_a_time_limit(regions, monkeypatch):
    """The issue's case: with or without the region search before the MIP, the licence
    refusal is the answer's status and message, and the bracket is still proven (the attained
    lower bound at most the sampled maximum's ceiling, the upper bound at least every sampled
    gradient norm)."""
    if not _size_limited():
        pytest.skip("a full Gurobi licence is installed here")
    # a region search stopped early (it would take most of a minute), the MIP after it
    monkeypatch.setattr(policy_module, "AUTO_REGION_NODES", 50)
    monkeypatch.setattr(policy_module, "AUTO_REGION_NODES_FEW_UNSTABLE", 50)
    net = random_network(np.random.default_rng(0), [3, 420, 420, 2])
    box = Box([0.0] * 3, [1.0] * 3)
    res = lipopt.lipschitz(
        net, box, "linf", [1.0, -1.0], solver="gurobi", bounds="interval", split=False,
        regions=regions, time_limit=60,
    )  # fmt: skip
    assert res.status == "solver_error"
    assert "size-limited licence" in res.message and "could take over: highs" in res.message
    points = box.sample(2000, np.random.default_rng(1))
    sampled = max(np.abs(net.gradients(x, np.array([1.0, -1.0]))).sum() for x in points)
    assert res.lower is not None and res.lower <= res.upper
    assert res.upper >= sampled * (1 - 1e-9)


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
