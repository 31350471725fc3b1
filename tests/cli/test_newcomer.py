"""What a newcomer meets (issue 33): help that fits a screen with every lever behind
``--help-all``, and messages that say what they mean ("1 region", an example ``--c`` of the
right length, no "time limit" where the user gave none)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import lipopt.policy as policy_module
from lipopt import Box, LipschitzError, lipschitz
from lipopt.cli import main, make_parser
from lipopt.progress import counted, example_c
from tests.helpers import random_network, save_onnx

LEVERS = [
    ["--bounds", "interval"],
    ["--split"],
    ["--no-split"],
    ["--decompose"],
    ["--no-decompose"],
    ["--regions"],
    ["--no-regions"],
    ["--formulation", "backward"],
    ["--subnet-bounds"],
    ["--no-subnet-bounds"],
    ["--attack"],
    ["--no-attack"],
    ["--sign-split"],
    ["--gate-split"],
    ["--no-products"],
    ["--no-split-leader"],
    ["--workers", "1"],
]


def _help(argv: list[str], monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 0
    return out.getvalue()


def test_solve_help_fits_a_screen(monkeypatch):
    text = _help(["solve", "--help"], monkeypatch)
    assert len(text.splitlines()) <= 60
    for needed in ("--box", "--center", "--radius", "--norm", "--c", "--output-norm", "--solver",
                   "--time-limit", "--gap", "--json", "--help-all"):  # fmt: skip
        assert needed in text
    assert "--no-split-leader" not in text  # a lever: behind --help-all


def test_help_all_lists_every_lever(monkeypatch):
    text = _help(["solve", "--help-all"], monkeypatch)
    for lever in LEVERS:
        assert lever[0] in text, lever


@pytest.mark.parametrize("lever", LEVERS, ids=lambda lever: lever[0])
def test_every_lever_is_accepted_without_help_all(lever):
    args = make_parser().parse_args(["solve", "m.onnx", "--box", "0,1", *lever])
    assert args.command == "solve"


def test_counted_names_one_thing_in_the_singular():
    assert counted(1, "region") == "1 region"
    assert counted(0, "region") == "0 regions"
    assert counted(3, "part") == "3 parts"
    assert counted(1, "LP") == "1 LP"


@pytest.mark.parametrize(("outputs", "example"), [(2, "1,-1"), (3, "1,-1,0"), (5, "1,-1,0,0,0")])
def test_the_missing_c_error_suggests_a_c_of_the_right_length(outputs, example, tmp_path):
    net = random_network(np.random.default_rng(0), [2, 4, outputs])
    assert example_c(outputs) == example
    with pytest.raises(LipschitzError, match=f"e.g. --c {example}\\)"):
        lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        path = save_onnx(net, tmp_path / "n.onnx")
        assert main(["compare", str(path), "--box", "0,1", "--quiet"]) == 2
    assert f"e.g. --c {example})" in err.getvalue()


def test_no_time_limit_is_mentioned_where_none_was_given(monkeypatch):
    """The probe before a race has its own few seconds; they were printed as the user's
    "time limit 4.97539 s"."""
    monkeypatch.setattr(policy_module, "RACE_AFTER", 0.2)
    said: list[str] = []
    net = random_network(np.random.default_rng(1), [3, 12, 12, 1])
    box = Box([0.0] * 3, [1.0] * 3)
    lipschitz(net, box, split=False, regions=False, progress=said.append)
    assert any("for at most" in line for line in said), said
    assert not any("time limit" in line for line in said), said
