"""How to answer a query: the typed options of one call, validated once, with today's messages.

``"auto"`` values stay as given here; the planner (:mod:`lipopt.plan`) resolves them from the
query, the machine's facts and the :class:`~lipopt.policy.Policy`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.balance import balanced
from lipopt.domain import Box, Domain, LinfBall, check_dimension
from lipopt.formulation.build import Formulation
from lipopt.network import Network
from lipopt.norms import POLYHEDRAL, InputNorm, OutputNorm
from lipopt.policy import Policy
from lipopt.query import LipschitzError, Query, resolve_seed
from lipopt.regions import RegionOptions
from lipopt.solvers import get
from lipopt.solvers.registry import capabilities, is_auto
from lipopt.split import SplitOptions

FloatArray = NDArray[np.float64]


class Mode(str, Enum):
    """How far to solve: to optimality, or only the LP relaxation (LipLP)."""

    EXACT = "exact"
    LP = "lp"


@dataclass(frozen=True)
class SolveConfig:
    """The options of :func:`lipopt.lipschitz` (see its docstring), checked.

    ``formulation`` is a :class:`Formulation`, or None for ``"auto"`` where the two may race
    (exact mode, a fixed c, an input norm of ``auto_race_norms``); ``start_point`` is the
    checked point or None.
    """

    solver: str = "auto"
    mode: Mode = Mode.EXACT
    time_limit: float | None = None
    gap: float | None = None
    threads: int | None = None
    verbose: bool = False
    bounds: str = "linear"
    max_refinements: int | None = None
    random_seed: int = 0
    split: bool | str | SplitOptions = "auto"
    decompose: bool | str = "auto"
    regions: bool | str | RegionOptions = "auto"
    formulation: Formulation | None = Formulation.BACKWARD
    workers: int | None = None
    subnet_bounds: bool | str = "auto"
    attack: bool | str = "auto"
    sign_split: bool = False
    gate_split: bool = False
    split_leader: bool = True
    products: bool = True
    start_point: FloatArray | None = None

    def but(self, **changes: Any) -> SolveConfig:
        """This configuration with ``changes`` (already valid: no checks)."""
        return replace(self, **changes)

    @property
    def exact(self) -> bool:
        return self.mode is Mode.EXACT

    def arguments(self) -> dict[str, Any]:
        """The options a sub-question inherits, as :func:`lipopt.lipschitz`'s keywords (the
        domain split, the region search, the formulation and the time limit are its own)."""
        inherited = {f.name: getattr(self, f.name) for f in fields(self)}
        for own in ("split", "regions", "formulation", "time_limit"):
            del inherited[own]
        return inherited


#: every option of :class:`SolveConfig` at its default, as :func:`lipopt.lipschitz`'s keywords
LEVER_DEFAULTS: dict[str, Any] = {
    **{f.name: f.default for f in fields(SolveConfig)},
    "formulation": "auto",
}


def configure(
    network: Network,
    domain: Domain,
    norm: InputNorm | str,
    objective: tuple[ArrayLike | None, OutputNorm | str | None],
    levers: dict[str, Any],
    policy: Policy,
) -> tuple[Query, SolveConfig]:
    """The query and its configuration from the arguments of :func:`lipopt.lipschitz`, checked
    in the order users have always seen the messages in. ``objective`` is ``(c, output_norm)``;
    ``levers`` the keyword options (every key of :class:`SolveConfig`). The query's network is
    ``network`` with badly scaled neurons balanced (:func:`lipopt.balance.balanced`)."""
    input_norm = InputNorm.parse(norm)
    mode = levers["mode"]
    mode = Mode(mode) if not isinstance(mode, Mode) else mode
    _check_limits(levers)
    check_dimension(domain, network.input_dim)
    seed = resolve_seed(network, *objective)
    query = Query(balanced(network, policy.balance_ratio), domain, input_norm, seed)
    form = resolve_formulation(levers["formulation"], query, mode, policy.auto_race_norms)
    get(levers["solver"])  # an unknown solver is refused here
    _check_switches(levers, query, mode, form)
    config = SolveConfig(
        **{
            **levers,
            "mode": mode,
            "formulation": form,
            "workers": None if levers["workers"] is None else int(levers["workers"]),
            "start_point": _checked_start(levers["start_point"], query, mode),
        }
    )
    _check_gate_split(config, query)
    _check_regions(config.regions, config, query)
    _check_l2_output(config, query)
    return query, config


def _check_limits(levers: dict[str, Any]) -> None:
    gap, time_limit, workers = levers["gap"], levers["time_limit"], levers["workers"]
    threads = levers["threads"]
    if gap is not None and not (0 <= gap < 1):
        raise LipschitzError(f"gap must be in [0, 1), got {gap}")
    if time_limit is not None and not time_limit > 0:
        raise LipschitzError(f"time limit must be positive, got {time_limit}")
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, numbers.Integral):
            raise LipschitzError(f"workers must be a whole number or None, got {workers!r}")
        if workers < 1:
            raise LipschitzError(f"workers must be at least 1, got {workers}")
    if threads is not None:  # checked as workers is, not handed to the solver as it is
        if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
            raise LipschitzError(f"threads must be a whole number or None, got {threads!r}")
        if threads < 1:
            raise LipschitzError(f"threads must be at least 1, got {threads}")


def resolve_formulation(
    formulation: Formulation | str, query: Query, mode: Mode, race_norms: frozenset[str]
) -> Formulation | None:
    """The formulation to build; None where ``"auto"`` may race both (exact mode, a fixed c,
    an input norm of ``race_norms``); forward refused (with a clear message) for an output
    norm."""
    if formulation == "auto":
        racing = mode is Mode.EXACT and query.fixed_c and query.norm in race_norms
        return None if racing else Formulation.BACKWARD
    try:
        form = Formulation.parse(formulation)
    except ValueError as err:
        raise LipschitzError(f"{err} or auto") from None
    if form is Formulation.FORWARD and not query.fixed_c:
        raise LipschitzError(
            "the forward formulation needs a fixed c; with an output norm use 'backward'"
        )
    if form is Formulation.FORWARD and query.norm not in POLYHEDRAL:
        raise LipschitzError(
            "the forward formulation takes the linf and l1 input norms; for l2 use 'backward'"
        )
    return form


def _check_switches(
    levers: dict[str, Any], query: Query, mode: Mode, form: Formulation | None
) -> None:
    """The on/off/auto levers: each of an accepted type, and applicable where forced on."""
    if isinstance(levers["split"], str) and levers["split"] != "auto":
        split = levers["split"]
        raise LipschitzError(f"split must be True, False, 'auto' or SplitOptions, got {split!r}")
    if levers["decompose"] != "auto" and not isinstance(levers["decompose"], bool):
        decompose = levers["decompose"]
        raise LipschitzError(f"decompose must be True, False or 'auto', got {decompose!r}")
    for name in ("subnet_bounds", "attack"):
        if levers[name] not in ("auto", True, False):
            raise LipschitzError(f"{name} must be True, False or 'auto', got {levers[name]!r}")
    if levers["attack"] is True and (mode is not Mode.EXACT or not query.fixed_c):
        raise LipschitzError(
            "the attack's cutoff needs mode 'exact' and a fixed c (not an output norm)"
        )
    _check_bool(levers, "products")
    _check_bool(levers, "sign_split")  # 1 or numpy's True would be silently ignored
    if levers["sign_split"] is True and (
        mode is not Mode.EXACT or query.norm is not InputNorm.LINF or form is Formulation.FORWARD
    ):
        raise LipschitzError(
            "the sign split needs mode 'exact', the l-inf input norm and the backward formulation"
        )
    _check_bool(levers, "gate_split")
    _check_bool(levers, "split_leader")


def _check_bool(levers: dict[str, Any], name: str) -> None:
    if not isinstance(levers[name], bool):
        raise LipschitzError(f"{name} must be True or False, got {levers[name]!r}")


def _checked_start(start: ArrayLike | None, query: Query, mode: Mode) -> FloatArray | None:
    """``start_point`` checked: a finite real point of the domain, one entry per input."""
    if start is None:
        return None
    if mode is not Mode.EXACT or not query.fixed_c:
        raise LipschitzError("a start point needs mode 'exact' and a fixed c (not an output norm)")
    dim = query.network.input_dim
    try:
        if np.iscomplexobj(start):
            raise TypeError("complex")
        point = np.asarray(start, dtype=np.float64)
    except (TypeError, ValueError):
        raise LipschitzError(
            f"start_point must be a point of {dim} numbers, got {start!r}"
        ) from None
    if point.shape != (dim,):
        raise LipschitzError(
            f"start_point must have {dim} entries (one per input), got shape {point.shape}"
        )
    if not np.all(np.isfinite(point)):
        raise LipschitzError("start_point must be finite")
    if not query.domain.contains(point):
        raise LipschitzError("start_point must lie in the domain")
    return point


def _check_gate_split(config: SolveConfig, query: Query) -> None:
    if config.gate_split is not True:
        return
    if config.sign_split is True:
        raise LipschitzError("choose one of the sign split and the gate split, not both")
    if config.formulation is None:
        raise LipschitzError(
            "the gate split needs formulation 'forward' or 'backward' (with 'auto' the two "
            "formulations race on the cores instead)"
        )
    if config.mode is not Mode.EXACT or query.norm is not InputNorm.LINF:
        raise LipschitzError("the gate split needs mode 'exact' and the l-inf input norm")
    if not query.fixed_c:
        raise LipschitzError("the gate split needs a fixed c, not an output norm")


def _check_l2_output(config: SolveConfig, query: Query) -> None:
    """The ℓ2 output norm's ball is a quadratic row: an exact solve needs a solver that takes
    one (SCIP; ``auto`` picks it)."""
    if query.seed is not OutputNorm.L2 or not config.exact or is_auto(config.solver):
        return
    if not capabilities(config.solver).quadratic:
        raise LipschitzError(
            f"the l2 output norm's ball is a quadratic constraint, which {config.solver} does "
            "not take; use solver scip (or auto), or mode lp for an upper bound"
        )


def regions_applicable(config: SolveConfig, query: Query) -> bool:
    """The region search answers exact questions of a fixed c over boxes and ℓ∞ balls."""
    return config.exact and query.fixed_c and isinstance(query.domain, (Box, LinfBall))


def _check_regions(regions: Any, config: SolveConfig, query: Query) -> None:
    if regions is False or regions == "auto":
        return
    if regions not in ("auto", True) and not isinstance(regions, RegionOptions):
        raise LipschitzError(
            f"regions must be True, False, 'auto' or RegionOptions, got {regions!r}"
        )
    if not regions_applicable(config, query):
        raise LipschitzError(
            "the region search needs mode 'exact', a fixed c (not an output norm) and a box "
            "or l-inf ball domain"
        )
