"""Planning: :func:`plan` turns a query, its options and the machine's facts into a tree of
strategy nodes (:mod:`lipopt.plan.nodes`), before anything is solved."""

from lipopt.plan.describe import describe
from lipopt.plan.facts import Facts, facts_here
from lipopt.plan.nodes import DomainSplit, Mip, Node, Race, Racer, RegionSearch
from lipopt.plan.planner import adapter_name, plan, race_solver

__all__ = [
    "DomainSplit", "Facts", "Mip", "Node", "Race", "Racer", "RegionSearch", "adapter_name",
    "describe", "facts_here", "plan", "race_solver",
]  # fmt: skip
