"""The results file: JSON lines, one per finished query, safe to resume.

- Each line is written whole by one ``write`` call on a file opened for appending, so a crash
  leaves every finished line intact and at most an incomplete last line; that line is dropped
  when the file is opened again, and its query is run again.
- Opening it for a batch reads what is there: a query whose id is present with the same
  fingerprint is done; one whose fingerprint differs (a file or an option has changed since), or
  a line of a query that is not in the batch, is refused rather than silently mixed.
- One batch at a time writes a file (an exclusive ``flock``).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lipopt.batch.tasks import Task


class StoreError(ValueError):
    """A results file that cannot be resumed as asked (one line)."""


def _parse(raw: bytes) -> dict[str, Any] | None:
    """A result line's object, or None when it is not one (not JSON, or without id and
    fingerprint)."""
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(line, dict) or "id" not in line or "fingerprint" not in line:
        return None
    return line


class ResultStore:
    """An open results file: the lines already there, and :meth:`append` for new ones."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.dropped_incomplete = False
        if self.path.parent and not self.path.parent.is_dir():
            raise StoreError(f"--out: folder not found: {self.path.parent}")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise StoreError(f"{self.path} is being written by another lipopt batch") from None
        self.lines: dict[str, dict[str, Any]] = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        """The complete lines by id. An incomplete last line (no newline, or not JSON: a crash
        while it was written) is cut off the file; a bad line before it is refused."""
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1  # what follows the last newline was cut off mid-write
        raws = data[:end].split(b"\n")[:-1]
        if raws and raws[-1].strip() and _parse(raws[-1]) is None:  # a garbled last line
            end -= len(raws.pop()) + 1
        lines: dict[str, dict[str, Any]] = {}
        for number, raw in enumerate(raws, start=1):
            if not raw.strip():
                continue
            line = _parse(raw)
            if line is None:
                raise StoreError(f"{self.path} line {number} is not a lipopt result line")
            if line["id"] in lines:
                raise StoreError(f"{self.path} holds {line['id']!r} twice (lines written by hand?)")
            lines[line["id"]] = line
        if end < len(data) and not data[end:].startswith(b'{"id": '):
            raise StoreError(f"{self.path} is not a lipopt results file")
        if end < len(data):  # only once the rest has proven to be a results file
            os.truncate(self.path, end)
            self.dropped_incomplete = True
        return lines

    def pending(self, tasks: Sequence[Task]) -> list[Task]:
        """The tasks without a line, after checking that every line belongs to this batch."""
        by_id = {task.id: task for task in tasks}
        for key, line in self.lines.items():
            task = by_id.get(key)
            if task is None:
                raise StoreError(
                    f"{self.path} holds results of other queries ({key!r} is not in this "
                    "batch); write to a new --out file"
                )
            if task.fingerprint != line["fingerprint"]:
                raise StoreError(
                    f"{self.path}: {key!r} was answered for other inputs (a file or an option "
                    "changed since); write to a new --out file, or delete it to start over"
                )
        return [task for task in tasks if task.id not in self.lines]

    def append(self, line: dict[str, Any]) -> None:
        """Write one line whole (a single ``write`` of the encoded line and its newline)."""
        data = (json.dumps(line, allow_nan=True) + "\n").encode()
        written = os.write(self._fd, data)
        while written < len(data):  # a regular file takes it all at once; be safe anyway
            written += os.write(self._fd, data[written:])
        self.lines[line["id"]] = line

    def close(self) -> None:
        """Release the lock and the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
