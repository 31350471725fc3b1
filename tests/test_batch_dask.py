"""``lipopt batch --scheduler``: a real Dask cluster — a scheduler and two workers as separate
processes on 127.0.0.1 — answers the batch as the local pool does, even when one worker is
killed mid-run; a missing Dask or an unreachable scheduler is one clear line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lipopt import policy
from tests.batch_helpers import (
    read_lines,
    reference_batch,
    run_cli,
    start_lipopt,
    wait_for_lines,
    write_batch,
)
from tests.helpers import require_module

require_module("distributed")

COUNT = 16


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _dask(*argv: str) -> subprocess.Popen:
    """``dask ARGV`` (the command installed beside this Python) with its output discarded."""
    command = str(Path(sys.executable).parent / "dask")
    return subprocess.Popen(
        [command, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A scheduler and two single-thread workers, without nannies (a killed worker stays
    dead), all stopped at the end."""
    from distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    host, port = address.rsplit(":", 1)
    scheduler = _dask("scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard")
    workers = [
        _dask("worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard")
        for _ in range(2)
    ]
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for process in [*workers, scheduler]:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    """The batch and its answers by the local pool."""
    root = tmp_path_factory.mktemp("dask")
    return root, reference_batch(root, COUNT, seed=21)


def test_cluster_answers_as_the_local_pool_with_a_worker_killed(cluster, reference) -> None:
    address, workers = cluster
    root, local = reference
    process = start_lipopt(
        "batch", "instances.csv", "--out", "dask.jsonl", "--scheduler", address, cwd=root
    )
    seen = wait_for_lines(root / "dask.jsonl", 3, process)
    assert seen < COUNT, "the batch finished before a worker could be killed"
    os.kill(workers[0].pid, signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    assert f"{COUNT} queries ({COUNT} run now, 0 before)" in stdout
    lines = read_lines(root / "dask.jsonl")
    assert sorted(line["id"] for line in lines) == sorted(local)
    assert len({line["id"] for line in lines}) == COUNT  # each exactly once
    for line in lines:
        ref = local[line["id"]]
        assert line["status"] == ref["status"] != "failed", line["id"]
        assert line["value"] == pytest.approx(ref["value"], rel=1e-9, abs=1e-12)
        assert line["lower"] == pytest.approx(ref["lower"], rel=1e-9, abs=1e-12)
        assert line["fingerprint"] == ref["fingerprint"]


def test_unreachable_scheduler_is_one_line(tmp_path, monkeypatch) -> None:
    write_batch(tmp_path, count=2, seed=1)
    monkeypatch.setattr(policy, "CLUSTER_CONNECT_SECONDS", 1.0)
    start = time.monotonic()
    code, out, err = run_cli(
        "batch", str(tmp_path / "instances.csv"), "--out", str(tmp_path / "r.jsonl"),
        "--scheduler", f"tcp://127.0.0.1:{_free_port()}", "--quiet",
    )  # fmt: skip
    assert code == 2 and out == "" and time.monotonic() - start < 30
    assert err.startswith("lipopt batch: error: cannot reach the Dask scheduler at tcp://")
    assert len(err.strip().splitlines()) == 1


def test_missing_dask_is_one_line(tmp_path, monkeypatch) -> None:
    write_batch(tmp_path, count=2, seed=1)
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, _out, err = run_cli(
        "batch", str(tmp_path / "instances.csv"), "--out", str(tmp_path / "r.jsonl"),
        "--scheduler", "tcp://127.0.0.1:8786", "--quiet",
    )  # fmt: skip
    assert code == 2
    assert err.strip() == (
        "lipopt batch: error: --scheduler needs Dask distributed: pip install 'lipopt[cluster]'"
    )
