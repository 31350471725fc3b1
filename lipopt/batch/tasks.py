"""One query of a batch: what to solve, how it is named, and the fingerprint of its inputs.

A task's ``fingerprint`` is the SHA-256 of everything its answer depends on — the bytes of its
files (ONNX, VNN-LIB, points) and the options — so that a resumed batch can tell a finished
query from one whose inputs have changed since (:mod:`lipopt.batch.store`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from lipopt.domain import Domain

#: the kinds of query: a Lipschitz constant (``lipopt solve``) or a certified radius
KINDS = ("solve", "certify")

#: the status of a query that could not be answered at all (its worker died, or it raised)
FAILED = "failed"


@dataclass(frozen=True)
class Task:
    """One query.

    Attributes:
        id: unique within the batch and stable across reruns (``row 3``, ``point 7 radius 0.02``).
        kind: ``solve`` or ``certify``.
        model: the ONNX file's absolute path (workers load it themselves).
        domain: the domain (a box from VNN-LIB, or the ball around a point).
        options: keyword arguments of :func:`lipopt.lipschitz` / :func:`lipopt.certify`.
        inputs: what the result line records of the query (paths as the user gave them).
        fingerprint: SHA-256 of the files' contents and the options.
        label: the true class of a point (certify with labels), else None.
        model_digest: SHA-256 of the ONNX file when the batch was checked; a worker refuses a
            file that has changed since (its answer would not belong to the fingerprint).
    """

    id: str
    kind: str
    model: str
    domain: Domain
    options: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    label: int | None = None
    model_digest: str = ""


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (read in 1 MiB blocks; remembered while the file's size and
    modification time stay the same, so that a network shared by many rows is read once)."""
    stat = os.stat(path)
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(parts: dict[str, Any]) -> str:
    """SHA-256 of a JSON-ready description of a query (keys sorted, so order never matters)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """What json cannot write itself: numpy arrays and numbers as lists and floats."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot fingerprint {type(value).__name__}")
