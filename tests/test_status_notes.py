"""An answer that stopped before its bounds met says so in its ``message``, with the interval
the constant is proven to lie in, whichever strategy answered (issue 44, item 10: an output
norm's time-limited answer came with an empty message)."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, lipschitz
from lipopt.bracket import Bracket
from lipopt.driver import status_note
from tests.helpers import random_network


def _bracket(status: str, lower: float | None, message: str = "") -> Bracket:
    return Bracket(
        upper=3.0, lower=lower, witness=None, status=status, exact_certified=False,
        model_stats={}, timings={}, solver="highs", message=message,
    )  # fmt: skip


@pytest.mark.parametrize("status", ["time_limit", "interrupted"])
def test_an_unfinished_bracket_gets_a_note_with_its_interval(status):
    note = status_note(_bracket(status, 1.5))
    assert "before the bounds met" in note and "[1.5, 3]" in note
    assert "at most 3" in status_note(_bracket(status, None))


@pytest.mark.parametrize("status", ["optimal", "gap_limit", "relaxation"])
def test_a_finished_bracket_needs_no_note(status):
    assert status_note(_bracket(status, 3.0)) == ""


def test_an_output_norm_answer_stopped_at_its_time_limit_says_why():
    net = random_network(np.random.default_rng(7), [8, 30, 30, 30, 3])
    box = Box(np.zeros(8), np.ones(8))
    res = lipschitz(net, box, output_norm="linf", time_limit=0.5, regions=False, split=False)
    if res.status == "optimal":  # a machine fast enough to finish: nothing to explain
        assert res.lower == pytest.approx(res.value, rel=1e-6)
        return
    assert res.status == "time_limit"
    assert "stopped at the time limit" in res.message
    assert f"{res.upper:.6g}" in res.message
