"""What every strategy runs with besides its query and node: progress, policy and the runner.

The runner is how a strategy asks a sub-question (the race's racers and probe, the leader's
split, the region search's fallback, the parts of a domain split) without calling the public
facade: the driver passes itself in, so nothing imports upward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from lipopt.policy import Policy
from lipopt.progress import Say, silent

if TYPE_CHECKING:
    from lipopt.bracket import Bracket
    from lipopt.config import SolveConfig
    from lipopt.plan.nodes import Node
    from lipopt.query import Query

#: a racer's hook: called with (incumbent, proven bound) while its MIP solves; True to stop
StopHook = Callable[[float, float], bool]


class Runner(Protocol):
    """The driver, as the strategies see it."""

    def run(self, node: Node, query: Query, limit: float | None, ctx: Context) -> Bracket:
        """Run a planned node for at most ``limit`` seconds (None: no limit)."""
        ...

    def solve(self, query: Query, config: SolveConfig, ctx: Context) -> Bracket:
        """Plan and run ``query`` under ``config`` (a sub-question's: ``config.sub(...)``)."""
        ...


@dataclass(frozen=True)
class Context:
    """Attributes:
    say: progress sink (the caller's callback, or :func:`~lipopt.progress.silent`).
    policy: the thresholds of this call.
    runner: the driver (sub-questions).
    stop: in a racer's process, the hook its MIPs report their bounds to; None elsewhere.
    """

    say: Say
    policy: Policy
    runner: Runner
    stop: StopHook | None = None

    def quiet(self) -> Context:
        """The same context without progress lines (parts solved in other processes)."""
        return replace(self, say=silent)

    def racing(self, stop: StopHook | None) -> Context:
        """The context of a racer's process: its solves report to ``stop``."""
        return replace(self, stop=stop)
