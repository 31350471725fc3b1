"""A strategy's answer: a proven upper bound and an attained lower bound, with how it was found.

Two ways the strategies combine answers:

* **meet** — several certificates of the *same* question (the race's racers, the probe, the
  leader's split): the smallest proven upper bound and the largest attained lower bound
  (:func:`meet`);
* **union** — a cover of the question by parts whose largest maximum is the answer (the domain
  split's parts, the ℓ1 candidates, the halves of a split): the largest part bound, the best
  witness (:class:`lipopt.strategies.pieces.Pieces`, :mod:`lipopt.search.split`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from lipopt.status import Status
from lipopt.verify import EXACT_TOLERANCE

if TYPE_CHECKING:
    from lipopt.formulation import LipschitzModel

FloatArray = NDArray[np.float64]

#: statuses of an answer that finished: optimal, or within the requested gap
FINISHED = tuple(status for status in Status if status.facts.finished)


@dataclass(frozen=True)
class Bracket:
    """What one strategy proved about ``L``: ``lower <= L <= upper``.

    Attributes:
        upper: proven upper bound.
        lower: a value attained at ``witness`` (recomputed in numpy), or None.
        witness: the input where ``lower`` is attained.
        status: how it ended (:class:`~lipopt.status.Status`; a status's value is converted).
        exact_certified: ``upper`` is attained on a full-dimensional region
            (:func:`lipopt.heuristics.witness.attains`).
        model_stats, timings, solver, nodes, refinements, message: as in
            :class:`lipopt.LipschitzResult`.
        model: the Pyomo model solved (None where it lives in another process).
    """

    upper: float
    lower: float | None
    witness: FloatArray | None
    status: Status
    exact_certified: bool
    model_stats: dict[str, int]
    timings: dict[str, float]
    solver: str
    nodes: int | None = None
    refinements: int = 0
    message: str = ""
    model: LipschitzModel | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))  # "optimal" -> Status.OPTIMAL

    @property
    def value(self) -> float:
        """The proven upper bound (as :attr:`lipopt.LipschitzResult.value`)."""
        return self.upper

    @property
    def gap(self) -> float | None:
        if self.lower is None:
            return None
        return max(self.upper - self.lower, 0.0) / max(abs(self.upper), 1e-12)


def closed(upper: float, lower: float | None) -> bool:
    """An upper bound and an attained value meet: within
    :data:`~lipopt.verify.EXACT_TOLERANCE` relative (absolute below 1)."""
    return lower is not None and abs(upper - lower) <= EXACT_TOLERANCE * max(1.0, abs(upper))


def contradicts(upper: float, lower: float) -> bool:
    """A proven upper bound below an attained value by more than the solvers' tolerances (twice
    :data:`~lipopt.verify.EXACT_TOLERANCE`, relative): the bound is wrong, not just rounded."""
    return lower - upper > 2 * EXACT_TOLERANCE * max(1.0, abs(lower))


def wrong_bound(solver: str, upper: float, lower: float) -> str:
    """The one-line reason of a bound that an attained value contradicts."""
    return (
        f"{solver or 'the solver'} proved the bound {upper:.10g}, but {lower:.10g} is attained at "
        "the witness: numerical trouble in the solver, so its bounds are not used (try another "
        "solver)"
    )


@dataclass(frozen=True)
class Settled:
    """Several proven upper bounds of one question met with the best value attained for it.

    Attributes:
        trusted: the indices of the bounds the attained value does not :func:`contradicts`
            (such a bound is wrong, not rounded, and takes no part); every index where every
            bound is contradicted.
        sound: whether any bound is trusted.
        upper: the least trusted bound, raised to the attained value (within the tolerance).
        met: sound, and ``upper`` is :func:`closed` on the attained value.
    """

    trusted: tuple[int, ...]
    sound: bool
    upper: float
    met: bool


def settle(uppers: list[float], lower: float | None) -> Settled:
    """The rule every meet of certificates applies (:class:`Settled`): ``lower`` attained, so the
    constant is at least ``lower``; an upper bound below it by more than the tolerance is wrong."""
    trusted = tuple(i for i, u in enumerate(uppers) if lower is None or not contradicts(u, lower))
    sound = bool(trusted)
    kept = trusted if sound else tuple(range(len(uppers)))
    upper = min(uppers[i] for i in kept)
    if lower is not None:
        upper = max(upper, lower)
    return Settled(kept, sound, upper, sound and closed(upper, lower))


def meet(results: list[Any]) -> Any:
    """One answer from several certified answers to the same question: the smallest upper bound,
    the largest attained lower bound (and its witness); optimal when they meet (:func:`settle`)."""
    # ties go to a finished (optimal or gap-limited) and certified answer
    with_lower = [r for r in results if r.lower is not None]
    best_lower = max(with_lower, key=lambda r: (r.lower, r.exact_certified), default=None)
    settled = settle([r.upper for r in results], None if best_lower is None else best_lower.lower)
    kept = [results[i] for i in settled.trusted]
    best_upper = min(kept, key=lambda r: (r.upper, r.status not in FINISHED))
    if best_lower is None:
        return best_upper
    sound, met = settled.sound, settled.met
    changes = dict(
        upper=settled.upper,
        lower=best_lower.lower,
        witness=best_lower.witness,
        status=Status.OPTIMAL if met else best_upper.status if sound else Status.SOLVER_ERROR,
        exact_certified=met and best_lower.exact_certified,
    )
    if not sound:  # every bound is below the attained value: none can be trusted
        changes["message"] = wrong_bound(best_upper.solver, best_upper.upper, best_lower.lower)
    if "value" in {f.name for f in fields(best_upper)}:  # a LipschitzResult: value = upper
        changes["value"] = settled.upper
    return replace(best_upper, **changes)


def noted(bracket: Bracket, timings: dict[str, float], note: str, say: Any) -> Bracket:
    """``bracket`` with the whole step's ``timings`` and ``note`` (said, and added to its
    message), without a model (that of a racer or of a split stays in its process)."""
    say(note)
    message = f"{bracket.message}; {note}" if bracket.message else note
    return replace(bracket, timings=timings, message=message, model=None)


def add_timings(into: dict[str, float], more: dict[str, float]) -> dict[str, float]:
    """``into`` with each stage of ``more`` added (a new dict)."""
    merged = dict(into)
    for key, value in more.items():
        merged[key] = merged.get(key, 0.0) + value
    return merged


#: what an answer that did not finish means, where no strategy left a note of its own
STATUS_NOTES = {
    Status.TIME_LIMIT: "stopped at the time limit before the bounds met",
    Status.INTERRUPTED: "interrupted before the bounds met",
}


def status_note(bracket: Bracket) -> str:
    """A one-line note for an unfinished answer that came without one: why it stopped and the
    interval the constant is proven to lie in (empty for an exact answer)."""
    why = STATUS_NOTES.get(bracket.status)
    if why is None:
        return ""
    if bracket.lower is None:
        return f"{why}: the constant is at most {bracket.upper:.6g} (no attained value)"
    return f"{why}: the constant is in [{bracket.lower:.6g}, {bracket.upper:.6g}]"
