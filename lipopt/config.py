"""How to answer a query: the typed options of one call, validated once, with today's messages.

``"auto"`` values stay as given here; the planner (:mod:`lipopt.plan`) resolves them from the
query, the machine's facts and the :class:`~lipopt.policy.Policy`.
"""

from __future__ import annotations

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
from lipopt.options import (
    Group,
    Kind,
    Option,
    check_auto_bool,
    check_auto_equal,
    check_auto_options,
    check_bool,
    check_count,
    check_gap,
    check_positive,
    declared,
    option,
)
from lipopt.policy import Policy
from lipopt.query import LipschitzError, Query, resolve_seed
from lipopt.search.regions import RegionOptions
from lipopt.search.split import SplitOptions
from lipopt.solvers import get
from lipopt.solvers.registry import capabilities, is_auto

FloatArray = NDArray[np.float64]


class Mode(str, Enum):
    """How far to solve: to optimality, or only the LP relaxation (LipLP)."""

    EXACT = "exact"
    LP = "lp"


@dataclass(frozen=True)
class SolveConfig:
    """The options of :func:`lipopt.lipschitz` (see its docstring): the one declaration of
    each, its type, default (the public one), validator, help, command-line flag and whether
    sub-questions inherit it (:mod:`lipopt.options`).

    Checked by :func:`configure`: ``formulation`` is then a :class:`Formulation`, or None for
    ``"auto"`` where the two may race (exact mode, a fixed c, an input norm of
    ``auto_race_norms``); ``start_point`` is the checked point or None.
    """

    solver: str = option(
        "auto", kind=Kind.VALUE, group=Group.SOLVING, batch=True,
        help="solver adapter: auto (the default: HiGHS, with SCIP solving the backward model "
        "where the two formulations are raced), highs, scip, cbc or gurobi",
    )  # fmt: skip
    mode: Mode = option(
        Mode.EXACT, kind=Kind.CHOICE, group=Group.SOLVING, choices=tuple(m.value for m in Mode),
        help="exact MIP (default) or its LP relaxation (an upper bound)", batch=True,
    )  # fmt: skip
    time_limit: float | None = option(
        None, kind=Kind.VALUE, group=Group.SOLVING, type=float, metavar="SECONDS",
        help="stop after this long with certified bounds", inherit=False,
        check=check_positive, batch=True,
    )  # fmt: skip
    gap: float | None = option(
        None, kind=Kind.VALUE, group=Group.SOLVING, type=float, metavar="REL",
        help="stop at this relative gap, e.g. 0.05", check=check_gap, batch=True,
    )  # fmt: skip
    threads: int | None = option(
        None, kind=Kind.VALUE, group=Group.SOLVING, type=int, help="solver threads",
        check=check_count,  # checked as workers is, not handed to the solver as it is
    )  # fmt: skip
    bounds: str = option(
        "linear", kind=Kind.CHOICE, group=Group.SPEED, choices=("linear", "interval", "lp"),
        help="bound propagation before modelling (default: linear)", batch=True,
    )  # fmt: skip
    split: bool | str | SplitOptions = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, inherit=False,
        check=check_auto_options("SplitOptions"),
        help="always split the domain (boxes and l-inf balls)",
        off="never split the domain (default: split boxes of <= 4 inputs)",
    )  # fmt: skip
    decompose: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_bool,
        help="--norm l1: one small MIP per gradient entry and sign, best bound first, "
        "skipping those that cannot win (default: for inputs of >= 5 dimensions)",
        off="--norm l1: one MIP with a selection binary per entry and sign",
    )  # fmt: skip
    regions: bool | str | RegionOptions = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, inherit=False,
        help="answer by searching the linear regions alone (fixed c, boxes and l-inf balls)",
        off="skip the region search (default: unless the domain is split, try it for "
        "4000 nodes (fewer if it projects more than 100000), 60000 if under 90%% of neurons "
        "are unstable, then the MIP)",
    )  # fmt: skip
    formulation: Formulation | None = option(
        "auto", kind=Kind.CHOICE, group=Group.SPEED, choices=("auto", "backward", "forward"),
        inherit=False,
        help="how the MIP differentiates the network: backward (the paper's chain rule) or "
        "forward (directional derivative, fixed c only); default auto: backward, and with "
        "--norm linf, if it has not finished in 5 s, both raced on two processes (at once "
        "when 90%% or more of the neurons are unstable)",
    )  # fmt: skip
    subnet_bounds: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_equal,
        help="bound the forward model's tangents by sub-network constants (small MIPs or region "
        "searches), also on a split's parts",
        off="keep the propagated tangent bounds (default: for the forward model, a small MIP "
        "per neuron below the first hidden layer, at most 30 s and a tenth of the time limit)",
    )  # fmt: skip
    attack: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_equal,
        help="start every MIP from the attained value of a gradient attack and a pattern climb "
        "(about 1 s): the solver must beat it, which prunes from the start (exact mode, "
        "fixed c)",
        off="no attack (default: only in the two racers of --formulation auto, or the "
        "--sign-split in their place, the leader's split after them, and before the halves of "
        "--gate-split)",
    )  # fmt: skip
    sign_split: bool = option(
        False, kind=Kind.FLAG, group=Group.SPEED, check=check_bool,
        help="split the backward model's search on the sign of one gradient entry (--norm "
        "linf): two halves solved side by side, instead of any race (off by default)",
    )  # fmt: skip
    gate_split: bool = option(
        False, kind=Kind.FLAG, group=Group.SPEED, check=check_bool,
        help="split the domain by the hyperplane of the first-layer neuron with the most "
        "balanced range (--norm linf, fixed c, with --formulation forward or backward): two "
        "halves solved side by side (off by default)",
    )  # fmt: skip
    products: bool = option(
        True, kind=Kind.NEGATED, group=Group.SPEED, check=check_bool,
        help="--norm l1 with the decomposition: maximise each candidate through the backward "
        "pass's switches (default: for a network of two hidden layers and a fixed c, as a sum "
        "of products of the two layers' gates, a tighter model)",
    )  # fmt: skip
    split_leader: bool = option(
        True, kind=Kind.NEGATED, group=Group.SPEED, check=check_bool,
        help="let the two racers of --formulation auto run to the end (default: if neither has "
        "finished after 30 s, or from 10 s on once one's proven bound is 1.3 times below the "
        "other's, and at least 90 s are left, the one with the smaller proven bound is solved "
        "again split in halves on two processes)",
    )  # fmt: skip
    workers: int | None = option(
        None, kind=Kind.VALUE, group=Group.SPEED, type=int, metavar="N", check=check_count,
        help="processes for independent solves: the race of the two formulations, and the "
        "l1 norm's candidates solved side by side (HiGHS, SCIP); default: one per core; 1: none",
    )  # fmt: skip
    verbose: bool = option(False, kind=Kind.FLAG, group=Group.OUTPUT, help="show the solver's log")
    max_refinements: int | None = option(None, help="re-solves of a lower-dimensional optimum")
    random_seed: int = option(0, help="the seed of the random fallback witness search")
    start_point: FloatArray | None = option(None, help="a point of the domain: the MIP's cutoff")

    def but(self, **changes: Any) -> SolveConfig:
        """This configuration with ``changes`` (already valid: no checks)."""
        return replace(self, **changes)

    def sub(self, **own: Any) -> SolveConfig:
        """A sub-question's configuration: every option it inherits from this one, and its own
        (every option declared ``inherit=False``) as ``own`` gives them, all of them."""
        missing = sorted(OWN - set(own))
        if missing:
            raise TypeError(f"a sub-question sets its own {', '.join(missing)}")
        return replace(self, **own)

    @property
    def exact(self) -> bool:
        return self.mode is Mode.EXACT


#: the declaration of each option, by name, in the order ``lipopt solve --help`` lists them
DECLARED: dict[str, Option] = {
    f.name: spec for f in fields(SolveConfig) if (spec := declared(f)) is not None
}

#: the options a sub-question sets itself (the domain split, the region search, the
#: formulation and the time limit)
OWN = frozenset(name for name, spec in DECLARED.items() if not spec.inherit)

#: every option at its public default, as :func:`lipopt.lipschitz`'s keywords
LEVER_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(SolveConfig)}

#: the keyword options of :func:`lipopt.lipschitz` that configure a solve
LEVERS = tuple(LEVER_DEFAULTS)


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
