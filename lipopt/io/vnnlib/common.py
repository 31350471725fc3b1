"""What the VNN-LIB 1.0 and 2.0 readers share: the error, the file's text, and the terms.

Each reader turns its file into :class:`Parsed`: the number of inputs, how to name one, and the
asserts as trees of :class:`Node`. The rest (:mod:`lipopt.io.vnnlib.linear`,
:mod:`lipopt.io.vnnlib.sets`) is one code for both versions.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: an offending term is shown in a message shortened to this many characters
MAX_TERM_CHARS = 80

#: the comparisons a term may make (``=``: both versions' equality, 2.0 writes ``==``)
COMPARISONS = frozenset({"<=", ">=", "<", ">", "="})


class VnnlibError(ValueError):
    """A VNN-LIB file that cannot be read, or whose input set lipopt does not take exactly
    (one-line message naming the file)."""


class Refusal(Exception):
    """Raised while reading; the public functions add the file's name (a :class:`VnnlibError`)."""


@dataclass(frozen=True, eq=False)
class Node:
    """One term of an assert, as both readers write it.

    ``op`` is ``"num"`` (a number, ``value``), ``"input"`` (the input element of flat index
    ``index``), ``"output"`` (a variable that is not an input), ``"bool"`` (``true``/``false``),
    an arithmetic operator (``"+"``, ``"-"``: negation with one argument, subtraction with more,
    ``"*"``), a comparison of :data:`COMPARISONS` or ``"!="``, a connective (``"and"``,
    ``"or"``), or any other operator name as the file writes it. ``source`` is the reader's own
    node, shown by ``render`` in messages.
    """

    op: str
    args: tuple[Node, ...] = ()
    value: float | int | None = None
    index: int = -1
    source: Any = None
    render: Callable[[Any], str] = str

    def show(self) -> str:
        """The term as the file writes it, on one line, shortened to :data:`MAX_TERM_CHARS`."""
        try:
            text = self.render(self.source)
        except Exception:  # only for a message
            text = repr(self.source)
        return shorten(" ".join(text.split()))


@dataclass(frozen=True)
class Parsed:
    """A property file read by one reader: its inputs and its asserts."""

    #: the number of inputs (the flattened input tensor's size)
    n_inputs: int
    #: the input of a flat index as the file names it (``X_3``, ``X[0,1]``)
    input_name: Callable[[int], str]
    #: one node per ``(assert ...)``, in file order
    assertions: list[Node]
    #: "1.0" or "2.0"
    version: str


def mentions_input(node: Node) -> bool:
    """Whether ``node`` has an input anywhere below it."""
    stack = [node]
    while stack:
        item = stack.pop()
        if item.op == "input":
            return True
        stack.extend(item.args)
    return False


def read_text(path: str | os.PathLike) -> str:
    """The file's text, gunzipped if it starts with the gzip magic bytes."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise Refusal(f"cannot read the file: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise Refusal(f"not a valid gzip file: {one_line(exc)}") from None
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is dropped
    except UnicodeDecodeError as exc:
        raise Refusal(f"not UTF-8 text (invalid byte at offset {exc.start})") from None


def shorten(text: str) -> str:
    """``text`` cut to :data:`MAX_TERM_CHARS`, ending in "..." if cut."""
    return text if len(text) <= MAX_TERM_CHARS else text[: MAX_TERM_CHARS - 3] + "..."


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name if it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__
