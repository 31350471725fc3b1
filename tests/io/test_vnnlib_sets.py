"""read_vnnlib on VNN-LIB 1.0: linear input constraints (a Polytope) and or-unions of input sets
(a Disjunction), in VNN-COMP's layouts, and what is refused.

Expected sets are the numbers the tests wrote into the files (A x <= b with each row as the
test moved its terms), never the reader's own output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lipopt.domain import Box, Disjunction, Polytope
from lipopt.io.vnnlib import MAX_PARTS, VnnlibError, read_vnnlib

BOUNDED = "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"


def _declare(n_inputs: int, n_outputs: int = 0) -> str:
    lines = [f"(declare-const X_{i} Real)" for i in range(n_inputs)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(n_outputs)]
    return "\n".join(lines) + "\n"


def _read(tmp_path: Path, text: str):
    path = tmp_path / "prop.vnnlib"
    path.write_text(text)
    return read_vnnlib(path)


def _refused(tmp_path: Path, text: str, phrase: str) -> str:
    path = tmp_path / "prop.vnnlib"
    path.write_text(text)
    with pytest.raises(VnnlibError) as info:
        read_vnnlib(path)
    message = str(info.value)
    assert phrase in message and "\n" not in message and message.startswith(f"{path}: ")
    return message


def _assert_polytope(domain, a, b, lower, upper) -> None:
    assert isinstance(domain, Polytope)
    np.testing.assert_array_equal(domain.A, np.array(a, dtype=np.float64))
    np.testing.assert_array_equal(domain.b, np.array(b, dtype=np.float64))
    np.testing.assert_array_equal(domain.lower, np.array(lower, dtype=np.float64))
    np.testing.assert_array_equal(domain.upper, np.array(upper, dtype=np.float64))


def _assert_box(domain, lower, upper) -> None:
    assert isinstance(domain, Box) and not isinstance(domain, Polytope)
    np.testing.assert_array_equal(domain.lower, np.array(lower, dtype=np.float64))
    np.testing.assert_array_equal(domain.upper, np.array(upper, dtype=np.float64))


# ---------------------------------------------------------------------------- polytopes
def test_the_issue_s_linear_forms_are_rows_and_the_bounds_stay_the_box(tmp_path: Path) -> None:
    text = (
        _declare(2, 1)
        + BOUNDED
        + (
            "(assert (<= (+ X_0 X_1) 1.5))\n"  # x0 + x1 <= 1.5
            "(assert (>= (+ (* 2.0 X_0) (* -1 X_1)) 0))\n"  # -2 x0 + x1 <= 0
            "(assert (<= X_1 X_0))\n"  # input vs input: -x0 + x1 <= 0
            "(assert (<= Y_0 0))\n"
        )
    )
    prop = _read(tmp_path, text)
    _assert_polytope(prop.domain, [[1, 1], [-2, 1], [-1, 1]], [1.5, 0, 0], [0, 0], [1, 1])
    assert prop.output_assertions == 1 and prop.version == "1.0"


def test_minus_forms_numbers_on_either_side_chains_and_strict_rows(tmp_path: Path) -> None:
    text = (
        _declare(3)
        + BOUNDED
        + "(assert (>= X_2 -1))\n(assert (<= X_2 1))\n"
        + (
            "(assert (<= (- X_0 X_1) 0.5))\n"  # x0 - x1 <= 0.5
            "(assert (<= 0.25 (- X_2 X_0 X_1)))\n"  # x0 + x1 - x2 <= -0.25
            "(assert (< (+ X_0 0.5 X_2) (- 1.25 0)))\n"  # x0 + x2 <= 0.75 (closed)
            "(assert (<= -1 (+ X_1 X_2) 1))\n"  # -x1 - x2 <= 1, x1 + x2 <= 1
            "(assert (>= (- (+ X_0 X_1)) -1.75))\n"  # x0 + x1 <= 1.75
        )
    )
    a = [[1, -1, 0], [1, 1, -1], [1, 0, 1], [0, -1, -1], [0, 1, 1], [1, 1, 0]]
    b = [0.5, -0.25, 0.75, 1, 1, 1.75]
    _assert_polytope(_read(tmp_path, text).domain, a, b, [0, 0, -1], [1, 1, 1])


def test_a_constraint_on_one_input_is_a_bound_when_it_is_one_exactly(tmp_path: Path) -> None:
    """``(- X_0) <= -0.25`` and ``3 X_1 >= 0.75`` are bounds; ``3 X_1 <= 1`` (1/3 is no float64)
    stays a row, so the box is never rounded."""
    text = (
        _declare(2)
        + BOUNDED
        + ("(assert (<= (- X_0) -0.25))\n(assert (>= (* 3 X_1) 0.75))\n(assert (<= (* 3 X_1) 1))\n")
    )
    _assert_polytope(_read(tmp_path, text).domain, [[0, 3]], [1], [0.25, 0.25], [1, 1])


def test_constant_comparisons_over_inputs(tmp_path: Path) -> None:
    text = _declare(2) + BOUNDED + "(assert (<= (- X_0 X_0) 1))\n"  # always true
    _assert_box(_read(tmp_path, text).domain, [0, 0], [1, 1])
    text = _declare(2) + BOUNDED + "(assert (<= (- X_0 X_0) -1))\n"
    _refused(tmp_path, text, "the input set is empty: (<= (- X_0 X_0) -1) never holds")


POLYTOPE_REFUSALS = {
    "equality of linear forms": ("(assert (= (+ X_0 X_1) 1))", "makes a flat input set"),
    "rows leave no point": ("(assert (<= (+ X_0 X_1) -1))", "the input set is empty"),
    "rows leave a flat set": ("(assert (<= X_0 X_1))\n(assert (<= X_1 X_0))", "no interior"),
    "coefficient not a float64": ("(assert (<= (* 0.1 3 X_0) X_1))", "no float64 number"),
    "product of inputs": ("(assert (<= (* X_0 (+ X_1 1)) 1))", "(* X_0 (+ X_1 1))"),
    "input vs output": ("(assert (<= (+ X_0 Y_0) 1))", "must not mention an output (Y_0)"),
    "not equal": ("(assert (distinct X_0 X_1))", "unsupported input constraint (distinct"),
}


@pytest.mark.parametrize("case", sorted(POLYTOPE_REFUSALS))
def test_polytope_refusals(tmp_path: Path, case: str) -> None:
    extra, phrase = POLYTOPE_REFUSALS[case]
    _refused(tmp_path, _declare(2, 1) + BOUNDED + extra + "\n", phrase)


def test_every_input_needs_box_bounds_even_when_rows_bound_it(tmp_path: Path) -> None:
    text = _declare(2) + (
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n"
        "(assert (<= (+ X_0 X_1) 1))\n"
    )
    _refused(tmp_path, text, "X_1 has no upper bound")


# ---------------------------------------------------------------------------- unions
TWO_BOXES = (
    "(assert (or (and (>= X_0 0) (<= X_0 0.1) (>= X_1 0) (<= X_1 0.1))\n"
    "            (and (>= X_0 0.9) (<= X_0 1) (>= X_1 0.9) (<= X_1 1))))\n"
)


def test_vnncomp_or_of_ands_is_a_union_of_boxes(tmp_path: Path) -> None:
    prop = _read(tmp_path, _declare(2, 2) + TWO_BOXES + "(assert (>= Y_0 Y_1))\n")
    assert isinstance(prop.domain, Disjunction) and len(prop.domain.parts) == 2
    _assert_box(prop.domain.parts[0], [0, 0], [0.1, 0.1])
    _assert_box(prop.domain.parts[1], [0.9, 0.9], [1, 1])
    assert prop.output_assertions == 1


def test_bounds_outside_the_or_apply_to_every_part(tmp_path: Path) -> None:
    text = _declare(2) + (
        "(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
        "(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 2) (<= X_0 3) (<= X_1 X_0))))\n"
        "(assert (<= (+ X_0 X_1) 3.5))\n"
    )
    parts = _read(tmp_path, text).domain.parts
    _assert_polytope(parts[0], [[1, 1]], [3.5], [0, -1], [1, 1])
    _assert_polytope(parts[1], [[1, 1], [-1, 1]], [3.5, 0], [2, -1], [3, 1])


def test_two_ors_intersect_part_by_part_in_order(tmp_path: Path) -> None:
    text = _declare(2) + (
        "(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 2) (<= X_0 3))))\n"
        "(assert (and (or (and (>= X_1 0) (<= X_1 1)) (and (>= X_1 5) (<= X_1 6)))))\n"
    )
    parts = _read(tmp_path, text).domain.parts
    expected = [([0, 0], [1, 1]), ([0, 5], [1, 6]), ([2, 0], [3, 1]), ([2, 5], [3, 6])]
    assert len(parts) == 4
    for part, (lower, upper) in zip(parts, expected):
        _assert_box(part, lower, upper)


def test_an_or_nested_in_an_and(tmp_path: Path) -> None:
    text = _declare(2) + (
        "(assert (and (>= X_1 0) (<= X_1 1) (or (<= 0 X_0 1) (and (<= 2 X_0) (<= X_0 3)))))\n"
    )
    parts = _read(tmp_path, text).domain.parts
    _assert_box(parts[0], [0, 0], [1, 1])
    _assert_box(parts[1], [2, 0], [3, 1])


UNION_REFUSALS = {
    "output term in a branch": (
        "(assert (or (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1)) (and (>= Y_0 0))))",
        "output constraint in the same assert",
    ),
    "an empty part": (
        "(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
        "(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 3) (<= X_0 2))))",
        "part 2 of 2 (or branches): the input box is empty: 3.0 <= X_0 <= 2.0",
    ),
    "a part without a bound": (
        "(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
        "(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 3))))",
        "part 2 of 2 (or branches): X_0 has no upper bound",
    ),
    "too many parts": (
        "(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
        + "(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 2) (<= X_0 3))))\n" * 11,
        f"a union of more than {MAX_PARTS} parts",
    ),
}


@pytest.mark.parametrize("case", sorted(UNION_REFUSALS))
def test_union_refusals(tmp_path: Path, case: str) -> None:
    extra, phrase = UNION_REFUSALS[case]
    _refused(tmp_path, _declare(2, 1) + extra + "\n", phrase)
