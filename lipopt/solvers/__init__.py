"""Solver adapters behind one small protocol (see :mod:`lipopt.solvers.base`)."""

from lipopt.solvers.adapter import Adapter, Capabilities
from lipopt.solvers.base import (
    NoBoundError,
    SolveOptions,
    Solver,
    SolverError,
    SolveResult,
    SolverFailure,
    Termination,
)
from lipopt.solvers.registry import available, get

__all__ = [
    "Adapter",
    "Capabilities",
    "NoBoundError",
    "SolveOptions",
    "SolveResult",
    "Solver",
    "SolverError",
    "SolverFailure",
    "Termination",
    "available",
    "get",
]
