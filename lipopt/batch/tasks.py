"""One query of a batch: what to solve, how it is named, and the fingerprint of its inputs.

A task's ``fingerprint`` is the SHA-256 of everything its answer depends on — the bytes of its
files (ONNX with the external data files it names, VNN-LIB, points) and the options — so that a
resumed batch can tell a finished query from one whose inputs have changed since
(:mod:`lipopt.batch.store`). What a fingerprint covers has a version,
:data:`FINGERPRINT_SCHEME`, recorded on every line: a line of another scheme is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from lipopt.domain import Disjunction, Domain
from lipopt.status import Unsolved

#: the kinds of query: a Lipschitz constant (``lipopt solve``) or a certified radius
KINDS = ("solve", "certify")

#: what a fingerprint covers, recorded on every result line as ``scheme``. 1 (no ``scheme`` on
#: the line): the ``.onnx`` file's bytes, not its external data; 2: every file the model reads
FINGERPRINT_SCHEME = 2

#: the status of a query that could not be answered at all (its worker died, or it raised)
FAILED = Unsolved.FAILED


@dataclass(frozen=True)
class Task:
    """One query.

    Attributes:
        id: unique within the batch and stable across reruns (``row 3``, ``point 7 radius 0.02``).
        kind: ``solve`` or ``certify``.
        model: the ONNX file's absolute path (workers load it themselves).
        domain: the domain: a VNN-LIB property's input set (a box, a polytope, or a union of
            them, as read), or the ball around a point.
        options: keyword arguments of :func:`lipopt.lipschitz` / :func:`lipopt.certify`.
        inputs: what the result line records of the query (paths as the user gave them).
        fingerprint: SHA-256 of the files' contents and the options.
        label: the true class of a point (certify with labels), else None.
        model_digest: :func:`model_digest` of the ONNX model (its file and external data) when
            the batch was checked; a worker refuses a model that has changed since (its answer
            would not belong to the fingerprint).
    """

    id: str
    kind: str
    model: str
    domain: Domain | Disjunction
    options: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    label: int | None = None
    model_digest: str = ""


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (read in 1 MiB blocks; remembered while the file's size and
    inode, modification and change times stay the same, so that a network shared by many rows
    is read once)."""
    stat = os.stat(path)
    key = (stat.st_size, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)
    return _digest(str(Path(path).resolve()), key)


@lru_cache(maxsize=256)
def _digest(path: str, stat_key: tuple[int, ...]) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_files(path: str) -> list[str]:
    """The files an ONNX model reads: the ``.onnx`` file, then each external data file its
    tensors name (their ``location`` entries, relative to the model's folder), sorted; read
    again only when the ``.onnx`` file changes."""
    stat = os.stat(path)
    key = (stat.st_size, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)
    return list(_model_files(str(Path(path).resolve()), key))


@lru_cache(maxsize=64)
def _model_files(path: str, stat_key: tuple[int, ...]) -> tuple[str, ...]:
    import onnx

    model = onnx.load_model(path, load_external_data=False)
    folder = Path(path).parent
    locations = set()
    for tensor in _tensors(model.graph, list(model.functions)):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            entries = {entry.key: entry.value for entry in tensor.external_data}
            if entries.get("location"):
                locations.add(str(folder / entries["location"]))
    return (path, *sorted(locations))


def _tensors(graph: Any, functions: list[Any]) -> list[Any]:
    """Every tensor of a graph: its initializers and the tensors of its nodes' attributes, in
    subgraphs and model-local functions too."""
    out = [*graph.initializer]
    out += [t for sparse in graph.sparse_initializer for t in (sparse.values, sparse.indices)]
    nodes = [*graph.node, *(node for function in functions for node in function.node)]
    for node in nodes:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                out.append(attribute.t)
            out.extend(attribute.tensors)
            subgraphs = [attribute.g] if attribute.HasField("g") else []
            for subgraph in [*subgraphs, *attribute.graphs]:
                out.extend(_tensors(subgraph, []))
    return out


def model_digest(path: str) -> str:
    """SHA-256 of every file an ONNX model reads (:func:`model_files`): its bytes and its
    external data files' bytes, each named relative to the model's folder."""
    files = model_files(path)
    folder = Path(files[0]).parent
    named = {os.path.relpath(name, folder): file_digest(name) for name in files}
    return fingerprint(named)


def fingerprint(parts: dict[str, Any]) -> str:
    """SHA-256 of a JSON-ready description of a query, with the :data:`FINGERPRINT_SCHEME`
    (keys sorted, so order never matters)."""
    described = {**parts, "fingerprint_scheme": FINGERPRINT_SCHEME}
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """What json cannot write itself: numpy arrays and numbers as lists and floats."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot fingerprint {type(value).__name__}")
