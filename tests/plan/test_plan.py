"""The planner without a solver: snapshots of ``plan()`` over flags x machine facts x queries,
and the rules every plan must keep whatever the snapshot says.

Rewrite the snapshots (only on purpose, when a plan is meant to change):

    python -m tests.plan.test_plan --write
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lipopt import Box, L1Ball, L2Ball, LinfBall
from lipopt.config import LEVER_DEFAULTS
from lipopt.configure import configure
from lipopt.plan import DomainSplit, Facts, Mip, Race, RegionSearch, describe, plan
from lipopt.policy import Policy
from tests.helpers import random_network

SNAPSHOTS = Path(__file__).resolve().parents[1] / "data" / "plans.json"

FACTS = {
    "1 core": Facts(cores=1, fork=True, solvers=frozenset({"highs", "scip"})),
    "2 cores": Facts(cores=2, fork=True, solvers=frozenset({"highs", "scip"})),
    "2 cores, no fork": Facts(cores=2, fork=False, solvers=frozenset({"highs", "scip"})),
    "2 cores, no SCIP": Facts(cores=2, fork=True, solvers=frozenset({"highs"})),
}
DOMAINS = {
    "box": lambda d: Box(np.zeros(d), np.ones(d)),
    "linf ball": lambda d: LinfBall(np.full(d, 0.5), 0.1),
    "l1 ball": lambda d: L1Ball(np.full(d, 0.5), 0.1),
    "l2 ball": lambda d: L2Ball(np.full(d, 0.5), 0.1),
}
OBJECTIVES = {"c": (None, None), "output linf": (None, "linf")}
FLAGS: dict[str, dict[str, Any]] = {
    "default": {},
    "split off": {"split": False},
    "regions off": {"regions": False},
    "regions on": {"regions": True},
    "backward": {"formulation": "backward"},
    "forward": {"formulation": "forward"},
    "decompose": {"decompose": True},
    "no decompose": {"decompose": False},
    "sign split": {"sign_split": True, "split": False, "regions": False},
    "gate split": {"gate_split": True, "formulation": "forward", "split": False},
    "attack": {"attack": True},
    "lp": {"mode": "lp"},
    "one worker": {"workers": 1},
    "no leader split": {"split_leader": False, "split": False, "regions": False},
    "interval bounds": {"bounds": "interval"},
}


def _question(dim: int, depth: int, domain: str, objective: str, norm: str, flags: str):
    """The query and configuration of one snapshot (networks with two outputs)."""
    widths = [dim, *([8] * depth), 2]
    net = random_network(np.random.default_rng(dim * 10 + depth), widths)
    c, output_norm = OBJECTIVES[objective]
    if output_norm is None:
        c = [1.0, -1.0]
    levers = {**LEVER_DEFAULTS, **FLAGS[flags]}
    return configure(net, DOMAINS[domain](dim), norm, (c, output_norm), levers, Policy.current())


def _keys() -> list[tuple]:
    """Every query shape under the default flags and every machine; every flag on two."""
    shapes = itertools.product((2, 5, 16), (1, 2), DOMAINS, OBJECTIVES, ("linf", "l1", "l2"))
    keys = [(*shape, "default", facts) for shape in shapes for facts in FACTS]
    for flags, facts in itertools.product(FLAGS, ("1 core", "2 cores")):
        for shape in ((5, 2, "box", "c", "linf"), (16, 2, "box", "c", "l1"),
                      (5, 2, "l2 ball", "c", "l2")):  # fmt: skip
            keys.append((*shape, flags, facts))
    return keys


def _name(key: tuple) -> str:
    dim, depth, domain, objective, norm, flags, facts = key
    return f"d={dim} depth={depth} {domain} {objective} {norm} | {flags} | {facts}"


def _plan(key: tuple) -> str:
    *question, facts = key
    try:
        query, config = _question(*question)
    except ValueError as err:  # a combination the options refuse: the refusal is the plan
        return f"refused: {err}"
    return describe(plan(query, config, FACTS[facts], Policy.current()))


@pytest.mark.parametrize("key", _keys(), ids=_name)
def test_plan_matches_its_snapshot(key):
    assert _plan(key) == json.loads(SNAPSHOTS.read_text())[_name(key)]


def _nodes(node) -> list:
    """``node`` and every node under it."""
    children = []
    if isinstance(node, RegionSearch):
        children = [n for n in (node.race_now, node.fallback) if n is not None]
    elif isinstance(node, DomainSplit):
        children = [node.part]
    return [node, *(n for child in children for n in _nodes(child))]


@pytest.mark.parametrize("key", _keys(), ids=_name)
def test_plan_keeps_the_rules(key):
    *question, facts_name = key
    dim, depth, domain, objective, norm, flags = question
    try:
        query, config = _question(*question)
    except ValueError:
        return
    facts = FACTS[facts_name]
    nodes = _nodes(plan(query, config, facts, Policy.current()))
    kinds = {type(n) for n in nodes}
    if facts.cores < 2 or not facts.fork or objective != "c" or norm == "l1":
        assert Race not in kinds  # racing needs two forking cores, a fixed c and l-inf
    if objective != "c" or domain in ("l1 ball", "l2 ball") or flags == "lp":
        assert RegionSearch not in kinds  # exact, fixed c, box or l-inf ball only
    if domain in ("l1 ball", "l2 ball") or flags == "lp":
        assert DomainSplit not in kinds
    if flags == "lp":
        assert all(not n.config.exact for n in nodes if isinstance(n, Mip))
    for mip in (n for n in nodes if isinstance(n, Mip)):  # l2: SCIP's quadratic where it can
        quadratic = norm == "l2" and flags != "lp" and "scip" in facts.solvers
        expected = None if norm != "l2" else "quadratic" if quadratic else "chords"
        assert mip.l2_objective == expected
        assert not quadratic or mip.solver == "scip"
        # an l2 ball: SCIP takes its quadratic row where installed, else cuts; an LP its box
        if domain == "l2 ball" and flags == "lp":
            assert mip.ball_encoding == "bounding box"
        elif domain == "l2 ball":
            scip = "scip" in facts.solvers
            assert mip.solver == ("scip" if scip else "highs")
            assert mip.ball_encoding == ("quadratic row" if scip else "tangent cuts")
        else:
            assert mip.ball_encoding is None
    for race in (n for n in nodes if isinstance(n, Race)):
        backward = next(r for r in race.racers if r.formulation.value == "backward")
        assert backward.solver == ("scip" if "scip" in facts.solvers else "highs")
    if flags == "default" and domain == "box" and dim <= Policy.current().auto_split_max_dim:
        split = nodes[0]  # the domain split, after the region search where it runs first
        policy = Policy.current()
        first = dim >= policy.auto_regions_first_min_dim
        first = first or query.network.kinked_count <= policy.auto_regions_first_max_hidden
        if objective == "c" and first:
            assert isinstance(split, RegionSearch) and split.race_now is None
            split = split.fallback
        assert isinstance(split, DomainSplit)


def test_snapshots_cover_every_key():
    assert set(json.loads(SNAPSHOTS.read_text())) == {_name(key) for key in _keys()}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.plan.test_plan --write")
    snapshots = {_name(key): _plan(key) for key in _keys()}
    SNAPSHOTS.write_text(json.dumps(snapshots, indent=1, sort_keys=True) + "\n")
    print(f"{len(snapshots)} plans written to {SNAPSHOTS}")
