"""``lipopt batch`` and ``lipopt certify --points``: every line equals what the single command
gives for that query alone, resuming runs only what is missing, and changed inputs are
refused. Processes killed mid-run: tests/batch/test_batch_faults.py; Dask:
tests/batch/test_batch_dask.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lipopt.batch import SolveOptions, read_instances
from tests.batch_helpers import read_lines, run_cli, solve_alone, write_batch
from tests.helpers import random_network, save_onnx

#: a batch line and the single solve agree to this relative tolerance (the same computation,
#: in another process: only the last bits of floating point may differ)
AGREE = 1e-9


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= AGREE * max(1.0, abs(a), abs(b))


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """30 instances (5 networks, boxes of 3 sizes, both norms, c and output norms) run once
    by ``lipopt batch`` on two workers."""
    root = tmp_path_factory.mktemp("batch")
    rows = write_batch(root, count=30)
    code, out, err = run_cli(
        "batch", str(root / "instances.csv"), "--out", str(root / "r.jsonl"), "--jobs", "2"
    )
    return root, rows, code, out, err


def test_every_line_equals_the_single_solve(batch: tuple) -> None:
    root, rows, code, out, err = batch
    assert code == 0, err
    assert "30 queries (30 run now, 0 before)" in out
    assert "note: the output assertions of 30 of 30 VNN-LIB properties are ignored" in err
    lines = {line["id"]: line for line in read_lines(root / "r.jsonl")}
    assert sorted(lines) == sorted(row["id"] for row in rows)
    objectives = {(row["norm"], bool(row["c"]), row["output_norm"]) for row in rows}
    assert len(objectives) >= 8  # mixed norms and objectives, not one repeated
    for row in rows:
        line, alone = lines[row["id"]], solve_alone(row)
        assert line["status"] == alone["status"], row
        assert _close(line["value"], alone["value"]), (row, line["value"], alone["value"])
        assert _close(line["lower"], alone["lower"]), (row, line["lower"], alone["lower"])
        assert line["norm"] == alone["norm"] == row["norm"]
        assert line["output_norm"] == alone["output_norm"]
        assert line["inputs"]["vnnlib"].endswith(".vnnlib") and line["attempts"] == 1


def test_rerun_runs_nothing_and_keeps_the_lines(batch: tuple) -> None:
    root, _rows, _code, _out, _err = batch
    before = (root / "r.jsonl").read_bytes()
    code, out, _ = run_cli(
        "batch", str(root / "instances.csv"), "--out", str(root / "r.jsonl"), "--quiet"
    )
    assert code == 0 and "(0 run now, 30 before)" in out
    assert (root / "r.jsonl").read_bytes() == before


def test_missing_lines_are_run_again(batch: tuple) -> None:
    root, _rows, _code, _out, _err = batch
    lines = (root / "r.jsonl").read_text().splitlines(keepends=True)
    partial = root / "partial.jsonl"
    partial.write_text("".join(lines[:10]) + lines[10][: len(lines[10]) // 2])  # cut mid-line
    code, out, err = run_cli(
        "batch", str(root / "instances.csv"), "--out", str(partial), "--jobs", "2"
    )
    assert code == 0 and "(20 run now, 10 before)" in out
    assert "dropped an incomplete last line" in err
    again = {line["id"]: line for line in read_lines(partial)}
    full = {line["id"]: line for line in read_lines(root / "r.jsonl")}
    assert len(partial.read_text().splitlines()) == 30 == len(again)
    for key, line in full.items():
        assert again[key]["status"] == line["status"] and _close(again[key]["value"], line["value"])


def test_garbled_last_line_is_redone(batch: tuple) -> None:
    root, _rows, _code, _out, _err = batch
    lines = (root / "r.jsonl").read_text().splitlines(keepends=True)
    garbled = root / "garbled.jsonl"
    garbled.write_text("".join(lines[:29]) + lines[29][:40] + "\n")  # a newline after garbage
    code, out, _ = run_cli("batch", str(root / "instances.csv"), "--out", str(garbled), "--quiet")
    assert code == 0 and "(1 run now, 29 before)" in out
    assert len(read_lines(garbled)) == 30


@pytest.mark.parametrize(
    "change, message",
    [
        ("vnnlib", "answered for other inputs"),
        ("option", "answered for other inputs"),
        ("other batch", "not in this batch"),
    ],
)
def test_changed_inputs_are_refused(batch: tuple, tmp_path, change: str, message: str) -> None:
    root, _rows, _code, _out, _err = batch
    copy = tmp_path / "r.jsonl"
    copy.write_bytes((root / "r.jsonl").read_bytes())
    csv = root / "instances.csv"
    extra: list[str] = []
    if change == "vnnlib":
        prop = root / "props" / "p3.vnnlib"
        original = prop.read_text()
        prop.write_text(original.replace("(assert (<= X_0", "(assert (<= X_0 ", 1) + "; edited\n")
    elif change == "option":
        extra = ["--gap", "0.5"]
    else:
        csv = tmp_path / "few.csv"
        csv.write_text("\n".join((root / "instances.csv").read_text().splitlines()[:5]) + "\n")
        csv = csv.rename(root / "few.csv")
    try:
        code, out, err = run_cli("batch", str(csv), "--out", str(copy), "--quiet", *extra)
    finally:
        if change == "vnnlib":
            prop.write_text(original)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    assert copy.read_bytes() == (root / "r.jsonl").read_bytes()  # nothing written


def test_instances_in_vnncomp_layout(tmp_path) -> None:
    """A headerless onnx,vnnlib,timeout file, paths relative to it, blank and comment rows."""
    net = random_network(np.random.default_rng(3), [2, 6, 1])
    (tmp_path / "sub").mkdir()
    save_onnx(net, tmp_path / "sub" / "n.onnx")
    (tmp_path / "sub" / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (and (>= X_0 -1) (<= X_0 1) (>= X_1 0) (<= X_1 2e-1)))\n(assert (<= Y_0 0))\n"
    )
    (tmp_path / "i.csv").write_text("sub/n.onnx,sub/p.vnnlib,116\n\n# a comment\n")
    (task,) = read_instances(tmp_path / "i.csv", SolveOptions())
    assert task.id == "row 1" and task.options["time_limit"] == 116.0
    np.testing.assert_array_equal(task.domain.lower, [-1.0, 0.0])
    np.testing.assert_array_equal(task.domain.upper, [1.0, 0.2])
    (task,) = read_instances(tmp_path / "i.csv", SolveOptions(time_limit=7.0))
    assert task.options["time_limit"] == 7.0  # --time-limit replaces the timeouts


@pytest.mark.parametrize(
    "row, message",
    [
        ("sub/n.onnx,sub/missing.vnnlib,60", "missing.vnnlib"),
        ("sub/none.onnx,sub/p.vnnlib,60", "none.onnx"),
        ("sub/n.onnx,sub/p.vnnlib,soon", "timeout must be a number"),
        ("sub/n.onnx,sub/p.vnnlib", "2 cells, expected 3"),
        ("sub/n.onnx,sub/wide.vnnlib,60", "declares 1 inputs (X_0 .. X_0) but the network takes 2"),
    ],
)
def test_bad_rows_are_refused_with_their_number(tmp_path, row: str, message: str) -> None:
    save_onnx(random_network(np.random.default_rng(4), [2, 6, 2]), _sub(tmp_path) / "n.onnx")
    (tmp_path / "sub" / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n"
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
    )
    (tmp_path / "sub" / "wide.vnnlib").write_text(
        "(declare-const X_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n"
    )
    (tmp_path / "i.csv").write_text(f"sub/n.onnx,sub/p.vnnlib,60\n{row}\n")
    code, out, err = run_cli(
        "batch", str(tmp_path / "i.csv"), "--out", str(tmp_path / "r.jsonl"), "--c", "1,-1"
    )
    assert code == 2 and out == ""
    assert err.startswith("lipopt batch: error: i.csv row 2: ") and message in err
    assert len(err.strip().splitlines()) == 1


def _sub(root):
    (root / "sub").mkdir(exist_ok=True)
    return root / "sub"


def test_header_overrides_and_objective_checked(tmp_path) -> None:
    save_onnx(random_network(np.random.default_rng(5), [2, 6, 3]), _sub(tmp_path) / "n.onnx")
    (tmp_path / "sub" / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n"
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
    )
    (tmp_path / "i.csv").write_text(
        'onnx,vnnlib,timeout,norm,c,output_norm\nsub/n.onnx,sub/p.vnnlib,9,l1,"1,0,-1",\n'
        "sub/n.onnx,sub/p.vnnlib,9,,,cross\n"
    )
    first, second = read_instances(tmp_path / "i.csv", SolveOptions(output_norm="linf"))
    assert (first.options["norm"], first.options["c"], first.options["output_norm"]) == (
        "l1", [1.0, 0.0, -1.0], None,
    )  # fmt: skip
    assert (second.options["norm"], second.options["c"], second.options["output_norm"]) == (
        "linf", None, "cross",
    )  # fmt: skip
    (tmp_path / "k.csv").write_text("onnx,vnnlib,norm\nsub/n.onnx,sub/p.vnnlib,l1\n")
    with pytest.raises(ValueError, match="k.csv row 2: the network has 3 outputs"):
        read_instances(tmp_path / "k.csv", SolveOptions())  # no c, no output norm
    (tmp_path / "j.csv").write_text("onnx,vnnlib,deadline\nsub/n.onnx,sub/p.vnnlib,9\n")
    with pytest.raises(ValueError, match="unknown column 'deadline'"):
        read_instances(tmp_path / "j.csv", SolveOptions())


def test_certify_points_equal_certify_alone(tmp_path) -> None:
    """Each (point, radius) line equals ``lipopt certify --center --radius --json``; with
    labels, ``certified`` is the whole ball certified and the prediction correct."""
    rng = np.random.default_rng(6)
    net = random_network(rng, [3, 10, 10, 3])
    model = str(save_onnx(net, tmp_path / "n.onnx"))
    points = rng.uniform(-1, 1, (5, 3))
    labels = net.forward(points).argmax(axis=1)
    labels[1] = (labels[1] + 1) % 3  # one wrong label
    np.save(tmp_path / "x.npy", points)
    np.save(tmp_path / "y.npy", labels)
    code, out, err = run_cli(
        "certify", model, "--points", str(tmp_path / "x.npy"), "--labels",
        str(tmp_path / "y.npy"), "--radius", "0.01,0.2", "--out", str(tmp_path / "c.jsonl"),
        "--jobs", "2",
    )  # fmt: skip
    assert code == 0, err
    lines = {line["id"]: line for line in read_lines(tmp_path / "c.jsonl")}
    assert len(lines) == 10
    for i, x in enumerate(points):
        for radius in (0.01, 0.2):
            line = lines[f"point {i} radius {radius!r}"]
            centre = ",".join(repr(float(v)) for v in x)
            code, alone, err = run_cli(
                "certify", model, "--center", centre, "--radius", str(radius), "--json", "--quiet"
            )
            alone = json.loads(alone)
            assert line["predicted"] == alone["predicted"] and line["label"] == labels[i]
            assert line["correct"] == (alone["predicted"] == labels[i])
            assert line["certified_ball"] == alone["certified_ball"]
            assert line["certified"] == (alone["certified_ball"] and line["correct"])
            for key, value in alone["lipschitz"].items():
                assert _close(line["lipschitz"][key], value)
    assert not lines["point 1 radius 0.01"]["certified"]  # the wrong label never certifies
    # the same points by another path, the radii repeated and reordered: the same queries
    code, out, err = run_cli(
        "certify", model, "--points", f"{tmp_path}/../{tmp_path.name}/x.npy", "--labels",
        str(tmp_path / "y.npy"), "--radius", "0.2,0.01,0.2", "--out", str(tmp_path / "c.jsonl"),
    )  # fmt: skip
    assert code == 0 and "10 queries (0 run now, 10 before)" in out, err


def test_the_l2_input_norm(tmp_path) -> None:
    """``--norm l2`` (as ``lipopt solve --norm l2``): each line equals the single solve."""
    rows = write_batch(tmp_path, count=5, seed=5)
    chosen = [rows[0], rows[3]]  # networks of one output: no c needed
    (tmp_path / "l2.csv").write_text(
        "".join(f"{r['onnx']},{r['box'].replace('.json', '.vnnlib')},60\n" for r in chosen)
    )
    code, _out, err = run_cli(
        "batch", str(tmp_path / "l2.csv"), "--out", str(tmp_path / "r.jsonl"),
        "--norm", "l2", "--jobs", "1", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    lines = {line["id"]: line for line in read_lines(tmp_path / "r.jsonl")}
    for number, row in enumerate(chosen, start=1):
        row = {**row, "norm": "l2", "c": "", "output_norm": ""}
        line, alone = lines[f"row {number}"], solve_alone(row)
        assert line["inputs"]["norm"] == "l2" and line["status"] == alone["status"] == "optimal"
        assert _close(line["value"], alone["value"]), (line["value"], alone["value"])
