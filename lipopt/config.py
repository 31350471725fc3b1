"""How to answer a query: the typed options of one call, validated once, with today's messages.

``"auto"`` values stay as given here; the planner (:mod:`lipopt.plan`) resolves them from the
query, the machine's facts and the :class:`~lipopt.policy.Policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt import help_numbers as said
from lipopt import policy
from lipopt.formulation.build import Formulation
from lipopt.norms import MAX_SIGN_INPUTS
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
    check_text,
    declared,
    option,
)
from lipopt.search.regions import PROJECTION_START, RegionOptions
from lipopt.search.split import SplitOptions

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
        doc=(
            "solver adapter: `auto`, `highs`, `scip`, `cbc` or `gurobi` (case-insensitive); "
            "`lipopt solvers` shows which are usable here. `auto` is HiGHS, except that where "
            "the two formulations are raced SCIP solves the backward model, and with `--norm "
            "l2` SCIP solves the quadratic model ([solvers](solvers.md#auto-the-default))"
        ),
        shown="`auto`",
        help="solver adapter: auto (the default: HiGHS, with SCIP solving the backward model "
        "where the two formulations are raced), highs, scip, cbc or gurobi",
    )  # fmt: skip
    mode: Mode = option(
        Mode.EXACT, kind=Kind.CHOICE, group=Group.SOLVING, choices=tuple(m.value for m in Mode),
        doc=(
            "`exact`: solve the MIP; `lp`: solve its LP relaxation (LipLP), an upper bound "
            "only"
        ),
        shown="`exact`",
        help="exact MIP (default) or its LP relaxation (an upper bound)", batch=True,
    )  # fmt: skip
    time_limit: float | None = option(
        None, kind=Kind.VALUE, group=Group.SOLVING, type=float, metavar="SECONDS",
        doc=(
            "stop after this long and report the proven bound and the best attained value; "
            "must be > 0. It bounds the whole command, start-up included: bounds, search, "
            "MIPs, re-solves, workers and checking the answer (measured within the limit + 10 "
            "% + 2 s, [benchmarks/results/limits.md](../benchmarks/results/limits.md))"
        ),
        shown="no limit",
        help="stop after this long with certified bounds", inherit=False,
        check=check_positive, batch=True,
    )  # fmt: skip
    gap: float | None = option(
        None, kind=Kind.VALUE, group=Group.SOLVING, type=float, metavar="REL",
        doc=(
            "stop when the relative gap reaches REL, in [0, 1); status `gap_limit`. `0` means "
            "an exact solve"
        ),
        shown="1e-9 (exact)",
        help="stop at this relative gap, e.g. 0.05", check=check_gap, batch=True,
    )  # fmt: skip
    threads: int | None = option(
        None, kind=Kind.VALUE, group=Group.SOLVING, type=int, help="solver threads",
        doc=(
            "solver threads (a whole number, at least 1), passed to the solver"
        ),
        shown="solver default",
        check=check_count,  # checked as workers is, not handed to the solver as it is
    )  # fmt: skip
    bounds: str = option(
        "linear", kind=Kind.CHOICE, group=Group.SPEED, choices=("linear", "interval", "lp"),
        doc=(
            "bound propagation before modelling: `interval` (the paper's), `linear` "
            "(CROWN-style relaxations forward, then the backward pass's variables bounded with"
            " them; never looser than `interval`) or `lp` (`linear`, then each unstable "
            "pre-activation maximised and minimised over the LP relaxation of the layers "
            "before it) ([performance](performance.md#bounds))"
        ),
        shown="`linear`",
        help="bound propagation before modelling (default: linear)", batch=True,
    )  # fmt: skip
    split: bool | str | SplitOptions = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, inherit=False,
        doc=(
            "split the domain (boxes and ℓ∞ balls): parts kept in a queue by their FastLip "
            "bound, sampled for an attained value, discarded when they cannot beat it, "
            "bisected while they have many unstable neurons, the rest solved by the MIP "
            "([performance](performance.md#domain-splitting)). `--no-split` never splits"
        ),
        shown=f"split boxes of at most {said.SPLIT_DIMS} inputs",
        check=check_auto_options("SplitOptions"),
        help="always split the domain (boxes and l-inf balls)",
        off="never split the domain (default: split boxes of <= "
        f"{said.SPLIT_DIMS} inputs)",
    )  # fmt: skip
    decompose: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_bool,
        doc=(
            "`--norm l1` in exact mode only: the constant max_x ‖∇‖∞ = max over (j, ±) of "
            "max_x ±∂_j is found by one MIP per candidate ±∂_j (only the unstable neurons' "
            "binaries), taken in order of their bound; a candidate whose bound cannot beat the"
            f" best value already verified (with a fixed c, at first the best of {said.SAMPLES} "
            "random points) is skipped, and each solve carries that value as a cutoff. "
            "`--time-limit` is then shared by all candidates; a candidate not reached keeps its "
            "propagated bound, so the reported upper bound stays certified. `--no-decompose` "
            "solves one MIP with a selection binary per candidate"
        ),
        shown=f"decompose for inputs of ≥ {said.DECOMPOSE_DIMS} dimensions (with only a few inputs "
        "the single MIP was faster)",
        help="--norm l1: one small MIP per gradient entry and sign, best bound first, skipping "
        f"those that cannot win (default: for inputs of >= {said.DECOMPOSE_DIMS} dimensions)",
        off="--norm l1: one MIP with a selection binary per entry and sign",
    )  # fmt: skip
    regions: bool | str | RegionOptions = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, inherit=False,
        doc=(
            "exact mode, a fixed c, boxes and ℓ∞ balls: find the constant by searching the "
            "network's linear regions (activation patterns) depth first, one warm-started LP "
            "per branch to keep only patterns whose region has an interior point in the "
            "domain, and discarding every pattern whose interval bound cannot beat the best "
            "region found ([performance](performance.md)). `--regions` answers by the search "
            "alone (with `--time-limit`, a certified bracket); by default it runs for "
            f"{said.REGION_NODES} nodes ({said.REGION_NODES_FEW} when fewer than "
            f"{said.REGION_SHARE} of the hidden neurons are unstable, a sign of few regions; with "
            f"{said.REGION_NODES} it gives up at {PROJECTION_START} nodes, or a doubling after, "
            f"when it projects more than {said.REGION_PROJECTED} nodes in all) and hands over to "
            "the MIP if it has not finished, sharing `--time-limit` and keeping the better "
            f"bounds of the two; where the domain is split (boxes of at most {said.SPLIT_DIMS} "
            f"inputs) it runs so before the split on {said.FIRST_DIMS} inputs and on fewer with "
            f"at most {said.FIRST_KINKED} neurons with a kink, and not at all on larger networks "
            "of fewer inputs; `--no-regions` skips it"
        ),
        shown=f"on for at most {said.REGION_NODES} / {said.REGION_NODES_FEW} nodes; before a "
        f"split on {said.FIRST_DIMS} inputs, or fewer with <= {said.FIRST_KINKED} kinked neurons",
        help="answer by searching the linear regions alone (fixed c, boxes and l-inf balls)",
        off=f"skip the region search (default: try it for {said.REGION_NODES} nodes (fewer if it "
        f"projects more than {said.REGION_PROJECTED}), {said.REGION_NODES_FEW} if under "
        f"{said.REGION_SHARE}% of neurons are unstable, then the MIP or the domain split; before "
        f"a split only on {said.FIRST_DIMS} inputs or fewer with <= {said.FIRST_KINKED} kinked "
        "neurons)",
    )  # fmt: skip
    formulation: Formulation | None = option(
        "auto", kind=Kind.CHOICE, group=Group.SPEED, choices=("auto", "backward", "forward"),
        doc=(
            "how the MIP differentiates the network: `backward` (the paper's chain rule) or "
            "`forward` (the directional derivative pushed through the same binaries; a fixed c"
            f" only). `auto`: backward, and with `--norm linf`, if it has not finished in "
            f"{policy.RACE_AFTER:g} s, both raced on two processes, at once when "
            f"{said.REGION_SHARE} or more of the neurons are unstable "
            "([performance](performance.md#the-forward-formulation-and-the-race))"
        ),
        shown="`auto`",
        inherit=False,
        help="how the MIP differentiates the network: backward (the paper's chain rule) or "
        "forward (directional derivative, fixed c only); default auto: backward, and with "
        f"--norm linf, if it has not finished in {policy.RACE_AFTER:g} s, both raced on two "
        f"processes (at once when {said.REGION_SHARE}% or more of the neurons are unstable)",
    )  # fmt: skip
    subnet_bounds: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_equal,
        doc=(
            "exact mode, the forward model (`--formulation forward`, or its racer): bound each"
            " tangent below the first hidden layer by the Lipschitz constant of the "
            "sub-network up to that neuron, one small MIP each (on a box or ℓ∞ ball, a region "
            "search first where the sub-network has one hidden layer), within 30 s and a tenth"
            " of `--time-limit` (which they come out of); the proven bounds only tighten the "
            "big-M constants "
            "([encoding](encoding.md#the-forward-formulation-tangentpy-formulationforward)). "
            "`--subnet-bounds` also does it on the parts of a split domain"
        ),
        shown="on for the forward model, off on a split's parts",
        help="bound the forward model's tangents by sub-network constants (small MIPs or region "
        "searches), also on a split's parts",
        off="keep the propagated tangent bounds (default: for the forward model, a small MIP "
        "per neuron below the first hidden layer, at most 30 s and a tenth of the time limit)",
    )  # fmt: skip
    attack: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_equal,
        doc=(
            "exact mode, a fixed c: before the MIP, a gradient attack (the `attack` of `lipopt"
            " compare`) and a pattern climb from its point and the "
            f"{policy.CLIMB_SAMPLED_STARTS} best of {said.SAMPLES} sampled "
            "points (together about 1 s; [performance](performance.md#the-pattern-climb)) find"
            " a point whose gradient norm L is attained, and the MIP must reach at least L "
            "(less 1e-6 relative), so the solver prunes every branch that cannot beat it; if "
            "nothing can, the answer is L, attained at that point. With `--norm l1` and "
            f"`--decompose`, the larger of L and the best of {said.SAMPLES} sampled "
            "points (and of the "
            "pattern climb from the best of them) is the candidates' first cutoff. Its time "
            "comes out of `--time-limit`"
        ),
        shown="on in the two racers of `--formulation auto` (or, with `--sign-split`, the split "
        "in their place), the leader's split after them, before the halves of `--gate-split` and "
        f"before the branch and bound ({policy.BAB_ATTACK_RESTARTS} searches), off elsewhere",
        help="start every MIP from the attained value of a gradient attack and a pattern climb "
        "(about 1 s): the solver must beat it, which prunes from the start (exact mode, "
        "fixed c)",
        off="no attack (default: only in the two racers of --formulation auto, or the "
        "--sign-split in their place, the leader's split after them, before the halves of "
        "--gate-split and before the branch and bound)",
    )  # fmt: skip
    sign_split: bool = option(
        False, kind=Kind.FLAG, group=Group.SPEED, check=check_bool,
        doc=(
            "exact mode, `--norm linf`, the backward model: split its search in the two halves"
            " ∂_j ≥ 0 and ∂_j ≤ 0 of the gradient entry j with the widest range whose sign is "
            "open (its sign binary fixed each way), solved side by side on two processes under"
            " the cutoff of the best attained value (the attack's, or that of a few sampled "
            "points); the constant is the larger half, and under `--time-limit` the upper "
            "bound is the larger of the halves' proven bounds. With `--formulation auto` it "
            "replaces the race ([performance](performance.md#the-sign-split))"
        ),
        shown="off",
        help="split the backward model's search on the sign of one gradient entry (--norm "
        "linf): two halves solved side by side, instead of any race (off by default)",
    )  # fmt: skip
    gate_split: bool = option(
        False, kind=Kind.FLAG, group=Group.SPEED, check=check_bool,
        doc=(
            "exact mode, `--norm linf`, a fixed c, `--formulation forward` or `backward`: cut "
            "the domain by the hyperplane z_1i(x) = 0 of the unstable first-layer neuron i "
            "with the most balanced pre-activation range (its gate fixed to 1 and to 0), the "
            "two halves solved side by side on two processes under the cutoff of the attack's "
            "attained value; the constant is the larger half, and under `--time-limit` the "
            "upper bound is the larger of the halves' proven bounds. Not within the parts of "
            "`--split` ([performance](performance.md#the-gate-split))"
        ),
        shown="off",
        help="split the domain by the hyperplane of the first-layer neuron with the most "
        "balanced range (--norm linf, fixed c, with --formulation forward or backward): two "
        "halves solved side by side (off by default)",
    )  # fmt: skip
    products: bool = option(
        True, kind=Kind.NEGATED, group=Group.SPEED, check=check_bool,
        doc=(
            "`--norm l1` with the decomposition, a network of two hidden layers and a fixed c:"
            " maximise each candidate ±∂_j through the backward pass's switches. By default it"
            " is maximised as Σ q_ib a_1i a_2b, a sum of products of the two hidden layers' "
            "gates, each product of two unstable gates a variable with the half of its "
            "linearisation that maximising needs: the same maximum, a much tighter relaxation "
            "([encoding](encoding.md#7-objective-dual-norm-of-the-gradient-objectivepy))"
        ),
        shown="gate products where they apply",
        help="--norm l1 with the decomposition: maximise each candidate through the backward "
        "pass's switches (default: for a network of two hidden layers and a fixed c, as a sum "
        "of products of the two layers' gates, a tighter model)",
    )  # fmt: skip
    split_leader: bool = option(
        True, kind=Kind.NEGATED, group=Group.SPEED, check=check_bool,
        doc=(
            "where the two formulations race (`--formulation auto`): let both racers run to "
            f"the end. By default, if neither has finished after {said.LEADER} s, or from "
            f"{policy.EARLY_LEADER_AFTER:g} s on as soon as one's proven bound (reported while "
            f"solving) is {policy.DECISIVE_RATIO:g} times below the other's (and at least "
            f"{said.LEADER_LEFT} s of `--time-limit` are left, or none is given), both stop, and "
            "the one with the smaller proven upper bound is solved again split in halves on "
            "two processes (the forward model by `--gate-split`, the backward one by "
            "`--sign-split`), from the best point the racers attained; the answer keeps the "
            "best bounds of the racers and the split "
            "([performance](performance.md#splitting-the-races-leader))"
        ),
        shown=f"the leader split after {said.LEADER} s, or earlier on a clear lead",
        help="let the two racers of --formulation auto run to the end (default: if neither has "
        f"finished after {said.LEADER} s, or from {policy.EARLY_LEADER_AFTER:g} s on once one's "
        f"proven bound is {policy.DECISIVE_RATIO:g} times below the other's, and at least "
        f"{said.LEADER_LEFT} s are left, the one with the smaller proven bound is solved "
        "again split in halves on two processes)",
    )  # fmt: skip
    bab: bool | str = option(
        "auto", kind=Kind.SWITCH, group=Group.SPEED, check=check_auto_bool,
        help="answer by branch and bound on the activations alone: Jacobian bounds on each "
        "part, MIPs on small parts, margin LPs at the leaves (exact mode)",
        off="never run it (default: it runs alone on every core instead of the race where the "
        f"race would run and {policy.BAB_RACE_MIN_UNSTABLE}+ of its neurons, or from "
        f"{policy.BAB_RACE_MIN_INPUTS} inputs {said.BAB_SHARE}, are unstable)",
        doc=(
            "exact mode: answer by branch and bound on the activations instead of the plan: "
            "split unstable neurons best bound first, bound each part by the Jacobian-norm "
            f"bound on its clipped linear bounds, hand a part of at most {policy.BAB_MIP_AT} "
            "unstable neurons to the MIP, close a part whose pattern is fixed by its margin LP; "
            "under `--time-limit` a certified bracket. Every input and output norm but an ℓ2 "
            f"output with ℓ∞ input beyond {MAX_SIGN_INPUTS} inputs, or an ℓ1 output beyond 17 "
            "outputs. By default the plan, in which it runs alone on every core instead of the "
            f"race where the formulations would race and {policy.BAB_RACE_MIN_UNSTABLE}+ neurons "
            f"with a kink are unstable under linear bounds, or, from {policy.BAB_RACE_MIN_INPUTS} "
            f"inputs, {said.BAB_SHARE} of them (with `--scheduler` it races the backward MIP "
            "instead; the policy's `BAB_RACE_MIN_UNSTABLE`, `BAB_RACE_MIN_INPUTS` and "
            "`BAB_RACE_UNSTABLE_SHARE`, [performance](performance.md#the-branch-and-bound-in-the-"
            "race)). `--no-bab` never runs it"
        ),
        shown=f"instead of the race where {policy.BAB_RACE_MIN_UNSTABLE} neurons, or from "
        f"{policy.BAB_RACE_MIN_INPUTS} inputs {said.BAB_SHARE}, are unstable",
    )  # fmt: skip
    workers: int | None = option(
        None, kind=Kind.VALUE, group=Group.SPEED, type=int, metavar="N", check=check_count,
        doc=(
            "processes for independent solves: the race of the two formulations, the splits' "
            "halves, the ℓ1 norm's candidates, and the branch and bound's part MIPs and slices "
            "of its search solved side by side (HiGHS, SCIP); `1`: none"
        ),
        shown="one per core",
        help="processes for independent solves: the race of the two formulations, the l1 "
        "norm's candidates, and --bab's part MIPs and slices of its search side by side "
        "(HiGHS, SCIP); default: one per core; 1: none",
    )  # fmt: skip
    scheduler: str | None = option(
        None, kind=Kind.VALUE, group=Group.SPEED, type=str, metavar="ADDRESS", check=check_text,
        doc=(
            "with `--bab`: solve the branch and bound's part MIPs on the Dask cluster of this "
            "scheduler (e.g. `tcp://scheduler.example:8786`) instead of this machine's "
            "processes; only the parts go there, the search itself runs here. Needs the "
            "`cluster` extra; a worker lost under a part has the part solved again, and a lost "
            "scheduler leaves the parts left to this process "
            "([performance](performance.md#the-parts-on-many-cores-or-a-dask-cluster))"
        ),
        shown="this machine",
        help="with --bab: solve the branch and bound's part MIPs on the Dask cluster of this "
        "scheduler (e.g. tcp://scheduler.example:8786) instead of this machine's --workers "
        "processes; only the parts go there, the search runs here; needs the cluster extra",
    )  # fmt: skip
    verbose: bool = option(
        False, kind=Kind.FLAG, group=Group.OUTPUT, help="show the solver's log",
        doc="stream the solver's log to stderr (stdout stays for the result, so `--json` output "
        "stays pure JSON)",
        shown="off",
    )  # fmt: skip
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
