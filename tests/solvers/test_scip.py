"""The SCIP adapter's hand-over of a Pyomo model, checked on models solved by hand."""

from __future__ import annotations

import pyomo.environ as pe
import pytest

from lipopt.solvers import SolveOptions, Termination
from lipopt.solvers.registry import get

pytestmark = pytest.mark.requires_solver("scip")


def _hand_model() -> pe.ConcreteModel:
    """max x + 2y + 3 + 0·u  s.t.  1 <= x + y + w + 1 <= 4 (w fixed at 0.5),  x - y == 0.5,
    b <= 0.25 + x (b binary), x, y in [0, 10], u in [0, 7] in no constraint.

    x - y = 0.5 and x + y <= 2.5 give x = 1.5, y = 1: objective 1.5 + 2 + 3 = 6.5; b = 1."""
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, 10))
    m.y = pe.Var(bounds=(0, 10))
    m.w = pe.Var(bounds=(0, 1))
    m.w.fix(0.5)
    m.u = pe.Var(bounds=(0, 7))
    m.b = pe.Var(domain=pe.Binary)
    m.ranged = pe.Constraint(expr=pe.inequality(1, m.x + m.y + m.w + 1, 4))
    m.equal = pe.Constraint(expr=m.x - m.y == 0.5)
    m.gate = pe.Constraint(expr=m.b <= 0.25 + m.x)
    m.objective = pe.Objective(expr=m.x + 2 * m.y + 3 + 0 * m.u + 0 * m.b, sense=pe.maximize)
    return m


def test_scip_solves_a_hand_model_with_every_kind_of_row():
    m = _hand_model()
    result = get("scip").solve(m, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == pytest.approx(6.5)
    assert result.bound == pytest.approx(6.5) and result.bound >= result.incumbent
    values = result.values
    assert values[m.x] == pytest.approx(1.5) and values[m.y] == pytest.approx(1.0)
    assert values[m.w] == 0.5  # fixed variables keep their value
    assert 0.0 <= values[m.u] <= 7.0  # in no constraint, still given a value
    assert result.solver.startswith("scip ")


def test_scip_cutoff_above_the_optimum_is_infeasible_without_a_bound():
    m = _hand_model()
    m.cutoff = pe.Constraint(expr=m.x + 2 * m.y + 3 >= 6.6)
    result = get("scip").solve(m, SolveOptions())
    assert result.termination is Termination.INFEASIBLE
    assert result.incumbent is None and result.bound is None and result.values is None


def test_scip_row_of_fixed_variables_alone_is_checked():
    m = _hand_model()
    m.fixed_row = pe.Constraint(expr=m.w >= 0.75)  # w is fixed at 0.5
    result = get("scip").solve(m, SolveOptions())
    assert result.termination is Termination.INFEASIBLE and result.bound is None
    m.fixed_row.deactivate()
    m.fixed_ok = pe.Constraint(expr=m.w <= 0.75)
    assert get("scip").solve(m, SolveOptions()).incumbent == pytest.approx(6.5)


def test_scip_unknown_parameter_is_one_clear_line():
    from lipopt.solvers import SolverError

    with pytest.raises(SolverError) as info:
        get("scip").solve(_hand_model(), SolveOptions(options={"no/such/parameter": 1}))
    assert "no/such/parameter" in str(info.value) and "\n" not in str(info.value)
