"""Every tuned threshold of the orchestration, in one place, each with the measurement behind it.

The planner and the strategies read them through a :class:`Policy`, a snapshot taken once per
call (:meth:`Policy.current`), so one call sees one consistent policy and tests can hand the
planner any policy they like. The module-level constants are the defaults (tests patch them
here). New thresholds go here, never into a strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from lipopt.policy_bab import (  # the branch and bound's, kept there; read and patched here
    BAB_CUT_MAX_INPUTS,
    BAB_DENSE_MAX_ENTRIES,
    BAB_EMPTY_LP_MAX_UNSTABLE,
    BAB_EMPTY_LP_MIN_RATE,
    BAB_HEAP_MAX_BYTES,
    BAB_MIP_AT,
    BAB_PREFIX_LP_SHARE,
    BAB_SCORE_MIN_UNSTABLE,
    BAB_SIGN_GROUP,
    BAB_SIGN_GROUP_MIN_GAIN,
    BAB_SIGN_GROUP_PROBE,
    BAB_SIGN_ORDER_SHARE,
    BAB_SIGN_ORDER_SWAPS,
)
from lipopt.solvers import registry

#: ``split="auto"`` splits box domains of at most this many inputs (measured in
#: benchmarks/speed.py: in 2-D halving a box quickly stabilises neurons; in 10-D and up
#: bisection alone prunes nothing and the MIP on the whole domain is faster)
AUTO_SPLIT_MAX_DIM = 4

#: ``decompose="auto"`` decomposes the ℓ1-input-norm objective for inputs of at least this many
#: dimensions (measured: it removes 2d selection binaries, which pays from ~10 inputs up — e.g.
#: [16,16,16,2] unit box 2.5 s against 37 s — while on the 2-input bundled model, with only 4
#: selection binaries, the 4 candidate MIPs took 13–14 s against 8.6–8.8 s for the single MIP)
AUTO_DECOMPOSE_MIN_DIM = 5

#: ``regions="auto"`` (where the domain is not split) first searches the linear regions
#: (:mod:`lipopt.search.regions`) for a number of nodes and then falls back to the MIP with what it
#: proved. The budget follows the share of unstable neurons, a cheap sign of how many regions the
#: domain holds: with at least ``AUTO_REGION_UNSTABLE_SHARE`` of the hidden neurons unstable (unit
#: boxes in 10+ dimensions in benchmarks/speed.py: 98–100%, where the search never finished) it
#: gets ``AUTO_REGION_NODES`` nodes (~3–6 s here; 4000 nodes with the linear node bound took as
#: long as 6000 with the interval bound before it and got as far); below it (ℓ∞ balls of radius
#: 0.1: 20–68%, all finished within 20 000 nodes, most within a few hundred)
#: ``AUTO_REGION_NODES_FEW_UNSTABLE``. With the smaller budget the search also gives up at 500
#: nodes or a doubling after when it projects more than ``AUTO_REGION_PROJECTED_LIMIT`` nodes in
#: all (``RegionOptions.projected_limit``): 170 000 to 6·10^9 at 500 nodes on those unit boxes,
#: at most 40 000 where it went on to finish (unit boxes of 5–10 inputs, widths 8–16).
AUTO_REGION_NODES = 4000
AUTO_REGION_PROJECTED_LIMIT = 100_000
AUTO_REGION_NODES_FEW_UNSTABLE = 60_000
AUTO_REGION_UNSTABLE_SHARE = 0.9

#: ... and with the larger budget it gives up when it projects more than this many nodes in all
#: (checked as above). Compiled CNNs have few unstable neurons in share (their max-pooling and
#: skip neurons are stable) but many in number: on the bundled digits CNN (ℓ∞ balls of radius
#: 0.002 and 0.01, linear bounds) the searches that did not finish projected 5e5 to 1e9 nodes
#: at 500 nodes and ran to the 20 s limit, where the MIP alone was exact in 0.1-2.4 s on 3 of 4
#: such balls. Searches that finished (speed.py's ℓ∞ balls of 4 networks, the residual MLP, one
#: CNN ball) projected at most 1.1e5 (4.6e5 with interval bounds).
AUTO_REGION_PROJECTED_LIMIT_FEW_UNSTABLE = 300_000

#: ... and under a time limit it gives up (checked as above, and each tenth of the limit) when at
#: its rate so far the whole search would take more than this many times the time left. Bundled
#: digits CNN, 60 s: searches that ran out the limit left the interval bound (image 7, radius
#: 0.01: 1709; image 6, 0.05: 10544); giving up early, [282.3, 297.1] and [343.8, 1220.3].
#: speed.py's [64,20,20,2] ℓ∞ ball (seed 0) finishes in 10 s at 2 (at 1 the MIP took 48 s)
AUTO_REGION_LATE_FACTOR = 2.0

#: ``attack=True``: the gradient attack's searches and moves per search (about 0.7 s on the
#: speed benchmark's networks; there it attained 76-98% of the constant on the hard unit boxes)
ATTACK_RESTARTS = 64
ATTACK_STEPS = 400

#: the activation branch and bound's start attack: its searches (ATTACK_STEPS moves each, then
#: the climb). results/bab_attack.md, digits CNN (0.05, 0.1): 8 attained 459.3, 533.7, 398.7,
#: 495.0, 482.7 in 5.2-7.0 s, 64 456.9, 533.7, 402.1, 482.0, 481.5 in 24.0-26.4 s; on the digits
#: MLP at 0.1 and the MNIST-shaped MLP and CNN the 8 attained as much or more
BAB_ATTACK_RESTARTS = 8
#: ... then the full one (ATTACK_RESTARTS) on networks of at most this many hidden neurons x inputs:
#: [10,20,30,20,2]'s (700) unit boxes 5.43 -> 5.95, 11.29 -> 12.15 in 0.8 s; digits MLP's no higher
BAB_FULL_ATTACK_MAX_ENTRIES = 4096

#: the attack's flip moves hold each search's pre-activation Jacobians, searches x hidden neurons
#: x inputs floats, several times over; above this many entries the attack makes random moves
#: only. A 28x28 CNN of 14 112 hidden neurons with 64 searches needed 5.6 GB (benchmarks/cnn.py,
#: LP mode); the bundled digits CNN (64 x 960 x 64 = 3.9e6) keeps its flips
ATTACK_FLIP_MAX_ENTRIES = 10_000_000

#: with a time limit, the attack (its moves, the climb and the witnesses' margin LPs) stops at
#: this share of the MIP's limit: on [20,200,200,1] its 64 x 400 moves took 10.7 s (4.9 s over)
ATTACK_LIMIT_SHARE = 0.5

#: the pattern climb from the attack's point or the best sampled points (heuristics.starts.climb):
#: its margin LPs (1-3 ms each on the speed networks), how many best sampled points it starts from
CLIMB_CHECKS = 200
CLIMB_SAMPLED_STARTS = 3

#: in the ℓ1 decomposition the climb then moves up to this many gates at once, with these more LPs
WIDE_FLIPS = 3
WIDE_CHECKS = 300

#: ``formulation="auto"`` races only for these input norms. With the ℓ1 norm the backward model
#: is decomposed into one small MIP per gradient entry and sign, and in benchmarks/speed.py it
#: won every race, so racing only added the probe and a restart: [10,20,20,1] unit box 15.6 ->
#: 23.3 s and 46.5 -> 62.5 s, [16,16,16,2] 31.0 -> 38.7 s (forward alone: 64 s).
AUTO_RACE_NORMS = frozenset({"linf"})

#: ``solver="auto"``: who solves each raced model. On the unit boxes of benchmarks/speed.py with
#: the ℓ∞ input norm (docs/performance.md), HiGHS finished the forward model of [16,16,16,2]
#: first, while SCIP solved the backward model of [10,20,20,1] in 35 s (seed 0; 89-138 s for
#: HiGHS's) and 283 s (seed 1, which HiGHS did not finish in 300 s), two solves sharing two cores
AUTO_RACE_SOLVERS = {"forward": "highs", "backward": "scip"}

#: ``solver="auto"`` with the ℓ2 input norm: who solves the exact model. SCIP takes ``t <=
#: ||g||_2^2`` itself (spatial branching, one search); HiGHS needs the chords' rounds
#: (lipopt.strategies.l2_outer), each a fresh MIP: on a [8,16,16,2] ℓ∞ ball of radius 0.3 (seed
#: 500) SCIP was optimal in 12 s, HiGHS at [3.78, 4.68] after 60 s (benchmarks/l2.py). HiGHS where
#: SCIP is not installed. The same for an ℓ2-ball domain (SCIP: one quadratic row; HiGHS: its box
#: and tangent cuts): on the six ℓ2 balls of results/l2_ball.md (radius 0.1 sqrt(d), ℓ1 input,
#: decomposed) SCIP took 0.2-30 s, HiGHS 0.2-19 s on five (1.0-11x) and did not finish the sixth.
AUTO_L2_SOLVER = "scip"

#: ``regions="auto"`` and ``split="auto"`` on at most AUTO_SPLIT_MAX_DIM inputs (where the
#: regions are few): where at least this share of the hidden neurons has a bias of exactly 0
#: (every kink of the first layer through one point: a degenerate network, few regions for its
#: size and a weak MIP relaxation where the hyperplanes meet), the region search answers alone,
#: without the domain split. [3,24,24,1] with zero biases and integer weights in [-3, 3] over
#: [-1, 1]^3, seeds 0-3, 30 s (benchmarks/results/degenerate_regions.md): the defaults (domain
#: split, MIP parts) stopped open at 30 s every time (ratios 3.5-7.0, e.g. [360, 2536]); the
#: region search was exact in 7.2, 3.7, 6.0 and 5.5 s (397, 1017, 416, 555); bab=True and
#: split=False stayed open too (seed 0, on a loaded machine: [397, 939] and [397, 933])
AUTO_REGIONS_ZERO_BIAS_SHARE = 1.0
#: ... and elsewhere there the region search before the split, from this many inputs on or on at
#: most this many neurons with a kink (benchmarks/regions_first.py, results/regions_first.md)
AUTO_REGIONS_FIRST_MIN_DIM = 3
AUTO_REGIONS_FIRST_MAX_HIDDEN = 48

#: the activation branch and bound's forked workers run slices of the search below a node of
#: this many seconds, not only the part MIPs (lipopt.search.bab_slice; 0: parts only)
BAB_SLICE_SECONDS = 0.5
#: no-good-cut re-solves of one part's MIP in the activation branch and bound (a part whose
#: optimum is still lower-dimensional after them keeps its proven bound, unclosed)
BAB_PART_REFINEMENTS = 20

#: ``bab="auto"`` with a time limit (the user's question only): the plan runs for this share of
#: the limit; if it has not finished, the activation branch and bound runs for the rest from the
#: plan's best point, and the answer keeps the better bounds of both; 1.0: never (the plan
#: alone). At 0.5, benchmarks/bab_after.py at 15 s (results/bab_after.md) gave the same exact
#: answers on the three easy cases, but on the five stopped ones a larger upper bound on three
#: ([10,20,20,1] seed 0: 15.9 against 12.6 for the plan alone) and a worse ratio on four (the
#: digits CNN: 4.29 against 4.09): half the limit costs the plan more than the branch and bound
#: gains in the other half
BAB_AFTER_SHARE = 1.0
#: ... and only when at least this many seconds are left for it
MIN_BAB_SECONDS = 2.0
#: where the formulations would race (``formulation="auto"``, the ℓ∞ input norm, ``bab="auto"``)
#: and at least this share of the neurons with a kink are unstable under linear bounds, the
#: activation branch and bound runs alone on every core instead (on a Dask cluster it races the
#: backward MIP in the forward MIP's place). Racing, benchmarks/bab_race.py at 60 s
#: (results/bab_race.md): its bracket was tighter on the four cases with 64-100 % unstable (the 8x8
#: digits MLP at radius 0.1, images 0 and 1: ratio 1.61 -> 1.43 and 1.98 -> 1.64; [64,20,20,2] on
#: the unit box: 3.02 -> 2.18; its ball: the same answer), and looser on those with 17-42 % (the
#: digits MLP at 0.05, image 1: exact in 42 s against 1.11; the digits CNN at 0.05: 1.41 -> 1.51 and
#: 1.24 -> 1.33 by weaker lower bounds; at 0.1, 35 %: one better, one worse)
BAB_RACE_UNSTABLE_SHARE = 0.5
#: ... or at least this many of them, whatever their share: networks whose MIPs are too big to
#: explore in the limit. benchmarks/bab_race.py at 60 s with the score branching of
#: BAB_SCORE_MIN_UNSTABLE (results/bab_race_count.md): on the digits CNN, 145-297 unstable at
#: 17-36 %, the branch and bound's bracket was tighter on all four cases (radius 0.05: 1.50 ->
#: 1.37, 1.26 -> 1.21; 0.1: 2.66 -> 1.92, 2.40 -> 1.85); on the digits MLP at 0.05, 34 and 44
#: unstable at 27-34 %, the forward racer was exact (in 3.4 and 29.8 s) where the branch and
#: bound was exact in 2.7 s and stopped at 1.036
BAB_RACE_MIN_UNSTABLE = 64
#: the share rule only on networks of at least this many inputs (the count rule on any): the
#: speed suite's 10- and 16-input unit boxes are all unstable and the forward racer wins some.
#: Racing by count, [10,20,30,20,2]'s (70 unstable) fell from 59.5/114.7 to 29.7/47.0 at 60 s,
#: 40.0/60.5 to 25.0/38.1 at 300 s (results/scale_speed_race_count.md)
BAB_RACE_MIN_INPUTS = 32

#: the least share of the time limit the solver is given after the bounds and the build
MIN_SOLVE_SHARE = 0.01
#: fewer seconds than this left after the probe: no race (the racers would start from scratch)
MIN_RACE_SECONDS = 1.0
#: ``split_leader``: the least time the split of the leader must have after the decision, or the
#: racers run to the end. The split restarts the leader from scratch, and a split pays from solves
#: of about 100 s (docs/performance.md): with less time left, racing on keeps the better bounds
MIN_LEADER_SPLIT_SECONDS = 60.0

#: per solver, options for a solve under a cutoff: what each adapter declares (``CUTOFF_OPTIONS`` of
#: :class:`~lipopt.solvers.adapter.Adapter`; HiGHS's, presolve off, with the measurement behind it)
CUTOFF_OPTIONS: dict[str, dict[str, Any]] = registry.CUTOFF_OPTIONS

#: the ℓ1 decomposition's start: gradients at this many uniform random points of the domain
#: (numpy, about 10 ms), of which the best few are verified as witnesses
DECOMPOSE_SAMPLES = 2000
DECOMPOSE_VERIFIED = 4
#: how long past its limit a step waits for its worker processes (the race's racers, the pieces
#: of a union) before stopping them and answering with what it has: this share of the limit
#: plus these seconds. The racers stop their own solves at the limit; the wait covers sending
#: their answers back. (It was 30 s: a [2000,2000,1] unit box with a 20 s limit took 52 s.)
LIMIT_SLACK_SHARE = 0.05
LIMIT_SLACK_SECONDS = 1.0
#: seconds of a query's time limit kept back from its strategies for the work after them
#: (finding an attained value where none was, checking the witness's region, the result): this
#: share of the limit, at most FINISH_RESERVE_SECONDS. A [2000,2000,1] ball under a 20 s limit
#: spent about 3 s there on a loaded machine, past the limit (issue 44).
FINISH_RESERVE_SHARE = 0.05
FINISH_RESERVE_SECONDS = 2.0

#: seconds per network weight to build a model in Pyomo, a step that cannot be interrupted:
#: with a time limit, a model whose build would not fit in the time left is not built, and the
#: answer is the bounds' (measured for both formulations on unit boxes: [200,500,500,1]
#: 1.1-1.2 s and [2000,2000,1] 13.4-14.7 s, 3.4e-6 s per weight)
BUILD_SECONDS_PER_WEIGHT = 3.5e-6
#: HiGHS's MIP presolve does not stop at the time limit: on the forward model of
#: [200,500,500,1] (1.07 M nonzeros) it took 13.6 s under a 1 s limit and reduced nothing;
#: without it the same solve stopped after 3.0 s with a proven bound. With a time limit, where
#: weights times this rate exceed ``PRESOLVE_LIMIT_SHARE`` of the limit, the solve runs with
#: ``LARGE_MODEL_OPTIONS``, what each adapter declares for such a model
PRESOLVE_SECONDS_PER_WEIGHT = 3.9e-5
PRESOLVE_LIMIT_SHARE = 0.5
LARGE_MODEL_OPTIONS: dict[str, dict[str, Any]] = registry.LARGE_MODEL_OPTIONS

#: seconds to give the probe (the backward model alone, in-process) before racing: most
#: problems finish within it and never pay for starting processes
RACE_AFTER = 5.0

#: ``split_leader``: seconds the two racers run before, if neither has finished, both stop and
#: the one with the smaller proven bound is solved again split in halves on both cores. After
#: 30 s the smaller bound was the eventual winner's on all eight two-hidden-layer networks of
#: one run (docs/performance.md; within a few percent it is a coin toss); a split saves a
#: quarter to a third of a long solve, so the 30 s spent again pay from solves of about 100 s on
LEADER_AFTER = 30.0

#: ``split_leader``: from this many seconds into the race, the racers' proven bounds (which they
#: report while solving) decide at once when one is :data:`DECISIVE_RATIO` times the other or more:
#: both stop and the leader is split then, not at :data:`LEADER_AFTER`. Followed every 3 s on eight
#: two-hidden-layer networks, the ratio passed 1.3 on five (at 9-24 s, 1.33-1.88), always with the
#: eventual winner ahead, and the eventual loser never led by more than 1.10 (docs/performance.md)
EARLY_LEADER_AFTER = 10.0
DECISIVE_RATIO = 1.3

#: a hidden neuron whose incoming (row and bias) and outgoing (column) norms differ by more than
#: this factor is rescaled by a power of two first (:mod:`lipopt.balance`; the function is unchanged
#: bit for bit). Issue 31's fuzz test: neurons scaled by 1e6 with 1e-6 outgoing made HiGHS return
#: wrong optimal bounds on 4 of 900 networks; trained networks have none this far off
BALANCE_RATIO = 2.0**16

#: batches (:mod:`lipopt.batch`): how many times a query is started before it is recorded as
#: ``failed`` when its worker process dies under it (killed, out of memory): a second and third try
#: cover a worker lost for reasons of its own
BATCH_ATTEMPTS = 3
#: batches: seconds between progress lines when stderr is not a terminal (a log file: a line
#: per finished query would flood it for small queries, and none for an hour would look dead)
BATCH_PROGRESS_SECONDS = 10.0

#: ``lipopt batch --scheduler``: seconds to wait for the Dask scheduler before saying it cannot be
#: reached (distributed's default: 30 s; a local scheduler answers in milliseconds)
CLUSTER_CONNECT_SECONDS = 10.0

#: the largest PSD block Clarabel is given by shor and hr2 (Clarabel is their default solver):
#: Clarabel factors a dense matrix of about (side²/2)² entries per block. Measured here (24 GB,
#: benchmarks/semialgebraic.py): side 121 (HR-2's block at d = n = 40) took 3 GB and 5 min;
#: side 241 (SHOR at d = n = 80) failed to allocate at 9.2 GB resident after 33 s. Larger
#: blocks are refused with one line that points to SCS (``--sdp-solver scs``)
CLARABEL_MAX_SIDE = 160


@dataclass(frozen=True)
class Policy:
    """The thresholds above, as one value (field ``x`` is the constant ``X``)."""

    auto_split_max_dim: int
    auto_decompose_min_dim: int
    auto_region_nodes: int
    auto_region_projected_limit: int
    auto_region_nodes_few_unstable: int
    auto_region_projected_limit_few_unstable: int
    auto_region_late_factor: float
    auto_region_unstable_share: float
    attack_restarts: int
    attack_steps: int
    bab_attack_restarts: int
    bab_full_attack_max_entries: int
    attack_flip_max_entries: int
    attack_limit_share: float
    climb_checks: int
    climb_sampled_starts: int
    wide_flips: int
    wide_checks: int
    auto_race_norms: frozenset[str]
    auto_race_solvers: dict[str, str]
    auto_l2_solver: str
    bab_mip_at: int
    bab_score_min_unstable: int
    bab_prefix_lp_share: float
    bab_cut_max_inputs: int
    bab_sign_group: int
    bab_sign_group_probe: int
    bab_sign_group_min_gain: float
    bab_sign_order_swaps: int
    bab_sign_order_share: float
    bab_dense_max_entries: int
    bab_heap_max_bytes: int
    bab_empty_lp_max_unstable: int
    bab_empty_lp_min_rate: float
    auto_regions_zero_bias_share: float
    auto_regions_first_min_dim: int
    auto_regions_first_max_hidden: int
    bab_part_refinements: int
    bab_slice_seconds: float
    bab_after_share: float
    min_bab_seconds: float
    bab_race_unstable_share: float
    bab_race_min_unstable: int
    bab_race_min_inputs: int
    min_solve_share: float
    min_race_seconds: float
    min_leader_split_seconds: float
    cutoff_options: dict[str, dict[str, Any]]
    decompose_samples: int
    decompose_verified: int
    race_after: float
    leader_after: float
    early_leader_after: float
    decisive_ratio: float
    limit_slack_share: float
    limit_slack_seconds: float
    finish_reserve_share: float
    finish_reserve_seconds: float
    build_seconds_per_weight: float
    presolve_seconds_per_weight: float
    presolve_limit_share: float
    large_model_options: dict[str, dict[str, Any]]
    balance_ratio: float

    def slack(self, limit: float | None) -> float:
        """Seconds a step waits for its workers past ``limit``."""
        return self.limit_slack_seconds + self.limit_slack_share * (limit or 0.0)

    def for_strategies(self, limit: float | None, spent: float) -> float | None:
        """What is left of a query's ``limit`` for its strategies, ``spent`` seconds in: less
        the reserve for the work after them, and never below a hundredth of the limit."""
        if limit is None:
            return None
        reserve = min(self.finish_reserve_share * limit, self.finish_reserve_seconds)
        return max(limit - spent - reserve, 0.01 * limit)

    @classmethod
    def current(cls) -> Policy:
        """The module's constants as they are now."""
        values = globals()
        return cls(**{f.name: values[f.name.upper()] for f in fields(cls)})
