"""The results file and the up-front checks of a batch: what is refused (and left untouched),
what is repaired, and what a worker refuses; all in this process, no solve needed except where
said."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lipopt.batch.execute import run_safely
from lipopt.batch.store import ResultStore, StoreError
from lipopt.batch.tasks import FINGERPRINT_SCHEME, Task
from lipopt.domain import Box
from tests.batch_helpers import run_cli
from tests.helpers import random_network, save_onnx


def _task(key: str, fingerprint: str = "f") -> Task:
    return Task(id=key, kind="solve", model="m.onnx", domain=Box([0.0], [1.0]),
                fingerprint=fingerprint)  # fmt: skip


def _line(key: str, fingerprint: str = "f") -> str:
    line = {"id": key, "fingerprint": fingerprint, "scheme": FINGERPRINT_SCHEME}
    return json.dumps({**line, "status": "optimal"}) + "\n"


def test_a_second_batch_on_the_same_file_is_refused(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.jsonl"):
        with pytest.raises(StoreError, match="being written by another lipopt batch"):
            ResultStore(tmp_path / "r.jsonl")
    with ResultStore(tmp_path / "r.jsonl") as again:  # the lock went with the first
        assert again.lines == {}


def test_a_refused_file_is_left_as_it_was_and_unlocked(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    text = _line("a") + _line("b", "other") + '{"id": "c", "kind": "sol'
    out.write_text(text)
    store = ResultStore(out)
    with pytest.raises(StoreError, match="'b' was answered for other inputs"):
        store.pending([_task("a"), _task("b"), _task("c")])
    store.close()
    assert out.read_text() == text  # the incomplete line is not cut off a refused file
    with ResultStore(out) as store:
        assert [t.id for t in store.pending([_task("a"), _task("b", "other"), _task("c")])] == ["c"]
    assert out.read_text() == _line("a") + _line("b", "other")  # cut once accepted


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(_line("a") + _line("b").rstrip("\n"))  # as an editor may save it
    with ResultStore(out) as store:
        assert [t.id for t in store.pending([_task("a"), _task("b"), _task("c")])] == ["c"]
        assert not store.dropped_incomplete
        store.append(
            {"id": "c", "fingerprint": "f", "scheme": FINGERPRINT_SCHEME, "status": "optimal"}
        )
    assert out.read_text() == _line("a") + _line("b") + _line("c")


@pytest.mark.parametrize(
    "text, message",
    [
        ("a note\nmore\n", "line 1 is not a lipopt result line"),
        ("just text without a newline", "is not a lipopt results file"),
        (_line("a") + _line("a"), "holds 'a' twice"),
    ],
)
def test_files_that_are_not_results_are_refused_untouched(tmp_path, text, message) -> None:
    out = tmp_path / "r.txt"
    out.write_text(text)
    with pytest.raises(StoreError, match=message):
        ResultStore(out)
    assert out.read_text() == text
    ResultStore(tmp_path / "r.txt.new").close()  # and nothing stays locked or open


def test_out_must_be_a_regular_file_in_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is not a regular file"):
        ResultStore(tmp_path)
    with pytest.raises(StoreError, match="folder not found"):
        ResultStore(tmp_path / "missing" / "r.jsonl")


@pytest.fixture
def one_row(tmp_path: Path) -> Path:
    save_onnx(random_network(np.random.default_rng(0), [2, 4, 1]), tmp_path / "n.onnx")
    (tmp_path / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n"
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
    )
    (tmp_path / "i.csv").write_text("n.onnx,p.vnnlib,60\n")
    return tmp_path


@pytest.mark.parametrize(
    "options, message",
    [
        (["--solver", "hihgs"], "unknown solver 'hihgs'"),
        (["--time-limit", "0"], "i.csv row 1: time limit must be positive"),
        (["--gap", "-1"], "i.csv row 1: gap must be in [0, 1)"),
    ],
)
def test_bad_options_are_refused_before_any_query(one_row: Path, options, message) -> None:
    code, out, err = run_cli(
        "batch", str(one_row / "i.csv"), "--out", str(one_row / "r.jsonl"), *options
    )
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1
    assert not (one_row / "r.jsonl").exists()


def test_a_row_timeout_of_zero_is_refused(one_row: Path) -> None:
    (one_row / "i.csv").write_text("n.onnx,p.vnnlib,0\n")
    code, _out, err = run_cli("batch", str(one_row / "i.csv"), "--out", str(one_row / "r.jsonl"))
    assert code == 2 and "i.csv row 1: time limit must be positive" in err


def test_points_must_have_the_networks_sample_shape(one_row: Path) -> None:
    np.save(one_row / "x.npy", np.zeros((3, 2, 1)))  # the input is (2,): a rank-3 array is not
    code, _out, err = run_cli(
        "certify", str(one_row / "n.onnx"), "--points", str(one_row / "x.npy"), "--radius",
        "0.1", "--out", str(one_row / "c.jsonl"),
    )  # fmt: skip
    assert code == 2 and "the network's input is one sample of shape (2,)" in err


def test_a_worker_refuses_a_network_file_changed_since_the_check(one_row: Path) -> None:
    from lipopt.batch import SolveOptions, read_instances

    (task,) = read_instances(one_row / "i.csv", SolveOptions())
    save_onnx(random_network(np.random.default_rng(1), [2, 4, 1]), one_row / "n.onnx")
    line = run_safely(task)
    assert line["status"] == "failed" and "changed after the batch started" in line["error"]


def test_report_never_overwrites_the_results_file(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"id": "a", "kind": "solve", "status": "optimal"}) + "\n")
    code, _out, err = run_cli("report", str(out), "--csv", str(out))
    assert code == 2 and "would overwrite the results file" in err
    assert json.loads(out.read_text())["id"] == "a"
