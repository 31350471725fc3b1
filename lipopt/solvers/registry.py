"""Solver adapters by name; availability is checked when asked, never at import."""

from __future__ import annotations

from collections.abc import Callable

from lipopt.solvers.base import INSTALL_HINTS, Solver, SolverError


def _highs() -> Solver:
    from lipopt.solvers.highs import HighsSolver

    return HighsSolver()


def _cbc() -> Solver:
    from lipopt.solvers.cbc import CbcSolver

    return CbcSolver()


def _scip() -> Solver:
    from lipopt.solvers.scip import ScipSolver

    return ScipSolver()


def _gurobi() -> Solver:
    from lipopt.solvers.gurobi import GurobiSolver

    return GurobiSolver()


#: name -> adapter factory (the factory imports the adapter's module; nothing is probed)
ADAPTERS: dict[str, Callable[[], Solver]] = {
    "highs": _highs,
    "scip": _scip,
    "cbc": _cbc,
    "gurobi": _gurobi,
}


#: ``solver="auto"``: the adapter :func:`get` returns for it (lipopt.lipschitz also races SCIP)
AUTO = "auto"
AUTO_ADAPTER = "highs"

#: the adapters that take a nonconvex quadratic constraint (the ℓ2 model's ``t <= ||g||_2^2``)
QUADRATIC = frozenset({"scip"})


def is_auto(name: str) -> bool:
    """Whether ``name`` asks for ``"auto"`` (case and spaces ignored, as in :func:`get`)."""
    return isinstance(name, str) and name.strip().lower() == AUTO


def adapter_key(name: str) -> str:
    """The adapter ``name`` asks for (case and spaces ignored; ``"auto"``: HiGHS's)."""
    return AUTO_ADAPTER if is_auto(name) else name.strip().lower()


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
            f"to install it: {INSTALL_HINTS[key]}"
        )
    return solver


def available() -> list[str]:
    """Names of the adapters usable on this machine, in preference order."""
    return [name for name, make in ADAPTERS.items() if make().available()]
