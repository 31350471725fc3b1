"""Instances of a batch from a VNN-COMP style CSV: ``onnx,vnnlib,timeout`` per row.

Paths are relative to the CSV file. The VNN-LIB property's input set is the domain, handed to the
solve as read: a box, a polytope (linear input constraints) or a union of them (an ``or`` over
inputs); its output assertions are ignored (:mod:`lipopt.io.vnnlib`, VNN-LIB 1.0 and 2.0).
VNN-COMP's headerless three-column files work as they are; a header row
``onnx,vnnlib,timeout[,norm,c,output_norm]`` adds per-row overrides of the command line's
Lipschitz options (``c`` as a quoted comma list, ``"1,-1"``, or a file).
Every row is checked — files read, networks loaded, the objective matched to the network — before
any query runs, and a bad row is refused with its row number.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lipopt.batch.tasks import Task, file_digest, fingerprint, model_digest
from lipopt.domain import Box, Disjunction, Domain, Polytope, load_vector
from lipopt.io.onnx import load_onnx
from lipopt.io.vnnlib import read_vnnlib
from lipopt.lipschitz import check_arguments
from lipopt.network import Network

#: the columns a header row may name, in VNN-COMP's order first
COLUMNS = ("onnx", "vnnlib", "timeout", "norm", "c", "output_norm")


@dataclass(frozen=True)
class SolveOptions:
    """The Lipschitz options of every query (a CSV row may override norm, c and output_norm).

    ``time_limit`` given on the command line replaces every row's ``timeout``; ``workers`` and
    ``threads`` are 1 so that parallel queries do not oversubscribe the cores."""

    norm: str = "linf"
    c: tuple[float, ...] | None = None
    output_norm: str | None = None
    solver: str = "auto"
    mode: str = "exact"
    time_limit: float | None = None
    gap: float | None = None
    bounds: str = "linear"

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`lipopt.lipschitz` (JSON-ready)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["c"] = None if self.c is None else list(self.c)
        return {**out, "workers": 1, "threads": 1}


class InstanceError(ValueError):
    """A row of an instances file that cannot be run as written (one line, with its row)."""


def read_instances(csv_path: str | Path, options: SolveOptions) -> list[Task]:
    """The tasks of an instances CSV, every row checked; ``options`` apply where a row is
    silent."""
    path = Path(csv_path)
    if not path.is_file():
        raise InstanceError(f"instances file not found: {csv_path}")
    networks: dict[str, Network] = {}
    tasks = []
    for number, row in _rows(path):
        try:
            tasks.append(_task(path, number, row, options, networks))
        except (OSError, ValueError) as exc:
            raise InstanceError(f"{path.name} row {number}: {exc}") from None
    if not tasks:
        raise InstanceError(f"{path.name}: no instances (expected rows onnx,vnnlib,timeout)")
    return tasks


def ignored_note(tasks: list[Task]) -> str | None:
    """A note when some properties assert something of the outputs: lipopt reads only their
    input sets (it computes a constant there; it does not verify the property)."""
    with_outputs = sum(bool(t.inputs.get("ignored_output_assertions")) for t in tasks)
    if not with_outputs:
        return None
    return (
        f"note: the output assertions of {with_outputs} of {len(tasks)} VNN-LIB properties are "
        "ignored; each query's domain is the property's input set"
    )


def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """(row number, cells by column) for every non-blank, non-comment row."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:  # a BOM is dropped
            lines = list(csv.reader(handle))
    except UnicodeDecodeError as exc:
        raise InstanceError(f"{path.name}: not UTF-8 text (invalid byte at {exc.start})") from None
    header = list(COLUMNS[:3])
    first = True
    for number, row in enumerate(lines, start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if first and cells[0].lower() == "onnx":
            header = _header(path, cells)
            first = False
            continue
        first = False
        if len(cells) != len(header):
            raise InstanceError(
                f"{path.name} row {number}: {len(cells)} cells, expected {len(header)} "
                f"({','.join(header)})"
            )
        yield number, dict(zip(header, cells))


def _header(path: Path, cells: list[str]) -> list[str]:
    """The columns a header row names, checked."""
    names = [cell.lower() for cell in cells]
    unknown = [name for name in names if name not in COLUMNS]
    if unknown:
        raise InstanceError(
            f"{path.name}: unknown column {unknown[0]!r} (columns: {', '.join(COLUMNS)})"
        )
    if names[:2] != ["onnx", "vnnlib"] or len(set(names)) != len(names):
        raise InstanceError(f"{path.name}: the header must start onnx,vnnlib and name each once")
    return names


def _task(
    csv_path: Path, number: int, row: dict[str, str], options: SolveOptions, nets: dict
) -> Task:
    """The task of one row: its files read and checked, its options resolved."""
    base = csv_path.parent
    onnx_path, vnnlib_path = base / row["onnx"], base / row["vnnlib"]
    key = str(onnx_path.resolve())
    if key not in nets:
        nets[key] = load_onnx(onnx_path)
    network = nets[key]
    prop = read_vnnlib(vnnlib_path, network.input_dim)
    kwargs = _row_options(row, options, base).as_kwargs()
    domain = prop.domain  # handed to the solve as read: a box, a polytope or a union
    check_arguments(network, domain, **kwargs)  # what the query would refuse, refused now
    inputs = {
        "onnx": row["onnx"],
        "vnnlib": row["vnnlib"],
        "timeout": kwargs["time_limit"],
        "norm": kwargs["norm"],
        "c": kwargs["c"],
        "output_norm": kwargs["output_norm"],
        "domain": domain_kind(domain),
        "ignored_output_assertions": prop.output_assertions,
    }
    digest = model_digest(key)  # the .onnx file and the external data files it names
    parts = {"kind": "solve", "onnx": digest, "vnnlib": file_digest(str(vnnlib_path))}
    return Task(
        id=f"row {number}",
        kind="solve",
        model=key,
        domain=domain,
        options=kwargs,
        inputs=inputs,
        fingerprint=fingerprint({**parts, "options": kwargs}),
        model_digest=digest,
    )


def domain_kind(domain: Domain | Disjunction) -> str:
    """What a result line records of a VNN-LIB query's input set: ``box``, ``polytope`` (a box
    cut by linear rows) or ``union`` (of boxes and polytopes)."""
    if isinstance(domain, Disjunction):
        return "union"
    if isinstance(domain, Polytope):
        return "polytope"
    if isinstance(domain, Box):
        return "box"
    raise TypeError(f"a VNN-LIB property gives no {type(domain).__name__}")


def _row_options(row: dict[str, str], options: SolveOptions, base: Path) -> SolveOptions:
    """``options`` with the row's own timeout, norm, c and output norm where it gives them."""
    changes: dict[str, Any] = {}
    if row.get("timeout") and options.time_limit is None:
        try:
            changes["time_limit"] = float(row["timeout"])
        except ValueError:
            raise InstanceError(
                f"timeout must be a number of seconds, got {row['timeout']!r}"
            ) from None
    if row.get("norm"):
        changes["norm"] = row["norm"]
    if row.get("c"):
        is_file = Path(row["c"]).suffix.lower() in {".npy", ".json", ".txt", ".csv"}
        text = str(base / row["c"]) if is_file else row["c"]
        changes["c"] = tuple(float(v) for v in load_vector(text, "c"))
        changes["output_norm"] = None
    if row.get("output_norm"):
        changes["output_norm"] = row["output_norm"]
        changes.setdefault("c", None)
    return replace(options, **changes)
