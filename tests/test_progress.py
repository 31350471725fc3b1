"""The heartbeat: periodic elapsed-time messages during a long blocking step, and none after."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from lipopt.progress import heartbeat, silent


def test_heartbeat_reports_elapsed_time_while_the_step_runs_and_stops_after():
    messages: list[str] = []
    with heartbeat(messages.append, "solving", 300.0, every=0.05):
        time.sleep(0.4)
    count = len(messages)
    assert count >= 3
    assert messages[0].startswith("solving: ") and messages[0].endswith(" s of 300 s")
    time.sleep(0.2)
    assert len(messages) == count  # no message once the step is over
    assert not any(t.name == "lipopt-heartbeat" for t in threading.enumerate())


def test_heartbeat_without_a_limit_and_when_silent():
    messages: list[str] = []
    with heartbeat(messages.append, "racing", None, every=0.05):
        time.sleep(0.2)
    assert messages and all(m.startswith("racing: ") and " of " not in m for m in messages)
    before = threading.active_count()
    with heartbeat(silent, "solving", 10.0, every=0.01):  # no thread at all
        assert threading.active_count() == before
        time.sleep(0.05)


def test_heartbeat_stops_when_the_step_raises():
    messages: list[str] = []
    try:
        with heartbeat(messages.append, "solving", None, every=0.05):
            raise RuntimeError("solver failed")
    except RuntimeError:
        pass
    assert not any(t.name == "lipopt-heartbeat" for t in threading.enumerate())


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_heartbeat_reports_during_a_long_in_process_solve(monkeypatch, solver):
    """The solver releases the GIL while it solves, so the heartbeat speaks during the solve."""
    import lipopt.progress
    from lipopt import Affine, Box, Network, ReLU, lipschitz
    from lipopt.solvers import get

    if not get(solver).available():
        pytest.skip(f"{solver} is not installed")
    monkeypatch.setattr(lipopt.progress, "HEARTBEAT_SECONDS", 0.1)
    rng = np.random.default_rng(1000)
    sizes = [16, 16, 16, 2]  # the speed benchmark's recipe: far from solved in a second
    layers = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        layers += [
            Affine(
                rng.normal(size=(fan_out, fan_in)) * np.sqrt(2 / fan_in),
                rng.normal(size=fan_out) * 0.5,
            ),
            ReLU(),
        ]
    net = Network.from_layers(layers[:-1])
    messages: list[str] = []
    # no sub-network MIPs: on a loaded CI machine they once took 1.1 of the 1.5 s
    res = lipschitz(
        net, Box(np.zeros(16), np.ones(16)), c=[1.0, -1.0], solver=solver, formulation="forward",
        regions=False, split=False, subnet_bounds=False, time_limit=1.5,
        progress=messages.append,
    )  # fmt: skip
    beats = [m for m in messages if m.startswith("solving: ")]
    assert res.status == "time_limit"
    assert len(beats) >= 5, messages  # about 14; a solver holding the GIL would allow 1 or none


@pytest.mark.parametrize("bad", [True, "yes", 1])
def test_a_progress_that_is_not_a_function_is_one_clear_error_before_any_work(bad):
    """``progress=True`` once failed deep in the region search ("'bool' object is not
    callable"); now it is named at once."""
    from lipopt import Box, lipschitz
    from tests.helpers import random_network

    net = random_network(np.random.default_rng(0), [2, 4, 1])
    with pytest.raises(TypeError, match=r"^progress must be a function taking a message"):
        lipschitz(net, Box(np.zeros(2), np.ones(2)), progress=bad)
