"""``lipopt solve`` and ``lipopt compare`` check every option before they print anything (issue
44, item 7): a bad option gives exactly one line on stderr, the error, and no progress line
before it."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.cli import main
from tests.helpers import random_network, save_onnx


@pytest.fixture
def model(tmp_path) -> str:
    return str(save_onnx(random_network(np.random.default_rng(3), [3, 6, 2]), tmp_path / "n.onnx"))


@pytest.mark.parametrize(
    "bad, says",
    [
        (["--solver", "foo", "--c", "1,-1"], "unknown solver 'foo'"),
        (["--c", "1,-1,3"], "c has 3 entries but the network has 2 outputs"),
        (["--time-limit", "-5", "--c", "1,-1"], "time limit must be positive"),
        (["--gap", "-1", "--c", "1,-1"], "gap"),
        ([], "pass c"),
    ],
)
def test_solve_refuses_a_bad_option_in_one_line_before_any_progress(model, capsys, bad, says):
    code = main(["solve", model, "--box", "0,1", *bad])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2
    assert captured.out == ""
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("lipopt solve: error:") and says in lines[0]


def test_solve_still_reports_progress_for_a_good_query(model, capsys):
    assert main(["solve", model, "--box", "0,1", "--c", "1,-1"]) == 0
    assert "lipopt: loaded" in capsys.readouterr().err


@pytest.mark.parametrize(
    "bad, says",
    [
        (["--solver", "foo", "--c", "1,-1"], "unknown solver 'foo'"),
        (["--c", "1,-1,3"], "c has 3 entries but the network has 2 outputs"),
        (["--time-limit", "-5", "--c", "1,-1"], "must be positive"),
        (["--methods", "naive,nope", "--c", "1,-1"], "unknown method(s) nope"),
    ],
)
def test_compare_refuses_a_bad_option_in_one_line_before_any_progress(model, capsys, bad, says):
    code = main(["compare", model, "--box", "0,1", "--methods", "naive,lipmip", *bad])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2
    assert captured.out == ""
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("lipopt compare: error:") and says in lines[0]
