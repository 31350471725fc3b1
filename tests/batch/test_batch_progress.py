"""A batch's progress on stderr: a bar redrawn in place on a terminal, a line every few
seconds in a log, nothing with --quiet; counts, rate and time left from a controlled clock."""

from __future__ import annotations

import io

import pytest

from lipopt import policy
from lipopt.batch import progress as progress_module
from lipopt.batch.progress import BatchProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", fake)
    return fake


def test_terminal_bar_counts_rate_and_eta(clock: _Clock) -> None:
    stream = _Terminal()
    bar = BatchProgress(total=10, before=2, stream=stream)
    clock.now += 30.0
    bar.update(running=2, line={"status": "optimal"})
    clock.now += 30.0
    bar.update(running=1, line={"status": "failed"})
    shown = stream.getvalue().split("\r\033[K")[-1]
    # 2 finished in 60 s: 2/min; 6 left: 3 minutes
    assert (
        shown == "[##########..............] 4/10 done (2 before), 1 running, 1 failed, "
        "2.0/min, ETA 3m00s"
    )
    bar.finish()
    assert stream.getvalue().endswith(
        "\r\033[Klipopt batch: 4/10 done (2 before), 1 running, 1 failed, 2.0/min, ETA 3m00s\n"
    )


def test_log_gets_a_line_every_few_seconds(clock: _Clock) -> None:
    stream = io.StringIO()
    bar = BatchProgress(total=3, before=0, stream=stream, command="certify")
    bar.update(running=2)  # the first update is shown at once
    clock.now += policy.BATCH_PROGRESS_SECONDS / 2
    bar.update(running=2, line={"status": "optimal"})  # too soon: not shown
    clock.now += policy.BATCH_PROGRESS_SECONDS
    bar.update(running=1, line={"status": "time_limit"})
    clock.now += 1
    bar.update(running=0, line={"status": "optimal"})
    bar.finish()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "lipopt certify: 0/3 done, 2 running, 0 failed"
    assert lines[1].startswith("lipopt certify: 2/3 done, 1 running, 0 failed, ")
    assert lines[1].endswith("/min, ETA 8s")  # 2 in 16 s, one left
    assert lines[2].startswith("lipopt certify: 3/3 done, 0 running, 0 failed, ")
    assert "ETA" not in lines[2] and len(lines) == 3 and "\r" not in stream.getvalue()


def test_quiet_shows_nothing(clock: _Clock) -> None:
    stream = _Terminal()
    bar = BatchProgress(total=2, before=0, quiet=True, stream=stream)
    bar.update(running=1, line={"status": "optimal"})
    bar.finish()
    assert stream.getvalue() == "" and bar.done == 1


@pytest.mark.parametrize(
    "seconds, text", [(0.4, "0s"), (59, "59s"), (61, "1m01s"), (3599, "59m59s"), (7500, "2h05m")]
)
def test_durations(seconds: float, text: str) -> None:
    assert progress_module._duration(seconds) == text
