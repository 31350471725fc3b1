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


#: the long sweeps, end-to-end runs and the race's timing tests, marked ``slow``: the README's
#: test command leaves them out (``-m 'not slow'`` in pyproject.toml's addopts) and ``.ci/run``
#: runs them as a second command (``-m slow``); together they are the whole suite
SLOW_MODULES = (
    "tests/test_characterisation.py",
    "tests/test_degenerate.py",
    "tests/test_bundled_soundness.py",
    "tests/test_scale_soundness.py",
    "tests/test_l2_ball.py",
    "tests/io/test_onnx_branches.py",
    "tests/io/test_onnx_conv.py",
    "tests/docs/test_docs_run.py",
    "tests/batch/test_batch_dask.py",
    "tests/batch/test_batch_faults.py",
    "tests/solvers/test_conformance.py",
    "tests/estimators/test_two_layers.py",
    "tests/test_l2_exact.py",
    "tests/strategies/test_early_leader.py",
    "tests/strategies/test_split_leader.py",
    "tests/heuristics/test_attack_start.py",
)


def _mark_slow(items: list[pytest.Item]) -> None:
    """Add the ``slow`` marker to the tests of :data:`SLOW_MODULES`."""
    for item in items:
        if any(str(item.path).endswith(module) for module in SLOW_MODULES):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)  # marked before '-m' deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow sweeps (:data:`SLOW_MODULES`); skip, with the reason, tests marked
    ``requires_solver("name")`` when it is not usable, or make them fail at set-up when CI
    requires that solver (:data:`CI_REQUIRED_SOLVERS`)."""
    _mark_slow(items)
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
