"""Shared fixtures: the ``requires_solver`` marker and random test networks."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import solvers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, tests marked ``requires_solver("name")`` when it is not usable."""
    usable: list[str] | None = None
    for item in items:
        marker = item.get_closest_marker("requires_solver")
        if marker is None:
            continue
        if usable is None:
            usable = solvers.available()
        name = marker.args[0]
        if name not in usable:
            item.add_marker(pytest.mark.skip(reason=f"solver {name!r} is not installed here"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
