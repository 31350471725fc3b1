"""CBC's end-of-run summary -> why it stopped, incumbent, proven bound (canned logs, no solver)."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest

import lipopt
from lipopt.solvers.base import SolveOptions, Termination
from lipopt.solvers.cbc import (
    DEFAULT_OPTIONS,
    STATUS_MAP,
    CbcSolver,
    _optimal_or_gap,
    gap_stop_bound,
    parse_summary,
    printed_upper,
)
from tests.solvers.cases import CASES

OPTIMAL = """\
✔ Optimal — Obj: 5.68366   Bound: 5.68366   Gap: 0.00%   Nodes: 5287   Iters: 183.9K   Time: 40.6s
Result - Optimal solution found
Objective value:                5.6836565179
Enumerated nodes:               5287     (from fathoming 2502)
Total iterations:               183866
"""

GAP_STOP = """\
✔ Optimal — Obj: 4.39429   Bound: 4.39429   Gap: 0.00%   Nodes: 3941   Iters: 142.9K   Time: 35.9s
Result - Optimal solution found (within gap tolerance)
Objective value:                4.3942878009
Upper bound:                    83.0969
Gap:                            -0.947118
Enumerated nodes:               3941     (from fathoming 1355)
"""

TIME_WITH_SOLUTION = """\
Result - Stopped on time limit
Objective value:                1.32817172984
Upper bound:                    135.862
Gap:                            -0.990224
Enumerated nodes:               0
"""

TIME_WITHOUT_SOLUTION = """\
✔ Stopped (time limit) — BestSol: -1e+50   Bound: 270.734   Gap: 100.00%   Nodes: 0
Result - Stopped on time limit
No feasible solution found
Upper bound:                    270.734
Enumerated nodes:               0
"""

ROOT_LP_CUT_SHORT = """\
✔ LP Stopped — Frac: 42/98 (42.9%)   Obj: 0   Iters: 270   Time: 0.060s
LP relaxation stopped on time limit - 0.023019 seconds
"""


def test_cbc_summary_of_an_optimal_run():
    summary = parse_summary(OPTIMAL)
    assert STATUS_MAP[summary.result] is Termination.OPTIMAL
    assert summary.has_solution and summary.upper is None and summary.nodes == 5287


def test_cbc_summary_of_a_gap_stop_keeps_the_real_bound():
    """The '✔ Optimal' line claims Bound == Obj; the summary's 'Upper bound' is the proof."""
    summary = parse_summary(GAP_STOP)
    assert STATUS_MAP[summary.result] is Termination.GAP_LIMIT
    assert summary.has_solution and summary.upper == 83.0969 and summary.nodes == 3941


def test_cbc_summary_of_time_limit_with_and_without_solution():
    with_solution = parse_summary(TIME_WITH_SOLUTION)
    assert STATUS_MAP[with_solution.result] is Termination.TIME_LIMIT
    assert with_solution.has_solution and with_solution.upper == 135.862
    without = parse_summary(TIME_WITHOUT_SOLUTION)
    assert STATUS_MAP[without.result] is Termination.TIME_LIMIT
    assert not without.has_solution and without.upper == 270.734


def test_cbc_no_summary_when_the_root_lp_was_cut_short():
    summary = parse_summary(ROOT_LP_CUT_SHORT)
    assert summary.result is None and not summary.has_solution and summary.upper is None


def test_cbc_printed_bound_is_rounded_up_to_stay_a_bound():
    """6 printed digits: 135.862 may stand for 135.8624999; the bound used is above that."""
    bound = CbcSolver._bound(Termination.TIME_LIMIT, 1.3, 135.862, SolveOptions(), mip=True)
    assert bound is not None and bound >= 135.8625


def test_cbc_gap_stop_bound_is_the_tighter_of_printed_and_implied():
    options = SolveOptions(rel_gap=0.95)
    bound = CbcSolver._bound(Termination.GAP_LIMIT, 4.3942878009, 83.0969, options, mip=True)
    assert bound == pytest.approx(83.0969 * (1 + 5e-6))
    # a 20 % gap stop without a printed bound: bound <= incumbent / (1 - 0.2)
    implied = CbcSolver._bound(Termination.GAP_LIMIT, 4.0, None, SolveOptions(rel_gap=0.2), True)
    assert implied == pytest.approx(5.0)
    assert implied - 4.0 <= 0.2 * implied + 1e-12  # the bracket lipopt promises for --gap 0.2


def test_cbc_exact_optimum_bound_is_within_the_exact_gaps():
    bound = CbcSolver._bound(Termination.OPTIMAL, 5.6836565179, None, SolveOptions(), mip=True)
    assert 5.6836565179 <= bound <= 5.6836565179 * (1 + 2e-9)


def test_cbc_no_bound_without_proof():
    assert CbcSolver._bound(Termination.TIME_LIMIT, None, None, SolveOptions(), mip=True) is None
    assert CbcSolver._bound(Termination.ERROR, 1.0, 2.0, SolveOptions(), mip=True) is None
    assert CbcSolver._bound(Termination.OPTIMAL, None, None, SolveOptions(), mip=True) is None


def test_cbc_gap_stop_bound_formula():
    assert gap_stop_bound(8.0, SolveOptions(rel_gap=0.5, abs_gap=0.0)) == pytest.approx(16.0)
    assert gap_stop_bound(8.0, SolveOptions(rel_gap=0.0, abs_gap=0.5)) == pytest.approx(8.5)


def test_cbc_optimal_under_a_loose_gap_is_a_full_proof():
    """ratioGap stops CBC but prunes nothing: 'Optimal solution found' at gap 0.5 is optimal."""
    options = SolveOptions(rel_gap=0.5)
    bound = CbcSolver._bound(Termination.OPTIMAL, 324.29210464, None, options, mip=True)
    assert 324.29210464 <= bound <= 324.29210464 * (1 + 2e-9)
    assert _optimal_or_gap(Termination.OPTIMAL, options) is (Termination.OPTIMAL)
    # stopped *within gap tolerance*: only the gap is proven
    stopped = CbcSolver._bound(Termination.GAP_LIMIT, 324.29210464, None, options, mip=True)
    assert stopped == pytest.approx(2 * 324.29210464)
    assert _optimal_or_gap(Termination.GAP_LIMIT, options) is (Termination.GAP_LIMIT)


def test_cbc_gap_stop_at_exact_tolerance_is_optimal():
    options = SolveOptions()
    bound = CbcSolver._bound(Termination.GAP_LIMIT, 2.0, None, options, mip=True)
    assert bound is not None and 2.0 <= bound <= 2.0 + 1e-8
    assert _optimal_or_gap(Termination.GAP_LIMIT, options) is Termination.OPTIMAL
    assert _optimal_or_gap(Termination.TIME_LIMIT, options) is Termination.TIME_LIMIT


@pytest.mark.requires_solver("cbc")
def test_cbc_gaps_stop_but_never_prune():
    """The fact the bound of 'Optimal solution found' rests on: a run with a loose ratioGap that
    ends without the gap stop explores exactly the nodes of the exact run."""
    import lipopt
    from tests.solvers.cases import CASES

    checked = 0
    for case in (CASES[4], CASES[2]):  # a few hundred / a dozen nodes
        lip = lipopt.build_model(case.network(), case.domain, case.norm, case.c())
        exact = CbcSolver().solve(lip.model, SolveOptions())
        for gap in (0.5, 0.2):
            loose = CbcSolver().solve(lip.model, SolveOptions(rel_gap=gap))
            if parse_summary(loose.log).result != "Optimal solution found":
                continue  # stopped on the gap: nothing to compare
            assert loose.nodes == exact.nodes
            assert loose.termination is Termination.OPTIMAL
            assert loose.bound == pytest.approx(exact.bound, rel=1e-12)
            checked += exact.nodes is not None and exact.nodes > 10
    if not checked:
        pytest.skip("every loose-gap run stopped on the gap; the claim was not exercised")


@pytest.mark.requires_solver("cbc")
def test_cbc_unknown_option_is_one_clear_line():
    import lipopt
    from lipopt import SolverError
    from tests.solvers.cases import CASES

    lip = lipopt.build_model(CASES[0].network(), CASES[0].domain, CASES[0].norm)
    expected = r"^CBC rejected an option: (Unrecognized parameter - |No match for )fooBar$"
    with pytest.raises(SolverError, match=expected):
        CbcSolver().solve(lip.model, SolveOptions(options={"fooBar": 1}))


#: an exported Lipschitz MIP (tests/solvers/cases.py CASES[6], linear bounds) on which the cbcbox
#: wheel's CBC (devel git:146ce89) claims "Optimal" 1.9 % low when its cutoff increment is <= 1e-6
KNOWN_WRONG_LP = Path(__file__).parent / "data" / "cbc_wrong_optimum.lp"
KNOWN_WRONG_OPTIMUM = 1.68871114208  # HiGHS and Gurobi agree; brute force gives 1.6887111418


@functools.cache
def highs_optimum(path: Path) -> float:
    """The optimum of an exported model by an independent solver (highspy reads the file)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


def test_cbc_known_wrong_file_has_the_optimum_highs_finds():
    assert highs_optimum(KNOWN_WRONG_LP) == pytest.approx(KNOWN_WRONG_OPTIMUM, rel=1e-8)


@pytest.mark.requires_solver("cbc")
@pytest.mark.parametrize("increment", ["1e-4", "1e-6", "1e-9"])
def test_cbc_solves_the_model_the_wheel_got_wrong(increment: str):
    """The CBC the adapter runs finds the true optimum of the pinned model (where the cbcbox
    wheel's build stops 1.9 % low for increments <= 1e-6), with the adapter's own tolerances."""
    cbc = CbcSolver()
    options = {**DEFAULT_OPTIONS, "ratioGap": 1e-9, "allowableGap": 1e-9, "increment": increment}
    flags = [str(part) for key, value in options.items() for part in (f"-{key}", value)]
    run = subprocess.run(
        [cbc.executable(), str(KNOWN_WRONG_LP), *flags, "-solve"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert parse_summary(run.stdout).result == "Optimal solution found", run.stdout[-2000:]
    value = float(re.search(r"^Objective value:\s+(\S+)", run.stdout, re.MULTILINE).group(1))
    assert value == pytest.approx(highs_optimum(KNOWN_WRONG_LP), rel=1e-8)


@pytest.mark.requires_solver("cbc")
def test_cbc_adapter_refuses_a_defective_build_given_by_path(tmp_path):
    """A binary announcing the defective build is never run, even when named explicitly."""
    from lipopt import SolverError

    fake = tmp_path / "cbc"
    fake.write_text("#!/bin/sh\necho 'CBC devel (git:146ce89) — COIN-OR Branch and Cut'\n")
    fake.chmod(0o755)
    solver = CbcSolver(path=str(fake))
    assert solver.version() == "devel git:146ce89"
    assert not solver.available()
    lip = lipopt.build_model(CASES[0].network(), CASES[0].domain, CASES[0].norm)
    with pytest.raises(SolverError, match=r"^refusing .*git:146ce89 claims 'Optimal solution"):
        solver.solve(lip.model, SolveOptions())


def test_cbc_printed_number_is_rounded_up_by_half_its_last_digit():
    """CBC 2.10 prints the objective with 8 decimals (%.8f): '1.50171500' stands for anything
    below 1.501715005; a shorter number (%g drops zeros) only for less."""
    assert printed_upper("1.50171500") == pytest.approx(1.501715005, rel=1e-15)
    assert printed_upper("1.50171500") > 1.501715005
    assert printed_upper("1.501715") > 1.5017155
    assert printed_upper("210.610") == pytest.approx(210.6105, rel=1e-15)
    assert printed_upper("1.2345e+05") == pytest.approx(123455.0, rel=1e-15)
    assert printed_upper("nan") is None and printed_upper("x") is None


def test_cbc_optimal_bound_rests_on_cbcs_own_incumbent():
    """A point written with 8 digits evaluates 2.2e-8 (relative) below CBC's incumbent (seen on
    a random model); the bound of an exhausted tree starts from the printed objective, rounded
    up, not from it."""
    loaded = 1.501715  # objective at the rounded point; the true optimum is ~1.5017150351
    own = printed_upper("1.50171504")
    bound = CbcSolver._bound(Termination.OPTIMAL, loaded, None, SolveOptions(), True, own)
    assert bound >= 1.5017150351
    assert bound <= own * (1 + 2e-9)
    lp = CbcSolver._bound(Termination.OPTIMAL, loaded, None, SolveOptions(), False, own)
    assert lp == own
    assert CbcSolver._bound(Termination.OPTIMAL, loaded, None, SolveOptions(), False) is None


def test_cbc_summary_keeps_the_printed_objective():
    assert parse_summary(OPTIMAL).objective_upper == printed_upper("5.6836565179")
    assert parse_summary(TIME_WITHOUT_SOLUTION).objective_upper is None
