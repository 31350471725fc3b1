"""Atomic writes (issue #32, item 3): a reader sees the old file or the whole new one, and an
interrupted write leaves neither a partial target nor a temporary file."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lipopt
from lipopt.atomic import atomic_path, write_text_atomic
from lipopt.solvers.export import write_model
from tests.helpers import random_network, save_onnx


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


class Boom(Exception):
    pass


@pytest.mark.parametrize("error", [Boom("disk on fire"), KeyboardInterrupt(), SystemExit(3)])
@pytest.mark.parametrize("old", ["old contents\n", None])
def test_failed_write_keeps_old_target_removes_temp_and_reraises(tmp_path, error, old):
    target = tmp_path / "out.md"
    if old is not None:
        target.write_text(old)
    with pytest.raises(type(error)) as info:
        with atomic_path(target) as temp:
            assert temp.parent == tmp_path and temp.suffix == ".md" and temp != target
            temp.write_text("half of the new ")
            raise error
    assert info.value is error  # the very exception, not a wrapper
    assert _names(tmp_path) == ([] if old is None else ["out.md"])
    if old is not None:
        assert target.read_text() == old


def test_ctrl_c_just_after_the_temporary_is_created_removes_it(tmp_path, monkeypatch):
    """The CI-seen race: a signal landing between ``mkstemp`` creating the file and the name
    being kept left the temporary behind. Here SIGINT is sent at exactly that moment, with a
    second thread alive (as in a pytest-xdist worker), which the OS may hand the signal to."""
    real_mkstemp = tempfile.mkstemp

    def mkstemp_then_signal(*args: Any, **kwargs: Any) -> tuple[int, str]:
        made = real_mkstemp(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_signal)
    done = threading.Event()
    waiter = threading.Thread(target=done.wait)
    waiter.start()
    target = tmp_path / "out.md"
    try:
        with pytest.raises(KeyboardInterrupt), atomic_path(target) as temp:
            temp.write_text("never kept")
    finally:
        done.set()
        waiter.join()
    assert _names(tmp_path) == []


def test_write_replaces_target_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n" * 1000)
    assert write_text_atomic(target, "new\n") == target
    assert target.read_text() == "new\n" and _names(tmp_path) == ["out.jsonl"]


@pytest.mark.parametrize("mask", [None, 0o022, 0o077, 0o002, 0o027])
def test_new_file_gets_the_mode_open_would_give(tmp_path, mask):
    old_mask = os.umask(mask) if mask is not None else None
    try:
        with open(tmp_path / "plain.txt", "w"):
            pass
        write_text_atomic(tmp_path / "atomic.txt", "x")
    finally:
        if old_mask is not None:
            os.umask(old_mask)
    assert _mode(tmp_path / "atomic.txt") == _mode(tmp_path / "plain.txt")
    if mask is not None:
        assert _mode(tmp_path / "atomic.txt") == 0o666 & ~mask


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o755])
def test_existing_target_keeps_its_mode(tmp_path, mode):
    target = tmp_path / "out.md"
    target.write_text("old")
    target.chmod(mode)
    write_text_atomic(target, "new")
    assert target.read_text() == "new" and _mode(target) == mode


def test_symlink_target_writes_through_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "out.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert _names(tmp_path / "real") == ["out.md"]


def _writer(path: Path, text: str, rounds: int, barrier) -> None:
    for _ in range(rounds):
        barrier.wait(timeout=60)
        write_text_atomic(path, text)
        barrier.wait(timeout=60)


def test_two_processes_writing_at_once_leave_one_whole_file(tmp_path):
    """Different lengths, so a non-atomic write would show as A's tail after B, or a truncation."""
    path = tmp_path / "table.md"
    texts = ("A" * 3_000_000 + "\n", "b" * 2_000_000 + "\n")
    rounds = 15
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=_writer, args=(path, t, rounds, barrier)) for t in texts]
    for p in procs:
        p.start()
    try:
        for i in range(rounds):
            barrier.wait(timeout=60)
            for _ in range(3):  # read while the two write: old or new, whole
                if i == 0 and not path.exists():
                    continue
                assert path.read_text() in texts
            barrier.wait(timeout=60)
            assert path.read_text() in texts
            assert _names(tmp_path) == ["table.md"]
    except BaseException:
        barrier.abort()  # a failed check must not leave the writers waiting
        raise
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0, 0]


@pytest.fixture
def small_model() -> Any:
    net = random_network(np.random.default_rng(5), [3, 8, 1])
    return lipopt.build_model(net, lipopt.Box(np.zeros(3), np.ones(3)), "linf").model


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
@pytest.mark.parametrize("old", ["old model\n", None])
def test_write_model_interrupted_leaves_old_target_and_no_temp(
    tmp_path, small_model, monkeypatch, suffix, old
):
    target = tmp_path / f"lip{suffix}"
    if old is not None:
        target.write_text(old)
    written: list[str] = []

    def half_then_ctrl_c(filename: str, **_kwargs: object) -> None:
        written.append(filename)
        Path(filename).write_text("NAME half\n" * 10_000)
        raise KeyboardInterrupt

    monkeypatch.setattr(small_model, "write", half_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        write_model(small_model, target)
    assert written and Path(written[0]) != target and Path(written[0]).parent == tmp_path
    assert _names(tmp_path) == ([] if old is None else [target.name])
    if old is not None:
        assert target.read_text() == old


@pytest.mark.parametrize("suffix", [".lp", ".MPS"])
def test_write_model_replaces_old_target_whole(tmp_path, small_model, suffix):
    target = tmp_path / f"lip{suffix}"
    target.write_text("old model\n")
    assert write_model(small_model, target) == target
    text = target.read_text()
    assert "old model" not in text and len(text) > 100
    assert text.lstrip().startswith("*" if suffix == ".MPS" else "\\")  # MPS or LP header
    assert _names(tmp_path) == [target.name]


def _reset_sigint() -> None:
    # a shell's background job ignores SIGINT, and Python keeps an ignored SIGINT ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_export_stopped_by_a_signal_leaves_no_partial_file(tmp_path, sig, code, word):
    """Ctrl-C or SIGTERM while ``lipopt export`` writes an 8 MB model (about 0.3 s of
    writing): exit 130 or 143, no target, no temporary. The signal goes out as soon as the
    temporary file appears; if the write won the race and finished first (a whole file then,
    which is also correct), retry."""
    model = save_onnx(
        random_network(np.random.default_rng(0), [20, 200, 200, 1]), tmp_path / "n.onnx"
    )
    out = tmp_path / "out"
    out.mkdir()
    target = out / "big.mps"
    for _attempt in range(3):
        for leftover in out.iterdir():
            leftover.unlink()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lipopt.cli",
                "export",
                str(model),
                "--box",
                "0,1",
                "-o",
                str(target),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_reset_sigint,
        )
        deadline = time.monotonic() + 120
        while proc.poll() is None and not any(out.iterdir()):
            assert time.monotonic() < deadline, "the export never started writing"
            time.sleep(0.002)
        if proc.poll() is None:  # the temporary file is there: the write has begun
            proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
        if proc.returncode == 0:  # finished before the signal: whole, and no temporary
            assert _names(out) == ["big.mps"] and target.stat().st_size > 1_000_000
            continue
        assert _names(out) == [], stderr
        # Pyomo's writer has a bare ``except:`` (ComponentData.index) that can swallow the
        # KeyboardInterrupt and fail with a DeveloperError after it: the command goes by the
        # signal it received, so that too is one line and exit 130
        assert proc.returncode == code, stderr
        assert stderr.strip().splitlines()[-1] == f"lipopt export: {word}"
        return
    pytest.fail("the export finished before the signal three times: the test did not stop it")


def test_a_target_this_process_may_not_write_is_refused_as_open_would(tmp_path, monkeypatch):
    """A read-only file is not replaced behind its owner's back (root may write anything, so
    the check is made through os.access, which is what is stubbed here)."""
    target = tmp_path / "kept.txt"
    target.write_text("old")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == target else real_access(p, mode)
    )
    with pytest.raises(PermissionError):
        write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
