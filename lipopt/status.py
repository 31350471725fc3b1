"""How an answer ended: the one declaration of every status, with what each means.

* :class:`Status` — the status of an answer of :func:`lipopt.lipschitz`
  (:attr:`lipopt.bracket.Bracket.status`, :attr:`lipopt.LipschitzResult.status`);
* :class:`Unsolved` — the two statuses a result carries where no solve answered: a certify
  constant left unsolved once the total time limit was spent, a batch query that failed.

The solvers' own ``Termination`` (why one MIP stopped: infeasible and error among them) stays
with the adapters (:mod:`lipopt.solvers.base`), which map it onto :class:`Status`.

The tables read these: the summary's verdicts and the exit statuses (:mod:`lipopt.cli`), the
report's order (:mod:`lipopt.batch.report`), the JSON keys' table (:mod:`lipopt.schema`) and the
docs' tables (``docs/regen_cli_help.py``; ``tests/test_status.py`` checks them all).

Each member prints, formats and writes to JSON as its value (``f"{Status.OPTIMAL}"`` is
``optimal``), and equals it: ``res.status == "optimal"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class _Text(str, Enum):
    """A str enum that prints and formats as its value (Python 3.11's ``format`` of a mixed-in
    enum gives ``Status.OPTIMAL``; this keeps every text output as it was with strings)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


@dataclass(frozen=True)
class Facts:
    """What one status means.

    Attributes:
        meaning: one line: how the solve ended.
        verdict: the words after it in ``lipopt solve``'s ``value`` line (statuses of answers).
        finished: the solve finished (optimal, or within the requested gap): a race stops there.
        exit_code: the exit status of ``lipopt solve`` / ``certify`` / ``batch`` with it.
        ended: docs/cli.md's "how the solve ended".
        answer: docs/cli.md's "what ``value`` (= ``upper``) and ``lower`` are".
    """

    meaning: str
    verdict: str = ""
    finished: bool = False
    exit_code: int = 0
    ended: str = ""
    answer: str = ""


class Status(_Text):
    """How an answer of :func:`lipopt.lipschitz` ended (in the order the tables list them)."""

    OPTIMAL = "optimal"
    UPPER_BOUND = "upper_bound"
    GAP_LIMIT = "gap_limit"
    TIME_LIMIT = "time_limit"
    RELAXATION = "relaxation"
    SOLVER_ERROR = "solver_error"
    INTERRUPTED = "interrupted"

    @property
    def facts(self) -> Facts:
        """What this status means (:data:`FACTS`)."""
        return FACTS[self]


class Unsolved(_Text):
    """The status of a result where no solve answered (never that of a ``LipschitzResult``)."""

    FAILED = "failed"
    TOTAL_TIME_LIMIT = "total_time_limit"

    @property
    def facts(self) -> Facts:
        """What this status means (:data:`FACTS`)."""
        return FACTS[self]


_UPPER_BOUND_ENDED = (
    "the solvers finished, but their optimum was not shown to be attained: it sits on a kink "
    "shared by several neurons (the network is not in general position there, "
    "[getting started](getting-started.md#networks-not-in-general-position)) and the re-solves "
    "that exclude such kinks stopped first (`max_refinements`, or the time limit)"
)
_SOLVER_ERROR_ENDED = (
    "the solver failed: a licence refusal, a crash, numerical trouble (a sound model called "
    "infeasible), a worker process that died. `message` gives the solver's reason on one line "
    "and, for an explicit `--solver`, the installed solvers that could take over"
)

#: every status with what it means; the summary's verdict of ``interrupted`` is the status
#: itself, as it always printed
FACTS: dict[Status | Unsolved, Facts] = {
    Status.OPTIMAL: Facts(
        "the value is proven to be the constant",
        "exact",
        finished=True,
        ended="the value is proven to be the constant: the MIP was solved to optimality (gaps "
        "1e-9), the region search visited or discarded every activation pattern, or proven "
        "bounds met; and `lower` meets `value` (1e-6 relative, absolute below 1) at a `witness` "
        "inside a full-dimensional linear region",
        answer="the exact constant (`exact_certified` is true)",
    ),
    Status.UPPER_BOUND: Facts(
        "the solvers finished, but their optimum was not shown to be attained",
        "not proven exact: the constant is in [lower, value]",
        ended=_UPPER_BOUND_ENDED,
        answer="a proven upper bound, and a value attained at `witness`; the constant is in "
        "between; `message` says why",
    ),
    Status.GAP_LIMIT: Facts(
        "stopped within the requested gap",
        "stopped at the gap limit: bounds only",
        finished=True,
        ended="`--gap` / `gap=` was given and the solver stopped within it, a gap left open (a "
        "gap closed to 0 is `optimal`)",
        answer="an upper bound, and an attained value within the gap of it",
    ),
    Status.TIME_LIMIT: Facts(
        "stopped at the time limit before the bounds met",
        "stopped at the time limit: bounds only",
        ended="stopped by `--time-limit`: the solver's limit, a step that would not fit in the "
        "time left (a model too large to build in it), or the limit reached before the solver "
        "proved any bound",
        answer="the best upper bound proven by then (at worst bound propagation's); `lower` "
        "attained at `witness`",
    ),
    Status.RELAXATION: Facts(
        "the LP relaxation was solved instead of the MIP",
        "LP relaxation: upper bound only",
        ended="`--mode lp`: the LP relaxation (LipLP) was solved instead of the MIP",
        answer="an upper bound only, usually loose",
    ),
    Status.SOLVER_ERROR: Facts(
        "the solver failed; the bounds are those proven before it",
        "the solver failed: bounds proven before it",
        exit_code=3,
        ended=_SOLVER_ERROR_ENDED,
        answer="the bounds proven before the failure, never relabelled (at worst bound "
        "propagation's); `lower` attained at `witness`",
    ),
    Status.INTERRUPTED: Facts(
        "stopped on request before a proof",
        "interrupted",
        ended="the solve was stopped before a proof on request: a racer stopped once the other's "
        "proven bound led clearly, or a solver that stopped itself at an objective or solution "
        "limit",
        answer="an upper bound; `lower` may be far below",
    ),
    Unsolved.FAILED: Facts(
        "a batch query that could not be answered (it raised, or its worker died): the line "
        "carries `error` instead of numbers",
        exit_code=3,
    ),
    Unsolved.TOTAL_TIME_LIMIT: Facts(
        "a certify constant left unsolved once the total time limit was spent: bounded by "
        "interval bounds, a proven upper bound",
    ),
}


def facts_of(status: str) -> Facts | None:
    """The facts of ``status`` (a member or its value), or None for a status of neither enum."""
    by_value = {str(member): facts for member, facts in FACTS.items()}
    return by_value.get(str(status))


def exit_code(statuses: Iterable[str]) -> int:
    """The exit status of a command whose answers ended in ``statuses``: the largest of theirs
    (0 for none, and for a status of neither enum)."""
    codes = [facts.exit_code for facts in map(facts_of, statuses) if facts is not None]
    return max(codes, default=0)


def listed(statuses: Iterable[str]) -> str:
    """``statuses`` as docs list them: ```optimal`, `upper_bound` or `gap_limit```."""
    names = [f"`{s}`" for s in statuses]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
