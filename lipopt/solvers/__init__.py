"""Solver adapters behind one small protocol (see :mod:`lipopt.solvers.base`)."""

from lipopt.solvers.base import SolveOptions, Solver, SolverError, SolveResult, Termination
from lipopt.solvers.registry import available, get

__all__ = [
    "SolveOptions",
    "SolveResult",
    "Solver",
    "SolverError",
    "Termination",
    "available",
    "get",
]
