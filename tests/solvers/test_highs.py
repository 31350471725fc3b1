"""The HiGHS adapter's hand-off: a Pyomo model compiled to matrices and solved by highspy.

Small models whose optima are worked out by hand check each piece of the translation: row senses
(``<=``, ``>=``, ``==``, ranged), variable bounds and integrality, fixed variables, a constant in
the objective, a minimised objective, variables with no column, and the LP/MIP bound rules."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import pytest

from lipopt.solvers import SolveOptions, SolverError, Termination
from lipopt.solvers.highs import HighsSolver, compile_model


def _mixed_model() -> pe.ConcreteModel:
    """max 3x + 2y + z + 5 + 0*u  s.t.  x + y <= 4,  x - y >= -1,  1 <= y + z <= 3,  z == 2w,
    x in [0, 10] integer, y in [0, 2.5], z free, w fixed at 1, u in no row (bounds [2, 7]).

    With w = 1: z = 2, so 0 <= y <= 1 (from 1 <= y + z <= 3) and the objective is 3x + 2y + 7
    with x integer, x <= 4 - y. Each unit of y costs a unit of x (3 > 2), so y = 0, x = 4: 19
    (y = 1, x = 3: 18)."""
    m = pe.ConcreteModel()
    m.x = pe.Var(domain=pe.Integers, bounds=(0, 10))
    m.y = pe.Var(bounds=(0, 2.5))
    m.z = pe.Var()
    m.w = pe.Var(bounds=(0, 5))
    m.w.fix(1.0)
    m.u = pe.Var(bounds=(2, 7))
    m.cap = pe.Constraint(expr=m.x + m.y <= 4)
    m.order = pe.Constraint(expr=m.x - m.y >= -1)
    m.window = pe.Constraint(expr=pe.inequality(1, m.y + m.z, 3))
    m.link = pe.Constraint(expr=m.z == 2 * m.w)
    m.objective = pe.Objective(expr=3 * m.x + 2 * m.y + m.z + 5 + 0 * m.u, sense=pe.maximize)
    return m


def test_compiled_rows_columns_and_objective_match_the_model() -> None:
    m = _mixed_model()
    compiled = compile_model(m)
    lp = compiled.lp
    names = [v.name for v in compiled.columns]
    assert sorted(names) == ["x", "y", "z"]  # w fixed, u in no row: no column
    assert dict((v.name, value) for v, value in compiled.others) == {"w": 1.0, "u": 2.0}
    assert lp.num_row_ == 5  # the ranged row is two rows
    assert lp.offset_ == pytest.approx(5.0)
    cost = dict(zip(names, lp.col_cost_))
    assert cost == {"x": 3.0, "y": 2.0, "z": 1.0}
    lower = dict(zip(names, lp.col_lower_))
    upper = dict(zip(names, lp.col_upper_))
    assert (lower["x"], upper["x"], lower["y"], upper["y"]) == (0.0, 10.0, 0.0, 2.5)
    assert lower["z"] < -1e29 and upper["z"] > 1e29


def test_mixed_model_reaches_its_hand_worked_optimum() -> None:
    m = _mixed_model()
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == pytest.approx(19.0)
    assert result.bound == pytest.approx(19.0)
    values = result.values
    assert values[m.x] == pytest.approx(4.0)
    assert values[m.y] == pytest.approx(0.0, abs=1e-9)
    assert values[m.z] == pytest.approx(2.0)
    assert values[m.w] == 1.0
    assert values[m.u] == 2.0
    assert result.nodes is not None  # a MIP: branch and bound ran (possibly at its root)


def test_an_lp_reports_its_optimum_as_bound_and_no_nodes() -> None:
    """max x + y s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0: vertex (8/5, 6/5), value 14/5."""
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, None))
    m.y = pe.Var(bounds=(0, None))
    m.a = pe.Constraint(expr=m.x + 2 * m.y <= 4)
    m.b = pe.Constraint(expr=3 * m.x + m.y <= 6)
    m.objective = pe.Objective(expr=m.x + m.y, sense=pe.maximize)
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == pytest.approx(14 / 5)
    assert result.bound == pytest.approx(14 / 5)
    assert (result.values[m.x], result.values[m.y]) == pytest.approx((8 / 5, 6 / 5))
    assert result.nodes is None


def test_a_minimised_objective_keeps_its_sense() -> None:
    """min x s.t. x >= 2.5, x integer: 3."""
    m = pe.ConcreteModel()
    m.x = pe.Var(domain=pe.Integers, bounds=(-10, 10))
    m.floor = pe.Constraint(expr=m.x >= 2.5)
    m.objective = pe.Objective(expr=m.x, sense=pe.minimize)
    result = HighsSolver().solve(m, SolveOptions())
    assert result.incumbent == pytest.approx(3.0)
    assert result.values[m.x] == pytest.approx(3.0)


def test_an_infeasible_model_has_no_incumbent_and_no_values() -> None:
    m = pe.ConcreteModel()
    m.x = pe.Var(domain=pe.Binary)
    m.y = pe.Var(domain=pe.Binary)
    m.both = pe.Constraint(expr=m.x + m.y >= 3)
    m.objective = pe.Objective(expr=m.x + 0.5 * m.y, sense=pe.maximize)
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.INFEASIBLE
    assert result.incumbent is None and result.values is None


def test_an_unknown_option_is_one_clear_error() -> None:
    with pytest.raises(SolverError, match="refused the option no_such_option"):
        HighsSolver().solve(_mixed_model(), SolveOptions(options={"no_such_option": 1}))


def test_verbose_streams_the_log_to_stderr_not_stdout(capfd) -> None:
    result = HighsSolver().solve(_mixed_model(), SolveOptions(verbose=True))
    out, err = capfd.readouterr()
    assert out == ""
    assert "HiGHS" in err
    assert "HiGHS" in result.log


def test_quiet_solves_keep_the_log_but_print_nothing(capfd) -> None:
    result = HighsSolver().solve(_mixed_model(), SolveOptions())
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert "HiGHS" in result.log


def test_a_small_objective_is_scaled_by_a_power_of_two_and_answered_in_its_own_units() -> None:
    """The mixed model's objective times 1e-4: optimum 19e-4. HiGHS gets it multiplied by a
    power of two that lifts its largest magnitude on the box to about 1e3; the answers come
    back in the model's units."""
    from lipopt.solvers.highs import OBJECTIVE_MAGNITUDE

    m = _mixed_model()
    m.objective.set_value(1e-4 * (3 * m.x + 2 * m.y + m.z + 5))
    # z is free, so the magnitude bound is infinite: no scaling
    assert compile_model(m).scale == 1.0
    m.z.setlb(-10)
    m.z.setub(10)
    compiled = compile_model(m)
    magnitude = 1e-4 * (5 + 3 * 10 + 2 * 2.5 + 10)  # |offset| + Σ |c_j| max(|l_j|, |u_j|)
    exponent = np.log2(compiled.scale)
    assert exponent == int(exponent) and exponent > 0
    assert OBJECTIVE_MAGNITUDE / 2 < compiled.scale * magnitude <= OBJECTIVE_MAGNITUDE
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert result.incumbent == pytest.approx(19e-4, rel=1e-9)
    assert result.bound == pytest.approx(19e-4, rel=1e-9)


def test_an_objective_already_large_is_not_scaled() -> None:
    m = _mixed_model()
    m.z.setlb(-10)
    m.z.setub(10)
    m.objective.set_value(1e3 * (3 * m.x + 2 * m.y + m.z + 5))
    assert compile_model(m).scale == 1.0
    assert HighsSolver().solve(m, SolveOptions()).incumbent == pytest.approx(19e3)


def test_a_violated_row_of_fixed_variables_is_infeasible_not_an_error() -> None:
    """With b fixed at 1, ``b <= 0.5`` has no free variable left and is violated."""
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, 4))
    m.b = pe.Var(domain=pe.Binary)
    m.b.fix(1)
    m.gate = pe.Constraint(expr=m.b <= 0.5)
    m.cap = pe.Constraint(expr=m.x + m.b <= 3)
    m.objective = pe.Objective(expr=m.x, sense=pe.maximize)
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.INFEASIBLE
    assert result.incumbent is None and result.bound is None and result.values is None


def test_a_model_whose_variables_all_cancel_answers_its_constant() -> None:
    """``x - x + 5`` keeps a variable in the expression but none in the compiled columns."""
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(1, 2))
    m.objective = pe.Objective(expr=m.x - m.x + 5, sense=pe.maximize)
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert (result.incumbent, result.bound) == (5.0, 5.0)
    assert 1.0 <= result.values[m.x] <= 2.0


def test_a_zero_coefficient_objective_answers_its_constant() -> None:
    """``0.0 * x + 5`` has polynomial degree 0 but names x, which has no value: the constant
    is read off the expression's terms, not by evaluating it."""
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, 1))
    m.objective = pe.Objective(expr=np.float64(0.0) * m.x + 5, sense=pe.maximize)
    result = HighsSolver().solve(m, SolveOptions())
    assert result.termination is Termination.OPTIMAL
    assert (result.incumbent, result.bound) == (5.0, 5.0)
