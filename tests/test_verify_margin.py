"""The margin LP through highspy (lipopt.highs_lp): its duals keep SciPy's sign, and the
support of a lower-dimensional region names the neurons whose rows prove it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from lipopt.domain import Box, L1Ball
from lipopt.highs_lp import LpStatus, solve_lp
from lipopt.verify import Dimension, check_region
from tests.helpers import network_from_weights


def test_solve_lp_row_duals_are_scipys_marginals():
    # min -x1 - x2  s.t.  x1 + 2 x2 <= 4,  3 x1 + x2 <= 6,  x1 <= 10,  x >= 0: optimum (1.6, 1.2);
    # the dual y of max x1 + x2 solves y1 + 3 y2 = 1, 2 y1 + y2 = 1: (0.4, 0.2), the third row
    # slack; as d optimum / d b of the min, -(0.4, 0.2, 0) (linprog's ineqlin.marginals)
    matrix = sparse.csr_array(np.array([[1.0, 2.0], [3.0, 1.0], [1.0, 0.0]]))
    rhs = np.array([4.0, 6.0, 10.0])
    answer = solve_lp(np.array([-1.0, -1.0]), matrix, rhs, (0.0, np.inf))
    assert answer.status is LpStatus.OPTIMAL
    assert answer.objective == pytest.approx(-2.8)
    np.testing.assert_allclose(answer.x, [1.6, 1.2])
    np.testing.assert_allclose(answer.row_duals, [-0.4, -0.2, 0.0], atol=1e-12)


def test_solve_lp_row_duals_match_linprog_column_wise_too():
    from scipy.optimize import linprog

    rng = np.random.default_rng(0)
    dense = rng.normal(size=(12, 4))
    rhs = rng.uniform(0.5, 2.0, size=12)
    cost = rng.normal(size=4)
    answer = solve_lp(cost, sparse.csc_array(dense), rhs, (-1.0, 1.0))
    reference = linprog(cost, A_ub=dense, b_ub=rhs, bounds=(-1.0, 1.0), method="highs")
    assert answer.status is LpStatus.OPTIMAL and reference.status == 0
    assert answer.objective == pytest.approx(reference.fun, abs=1e-12)
    np.testing.assert_allclose(answer.row_duals, reference.ineqlin.marginals, atol=1e-12)


def test_solve_lp_infeasible():
    matrix = sparse.csr_array(np.array([[1.0], [-1.0]]))  # x <= -1 and x >= 1
    answer = solve_lp(np.zeros(1), matrix, np.array([-1.0, -1.0]), (-np.inf, np.inf))
    assert answer.status is LpStatus.INFEASIBLE and answer.row_duals is None


def _sliver_network():
    """Over [-1, 1]^2, all active: neurons (0, 0) ``x2 + 5`` and (0, 2) ``x1 + x2 + 10`` and
    (1, 0) ``h_0`` have slack, (0, 1) ``x1 >= 0`` and (1, 1) ``-h_1 = -x1 >= 0`` meet only on
    the line ``x1 = 0``: the region is lower-dimensional, proven by those two rows alone."""
    w1 = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    w2 = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    weights = [(w1, np.array([5.0, 0.0, 10.0])), (w2, np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    return network_from_weights(weights), [np.ones(3), np.ones(2)]


@pytest.mark.parametrize("domain", [Box(-np.ones(2), np.ones(2)), L1Ball(np.zeros(2), 1.0)])
def test_check_region_support_names_the_neurons_that_prove_a_lower_dimensional_region(domain):
    network, pattern = _sliver_network()
    check = check_region(network, pattern, domain)
    assert check.dimension is Dimension.LOWER
    assert check.margin == pytest.approx(0.0, abs=1e-12)
    assert check.support == ((0, 1), (1, 1))


def test_check_region_without_the_opposite_gate_is_full_dimensional():
    network, pattern = _sliver_network()
    pattern[1][1] = 0.0  # (1, 1) inactive: -x1 <= 0, the half box x1 >= 0
    check = check_region(network, pattern, Box(-np.ones(2), np.ones(2)))
    assert check.dimension is Dimension.FULL and check.support is None
    assert check.margin == pytest.approx(0.5)  # u in [0, 1] x [-1, 1]: the largest ball, 1/2
    assert check.point is not None and check.point[0] > 0.0
