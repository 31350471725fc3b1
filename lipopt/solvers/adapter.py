"""The base of the solver adapters: what each one declares it can do, and the start of a solve
they share (a constant objective answered without the solver, a missing solver refused)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from lipopt.solvers.base import SolveOptions, SolverError, SolveResult, constant_objective_result

if TYPE_CHECKING:
    import pyomo.environ as pe

#: no options: the default of :attr:`Adapter.CUTOFF_OPTIONS` and :attr:`Adapter.LARGE_MODEL_OPTIONS`
NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})


class Adapter(ABC):
    """A solver adapter. Each subclass declares, as class attributes:

    - ``name``: its key in :data:`lipopt.solvers.registry.ADAPTERS`; ``label``: its name in
      messages; ``install_hint``: how to install the solver.
    - ``QUADRATIC``: it takes a nonconvex quadratic row (the ℓ2 input norm's
      ``t <= ||g||_2^2``, the ℓ2 output norm's ball, an ℓ2-ball domain).
    - ``FORKABLE``: it may solve in a forked worker process (it solves inside the Python
      process, so a terminated worker stops its solve).
    - ``CUTOFF_OPTIONS``: its options for a solve under a cutoff, where "infeasible" is the
      expected answer; ``LARGE_MODEL_OPTIONS``: its options for a model too large for its
      presolve to keep the time limit (:mod:`lipopt.policy` says when a model is).

    and implements :meth:`why_unavailable`, :meth:`version` and :meth:`_solve`.
    """

    name: str  # not a ClassVar: the Solver protocol reads it off instances
    label: ClassVar[str]
    install_hint: ClassVar[str]
    supports_mip: ClassVar[bool] = True
    QUADRATIC: ClassVar[bool] = False
    FORKABLE: ClassVar[bool] = False
    CUTOFF_OPTIONS: ClassVar[Mapping[str, Any]] = NO_OPTIONS
    LARGE_MODEL_OPTIONS: ClassVar[Mapping[str, Any]] = NO_OPTIONS

    def available(self) -> bool:
        """Whether the solver can be used here (checked when asked, never at import)."""
        return not self.why_unavailable()

    @abstractmethod
    def why_unavailable(self) -> str:
        """Why the solver cannot be used here, in one line; "" when it can."""

    @abstractmethod
    def version(self) -> str:
        """The solver's version string."""

    def solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        """Maximise ``model.objective``: a constant objective without the solver
        (:func:`~lipopt.solvers.base.constant_objective_result`), a missing solver refused
        with why and how to install it, else :meth:`_solve`. Never raises for limits reached;
        raises :class:`~lipopt.solvers.base.SolverError` on failure."""
        trivial = constant_objective_result(model, self.name)
        if trivial is not None:
            return trivial
        if not self.available():
            why = self.why_unavailable() or f"{self.label} is not usable here"
            raise SolverError(f"{why}; {self.install_hint}")
        return self._solve(model, options)

    @abstractmethod
    def _solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        """The solve itself, on a usable solver and a model whose objective is not constant."""


@dataclass(frozen=True)
class Capabilities:
    """What an adapter declares (see :class:`Adapter`), read off its class."""

    name: str
    label: str
    install_hint: str
    quadratic: bool
    forkable: bool
    cutoff_options: Mapping[str, Any]
    large_model_options: Mapping[str, Any]

    @classmethod
    def of(cls, adapter: object, name: str) -> Capabilities:
        """The declarations of ``adapter`` (a class or an instance) registered as ``name``;
        an adapter that declares nothing (a test's stand-in that only solves) takes no
        quadratic row, is not forked and gets no options."""
        return cls(
            name=name,
            label=getattr(adapter, "label", name),
            install_hint=getattr(adapter, "install_hint", ""),
            quadratic=bool(getattr(adapter, "QUADRATIC", False)),
            forkable=bool(getattr(adapter, "FORKABLE", False)),
            cutoff_options=getattr(adapter, "CUTOFF_OPTIONS", NO_OPTIONS),
            large_model_options=getattr(adapter, "LARGE_MODEL_OPTIONS", NO_OPTIONS),
        )
