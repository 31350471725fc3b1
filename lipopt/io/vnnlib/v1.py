"""VNN-LIB 1.0 files (the VNN-COMP format), read with :mod:`sexpdata`.

A 1.0 file is a list of SMT-LIB S-expressions (``;`` starts a comment that runs to the end of the
line)::

    (declare-const X_0 Real)
    (declare-const X_1 Real)
    (declare-const Y_0 Real)
    (assert (<= X_0 0.679857769))
    (assert (>= X_0 0.6))
    (assert (<= (+ X_0 (* -1 X_1)) 0.5))
    (assert (or (and (>= X_1 -0.5) (<= X_1 -0.45)) (and (>= X_1 0.45) (<= X_1 0.5))))
    (assert (or (and (>= Y_0 Y_1)) (and (>= Y_0 Y_2))))

The grammar of the commands::

    file    := command*
    command := (declare-const NAME Real) | (assert TERM)
             | (check-sat) | (get-model) | (set-logic ...) | (set-info ...) | (set-option ...)
             | (exit)                                       ; the last six are ignored

NAME is ``X_i`` (an input) or ``Y_j`` (an output); the inputs must be exactly ``X_0 .. X_{n-1}``
(at least one), each declared once, in any order. Every variable used must be declared. A number
is an integer or a decimal (scientific notation included), possibly negated as ``(- c)``, read
as the float64 it denotes. What an assert may say of the inputs is in
:mod:`lipopt.io.vnnlib.sets` and :mod:`lipopt.io.vnnlib.linear`; ``=`` is equality, and SMT-LIB's
chained comparisons (``(<= a X_0 b)``) are read pair by pair.
"""

from __future__ import annotations

import re
from typing import Any

import sexpdata
from sexpdata import Symbol

from lipopt.io.vnnlib.common import Node, Parsed, Refusal, one_line, shorten

_IGNORED_COMMANDS = frozenset(
    {"check-sat", "get-model", "set-logic", "set-info", "set-option", "exit"}
)
_VARIABLE = re.compile(r"([XY])_(0|[1-9][0-9]*)")
_BOOLEANS = frozenset({"true", "false"})
#: a numeral as VNN-LIB files write them: ASCII digits, an optional point and exponent
_NUMERAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def parse_v1(text: str, input_dim: int | None) -> Parsed:
    """The inputs and asserts of a 1.0 file's ``text``; ``input_dim``: the inputs it must have."""
    commands = _parse(text)
    inputs, outputs = _declarations(commands)
    if input_dim is not None and input_dim != len(inputs):
        raise Refusal(
            f"the file declares {len(inputs)} inputs (X_0 .. X_{len(inputs) - 1}) "
            f"but the network takes {input_dim}"
        )
    assertions = [
        _node(command[1], inputs, outputs, command[1])
        for command in commands
        if _head(command) == "assert"
    ]
    return Parsed(len(inputs), lambda i: f"X_{i}", assertions, "1.0")


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
        raise Refusal(f"{atom!r} is not a number as VNN-LIB writes one")


def _parse(text: str) -> list[Any]:
    """The top-level S-expressions of ``text``; ``t`` and ``nil`` stay symbols."""
    _check_numerals(text)
    try:
        return sexpdata.parse(text, nil=None, true=None, false=None)
    except RecursionError:
        raise Refusal("not valid S-expressions: nested too deeply") from None
    except (sexpdata.ExpectClosingBracket, sexpdata.ExpectNothing, sexpdata.ExpectSExp) as exc:
        detail = shorten(one_line(exc))  # ExpectNothing quotes the rest of the file
        raise Refusal(f"not valid S-expressions (unbalanced parentheses): {detail}") from None
    except Exception:  # sexpdata fails with AttributeError/IndexError on these
        raise Refusal("not valid S-expressions: unterminated string or stray backslash") from None


def _declarations(commands: list[Any]) -> tuple[dict[str, int], frozenset[str]]:
    """The inputs (name -> index, exactly X_0 .. X_{n-1}) and the output names declared."""
    inputs: dict[str, int] = {}
    outputs: set[str] = set()
    for command in commands:
        head = _head(command)
        if head == "assert":
            if len(command) != 2:
                raise Refusal(f"expected (assert TERM): {_show(command)}")
        elif head in _IGNORED_COMMANDS:
            continue
        elif head != "declare-const":
            raise Refusal(f"unsupported command: {_show(command)}")
        elif len(command) != 3 or not _is_symbol(command[1]) or not _is_symbol(command[2]):
            raise Refusal(f"expected (declare-const NAME Real): {_show(command)}")
        else:
            variable, sort = str(command[1]), str(command[2])
            match = _VARIABLE.fullmatch(variable)
            if match is None:
                raise Refusal(
                    f"unsupported declaration {_show(command)}: only inputs X_i and outputs Y_j"
                )
            if sort != "Real":
                raise Refusal(f"{variable} is declared {sort}, not Real")
            if variable in inputs or variable in outputs:
                raise Refusal(f"{variable} is declared twice")
            if match.group(1) == "X":
                inputs[variable] = int(match.group(2))
            else:
                outputs.add(variable)
    if not inputs:
        raise Refusal("no inputs declared (expected (declare-const X_0 Real) ...)")
    missing = sorted(set(range(len(inputs))) - set(inputs.values()))
    if missing:
        raise Refusal(
            f"inputs must be X_0, X_1, ... without gaps, but X_{missing[0]} is not declared "
            f"(X_{max(inputs.values())} is)"
        )
    return inputs, frozenset(outputs)


def _node(term: Any, inputs: dict[str, int], outputs: frozenset[str], top: Any) -> Node:
    """``term`` (a part of the assert ``top``) as a :class:`Node`; refuses undeclared variables
    and unknown atoms. A symbol at the head of a list is an operator unless it is spelt like a
    variable."""
    if isinstance(term, list):
        if term and _is_symbol(term[0]) and not _VARIABLE.fullmatch(str(term[0])):
            op, rest = str(term[0]), term[1:]
        else:  # an application of no operator, e.g. (X_0 1): unsupported where it matters
            op, rest = "(...)", term
        args = tuple(_node(item, inputs, outputs, top) for item in rest)
        return Node(op, args, source=term, render=_dumps)
    if _is_symbol(term):
        name = str(term)
        if name in inputs:
            return Node("input", index=inputs[name], source=term, render=_dumps)
        if name in outputs:
            return Node("output", source=term, render=_dumps)
        if name in _BOOLEANS:
            return Node("bool", source=term, render=_dumps)
        raise Refusal(f"undeclared variable {name} in {_show(top)}")
    if isinstance(term, (int, float)) and not isinstance(term, bool):
        return Node("num", value=term, source=term, render=_dumps)
    raise Refusal(f"unexpected atom {_show(term)} in {_show(top)}")


def _head(node: Any) -> str | None:
    """The operator of a non-empty list whose first item is a symbol, else None."""
    if isinstance(node, list) and node and _is_symbol(node[0]):
        return str(node[0])
    return None


def _is_symbol(node: Any) -> bool:
    return isinstance(node, Symbol)


def _dumps(term: Any) -> str:
    return str(sexpdata.dumps(term))


def _show(term: Any) -> str:
    """``term`` as one line of S-expression text, shortened."""
    return Node("term", source=term, render=_dumps).show()
