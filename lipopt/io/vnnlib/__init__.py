"""Read the input set of a VNN-LIB property file, version 1.0 (VNN-COMP) or 2.0.

:func:`read_vnnlib` returns a :class:`VnnlibProperty`: the input set as a
:class:`~lipopt.domain.Box`, a :class:`~lipopt.domain.Polytope` (a box cut by linear rows
``A x <= b``) or a :class:`~lipopt.domain.Disjunction` (a union of boxes and polytopes, from an
``or`` over inputs), and the number of output assertions (asserts that mention no input:
counted and ignored, lipopt computes a constant over the input set, it does not verify the
property). Anything it cannot turn into that set exactly is refused with a one-line
:class:`VnnlibError` naming the file: a silently wrong set is the worst outcome.

- A file whose first command is ``(vnnlib-version <2.x>)`` is a 2.0 file, read with the official
  parser (:mod:`lipopt.io.vnnlib.v2`, the optional ``vnnlib`` package); any other version is
  refused. Every other file is a 1.0 file (:mod:`lipopt.io.vnnlib.v1`).
- What the asserts may say of the inputs is one grammar for both versions
  (:mod:`lipopt.io.vnnlib.sets`, :mod:`lipopt.io.vnnlib.linear`).
- Gzip-compressed files (``.vnnlib.gz``) are recognised by their magic bytes and read
  transparently.

:func:`read_vnnlib_box` is the older reader of a box alone (a :class:`VnnlibBox`); it refuses
every other set, and it keeps a box whose input is held fixed (``lower == upper``), which
:func:`read_vnnlib` refuses as a flat set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from lipopt.domain import Box, Disjunction, Polytope
from lipopt.io.vnnlib.common import MAX_TERM_CHARS, Parsed, Refusal, VnnlibError, read_text
from lipopt.io.vnnlib.sets import MAX_PARTS, domain_of, input_parts
from lipopt.io.vnnlib.v1 import parse_v1
from lipopt.io.vnnlib.v2 import parse_v2

__all__ = [
    "MAX_PARTS",
    "MAX_TERM_CHARS",
    "VnnlibBox",
    "VnnlibError",
    "VnnlibProperty",
    "read_vnnlib",
    "read_vnnlib_box",
]

#: the version command of a 2.0 file, first in it (comments stripped)
_VERSION = re.compile(r"\A\s*\(\s*vnnlib-version\s+<([^>]*)>")


@dataclass(frozen=True)
class VnnlibProperty:
    """The input set of a VNN-LIB property."""

    #: the input set: a box, a polytope, or a union of them
    domain: Box | Polytope | Disjunction
    #: how many asserts mention no input (ignored)
    output_assertions: int
    #: the file's VNN-LIB version, "1.0" or "2.0"
    version: str


@dataclass(frozen=True)
class VnnlibBox:
    """The input box of a VNN-LIB property: ``lower <= x <= upper`` (read-only float64 arrays)."""

    lower: np.ndarray
    upper: np.ndarray
    #: how many assert terms mention only outputs and numbers (ignored)
    output_assertions: int


def read_vnnlib(path: str | os.PathLike, input_dim: int | None = None) -> VnnlibProperty:
    """The input set declared in the VNN-LIB file ``path`` (1.0 or 2.0, plain or gzip).

    ``input_dim``, when given, is the number of inputs the file must declare. Raises
    :class:`VnnlibError` (one line, naming the file) on any rule of the module docstring broken.
    """
    try:
        parsed = _parse_file(path, input_dim)
        parts, outputs = input_parts(parsed)
        domain = domain_of(parts)
    except Refusal as exc:
        raise VnnlibError(f"{os.fspath(path)}: {exc}") from None
    except RecursionError:
        raise VnnlibError(f"{os.fspath(path)}: a term is nested too deeply") from None
    return VnnlibProperty(domain=domain, output_assertions=outputs, version=parsed.version)


def read_vnnlib_box(path: str | os.PathLike, input_dim: int | None = None) -> VnnlibBox:
    """The input box declared in the VNN-LIB file ``path`` (plain or gzip); a set that is not a
    box (linear rows, or a union) is refused. An input held fixed (``lower == upper``) is kept.
    """
    try:
        parsed = _parse_file(path, input_dim)
        parts, outputs = input_parts(parsed)
        if len(parts) > 1:
            raise Refusal(
                f"the input set is not a box: a union of {len(parts)} input sets (an or of "
                "branches over inputs)"
            )
        if parts[0].rows:
            raise Refusal(
                f"the input set is not a box: a linear constraint {parts[0].rows[0][2].show()}"
            )
    except Refusal as exc:
        raise VnnlibError(f"{os.fspath(path)}: {exc}") from None
    except RecursionError:
        raise VnnlibError(f"{os.fspath(path)}: a term is nested too deeply") from None
    return VnnlibBox(lower=parts[0].lower, upper=parts[0].upper, output_assertions=outputs)


def _parse_file(path: str | os.PathLike, input_dim: int | None) -> Parsed:
    """The file read by the reader of its version."""
    text = read_text(path)
    code = "\n".join(line.split(";", 1)[0] for line in text.splitlines())
    version = _VERSION.match(code)
    if version is None:
        return parse_v1(text, input_dim)
    if version.group(1).strip().split(".")[0] != "2":
        raise Refusal(
            f"VNN-LIB version <{version.group(1)}> is not supported (lipopt reads 2.x files, "
            "and 1.0 files, which declare no version)"
        )
    return parse_v2(text, input_dim)
