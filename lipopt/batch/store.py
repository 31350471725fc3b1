"""The results file: JSON lines, one per finished query, safe to resume.

- Each line is written whole by one ``write`` call on a file opened for appending, so a crash
  leaves every finished line intact and at most an incomplete last line; that line is dropped
  when the batch is resumed, and its query is run again. (A whole last line that lacks only its
  newline, as an editor may save it, is kept.)
- Opening it for a batch reads what is there: a query whose id is present with the same
  fingerprint is done; one whose fingerprint differs (a file or an option has changed since), or
  a line of a query that is not in the batch, or a line written under another fingerprint
  scheme (:data:`~lipopt.batch.tasks.FINGERPRINT_SCHEME`: an older lipopt's, whose fingerprint
  missed some files), is refused rather than silently mixed, and the file is left as it was.
- One batch at a time writes a file (an exclusive ``flock``).
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lipopt.batch.tasks import FINGERPRINT_SCHEME, Task


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
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"--out: {self.path} is not a regular file")
        if not self.path.parent.is_dir():
            raise StoreError(f"--out: folder not found: {self.path.parent}")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):  # e.g. a pipe, opened meanwhile
                raise StoreError(f"--out: {self.path} is not a regular file")
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(f"{self.path} is being written by another lipopt batch") from None
            self.lines, self._keep, self._repair = self._read()
        except BaseException:
            self.close()
            raise

    def _read(self) -> tuple[dict[str, dict[str, Any]], int, bool]:
        """The complete lines by id, the bytes to keep, and whether the last line needs its
        newline. What follows the last newline is a line cut off mid-write (dropped), unless
        it is a whole result line (kept, its newline added: a file saved by an editor); a
        garbled last line is dropped too; a bad line before it is refused. Nothing is changed
        on disk here: :meth:`pending` does that once the file is accepted."""
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        tail, repair = data[end:], False
        raws = data[:end].split(b"\n")[:-1]
        if tail.strip() and _parse(tail) is not None:
            raws, end, repair = [*raws, tail], len(data), True
        elif raws and raws[-1].strip() and _parse(raws[-1]) is None:  # a garbled last line
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
        return lines, end, repair

    def pending(self, tasks: Sequence[Task]) -> list[Task]:
        """The tasks without a line, after checking that every line belongs to this batch;
        only then is an incomplete last line cut off (or a missing last newline added)."""
        by_id = {task.id: task for task in tasks}
        for key, line in self.lines.items():
            task = by_id.get(key)
            if task is None:
                raise StoreError(
                    f"{self.path} holds results of other queries ({key!r} is not in this "
                    "batch); write to a new --out file"
                )
            scheme = line.get("scheme", 1)  # lines of scheme 1 did not record it
            if scheme != FINGERPRINT_SCHEME:
                raise StoreError(
                    f"{self.path}: {key!r} was written under fingerprint scheme {scheme!r}, this "
                    f"lipopt checks scheme {FINGERPRINT_SCHEME} (it also covers ONNX external "
                    "data files), so its answer cannot be matched to the inputs; write to a new "
                    "--out file, or delete it to start over"
                )
            if task.fingerprint != line["fingerprint"]:
                raise StoreError(
                    f"{self.path}: {key!r} was answered for other inputs (a file or an option "
                    "changed since); write to a new --out file, or delete it to start over"
                )
        if self._keep < os.fstat(self._fd).st_size:
            os.truncate(self._fd, self._keep)
            self.dropped_incomplete = True
        if self._repair:
            os.write(self._fd, b"\n")
            self._repair = False
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
