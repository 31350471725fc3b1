"""What a user gets back from :func:`lipopt.lipschitz`: :class:`LipschitzResult`, built in one
place (:func:`lipopt.driver.to_result`) from the plan's :class:`~lipopt.bracket.Bracket`."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from lipopt.status import Status
from lipopt.verify import EXACT_TOLERANCE

if TYPE_CHECKING:
    from lipopt.formulation.build import LipschitzModel

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class LipschitzResult:
    """The answer, with everything needed to check it.

    Attributes:
        value: certified upper bound on the constant; the exact constant when
            ``status == "optimal"``.
        lower: ``||∇(c^T f)(witness)||_{α*}`` recomputed in numpy: attained, so a lower bound.
        upper: same as ``value``.
        status: how the solve ended, a :class:`~lipopt.status.Status` (equal to its value:
            ``status == "optimal"``; a value given here is converted): ``optimal``,
            ``upper_bound`` (the solvers finished but their optimum could not be shown
            attained: ``[lower, value]`` brackets the constant), ``gap_limit``, ``time_limit``,
            ``relaxation``, ``solver_error`` (the solver failed; the bounds are those proven
            before it) or ``interrupted``.
        witness: the input where ``lower`` is attained (f is differentiable there).
        exact_certified: the witness's linear region is full-dimensional inside the domain and
            its gradient norm matches ``value``, so the value is attained — exact for any network.
        model_stats: ``variables``, ``constraints``, ``binaries``, ``unstable_neurons``.
        timings: seconds spent in ``bounds``, ``build``, ``solve``, ``verify``, and where
            they ran ``regions`` (the region search), ``split`` (domain splitting's own
            work), ``probe`` and ``race`` (the formulation race); they add up to the wall time.
        solver: solver name and version.
        norm: the input norm α; ``c``: the output weighting (None when an output norm is used);
            ``output_norm``: the output norm β of an (α, β) constant (None for a fixed c).
        nodes: branch-and-bound nodes (where reported); ``refinements``: re-solves that excluded
            lower-dimensional activation patterns.
        message: anything the user should know about this answer.
        model: the built :class:`~lipopt.formulation.LipschitzModel` (inspect or extend it).
    """

    value: float
    lower: float | None
    upper: float
    status: Status
    witness: FloatArray | None
    exact_certified: bool
    model_stats: dict[str, int]
    timings: dict[str, float]
    solver: str
    norm: str
    c: FloatArray | None
    output_norm: str | None = None
    nodes: int | None = None
    refinements: int = 0
    message: str = ""
    model: LipschitzModel | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))  # "optimal" -> Status.OPTIMAL

    @property
    def gap(self) -> float | None:
        if self.lower is None:
            return None
        return max(self.upper - self.lower, 0.0) / max(abs(self.upper), 1e-12)

    @property
    def tolerance(self) -> float:
        """``optimal`` means ``|value - lower| <= tolerance * max(1, |value|)``, with ``lower``
        attained inside a full-dimensional linear region."""
        return EXACT_TOLERANCE

    @property
    def seconds(self) -> float:
        return float(sum(self.timings.values()))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the CLI's ``--json`` object).

        Built field by field, never with :func:`dataclasses.asdict`: that deep-copies every
        field, the Pyomo ``model`` included, which cost more than the solve on larger networks.
        """
        out = {
            f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "model"
        }
        out.update(out.pop("model_stats"))
        out["status"] = self.status.value  # a plain string, for any JSON writer
        out["witness"] = None if self.witness is None else [float(v) for v in self.witness]
        out["c"] = None if self.c is None else [float(v) for v in self.c]
        out["gap"] = self.gap
        out["tolerance"] = self.tolerance
        out["seconds"] = self.seconds
        return out
