"""Solver adapters by name; what each can do, read off its class (the declarations of
:class:`~lipopt.solvers.adapter.Adapter`); what ``solver="auto"`` means (:func:`resolve`).
Availability is checked when asked, never at import."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from lipopt.solvers.adapter import Adapter, Capabilities
from lipopt.solvers.base import Solver, SolverError
from lipopt.solvers.cbc import CbcSolver
from lipopt.solvers.gurobi import GurobiSolver
from lipopt.solvers.highs import HighsSolver
from lipopt.solvers.scip import ScipSolver

#: the adapters, in preference order
CLASSES: tuple[type[Adapter], ...] = (HighsSolver, ScipSolver, CbcSolver, GurobiSolver)

#: name -> adapter factory (its class: making one probes nothing); tests register stand-ins
ADAPTERS: dict[str, Callable[[], Solver]] = {adapter.name: adapter for adapter in CLASSES}

#: ``solver="auto"``: the adapter :func:`get` returns for it, and where the policy's pick for a
#: question (the race's solver of each model, the ℓ2 solver) is not usable (:func:`resolve`)
AUTO = "auto"
AUTO_ADAPTER = HighsSolver.name

# The adapters' declarations as tables by name (the names code and tests have always used).

#: name -> how to install the solver
INSTALL_HINTS: dict[str, str] = {a.name: a.install_hint for a in CLASSES}

#: the adapters that take a nonconvex quadratic constraint (the ℓ2 model's ``t <= ||g||_2^2``)
QUADRATIC = frozenset(a.name for a in CLASSES if a.QUADRATIC)

#: the adapters that may solve in a forked worker process (:mod:`lipopt.parallel.workers`)
FORKABLE = frozenset(a.name for a in CLASSES if a.FORKABLE)

#: name -> options for a solve under a cutoff (the adapters that declare any)
CUTOFF_OPTIONS: dict[str, dict[str, Any]] = {
    a.name: dict(a.CUTOFF_OPTIONS) for a in CLASSES if a.CUTOFF_OPTIONS
}

#: name -> options for a model too large for the solver's presolve (the adapters that declare any)
LARGE_MODEL_OPTIONS: dict[str, dict[str, Any]] = {
    a.name: dict(a.LARGE_MODEL_OPTIONS) for a in CLASSES if a.LARGE_MODEL_OPTIONS
}


def capabilities(name: str) -> Capabilities:
    """What the adapter registered as ``name`` declares (case and spaces ignored; ``"auto"``:
    HiGHS's); an unknown name declares nothing."""
    key = adapter_key(name)
    make = ADAPTERS.get(key)
    declared: object = make if isinstance(make, type) or make is None else make()
    return Capabilities.of(declared, key)


def is_auto(name: str) -> bool:
    """Whether ``name`` asks for ``"auto"`` (case and spaces ignored, as in :func:`get`)."""
    return isinstance(name, str) and name.strip().lower() == AUTO


def resolve(name: str, usable: Collection[str] = (), preferred: str | None = None) -> str:
    """The adapter ``name`` asks for (case and spaces ignored): itself when named; for
    ``"auto"``, ``preferred`` (the policy's pick for the question at hand) where it is among
    ``usable``, else :data:`AUTO_ADAPTER`. The one place ``"auto"`` is decided."""
    if not is_auto(name):
        return name.strip().lower()
    if preferred is not None and preferred in usable:
        return preferred
    return AUTO_ADAPTER


def adapter_key(name: str) -> str:
    """The adapter ``name`` asks for (case and spaces ignored; ``"auto"``: HiGHS's)."""
    return resolve(name)


def get(name: str) -> Solver:
    """The adapter called ``name`` (case-insensitive); ``"auto"`` gives HiGHS's.

    Raises:
        SolverError: one line naming the usable solvers, and how to install ``name`` if it is
            known but not usable here.
    """
    key = adapter_key(name)
    if key not in ADAPTERS:
        usable = ", ".join(available()) or "none"
        known = ", ".join([AUTO, *ADAPTERS])
        raise SolverError(
            f"unknown solver {name!r}; known solvers: {known} (usable here: {usable})"
        )
    solver = ADAPTERS[key]()
    if not solver.available():
        usable = ", ".join(available()) or "none"
        raise SolverError(
            f"solver {key!r} is not installed or not usable here (usable: {usable}); "
            f"to install it: {capabilities(key).install_hint}"
        )
    return solver


def is_usable(name: str) -> bool:
    """Whether the registered adapter ``name`` can be used here."""
    return ADAPTERS[name]().available()


def available() -> list[str]:
    """Names of the adapters usable on this machine, in preference order."""
    return [name for name in ADAPTERS if is_usable(name)]
