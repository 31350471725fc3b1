"""The question a race answers, as its probe, racers and the solves after or instead of it
share (:mod:`lipopt.strategies.race`): each racer's configuration, read as keywords, and the
rule that puts the activation branch and bound in the race's place."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lipopt.bracket import Bracket
from lipopt.config import LEVER_DEFAULTS, SolveConfig
from lipopt.norms import InputNorm
from lipopt.plan.nodes import Race
from lipopt.query import Query
from lipopt.strategies.context import Context


@dataclass(frozen=True, eq=False)
class Entry(Mapping[str, Any]):
    """A racer's question: its configuration, read as :func:`lipopt.lipschitz`'s keywords
    (with ``norm`` and ``c``) by whoever looks at the race's entries."""

    config: SolveConfig
    norm: InputNorm
    c: Any

    def __getitem__(self, key: str) -> Any:
        if key in ("norm", "c"):
            return getattr(self, key)
        if key not in LEVER_DEFAULTS:
            raise KeyError(key)
        return getattr(self.config, key)

    def __iter__(self) -> Iterator[str]:
        return iter(("norm", "c", *LEVER_DEFAULTS))

    def __len__(self) -> int:
        return 2 + len(LEVER_DEFAULTS)

    def but(self, **changes: Any) -> Entry:
        """The same question with ``changes`` to its configuration."""
        return replace(self, config=self.config.but(**changes))


@dataclass(frozen=True)
class Raced:
    """The question the probe, the racers and the splits after or instead of the race share;
    ``asked`` is the query their sub-questions plan (rebalanced, as each has always been; the
    query itself where that changes nothing, so they read the bounds it keeps)."""

    node: Race
    query: Query
    ctx: Context
    asked: Query

    @property
    def attack(self) -> bool:
        """The attack of the racers and of the splits after or instead of the race: ``"auto"``
        runs it there (the problem has proved hard)."""
        attack = self.node.config.attack
        return True if attack == "auto" else attack  # type: ignore[return-value]

    def config(self, **own: Any) -> SolveConfig:
        """A sub-question's configuration: the caller's, with ``own`` (:meth:`SolveConfig.sub`)."""
        return self.node.config.sub(**own)

    def solve(self, **own: Any) -> Bracket:
        """The runner on this question under :meth:`config`."""
        return self.ctx.runner.solve(self.asked, self.config(**own), self.ctx)


def unstable_share(query: Query) -> float:
    """The share of the neurons with a kink that linear bounds leave unstable on the domain."""
    kinked = query.network.kinked_count
    return query.bounds().unstable_count / kinked if kinked else 0.0


def bab_takes(node: Race, query: Query) -> bool:
    """The race ``node`` offers the branch and bound, and at least its ``bab_from_share`` of the
    kinked neurons (if set), or ``bab_from_count`` of them, are unstable on ``query``."""
    if node.bab_racer is None:
        return False
    share = node.bab_from_share
    many = node.bab_by_count(query.bounds().unstable_count)
    return many or (share is not None and unstable_share(query) >= share)


def bab_alone(node: Race, query: Query) -> bool:
    """:func:`bab_takes`, and no Dask cluster
    (:attr:`~lipopt.plan.nodes.Race.bab_runs_alone`): the branch and bound then runs alone on
    every core instead of the race (on a cluster it races the backward MIP)."""
    return node.bab_runs_alone and bab_takes(node, query)


def unstable_line(problem: Raced) -> str:
    """How many of the kinked neurons are unstable, and their share (a progress line's start)."""
    count = problem.query.bounds().unstable_count
    return f"{count} neurons ({unstable_share(problem.query):.0%}) are unstable"


__all__ = ["Entry", "Raced", "bab_alone", "bab_takes", "unstable_line", "unstable_share"]
