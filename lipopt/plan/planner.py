"""``plan(query, config, facts, policy) -> Node``: the levers turned into a tree of strategies.

Pure: no solver runs, nothing is built, so every combination of flags and machine facts can be
tested on its own. The decisions, in order:

1. ``split="auto"``: split the domain of boxes of at most ``auto_split_max_dim`` inputs, except
   for a degenerate network there (hidden biases exactly 0: ``auto_regions_zero_bias_share``),
   which the region search answers alone (where it applies and ``regions="auto"``; in so few
   dimensions the regions are few);
   ``decompose="auto"``: decompose the ℓ1 objective from ``auto_decompose_min_dim`` inputs
   (never for the forward model); ``regions="auto"`` is off where the domain is split, except
   before a split of ``split="auto"`` where :func:`searches_first` (then not raced).
2. The region search where asked (``True``), or tried first (``"auto"``: exact mode, a fixed
   c, a box or ℓ∞ ball), with the rest of the plan as its fallback, and where the formulations
   race, the race at once as its guard for problems that look hard.
3. The domain split (exact mode, boxes and ℓ∞ balls), each part a MIP.
4. The ℓ2 input norm with ``solver="auto"``: ``auto_l2_solver`` (SCIP, whose model is the
   quadratic ``t <= ||g||_2^2``) where installed, else HiGHS (the chords' rounds); the same
   for the ℓ2 output norm, whose ball ``Σ w_i^2 <= 1`` only SCIP takes, and for an ℓ2-ball
   domain (SCIP: the ball as a quadratic row; HiGHS: its bounding box and tangent cuts).
0. ``bab=True``: branch and bound on the activations alone (the user asked for it); a user's
   question under ``bab="auto"`` with a time limit: the plan, then the branch and bound
   (:func:`with_bab_after`, applied by the driver to the question asked, not to sub-questions).
5. ``formulation="auto"`` where it may race (exact mode, a fixed c, an input norm of
   ``auto_race_norms``) and two processes can run: probe, then race; else the backward MIP.
"""

from __future__ import annotations

import numpy as np

from lipopt.config import SolveConfig
from lipopt.configure import regions_applicable
from lipopt.domain import Box, Disjunction, L2Ball, LinfBall, ball_part
from lipopt.formulation.build import Formulation
from lipopt.norms import InputNorm, OutputNorm
from lipopt.plan.facts import Facts
from lipopt.plan.nodes import (
    ActivationBab,
    BabAfter,
    DomainSplit,
    Mip,
    Node,
    Race,
    Racer,
    RegionSearch,
    UnionParts,
)
from lipopt.policy import Policy
from lipopt.query import Query
from lipopt.search.activation_bab import ActivationBabOptions
from lipopt.search.activation_rules import supports_parts
from lipopt.search.regions import RegionOptions
from lipopt.search.split import SplitOptions
from lipopt.solvers.registry import adapter_key, is_auto, resolve


def plan(query: Query, config: SolveConfig, facts: Facts, policy: Policy) -> Node:
    """The plan that answers ``query`` under ``config`` on a machine with ``facts``."""
    if isinstance(query.domain, Disjunction):  # each part planned on its own
        return UnionParts(config)
    if config.bab is True:  # the user's choice of strategy: nothing else runs
        return _bab(query, config, policy)
    config = _resolved(query, config, policy)
    if uses_l2(query) and is_auto(config.solver):
        config = config.but(solver=resolve(config.solver, facts.solvers, policy.auto_l2_solver))
    racing = config.formulation is None and (
        facts.processes(adapter_name(config.solver), config.workers, 2) >= 2
    )
    options = region_options(config, query, policy)
    if options is not None:
        if config.regions != "auto":
            return RegionSearch(options, config.bounds)
        fallback = plan(query, config.but(regions=False), facts, policy)
        # before a domain split (low dimension) the search runs alone: no race on the whole box
        racing = racing and not isinstance(fallback, DomainSplit)
        race_now = _race(config, facts, policy, False, query) if racing else None
        return RegionSearch(options, config.bounds, fallback, race_now)
    if config.split and config.exact and isinstance(query.domain, (Box, LinfBall)):
        # _resolved decided "auto": config.split is True (the defaults) or the options
        split = config.split if isinstance(config.split, SplitOptions) else SplitOptions()
        return DomainSplit(split, _mip(query, _part_config(config, split)))
    if config.formulation is None:
        if racing:
            return _race(config, facts, policy, True, query)
        config = config.but(formulation=Formulation.BACKWARD)
    return _mip(query, config)


def _bab(query: Query, config: SolveConfig, policy: Policy) -> ActivationBab:
    gap = config.gap if config.gap else ActivationBabOptions.gap
    return ActivationBab(
        ActivationBabOptions(
            gap=gap,
            rng_seed=config.random_seed,
            mip_at=policy.bab_mip_at,
            branching="auto",
            score_from=policy.bab_score_min_unstable,
            prefix_share=policy.bab_prefix_lp_share,
            split_cuts=query.network.input_dim <= policy.bab_cut_max_inputs,
            sign_group=policy.bab_sign_group,
            sign_group_probe=policy.bab_sign_group_probe,
            sign_group_min_gain=policy.bab_sign_group_min_gain,
            sign_order_swaps=policy.bab_sign_order_swaps,
            sign_order_share=policy.bab_sign_order_share,
            dense_below=policy.bab_dense_max_entries,
            heap_bytes=policy.bab_heap_max_bytes,
            empty_lp_at=policy.bab_empty_lp_max_unstable,
            empty_lp_rate=policy.bab_empty_lp_min_rate,
        ),  # fmt: skip
        solver=adapter_name(config.solver),
        workers=config.workers,
        scheduler=config.scheduler,
        attack=config.attack is not False,
    )


def with_bab_after(node: Node, query: Query, config: SolveConfig, policy: Policy) -> Node:
    """A user's question (not a sub-question) under ``bab="auto"``: where a time limit is given
    and the branch and bound takes the question with its part MIPs (exact mode, a fixed c, the
    ℓ∞ or ℓ1 input norm, a box or ℓ∞/ℓ1 ball), ``node`` first and the branch and bound after
    it (:class:`BabAfter`); else ``node``."""
    takes = (
        config.bab == "auto"
        and config.time_limit is not None
        and config.exact
        and supports_parts(query)
        and policy.bab_after_share < 1.0
    )
    if not takes or isinstance(node, ActivationBab):
        return node
    return BabAfter(node, _bab(query, config, policy), policy.bab_after_share)


def _resolved(query: Query, config: SolveConfig, policy: Policy) -> SolveConfig:
    """``split``, ``decompose`` and ``regions`` with their ``"auto"`` decided."""
    split, decompose, regions = config.split, config.decompose, config.regions
    low_dim = query.network.input_dim <= policy.auto_split_max_dim
    if split == regions == "auto" and low_dim and degenerate(query, policy):
        if regions_applicable(config, query):  # the region search alone: a weak MIP here
            split, regions = False, True
    splits = low_dim and isinstance(query.domain, (Box, LinfBall))  # where the split applies
    search_first = split == regions == "auto" and splits and searches_first(query, policy)
    if split == "auto":
        split = low_dim
    if decompose == "auto":
        decompose = query.network.input_dim >= policy.auto_decompose_min_dim
    if config.formulation is Formulation.FORWARD:
        decompose = False  # the forward model has no selection binaries to remove
    if regions == "auto" and split and not search_first:
        regions = False  # low dimension: domain splitting already isolates the regions
    return config.but(split=split, decompose=decompose, regions=regions)


def searches_first(query: Query, policy: Policy) -> bool:
    """Low dimension: the region search before the domain split, from
    ``auto_regions_first_min_dim`` inputs on or with at most ``auto_regions_first_max_hidden``
    neurons with a kink."""
    network = query.network
    return (
        network.input_dim >= policy.auto_regions_first_min_dim
        or network.kinked_count <= policy.auto_regions_first_max_hidden
    )


def degenerate(query: Query, policy: Policy) -> bool:
    """At least ``auto_regions_zero_bias_share`` of the hidden neurons have a bias of exactly 0."""
    biases = [affine.bias for affine in query.network.affine_layers[:-1]]
    hidden = sum(len(b) for b in biases)
    zeros = sum(int(np.count_nonzero(b == 0.0)) for b in biases)
    return hidden > 0 and zeros >= policy.auto_regions_zero_bias_share * hidden


def region_options(config: SolveConfig, query: Query, policy: Policy) -> RegionOptions | None:
    """The region search's limits, or None when it is off or (for "auto") not applicable."""
    regions = config.regions
    if regions is False:
        return None
    if regions == "auto":
        if not regions_applicable(config, query):
            return None
        return RegionOptions(
            node_limit=policy.auto_region_nodes,
            projected_limit=policy.auto_region_projected_limit,
        )
    return regions if isinstance(regions, RegionOptions) else RegionOptions()


def _part_config(config: SolveConfig, split: SplitOptions) -> SolveConfig:
    """The options of each part of a domain split."""
    return config.but(
        split=False,
        regions=False,
        formulation=config.formulation or Formulation.BACKWARD,
        # many small parts: one budget of sub-MIPs each would cost more than it buys
        subnet_bounds=config.subnet_bounds is True,
        gate_split=False,  # the parts already split the domain
        start_point=None,  # a point of the whole domain, outside most parts
        # the parts already use the cores: no processes within a part
        workers=1 if split.workers > 1 else config.workers,
    )


def _mip(query: Query, config: SolveConfig) -> Mip:
    relax = not config.exact
    form = config.formulation
    subnets = (
        config.subnet_bounds is not False
        and form is Formulation.FORWARD
        and not relax
        and len(query.network.hidden_widths) >= 2
    )
    split = None
    if config.sign_split and not relax:
        split = "sign"
    elif config.gate_split and not relax:
        split = "gate"
    return Mip(
        config=config,
        solver=adapter_name(config.solver),
        # the ℓ1 objective's candidates (the build ignores the flag elsewhere)
        decompose=bool(config.decompose) and not relax and query.norm.decomposes,
        subnets=subnets,
        # the gate split is for hard problems: "auto" starts its halves from the attack
        attack=config.attack is True or (config.attack == "auto" and config.gate_split is True),
        split=split,
        # gate products exist for two hidden layers (formulation.products.gate_products)
        products=config.products and query.fixed_c and len(query.network.hidden_widths) == 2,
        l2=query.norm is InputNorm.L2,
        l2_ball=isinstance(ball_part(query.domain), L2Ball),
    )


def uses_l2(query: Query) -> bool:
    """The ℓ2 input or output norm, or an ℓ2-ball domain: SCIP's quadratic rows where
    ``solver="auto"``."""
    return (
        query.norm is InputNorm.L2
        or query.seed is OutputNorm.L2
        or isinstance(ball_part(query.domain), L2Ball)
    )


def adapter_name(solver: str) -> str:
    """The adapter that ``solver`` names (``"auto"``: HiGHS's)."""
    return adapter_key(solver)


def race_solver(solver: str, form: Formulation, facts: Facts, policy: Policy) -> str:
    """The adapter that solves ``form`` in the race: ``solver`` itself unless it is "auto"."""
    if not is_auto(solver):
        return solver  # as the user spelled it (the racer's name shows it)
    # the policy's pick where installed, else HiGHS for both models
    return resolve(solver, facts.solvers, policy.auto_race_solvers[form])


def _race(config: SolveConfig, facts: Facts, policy: Policy, probe: bool, query: Query) -> Race:
    """The backward MIP against the forward one; where :func:`races_bab`, the activation
    branch and bound as the alternative to the forward racer, taken when the race starts with
    at least ``bab_race_min_unstable`` of the kinked neurons unstable, or (on networks of
    ``bab_race_min_inputs`` inputs or more) at least ``bab_race_unstable_share`` of them."""
    racers = []
    for form in (Formulation.FORWARD, Formulation.BACKWARD):
        solver = race_solver(config.solver, form, facts, policy)
        # without a probe, the region search (which the caller skipped) runs in the backward racer
        search = "auto" if not probe and form is Formulation.BACKWARD else False
        racers.append(Racer(f"{form.value} ({solver})", form, solver, search))
    bab, share = None, None
    if races_bab(query, config):
        parts = adapter_name(config.solver)
        bab = Racer(f"branch and bound ({parts})", Formulation.FORWARD, parts, False, bab=True)
        if query.network.input_dim >= policy.bab_race_min_inputs:
            share = policy.bab_race_unstable_share
    return Race(
        config, probe, tuple(racers), config.sign_split is True, config.split_leader, bab,
        share, policy.bab_race_min_unstable,
    )  # fmt: skip


def races_bab(query: Query, config: SolveConfig) -> bool:
    """The branch and bound on the activations may race the backward MIP: ``bab="auto"`` and
    its part MIPs take the question."""
    return config.bab == "auto" and supports_parts(query)
