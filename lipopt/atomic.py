"""Atomic file writes: write to a temporary file in the target's folder, then rename it in place.

A reader of the target sees the old file or the new one, never a mixture or a truncation (two
writers at once: the last rename wins, whole); an interrupted write (an exception, Ctrl-C) leaves
the target as it was and no temporary file behind. Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any


def _umask() -> int:
    """The process's umask (from /proc on Linux: setting it to read it is not thread-safe)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    """The mode of an existing ``target``, else what ``open(target, "w")`` would create."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _fsync(path: Path) -> None:
    """Flush ``path``'s data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block: their Python handlers (which run in the main
    thread only, whichever thread the OS hands the signal to) are swapped for one that notes
    the signal, and each noted signal goes to its own handler just after the block (the
    default action re-raised, an ignored one dropped). Outside the main thread nothing is
    held: no handler can interrupt that thread's code."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[tuple[int, FrameType | None]] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append((signum, frame))

    previous: dict[int, Any] = {
        sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum, frame in noted:
            handler = previous[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``target`` (same suffix) for the caller to write.

    On normal exit the file is flushed to disk and renamed onto ``target`` (a symlink is
    followed, so the file it points to is replaced, as ``open(target, "w")`` would write it).
    On any exception, KeyboardInterrupt and SystemExit included, the temporary file is removed
    and the exception re-raised; ``target`` is untouched. A target this process may not write
    is refused (``PermissionError``), as ``open(target, "w")`` would refuse it.
    """
    final = Path(os.path.realpath(target))
    if final.exists() and not os.access(final, os.W_OK):  # as open(target, "w") refuses it
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))
    temp: Path | None = None
    try:
        # A signal between creating the temporary and noting its name would leave it behind,
        # so the two happen with Ctrl-C and SIGTERM held; one that came meanwhile raises below.
        with _signals_held():
            fd, name = tempfile.mkstemp(
                dir=final.parent, prefix="." + final.name + ".", suffix=final.suffix
            )
            temp = Path(name)
            os.close(fd)
        os.chmod(temp, _mode_for(final))
        yield temp
        _fsync(temp)
        os.replace(temp, final)
    except BaseException:
        if temp is not None:
            with contextlib.suppress(OSError):
                temp.unlink()
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_path`); returns ``Path(path)``."""
    with atomic_path(path) as temp:
        temp.write_text(text, encoding=encoding)
    return Path(path)
