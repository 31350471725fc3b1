"""``lipopt batch`` rows whose VNN-LIB file is a polytope or a union (1.0 or 2.0): the task's
domain is the set read_vnnlib reads, handed through unchanged (and through pickling, as the
workers receive it); its line's inputs name the kind of set; the bundled box instances keep
their domains and fingerprints."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from lipopt.batch import SolveOptions, read_instances
from lipopt.domain import Box, Disjunction, Polytope
from lipopt.io.vnnlib import read_vnnlib
from tests.helpers import random_network, require_module, save_onnx

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "vnnlib"

#: the bundled batch (models/batch/instances.csv) with --c 1,-1, as lipopt read it before
#: polytopes and unions: the box of each row and its fingerprint (docs/batch.md shows row 2's)
BUNDLED_BOXES = {
    "row 1": ([0.0, 0.0], [1.0, 1.0]),
    "row 2": ([0.2, 0.5], [0.4, 0.7]),
    "row 3": ([0.6, 0.1], [0.8, 0.3]),
    "row 4": ([0.45] * 10, [0.55] * 10),
    "row 5": ([0.0] * 5 + [0.9] * 5, [0.1] * 5 + [1.0] * 5),
}
BUNDLED_FINGERPRINTS = {
    "row 1": "8ca4738cceafe9170e1c98e10d032b2e114e8d45de8f8235db96d95d8ef02145",
    "row 2": "d8f73db27ee2627e2ce5c29cd07552670aec033b398851f100ed4144ee2091f5",
    "row 3": "9c0f4553c34dc3a26e77b6269a5dff0b5645870b36901f7527982b0b96893618",
    "row 4": "c7a7af9b69c9499d33874d1ec81d9dcfc9c533c4102894f7806e2a0bd8761ac5",
    "row 5": "ff6ff8999c83863091c2527fa5f076be28677f4ff84d5f0ac6f799c914e22552",
}


def _batch(tmp_path: Path, inputs: int, files: list[str]) -> list:
    """The tasks of a batch of one network and the given data files, one row each."""
    save_onnx(random_network(np.random.default_rng(7), [inputs, 8, 1]), tmp_path / "n.onnx")
    rows = "".join(f"n.onnx,{DATA / name},30\n" for name in files)
    (tmp_path / "i.csv").write_text(rows)
    return read_instances(tmp_path / "i.csv", SolveOptions())


def _same(first, second) -> None:
    assert type(first) is type(second)
    for name in ("A", "b", "lower", "upper"):
        if hasattr(first, name):
            np.testing.assert_array_equal(getattr(first, name), getattr(second, name))


def test_the_bundled_boxes_keep_their_domains_and_fingerprints() -> None:
    tasks = read_instances(ROOT / "models" / "batch" / "instances.csv", SolveOptions(c=(1.0, -1.0)))
    assert [task.id for task in tasks] == sorted(BUNDLED_BOXES)
    for task in tasks:
        (lower, upper), fingerprint = BUNDLED_BOXES[task.id], BUNDLED_FINGERPRINTS[task.id]
        assert type(task.domain) is Box and task.inputs["domain"] == "box"
        np.testing.assert_array_equal(task.domain.lower, lower)
        np.testing.assert_array_equal(task.domain.upper, upper)
        assert task.fingerprint == fingerprint


def test_a_1_0_and_a_2_0_polytope_make_tasks_of_equal_domains(tmp_path: Path) -> None:
    require_module("vnnlib")
    one, two = _batch(tmp_path, 3, ["v1-polytope.vnnlib", "v2-polytope.vnnlib"])
    for task in (one, two):
        assert isinstance(task.domain, Polytope) and task.inputs["domain"] == "polytope"
        assert task.inputs["ignored_output_assertions"] == 1
    _same(one.domain, two.domain)
    _same(one.domain, read_vnnlib(DATA / "v1-polytope.vnnlib").domain)
    assert one.fingerprint != two.fingerprint  # other files, other queries


def test_a_union_is_handed_through_with_its_parts(tmp_path: Path) -> None:
    require_module("vnnlib")
    (task,) = _batch(tmp_path, 2, ["v2-union.vnnlib"])
    assert isinstance(task.domain, Disjunction) and task.inputs["domain"] == "union"
    read = read_vnnlib(DATA / "v2-union.vnnlib").domain
    assert len(task.domain.parts) == len(read.parts) == 3
    for part, expected in zip(task.domain.parts, read.parts):
        _same(part, expected)


@pytest.mark.parametrize("name", ["v1-polytope.vnnlib", "v2-union.vnnlib"])
def test_a_task_s_set_survives_pickling(tmp_path: Path, name: str) -> None:
    if name.startswith("v2"):
        require_module("vnnlib")
    (task,) = _batch(tmp_path, 3 if "polytope" in name else 2, [name])
    again = pickle.loads(pickle.dumps(task))
    parts = getattr(task.domain, "parts", (task.domain,))
    for part, copy in zip(parts, getattr(again.domain, "parts", (again.domain,))):
        _same(part, copy)
    assert again.fingerprint == task.fingerprint and again.inputs == task.inputs


def test_a_refused_property_is_a_bad_row(tmp_path: Path) -> None:
    require_module("vnnlib")
    with pytest.raises(ValueError, match="i.csv row 1: .*declares 2 networks"):
        _batch(tmp_path, 2, ["v2-refused-two-networks.vnnlib"])
