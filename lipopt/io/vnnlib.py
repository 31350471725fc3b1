"""Read the input box of a VNN-LIB 1.0 property file (the VNN-COMP format).

A VNN-LIB file is a list of SMT-LIB S-expressions (parsed with :mod:`sexpdata`; ``;`` starts a
comment that runs to the end of the line)::

    ; ACAS Xu property 3
    (declare-const X_0 Real)
    (declare-const X_1 Real)
    (declare-const Y_0 Real)
    (assert (<= X_0 0.679857769))
    (assert (>= X_0 0.6))
    (assert (or (and (>= X_1 -0.5) (<= X_1 (- 0.45)))))
    (assert (or (and (>= Y_0 Y_1)) (and (>= Y_0 Y_2))))

:func:`read_vnnlib_box` returns the box ``lower <= x <= upper`` of the inputs ``X_0 .. X_{n-1}``
and refuses, with a one-line :class:`VnnlibError` naming the file, anything it cannot turn into
that box exactly (a silently wrong box is the worst outcome). The rules:

* Commands: ``(declare-const NAME Real)`` with NAME ``X_i`` (an input) or ``Y_j`` (an output),
  ``(assert TERM)``; ``check-sat``, ``get-model``, ``set-logic``, ``set-info``, ``set-option`` and
  ``exit`` are ignored; anything else is refused. Declarations may come in any order, but the
  inputs must be exactly ``X_0 .. X_{n-1}`` (at least one), each declared once.
* Every variable used in an assert must be declared.
* An assert whose term mentions no input is an *output assertion*: any structure is accepted; it
  is counted (:attr:`VnnlibBox.output_assertions`) and otherwise ignored.
* An assert whose term mentions an input must be a conjunction of simple bounds: ``and`` nests
  and flattens, and an ``or`` with exactly one branch is that branch (VNN-COMP writes
  ``(assert (or (and ...)))``). A simple bound compares one input with one number: ``(<= X_i c)``,
  ``(>= X_i c)``, ``(< X_i c)``, ``(> X_i c)``, ``(= X_i c)`` (both bounds), or the number first
  (``(<= c X_i)`` is ``X_i >= c``); SMT-LIB's chained form ``(<= a X_i b)`` is read pair by pair.
  A number is an integer or a decimal (scientific notation included), possibly negated as
  ``(- c)``, and must be finite. Anything else that mentions an input (a linear combination, an
  input compared with an input or an output, an output constraint in the same conjunction,
  ``not``, an ``or`` of two or more branches, i.e. a union of boxes) is refused: the input set is
  not a box.
* Several bounds on one input intersect. Every input needs a lower and an upper bound; an empty
  box (``lower > upper``, or ``lower == upper`` with a strict inequality) is refused. Strict
  inequalities otherwise give the closed box.
* Gzip-compressed files (``.vnnlib.gz``) are recognised by their magic bytes and read
  transparently.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import sexpdata
from sexpdata import Symbol

__all__ = ["VnnlibBox", "VnnlibError", "read_vnnlib_box"]

#: an offending term is shown in a message shortened to this many characters
MAX_TERM_CHARS = 80

_COMPARISONS = ("<=", ">=", "<", ">", "=")
_IGNORED_COMMANDS = frozenset(
    {"check-sat", "get-model", "set-logic", "set-info", "set-option", "exit"}
)
_VARIABLE = re.compile(r"([XY])_(0|[1-9][0-9]*)")
_BOOLEANS = frozenset({"true", "false"})


class VnnlibError(ValueError):
    """A VNN-LIB file that cannot be read, or whose input set is not a box (one-line message)."""


class _Refusal(Exception):
    """Raised inside this module; :func:`read_vnnlib_box` adds the file name."""


@dataclass(frozen=True)
class VnnlibBox:
    """The input box of a VNN-LIB property: ``lower <= x <= upper`` (read-only float64 arrays)."""

    lower: np.ndarray
    upper: np.ndarray
    #: how many assert terms mention only outputs and numbers (ignored)
    output_assertions: int


def read_vnnlib_box(path: str | os.PathLike, input_dim: int | None = None) -> VnnlibBox:
    """The input box declared in the VNN-LIB file ``path`` (plain or gzip).

    ``input_dim``, when given, is the number of inputs the file must declare. Raises
    :class:`VnnlibError` (one line, naming the file) on any rule of the module docstring broken.
    """
    name = os.fspath(path)
    try:
        commands = _parse(_read_text(path))
        inputs, outputs = _declarations(commands)
        if input_dim is not None and input_dim != len(inputs):
            raise _Refusal(
                f"the file declares {len(inputs)} inputs (X_0 .. X_{len(inputs) - 1}) "
                f"but the network takes {input_dim}"
            )
        bounds = _Bounds(len(inputs))
        output_assertions = 0
        for command in commands:
            if _head(command) != "assert":
                continue
            term = command[1]
            if _mentions_input(term, inputs, outputs):
                _add_input_assertion(term, inputs, outputs, bounds)
            else:
                output_assertions += 1
        lower, upper = bounds.box()
    except _Refusal as exc:
        raise VnnlibError(f"{name}: {exc}") from None
    lower.setflags(write=False)
    upper.setflags(write=False)
    return VnnlibBox(lower=lower, upper=upper, output_assertions=output_assertions)


def _read_text(path: str | os.PathLike) -> str:
    """The file's text, gunzipped if it starts with the gzip magic bytes."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise _Refusal(f"cannot read the file: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise _Refusal(f"not a valid gzip file: {_one_line(exc)}") from None
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is dropped
    except UnicodeDecodeError as exc:
        raise _Refusal(f"not UTF-8 text (invalid byte at offset {exc.start})") from None


#: a numeral as VNN-LIB files write them: ASCII digits, an optional point and exponent
_NUMERAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def _check_numerals(text: str) -> None:
    """Refuse atoms that Python would read as a number but SMT-LIB would not (``0_5``, non-ASCII
    digits, ``inf``): sexpdata converts with ``int()``/``float()``, which accept them."""
    code = "\n".join(line.split(";", 1)[0] for line in text.splitlines())
    for atom in re.split(r"[\s()]+", code):
        if not atom or _NUMERAL.fullmatch(atom):
            continue
        try:
            float(atom)
        except ValueError:
            continue
        raise _Refusal(f"{atom!r} is not a number as VNN-LIB writes one")


def _parse(text: str) -> list[Any]:
    """The top-level S-expressions of ``text``; ``t`` and ``nil`` stay symbols."""
    _check_numerals(text)
    try:
        return sexpdata.parse(text, nil=None, true=None, false=None)
    except RecursionError:
        raise _Refusal("not valid S-expressions: nested too deeply") from None
    except (sexpdata.ExpectClosingBracket, sexpdata.ExpectNothing, sexpdata.ExpectSExp) as exc:
        detail = _shorten(_one_line(exc))  # ExpectNothing quotes the rest of the file
        raise _Refusal(f"not valid S-expressions (unbalanced parentheses): {detail}") from None
    except Exception:  # sexpdata fails with AttributeError/IndexError on these
        raise _Refusal("not valid S-expressions: unterminated string or stray backslash") from None


def _declarations(commands: list[Any]) -> tuple[dict[str, int], frozenset[str]]:
    """The inputs (name -> index, exactly X_0 .. X_{n-1}) and the output names declared."""
    inputs: dict[str, int] = {}
    outputs: set[str] = set()
    for command in commands:
        head = _head(command)
        if head == "assert":
            if len(command) != 2:
                raise _Refusal(f"expected (assert TERM): {_show(command)}")
        elif head in _IGNORED_COMMANDS:
            continue
        elif head != "declare-const":
            raise _Refusal(f"unsupported command: {_show(command)}")
        elif len(command) != 3 or not _is_symbol(command[1]) or not _is_symbol(command[2]):
            raise _Refusal(f"expected (declare-const NAME Real): {_show(command)}")
        else:
            variable, sort = str(command[1]), str(command[2])
            match = _VARIABLE.fullmatch(variable)
            if match is None:
                raise _Refusal(
                    f"unsupported declaration {_show(command)}: only inputs X_i and outputs Y_j"
                )
            if sort != "Real":
                raise _Refusal(f"{variable} is declared {sort}, not Real")
            if variable in inputs or variable in outputs:
                raise _Refusal(f"{variable} is declared twice")
            if match.group(1) == "X":
                inputs[variable] = int(match.group(2))
            else:
                outputs.add(variable)
    if not inputs:
        raise _Refusal("no inputs declared (expected (declare-const X_0 Real) ...)")
    missing = sorted(set(range(len(inputs))) - set(inputs.values()))
    if missing:
        raise _Refusal(
            f"inputs must be X_0, X_1, ... without gaps, but X_{missing[0]} is not declared "
            f"(X_{max(inputs.values())} is)"
        )
    return inputs, frozenset(outputs)


def _mentions_input(term: Any, inputs: dict[str, int], outputs: frozenset[str]) -> bool:
    """Whether ``term`` mentions an input; refuses undeclared variables and unknown atoms.

    A symbol at the head of a list is an operator unless it is spelt like a variable.
    """
    mentions = False
    stack: list[tuple[Any, bool]] = [(term, False)]
    while stack:
        node, is_head = stack.pop()
        if isinstance(node, list):
            stack.extend((child, i == 0) for i, child in enumerate(node))
        elif _is_symbol(node):
            variable = str(node)
            if variable in inputs:
                mentions = True
            elif variable in outputs or variable in _BOOLEANS:
                continue
            elif not is_head or _VARIABLE.fullmatch(variable):
                raise _Refusal(f"undeclared variable {variable} in {_show(term)}")
        elif not _is_number(node):
            raise _Refusal(f"unexpected atom {_show(node)} in {_show(term)}")
    return mentions


def _add_input_assertion(
    term: Any, inputs: dict[str, int], outputs: frozenset[str], bounds: _Bounds
) -> None:
    """Add the simple bounds of ``term`` (a conjunction of them) to ``bounds``."""
    for conjunct in _conjuncts(term):
        if not _mentions_input(conjunct, inputs, outputs):
            raise _Refusal(
                f"an output constraint in the same assert as input bounds is not supported: "
                f"{_show(conjunct)} in {_show(term)}"
            )
        for index, side, value, strict in _simple_bounds(conjunct, inputs):
            bounds.add(index, side, value, strict)


def _conjuncts(term: Any) -> list[Any]:
    """The conjuncts of ``term``: ``and`` flattened, one-branch ``or`` unwrapped, in order."""
    found: list[Any] = []
    stack = [term]
    while stack:
        node = stack.pop()
        head = _head(node)
        if head == "and":
            stack.extend(reversed(node[1:]))
        elif head == "or" and len(node) == 2:
            stack.append(node[1])
        elif head == "or":
            raise _Refusal(
                f"the input set is not a box: an or of {len(node) - 1} branches "
                f"(a union of boxes): {_show(node)}"
            )
        else:
            found.append(node)
    return found


def _simple_bounds(term: Any, inputs: dict[str, int]) -> list[tuple[int, str, float, bool]]:
    """``(index, "lower" | "upper", value, strict)`` for each bound in the comparison ``term``."""
    head = _head(term)
    if head not in _COMPARISONS or len(term) < 3:
        raise _Refusal(f"the input set is not a box: unsupported input constraint {_show(term)}")
    found: list[tuple[int, str, float, bool]] = []
    strict = head in ("<", ">")
    for left, right in zip(term[1:-1], term[2:]):
        left_index = inputs.get(str(left)) if _is_symbol(left) else None
        right_index = inputs.get(str(right)) if _is_symbol(right) else None
        if left_index is not None and (value := _number(right, term)) is not None:
            index, input_first = left_index, True
        elif right_index is not None and (value := _number(left, term)) is not None:
            index, input_first = right_index, False
        else:
            raise _Refusal(
                f"the input set is not a box: not a bound of one input by a number: {_show(term)}"
            )
        if head == "=":
            found += [(index, "lower", value, False), (index, "upper", value, False)]
            continue
        upper = (head in ("<=", "<")) == input_first
        found.append((index, "upper" if upper else "lower", value, strict))
    return found


def _number(node: Any, term: Any) -> float | None:
    """The value of a number literal, or of ``(- literal)``; None if ``node`` is no number."""
    sign = 1.0
    while isinstance(node, list) and len(node) == 2 and _head(node) == "-":
        sign, node = -sign, node[1]
    if not _is_number(node):
        return None
    try:
        value = sign * float(node)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise _Refusal(f"a bound is not a finite number (or overflows float64): {_show(term)}")
    return value


class _Bounds:
    """The intersection of the bounds seen so far, with the strictness of each."""

    def __init__(self, n_inputs: int) -> None:
        self.lower = [-math.inf] * n_inputs
        self.upper = [math.inf] * n_inputs
        self.lower_strict = [False] * n_inputs
        self.upper_strict = [False] * n_inputs

    def add(self, index: int, side: str, value: float, strict: bool) -> None:
        """Intersect with ``X_index >= value`` (side "lower") or ``X_index <= value``."""
        if side == "lower":
            if value > self.lower[index]:
                self.lower[index], self.lower_strict[index] = value, strict
            elif value == self.lower[index]:
                self.lower_strict[index] = self.lower_strict[index] or strict
        elif value < self.upper[index]:
            self.upper[index], self.upper_strict[index] = value, strict
        elif value == self.upper[index]:
            self.upper_strict[index] = self.upper_strict[index] or strict

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` as float64 arrays; refuses a missing bound or an empty box."""
        for i, (low, high) in enumerate(zip(self.lower, self.upper)):
            if low == -math.inf:
                raise _Refusal(f"X_{i} has no lower bound")
            if high == math.inf:
                raise _Refusal(f"X_{i} has no upper bound")
            strict = self.lower_strict[i] or self.upper_strict[i]
            if low > high or (low == high and strict):
                low_op = "<" if self.lower_strict[i] else "<="
                high_op = "<" if self.upper_strict[i] else "<="
                raise _Refusal(
                    f"the input box is empty: {low!r} {low_op} X_{i} {high_op} {high!r}"
                )
        return np.array(self.lower, dtype=np.float64), np.array(self.upper, dtype=np.float64)


def _head(node: Any) -> str | None:
    """The operator of a non-empty list whose first item is a symbol, else None."""
    if isinstance(node, list) and node and _is_symbol(node[0]):
        return str(node[0])
    return None


def _is_symbol(node: Any) -> bool:
    return isinstance(node, Symbol)


def _is_number(node: Any) -> bool:
    return isinstance(node, (int, float)) and not isinstance(node, bool)


def _show(term: Any) -> str:
    """``term`` as one line of S-expression text, shortened to :data:`MAX_TERM_CHARS`."""
    try:
        text = sexpdata.dumps(term)
    except Exception:  # only for a message
        text = repr(term)
    return _shorten(" ".join(text.split()))


def _shorten(text: str) -> str:
    """``text`` cut to :data:`MAX_TERM_CHARS`, ending in "..." if cut."""
    return text if len(text) <= MAX_TERM_CHARS else text[: MAX_TERM_CHARS - 3] + "..."


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
