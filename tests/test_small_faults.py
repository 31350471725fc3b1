"""Small faults of issue 32, each answered in one line: negative solver threads, an empty model
file, and a summary that says "no MIP needed" only where no MIP was needed."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, LipschitzError, OnnxImportError, lipschitz, load_onnx
from lipopt.cli import main
from lipopt.cli.solve import format_result
from lipopt.result import LipschitzResult
from tests.helpers import random_network, save_onnx


@pytest.mark.parametrize("threads", [-1, 0, 1.5, True])
def test_threads_are_checked_like_workers(threads):
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    with pytest.raises(LipschitzError, match="threads must be"):
        lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), threads=threads)


def test_negative_threads_are_one_line_on_the_command_line(tmp_path, capsys):
    path = save_onnx(random_network(np.random.default_rng(0), [2, 4, 1]), tmp_path / "n.onnx")
    code = main(["solve", str(path), "--box", "0,1", "--threads", "-1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == ["lipopt solve: error: threads must be at least 1, got -1"]


def test_an_empty_model_file_is_named_in_the_error(tmp_path, capsys):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(OnnxImportError, match="empty.onnx' is empty, not an ONNX model"):
        load_onnx(empty)
    assert main(["solve", str(empty), "--box", "0,1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(empty) in err[0]


def test_a_file_the_checker_refuses_is_named_in_the_error(tmp_path):
    import onnx

    broken = tmp_path / "broken.onnx"
    broken.write_bytes(onnx.ModelProto().SerializeToString() + b"\x08\x01")  # ir_version only
    with pytest.raises(OnnxImportError, match="broken.onnx' is not a valid ONNX model"):
        load_onnx(broken)


def _regionless(status: str) -> LipschitzResult:
    """An answer without a MIP model (the region search's, or after a MIP that proved nothing)."""
    return LipschitzResult(
        value=2.0, lower=1.0 if status != "optimal" else 2.0, upper=2.0, status=status,
        witness=np.zeros(2), exact_certified=status == "optimal",
        model_stats={"variables": 0, "constraints": 0, "binaries": 0, "unstable_neurons": 7},
        timings={"bounds": 0.1, "regions": 1.0, "solve": 2.0}, solver="highs", norm="linf",
        c=np.ones(1),
    )  # fmt: skip


@pytest.mark.parametrize("status", ["time_limit", "gap_limit", "interrupted"])
def test_an_unfinished_answer_never_says_no_mip_was_needed(status):
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    text = format_result(_regionless(status), net, Box([0.0, 0.0], [1.0, 1.0]), "n.onnx")
    assert "no MIP needed" not in text
    assert "no MIP model in this answer (7 unstable neurons)" in text


def test_a_finished_answer_without_a_model_says_none_was_needed():
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    text = format_result(_regionless("optimal"), net, Box([0.0, 0.0], [1.0, 1.0]), "n.onnx")
    assert "no MIP needed (7 unstable neurons)" in text


def test_a_split_answer_keeps_the_note_that_the_optimum_was_not_shown_attained():
    """On the domain-split path (boxes of <= 4 inputs) an optimal answer whose witness region
    is not full-dimensional says so, as on every other path, before the split's own note."""
    from lipopt.driver import NOT_PROVEN_EXACT, honest
    from lipopt.network import Affine, Network, ReLU
    from lipopt.query import Query
    from lipopt.search.split import SplitOutcome
    from lipopt.strategies.domain_split import _bracket

    # relu(x - 0.5) + relu(0.5 - x): at x = 0.5 both neurons are off, a pattern whose region
    # {x < 0.5 and x > 0.5} has no interior
    first = Affine(np.array([[1.0], [-1.0]]), np.array([-0.5, 0.5]))
    net = Network.from_layers([first, ReLU(), Affine(np.array([[1.0, 1.0]]), np.zeros(1))])
    box = Box([0.0], [1.0])
    outcome = SplitOutcome(
        upper=1.0, lower=1.0, witness=np.array([0.5]), best=None, solved=[], parts_made=3,
        parts_pruned=3, complete=True, bound_seconds=0.0,
    )  # fmt: skip
    query = Query(net, box, lipopt_norm("linf"), np.ones(1))
    bracket = _bracket(query, box, outcome, 0.1)
    assert bracket.status == "optimal" and not bracket.exact_certified
    assert bracket.message == "domain split into 3 parts: 0 solved by MIP, 3 pruned by bounds"
    # the result says it (issue 31): not optimal, and why, before the split's note
    answer = honest(bracket, query)
    assert answer.status == "upper_bound" and not answer.exact_certified
    assert answer.message.startswith("domain split into 3 parts")
    assert answer.message.endswith(NOT_PROVEN_EXACT)


def lipopt_norm(name: str):
    from lipopt.norms import InputNorm

    return InputNorm.parse(name)


def test_output_piped_into_a_reader_that_stops_early_ends_quietly(tmp_path):
    """``lipopt solve ... | head -1``: the reader closes the pipe after one line; the command
    ends with status 141 (as SIGPIPE) and no traceback."""
    import subprocess
    import sys
    from pathlib import Path

    model = Path(__file__).resolve().parent.parent / "models" / "synthetic-2x20x40x20x2.onnx"
    script = Path(sys.executable).with_name("lipopt")
    command = [str(script), "solve", str(model), "--center", "0.5,0.5", "--radius", "0.05",
               "--c", "1,-1", "--quiet"]  # fmt: skip
    solve = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    solve.stdout.close()  # the reader is gone before the answer is printed
    _, stderr = solve.communicate(timeout=120)
    assert solve.returncode == 141
    assert b"Traceback" not in stderr and stderr == b""
