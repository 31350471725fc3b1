"""How one option of a solve is declared, once: its help, command-line flag and kind, validator,
and whether sub-questions inherit it (the field metadata of :class:`lipopt.config.SolveConfig`,
in the spirit of Pyomo's ``ConfigDict`` with ``declare_as_argument``).

The command line's options (:func:`lipopt.cli.common.add_config_arguments`), the keyword
defaults of :func:`lipopt.lipschitz` and the checks of :func:`lipopt.config.configure` are read
from these declarations.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from enum import Enum
from typing import Any

from lipopt.query import LipschitzError

#: the key of a field's metadata that holds its :class:`Option`
OPTION = "lipopt.option"

#: a validator: ``check(name, value)`` raises :class:`~lipopt.query.LipschitzError` if refused
Check = Callable[[str, Any], None]


class Kind(Enum):
    """How an option appears on the command line."""

    API = "api"  # no flag: lipschitz() only
    VALUE = "value"  # --name VALUE, of the declared ``type``
    CHOICE = "choice"  # --name {a,b,...}
    SWITCH = "switch"  # --name / --no-name: True / False, "auto" when neither is given
    FLAG = "flag"  # --name: True (default False)
    NEGATED = "negated"  # --no-name: False (default True)


class Group(Enum):
    """Where ``lipopt solve --help`` lists an option."""

    NONE = ""
    SOLVING = "solving"
    SPEED = "speed levers (each can be switched off)"
    OUTPUT = "output"


@dataclass(frozen=True)
class Option:
    """One option's declaration besides its type and default (the dataclass field's).

    Attributes:
        help: the command line's help (``lipopt solve``'s; for a switch, of ``--name``).
        kind: how it appears on the command line.
        group: where ``lipopt solve --help`` lists it.
        type: what ``--name VALUE`` converts to (:data:`Kind.VALUE`).
        choices: the values ``--name`` takes (:data:`Kind.CHOICE`).
        metavar: the value's name in the help.
        off: a switch's ``--no-name`` help.
        inherit: whether a sub-question inherits it (False: each sets its own).
        check: the validator of a given value, where one is context free.
        batch: whether ``lipopt batch`` takes it for every query.
        doc: its meaning in the docs' option table (markdown; the help where empty).
        shown: its default as the docs' option table shows it.
    """

    help: str
    kind: Kind = Kind.API
    group: Group = Group.NONE
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    off: str = ""
    inherit: bool = True
    check: Check | None = None
    batch: bool = False
    doc: str = ""
    shown: str = ""

    @property
    def flag(self) -> bool:
        """Whether the command line has a flag for it."""
        return self.kind is not Kind.API


def option(default: Any, **declared: Any) -> Any:
    """A dataclass field with ``default`` and its :class:`Option` (``declared``) as metadata."""
    return field(default=default, metadata={OPTION: Option(**declared)})


def declared(item: Field[Any]) -> Option | None:
    """The :class:`Option` of a dataclass field (None for an undeclared field)."""
    return item.metadata.get(OPTION)


def declarations(cls: type) -> dict[str, tuple[Option, Any]]:
    """Each declared field of the dataclass ``cls``, in order: its :class:`Option` and
    default."""
    return {f.name: (spec, f.default) for f in fields(cls) if (spec := declared(f)) is not None}


def check_gap(name: str, gap: Any) -> None:
    if gap is not None and not (0 <= gap < 1):
        raise LipschitzError(f"gap must be in [0, 1), got {gap}")


def check_positive(name: str, value: Any) -> None:
    if value is not None and not value > 0:
        raise LipschitzError(f"{name.replace('_', ' ')} must be positive, got {value}")


def check_count(name: str, value: Any) -> None:
    """A whole number of at least 1, or None (not a bool: True is no count)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LipschitzError(f"{name} must be a whole number or None, got {value!r}")
    if value < 1:
        raise LipschitzError(f"{name} must be at least 1, got {value}")


def check_text(name: str, value: Any) -> None:
    """A non-empty string, or None."""
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise LipschitzError(f"{name} must be a non-empty string or None, got {value!r}")


def check_bool(name: str, value: Any) -> None:
    """True or False only (1 or numpy's True would be silently ignored)."""
    if not isinstance(value, bool):
        raise LipschitzError(f"{name} must be True or False, got {value!r}")


def check_auto_bool(name: str, value: Any) -> None:
    """A bool or ``"auto"``."""
    if value != "auto" and not isinstance(value, bool):
        raise LipschitzError(f"{name} must be True, False or 'auto', got {value!r}")


def check_auto_equal(name: str, value: Any) -> None:
    """Equal to True, False or ``"auto"``."""
    if value not in ("auto", True, False):
        raise LipschitzError(f"{name} must be True, False or 'auto', got {value!r}")


def check_auto_options(kind: str) -> Check:
    """A string is ``"auto"`` (True, False or the options ``kind`` are taken as they are)."""

    def check(name: str, value: Any) -> None:
        if isinstance(value, str) and value != "auto":
            raise LipschitzError(f"{name} must be True, False, 'auto' or {kind}, got {value!r}")

    return check


__all__ = ["OPTION", "Group", "Kind", "Option", "declarations", "declared", "option"]
