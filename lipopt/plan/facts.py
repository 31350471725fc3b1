"""The machine facts a plan depends on, gathered once and passed in (so plans are testable)."""

from __future__ import annotations

from dataclasses import dataclass

from lipopt.parallel.workers import available_cores, may_fork, process_count
from lipopt.solvers.registry import is_usable


@dataclass(frozen=True)
class Facts:
    """Attributes:
    cores: cores this process may run on.
    fork: this process may fork children (POSIX, not a daemonic worker).
    solvers: the solver adapters usable here (of those a plan may pick by itself).
    """

    cores: int
    fork: bool
    solvers: frozenset[str]

    def processes(self, solver: str, workers: int | None, tasks: int) -> int:
        """Processes for ``tasks`` independent solves: ``workers`` (None: every core), never
        more than the tasks or the cores, and 1 where ``solver`` cannot be forked here
        (the rule of :func:`~lipopt.parallel.workers.worker_count`, which the pieces follow at run
        time)."""
        return process_count(solver, workers, tasks, self.cores, self.fork)


def facts_here(solvers: frozenset[str]) -> Facts:
    """This process's facts; of ``solvers``, those usable here."""
    usable = frozenset(name for name in solvers if is_usable(name))
    return Facts(available_cores(), may_fork(), usable)
