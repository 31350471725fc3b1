"""A batch killed mid-run (SIGINT, SIGKILL) loses no finished query and leaves no half line;
rerun, it finishes every query exactly once with the same values. A worker killed mid-query
costs that query a retry, never a wrong or missing line."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.batch_helpers import (
    pool_workers,
    read_lines,
    reference_batch,
    start_lipopt,
    wait_for_lines,
)
from tests.helpers import alive, children

COUNT = 16


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    """The batch (16 instances, about 10 s on two workers) and its uninterrupted results."""
    root = tmp_path_factory.mktemp("faults")
    return root, reference_batch(root, COUNT, seed=11)


def _same(lines: list[dict], reference: dict[str, dict]) -> None:
    """Every query exactly once, with the reference's status, value and lower bound."""
    ids = [line["id"] for line in lines]
    assert sorted(ids) == sorted(reference) and len(ids) == len(set(ids))
    for line in lines:
        ref = reference[line["id"]]
        assert line["status"] == ref["status"], line["id"]
        assert line["value"] == pytest.approx(ref["value"], rel=1e-9, abs=1e-12)
        assert line["lower"] == pytest.approx(ref["lower"], rel=1e-9, abs=1e-12)


def _kill_after(root: Path, out: str, sig: int, lines: int) -> tuple[int, str, list[int]]:
    """Start the batch on two workers, send ``sig`` once ``out`` holds ``lines`` lines; its
    exit status, stderr, and the pids of the workers it had."""
    process = start_lipopt("batch", "instances.csv", "--out", out, "--jobs", "2", cwd=root)
    seen = wait_for_lines(root / out, lines, process)
    assert seen < COUNT, "the batch finished before it could be interrupted"
    workers = children(process.pid)
    os.kill(process.pid, sig)
    _stdout, stderr = process.communicate(timeout=60)
    return process.returncode, stderr, workers


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_batch_resumes(reference, sig: int, code: int) -> None:
    root, ref = reference
    out = f"int{sig}.jsonl"
    returncode, stderr, workers = _kill_after(root, out, sig, 3)
    assert returncode == code, stderr
    how = "interrupted" if sig == signal.SIGINT else "terminated"
    assert stderr.strip().splitlines()[-1] == f"lipopt batch: {how}"  # no traceback, no warning
    data = (root / out).read_bytes()
    assert data.endswith(b"\n")  # no half line
    kept = read_lines(root / out)
    assert 3 <= len(kept) < COUNT
    time.sleep(0.5)
    assert not [pid for pid in workers if alive(pid)]  # no worker outlives the command
    process = start_lipopt("batch", "instances.csv", "--out", out, "--quiet", cwd=root)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    assert f"({COUNT - len(kept)} run now, {len(kept)} before)" in stdout
    _same(read_lines(root / out), ref)


def test_killed_batch_resumes(reference) -> None:
    """SIGKILL: no clean-up runs at all; the workers die with the parent (PDEATHSIG) and the
    rerun redoes whatever was not written whole."""
    root, ref = reference
    returncode, _stderr, workers = _kill_after(root, "kill.jsonl", signal.SIGKILL, 4)
    assert returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and [pid for pid in workers if alive(pid)]:
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)]
    with (root / "kill.jsonl").open("ab") as handle:  # as if killed in the middle of a write
        handle.write(b'{"id": "row 9", "kind": "solve", "fingerpr')
    process = start_lipopt("batch", "instances.csv", "--out", "kill.jsonl", cwd=root)
    _stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    assert "dropped an incomplete last line" in stderr
    _same(read_lines(root / "kill.jsonl"), ref)


def test_worker_killed_mid_query_is_retried(reference) -> None:
    root, ref = reference
    process = start_lipopt("batch", "instances.csv", "--out", "w.jsonl", "--jobs", "2", cwd=root)
    wait_for_lines(root / "w.jsonl", 2, process)
    killed = 0
    for pid in pool_workers(process.pid):  # both workers, each busy with a query or about to be
        os.kill(pid, signal.SIGKILL)
        killed += 1
    stdout, stderr = process.communicate(timeout=600)
    assert killed == 2 and process.returncode == 0, stderr
    lines = read_lines(root / "w.jsonl")
    _same(lines, ref)
    assert max(line["attempts"] for line in lines) == 2  # the queries they held, run again
    assert not [line for line in lines if line["status"] == "failed"]
