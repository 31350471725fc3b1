"""One query computes the bounds of its whole domain once (:meth:`lipopt.query.Query.bounds`,
:meth:`~lipopt.query.Query.split_root`): the race's unstable share, the probe and the racers,
the MIP, its floor, the root cap, the branch and bound's part MIPs and its search all read the
same. Counted in this process (forked racers and part workers inherit what was computed before
them) by spies on the bound functions in every lipopt module that holds them, through
:func:`lipopt.lipschitz` under a time limit on the race, branch and bound and MIP paths."""

from __future__ import annotations

import importlib
import sys
from collections import Counter

import numpy as np
import pytest

import lipopt
from lipopt.parallel.workers import can_fork
from tests.helpers import random_network

policy_module = importlib.import_module("lipopt.policy")

#: the functions spied on, by the module that defines them
SPIED = {
    "linear_bounds": "lipopt.bounds.linear",
    "split_bounds": "lipopt.bounds.constrained",
    "jacobian_norm_bound": "lipopt.bounds.jacobian",
}


def _whole(name: str, args: tuple, kwargs: dict) -> tuple | None:
    """The key of a call that bounds a whole domain (network and domain, by identity), else
    None: every linear bound; a split bound with no split from no parent; a Jacobian bound on
    a whole domain's linear bounds (each node of the branch and bound has split ones)."""
    network, domain = args[0], args[1]
    if name == "split_bounds" and (args[3] or args[4:] or kwargs):
        return None
    if name == "jacobian_norm_bound":
        bounds = kwargs.get("bounds")
        if bounds is not None and bounds.method != "linear":
            return None
        return (name, id(network), id(domain), kwargs.get("iterations", 0))
    return (name, id(network), id(domain))


def _spied(monkeypatch) -> tuple[Counter, list]:
    """Counts of the whole-domain calls (and the calls' arguments, kept alive so that no id
    is reused) while the test runs."""
    counts: Counter = Counter()
    kept: list = []
    importlib.import_module("lipopt.driver")  # every module a query runs through, loaded
    for name, home in SPIED.items():
        original = getattr(importlib.import_module(home), name)

        def spy(*args, _name=name, _original=original, **kwargs):
            kept.append((args, kwargs))
            key = _whole(_name, args, kwargs)
            if key is not None:
                counts[key] += 1
            return _original(*args, **kwargs)

        for module in list(sys.modules.values()):
            if module.__name__.startswith("lipopt") and getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, spy)
    return counts, kept


def _assert_once(counts: Counter) -> None:
    assert counts, "no whole-domain bounds were computed"
    twice = {key[0]: n for key, n in counts.items() if n > 1}
    assert not twice, f"computed more than once for one query: {twice}"


@pytest.mark.skipif(not can_fork("highs"), reason="racing needs two cores and fork")
def test_a_race_with_the_branch_and_bound_bounds_its_domain_once(monkeypatch):
    monkeypatch.setattr(policy_module, "RACE_AFTER", 1e-4)  # the probe stops: the race runs
    monkeypatch.setattr(policy_module, "BAB_RACE_MIN_INPUTS", 1)
    monkeypatch.setattr(policy_module, "BAB_RACE_UNSTABLE_SHARE", 0.0)
    counts, _ = _spied(monkeypatch)
    net = random_network(np.random.default_rng(0), [3, 10, 10, 1])
    box = lipopt.Box(np.zeros(3), np.ones(3))
    result = lipopt.lipschitz(net, box, time_limit=30, regions=False, split=False)
    assert result.upper >= result.lower
    _assert_once(counts)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_branch_and_bound_bounds_its_root_once(monkeypatch, workers):
    """The part MIPs' sign rows and the search read one root (in this process, or in the
    workers forked after it)."""
    counts, _ = _spied(monkeypatch)
    net = random_network(np.random.default_rng(7), [3, 10, 10, 1])
    domain = lipopt.Box(np.zeros(3), np.ones(3))
    result = lipopt.lipschitz(net, domain, bab=True, time_limit=30, workers=workers)
    assert result.upper >= result.lower
    _assert_once(counts)
    assert any(key[0] == "split_bounds" for key in counts)


def test_a_stopped_mip_bounds_its_domain_and_its_floor_once(monkeypatch):
    """A MIP that proves nothing in time (its build refused): its floor bracket and the root
    cap read one set of linear bounds and one Jacobian bound."""
    monkeypatch.setattr(policy_module, "BUILD_SECONDS_PER_WEIGHT", 1.0)
    counts, _ = _spied(monkeypatch)
    net = random_network(np.random.default_rng(3), [8, 40, 40, 1])
    domain = lipopt.LinfBall(np.full(8, 0.5), 0.5)
    result = lipopt.lipschitz(
        net, domain, time_limit=5.0, formulation="backward", regions=False, split=False,
        attack=False,
    )  # fmt: skip
    assert result.status == "time_limit" and "bounds only" in result.solver
    _assert_once(counts)
    assert any(key[0] == "jacobian_norm_bound" for key in counts)


def test_a_query_keeps_its_bounds_and_a_changed_query_has_its_own():
    """The kept bounds are the very numbers of a fresh computation; a pickled query carries
    them; a query with another domain (a part) computes its own."""
    import pickle
    from dataclasses import replace

    from lipopt.bounds.linear import linear_bounds
    from lipopt.norms import InputNorm
    from lipopt.query import Query

    net = random_network(np.random.default_rng(1), [3, 8, 8, 1])
    query = Query(net, lipopt.Box(np.zeros(3), np.ones(3)), InputNorm.LINF, np.ones(1))
    kept = query.bounds()
    assert query.bounds() is kept and query.split_root() is query.split_root()
    fresh = linear_bounds(query.network, query.domain, query.seed)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(kept.pre_lower + kept.grad_upper, fresh.pre_lower + fresh.grad_upper)
    )
    assert pickle.loads(pickle.dumps(query))._kept.keys() == query._kept.keys()
    part = replace(query, domain=lipopt.Box(np.zeros(3), np.full(3, 0.5)))
    assert part.key_of(kept) is None and part.bounds() is not kept
