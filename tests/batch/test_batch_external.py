"""A model whose weights lie in an external data file (``model.onnx.data``, as torch's exporter
writes it): the fingerprint covers that file too, so a changed weight file is never answered
from the results file; a worker refuses it; a results file of the older fingerprint scheme is
refused with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lipopt.batch import SolveOptions, read_instances
from lipopt.batch.execute import run_safely
from tests.batch_helpers import read_lines, run_cli, save_external, scale_external_data
from tests.helpers import random_network


@pytest.fixture
def external(tmp_path: Path) -> Path:
    """``i.csv``: one row over ``net.onnx`` (weights in ``net.onnx.data``) and a unit box."""
    save_external(random_network(np.random.default_rng(3), [2, 8, 8, 1]), tmp_path / "net.onnx")
    assert (tmp_path / "net.onnx.data").stat().st_size > 0
    (tmp_path / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n"
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
    )
    (tmp_path / "box.json").write_text(json.dumps({"lower": [0, 0], "upper": [1, 1]}))
    (tmp_path / "i.csv").write_text("net.onnx,p.vnnlib,60\n")
    return tmp_path


def _batch(root: Path, out: str) -> tuple[int, str, str]:
    return run_cli("batch", str(root / "i.csv"), "--out", str(root / out), "--quiet")


def _solve(root: Path) -> float:
    code, out, err = run_cli(
        "solve", str(root / "net.onnx"), "--box", str(root / "box.json"), "--json", "--quiet"
    )
    assert code == 0, err
    return json.loads(out)["value"]


def test_a_changed_weight_file_is_never_answered_from_the_results_file(external: Path) -> None:
    code, _out, err = _batch(external, "r.jsonl")
    assert code == 0, err
    (before,) = read_lines(external / "r.jsonl")
    assert before["value"] == pytest.approx(_solve(external), rel=1e-9)
    onnx_bytes = (external / "net.onnx").read_bytes()
    scale_external_data(external / "net.onnx", 2.0)
    assert (external / "net.onnx").read_bytes() == onnx_bytes  # only the weights changed
    text = (external / "r.jsonl").read_text()
    code, out, err = _batch(external, "r.jsonl")  # resumed: the old answer is refused
    assert code == 2 and out == "", out
    assert "'row 1' was answered for other inputs" in err and len(err.strip().splitlines()) == 1
    assert (external / "r.jsonl").read_text() == text
    code, _out, err = _batch(external, "fresh.jsonl")  # a fresh file: the new constant
    assert code == 0, err
    (after,) = read_lines(external / "fresh.jsonl")
    assert after["fingerprint"] != before["fingerprint"]
    assert after["value"] == pytest.approx(_solve(external), rel=1e-9)
    assert after["value"] > 2 * before["value"]


def test_a_worker_refuses_a_weight_file_changed_since_the_check(external: Path) -> None:
    (task,) = read_instances(external / "i.csv", SolveOptions())
    scale_external_data(external / "net.onnx", 2.0)
    line = run_safely(task)
    assert line["status"] == "failed" and "changed after the batch started" in line["error"]


def test_a_results_file_of_the_older_fingerprint_scheme_is_refused(external: Path) -> None:
    code, _out, err = _batch(external, "r.jsonl")
    assert code == 0, err
    (line,) = read_lines(external / "r.jsonl")
    line.pop("scheme", None)  # as lipopt wrote it before the fingerprint covered external data
    old = json.dumps(line) + "\n"
    (external / "r.jsonl").write_text(old)
    code, out, err = _batch(external, "r.jsonl")
    assert code == 2 and out == ""
    assert "'row 1' was written under fingerprint scheme 1" in err
    assert len(err.strip().splitlines()) == 1
    assert (external / "r.jsonl").read_text() == old
