"""Shared fixtures: the ``requires_solver`` marker and random test networks."""

from __future__ import annotations

import os

import numpy as np
import pytest

from lipopt import solvers

#: solvers CI installs itself (highspy and pyscipopt are dependencies; .ci/run installs Debian's
#: coinor-cbc): with the ``CI`` environment variable set, their tests fail, not skip, when they
#: are missing
CI_REQUIRED_SOLVERS = ("highs", "scip", "cbc")


def solver_gate(name: str, usable: list[str], env: dict[str, str]) -> tuple[str, str] | None:
    """What to do with a test that needs solver ``name``: None (run it), or ``("skip", why)``,
    or ``("fail", why)`` when CI must test that solver and it is missing."""
    if name in usable:
        return None
    hint = solvers.registry.INSTALL_HINTS.get(name, "")
    if env.get("CI") and name in CI_REQUIRED_SOLVERS:
        return "fail", f"CI must test solver {name!r}, which is not usable here; install: {hint}"
    return "skip", f"solver {name!r} is not installed here"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, tests marked ``requires_solver("name")`` when it is not usable,
    or make them fail at set-up when CI requires that solver (:data:`CI_REQUIRED_SOLVERS`)."""
    usable: list[str] | None = None
    for item in items:
        marker = item.get_closest_marker("requires_solver")
        if marker is None:
            continue
        if usable is None:
            usable = solvers.available()
        gate = solver_gate(marker.args[0], usable, dict(os.environ))
        if gate is None:
            continue
        action, reason = gate
        if action == "skip":
            item.add_marker(pytest.mark.skip(reason=reason))
        else:
            item.stash[_MISSING] = reason


#: set at collection on tests whose solver CI requires and does not have
_MISSING = pytest.StashKey[str]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail (an error at set-up, counted as a failure of the run) a test marked at collection."""
    reason = item.stash.get(_MISSING, None)
    if reason is not None:
        pytest.fail(reason, pytrace=False)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
