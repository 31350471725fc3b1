"""Checking one call's options: the query and its :class:`~lipopt.config.SolveConfig` from the
arguments of :func:`lipopt.lipschitz`, each refused in one line with today's messages."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.balance import balanced
from lipopt.config import DECLARED, Mode, SolveConfig
from lipopt.domain import Box, Domain, LinfBall, Polytope, check_dimension
from lipopt.formulation.build import Formulation
from lipopt.network import Network
from lipopt.norms import POLYHEDRAL, InputNorm, OutputNorm
from lipopt.policy import Policy
from lipopt.query import LipschitzError, Query, resolve_seed
from lipopt.search.activation_rules import check_supported
from lipopt.search.regions import RegionOptions
from lipopt.solvers import get
from lipopt.solvers.registry import capabilities, is_auto

FloatArray = NDArray[np.float64]


def check_declared(levers: dict[str, Any], names: tuple[str, ...]) -> None:
    """Each of ``names`` by its declared validator, in the order given."""
    for name in names:
        check = DECLARED[name].check
        if check is not None:
            check(name, levers[name])


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
    check_declared(levers, ("gap", "time_limit", "workers", "threads"))
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
    _check_bab(config, query)
    _check_regions(config.regions, config, query)
    _check_l2_output(config, query)
    return query, config


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
    check_declared(levers, ("split", "decompose", "subnet_bounds", "attack"))
    if levers["attack"] is True and (mode is not Mode.EXACT or not query.fixed_c):
        raise LipschitzError(
            "the attack's cutoff needs mode 'exact' and a fixed c (not an output norm)"
        )
    check_declared(levers, ("products", "sign_split"))
    if levers["sign_split"] is True and (
        mode is not Mode.EXACT or query.norm is not InputNorm.LINF or form is Formulation.FORWARD
    ):
        raise LipschitzError(
            "the sign split needs mode 'exact', the l-inf input norm and the backward formulation"
        )
    # every other declared validator (today gate_split's, split_leader's), in declaration order
    check_declared(levers, tuple(name for name in DECLARED if name not in _CHECKED_FIRST))


#: the validators :func:`configure` runs at their own step (the order of its messages)
_CHECKED_FIRST = (
    "gap", "time_limit", "workers", "threads", "split", "decompose", "subnet_bounds", "attack",
    "products", "sign_split",
)  # fmt: skip


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
    """The region search answers exact questions of a fixed c over boxes, ℓ∞ balls and
    polytopes."""
    return config.exact and query.fixed_c and isinstance(query.domain, (Box, LinfBall, Polytope))


def _check_regions(regions: Any, config: SolveConfig, query: Query) -> None:
    if regions is False or regions == "auto":
        return
    if regions not in ("auto", True) and not isinstance(regions, RegionOptions):
        raise LipschitzError(
            f"regions must be True, False, 'auto' or RegionOptions, got {regions!r}"
        )
    if not regions_applicable(config, query):
        raise LipschitzError(
            "the region search needs mode 'exact', a fixed c (not an output norm) and a box, "
            "l-inf ball or polytope domain"
        )


def _check_bab(config: SolveConfig, query: Query) -> None:
    """``bab=True`` answers exact questions, of the norms its leaves can value exactly; only
    it has parts to send to a Dask ``scheduler``."""
    if config.bab is not True:
        if config.scheduler is not None:
            raise LipschitzError(
                "scheduler sends the activation branch and bound's part MIPs to a Dask "
                "cluster: it needs bab=True (--bab)"
            )
        return
    if not config.exact:
        raise LipschitzError("bab (the activation branch and bound) needs mode 'exact'")
    try:
        check_supported(query.network, query.domain, query.seed, query.norm)
    except ValueError as err:
        raise LipschitzError(str(err)) from err
