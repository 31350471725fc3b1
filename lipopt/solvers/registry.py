"""Solver adapters by name; availability is checked when asked, not at import."""

from __future__ import annotations

from collections.abc import Callable

from lipopt.solvers.base import Solver, SolverError

def _highs() -> Solver:
    from lipopt.solvers.highs import HighsSolver

    return HighsSolver()


ADAPTERS: dict[str, Callable[[], Solver]] = {
    "highs": _highs,
}


def get(name: str) -> Solver:
    """The adapter called ``name``; :class:`SolverError` names the usable ones if it is unknown
    or not installed."""
    key = name.lower()
    if key not in ADAPTERS:
        raise SolverError(f"unknown solver {name!r}; known solvers: {', '.join(sorted(ADAPTERS))}")
    solver = ADAPTERS[key]()
    if not solver.available():
        usable = ", ".join(available()) or "none"
        raise SolverError(f"solver {name!r} is not installed or not usable here (usable: {usable})")
    return solver


def available() -> list[str]:
    """Names of the adapters usable on this machine."""
    return [name for name, make in ADAPTERS.items() if make().available()]
