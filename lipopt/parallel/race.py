"""Race the forward and the backward formulation of one problem on separate processes.

Both models are exact (:mod:`lipopt.formulation.tangent`, :mod:`lipopt.formulation.backward`),
but which one a solver finishes first varies from network to network by factors of several
(docs/performance.md). With two cores free, ``formulation="auto"`` therefore solves both at once,
each in its own process on its own core, and takes the first exact answer, stopping the other.
If neither finishes within the time limit, both answers are still certified: the result keeps
the smaller upper bound and the larger attained lower bound (with its witness). With
``split_leader`` (the default) the racers stop after :data:`~lipopt.policy.LEADER_AFTER`
seconds, or earlier once the proven bounds they report while solving show a clear leader
(:data:`~lipopt.policy.EARLY_LEADER_AFTER`, :data:`~lipopt.policy.DECISIVE_RATIO`), and the
caller solves the leader again split in halves on both cores (:mod:`lipopt.strategies.race`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from lipopt.bracket import FINISHED, meet
from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.parallel.workers import ForkedWorkers, shared_floats
from lipopt.solvers import NoBoundError

#: a racer's question (its keyword arguments, or a typed question the caller's ``run`` reads)
Entry = TypeVar("Entry")

#: one answer from several certified answers to the same question (:func:`lipopt.bracket.meet`)
merge = meet


#: seconds between two looks at the racers' reported bounds (how often, not a tuned threshold)
POLL_SECONDS = 1.0


class _Reports:
    """Per racer, two floats shared with its process: the proven bound its MIP reported last
    (``inf`` until it does), and a stop flag raised here."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.slots = shared_floats(2 * len(names))
        for k in range(len(names)):
            self.slots[2 * k] = math.inf

    def hook(self, name: str) -> Callable[[float, float], bool]:
        """The racer ``name``'s ``stop`` hook: records its bound, says whether to stop."""
        k, slots = 2 * self.names.index(name), self.slots

        def report(incumbent: float, bound: float) -> bool:
            slots[k] = bound
            return bool(slots[k + 1])

        return report

    def bounds(self) -> dict[str, float]:
        return {name: self.slots[2 * k] for k, name in enumerate(self.names)}

    def stop_all(self) -> None:
        for k in range(len(self.names)):
            self.slots[2 * k + 1] = 1.0


def race_answers(
    network: Network,
    domain: Domain,
    entries: dict[str, Entry],
    time_limit: float | None,
    stop_when: Callable[[float, dict[str, float]], bool] | None = None,
    *,
    run: Callable[[str, Entry, Callable[[float, float], bool]], Any],
    slack: float = 0.0,
) -> tuple[str | None, dict[str, Any]]:
    """Solve each named entry (a racer's question as :func:`lipopt.lipschitz`'s keywords over
    ``network`` and ``domain``) at once: ``run(name, entry, stop)`` in one forked process each
    (:class:`~lipopt.parallel.workers.ForkedWorkers`), ``stop`` the racer's hook (its MIPs report
    their
    proven bounds to it and learn whether to stop). Returns ``(name, {name: result})``
    at the first finished answer (optimal, or within the requested gap), stopping the others,
    or ``(None, answers)`` with every racer's unfinished answer when none finished. A racer's
    error does not stop the others; if every racer failed, the first error is raised.

    The racers' MIPs report their proven bounds while they solve; every
    :data:`POLL_SECONDS`, ``stop_when(seconds into the race, {name: bound})`` (``inf`` for
    a racer not yet reporting) may stop them all, each then answering with its bounds so far.

    The racers stop their own solves at their limits; racers still running ``slack`` seconds
    after ``time_limit`` (a stage that could not be interrupted) are stopped, and the answers
    already in are returned; with none, :class:`~lipopt.solvers.NoBoundError`."""
    reports = _Reports(list(entries))

    def solve(name: str) -> Any:
        return replace(run(name, entries[name], reports.hook(name)), model=None)

    start = time.perf_counter()
    runner = ForkedWorkers(len(entries), solve)
    deadline = None if time_limit is None else start + time_limit + slack
    answers: dict[str, Any] = {}
    errors: list[BaseException] = []
    stopping = stop_when is None
    try:
        for name in entries:
            runner.submit(name, name)
        while runner.busy():
            now = time.perf_counter()
            if deadline is not None and now >= deadline:  # the racers left overran the limit
                break
            timeout = None if deadline is None else deadline - now
            if not stopping:
                timeout = POLL_SECONDS if timeout is None else min(timeout, POLL_SECONDS)
            outcome = runner.next_outcome(timeout)
            if outcome is None:
                if not (stopping or stop_when is None) and stop_when(
                    time.perf_counter() - start, reports.bounds()
                ):
                    reports.stop_all()
                    stopping = True
                continue
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
    raise NoBoundError("no racer answered within the time limit")


__all__ = ["FINISHED", "merge", "race_answers"]
