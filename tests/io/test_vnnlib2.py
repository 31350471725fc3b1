"""read_vnnlib on VNN-LIB 2.0 files (tests/data/vnnlib/v2-*.vnnlib): every file is first parsed
by the official parser (the ``vnnlib`` package), then lipopt reads the set the test expects, or
refuses it in one line naming the term. A 1.0 and a 2.0 file of one polytope give equal domains.
"""

from __future__ import annotations

import builtins
import gzip
from pathlib import Path

import numpy as np
import pytest

from lipopt.domain import Box, Disjunction, Polytope
from lipopt.io.vnnlib import VnnlibError, read_vnnlib, read_vnnlib_box
from tests.helpers import require_module

DATA = Path(__file__).resolve().parents[1] / "data" / "vnnlib"
V2_FILES = sorted(DATA.glob("v2-*.vnnlib"))


@pytest.fixture(autouse=True)
def _official_parser() -> None:
    require_module("vnnlib")


def _read(name: str, input_dim: int | None = None):
    """The property of a data file, once the official parser has accepted the file."""
    import vnnlib

    path = DATA / name
    vnnlib.parse_query_file(str(path))
    prop = read_vnnlib(path, input_dim)
    assert prop.version == "2.0"
    return prop


def _refused(path: Path, phrase: str, input_dim: int | None = None) -> str:
    with pytest.raises(VnnlibError) as info:
        read_vnnlib(path, input_dim)
    message = str(info.value)
    assert phrase in message and "\n" not in message and message.startswith(f"{path}: ")
    return message


def test_the_data_files_are_valid_vnnlib_2() -> None:
    import vnnlib

    assert len(V2_FILES) >= 12
    for path in V2_FILES:
        query = vnnlib.parse_query_file(str(path))
        assert query.assertions, path.name


def test_a_box_with_output_asserts() -> None:
    prop = _read("v2-box.vnnlib", input_dim=3)
    assert isinstance(prop.domain, Box) and not isinstance(prop.domain, Polytope)
    np.testing.assert_array_equal(prop.domain.lower, [-0.5, 0.125, -1.0])
    np.testing.assert_array_equal(prop.domain.upper, [0.5, 0.25, -0.75])
    assert prop.output_assertions == 2
    box = read_vnnlib_box(DATA / "v2-box.vnnlib")  # the box reader reads 2.0 boxes too
    np.testing.assert_array_equal(box.lower, prop.domain.lower)


def test_1_0_and_2_0_files_of_one_polytope_give_equal_domains() -> None:
    two = _read("v2-polytope.vnnlib", input_dim=3).domain
    one = read_vnnlib(DATA / "v1-polytope.vnnlib", input_dim=3)
    assert one.version == "1.0" and one.output_assertions == 1
    for domain in (two, one.domain):
        assert isinstance(domain, Polytope)
    for name in ("A", "b", "lower", "upper"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one.domain, name), err_msg=name)
    a = [[1, 1, 0], [-2, 1, 0], [-1, 1, 0], [1, 1, -1], [1, 0, 1], [1, 1, 0]]
    np.testing.assert_array_equal(two.A, a)
    np.testing.assert_array_equal(two.b, [1.5, 0, 0, -0.25, 0.75, 1.75])
    np.testing.assert_array_equal(two.lower, [0, 0, -1])
    np.testing.assert_array_equal(two.upper, [1, 1, 1])


def test_rows_agree_with_the_official_linearisation() -> None:
    """Each row is ``lhs - rhs <= 0`` of the official ``to_linear_expr`` (sign per operator)."""
    import vnnlib

    query = vnnlib.parse_query_file(str(DATA / "v2-polytope.vnnlib"))
    rows = []
    for assertion in query.assertions[2:-1]:
        expr = assertion.expr
        left, right = expr.lhs.to_linear_expr(), expr.rhs.to_linear_expr()
        row = np.zeros(3)
        for term in left.terms:
            row[term.var.indices[0]] += term.coeff
        for term in right.terms:
            row[term.var.indices[0]] -= term.coeff
        rhs = right.constant - left.constant
        sign = -1.0 if type(expr).__name__ in ("GreaterEqual", "GreaterThan") else 1.0
        rows.append((sign * row, sign * rhs))
    domain = _read("v2-polytope.vnnlib").domain
    np.testing.assert_array_equal(domain.A, [r for r, _ in rows])
    np.testing.assert_array_equal(domain.b, [b for _, b in rows])


def test_a_union_of_boxes_and_a_polytope() -> None:
    domain = _read("v2-union.vnnlib", input_dim=2).domain
    assert isinstance(domain, Disjunction) and len(domain.parts) == 3
    first, second, third = domain.parts
    assert isinstance(first, Box) and isinstance(second, Box)
    np.testing.assert_array_equal(first.lower, [0, 0])
    np.testing.assert_array_equal(first.upper, [0.25, 0.25])
    np.testing.assert_array_equal(second.lower, [0.75, 0.75])
    assert isinstance(third, Polytope)
    np.testing.assert_array_equal(third.A, [[1, 1]])
    np.testing.assert_array_equal(third.b, [5])
    np.testing.assert_array_equal(third.lower, [2, 2])


def test_indexing_flattens_in_c_order() -> None:
    """X[i,j,k] of shape [2,2,2] is input 4i + 2j + k: the file bounds input k by [k, k+0.5]."""
    domain = _read("v2-indexed.vnnlib", input_dim=8).domain
    assert isinstance(domain, Polytope)
    np.testing.assert_array_equal(domain.lower, np.arange(8.0))
    np.testing.assert_array_equal(domain.upper, np.arange(8.0) + 0.5)
    np.testing.assert_array_equal(domain.A, [[0, 0, 0, -1, 1, 0, 0, 0]])  # X[1,0,0] - X[0,1,1]
    np.testing.assert_array_equal(domain.b, [1.25])
    assert np.array_equal(np.ravel_multi_index((1, 0, 0), (2, 2, 2)), 4)


def test_a_scalar_input_of_element_type_real() -> None:
    prop = _read("v2-scalar.vnnlib", input_dim=1)
    np.testing.assert_array_equal(prop.domain.lower, [-2.0])
    np.testing.assert_array_equal(prop.domain.upper, [2.0])
    assert prop.output_assertions == 1


@pytest.mark.parametrize("element", ["float16", "float32", "float64", "bfloat16"])
def test_float_element_types_are_real_inputs(tmp_path: Path, element: str) -> None:
    text = (DATA / "v2-scalar.vnnlib").read_text().replace("Real", element)
    path = tmp_path / "p.vnnlib.gz"
    path.write_bytes(gzip.compress(text.encode()))  # and gzip, as for 1.0
    prop = read_vnnlib(path)
    assert prop.version == "2.0"
    np.testing.assert_array_equal(prop.domain.upper, [2.0])


REFUSED = {
    "v2-refused-two-networks.vnnlib": "declares 2 networks (teacher, student); lipopt answers one",
    "v2-refused-nonlinear.vnnlib": "a non-linear term (a product of inputs) (* X [0] X [1])",
    "v2-refused-int-input.vnnlib": "input X has element type int8",
    "v2-refused-hidden.vnnlib": "declares hidden tensors (H)",
    "v2-refused-two-inputs.vnnlib": "declares 2 input tensors (X, Z)",
    "v2-refused-not-equal.vnnlib": "unsupported input constraint (!= X [0] 0.5)",
    "v2-refused-mixed.vnnlib": "an output constraint in the same assert as input constraints",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_of_valid_2_0_files(name: str) -> None:
    import vnnlib

    vnnlib.parse_query_file(str(DATA / name))  # the official parser accepts the file
    _refused(DATA / name, REFUSED[name])


def test_every_refused_file_is_in_the_table() -> None:
    refused = {path.name for path in V2_FILES if "refused" in path.name}
    assert refused == set(REFUSED)


def test_the_input_count_must_match_the_network(tmp_path: Path) -> None:
    _refused(
        DATA / "v2-indexed.vnnlib", "8 inputs (X of shape [2, 2, 2]) but the network takes 4", 4
    )


def test_what_the_official_parser_refuses_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.vnnlib"
    path.write_text(
        (DATA / "v2-box.vnnlib").read_text().replace("(<= X[0,0] 0.5)", "(<= X[0,9] 0.5)")
    )
    _refused(path, "the VNN-LIB 2.0 parser refused the file: Index out of bounds")
    path.write_text((DATA / "v2-box.vnnlib").read_text().replace("0.125", "1.25e-1"))
    _refused(path, "the VNN-LIB 2.0 parser refused the file: Parse error: syntax error")


def test_other_versions_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.vnnlib"
    path.write_text(
        "; a comment first\n" + (DATA / "v2-box.vnnlib").read_text().replace("<2.0>", "<3.1>")
    )
    _refused(path, "VNN-LIB version <3.1> is not supported")


def test_without_the_vnnlib_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_vnnlib(name, *args, **kwargs):
        if name == "vnnlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_vnnlib)
    _refused(DATA / "v2-box.vnnlib", "needs the vnnlib package: pip install 'lipopt[vnnlib]'")
