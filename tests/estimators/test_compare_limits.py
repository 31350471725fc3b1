"""lipopt compare's time limit for the whole command, and SIGINT/SIGTERM (issue 44, item 3).

A method that stops answering (as an SDP solver in C does: no Python code runs, so no signal
handler either) is stood in for by one that blocks SIGINT/SIGTERM and sleeps. The timeouts
below only make a hung process fail; nothing asserts on wall time.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from lipopt import Box
from lipopt.compare import Stopped, compare, format_table, to_json
from lipopt.estimators import ESTIMATORS, Estimate, Kind
from tests.helpers import random_network, save_onnx

NET = random_network(np.random.default_rng(0), [3, 8, 8, 2])
BOX = Box(np.zeros(3), np.ones(3))
C = [1.0, -1.0]
ROOT = Path(__file__).resolve().parents[2]

#: a ``python`` script: the CLI with ``shor`` replaced by a method that never answers and
#: holds SIGINT/SIGTERM off, as a solve inside a C extension does
STUCK_CLI = """\
import signal, sys, time
from lipopt import estimators

def stuck(*args, **kwargs):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    time.sleep(600)

estimators.ESTIMATORS["shor"] = stuck
from lipopt.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _sleeps(*args, **kwargs):
    time.sleep(120)


# ------------------------------------------------------------------------------ the library
def test_a_method_past_the_deadline_is_stopped_and_the_next_not_run(monkeypatch):
    monkeypatch.setitem(ESTIMATORS, "shor", _sleeps)
    out = compare(NET, BOX, "linf", C, methods="fastlip,shor,naive", time_limit=1.0)
    assert isinstance(out[0], Estimate) and out[0].name == "fastlip"
    stopped, skipped = out[1], out[2]
    assert isinstance(stopped, Stopped) and stopped.status == "time_limit"
    assert stopped.seconds is not None  # it ran, was stopped, and proved nothing
    assert isinstance(skipped, Stopped) and skipped.name == "naive"
    assert skipped.status == "time_limit" and skipped.seconds is None  # never started
    table = format_table(out)
    assert "stopped (time_limit)" in table and "not run (time_limit)" in table
    entries = {m["name"]: m for m in to_json(out)["methods"]}
    assert entries["shor"]["value"] is None and entries["shor"]["status"] == "time_limit"
    assert entries["naive"]["value"] is None and entries["naive"]["seconds"] is None
    assert entries["fastlip"]["value"] == pytest.approx(out[0].value)


def _reports_its_limit(*args, time_limit=None, **kwargs):
    return Estimate("lipmip", 1.0, Kind.UPPER, 0.0, {"time_limit": time_limit})


def test_lipmip_gets_what_is_left_of_the_limit(monkeypatch):
    monkeypatch.setitem(ESTIMATORS, "lipmip", _reports_its_limit)
    out = compare(NET, BOX, "linf", C, methods="naive,lipmip", time_limit=30.0)
    assert 0 < out[1].detail["time_limit"] <= 30.0
    opts = {"lipmip": {"time_limit": 5.0}}
    out = compare(NET, BOX, "linf", C, methods="lipmip", time_limit=30.0, options=opts)
    assert 0 < out[0].detail["time_limit"] <= 5.0  # its own, smaller limit stands


def _sleeps_a_little(*args, **kwargs):
    time.sleep(1.5)
    return Estimate("naive", 2.0, Kind.UPPER, 1.5)


def test_without_fork_the_limit_still_stops_starting_methods(monkeypatch):
    monkeypatch.setattr("lipopt.compare.can_isolate", lambda: False)
    monkeypatch.setitem(ESTIMATORS, "naive", _sleeps_a_little)
    out = compare(NET, BOX, "linf", C, methods="naive,fastlip", time_limit=1.0)
    assert isinstance(out[0], Estimate)  # finished (late) in this process: its value stands
    assert isinstance(out[1], Stopped) and out[1].seconds is None


def test_time_limit_must_be_positive():
    with pytest.raises(ValueError, match="time_limit must be positive"):
        compare(NET, BOX, "linf", C, methods="naive", time_limit=0)


# ------------------------------------------------------------------------------ the command
@pytest.fixture(scope="module")
def stuck_cli(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stuck")
    model = save_onnx(NET, folder / "net.onnx")
    script = folder / "stuck_cli.py"
    script.write_text(STUCK_CLI)
    return [sys.executable, str(script), "compare", str(model), "--box", "0,1", "--c", "1,-1"]


def _start(argv: list[str]) -> tuple[subprocess.Popen, queue.Queue]:
    """The command, and a queue of its stderr lines (None at the end)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def _finish(proc: subprocess.Popen, timeout: float) -> str:
    """Its stdout once it ends; a process still running after ``timeout`` s fails the test."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the command did not end within {timeout} s")
    return proc.stdout.read()


def _rows(table: str) -> dict[str, str]:
    return {line.split()[0]: line for line in table.splitlines() if line.strip()}


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_command_and_the_finished_methods_are_printed(stuck_cli, sig, code):
    proc, lines = _start([*stuck_cli, "--methods", "fastlip,shor,naive"])
    seen: list[str] = []
    while not any("shor: running" in line for line in seen):
        line = lines.get(timeout=120)
        assert line is not None, "".join(seen)
        seen.append(line)
    proc.send_signal(sig)
    out = _finish(proc, timeout=60)
    assert proc.returncode == code
    rows = _rows(out)
    assert "upper" in rows["fastlip"] and rows["fastlip"].split()[1] != "-"
    assert "stopped (interrupted)" in rows["shor"]
    assert "not run (interrupted)" in rows["naive"]


def test_time_limit_bounds_the_whole_command(stuck_cli):
    argv = [*stuck_cli, "--methods", "fastlip,shor,naive", "--time-limit", "2", "--json"]
    proc, _lines = _start(argv)
    out = _finish(proc, timeout=60)
    assert proc.returncode == 0
    entries = {m["name"]: m for m in json.loads(out)["methods"]}
    assert entries["fastlip"]["value"] is not None and entries["fastlip"]["kind"] == "upper"
    assert entries["shor"]["value"] is None and entries["shor"]["status"] == "time_limit"
    assert entries["shor"]["seconds"] is not None
    assert entries["naive"]["value"] is None and entries["naive"]["status"] == "time_limit"
    assert entries["naive"]["seconds"] is None


#: a ``python`` script: Clarabel solves once in this process (its rayon thread pool starts),
#: then compare() runs LipSDP, which solves with Clarabel, in a child process
AFTER_CLARABEL = """\
import json
import numpy as np
from lipopt import Box
from lipopt.compare import compare, to_json
from lipopt.estimators import lipsdp
from tests.helpers import random_network

big = random_network(np.random.default_rng(1), [10, 20, 20, 2])
lipsdp.estimate(big, Box(np.zeros(10), np.ones(10)), "linf", c=[1.0, -1.0])  # rayon's pool starts
net = random_network(np.random.default_rng(0), [2, 20, 40, 20, 2])
box = Box(np.zeros(2), np.ones(2))
results = compare(net, box, "linf", [1.0, -1.0], "lipsdp", time_limit=60)
print(json.dumps(to_json(results)["methods"][0]))
"""


def test_a_method_after_clarabel_ran_here_is_not_forked_into_a_deadlock():
    """A forked child inherits Clarabel's rayon pool without its threads and waits forever;
    once Clarabel is loaded, methods run in a spawned child (found hanging the docs' tests)."""
    pytest.importorskip("cvxpy")
    pytest.importorskip("clarabel")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", AFTER_CLARABEL], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lipsdp = json.loads(done.stdout.strip().splitlines()[-1])
    assert lipsdp["value"] is not None and "status" not in lipsdp, lipsdp
