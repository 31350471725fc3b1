"""``lipschitz(...)``: the public entry point — a thin facade over the planner and the driver.

The value returned is ``max_{x ∈ X} ||∇(c^T f)(x)||_{α*}`` (paper Theorem 1), the local Lipschitz
constant of ``c^T f`` over the interior of the domain X w.r.t. the input norm α; with an output
norm β instead of c, ``max_x max_{w ∈ B_β*} ||J(x)^T w||_{α*}``, the (α, β) constant (app. E).
How it is found: docs/architecture.md (check, plan, run the strategies, one result).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy.typing import ArrayLike

from lipopt import driver, policy
from lipopt.balance import balanced
from lipopt.bounds import propagate
from lipopt.config import LEVER_DEFAULTS, LEVERS, Mode
from lipopt.configure import configure, resolve_formulation
from lipopt.domain import Domain, check_dimension
from lipopt.formulation import LipschitzModel, ModelSpec, build
from lipopt.formulation.build import Formulation
from lipopt.heuristics.witness import value_at
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.query import LipschitzError, Query, resolve_c, resolve_seed
from lipopt.result import LipschitzResult
from lipopt.search.regions import RegionOptions
from lipopt.search.split import SplitOptions
from lipopt.solvers import NoBoundError, SolverError

__all__ = [  # the facade's names, and those it re-exports from the layers below
    "LipschitzError", "LipschitzResult", "Mode", "NoBoundError", "SolverError", "InputNorm",
    "build_model", "check_arguments", "lipschitz", "resolve_c", "resolve_seed", "value_at",
]  # fmt: skip


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
    current = policy.Policy.current()
    network = balanced(network, current.balance_ratio)  # as lipschitz() does
    query = Query(network, domain, InputNorm.polyhedral(norm), seed)
    mode = Mode.LP if relax else Mode.EXACT
    form = resolve_formulation(formulation, query, mode, current.auto_race_norms)
    input_norm = query.norm
    form = form or Formulation.BACKWARD
    net_bounds = propagate(network, domain, seed, method=bounds)
    return build(
        network, domain, seed, input_norm, net_bounds,
        # an ℓ2 ball: its quadratic row (the exported model is then exact for the solvers that
        # take a convex quadratic constraint: SCIP, Gurobi, CPLEX)
        ModelSpec(relax, decompose and form is Formulation.BACKWARD, form, ball_row=True),
    )  # fmt: skip


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
    max_refinements: int | None = None,
    random_seed: int = 0,
    progress: Callable[[str], None] | None = None,
    split: bool | str | SplitOptions = "auto",
    decompose: bool | str = "auto",
    regions: bool | str | RegionOptions = "auto",
    formulation: Formulation | str = "auto",
    workers: int | None = None,
    scheduler: str | None = None,
    subnet_bounds: bool | str = "auto",
    attack: bool | str = "auto",
    sign_split: bool = False,
    gate_split: bool = False,
    split_leader: bool = True,
    products: bool = True,
    bab: bool | str = "auto",
    start_point: ArrayLike | None = None,
) -> LipschitzResult:
    """The local Lipschitz constant of ``c^T f`` (or of f under an output norm) over ``domain``.

    Args:
        network: the network (affine maps and per-neuron activations).
        domain: a :class:`~lipopt.Box`, :class:`~lipopt.LinfBall`, :class:`~lipopt.L1Ball`,
            :class:`~lipopt.L2Ball`, :class:`~lipopt.Polytope` (a box cut by rows
            ``A x <= b``), an :class:`~lipopt.Intersection` (an ℓ1 or ℓ2 ball ∩ a polytope;
            :func:`~lipopt.intersect` builds any combination, e.g. a ball ∩ ``[0, 1]^d``) or a
            :class:`~lipopt.Disjunction` (a union: the maximum over its parts).
        norm: input norm ``"linf"`` (the constant is ``max ||∇||_1``), ``"l1"`` (``max ||∇||_∞``)
            or ``"l2"`` (``max ||∇||_2``).
        c: output weighting; optional for one-output networks.
        output_norm: instead of c, the output norm β of the (α, β) constant: ``"abs"``,
            ``"l1"``, ``"linf"`` or ``"cross"`` (paper appendix E).
        solver: solver adapter name (``"highs"``, ``"scip"``, ``"cbc"``, ``"gurobi"``), or
            ``"auto"`` (the default): HiGHS, except that where the two formulations are raced
            (``formulation="auto"``) the backward model is solved by SCIP
            (:data:`AUTO_RACE_SOLVERS`; HiGHS alone when SCIP is not installed).
        mode: ``"exact"`` (the MIP) or ``"lp"`` (its LP relaxation: an upper bound only).
        time_limit: seconds for the whole call, loading the solvers and checking the answer
            included (the strategies stop ``FINISH_RESERVE_SHARE`` of it early, at most
            ``FINISH_RESERVE_SECONDS``, lipopt.policy); on expiry the best proven bound and
            incumbent are returned.
        gap: stop at this relative gap (e.g. 0.05); the answer is then bracketed.
        threads: solver threads.
        verbose: show the solver's log.
        bounds: bound propagation: ``"linear"`` (CROWN-style, the default), ``"interval"``,
            or ``"lp"`` (LP tightening of unstable neurons).
        max_refinements: re-solves allowed when the optimum sits on a lower-dimensional region
            (a network not in general position); None (the default): until the optimum's
            region is full-dimensional or the time limit.
        random_seed: for the random fallback witness search.
        progress: called with a short message at each stage (the CLI prints them), and
            every :data:`~lipopt.progress.HEARTBEAT_SECONDS` during a long MIP solve or race.
        split: branch and bound on the input domain (boxes and ℓ∞ balls, exact mode): True
            or :class:`~lipopt.search.split.SplitOptions`; each part is solved by the MIP.
            ``"auto"``
            (the default) splits boxes of at most ``AUTO_SPLIT_MAX_DIM`` inputs, where halving
            the domain removes unstable neurons fast; False never splits.
        decompose: for the ℓ1 input norm (exact mode), solve ``max ||∇||_∞`` as the largest of
            the maxima of ``±∂_j`` — one small MIP per candidate, best bound first, skipping
            candidates that cannot beat the best verified value (with a fixed c, the first is
            the best of :data:`DECOMPOSE_SAMPLES` random points and of the pattern climb from
            the best of them, :func:`lipopt.heuristics.starts.climb`) — instead of one MIP with a
            selection binary per candidate. ``"auto"`` (the default) decomposes when the input
            has at least ``AUTO_DECOMPOSE_MIN_DIM`` dimensions. No effect for the ℓ∞ input
            norm or ``mode="lp"``.
        regions: search the activation patterns (linear regions) directly, by branch and bound
            with a feasibility LP per branch (:mod:`lipopt.search.regions`); exact mode, a fixed c,
            boxes and ℓ∞ balls. True (or :class:`~lipopt.search.regions.RegionOptions`) answers by
            the search alone, within the time limit; ``"auto"`` (the default) tries it, when
            the domain is not split, for ``AUTO_REGION_NODES`` nodes (or
            ``AUTO_REGION_NODES_FEW_UNSTABLE`` when under ``AUTO_REGION_UNSTABLE_SHARE`` of
            the hidden neurons are unstable; it gives up sooner when it projects more than
            ``AUTO_REGION_PROJECTED_LIMIT`` nodes in all, or
            ``AUTO_REGION_PROJECTED_LIMIT_FEW_UNSTABLE`` with the larger budget) and, if it has
            not finished, goes on with the MIP, keeping the better of the two lower and upper
            bounds (where the formulations race and that share is reached, the search runs in
            the backward racer, see ``formulation``); False skips it.
        formulation: how the MIP differentiates the network: ``"backward"`` (the paper's
            chain rule, then the dual norm of the gradient) or ``"forward"`` (the directional
            derivative ``c^T J(x) v`` for ``v`` in the input norm's unit ball: no objective
            binaries; a fixed c only). ``"auto"`` (the default): in exact mode with a fixed c,
            the ℓ∞ input norm and HiGHS or SCIP on two or more cores, the backward model for
            :data:`~lipopt.policy.RACE_AFTER` seconds, then, if unfinished, both raced on two
            processes for the time left (:mod:`lipopt.parallel.race`; with ``solver="auto"`` SCIP
            solves the raced backward model); backward otherwise. With ``regions="auto"`` and
            at least ``AUTO_REGION_UNSTABLE_SHARE`` of the hidden neurons unstable, the race
            starts at once, without the probe, and the backward racer searches the regions
            before its MIP. If neither racer has finished after
            :data:`~lipopt.policy.LEADER_AFTER` seconds, the leader is solved again split in
            halves (``split_leader``). With ``sign_split=True`` the backward model split on a
            gradient sign runs on the two processes instead of the race.
        workers: processes for independent solves on this machine's cores — the race of
            the two formulations, and the candidates of the ℓ1 decomposition, solved side by
            side (:mod:`lipopt.parallel.workers`; HiGHS and SCIP). None (the default): one per
            core; 1:
            everything in this process. With ``bab=True`` also the branch and bound's part
            MIPs and slices of its search below its nodes (:mod:`lipopt.strategies.bab_pool`,
            :mod:`lipopt.search.bab_slice`).
        scheduler: with ``bab=True``, the address of a Dask scheduler (e.g.
            ``"tcp://scheduler.example:8786"``) whose workers solve the branch and bound's part
            MIPs instead of this machine's processes; only the parts go there. Needs the
            ``cluster`` extra; a worker lost under a part has the part solved again, and a
            lost scheduler leaves the parts left to this process.
        subnet_bounds: bound the forward model's tangents by the Lipschitz constants of the
            sub-networks up to each neuron, each a small MIP or, for a sub-network of one
            hidden layer on a box, a region search (:mod:`lipopt.search.subnets`), within
            :func:`~lipopt.search.subnets.budget_for` seconds. ``"auto"`` (the default): for the
            forward
            formulation in exact mode, except on the parts of a domain split.
        attack: before the MIP, a gradient attack
            (:func:`~lipopt.heuristics.attack.gradient_attack`, :data:`ATTACK_RESTARTS`
            searches of :data:`ATTACK_STEPS` moves) and a pattern climb from its point and from
            the best sampled points (:func:`lipopt.heuristics.starts.climb`) find a point whose
            gradient norm ``L`` is attained;
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
            under the cutoff of the best attained value (:mod:`lipopt.strategies.halves`); the
            constant is the larger of the halves' maxima. True: every backward model with an
            open sign, instead of any race of ``formulation="auto"``; False (the default):
            never. Off by default: it beat the race where SCIP's backward model wins
            ([10,20,20,1]) and lost badly where HiGHS's forward model does
            (docs/performance.md).
        gate_split: split the domain by the hyperplane ``z_1i(x) = 0`` of the first-layer
            unstable neuron i whose pre-activation range ``[l, u]`` is most balanced (largest
            ``min(-l, u)``): its gate fixed to 1 and to 0, two halves solved side by side on
            two of the ``workers`` processes under the cutoff of the best attained value
            (:mod:`lipopt.strategies.halves`, ``attack="auto"`` then runs the attack); the
            constant is the larger of the halves' maxima. Either formulation, named explicitly (with
            ``formulation="auto"`` the two race on the cores instead), exact mode, the ℓ∞ input
            norm and a fixed c; not within the parts of a domain split (``split``), which
            already split the domain, nor where the first layer has no unstable neuron (the
            model is then solved whole, after the attack). In one process (``workers=1`` or one
            core) the halves run in turn, the first with all the time left. False (the
            default): never. On HiGHS's forward model of [16,16,16,2] (unit box) it took
            45.6 -> 35.0 s and 100.2 -> 80.9 s against the whole model with the same cutoff;
            on SCIP's backward model of [10,20,20,1] 32.5 -> 38.3 s (docs/performance.md).
        split_leader: where the two formulations race (``formulation="auto"``), stop both
            after :data:`~lipopt.policy.LEADER_AFTER` seconds if neither has finished, or
            earlier, from :data:`~lipopt.policy.EARLY_LEADER_AFTER` seconds on, once the proven
            bound one racer reports while solving is :data:`~lipopt.policy.DECISIVE_RATIO` times
            below the other's; then solve the one with the smaller proven upper bound again
            (where at least ``LEADER_AFTER + MIN_LEADER_SPLIT_SECONDS`` = 90 s are left, or
            without a time limit; if no racer has a bound by then, they race on), split in
            halves on both cores (the forward model by ``gate_split``, the backward one by
            ``sign_split``) for the time left, from the racers' best attained point
            (``start_point``); the answer keeps the best bounds of the race and the split
            (:mod:`lipopt.strategies.race`). True (the default); False: the racers run to the end.
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
        bab: True (exact mode): answer by branch and bound on the activations
            (:mod:`lipopt.search.activation_bab`) instead of the plan: unstable neurons split
            best bound first, each part bounded by the Jacobian-norm bound
            (:mod:`lipopt.bounds.jacobian`), a part of at most ``BAB_MIP_AT`` unstable neurons
            handed to the MIP, a part of one activation pattern closed by its margin LP.
            ``"auto"`` (the default): the plan, in which the branch and bound races the
            backward MIP in the forward MIP's place where the formulations race and at least
            ``BAB_RACE_MIN_UNSTABLE`` (64) of the kinked neurons are unstable under linear
            bounds, or, on a network of ``BAB_RACE_MIN_INPUTS`` (32) inputs or more, at least
            ``BAB_RACE_UNSTABLE_SHARE`` (half) of them
            (benchmarks/results/bab_race.md, bab_race_count.md); the policy's
            ``BAB_AFTER_SHARE`` (1: measured at 0.5, it lost) could also run it after an
            unfinished plan. False: the
            plan without it (benchmarks/results/activation_bab.md, bab_after.md).
        start_point: a point of the domain, e.g. the witness of an earlier solve: its gradient norm,
            verified as any witness, becomes the MIP's cutoff as the attack's value does (the
            larger of the two is used). Exact mode and a fixed c only; ignored within the
            parts of a domain split and by the region search.
    """
    given = locals()  # the explicit signature's values, read by the declared names
    levers = {name: given[name] for name in LEVERS}
    return driver.answer(network, domain, norm, (c, output_norm), levers, progress)


def check_arguments(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    output_norm: OutputNorm | str | None = None,
    **options: Any,
) -> None:
    """Raise the error :func:`lipschitz` would raise for these arguments, without solving
    (what a batch checks of every query before it runs any)."""
    unknown = sorted(set(options) - set(LEVERS))
    if unknown:
        raise LipschitzError(f"unknown option {unknown[0]!r}")
    levers = {**LEVER_DEFAULTS, **options}
    configure(network, domain, norm, (c, output_norm), levers, policy.Policy.current())
