"""--polytope and --clip on the command line: the domain they describe, the rows in the exported
model, and one line for each bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lipopt.cli import main
from tests.helpers import random_network, save_onnx


@pytest.fixture
def model(tmp_path):
    net = random_network(np.random.default_rng(5), [3, 6, 6, 2])
    return str(save_onnx(net, tmp_path / "net.onnx")), net


def _rows(tmp_path, a, b, lower=-1.0, upper=1.0, name="rows.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"A": a, "b": b, "lower": lower, "upper": upper}))
    return str(path)


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_solve_over_a_polytope_keeps_its_witness_inside(model, tmp_path, capsys):
    path, net = model
    rows = _rows(tmp_path, [[1.0, 1.0, 1.0]], [0.0])
    code, out, _ = _run(capsys, "solve", path, "--polytope", rows, "--c", "1,-1", "--json")
    assert code == 0
    data = json.loads(out)
    witness = np.array(data["witness"])
    assert witness.sum() <= 1e-9 and np.all(np.abs(witness) <= 1 + 1e-9)
    attained = np.abs(net.gradients(witness, [1.0, -1.0])).sum()
    assert attained == pytest.approx(data["lower"], rel=1e-9)
    assert data["lower"] <= data["value"] * (1 + 1e-9)


def test_a_ball_clipped_to_the_valid_range_and_cut_by_rows(model, tmp_path, capsys):
    path, _ = model
    rows = _rows(tmp_path, [[1.0, -1.0, 0.0]], [0.3], lower=-5, upper=5)
    argv = ["solve", path, "--center", "0.9,0.5,0.5", "--radius", "0.3", "--ball", "l1",
            "--clip", "0,1", "--polytope", rows, "--c", "1,-1", "--json"]  # fmt: skip
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    witness = np.array(json.loads(out)["witness"])
    assert np.abs(witness - [0.9, 0.5, 0.5]).sum() <= 0.3 + 1e-9
    assert np.all(witness >= -1e-12) and np.all(witness <= 1 + 1e-12)
    assert witness[0] - witness[1] <= 0.3 + 1e-9


def test_export_writes_the_rows(model, tmp_path, capsys):
    path, _ = model
    rows = _rows(tmp_path, [[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]], [0.5, 0.25])
    out_file = tmp_path / "m.lp"
    code, _, _ = _run(capsys, "export", path, "--polytope", rows, "--c", "1,-1", "-o",
                      str(out_file))  # fmt: skip
    assert code == 0
    text = out_file.read_text()
    assert "x_cut(0)" in text and "x_cut(1)" in text


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--polytope", "EMPTY"], "empty"),
        (["--polytope", "FLAT"], "no interior"),
        (["--polytope", "MISSING"], "not found"),
        (["--box", "-1,1", "--clip", "2,3"], "coordinate 0"),
        (["--box", "-1,1", "--clip", "1,0"], "LO < HI"),
        (["--center", "0", "--radius", "0.1", "--ball", "l2", "--polytope", "FAR"], "empty"),
    ],
)
def test_a_bad_set_is_refused_in_one_line(model, tmp_path, capsys, extra, fragment):
    path, _ = model
    files = {
        "EMPTY": _rows(tmp_path, [[1.0, 1.0, 1.0]], [-4.0], name="e.json"),
        "FLAT": _rows(tmp_path, [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]], [0.0, 0.0], name="f.json"),
        "MISSING": str(tmp_path / "missing.json"),
        "FAR": _rows(tmp_path, [[1.0, 0.0, 0.0]], [-0.5], name="far.json"),
    }
    argv = [files.get(item, item) for item in extra]
    code, out, err = _run(capsys, "solve", path, *argv, "--c", "1,-1")
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1
