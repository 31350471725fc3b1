"""The statuses are declared once (lipopt/status.py): members print and write to JSON as their
values, as the strings did, and every table of statuses, in the code and in the docs, lists
exactly the enum's members (issue 43, item 3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from lipopt.bracket import FINISHED, Bracket
from lipopt.result import LipschitzResult
from lipopt.status import FACTS, Status, Unsolved, exit_code, listed

ROOT = Path(__file__).resolve().parent.parent

#: the summary's verdicts as ``lipopt solve`` printed them before the enum
VERDICTS_BEFORE = {
    "optimal": "exact",
    "upper_bound": "not proven exact: the constant is in [lower, value]",
    "relaxation": "LP relaxation: upper bound only",
    "gap_limit": "stopped at the gap limit: bounds only",
    "time_limit": "stopped at the time limit: bounds only",
    "solver_error": "the solver failed: bounds proven before it",
    "interrupted": "interrupted",  # no verdict of its own: the status again
}


def _result(status: str) -> LipschitzResult:
    return LipschitzResult(
        value=2.0, lower=1.5, upper=2.0, status=status, witness=np.zeros(2),
        exact_certified=False, model_stats={"variables": 0, "unstable_neurons": 0},
        timings={"solve": 1.0}, solver="highs", norm="linf", c=np.ones(1),
    )  # fmt: skip


@pytest.mark.parametrize("status", [*Status, *Unsolved])
def test_a_status_prints_formats_and_writes_as_its_value(status):
    value = status.value
    assert str(status) == f"{status}" == "%s" % status == format(status) == value  # noqa: UP031
    assert f"[{status:>20}]" == f"[{value:>20}]"
    assert json.dumps({"status": status}) == json.dumps({"status": value})
    assert status == value and hash(status) == hash(value)
    assert {value: 1}[status] == 1 and {status: 1}[value] == 1
    assert type(status)(value) is status


def test_enums_hold_the_statuses_the_code_returns():
    assert [s.value for s in Status] == [
        "optimal", "upper_bound", "gap_limit", "time_limit", "relaxation", "solver_error",
        "interrupted",
    ]  # fmt: skip
    assert [s.value for s in Unsolved] == ["failed", "total_time_limit"]
    assert set(FACTS) == {*Status, *Unsolved}
    assert all(FACTS[s].meaning for s in FACTS)
    assert all(s.facts.verdict and s.facts.ended and s.facts.answer for s in Status)


def test_results_and_brackets_carry_a_status_written_as_before():
    res = _result("time_limit")
    assert res.status is Status.TIME_LIMIT and res.status == "time_limit"
    out = res.to_dict()
    assert type(out["status"]) is str and out["status"] == "time_limit"
    assert '"status": "time_limit"' in json.dumps(out)
    bracket = Bracket(2.0, None, None, "optimal", False, {}, {}, "highs")
    assert bracket.status is Status.OPTIMAL
    with pytest.raises(ValueError):
        _result("finished")


def test_code_tables_read_the_enum():
    from lipopt.batch.report import STATUS_ORDER, status_counts
    from lipopt.batch.tasks import FAILED
    from lipopt.certify import BUDGET_SPENT
    from lipopt.cli.exits import EXIT_ANSWERED, EXIT_SOLVER_ERROR, exit_status
    from lipopt.solvers import Termination

    assert set(FINISHED) == {Status.OPTIMAL, Status.GAP_LIMIT}
    assert STATUS_ORDER == (*Status, Unsolved.FAILED) and FAILED is Unsolved.FAILED
    assert BUDGET_SPENT is Unsolved.TOTAL_TIME_LIMIT
    lines = [{"status": s} for s in ("total_time_limit", "failed", "optimal", "relaxation")]
    assert list(status_counts(lines)) == ["optimal", "relaxation", "failed", "total_time_limit"]
    assert {t: t.status for t in Termination} == {
        Termination.OPTIMAL: Status.OPTIMAL,
        Termination.GAP_LIMIT: Status.GAP_LIMIT,
        Termination.TIME_LIMIT: Status.TIME_LIMIT,
        Termination.INFEASIBLE: Status.SOLVER_ERROR,
        Termination.INTERRUPTED: Status.INTERRUPTED,
        Termination.ERROR: Status.SOLVER_ERROR,
    }
    assert EXIT_SOLVER_ERROR == 3 and EXIT_ANSWERED == 0
    for status in Status:
        failed = status is Status.SOLVER_ERROR
        assert exit_status([status.value]) == (EXIT_SOLVER_ERROR if failed else EXIT_ANSWERED)
    assert exit_status(["failed"]) == EXIT_SOLVER_ERROR  # a batch line (lipopt batch)
    assert exit_status(["total_time_limit", "optimal"]) == exit_code([]) == EXIT_ANSWERED


@pytest.mark.parametrize("status", list(Status))
def test_the_summary_says_the_verdict_it_said_before(status):
    from lipopt.cli import solve

    class Net:
        widths = (2, 3, 1)

    class Dom:
        def describe(self) -> str:
            return "box"

    text = solve.format_result(_result(status.value), Net(), Dom(), "m.onnx")  # type: ignore[arg-type]
    assert f"   [{status.value}: {VERDICTS_BEFORE[status.value]}]\n" in text


def _statuses_in(text: str) -> list[str]:
    return [w for w in re.findall(r"`(\w+)`", text) if w in {s.value for s in Status}]


def test_the_json_keys_table_lists_every_status():
    from lipopt.schema import RESULT_KEYS

    assert _statuses_in(RESULT_KEYS["status"]) == [s.value for s in Status]
    assert listed(["a"]) == "`a`" and listed("ab") == "`a` or `b`"


def test_the_cli_reference_tables_list_exactly_the_statuses():
    """docs/cli.md's verdicts and statuses' table (generated: tests/docs/test_docs.py checks them
    current) hold every status once, in order, with its exit status."""
    page = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| .* \| (\d+) \|$", page, re.M)
    assert rows == [(s.value, str(s.facts.exit_code)) for s in Status]
    verdicts = re.findall(r"^- `(\w+): (.*)`[;.]$", page, re.M)
    assert verdicts == [(s.value, VERDICTS_BEFORE[s.value]) for s in Status]


def test_getting_started_lists_exactly_the_statuses():
    page = (ROOT / "docs" / "getting-started.md").read_text()
    row = re.search(r"^\| `status` \| (.*) \|$", page, re.M)
    assert row and sorted(re.findall(r"`(\w+)`", row[1])) == sorted(s.value for s in Status)
    reading = page[page.index("`status` says how the solve ended") :]
    reading = reading[: reading.index("\n\n")]
    assert sorted(set(_statuses_in(reading))) == sorted(s.value for s in Status)
