"""The machine facts a plan depends on, gathered once and passed in (so plans are testable)."""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass

from lipopt.solvers.registry import ADAPTERS
from lipopt.workers import FORK_SOLVERS, available_cores


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
        more than the tasks or the cores, and 1 where ``solver`` cannot be forked here."""
        if workers is not None and workers <= 1:
            return 1
        if not (solver in FORK_SOLVERS and self.cores >= 2 and self.fork):
            return 1
        limit = self.cores if workers is None else min(workers, self.cores)
        return max(1, min(limit, tasks))


def facts_here(solvers: frozenset[str]) -> Facts:
    """This process's facts; of ``solvers``, those usable here."""
    usable = frozenset(name for name in solvers if ADAPTERS[name]().available())
    fork = "fork" in mp.get_all_start_methods() and not mp.current_process().daemon
    return Facts(available_cores(), fork, usable)
