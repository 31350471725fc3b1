"""``lipopt batch --scheduler``: a real Dask cluster — a scheduler and two workers as separate
processes on 127.0.0.1 — answers the batch as the local pool does, even when the worker that
holds the network is killed mid-run; Ctrl-C leaves no worker busy; a missing Dask or an
unreachable scheduler is one clear line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lipopt import policy
from tests.batch_helpers import (
    read_lines,
    reference_batch,
    run_cli,
    start_lipopt,
    vnnlib_text,
    wait_for_lines,
    write_batch,
)
from tests.helpers import random_network, require_module, save_onnx

require_module("distributed")

COUNT = 16


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _dask(*argv: str) -> subprocess.Popen:
    """``dask ARGV`` (the command installed beside this Python) with its output discarded."""
    command = str(Path(sys.executable).parent / "dask")
    return subprocess.Popen([command, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
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


def _network_holder(address: str, timeout: float = 20) -> int:
    """The pid of a worker that holds the batch's network: the only one once Dask keeps a
    single copy (within ``timeout`` seconds), else the first of them."""
    from distributed import Client

    with Client(address, timeout=30) as client:
        pids = client.run(os.getpid)
        deadline = time.monotonic() + timeout
        while True:
            holders = sorted(
                {
                    worker
                    for key, workers in client.who_has().items()
                    if "network" in str(key).lower()
                    for worker in workers
                }
            )
            if len(holders) == 1 or (holders and time.monotonic() > deadline):
                return pids[holders[0]]
            time.sleep(0.2)


def test_cluster_answers_as_the_local_pool_with_a_worker_killed(cluster, reference) -> None:
    """The worker killed holds the network (its only copy, once Dask has dropped the others):
    its queries, and the network where need be, are computed again on the other worker, and
    the batch completes."""
    address, workers = cluster
    root, local = reference
    process = start_lipopt(
        "batch", "instances.csv", "--out", "dask.jsonl", "--scheduler", address, cwd=root
    )
    seen = wait_for_lines(root / "dask.jsonl", 2, process)
    holder = _network_holder(address)
    assert holder in [worker.pid for worker in workers]
    assert seen < COUNT and process.poll() is None, "the batch finished too soon"
    os.kill(holder, signal.SIGKILL)
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


def _busy(address: str) -> dict[str, int]:
    """The tasks each worker is executing now, by worker address."""
    from distributed import Client

    with Client(address, timeout=30) as client:
        return client.run(lambda dask_worker: dask_worker.state.executing_count)


def test_ctrl_c_leaves_no_worker_busy(cluster, tmp_path: Path) -> None:
    """Two long queries (a solve of minutes each) running on the two workers: after Ctrl-C
    both workers are free, and a task given to each one runs."""
    from distributed import Client

    address, workers = cluster
    net = random_network(np.random.default_rng(0), [12, 60, 60, 60, 1])
    save_onnx(net, tmp_path / "big.onnx")
    box = vnnlib_text(-np.ones(12), np.ones(12), 1)
    (tmp_path / "p.vnnlib").write_text(box)
    (tmp_path / "i.csv").write_text("big.onnx,p.vnnlib,600\n" * 3)
    process = start_lipopt("batch", "i.csv", "--out", "r.jsonl", "--scheduler", address,
                           cwd=tmp_path)  # fmt: skip
    deadline = time.monotonic() + 120
    while sum(_busy(address).values()) < 2 and process.poll() is None:
        assert time.monotonic() < deadline, "the queries never started"
        time.sleep(0.5)
    time.sleep(2)  # the queries are solving now
    assert process.poll() is None, "the queries ended before Ctrl-C"
    os.kill(process.pid, signal.SIGINT)
    _stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    with Client(address, timeout=30) as client:  # one free thread each: these run only then
        probes = [client.submit(os.getpid, workers=[w], pure=False) for w in client.run(os.getpid)]
        assert sorted(f.result(timeout=60) for f in probes) == sorted(w.pid for w in workers)
    assert sum(_busy(address).values()) == 0


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
