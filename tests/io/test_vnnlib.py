"""Tests for lipopt.io.vnnlib: the VNN-COMP layouts of an input box, and every refusal, by the
box reader (read_vnnlib_box) and, where the set is a box, by read_vnnlib too. Polytopes and
unions: tests/io/test_vnnlib_sets.py; VNN-LIB 2.0: tests/io/test_vnnlib2.py.

Expected boxes are the numbers the tests wrote into the files, never the reader's own output.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from lipopt.domain import Box
from lipopt.io.vnnlib import (
    MAX_TERM_CHARS,
    VnnlibBox,
    VnnlibError,
    read_vnnlib,
    read_vnnlib_box,
)


# ---------------------------------------------------------------------------- helpers
def _declare(n_inputs: int, n_outputs: int = 0) -> str:
    lines = [f"(declare-const X_{i} Real)" for i in range(n_inputs)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(n_outputs)]
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path, text: str, name: str = "prop.vnnlib") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _assert_box(box: VnnlibBox, lower: list[float], upper: list[float], outputs: int) -> None:
    """``box`` is the expected box; so is the domain read_vnnlib reads from the same file."""
    assert isinstance(box, VnnlibBox)
    assert box.lower.dtype == np.float64 and box.upper.dtype == np.float64
    assert box.lower.shape == (len(lower),) and box.upper.shape == (len(upper),)
    np.testing.assert_array_equal(box.lower, np.array(lower, dtype=np.float64))
    np.testing.assert_array_equal(box.upper, np.array(upper, dtype=np.float64))
    assert box.output_assertions == outputs


def _assert_same_domain(path: Path, box: VnnlibBox) -> None:
    """read_vnnlib reads the box read_vnnlib_box read (a Box), or refuses a flat one."""
    if np.any(box.lower == box.upper):
        _refusal(path, "lower < upper", reader=read_vnnlib)
        return
    prop = read_vnnlib(path)
    assert isinstance(prop.domain, Box) and prop.version == "1.0"
    np.testing.assert_array_equal(prop.domain.lower, box.lower)
    np.testing.assert_array_equal(prop.domain.upper, box.upper)
    assert prop.output_assertions == box.output_assertions


def _read(path: Path, input_dim: int | None = None) -> VnnlibBox:
    box = read_vnnlib_box(path, input_dim=input_dim)
    _assert_same_domain(path, box)
    return box


def _refusal(path: Path, phrase: str, input_dim: int | None = None, reader=read_vnnlib_box) -> str:
    with pytest.raises(VnnlibError) as info:
        reader(path, input_dim=input_dim)
    message = str(info.value)
    assert phrase in message
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


# ---------------------------------------------------------------------------- layouts
def test_acasxu_style_one_bound_per_assert(tmp_path: Path) -> None:
    lower = [0.6, -0.5, -0.5, 0.45, -0.5]
    upper = [0.679857769, 0.5, 0.5, 0.5, -0.45]
    text = "; ACAS Xu property 1\n" + _declare(5, 5)
    for i in range(5):
        text += f"(assert (<= X_{i} {upper[i]}))\n(assert (>= X_{i} {lower[i]}))\n"
    text += "(assert (>= Y_0 3.991125645861615))\n"
    _assert_box(_read(_write(tmp_path, text)), lower, upper, outputs=1)


def test_bounds_inside_one_and(tmp_path: Path) -> None:
    text = _declare(3, 2) + (
        "(assert (and (>= X_0 -1) (<= X_0 1) (>= X_1 0.25) (<= X_1 0.75)"
        " (and (>= X_2 2) (<= X_2 3))))\n"
        "(assert (<= Y_0 Y_1))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [-1, 0.25, 2], [1, 0.75, 3], outputs=1)


def test_or_with_one_branch_is_that_branch(tmp_path: Path) -> None:
    text = _declare(2, 3) + (
        "(assert (or (and (>= X_0 0.1) (<= X_0 0.2) (>= X_1 -0.3) (<= X_1 -0.2))))\n"
        "(assert (or (and (>= Y_0 Y_1)) (and (>= Y_0 Y_2))))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [0.1, -0.3], [0.2, -0.2], outputs=1)


def test_scientific_notation(tmp_path: Path) -> None:
    text = _declare(3) + (
        "(assert (>= X_0 1.5e-3))\n(assert (<= X_0 2.5E-2))\n"
        "(assert (>= X_1 -2E+1))\n(assert (<= X_1 1e1))\n"
        "(assert (>= X_2 -7.25e0))\n(assert (<= X_2 3))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [0.0015, -20, -7.25], [0.025, 10, 3], 0)


def test_comments_on_own_lines_and_at_line_ends(tmp_path: Path) -> None:
    text = (
        "; a property with comments\n"
        "(declare-const X_0 Real) ; the first input\n"
        ";(declare-const X_1 Real)\n"
        "(declare-const Y_0 Real)\n"
        "; (assert (<= X_0 100))\n"
        "(assert (<= X_0 0.5)) ; upper\n"
        "(assert (>= X_0 ; lower, split over lines\n"
        "  -0.5))\n"
        "(assert (<= Y_0 0)) ;; output\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [-0.5], [0.5], outputs=1)


def test_output_assertions_are_counted_and_ignored(tmp_path: Path) -> None:
    text = _declare(1, 3) + (
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n"
        "(assert (or (and (>= Y_0 Y_1)) (and (>= Y_0 Y_2))))\n"
        "(assert (<= (+ Y_0 (* 2 Y_1)) (- 3)))\n"
        "(assert (not (= Y_2 0.5)))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [0], [1], outputs=3)


def test_number_first(tmp_path: Path) -> None:
    text = _declare(2) + (
        "(assert (<= 0.125 X_0))\n(assert (>= 0.875 X_0))\n"
        "(assert (< -4 X_1))\n(assert (> 4 X_1))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [0.125, -4], [0.875, 4], outputs=0)


def test_unary_minus(tmp_path: Path) -> None:
    text = _declare(2) + (
        "(assert (>= X_0 (- 0.5)))\n(assert (<= X_0 (- 0.25)))\n"
        "(assert (<= (- 3) X_1))\n(assert (<= X_1 (- (- 2))))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [-0.5, -3], [-0.25, 2], outputs=0)


def test_equality_gives_both_bounds(tmp_path: Path) -> None:
    text = _declare(2) + "(assert (= X_0 0.3))\n(assert (= -1.5 X_1))\n"
    _assert_box(_read(_write(tmp_path, text)), [0.3, -1.5], [0.3, -1.5], outputs=0)


def test_several_bounds_on_one_input_intersect(tmp_path: Path) -> None:
    text = _declare(1) + (
        "(assert (>= X_0 -3))\n(assert (>= X_0 -1))\n(assert (>= X_0 -2))\n"
        "(assert (<= X_0 5))\n(assert (<= X_0 2))\n(assert (and (<= X_0 4) (< X_0 2)))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [-1], [2], outputs=0)


def test_chained_comparison(tmp_path: Path) -> None:
    text = _declare(2) + "(assert (<= -0.5 X_0 0.5))\n(assert (>= 2 X_1 1))\n"
    _assert_box(_read(_write(tmp_path, text)), [-0.5, 1], [0.5, 2], outputs=0)


def test_declarations_in_any_order_and_ignored_commands(tmp_path: Path) -> None:
    text = (
        "(set-logic QF_LRA)\n(declare-const X_1 Real)\n(declare-const X_0 Real)\n"
        "(assert (<= X_0 1))\n(assert (>= X_0 0))\n(assert (<= X_1 3))\n(assert (>= X_1 2))\n"
        "(check-sat)\n(get-model)\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [0, 2], [1, 3], outputs=0)


def test_gzip_file(tmp_path: Path) -> None:
    text = _declare(2, 1) + (
        "(assert (>= X_0 0.1))\n(assert (<= X_0 0.9))\n"
        "(assert (>= X_1 -0.9))\n(assert (<= X_1 -0.1))\n(assert (<= Y_0 0))\n"
    )
    path = tmp_path / "prop.vnnlib.gz"
    path.write_bytes(gzip.compress(text.encode()))
    _assert_box(_read(path), [0.1, -0.9], [0.9, -0.1], outputs=1)


def test_mnist_style_784_inputs(tmp_path: Path) -> None:
    rng = np.random.default_rng(1234)
    image = rng.random(784)
    image[:50] = 0.0
    image[50:80] = 1.0
    eps = 0.026
    lower = np.clip(image - eps, 0.0, 1.0)
    upper = np.clip(image + eps, 0.0, 1.0)
    lines = ["; MNIST local robustness, eps = 0.026"]
    lines += [f"(declare-const X_{i} Real)" for i in range(784)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(10)]
    for i in range(784):
        lines.append(f"(assert (<= X_{i} {float(upper[i])!r}))")
        lines.append(f"(assert (>= X_{i} {float(lower[i])!r}))")
    branches = " ".join(f"(and (>= Y_{j} Y_7))" for j in range(10) if j != 7)
    lines.append(f"(assert (or {branches}))")
    box = _read(_write(tmp_path, "\n".join(lines) + "\n"), input_dim=784)
    assert box.lower.shape == (784,) and box.upper.shape == (784,)
    assert box.lower.dtype == np.float64
    assert np.array_equal(box.lower, lower) and np.array_equal(box.upper, upper)
    assert box.output_assertions == 1


def test_box_arrays_are_read_only(tmp_path: Path) -> None:
    box = read_vnnlib_box(_write(tmp_path, _declare(1) + "(assert (= X_0 1))\n"))
    with pytest.raises(ValueError):
        box.lower[0] = 0.0
    assert issubclass(VnnlibError, ValueError)


# ---------------------------------------------------------------------------- refusals
NOT_A_BOX = "input set is not a box"
BOUNDED = "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"

REFUSALS = {
    "input vs output": (
        _declare(2, 1) + BOUNDED + "(assert (<= X_0 Y_0))",
        "must not mention an output",
    ),
    "not": (
        _declare(2) + BOUNDED + "(assert (not (<= X_0 0.5)))",
        "unsupported input constraint (not",
    ),
    "product of inputs": (
        _declare(2) + BOUNDED + "(assert (<= (* X_0 X_1) 0.5))",
        "a non-linear term (a product of inputs) (* X_0 X_1)",
    ),
    "division": (
        _declare(2) + BOUNDED + "(assert (<= (/ X_0 2) 0.5))",
        "unsupported term (/ X_0 2)",
    ),
    "output constraint in an input conjunction": (
        _declare(2, 1) + BOUNDED + "(assert (and (<= X_0 0.5) (>= Y_0 0)))",
        "output constraint in the same assert",
    ),
    "missing upper bound": (
        _declare(2) + "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))",
        "X_1 has no upper bound",
    ),
    "missing lower bound": (
        _declare(2) + "(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))",
        "X_0 has no lower bound",
    ),
    "empty box": (
        _declare(2) + BOUNDED + "(assert (>= X_1 0.75))\n(assert (<= X_1 0.25))",
        "the input box is empty: 0.75 <= X_1 <= 0.25",
    ),
    "empty by strict inequalities": (
        _declare(1) + "(assert (< X_0 0.5))\n(assert (>= X_0 0.5))",
        "empty",
    ),
    "infinite bound": (_declare(2) + BOUNDED + "(assert (<= X_0 inf))", "is not a number"),
    "overflowing bound": (
        _declare(2) + BOUNDED + "(assert (>= X_0 -1e400))",
        "not a finite number",
    ),
    "nan bound": (_declare(2) + BOUNDED + "(assert (<= X_0 nan))", "is not a number"),
    "underscore numeral": (
        _declare(2) + BOUNDED + "(assert (<= X_0 0_5))",
        "'0_5' is not a number",
    ),
    "non-ASCII digit": (_declare(2) + BOUNDED + "(assert (<= X_0 \u0661))", "is not a number"),
    "missing closing parenthesis": (_declare(2) + BOUNDED + "(assert (<= X_0 1)", "S-expressions"),
    "extra closing parenthesis": (
        _declare(2) + "(assert (<= X_0 1)))\n" + BOUNDED * 50,
        "not valid S-expressions (unbalanced parentheses)",
    ),
    "undeclared input": (_declare(2) + BOUNDED + "(assert (<= X_2 1))", "undeclared variable X_2"),
    "undeclared output": (
        _declare(2, 1) + BOUNDED + "(assert (<= Y_1 1))",
        "undeclared variable Y_1",
    ),
    "undeclared other name": (
        _declare(2) + BOUNDED + "(assert (<= X_0 eps))",
        "undeclared variable eps",
    ),
    "gap in inputs": (
        "(declare-const X_0 Real)\n(declare-const X_2 Real)\n"
        "(assert (= X_0 0))\n(assert (= X_2 0))",
        "X_1 is not declared (X_2 is)",
    ),
    "no inputs": ("(declare-const Y_0 Real)\n(assert (<= Y_0 1))", "no inputs declared"),
    "empty file": ("", "no inputs declared"),
    "declared twice": (_declare(2) + "(declare-const X_1 Real)\n" + BOUNDED, "declared twice"),
    "not Real": ("(declare-const X_0 Int)\n(assert (= X_0 0))", "not Real"),
    "other declared name": (_declare(1) + "(declare-const eps Real)\n", "unsupported declaration"),
    "unsupported command": (_declare(2) + BOUNDED + "(define-fun f () Real 1.0)", "unsupported"),
}


#: sets that read_vnnlib takes (tests/io/test_vnnlib_sets.py) and the box reader refuses
NOT_BOXES = {
    "linear input constraint": (_declare(2) + BOUNDED + "(assert (<= (+ X_0 X_1) 1))", NOT_A_BOX),
    "input vs input": (_declare(2) + BOUNDED + "(assert (<= X_0 X_1))", NOT_A_BOX),
    "union of boxes": (
        _declare(2, 1)
        + "(assert (or (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1))"
        + " (and (>= X_0 2) (<= X_0 3) (>= X_1 0) (<= X_1 1))))",
        "not a box: a union of 2 input sets",
    ),
}


@pytest.mark.parametrize("reader", [read_vnnlib_box, read_vnnlib])
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals(tmp_path: Path, case: str, reader) -> None:
    text, phrase = REFUSALS[case]
    message = _refusal(_write(tmp_path, text + "\n"), phrase, reader=reader)
    assert len(message) < len(str(tmp_path)) + 250


@pytest.mark.parametrize("case", sorted(NOT_BOXES))
def test_the_box_reader_refuses_other_sets(tmp_path: Path, case: str) -> None:
    text, phrase = NOT_BOXES[case]
    path = _write(tmp_path, text + "\n")
    message = _refusal(path, phrase)
    assert len(message) < len(str(tmp_path)) + 250
    assert not isinstance(read_vnnlib(path).domain, Box)  # the new reader takes them


def test_a_scaled_input_and_a_difference_of_numbers_are_bounds(tmp_path: Path) -> None:
    """``(* 2 X_0) <= 1`` is ``X_0 <= 0.5`` exactly, and ``(- 1 0.25)`` is 0.75 exactly."""
    text = _declare(2) + (
        "(assert (<= (* 2 X_0) 1))\n(assert (<= (* -4 X_0) 1))\n"
        "(assert (<= X_1 (- 1 0.25)))\n(assert (>= X_1 (- 0.5)))\n"
    )
    _assert_box(_read(_write(tmp_path, text)), [-0.25, -0.5], [0.5, 0.75], outputs=0)


def test_refusal_cases_start_from_a_valid_box(tmp_path: Path) -> None:
    """The refusal cases that add one assert to a valid box are refused for that assert only."""
    _assert_box(read_vnnlib_box(_write(tmp_path, _declare(2, 1) + BOUNDED)), [0, 0], [1, 1], 0)


def test_wrong_input_dim_names_both_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, _declare(3) + "".join(f"(assert (= X_{i} 0))\n" for i in range(3)))
    message = _refusal(path, "3 inputs", input_dim=4)
    assert "the network takes 4" in message
    assert read_vnnlib_box(path, input_dim=3).lower.shape == (3,)


def test_missing_file(tmp_path: Path) -> None:
    _refusal(tmp_path / "absent.vnnlib", "cannot read")


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = gzip.compress((_declare(1) + "(assert (= X_0 0))\n").encode())
    path = tmp_path / "prop.vnnlib.gz"
    path.write_bytes(data[: len(data) // 2])
    _refusal(path, "gzip")


def test_long_offending_term_is_shortened(tmp_path: Path) -> None:
    total = "(+ " + " ".join(f"X_{i}" for i in range(60)) + ")"
    text = _declare(60) + "".join(f"(assert (= X_{i} 0))\n" for i in range(60))
    message = _refusal(_write(tmp_path, text + f"(assert (<= {total} 1))\n"), NOT_A_BOX)
    shown = message[message.index("(<= (+ X_0") :]
    assert shown.endswith("...")
    assert len(shown) == MAX_TERM_CHARS
