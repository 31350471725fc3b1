"""``lipschitz(...)``: bounds -> model -> solve -> verify, and the result users see.

The value returned is ``max_{x ∈ X} ||∇(c^T f)(x)||_{α*}`` (paper Theorem 1), the local Lipschitz
constant of ``c^T f`` over the interior of the domain X w.r.t. the input norm α; with an output
norm β instead of c, ``max_x max_{w ∈ B_β*} ||J(x)^T w||_{α*}``, the (α, β) constant (app. E).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import pyomo.environ as pe
from numpy.typing import ArrayLike, NDArray

from lipopt import policy
from lipopt.bounds import propagate
from lipopt.bounds.interval import NetworkBounds, NeuronState, Seed
from lipopt.config import Mode, configure, resolve_formulation
from lipopt.domain import Box, Domain, LinfBall, check_dimension
from lipopt.formulation import LipschitzModel, build
from lipopt.formulation.build import Formulation
from lipopt.formulation.objective import set_candidate, set_cutoff
from lipopt.formulation.products import GateProducts, gate_products, remove_products, set_products
from lipopt.heuristics.starts import attack_witness, sampled_witness
from lipopt.heuristics.witness import Witness, below, best_witness, value_at
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.progress import heartbeat, silent
from lipopt.query import LipschitzError, Query, resolve_c, resolve_seed
from lipopt.race import merge, race_answers, racer_stop
from lipopt.regions import RegionOptions, RegionSearch, search_regions
from lipopt.solvers import SolveOptions, SolverError, SolveResult, Termination, get
from lipopt.solvers.registry import ADAPTERS, AUTO_ADAPTER, is_auto
from lipopt.split import SplitOptions, branch_and_bound
from lipopt.subnets import budget_for, subnet_tangent_bounds
from lipopt.verify import Dimension, check_region
from lipopt.workers import GRACE, ForkedWorkers, InProcess, worker_count

__all__ = [  # the facade's names, including those it re-exports from the values it is built on
    "LipschitzError", "LipschitzResult", "Mode", "NoBoundError", "build_model", "lipschitz",
    "resolve_c", "resolve_seed", "value_at",
]  # fmt: skip

FloatArray = NDArray[np.float64]


class NoBoundError(SolverError):
    """The solver stopped (at its time limit) before proving any bound."""


@dataclass(frozen=True)
class LipschitzResult:
    """The answer, with everything needed to check it.

    Attributes:
        value: certified upper bound on the constant; the exact constant when
            ``status == "optimal"``.
        lower: ``||∇(c^T f)(witness)||_{α*}`` recomputed in numpy: attained, so a lower bound.
        upper: same as ``value``.
        status: ``optimal``, ``gap_limit``, ``time_limit`` or ``relaxation``.
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
    status: str
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

    @property
    def gap(self) -> float | None:
        if self.lower is None:
            return None
        return max(self.upper - self.lower, 0.0) / max(abs(self.upper), 1e-12)

    @property
    def seconds(self) -> float:
        return float(sum(self.timings.values()))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the CLI's ``--json`` object)."""
        out = asdict(self)
        out.pop("model")
        out.update(out.pop("model_stats"))
        out["witness"] = None if self.witness is None else [float(v) for v in self.witness]
        out["c"] = None if self.c is None else [float(v) for v in self.c]
        out["gap"] = self.gap
        out["seconds"] = self.seconds
        return out


def build_model(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    output_norm: OutputNorm | str | None = None,
    relax: bool = False,
    bounds: str = "linear",
    decompose: bool = False,
    formulation: Formulation | str = Formulation.BACKWARD,
) -> LipschitzModel:
    """Build (without solving) the Pyomo model that :func:`lipschitz` would solve; with
    ``decompose`` (ℓ1 input norm) the model of the first candidate ``±∂_j``; ``formulation``
    ``"forward"`` (fixed c) the directional-derivative model."""
    check_dimension(domain, network.input_dim)
    seed = resolve_seed(network, c, output_norm)
    query = Query(network, domain, InputNorm.parse(norm), seed)
    mode = Mode.LP if relax else Mode.EXACT
    form = resolve_formulation(formulation, query, mode, policy.Policy.current().auto_race_norms)
    input_norm = query.norm
    form = form or Formulation.BACKWARD
    net_bounds = propagate(network, domain, seed, method=bounds)
    return build(
        network, domain, seed, input_norm, net_bounds, relax=relax,
        decompose=decompose and form is Formulation.BACKWARD, formulation=form,
    )  # fmt: skip


def _pattern(lip: LipschitzModel, bounds: NetworkBounds, values: Any) -> list[FloatArray]:
    """The full 0/1 activation pattern: known states, and rounded binaries for unstable neurons
    (a binary that no constraint uses, e.g. of a neuron that is 0 on the whole domain, is left
    out by the solver and taken as 0)."""
    pattern = []
    for state, layer_bins in zip(bounds.states, lip.activations):
        mask = (state == NeuronState.ACTIVE).astype(np.float64)
        for i, var in layer_bins.items():
            mask[i] = 1.0 if values.get(var, 0.0) > 0.5 else 0.0
        pattern.append(mask)
    return pattern


def _exclude_pattern(lip: LipschitzModel, values: Any) -> bool:
    """Add a no-good cut removing the incumbent's activation pattern; False if nothing to cut."""
    binaries = [v for layer in lip.activations for v in layer.values()]
    if not binaries:
        return False
    model = lip.model
    if model.component("excluded_patterns") is None:
        model.excluded_patterns = pe.ConstraintList()
    model.excluded_patterns.add(
        pe.quicksum((1 - v) if values.get(v, 0.0) > 0.5 else v for v in binaries) >= 1
    )
    return True


def lipschitz(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    output_norm: OutputNorm | str | None = None,
    solver: str = "auto",
    mode: Mode | str = Mode.EXACT,
    time_limit: float | None = None,
    gap: float | None = None,
    threads: int | None = None,
    verbose: bool = False,
    bounds: str = "linear",
    max_refinements: int = 10,
    random_seed: int = 0,
    progress: Callable[[str], None] | None = None,
    split: bool | str | SplitOptions = "auto",
    decompose: bool | str = "auto",
    regions: bool | str | RegionOptions = "auto",
    formulation: Formulation | str = "auto",
    workers: int | None = None,
    subnet_bounds: bool | str = "auto",
    attack: bool | str = "auto",
    sign_split: bool = False,
    gate_split: bool = False,
    split_leader: bool = True,
    products: bool = True,
    start_point: ArrayLike | None = None,
) -> LipschitzResult:
    """The local Lipschitz constant of ``c^T f`` (or of f under an output norm) over ``domain``.

    Args:
        network: the ReLU network.
        domain: a :class:`~lipopt.Box`, :class:`~lipopt.LinfBall` or :class:`~lipopt.L1Ball`.
        norm: input norm ``"linf"`` (the constant is ``max ||∇||_1``) or ``"l1"`` (``max ||∇||_∞``).
        c: output weighting; optional for one-output networks.
        output_norm: instead of c, the output norm β of the (α, β) constant: ``"abs"``,
            ``"l1"``, ``"linf"`` or ``"cross"`` (paper appendix E).
        solver: solver adapter name (``"highs"``, ``"scip"``, ``"cbc"``, ``"gurobi"``), or
            ``"auto"`` (the default): HiGHS, except that where the two formulations are raced
            (``formulation="auto"``) the backward model is solved by SCIP
            (:data:`AUTO_RACE_SOLVERS`; HiGHS alone when SCIP is not installed).
        mode: ``"exact"`` (the MIP) or ``"lp"`` (its LP relaxation: an upper bound only).
        time_limit: seconds; on expiry the best proven bound and incumbent are returned.
        gap: stop at this relative gap (e.g. 0.05); the answer is then bracketed.
        threads: solver threads.
        verbose: show the solver's log.
        bounds: bound propagation: ``"linear"`` (CROWN-style, the default), ``"interval"``,
            or ``"lp"`` (LP tightening of unstable neurons).
        max_refinements: re-solves allowed when the optimum sits on a lower-dimensional region.
        random_seed: for the random fallback witness search.
        progress: called with a short message at each stage (the CLI prints them), and
            every :data:`~lipopt.progress.HEARTBEAT_SECONDS` during a long MIP solve or race.
        split: branch and bound on the input domain (boxes and ℓ∞ balls, exact mode): True
            or :class:`~lipopt.split.SplitOptions`; each part is solved by the MIP. ``"auto"``
            (the default) splits boxes of at most ``AUTO_SPLIT_MAX_DIM`` inputs, where halving
            the domain removes unstable neurons fast; False never splits.
        decompose: for the ℓ1 input norm (exact mode), solve ``max ||∇||_∞`` as the largest of
            the maxima of ``±∂_j`` — one small MIP per candidate, best bound first, skipping
            candidates that cannot beat the best verified value (with a fixed c, the first is
            the best of :data:`DECOMPOSE_SAMPLES` random points and of the pattern climb from
            the best of them, :func:`_climb`) — instead of one MIP with a
            selection binary per candidate. ``"auto"`` (the default) decomposes when the input
            has at least ``AUTO_DECOMPOSE_MIN_DIM`` dimensions. No effect for the ℓ∞ input
            norm or ``mode="lp"``.
        regions: search the activation patterns (linear regions) directly, by branch and bound
            with a feasibility LP per branch (:mod:`lipopt.regions`); exact mode, a fixed c,
            boxes and ℓ∞ balls. True (or :class:`~lipopt.regions.RegionOptions`) answers by
            the search alone, within the time limit; ``"auto"`` (the default) tries it, when
            the domain is not split, for ``AUTO_REGION_NODES`` nodes (or
            ``AUTO_REGION_NODES_FEW_UNSTABLE`` when under ``AUTO_REGION_UNSTABLE_SHARE`` of
            the hidden neurons are unstable; with the smaller budget it gives up sooner when it
            projects more than ``AUTO_REGION_PROJECTED_LIMIT`` nodes in all) and, if it has not
            finished, goes on with the MIP, keeping the better of the two lower and upper
            bounds (where the formulations race and that share is reached, the search runs in
            the backward racer, see ``formulation``); False skips it.
        formulation: how the MIP differentiates the network: ``"backward"`` (the paper's
            chain rule, then the dual norm of the gradient) or ``"forward"`` (the directional
            derivative ``c^T J(x) v`` for ``v`` in the input norm's unit ball: no objective
            binaries; a fixed c only). ``"auto"`` (the default): in exact mode with a fixed c,
            the ℓ∞ input norm and HiGHS or SCIP on two or more cores, the backward model for
            :data:`~lipopt.race.RACE_AFTER` seconds, then, if unfinished, both raced on two
            processes for the time left (:mod:`lipopt.race`; with ``solver="auto"`` SCIP
            solves the raced backward model); backward otherwise. With ``regions="auto"`` and
            at least ``AUTO_REGION_UNSTABLE_SHARE`` of the hidden neurons unstable, the race
            starts at once, without the probe, and the backward racer searches the regions
            before its MIP. If neither racer has finished after
            :data:`~lipopt.race.LEADER_AFTER` seconds, the leader is solved again split in
            halves (``split_leader``). With ``sign_split=True`` the backward model split on a
            gradient sign runs on the two processes instead of the race.
        workers: processes for independent solves on this machine's cores — the race of
            the two formulations, and the candidates of the ℓ1 decomposition, solved side by
            side (:mod:`lipopt.workers`; HiGHS and SCIP). None (the default): one per core; 1:
            everything in this process.
        subnet_bounds: bound the forward model's tangents by the Lipschitz constants of the
            sub-networks up to each neuron, each a small MIP or, for a sub-network of one
            hidden layer on a box, a region search (:mod:`lipopt.subnets`), within
            :func:`~lipopt.subnets.budget_for` seconds. ``"auto"`` (the default): for the forward
            formulation in exact mode, except on the parts of a domain split.
        attack: before the MIP, a gradient attack
            (:func:`~lipopt.estimators.attack.gradient_attack`, :data:`ATTACK_RESTARTS` searches
            of :data:`ATTACK_STEPS` moves) and a pattern climb from its point and from the best
            sampled points (:func:`_climb`) find a point whose gradient norm ``L`` is attained;
            the MIP then requires ``objective >= L`` (less 1e-6 relative), so the solver prunes
            every branch that cannot beat it, and an infeasible verdict proves the constant is
            ``L``. With the ℓ1 decomposition the larger of ``L`` and the best sampled value is
            the candidates' first cutoff. Exact mode and a fixed c only; its time comes out of
            ``time_limit``. ``"auto"`` (the default): in the two racers of
            ``formulation="auto"`` (or, with ``sign_split``, the split in their place) and the
            leader's split after them, where the problem has proved hard, and before the halves
            of ``gate_split``; True: before every MIP; False: never.
        sign_split: split the backward model's search (ℓ∞ input norm, exact mode) in two
            halves, ``g_j >= 0`` and ``g_j <= 0`` for the gradient entry j of widest range
            (its sign binary fixed each way), solved side by side on ``workers`` processes
            under the cutoff of the best attained value (:func:`_sign_split`); the constant is
            the larger of the halves' maxima. True: every backward model with an open sign,
            instead of any race of ``formulation="auto"``; False (the default): never. Off by
            default: it beat the race where SCIP's backward model wins ([10,20,20,1]) and lost
            badly where HiGHS's forward model does (docs/performance.md).
        gate_split: split the domain by the hyperplane ``z_1i(x) = 0`` of the first-layer
            unstable neuron i whose pre-activation range ``[l, u]`` is most balanced (largest
            ``min(-l, u)``): its gate fixed to 1 and to 0, two halves solved side by side on
            two of the ``workers`` processes under the cutoff of the best attained value
            (:func:`_gate_split`, ``attack="auto"`` then runs the attack); the constant is the
            larger of the halves' maxima. Either formulation, named explicitly (with
            ``formulation="auto"`` the two race on the cores instead), exact mode, the ℓ∞ input
            norm and a fixed c; not within the parts of a domain split (``split``), which
            already split the domain, nor where the first layer has no unstable neuron (the
            model is then solved whole, after the attack). In one process (``workers=1`` or one
            core) the halves run in turn, the first with all the time left. False (the
            default): never. On HiGHS's forward model of [16,16,16,2] (unit box) it took
            45.6 -> 35.0 s and 100.2 -> 80.9 s against the whole model with the same cutoff;
            on SCIP's backward model of [10,20,20,1] 32.5 -> 38.3 s (docs/performance.md).
        split_leader: where the two formulations race (``formulation="auto"``), stop both
            after :data:`~lipopt.race.LEADER_AFTER` seconds if neither has finished, or
            earlier, from :data:`~lipopt.race.EARLY_LEADER_AFTER` seconds on, once the proven
            bound one racer reports while solving is :data:`~lipopt.race.DECISIVE_RATIO` times
            below the other's; then solve the one with the smaller proven upper bound again
            (where at least ``LEADER_AFTER + MIN_LEADER_SPLIT_SECONDS`` = 90 s are left, or
            without a time limit; if no racer has a bound by then, they race on), split in
            halves on both cores (the forward model by ``gate_split``, the backward one by
            ``sign_split``) for the time left, from the racers' best attained point
            (``start_point``); the answer keeps the best bounds of the race and the split
            (:func:`_split_leader`). True (the default); False: the racers run to the end.
            Side by side on the ℓ∞ unit boxes of benchmarks/speed.py (before the early
            decision) it took [10,20,20,1] seed 1 from 176.4 to 146.9 s and seed 0, whose race
            ends soon after the decision, from 33.0 to 53.6 s; [16,16,16,2] changed little
            (docs/performance.md).
        products: for the ℓ1 decomposition's candidates of a network with two hidden layers
            and a fixed c, maximise ``±g_j`` as a sum of products of the two layers' gates
            (:mod:`lipopt.formulation.products`) instead of through the backward pass's
            switches: a much tighter relaxation. True (the default; used where it applies);
            False: the backward pass's objective. On the six ℓ1 unit boxes of
            benchmarks/speed.py with two hidden layers, one after the other, 48.0 s in all
            against 64.1 s (docs/performance.md).
        start_point: a point of the domain, e.g. the witness of an earlier solve: its gradient norm,
            verified as any witness, becomes the MIP's cutoff as the attack's value does (the
            larger of the two is used). Exact mode and a fixed c only; ignored within the
            parts of a domain split and by the region search.
    """
    say = progress or silent
    levers = dict(
        solver=solver, mode=mode, time_limit=time_limit, gap=gap, threads=threads,
        verbose=verbose, bounds=bounds, max_refinements=max_refinements,
        random_seed=random_seed, split=split, decompose=decompose, regions=regions,
        formulation=formulation, workers=workers, subnet_bounds=subnet_bounds, attack=attack,
        sign_split=sign_split, gate_split=gate_split, split_leader=split_leader,
        products=products, start_point=start_point,
    )  # fmt: skip
    race_norms = policy.Policy.current().auto_race_norms
    query, config = configure(network, domain, norm, (c, output_norm), levers, race_norms)
    seed, input_norm, solve_mode = query.seed, query.norm, config.mode
    form, workers, given_point = config.formulation, config.workers, config.start_point
    adapter = get(solver)  # "auto": HiGHS (the race below may give a model to SCIP)
    timings: dict[str, float] = {}
    if split == "auto":
        split = network.input_dim <= policy.AUTO_SPLIT_MAX_DIM
    if decompose == "auto":
        decompose = network.input_dim >= policy.AUTO_DECOMPOSE_MIN_DIM
    if form is Formulation.FORWARD:
        decompose = False  # the forward model has no selection binaries to remove
    solve_arguments: dict[str, Any] = dict(
        solver=solver, mode=solve_mode, gap=gap, threads=threads, verbose=verbose, bounds=bounds,
        max_refinements=max_refinements, random_seed=random_seed, decompose=decompose,
        workers=workers, subnet_bounds=subnet_bounds, attack=attack, sign_split=sign_split,
        gate_split=gate_split, split_leader=split_leader, products=products,
        start_point=given_point,
    )  # fmt: skip
    if regions == "auto" and split:
        regions = False  # low dimension: domain splitting already isolates the regions
    region_options = _region_options(regions, solve_mode, seed, domain)
    racing = form is None and worker_count(adapter.name, workers, 2) >= 2
    if region_options is not None:
        race_now = None
        if regions == "auto" and racing:
            race_now = partial(
                _probe_then_race, network, domain, seed, input_norm, solve_arguments,
                progress=progress, say=say, probe=False,
            )  # fmt: skip
        return _region_lipschitz(
            network, domain, seed, input_norm, region_options, regions == "auto", time_limit,
            bounds, say,
            dict(
                output_norm=output_norm, progress=progress, split=split, formulation=formulation,
                **solve_arguments,
            ),
            race_now,
        )  # fmt: skip
    if split and solve_mode is Mode.EXACT and isinstance(domain, (Box, LinfBall)):
        return _split_lipschitz(
            network,
            domain if isinstance(domain, Box) else domain.as_box(),
            seed,
            input_norm,
            SplitOptions() if split is True else split,
            dict(
                solve_arguments,
                regions=False,
                formulation=form or Formulation.BACKWARD,
                # many small parts: one budget of sub-MIPs each would cost more than it buys
                subnet_bounds=subnet_bounds is True,
                gate_split=False,  # the parts already split the domain
                start_point=None,  # a point of the whole domain, outside most parts
            ),
            time_limit,
            bounds,
            say,
            random_seed,
        )

    if form is None:
        if racing:
            return _probe_then_race(network, domain, seed, input_norm, solve_arguments,
                                    time_limit, progress, say)  # fmt: skip
        form = Formulation.BACKWARD

    call_start = start = time.perf_counter()
    net_bounds = propagate(network, domain, seed, method=bounds)
    say(f"{bounds} bounds: {net_bounds.unstable_count} unstable neurons")
    relax = solve_mode is Mode.LP
    tangent = None
    if (
        subnet_bounds is not False
        and form is Formulation.FORWARD
        and not relax
        and len(network.hidden_widths) >= 2
    ):
        tangent, _ = subnet_tangent_bounds(
            network, domain, net_bounds, input_norm, adapter, budget_for(time_limit), say
        )
    timings["bounds"] = time.perf_counter() - start

    start = time.perf_counter()
    lip = build(
        network, domain, seed, input_norm, net_bounds, relax=relax, decompose=decompose,
        formulation=form, tangent=tangent,
    )  # fmt: skip
    timings["build"] = time.perf_counter() - start
    start_witness = None
    # the gate split is for hard problems: "auto" starts its halves from the attack
    if attack is True or (attack == "auto" and gate_split is True):
        start = time.perf_counter()
        climb_by = None if time_limit is None else call_start + time_limit
        start_witness = attack_witness(query, policy.Policy.current(), random_seed, climb_by)
        timings["attack"] = time.perf_counter() - start
        if start_witness is not None:
            say(f"attack: {start_witness.norm_value:.6g} attained; the MIP must beat it")
    if given_point is not None and not relax:
        start = time.perf_counter()
        given = best_witness(
            network, domain, seed, input_norm, [given_point], np.random.default_rng(0), False
        )
        # checking the start point is part of finding the cutoff, as the attack is
        timings["attack"] = timings.get("attack", 0.0) + time.perf_counter() - start
        if given is not None and (
            start_witness is None or given.norm_value > start_witness.norm_value
        ):
            start_witness = given
            say(f"start point: {given.norm_value:.6g} attained; the MIP must beat it")
    if time_limit is not None:  # the bounds, the build and the attack came out of the limit
        spent = time.perf_counter() - call_start
        time_limit = max(time_limit - spent, policy.MIN_SOLVE_SHARE * time_limit)
    limit = f" (time limit {time_limit:g} s)" if time_limit else ""
    say(
        f"{form.value} model: {lip.stats['variables']} variables, "
        f"{lip.stats['binaries']} binaries; "
        f"solving {'LP relaxation' if relax else 'MIP'} with {adapter.name}{limit}..."
    )

    deadline = None if time_limit is None else time.perf_counter() + time_limit
    options = SolveOptions(
        time_limit=time_limit,
        rel_gap=gap if gap else SolveOptions.rel_gap,
        threads=threads,
        verbose=verbose,
    )
    problem = _Problem(
        network, domain, seed, input_norm, lip, net_bounds, adapter, options, deadline,
        max_refinements, gap, np.random.default_rng(random_seed), say, workers,
    )  # fmt: skip
    if lip.candidates:
        form_products = None
        if products and not isinstance(seed, OutputNorm):
            form_products = gate_products(network, seed, net_bounds.states)
        return _decomposed(problem, timings, start_witness, form_products)
    entry = sign_split_entry(lip, net_bounds) if sign_split is True and not relax else None
    if entry is not None:
        return _sign_split(problem, timings, start_witness, entry)
    neuron = gate_split_neuron(lip, net_bounds) if gate_split is True and not relax else None
    if neuron is not None:
        return _gate_split(problem, timings, start_witness, neuron)
    if gate_split is True and not relax:
        say("gate split: no unstable neuron in the first layer; solving the model whole")
    start = time.perf_counter()
    cutoff = None if start_witness is None else below(start_witness.norm_value)
    set_cutoff(lip.model, cutoff)
    try:
        solved = _solve_refined(
            network, domain, seed, input_norm, lip, net_bounds, adapter, options, deadline,
            max_refinements, relax, say, cutoff,
        )  # fmt: skip
    finally:
        set_cutoff(lip.model, None)  # the returned model is the plain problem
    first, result = solved.first, solved.last
    if solved.upper is None:
        raise NoBoundError(
            f"the solver stopped ({first.termination.value}) without a proven bound; "
            "give it more time (--time-limit)"
        )
    upper = solved.upper
    refinements, nodes = solved.refinements, solved.nodes
    witness = solved.witness
    certified_value = None if witness is None else witness.norm_value
    if start_witness is not None and (
        witness is None or start_witness.norm_value > witness.norm_value
    ):
        witness = start_witness  # the MIP found nothing better than the attack's point
        certified_value = witness.norm_value if witness.certified_pattern else None
    if witness is None:
        rng = np.random.default_rng(random_seed)
        witness = best_witness(network, domain, seed, input_norm, solved.points, rng)
    timings["solve"] = solved.solve_seconds
    timings["verify"] = time.perf_counter() - start - solved.solve_seconds

    lower = witness.norm_value if witness is not None else None
    if lower is not None and lower > upper:
        upper = lower  # solver tolerance: the attained value is a fact, the bound is not exact
    status = _status(result.termination, solve_mode, gap, result)
    if solved.cut_off:  # nothing reaches the cutoff: upper is the cutoff, below the attained
        closed = lower is not None and upper - lower <= 1e-6 * max(1.0, abs(upper))
        status = "optimal" if closed else "gap_limit"  # (closed, unless the cutoff was above)
    exact_certified = bool(
        witness is not None
        and witness.certified_pattern
        and status == "optimal"
        and certified_value is not None
        and abs(upper - certified_value) <= 1e-6 * max(1.0, abs(upper))
    )
    return LipschitzResult(
        value=upper,
        lower=lower,
        upper=upper,
        status=status,
        witness=None if witness is None else witness.point,
        exact_certified=exact_certified,
        model_stats=_stats(lip),
        timings=timings,
        solver=first.solver,
        norm=input_norm.value,
        c=None if isinstance(seed, OutputNorm) else seed,
        output_norm=seed.value if isinstance(seed, OutputNorm) else None,
        nodes=nodes if nodes > 0 else None,
        refinements=refinements,
        message=_message(refinements, status, exact_certified),
        model=lip,
    )


def _race_solver(solver: str, form: Formulation) -> str:
    """The adapter that solves ``form`` in the race: ``solver`` itself unless it is "auto"."""
    if not is_auto(solver):
        return solver
    chosen = policy.AUTO_RACE_SOLVERS[form]
    if not ADAPTERS[chosen]().available():  # not installed here: HiGHS solves both
        return AUTO_ADAPTER
    return chosen


@dataclass(frozen=True)
class _Raced:
    """The problem that :func:`_probe_then_race` and the solves after or instead of its race
    share, with the caller's solve arguments."""

    network: Network
    domain: Domain
    seed: Seed
    norm: InputNorm
    arguments: dict[str, Any]
    progress: Callable[[str], None] | None
    say: Callable[[str], None]

    @property
    def attack(self) -> bool:
        """The attack of the racers and of the splits after or instead of the race: ``"auto"``
        runs it there (the problem has proved hard)."""
        return True if self.arguments["attack"] == "auto" else self.arguments["attack"]

    def solve(self, **overrides: Any) -> LipschitzResult:
        """:func:`lipschitz` on this problem, the caller's arguments with ``overrides``."""
        arguments = {**self.arguments, "progress": self.progress, **overrides}
        return lipschitz(self.network, self.domain, self.norm, self.seed, **arguments)


def _probe_then_race(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm,
    arguments: dict[str, Any],
    time_limit: float | None,
    progress: Callable[[str], None] | None,
    say: Callable[[str], None],
    probe: bool = True,
) -> LipschitzResult:
    """``formulation="auto"``: the backward model alone for :data:`~lipopt.race.RACE_AFTER`
    seconds; if it has not finished, both models raced on two processes (:mod:`lipopt.race`)
    for the time left (with ``split_leader``, for :data:`~lipopt.race.LEADER_AFTER` seconds,
    then the leader split, :func:`_split_leader`), or, where ``sign_split`` says so, the
    backward model split on a gradient sign (:func:`_split_instead_of_race`). Every answer
    along the way is certified, so the result keeps the best upper and lower bounds of all of
    them; if the race fails, the probe's answer stands.

    ``probe=False`` (a problem that looks hard, see :func:`_region_lipschitz`): no probe; the
    race starts at once, and the backward racer runs the region search before its MIP."""
    start = time.perf_counter()
    problem = _Raced(network, domain, seed, norm, arguments, progress, say)
    probe_limit = policy.RACE_AFTER if time_limit is None else min(policy.RACE_AFTER, time_limit)
    probed: LipschitzResult | None = None
    probe_error: NoBoundError | None = None
    if probe:
        try:
            probed = problem.solve(
                regions=False, split=False, time_limit=probe_limit,
                formulation=Formulation.BACKWARD, sign_split=False,
            )  # fmt: skip
        except NoBoundError as err:  # no proven bound yet: the racers start from scratch anyway
            probe_error = err
    probe_seconds = time.perf_counter() - start
    remaining = None if time_limit is None else time_limit - probe_seconds
    too_late = remaining is not None and remaining < policy.MIN_RACE_SECONDS
    if probed is not None and (probed.status != "time_limit" or too_late):
        return probed
    if probe_error is not None and too_late:
        raise probe_error
    if arguments["sign_split"] is True:
        return _split_instead_of_race(problem, remaining, probe, probed, probe_seconds)
    entries: dict[str, dict[str, Any]] = {}
    racers: dict[str, tuple[Formulation, str]] = {}
    # split_leader: the racers stop at the decision if enough time is left for the split after it
    decide = arguments["split_leader"] and (
        remaining is None or remaining >= policy.LEADER_AFTER + policy.MIN_LEADER_SPLIT_SECONDS
    )
    race_limit = policy.LEADER_AFTER if decide else remaining
    for form in (Formulation.FORWARD, Formulation.BACKWARD):
        solver = _race_solver(arguments["solver"], form)
        # without a probe, the region search (which the caller skipped) runs in the backward racer
        search = "auto" if not probe and form is Formulation.BACKWARD else False
        name = f"{form.value} ({solver})"
        racers[name] = (form, solver)
        entries[name] = dict(
            arguments, norm=norm, c=seed, regions=search, split=False, time_limit=race_limit,
            formulation=form, solver=solver, attack=problem.attack, sign_split=False,
        )  # fmt: skip
    names = " and the ".join(entries)
    until = f" for {policy.LEADER_AFTER:g} s" if decide else ""
    say(
        f"not finished in {probe_limit:g} s: racing the {names} model on two processes{until}..."
        if probe
        else f"racing the {names} model on two processes{until} (the backward one searches "
        "regions first)..."
    )
    race_start = time.perf_counter()
    try:
        try:
            with heartbeat(say, "racing", race_limit):
                # the racers stop themselves at race_limit; their preparation (bounds, build,
                # attack) may take longer, so wait for them as long as the caller's limit allows
                winner, answers = race_answers(
                    network,
                    domain,
                    entries,
                    remaining,
                    stop_when=_decisive(say) if decide else None,
                )
        except NoBoundError:
            left = None if remaining is None else remaining - (time.perf_counter() - race_start)
            if not decide or (left is not None and left < policy.MIN_RACE_SECONDS):
                raise
            # no racer proved a bound by the decision (a large model): race for the time left
            say(
                f"no racer proved a bound in {policy.LEADER_AFTER:g} s; "
                "racing them for the time left..."
            )
            decide = False
            entries = {name: dict(entry, time_limit=left) for name, entry in entries.items()}
            with heartbeat(say, "racing", left):
                winner, answers = race_answers(network, domain, entries, left)
    except SolverError as err:
        if probed is None:
            raise
        say(f"the race failed ({err}); answering with the probe's bounds")
        return probed
    race_seconds = time.perf_counter() - race_start
    earlier = [] if probed is None else [probed]
    result = answers[winner] if winner is not None else merge(list(answers.values()))
    # the answering racer's own stages, the probe, and the race's overhead beyond those stages
    # (starting processes, waiting for the slower racer's verdict): together the wall time
    timings_before = {"probe": probe_seconds} if probe else {}
    timings = dict(result.timings, **timings_before)
    timings["race"] = max(race_seconds - sum(result.timings.values()), 0.0)
    if winner is None and decide:
        left = None if remaining is None else remaining - race_seconds
        leader = min(answers, key=lambda name: answers[name].upper)
        return _split_leader(
            problem, answers, leader, racers[leader], left, earlier,
            dict(timings_before, race=race_seconds),
        )  # fmt: skip
    merged = merge([result, *earlier])
    note = (
        f"the {winner} model finished first of the two raced"
        if winner is not None
        else "neither raced model finished; best bounds of both kept"
    )
    return _noted(merged, timings, note, say)


def _decisive(say: Callable[[str], None]) -> Callable[[float, dict[str, float]], bool]:
    """``split_leader``'s early decision (:func:`~lipopt.race.race_answers`' ``stop_when``):
    from :data:`~lipopt.race.EARLY_LEADER_AFTER` seconds into the race, stop the racers once
    one's proven bound is at least :data:`~lipopt.race.DECISIVE_RATIO` times the other's."""

    def decisive(seconds: float, bounds: dict[str, float]) -> bool:
        if seconds < policy.EARLY_LEADER_AFTER or len(bounds) < 2:
            return False
        (leader, low), (_, high) = sorted(bounds.items(), key=lambda item: item[1])
        if not (0.0 < low and np.isfinite(high) and high >= policy.DECISIVE_RATIO * low):
            return False
        say(
            f"after {seconds:.0f} s of the race the {leader} model's proven bound {low:.6g} is "
            f"{high / low:.2f} times below the other's ({high:.6g}): stopping the racers"
        )
        return True

    return decisive


def _noted(
    result: LipschitzResult, timings: dict[str, float], note: str, say: Callable[[str], None]
) -> LipschitzResult:
    """``result`` with the whole call's ``timings`` and ``note`` (said, and added to its
    message), without a model (that of a racer or of a split stays in its process)."""
    say(note)
    message = f"{result.message}; {note}" if result.message else note
    return replace(result, timings=timings, message=message, model=None)


def _split_leader(
    problem: _Raced,
    answers: dict[str, LipschitzResult],
    leader: str,
    model: tuple[Formulation, str],
    remaining: float | None,
    earlier: list[LipschitzResult],
    timings: dict[str, float],
) -> LipschitzResult:
    """Neither racer finished before the decision (at :data:`~lipopt.race.LEADER_AFTER`, or
    earlier on a clear lead, :func:`_decisive`; ``timings["race"]`` is how long the race ran):
    the ``leader`` (smaller proven upper bound) solved again from scratch, split in halves on
    both cores (the forward model on a first-layer gate, :func:`_gate_split`; the backward one
    on a gradient sign, :func:`_sign_split`), from the best point the racers attained, for the
    time left. Every answer is certified, so the result keeps the best bounds of the racers,
    the split and ``earlier`` (the probe's); if the split fails or no time is left, the
    racers' stand."""
    form, solver, say = *model, problem.say
    within = f"{timings['race']:.0f} s"  # the racers stopped at LEADER_AFTER or earlier
    raced = merge([*answers.values(), *earlier])
    gap = problem.arguments["gap"]
    closed = raced.status == "optimal" or (
        gap is not None and raced.gap is not None and raced.gap <= gap
    )
    if closed:  # one racer's bound meets the other's attained value: nothing left to split
        note = f"neither racer finished in {within}; together their bounds closed the gap"
        return _noted(raced, timings, note, say)
    if remaining is not None and remaining < policy.MIN_RACE_SECONDS:
        note = f"neither racer finished in {within} and no time is left to split"
        return _noted(raced, timings, note, say)
    # the racers' best point, unless it sits a hair outside the domain (solver tolerance)
    point = raced.witness
    start = point if point is not None and problem.domain.contains(point) else None
    others = ", ".join(f"{answers[name].upper:.6g} for the {name}" for name in answers)
    how = "a first-layer gate" if form is Formulation.FORWARD else "a gradient sign"
    say(
        f"neither racer finished in {within} (proven bounds {others}); the {leader} "
        f"model again, split on {how} on two processes..."
    )
    note = f"neither racer finished in {within}; the {leader} model split in halves"
    split_start = time.perf_counter()
    try:
        result = problem.solve(
            regions=False, split=False, time_limit=remaining, formulation=form, solver=solver,
            attack=problem.attack, start_point=start,
            sign_split=form is Formulation.BACKWARD, gate_split=form is Formulation.FORWARD,
        )  # fmt: skip
    except SolverError as err:
        timings["solve"] = time.perf_counter() - split_start
        return _noted(raced, timings, f"the leader's split failed ({err}); the racers' bounds", say)
    merged = merge([result, raced])
    for key, value in result.timings.items():
        timings[key] = timings.get(key, 0.0) + value
    return _noted(merged, timings, note, say)


def _split_instead_of_race(
    problem: _Raced,
    remaining: float | None,
    probe: bool,
    probed: LipschitzResult | None,
    probe_seconds: float,
) -> LipschitzResult:
    """Where :func:`_probe_then_race` would race: the backward model alone, its search split on
    a gradient sign (:func:`_sign_split`, both cores), from the attack's cutoff (``attack``
    "auto" or True) and after the region search where no probe ran; merged with the probe's
    certified answer, if any."""
    say = problem.say
    solver = _race_solver(problem.arguments["solver"], Formulation.BACKWARD)
    say(
        f"not finished in the probe: the backward ({solver}) model, its search split on a "
        "gradient sign..."
        if probe
        else f"the backward ({solver}) model, its search split on a gradient sign (the "
        "regions searched first)..."
    )
    try:
        result = problem.solve(
            regions=False if probe else "auto", split=False, time_limit=remaining,
            formulation=Formulation.BACKWARD, solver=solver, attack=problem.attack, sign_split=True,
        )  # fmt: skip
    except SolverError as err:
        if probed is None:
            raise
        say(f"the split solve failed ({err}); answering with the probe's bounds")
        return probed
    if probed is None:
        return result
    merged = merge([result, probed])
    return replace(merged, timings=dict(result.timings, probe=probe_seconds), model=None)


def sign_split_entry(lip: LipschitzModel, net_bounds: NetworkBounds) -> int | None:
    """The gradient entry whose sign splits the search: of the entries with a sign binary
    (their sign open on the domain), the one of widest range ``u_j - l_j``; None if none."""
    signs = lip.model.component("g_sign")
    if signs is None:
        return None
    entries = [j for j in signs if not signs[j].fixed]
    if not entries:
        return None
    width = net_bounds.input_grad_upper - net_bounds.input_grad_lower
    return max(entries, key=lambda j: (float(width[j]), -j))


def gate_split_neuron(lip: LipschitzModel, net_bounds: NetworkBounds) -> int | None:
    """The first-layer neuron whose hyperplane splits the search: of the unstable neurons of
    the first hidden layer (those with a gate), the one whose pre-activation range ``[l, u]``
    is most balanced, largest ``min(-l, u)``; None if none."""
    gates = lip.activations[0] if lip.activations else {}
    neurons = [i for i in gates if not gates[i].fixed]
    if not neurons:
        return None
    lower, upper = net_bounds.pre_lower[0], net_bounds.pre_upper[0]
    return max(neurons, key=lambda i: (min(-float(lower[i]), float(upper[i])), -i))


def _region_options(
    regions: bool | str | RegionOptions, mode: Mode, seed: Seed, domain: Domain
) -> RegionOptions | None:
    """The region search's limits, or None when it is off or (for "auto") not applicable."""
    if regions is False:
        return None
    if regions not in ("auto", True) and not isinstance(regions, RegionOptions):
        raise LipschitzError(
            f"regions must be True, False, 'auto' or RegionOptions, got {regions!r}"
        )
    applicable = (
        mode is Mode.EXACT
        and not isinstance(seed, OutputNorm)
        and isinstance(domain, (Box, LinfBall))
    )
    if regions == "auto":
        # _region_lipschitz raises the budget where few neurons are unstable
        if not applicable:
            return None
        return RegionOptions(
            node_limit=policy.AUTO_REGION_NODES, projected_limit=policy.AUTO_REGION_PROJECTED_LIMIT
        )
    if not applicable:
        raise LipschitzError(
            "the region search needs mode 'exact', a fixed c (not an output norm) and a box "
            "or l-inf ball domain"
        )
    return regions if isinstance(regions, RegionOptions) else RegionOptions()


def _region_lipschitz(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm,
    options: RegionOptions,
    fallback: bool,
    time_limit: float | None,
    bounds: str,
    say: Callable[[str], None],
    mip_arguments: dict[str, Any],
    race_now: Callable[..., LipschitzResult] | None = None,
) -> LipschitzResult:
    """:func:`lipschitz` by the region search; with ``fallback``, the MIP finishes the job.

    ``race_now`` (``formulation="auto"`` where it races): called with ``time_limit`` instead of
    searching here when at least :data:`AUTO_REGION_UNSTABLE_SHARE` of the hidden neurons are
    unstable. There the search rarely finishes (never on the unit boxes of benchmarks/speed.py),
    and its few seconds and the backward probe after it only delayed the race; the backward
    racer still runs the search first, so a search that would finish still answers."""
    box = domain if isinstance(domain, Box) else domain.as_box()  # type: ignore[union-attr]
    c = np.asarray(seed, dtype=np.float64)
    start = time.perf_counter()
    net_bounds = propagate(network, box, c, method=bounds)
    bound_seconds = time.perf_counter() - start
    hidden = sum(network.hidden_widths)
    looks_hard = (
        bool(hidden) and net_bounds.unstable_count >= policy.AUTO_REGION_UNSTABLE_SHARE * hidden
    )
    left = None if time_limit is None else time_limit - bound_seconds
    if race_now is not None and looks_hard and (left is None or left >= policy.MIN_RACE_SECONDS):
        say(
            f"{bounds} bounds: {net_bounds.unstable_count} of {hidden} neurons unstable; "
            "racing at once"
        )
        result = race_now(time_limit=left)
        timings = {**result.timings}
        timings["bounds"] = timings.get("bounds", 0.0) + bound_seconds
        return replace(result, timings=timings)
    if left is not None:
        options = replace(
            options,
            time_limit=left if options.time_limit is None else min(left, options.time_limit),
        )
    if fallback and hidden and not looks_hard:
        options = replace(
            options, node_limit=policy.AUTO_REGION_NODES_FEW_UNSTABLE, projected_limit=None
        )
    say(f"{bounds} bounds: {net_bounds.unstable_count} unstable neurons; searching regions...")
    try:
        found = search_regions(
            network, box.lower, box.upper, c, norm, net_bounds, options, progress=say
        )
    except RuntimeError as err:  # the LP solver could not decide a node
        raise SolverError(f"region search: {err}") from err
    projected = ""
    if not found.complete and found.explored > 0:
        projected = f" (about {found.nodes / found.explored:.2g} nodes in all at this rate)"
    say(
        f"region search: {found.nodes} nodes, {found.regions} regions, "
        f"{'complete' if found.complete else 'stopped'} after {found.seconds:.1f} s{projected}"
    )
    stats = {
        "variables": 0,
        "constraints": 0,
        "binaries": 0,
        "unstable_neurons": net_bounds.unstable_count,
        "regions": found.regions,
        "region_nodes": found.nodes,
        "region_lps": found.lps,
    }
    timings = {"bounds": bound_seconds, "regions": found.seconds}
    used = time.perf_counter() - start
    if not found.complete and fallback and (time_limit is None or used < time_limit):
        rest = None if time_limit is None else time_limit - used
        try:
            result = lipschitz(
                network, domain, norm, seed, regions=False, time_limit=rest, **mip_arguments
            )
        except SolverError:
            if not np.isfinite(found.upper):
                raise
            say("the MIP proved nothing in the time left; answering with the region search")
        else:
            return _with_region_bounds(result, found, timings)
    lower = found.lower if found.witness is not None else None
    upper = found.upper if lower is None else max(found.upper, lower)
    exact = found.complete and found.witness is not None
    return LipschitzResult(
        value=upper,
        lower=lower,
        upper=upper,
        status="optimal" if found.complete else "time_limit",
        witness=found.witness,
        exact_certified=exact,
        model_stats=stats,
        timings=timings,
        solver="region search (HiGHS LPs)",
        norm=norm.value,
        c=c,
        nodes=found.nodes,
        message=f"linear-region search: {found.regions} regions reached, {found.nodes} nodes, "
        f"{found.lps} LPs",
        model=None,
    )


def _with_region_bounds(
    result: LipschitzResult, found: RegionSearch, timings: dict[str, float]
) -> LipschitzResult:
    """The MIP's answer, improved by what the unfinished region search proved: both upper
    bounds are certified (keep the smaller), both lower bounds attained (keep the larger)."""
    upper = min(result.upper, found.upper)
    lower, witness = result.lower, result.witness
    if found.witness is not None and (lower is None or found.lower > lower):
        lower, witness = found.lower, found.witness
    if lower is not None:
        upper = max(upper, lower)
    closed = lower is not None and upper - lower <= 1e-6 * max(1.0, abs(upper))
    status = "optimal" if closed else result.status
    merged = {**result.timings}
    for key, value in timings.items():
        merged[key] = merged.get(key, 0.0) + value
    ending = {
        "optimal": "finished",
        "time_limit": "stopped at the time limit",
        "gap_limit": "stopped at the gap limit",
    }.get(result.status, f"ended with status {result.status}")
    note = f"region search stopped after {found.nodes} nodes; the MIP took over and {ending}"
    return replace(
        result,
        value=upper,
        upper=upper,
        lower=lower,
        witness=witness,
        status=status,
        exact_certified=result.exact_certified or (closed and witness is found.witness),
        timings=merged,
        message=f"{result.message}; {note}" if result.message else note,
    )


def _message(refinements: int, status: str, exact_certified: bool) -> str:
    message = ""
    if refinements:
        message = (
            f"{refinements} optimal activation pattern(s) had lower-dimensional regions "
            "(network not in general position) and were excluded"
        )
    if status == "optimal" and not exact_certified:
        message = (message + "; " if message else "") + (
            "the optimum could not be shown to be attained on a full-dimensional region: "
            "value is a certified upper bound, lower is attained"
        )
    return message


@dataclass
class _Solved:
    """One maximisation of ``model.objective`` with its no-good-cut refinements.

    Attributes:
        first, last: the first and the last solver answer.
        upper: proven upper bound on the objective's maximum over full-dimensional regions
            (None when the solver proved none).
        witness: a point whose (full-dimensional) activation region the solver's optimum lies
            in, with the dual norm attained there; None if no pattern could be certified.
        points: the solver's first input point (clipped to the domain), to try as a witness.
        cut_off: the model was infeasible under the cutoff ``objective >= cutoff``: the
            maximum is below the cutoff.
    """

    first: SolveResult
    last: SolveResult
    upper: float | None
    witness: Witness | None
    points: list[FloatArray]
    refinements: int = 0
    nodes: int = 0
    solve_seconds: float = 0.0
    cut_off: bool = False


def _solve_refined(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm,
    lip: LipschitzModel,
    net_bounds: NetworkBounds,
    adapter: Any,
    options: SolveOptions,
    deadline: float | None,
    max_refinements: int,
    relax: bool,
    say: Callable[[str], None],
    cutoff: float | None = None,
) -> _Solved:
    """Solve; while the optimum's activation region is lower-dimensional (so the optimum is
    not attained by any gradient), exclude its pattern by a no-good cut and re-solve. In a
    racer's process the solves report their bounds to the race (:func:`~lipopt.race.racer_stop`)."""
    if options.stop is None and (report := racer_stop()) is not None:
        options = replace(options, stop=report)
    start = time.perf_counter()
    with heartbeat(say, "solving", options.time_limit):
        first = adapter.solve(lip.model, options)
    solve_seconds = time.perf_counter() - start
    nodes = first.nodes or 0
    if cutoff is not None and first.termination is Termination.INFEASIBLE:
        return _Solved(first, first, cutoff, None, [], 0, nodes, solve_seconds, cut_off=True)
    _raise_on_failure(first)
    upper = None if first.bound is None else float(first.bound)
    result, refinements = first, 0
    witness: Witness | None = None
    cut_off = False
    while result.values is not None and not relax:
        pattern = _pattern(lip, net_bounds, result.values)
        check = check_region(network, pattern, domain)
        if check.dimension is Dimension.FULL and check.point is not None:
            value = value_at(network, check.point, seed, norm, _w_values(lip, result.values))
            witness = Witness(check.point, value, True)
            break
        remaining = None if deadline is None else deadline - time.perf_counter()
        if (
            check.dimension is not Dimension.LOWER
            or result.termination is not Termination.OPTIMAL
            or refinements >= max_refinements
            or (remaining is not None and remaining <= 0)
            or not _exclude_pattern(lip, result.values)
        ):
            break
        refinements += 1
        say(f"optimum on a lower-dimensional region; excluding it and re-solving ({refinements})")
        solve_start = time.perf_counter()
        result = adapter.solve(lip.model, replace(options, time_limit=remaining))
        solve_seconds += time.perf_counter() - solve_start
        nodes += result.nodes or 0
        if cutoff is not None and result.termination is Termination.INFEASIBLE:
            # every pattern left is below the cutoff; the excluded ones cannot attain L
            upper = cutoff if upper is None else min(upper, cutoff)
            cut_off = True
            break
        _raise_on_failure(result)
        if result.termination is Termination.OPTIMAL and result.bound is not None:
            # the excluded patterns cannot attain L
            upper = float(result.bound) if upper is None else min(upper, float(result.bound))
    points = []
    if first.values is not None:
        low, high = domain.bounding_box()
        # an input no constraint uses (a network without hidden layers) has no solver value
        x0 = np.array([first.values.get(v, np.nan) for v in lip.x], dtype=np.float64)
        x0 = np.where(np.isnan(x0), (low + high) / 2.0, x0)
        points.append(np.clip(x0, low, high))
    return _Solved(
        first, result, upper, witness, points, refinements, nodes, solve_seconds, cut_off
    )


def _candidate_options(
    options: SolveOptions, solver: str, remaining: float | None, cutoff: float | None
) -> SolveOptions:
    """The options of one candidate's solve: the time left, and the cutoff options."""
    extra = dict(options.options)
    if cutoff is not None:
        extra.update(policy.CUTOFF_OPTIONS.get(solver, {}))
    return replace(options, time_limit=remaining, options=extra)


def _portable(solved: _Solved) -> _Solved:
    """What crosses a worker's pipe: no Pyomo solution maps (they name the worker's variables)."""
    return replace(
        solved, first=replace(solved.first, values=None), last=replace(solved.last, values=None)
    )


@dataclass
class _Pieces:
    """Bookkeeping of a maximum solved as several MIPs whose largest maximum is the constant
    (the ℓ1 decomposition's candidates, the halves of the sign and gate splits): every piece's
    certified bound and status, and the best point attained so far."""

    best: Witness | None
    parts: list[float] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    solved: int = 0
    cut_off: int = 0
    refinements: int = 0
    nodes: int = 0
    solve_seconds: float = 0.0
    solver: str = ""

    def unsolved(self, bound: float) -> None:
        """A piece the time limit left unsolved: its static bound stands."""
        self.parts.append(bound)
        self.statuses.append(Termination.TIME_LIMIT.value)

    def add(
        self,
        solved: _Solved,
        bound: float,
        gap: float | None,
        witness_of: Callable[[list[FloatArray]], Witness | None],
    ) -> None:
        """A piece's answer: cut off (below the cutoff), or its proven bound (at most its static
        ``bound``) and status; ``witness_of(points)`` verifies the solver's points when the
        refinement left no witness."""
        self.solved += 1
        self.solver = solved.first.solver or self.solver
        self.refinements += solved.refinements
        self.nodes += solved.nodes
        self.solve_seconds += solved.solve_seconds
        if solved.cut_off and solved.upper is not None:
            self.cut_off += 1
            self.parts.append(solved.upper)
            self.statuses.append("optimal")
            return
        self.parts.append(bound if solved.upper is None else min(bound, solved.upper))
        self.statuses.append(_status(solved.last.termination, Mode.EXACT, gap, solved.last))
        found = solved.witness
        if found is None and solved.points:
            found = witness_of(solved.points)
        if found is not None and (self.best is None or found.norm_value > self.best.norm_value):
            self.best = found

    def result(
        self,
        lip: LipschitzModel,
        seed: Seed,
        norm: InputNorm,
        floor: float,
        timings: dict[str, float],
        stats: dict[str, int],
        no_solver: str,
    ) -> LipschitzResult:
        """The answer: upper = the largest piece bound (and ``floor``, a value reached
        everywhere, and the attained lower bound); the worst piece status."""
        best = self.best
        lower = best.norm_value if best is not None else None
        upper = max([*self.parts, floor] + ([] if lower is None else [lower]))
        status = "optimal"
        for worse in ("gap_limit", Termination.INTERRUPTED.value, Termination.TIME_LIMIT.value):
            if worse in self.statuses:
                status = worse
        exact_certified = bool(
            best is not None
            and best.certified_pattern
            and status == "optimal"
            and abs(upper - best.norm_value) <= 1e-6 * max(1.0, abs(upper))
        )
        return LipschitzResult(
            value=upper,
            lower=lower,
            upper=upper,
            status=status,
            witness=None if best is None else best.point,
            exact_certified=exact_certified,
            model_stats={**_stats(lip), **stats},
            timings=timings,
            solver=self.solver or no_solver,
            norm=norm.value,
            c=None if isinstance(seed, OutputNorm) else np.asarray(seed),
            output_norm=seed.value if isinstance(seed, OutputNorm) else None,
            nodes=self.nodes if self.nodes > 0 else None,
            refinements=self.refinements,
            message=_message(self.refinements, status, exact_certified),
            model=lip,
        )


@dataclass(frozen=True)
class _Problem:
    """One built model and everything its pieces are solved with (the ℓ1 decomposition's
    candidates, the halves of the sign and gate splits): each piece is this model with
    something fixed."""

    network: Network
    domain: Domain
    seed: Seed
    norm: InputNorm
    lip: LipschitzModel
    net_bounds: NetworkBounds
    adapter: Any
    options: SolveOptions
    deadline: float | None
    max_refinements: int
    gap: float | None
    rng: np.random.Generator
    say: Callable[[str], None]
    workers: int | None

    def remaining(self) -> float | None:
        """Seconds to the deadline (None without one)."""
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def solve(
        self, cutoff: float | None, remaining: float | None, say: Callable[[str], None]
    ) -> _Solved:
        """The model as it stands, under ``objective >= cutoff``, refined
        (:func:`_solve_refined`)."""
        options = _candidate_options(self.options, self.adapter.name, remaining, cutoff)
        return _solve_refined(
            self.network, self.domain, self.seed, self.norm, self.lip, self.net_bounds,
            self.adapter, options, self.deadline, self.max_refinements, False, say, cutoff,
        )  # fmt: skip

    def witness_of(self, points: list[FloatArray]) -> Witness | None:
        """The best verified point among the solver's points (no random fallback)."""
        return best_witness(
            self.network, self.domain, self.seed, self.norm, points, self.rng, fallback=False
        )


@dataclass(frozen=True)
class _Piece:
    """One MIP of a maximum solved in pieces: ``bound`` caps its maximum before it is solved;
    ``describe(reached)`` is its progress line, given the value already reached."""

    key: Any
    bound: float
    describe: Callable[[float], str]


def _solve_pieces(
    problem: _Problem,
    items: list[_Piece],
    arrange: Callable[[Any, float | None], contextlib.AbstractContextManager[None]],
    pieces: _Pieces,
    floor: float,
    timings: dict[str, float],
    intro: Callable[[int], str],
) -> None:
    """Solve ``items`` in order into ``pieces``, side by side on forked copies of the model
    when ``problem.workers`` allows (:func:`~lipopt.workers.worker_count`), else one by one.

    ``arrange(key, cutoff)`` sets the model up as the piece ``key`` (and restores it on exit).
    Each piece starts under the cutoff of the best value attained when it starts, so one that
    cannot beat it answers "infeasible"; a piece whose ``bound`` is at most the value already
    reached (the best witness, or ``floor``, reached everywhere) is not solved but bounded;
    pieces the deadline leaves (or a worker stuck past it) keep their ``bound``.
    ``intro(workers)``: the first progress line ("" for none). Records the solve and verify
    seconds in ``timings``."""
    start = time.perf_counter()
    count = worker_count(problem.adapter.name, problem.workers, len(items))
    say = problem.say if count == 1 else silent  # workers' lines would interleave

    def run(task: tuple[int, float | None, float | None]) -> _Solved:
        position, cutoff, remaining = task
        with arrange(items[position].key, cutoff):
            solved = problem.solve(cutoff, remaining, say)
        return solved if count == 1 else _portable(solved)

    if first_line := intro(count):
        problem.say(first_line)
    runner: Any = ForkedWorkers(count, run) if count > 1 else InProcess(run)
    position = 0
    try:
        while True:
            while runner.idle() and position < len(items):
                item = items[position]
                best = pieces.best
                reached = max(floor, best.norm_value if best is not None else -np.inf)
                if item.bound <= reached:
                    pieces.parts.append(item.bound)  # cannot exceed what is already reached
                elif (remaining := problem.remaining()) is not None and remaining <= 0:
                    pieces.unsolved(item.bound)
                else:
                    problem.say(item.describe(reached))
                    cutoff = None if best is None else below(best.norm_value)
                    runner.submit((position, cutoff, remaining), position)
                position += 1
            if not runner.busy():
                break
            wait_for = problem.remaining()
            answer = runner.next_result(None if wait_for is None else max(wait_for + GRACE, 0.0))
            if answer is None:  # a worker stuck past the time limit: its pieces stay open
                for stuck in runner.pending():
                    pieces.unsolved(items[stuck].bound)
                for never in items[position:]:  # not started: their bounds stand
                    pieces.unsolved(never.bound)
                break
            done, solved = answer
            pieces.add(solved, items[done].bound, problem.gap, problem.witness_of)
    finally:
        runner.close()
    solve_seconds = pieces.solve_seconds
    if count > 1:
        # the workers' solver seconds add up to more than the wall time they took
        solve_seconds = min(solve_seconds, time.perf_counter() - start)
    timings["solve"] = solve_seconds
    timings["verify"] = time.perf_counter() - start - solve_seconds


def _decomposed(
    problem: _Problem,
    timings: dict[str, float],
    start_witness: Witness | None = None,
    products: GateProducts | None = None,
) -> LipschitzResult:
    """``max_x ||g(x)||_∞ = max_{(j, ±)} max_x ±g_j(x)``: one MIP per candidate ``±g_j``.

    Candidates come best static upper bound first. A candidate is skipped when its upper bound
    is at most a value already known to be reached (the best verified witness, or the largest
    candidate lower bound, which ``||g||_∞`` reaches everywhere). Every solve requires
    ``±g_j >= cutoff`` with the cutoff just below the best verified value, so an infeasible
    verdict proves the candidate cannot beat it. The upper bound is the largest of the
    candidates' proven bounds (solved, cut off, skipped or left unsolved at the time limit).
    With several workers, candidates are solved side by side on forked copies of the model, each
    with the cutoff known when it starts (:func:`_solve_pieces`); answers are taken as they
    finish, so where several points attain the best value the witness returned may differ from
    run to run (the value does not), and ``model`` is the parent's copy (without the
    candidates' objectives, cutoffs or no-good cuts). ``start_witness``: a verified point found
    before (the attack's), the first best. ``products`` (two hidden layers, fixed c): each
    candidate is maximised as a sum of gate products (:func:`set_products`) instead.
    """
    lip = problem.lip
    candidates = lip.candidates
    known = max(c.lower for c in candidates)  # ||g||_∞ >= known at every point
    if not isinstance(problem.seed, OutputNorm):
        start = time.perf_counter()
        target = Query(problem.network, problem.domain, problem.norm, problem.seed)
        sampled = sampled_witness(target, problem.rng, problem.deadline, policy.Policy.current())
        timings["sampling"] = time.perf_counter() - start
        if sampled is not None and (
            start_witness is None or sampled.norm_value > start_witness.norm_value
        ):
            start_witness = sampled
            problem.say(f"sampling: {sampled.norm_value:.6g} attained; the candidates must beat it")
    pieces = _Pieces(start_witness)

    def describe(n: int) -> Callable[[float], str]:
        cand = candidates[n]
        sign = "+" if cand.sign > 0 else "-"
        return lambda reached: (
            f"candidate {n + 1}/{len(candidates)}: max {sign}g[{cand.index}] "
            f"(bound {cand.upper:.6g}, best {reached:.6g})"
        )

    @contextlib.contextmanager
    def arrange(n: int, cutoff: float | None) -> Iterator[None]:
        if products is None:
            set_candidate(lip.model, lip.gradient, candidates[n], cutoff)  # replaced by the next
            yield
            return
        set_products(lip.model, lip.activations, products, candidates[n], cutoff)
        try:
            yield
        finally:  # the backward model of the candidate again
            remove_products(lip.model)
            set_candidate(lip.model, lip.gradient, candidates[n], cutoff)

    def intro(count: int) -> str:
        return f"solving the candidates on {count} processes" if count > 1 else ""

    items = [_Piece(n, cand.upper, describe(n)) for n, cand in enumerate(candidates)]
    _solve_pieces(problem, items, arrange, pieces, known, timings, intro)
    if pieces.best is None:  # nothing solved: a few random points, each region checked
        pieces.best = best_witness(
            problem.network, problem.domain, problem.seed, problem.norm,
            list(problem.domain.sample(8, problem.rng)), problem.rng,
        )  # fmt: skip
    stats = dict(
        candidates=len(candidates),
        candidates_solved=pieces.solved,
        candidates_cut_off=pieces.cut_off,
        gate_products=int(products is not None),
    )
    return pieces.result(
        lip, problem.seed, problem.norm, known, timings, stats, "none (bounds sufficed)"
    )


def _sign_split(
    problem: _Problem, timings: dict[str, float], start_witness: Witness | None, entry: int
) -> LipschitzResult:
    """``max_x ||g(x)||_1 = max(max_{x: g_j(x) >= 0} ||g(x)||_1, max_{x: g_j(x) <= 0} ||g(x)||_1)``:
    the model with the sign binary ``σ_j`` of ``entry`` fixed to 1, then to 0 (``|g_j| = g_j``,
    resp. ``-g_j``, and the other sign infeasible): :func:`_binary_split`."""
    return _binary_split(
        problem, timings, start_witness, problem.lip.model.g_sign[entry],
        (f"g[{entry}] >= 0", f"g[{entry}] <= 0"), f"the sign of g[{entry}]",
        dict(sign_split_entry=entry),
    )  # fmt: skip


def _gate_split(
    problem: _Problem, timings: dict[str, float], start_witness: Witness | None, neuron: int
) -> LipschitzResult:
    """The domain cut by the hyperplane ``z_1i(x) = W_1[i] x + b_1[i] = 0`` of the first-layer
    neuron ``i``: its gate fixed to 1 (``z_1i >= 0``, the neuron passes ``z_1i``), then to 0
    (``z_1i <= 0``, it passes 0), two MIPs whose union covers the domain, in either
    formulation: :func:`_binary_split`."""
    return _binary_split(
        problem, timings, start_witness, problem.lip.activations[0][neuron],
        (f"z1[{neuron}] >= 0", f"z1[{neuron}] <= 0"), f"neuron {neuron} of the first layer",
        dict(gate_split_neuron=neuron),
    )  # fmt: skip


def _binary_split(
    problem: _Problem,
    timings: dict[str, float],
    start_witness: Witness | None,
    binary: Any,
    labels: tuple[str, str],
    subject: str,
    stats: dict[str, int],
) -> LipschitzResult:
    """The maximum as the larger of two: the model with ``binary`` fixed to 1 (the half
    ``labels[0]``), then to 0 (``labels[1]``), where every point of the domain lies in one half.

    Both run under the cutoff ``objective >= L`` (less 1e-6 relative) of the best attained
    value ``L``: ``start_witness`` (the attack's) or, without one, the best of a few sampled
    points, so a half that cannot beat ``L`` answers "infeasible" and is bounded by the cutoff.
    With several workers the halves run side by side on forked copies of the model
    (:func:`_solve_pieces`); in one process the second half takes the cutoff of what the first
    attained. The upper bound is the larger of the halves' proven bounds (a half without one
    keeps ``Σ_k max(|l_k|, |u_k|)`` over the input-gradient bounds, at least ``||g||_1``
    everywhere: the ℓ∞ input norm's constant; where that bound is already attained, no half is
    solved); the witness is the best point attained.
    """
    lip, network, domain, rng = problem.lip, problem.network, problem.domain, problem.rng
    pieces = _Pieces(start_witness)
    if pieces.best is None:  # random points are differentiable with probability one: attained
        pieces.best = best_witness(
            network, domain, problem.seed, problem.norm, list(domain.sample(8, rng)), rng
        )
    low, high = problem.net_bounds.input_grad_lower, problem.net_bounds.input_grad_upper
    static = float(np.sum(np.maximum(np.abs(low), np.abs(high))))  # >= ||g||_1 everywhere

    def describe(value: float) -> Callable[[float], str]:
        label = labels[0] if value else labels[1]
        return lambda _: f"half {label} (best {_attained(pieces.best)})"

    @contextlib.contextmanager
    def arrange(value: float, cutoff: float | None) -> Iterator[None]:
        binary.fix(value)
        set_cutoff(lip.model, cutoff)
        try:
            yield
        finally:
            binary.unfix()
            set_cutoff(lip.model, None)

    def intro(count: int) -> str:
        side_by_side = f": two halves on {count} processes" if count > 1 else ""
        return f"splitting the search on {subject}{side_by_side}"

    items = [_Piece(value, static, describe(value)) for value in (1.0, 0.0)]
    _solve_pieces(problem, items, arrange, pieces, -np.inf, timings, intro)
    stats = dict(stats, halves_cut_off=pieces.cut_off)
    return pieces.result(lip, problem.seed, problem.norm, -np.inf, timings, stats, "none")


def _attained(witness: Witness | None) -> str:
    """The value a witness attains, for a progress message."""
    return "none" if witness is None else f"{witness.norm_value:.6g}"


def _split_lipschitz(
    network: Network,
    box: Box,
    seed: Seed,
    norm: InputNorm,
    options: SplitOptions,
    solve_options: dict[str, Any],
    time_limit: float | None,
    bounds: str,
    say: Callable[[str], None],
    random_seed: int,
) -> LipschitzResult:
    """:func:`lipschitz` by branch and bound on the domain (:mod:`lipopt.split`)."""
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    if options.workers > 1:  # the parts already use the cores: no processes within a part
        solve_options = {**solve_options, "workers": 1}
    outcome = branch_and_bound(
        network,
        box,
        seed,
        norm,
        solve_options,
        options,
        bounds,
        deadline,
        say,
        np.random.default_rng(random_seed),
    )
    total = time.perf_counter() - start
    solved = outcome.solved
    timings = {
        key: sum(r.timings.get(key, 0.0) for r in solved)
        for key in ("bounds", "build", "solve", "verify")
    }
    timings["bounds"] += outcome.bound_seconds
    timings["split"] = max(total - sum(timings.values()), 0.0)
    stats = {
        key: sum(r.model_stats.get(key, 0) for r in solved)
        for key in ("variables", "constraints", "binaries", "unstable_neurons")
    }
    stats.update(
        parts=outcome.parts_made, parts_solved=len(solved), parts_pruned=outcome.parts_pruned
    )
    region = check_region(network, network.activation_pattern(outcome.witness), box)
    exact = bool(
        outcome.complete
        and region.dimension is Dimension.FULL
        and abs(outcome.lower - outcome.upper) <= 1e-6 * max(1.0, abs(outcome.upper))
    )
    gap_open = any(r.status == "gap_limit" for r in solved)
    status = ("gap_limit" if gap_open else "optimal") if outcome.complete else "time_limit"
    return LipschitzResult(
        value=outcome.upper,
        lower=outcome.lower,
        upper=outcome.upper,
        status=status,
        witness=outcome.witness,
        exact_certified=exact,
        model_stats=stats,
        timings=timings,
        solver=solved[0].solver if solved else "none (bounds sufficed)",
        norm=norm.value,
        c=None if isinstance(seed, OutputNorm) else np.asarray(seed),
        output_norm=seed.value if isinstance(seed, OutputNorm) else None,
        nodes=sum(r.nodes or 0 for r in solved),
        refinements=sum(r.refinements for r in solved),
        message=f"domain split into {outcome.parts_made} parts: {len(solved)} solved by MIP, "
        f"{outcome.parts_pruned} pruned by bounds",
        model=None,
    )


def _w_values(lip: LipschitzModel, values: Any) -> FloatArray | None:
    """The solver's point ``w`` of the dual ball (None for a fixed c)."""
    model = lip.model
    if model.component("w") is not None:
        return np.array([values[v] for v in model.w.values()])
    if model.component("w_pos") is not None:
        return np.array(
            [values[p] - values[n] for p, n in zip(model.w_pos.values(), model.w_neg.values())]
        )
    return None


def _raise_on_failure(result: SolveResult) -> None:
    if result.termination is Termination.INFEASIBLE:
        raise SolverError(
            "the solver reported the Lipschitz model infeasible, which a sound model never is: "
            "numerical trouble in the solver (try another solver or rescale the network)"
        )
    if result.termination is Termination.ERROR:
        raise SolverError(
            f"{result.solver or 'the solver'} stopped with an error; no answer is reported "
            "(rerun with --verbose for its log)"
        )


def _stats(lip: LipschitzModel) -> dict[str, int]:
    """Model sizes; in the LP relaxation the would-be binaries are continuous."""
    stats = dict(lip.stats)
    if lip.relaxed:
        stats["relaxed_binaries"] = stats["binaries"]
        stats["binaries"] = 0
    return stats


def _status(termination: Termination, mode: Mode, gap: float | None, last: SolveResult) -> str:
    """``relaxation`` for LipLP; ``gap_limit`` only where a requested gap was left open."""
    if mode is Mode.LP:
        return "relaxation"
    if termination in (Termination.OPTIMAL, Termination.GAP_LIMIT):
        closed = last.gap is not None and last.gap <= SolveOptions.rel_gap
        return "optimal" if closed or not gap else "gap_limit"
    return termination.value
