"""The input set of a property, for both VNN-LIB versions: a box, a polytope, or a union.

An assert that mentions an input is an *input assert*; the others are *output assertions*,
counted and ignored. The grammar of an input assert::

    formula := constraint | (and formula+) | (or formula+)

with ``constraint`` as in :mod:`lipopt.io.vnnlib.linear`. ``and`` and ``or`` nest freely: each
input assert is brought to a disjunction of conjunctions of constraints (an ``or`` with one
branch is that branch), and all input asserts intersect, so the input set is the union of the
parts that one branch of every assert picks (at most :data:`MAX_PARTS`). Every comparison in an
input assert must mention an input: an output term there is refused, as are ``not``, ``!=``
and any other operator (their sets are not unions of polytopes that lipopt reads exactly).

In each part, a constraint on one input whose bound is a float64 number is a bound of the box
(``(<= X_0 1)``, ``(>= (* 2 X_0) 1)``: bounds on one input intersect); every other constraint is
a row of ``A x <= b``. Every input needs a lower and an upper bound in every part, so that every
part is bounded. A part is a :class:`~lipopt.domain.Box` without rows, else a
:class:`~lipopt.domain.Polytope`; two or more parts are a :class:`~lipopt.domain.Disjunction`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lipopt.domain import Box, Disjunction, DomainError, Polytope
from lipopt.io.vnnlib.common import COMPARISONS, Node, Parsed, Refusal, mentions_input
from lipopt.io.vnnlib.linear import Constraint, as_float, constraints

#: the most parts (or branches picked across the asserts) an input set may have
MAX_PARTS = 1024

#: a row of ``A x <= b``: coefficients by input, right-hand side, and the term it came from
Row = tuple[dict[int, float], float, Node]


@dataclass(frozen=True)
class Part:
    """One part of the input set: the box ``lower <= x <= upper`` and the rows ``A x <= b``."""

    lower: np.ndarray
    upper: np.ndarray
    rows: list[Row]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A, b)`` of the rows, float64."""
        a = np.zeros((len(self.rows), self.lower.size))
        for k, (coeffs, _, _) in enumerate(self.rows):
            for index, coeff in coeffs.items():
                a[k, index] = coeff
        return a, np.array([rhs for _, rhs, _ in self.rows], dtype=np.float64)


def input_parts(parsed: Parsed) -> tuple[list[Part], int]:
    """The parts of the input set and the number of output assertions."""
    common: list[Node] = []
    choices: list[list[list[Node]]] = []
    outputs = 0
    for node in parsed.assertions:
        if not mentions_input(node):
            outputs += 1
            continue
        branches = _branches(node, node)
        if len(branches) == 1:
            common.extend(branches[0])
        else:
            choices.append(branches)
    combos: list[list[Node]] = [[]]
    for branches in choices:
        if len(combos) * len(branches) > MAX_PARTS:
            raise Refusal(f"the input set is a union of more than {MAX_PARTS} parts")
        combos = [combo + branch for combo in combos for branch in branches]
    read: dict[int, list[Constraint]] = {}
    parts = []
    for k, combo in enumerate(combos):
        bounds = _Bounds(parsed.n_inputs, parsed.input_name)
        for node in common + combo:
            if id(node) not in read:
                read[id(node)] = constraints(node)
            for constraint in read[id(node)]:
                bounds.add(constraint)
        parts.append(bounds.part(_label(k, len(combos))))
    return parts, outputs


def domain_of(parts: list[Part]) -> Box | Polytope | Disjunction:
    """The domain of the parts: a box, a polytope, or the union of several."""
    built: list[Box | Polytope] = []
    for k, part in enumerate(parts):
        try:
            if part.rows:
                built.append(Polytope(*part.arrays(), part.lower, part.upper))
            else:
                built.append(Box(part.lower, part.upper))
        except DomainError as exc:
            raise Refusal(f"{_label(k, len(parts))}{exc}") from None
    return built[0] if len(built) == 1 else Disjunction(tuple(built))


def _label(k: int, count: int) -> str:
    """How a message names part ``k`` (nothing when there is one)."""
    return f"part {k + 1} of {count} (or branches): " if count > 1 else ""


def _branches(node: Node, term: Node) -> list[list[Node]]:
    """``node`` (a formula of the assert ``term``) as a list of conjunctions of comparisons."""
    if node.op == "and":
        combos: list[list[Node]] = [[]]
        for arg in node.args:
            branches = _branches(arg, term)
            if len(combos) * len(branches) > MAX_PARTS:
                raise Refusal(f"the input set is a union of more than {MAX_PARTS} parts")
            combos = [combo + branch for combo in combos for branch in branches]
        return combos
    if node.op == "or" and node.args:
        found = [branch for arg in node.args for branch in _branches(arg, term)]
        if len(found) > MAX_PARTS:
            raise Refusal(f"the input set is a union of more than {MAX_PARTS} parts")
        return found
    if node.op not in COMPARISONS:
        where = "" if node is term else f" in {term.show()}"
        raise Refusal(f"unsupported input constraint {node.show()}{where}")
    if not mentions_input(node):
        raise Refusal(
            f"an output constraint in the same assert as input constraints is not supported: "
            f"{node.show()} in {term.show()}"
        )
    return [[node]]


class _Bounds:
    """The bounds and rows of one part seen so far, with the strictness of each bound."""

    def __init__(self, n_inputs: int, name: Callable[[int], str]) -> None:
        self.name = name
        self.lower = [-math.inf] * n_inputs
        self.upper = [math.inf] * n_inputs
        self.lower_strict = [False] * n_inputs
        self.upper_strict = [False] * n_inputs
        self.rows: list[Row] = []

    def add(self, constraint: Constraint) -> None:
        """Intersect with the constraint: a bound of one input where it is one, else a row."""
        coeffs, rhs, strict = constraint.coeffs, constraint.rhs, constraint.strict
        if not coeffs:
            if rhs < 0 or (strict and rhs == 0):
                raise Refusal(f"the input set is empty: {constraint.node.show()} never holds")
            return
        if len(coeffs) == 1:
            ((index, coeff),) = coeffs.items()
            value = as_float(rhs / coeff)
            if value is not None:
                self._bound(index, "upper" if coeff > 0 else "lower", value, strict)
                return
        exact = {i: as_float(c) for i, c in coeffs.items()}
        bound = as_float(rhs)
        row = {i: c for i, c in exact.items() if c is not None}
        if bound is None or len(row) < len(exact):
            raise Refusal(
                "a coefficient or bound of the input constraint is no float64 number once its "
                f"terms are moved to one side (write it with float64 numbers): "
                f"{constraint.node.show()}"
            )
        self.rows.append((row, bound, constraint.node))

    def _bound(self, index: int, side: str, value: float, strict: bool) -> None:
        """Intersect with ``x_index >= value`` (side "lower") or ``x_index <= value``."""
        if side == "lower":
            if value > self.lower[index]:
                self.lower[index], self.lower_strict[index] = value, strict
            elif value == self.lower[index]:
                self.lower_strict[index] = self.lower_strict[index] or strict
        elif value < self.upper[index]:
            self.upper[index], self.upper_strict[index] = value, strict
        elif value == self.upper[index]:
            self.upper_strict[index] = self.upper_strict[index] or strict

    def part(self, label: str) -> Part:
        """The part; refuses a missing bound or an empty box (``label`` names the part)."""
        for i, (low, high) in enumerate(zip(self.lower, self.upper)):
            if low == -math.inf:
                raise Refusal(f"{label}{self.name(i)} has no lower bound")
            if high == math.inf:
                raise Refusal(f"{label}{self.name(i)} has no upper bound")
            strict = self.lower_strict[i] or self.upper_strict[i]
            if low > high or (low == high and strict):
                low_op = "<" if self.lower_strict[i] else "<="
                high_op = "<" if self.upper_strict[i] else "<="
                raise Refusal(
                    f"{label}the input box is empty: "
                    f"{low!r} {low_op} {self.name(i)} {high_op} {high!r}"
                )
        lower = np.array(self.lower, dtype=np.float64)
        upper = np.array(self.upper, dtype=np.float64)
        lower.setflags(write=False)
        upper.setflags(write=False)
        return Part(lower, upper, self.rows)
