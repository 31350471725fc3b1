"""What machine a benchmark ran on, for the headers of the result tables."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import platform
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_stamp() -> str:
    """``2026-11-24: <CPU>, 2 logical CPUs, Linux, Python 3.11.7``: when and where a table was
    measured."""
    return (
        f"{dt.date.today()}: {cpu_name()}, {os.cpu_count()} logical CPUs, {platform.system()}, "
        f"Python {platform.python_version()}"
    )


def in_fresh_process(job: Callable[[Any, Any], None], args: Any) -> Any:
    """``job(args, queue)`` in a spawned process; what it put on the queue (so peak memory is
    that job's own)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=job, args=(args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def stream_table(out: Path, head: list[str], rows: Iterable[str]) -> None:
    """Print each table row as it is measured, then write ``head`` and the rows to ``out``."""
    lines = list(head)
    for row in rows:
        print(row, flush=True)
        lines.append(row)
    out.write_text("\n".join(lines) + "\n")
