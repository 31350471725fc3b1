"""Linear forms of the inputs, computed exactly, for both VNN-LIB versions.

The grammar of an input constraint (a comparison whose terms mention an input)::

    constraint := (OP term term+)        OP: <=  >=  <  >  =   (pairwise when chained)
    term       := number | input | (- term) | (- term term+) | (+ term+) | (* term+)

A product may have at most one factor that mentions an input (``(* 2.0 X_0)``, not
``(* X_0 X_1)``). A number is the float64 value of the file's numeral, as the box has always
been read; sums and products of them are then computed exactly (in rationals), so a constraint
is the one the file writes. Strict comparisons give the closed set (the Lipschitz constant is
taken over the interior). ``=`` is kept only between one input and a number (both bounds): an
equality of linear forms of two or more inputs is a flat set, refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from lipopt.io.vnnlib.common import COMPARISONS, Node, Refusal

#: a linear form: coefficient of each input (by flat index; no zero entries) and a constant
Form = tuple[dict[int, Fraction], Fraction]


@dataclass(frozen=True)
class Constraint:
    """``sum_i coeffs[i] x_i <= rhs`` (``<`` when ``strict``), read from ``node``."""

    coeffs: dict[int, Fraction]
    rhs: Fraction
    strict: bool
    node: Node


def constraints(node: Node) -> list[Constraint]:
    """The constraints of the comparison ``node`` (two for ``=``; a chain pair by pair)."""
    if node.op not in COMPARISONS or len(node.args) < 2:
        raise Refusal(f"unsupported input constraint {node.show()}")
    strict = node.op in ("<", ">")
    found: list[Constraint] = []
    forms = [form(arg, node) for arg in node.args]
    for left, right in zip(forms, forms[1:]):
        less = _minus(left, right)  # left - right, compared with 0
        coeffs, rhs = less[0], -less[1]
        negated = {i: -c for i, c in coeffs.items()}
        if node.op == "=" and len(coeffs) > 1:
            raise Refusal(
                f"an equality of linear forms of {len(coeffs)} inputs makes a flat input set "
                f"(no interior): {node.show()}"
            )
        if node.op in ("<=", "<", "="):
            found.append(Constraint(coeffs, rhs, strict, node))
        if node.op in (">=", ">", "="):
            found.append(Constraint(negated, -rhs, strict, node))
    return found


def form(node: Node, term: Node) -> Form:
    """The linear form of the arithmetic term ``node`` (a part of the constraint ``term``)."""
    if node.op == "num":
        return {}, number(node, term)
    if node.op == "input":
        return {node.index: Fraction(1)}, Fraction(0)
    if node.op == "output":
        raise Refusal(
            f"an input constraint must not mention an output ({node.show()}): {term.show()}"
        )
    if node.op not in ("+", "-", "*") or not node.args:
        raise Refusal(f"unsupported term {node.show()} in the input constraint {term.show()}")
    forms = [form(arg, term) for arg in node.args]
    if node.op == "+":
        return _sum(forms)
    if node.op == "-":
        if len(forms) == 1:
            return _scale(forms[0], Fraction(-1))
        return _sum([forms[0], *(_scale(f, Fraction(-1)) for f in forms[1:])])
    variable = [arg for arg, f in zip(node.args, forms) if f[0]]
    if len(variable) > 1:
        raise Refusal(
            f"a non-linear term (a product of inputs) {node.show()} in {term.show()}: "
            "lipopt reads linear input constraints"
        )
    factor = math.prod((f[1] for f in forms if not f[0]), start=Fraction(1))
    base = next((f for f in forms if f[0]), ({}, Fraction(1)))
    return _scale(base, factor)


def number(node: Node, term: Node) -> Fraction:
    """The exact value of a number node (the float64 its numeral denotes); refuses infinities."""
    try:
        value = float(node.value)  # type: ignore[arg-type]
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise Refusal(f"a bound is not a finite number (or overflows float64): {term.show()}")
    return Fraction(value)


def as_float(value: Fraction) -> float | None:
    """``value`` as a float64 if it is exactly one, else None."""
    try:
        exact = float(value)
    except OverflowError:
        return None
    return exact if math.isfinite(exact) and Fraction(exact) == value else None


def _sum(forms: list[Form]) -> Form:
    coeffs: dict[int, Fraction] = {}
    constant = Fraction(0)
    for terms, const in forms:
        constant += const
        for index, coeff in terms.items():
            coeffs[index] = coeffs.get(index, Fraction(0)) + coeff
    return {i: c for i, c in coeffs.items() if c != 0}, constant


def _scale(f: Form, factor: Fraction) -> Form:
    if factor == 0:
        return {}, Fraction(0)
    return {i: c * factor for i, c in f[0].items()}, f[1] * factor


def _minus(left: Form, right: Form) -> Form:
    return _sum([left, _scale(right, Fraction(-1))])
