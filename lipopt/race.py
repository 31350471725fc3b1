"""Race the forward and the backward formulation of one problem on separate processes.

Both models are exact (:mod:`lipopt.formulation.tangent`, :mod:`lipopt.formulation.backward`),
but which one a solver finishes first varies from network to network by factors of several
(docs/performance.md). With two cores free, ``formulation="auto"`` therefore solves both at once,
each in its own process on its own core, and takes the first exact answer, stopping the other.
If neither finishes within the time limit, both answers are still certified: the result keeps
the smaller upper bound and the larger attained lower bound (with its witness). With
``split_leader`` (the default) the racers stop after :data:`LEADER_AFTER` seconds, and the caller
solves the leader again split in halves on both cores (:func:`lipopt.lipschitz._split_leader`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.solvers import SolverError
from lipopt.workers import GRACE, ForkedWorkers

#: seconds to give the probe (the backward model alone, in-process) before racing: most
#: problems finish within it and never pay for starting processes
RACE_AFTER = 5.0

#: ``split_leader``: seconds the two racers run before, if neither has finished, both stop and
#: the one with the smaller proven bound is solved again split in halves on both cores. After
#: 30 s the smaller bound was the eventual winner's on all eight two-hidden-layer networks of
#: one run (docs/performance.md; within a few percent it is a coin toss); a split saves a
#: quarter to a third of a long solve, so the 30 s spent again pay from solves of about 100 s on
LEADER_AFTER = 30.0

#: statuses with which a racer has done its job: proven optimal, or within the requested gap
FINISHED = ("optimal", "gap_limit")


def merge(results: list[Any]) -> Any:
    """One answer from several certified answers to the same problem: the smallest upper bound,
    the largest attained lower bound (and its witness); optimal when they meet."""
    # ties go to a finished (optimal or gap-limited) and certified answer
    best_upper = min(results, key=lambda r: (r.upper, r.status not in FINISHED))
    with_lower = [r for r in results if r.lower is not None]
    best_lower = max(with_lower, key=lambda r: (r.lower, r.exact_certified), default=None)
    if best_lower is None:
        return best_upper
    upper = max(best_upper.upper, best_lower.lower)
    closed = upper - best_lower.lower <= 1e-6 * max(1.0, abs(upper))
    status = "optimal" if closed else best_upper.status
    return replace(
        best_upper,
        value=upper,
        upper=upper,
        lower=best_lower.lower,
        witness=best_lower.witness,
        status=status,
        exact_certified=closed and best_lower.exact_certified,
    )


def race_answers(
    network: Network,
    domain: Domain,
    entries: dict[str, dict[str, Any]],
    time_limit: float | None,
) -> tuple[str | None, dict[str, Any]]:
    """Solve ``lipschitz(network, domain, **kwargs)`` for each named entry at once, one forked
    process each (:class:`~lipopt.workers.ForkedWorkers`). Returns ``(name, {name: result})``
    at the first finished answer (optimal, or within the requested gap), stopping the others,
    or ``(None, answers)`` with every racer's unfinished answer when none finished. A racer's
    error does not stop the others; if every racer failed, the first error is raised."""

    def solve(name: str) -> Any:
        from lipopt.lipschitz import lipschitz

        return replace(lipschitz(network, domain, **entries[name]), model=None)

    runner = ForkedWorkers(len(entries), solve)
    deadline = None if time_limit is None else time.perf_counter() + time_limit + GRACE
    answers: dict[str, Any] = {}
    errors: list[BaseException] = []
    try:
        for name in entries:
            runner.submit(name, name)
        while runner.busy():
            timeout = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
            outcome = runner.next_outcome(timeout)
            if outcome is None:  # the racers left overran the time limit
                break
            name, kind, payload = outcome
            if kind == "error":
                errors.append(payload)
            elif payload.status in FINISHED:
                return name, {name: payload}
            else:
                answers[name] = payload
    finally:
        runner.close()  # stops the racers still running
    if answers:
        return None, answers
    if errors:
        raise errors[0]
    raise SolverError("no racer answered within the time limit")


__all__ = ["FINISHED", "GRACE", "LEADER_AFTER", "RACE_AFTER", "merge", "race_answers"]
