"""CBC's printed output read back: the ``Result - ...`` summary it prints after a MIP run,
numbers as printed (the largest value each may stand for), Pyomo's reading of the solution file
(an LP has no summary) and the largest bound a stop on the gaps allows. The facts these rest on
are listed in :mod:`lipopt.solvers.cbc`.

A printed number ``p`` whose last digit is at ``10^e`` stands for a value at most
``p + 0.5·10^e`` (:func:`printed_upper`); a stop on ``ratioGap = r`` and ``allowableGap = a`` at
the incumbent ``v >= 0`` leaves the bound at most ``max(v + a, v / (1 - r))``
(:func:`gap_stop_bound`).
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass
from typing import Any

from lipopt.solvers.base import EXACT_GAP, SolveOptions, Termination

#: the ``Result - ...`` line of CBC's MIP summary -> why it stopped
STATUS_MAP: dict[str, Termination] = {
    "Optimal solution found": Termination.OPTIMAL,
    "Optimal solution found (within gap tolerance)": Termination.GAP_LIMIT,
    "Stopped on time limit": Termination.TIME_LIMIT,
    "Stopped on iterations limit": Termination.TIME_LIMIT,
    "Stopped on node limit": Termination.TIME_LIMIT,
    "Stopped on solution limit": Termination.INTERRUPTED,
    "Stopped on user ctrl-c": Termination.INTERRUPTED,
    "Stopped on ctrl-c": Termination.INTERRUPTED,
    "User ctrl-c": Termination.INTERRUPTED,
    "Linear relaxation infeasible": Termination.INFEASIBLE,
    "Problem proven infeasible": Termination.INFEASIBLE,
    "Linear relaxation unbounded": Termination.ERROR,
    "Run abandoned": Termination.ERROR,
    "Stopped on difficulties": Termination.ERROR,
}

#: relative rounding of CBC's ``%g`` (6 significant digits) numbers: half a unit in the last place
PRINT_ROUNDING = 5e-6

#: CBC's stand-in for "no solution" (it prints 1e+50 as the objective)
NO_SOLUTION = 1e40

_RESULT = re.compile(r"^Result - (.+?)\s*$", re.MULTILINE)
_UPPER = re.compile(r"^Upper bound:\s+(\S+)", re.MULTILINE)
_NODES = re.compile(r"^Enumerated nodes:\s+(\d+)", re.MULTILINE)
_OBJECTIVE = re.compile(r"^Objective value:\s+(\S+)", re.MULTILINE)
_LP_OBJECTIVE = re.compile(r"^Optimal objective\s+(\S+)", re.MULTILINE)
_NONE = re.compile(r"^No feasible solution found", re.MULTILINE)


def printed_upper(text: str) -> float | None:
    """The largest number that prints as ``text`` (CBC rounds to its last printed digit): the
    value plus half a unit in that digit, plus a few float ulps; None if not a finite number."""
    value = _float(text)
    if value is None:
        return None
    try:
        exponent = decimal.Decimal(text).as_tuple().exponent
    except decimal.InvalidOperation:
        return None
    if not isinstance(exponent, int):
        return None
    upper = value + 0.5 * 10.0**exponent
    return upper + 4 * math.ulp(upper)


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Summary:
    """What CBC's end-of-MIP summary says (every field None/False when the log has none).

    Attributes:
        result: the text after ``Result - `` (a key of :data:`STATUS_MAP`).
        has_solution: an integer-feasible point was found (``Objective value:`` line).
        upper: the printed upper bound on the maximum (``Upper bound:``, 6 digits).
        nodes: ``Enumerated nodes:``.
        objective_upper: the largest value the printed ``Objective value:`` may stand for.
    """

    result: str | None = None
    has_solution: bool = False
    upper: float | None = None
    nodes: int | None = None
    objective_upper: float | None = None


def parse_summary(log: str) -> Summary:
    """Read the ``Result - ...`` block CBC prints after a MIP run (absent for an LP, or when the
    time limit stopped the root LP)."""
    results = _RESULT.findall(log)
    if not results:
        return Summary()
    tail = log[log.rfind("Result - ") :]
    upper = _UPPER.findall(tail)
    nodes = _NODES.findall(tail)
    objective = _OBJECTIVE.findall(tail)
    value = _float(objective[-1]) if objective else None
    return Summary(
        result=results[-1],
        has_solution=value is not None and abs(value) < NO_SOLUTION and not _NONE.search(tail),
        upper=_float(upper[-1]) if upper else None,
        nodes=int(nodes[-1]) if nodes else None,
        objective_upper=printed_upper(objective[-1]) if objective else None,
    )


def _classic_status_map() -> dict[Any, Termination]:
    """Pyomo's reading of CBC's solution file -> why it stopped (used when there is no summary,
    e.g. for an LP)."""
    from pyomo.opt import TerminationCondition as TC

    return {
        TC.optimal: Termination.OPTIMAL,
        TC.maxTimeLimit: Termination.TIME_LIMIT,
        TC.maxIterations: Termination.TIME_LIMIT,
        TC.maxEvaluations: Termination.TIME_LIMIT,
        TC.intermediateNonInteger: Termination.TIME_LIMIT,
        TC.infeasible: Termination.INFEASIBLE,
        TC.infeasibleOrUnbounded: Termination.INFEASIBLE,
        TC.userInterrupt: Termination.INTERRUPTED,
        TC.solverFailure: Termination.ERROR,
        TC.error: Termination.ERROR,
    }


def gap_stop_bound(incumbent: float, options: SolveOptions) -> float:
    """The largest bound CBC can hold when it stops on the gaps of ``options`` (see module doc)."""
    absolute = incumbent + options.abs_gap
    if options.rel_gap >= 1:
        return math.inf
    keep = 1 - options.rel_gap
    relative = incumbent / keep if incumbent >= 0 else incumbent * keep
    return max(absolute, relative, incumbent)


def _optimal_or_gap(termination: Termination, options: SolveOptions) -> Termination:
    """A stop "within gap tolerance" at the exact gaps is optimality; any other stop stays.

    ("Optimal solution found" is a full proof: the gaps stop CBC but never prune.)
    """
    if termination is Termination.GAP_LIMIT and options.rel_gap <= EXACT_GAP:
        return Termination.OPTIMAL
    return termination
