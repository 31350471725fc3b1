"""``lipopt batch`` on VNN-LIB 1.0 and 2.0 files whose input sets are polytopes and unions:
each line's value is the brute-force oracle's (tests/oracle.py, rows included; a union's is the
largest of its parts'), and the 1.0 and 2.0 twins of one set give the same line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lipopt.io.vnnlib import read_vnnlib
from tests.batch_helpers import read_lines, run_cli
from tests.helpers import random_network, require_module, save_onnx
from tests.oracle import assert_certified_exact, brute_force_lipschitz, from_lipopt

DATA = Path(__file__).resolve().parents[1] / "data" / "vnnlib"
#: (network, vnnlib file, norm, c, output norm)
ROWS = [
    ("n3.onnx", "v1-polytope.vnnlib", "linf", "1", ""),
    ("n3.onnx", "v2-polytope.vnnlib", "linf", "1", ""),
    ("n3.onnx", "v1-polytope.vnnlib", "l1", "1", ""),
    ("n3.onnx", "v2-polytope.vnnlib", "l1", "1", ""),
    ("n2.onnx", "v1-union.vnnlib", "linf", "", "linf"),
    ("n2.onnx", "v2-union.vnnlib", "linf", "", "linf"),
]


def _truth(net, domain, norm: str, c: str, output_norm: str) -> float:
    parts = getattr(domain, "parts", (domain,))
    weights = None if not c else np.array([float(c)])
    return max(
        brute_force_lipschitz(*from_lipopt(net, part), weights, norm, output_norm or "abs").value
        for part in parts
    )


def test_batch_lines_equal_the_oracle_for_1_0_and_2_0_polytopes_and_unions(tmp_path):
    require_module("vnnlib")
    nets = {
        "n3.onnx": random_network(np.random.default_rng(11), [3, 8, 8, 1]),
        "n2.onnx": random_network(np.random.default_rng(12), [2, 8, 8, 2]),
    }
    for name, net in nets.items():
        save_onnx(net, tmp_path / name)
    lines = ["onnx,vnnlib,timeout,norm,c,output_norm"]
    lines += [f"{n},{DATA / f},120,{norm},{c},{o}" for n, f, norm, c, o in ROWS]
    (tmp_path / "i.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run_cli("batch", str(tmp_path / "i.csv"), "--out", str(tmp_path / "r.jsonl"),
                           "--quiet")  # fmt: skip
    assert code == 0, err
    got = {line["id"]: line for line in read_lines(tmp_path / "r.jsonl")}
    for number, (name, file, norm, c, output_norm) in enumerate(ROWS, start=2):
        line = got[f"row {number}"]
        domain = read_vnnlib(DATA / file, nets[name].input_dim).domain
        truth = _truth(nets[name], domain, norm, c, output_norm)
        assert line["status"] == "optimal", line
        assert_certified_exact(line["value"], truth)
        assert line["lower"] == pytest.approx(truth, rel=1e-6)
        assert domain.contains(np.array(line["witness"]))
    for first, second in ((2, 3), (4, 5), (6, 7)):  # the 1.0 and 2.0 twins of one set
        assert got[f"row {first}"]["value"] == pytest.approx(got[f"row {second}"]["value"], 1e-9)
