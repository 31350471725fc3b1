"""Pattern climb: a local search over activation patterns, each step checked by an LP.

The objective ``x -> ||∇(c^T f)(x)||_{α*}`` is constant on each linear region, and a region is
named by its activation pattern σ (one 0/1 gate per hidden neuron). The gradient of a pattern is

    g(σ) = W_1^T D_1 W_2^T D_2 ··· W_L^T c,   D_k = diag(α_k + (1 - α_k) σ_k)

(``D = σ`` for ReLUs; an identity neuron, ``α = 1``, has no kink: its gate is kept at 1 and
never flipped),

so every pattern one gate away from the current one is scored in one batched product, without
finding a point first. The climb takes the best-scoring neighbour whose region meets the
domain in a full-dimensional set — decided by the margin LP of :func:`lipopt.verify.check_region`,
which also returns a point deep inside it — and repeats until no neighbour that scores higher
has such a region (or the budget of LPs is spent). Asked to, it then widens the step from the
best region reached: patterns two or three gates away, scored the same way, where no nearer one
is higher (a region can be the best of its one-gate neighbours and still lie a few gates from a
higher one).

Unlike the gradient attack (:mod:`lipopt.heuristics.attack`), which steps across one hyperplane
near the current point, the LP finds a flipped pattern's region wherever it lies, however thin:
on the speed benchmark's unit boxes it reached the exact constant from the attack's or the best
sampled point where those fell short (docs/performance.md). Every value returned is the
gradient norm at a point strictly inside its region, so it is attained: a lower bound, with a
certified pattern.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.domain import Box, Domain, L1Ball, L2Ball, LinfBall
from lipopt.heuristics.target import FloatArray
from lipopt.highs_lp import LpStatus, solve_lp
from lipopt.lazy import lazy_module
from lipopt.network import Network
from lipopt.norms import InputNorm, dual_norm
from lipopt.verify import FULL_DIM_MARGIN, Dimension, check_region, kinked, pattern_affine_maps

sparse = lazy_module("scipy.sparse")

#: a neighbour must score this much more (relative) than the current pattern to be tried
IMPROVEMENT = 1e-9
#: a batch of wider moves (two gates or more) is scored only if its patterns × (hidden neurons +
#: inputs) is at most this (4.4 million for three gates of [10,20,30,20,2]: about 100 MB at peak)
MAX_WIDE_ENTRIES = 5_000_000
#: :func:`reachable_flips` keeps a gate unless its other sign is out of reach by more than this
#: (relative to the pre-activation's size): rounding never hides a region from the climb
REACH_SLACK = 1e-9


@dataclass(frozen=True)
class ClimbResult:
    """The best region the climb reached: a point strictly inside it, its gradient norm, and
    how many margin LPs were solved."""

    point: FloatArray
    value: float
    checks: int


def _flips(
    pattern: list[FloatArray], k: int, inputs: int = 0, movable: NDArray[np.bool_] | None = None
) -> list[FloatArray] | None:
    """Every pattern exactly ``k`` gates away, as a batch (one array per hidden layer; for
    ``k = 1`` row n flips the n-th movable hidden neuron, layers in order); None where there
    are none, or for ``k > 1`` where patterns × (gates + ``inputs``) would exceed
    :data:`MAX_WIDE_ENTRIES` (the batch and its gradients, one per pattern). ``movable``: the
    gates that may flip, all hidden neurons concatenated (default: every one)."""
    flat = np.concatenate(pattern) if pattern else np.zeros(0)
    gates = np.arange(flat.size) if movable is None else np.flatnonzero(movable)
    count = math.comb(gates.size, k)
    if count == 0 or (k > 1 and count * (flat.size + inputs) > MAX_WIDE_ENTRIES):
        return None
    chosen = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(gates.tolist(), k)),
        dtype=np.intp,
        count=count * k,
    ).reshape(count, k)
    batch = np.repeat(flat[None, :], count, axis=0)
    rows = np.arange(count)[:, None]
    batch[rows, chosen] = 1.0 - batch[rows, chosen]
    return np.split(batch, np.cumsum([mask.size for mask in pattern])[:-1], axis=1)


class _Regions:
    """The margin LPs of the climb, each pattern's verdict kept (climbs from different starts,
    and the steps of one climb, meet the same patterns): a budget of ``max_checks`` LPs and an
    optional ``deadline`` (``time.perf_counter()`` seconds)."""

    def __init__(
        self, network: Network, domain: Domain, max_checks: int, deadline: float | None
    ) -> None:
        self.network, self.domain = network, domain
        self.max_checks, self.deadline = max_checks, deadline
        self.checks = 0
        self.seen: dict[bytes, FloatArray | None] = {}

    def late(self) -> bool:
        """The deadline has passed."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def left(self) -> float | None:
        """Seconds to the deadline (None without one)."""
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def can_decide(self, pattern: list[FloatArray]) -> bool:
        """The pattern's verdict is kept, or an LP is left in the budget before the deadline."""
        if _key(pattern) in self.seen:
            return True
        return self.checks < self.max_checks and not self.late()

    def inside(self, pattern: list[FloatArray]) -> FloatArray | None:
        """A point strictly inside the pattern's region and the domain, or None where their
        intersection is not full-dimensional (or undecided). Call only where
        :meth:`can_decide`."""
        key = _key(pattern)
        if key not in self.seen:
            if isinstance(self.domain, (Box, LinfBall)):  # boxes: the LP handed over directly
                low, high = self.domain.bounding_box()
                self.seen[key] = _deep_point(self.network, pattern, low, high, self.left())
            else:
                check = check_region(self.network, pattern, self.domain, self.left())
                full = check.dimension is Dimension.FULL and check.point is not None
                self.seen[key] = check.point if full else None
            self.checks += 1
        return self.seen[key]


def _deep_point(
    network: Network,
    pattern: list[FloatArray],
    lower: FloatArray,
    upper: FloatArray,
    time_limit: float | None = None,
) -> FloatArray | None:
    """The margin LP of :func:`lipopt.verify.check_region` over the box ``[lower, upper]``,

        max t  s.t.  (2σ_i - 1)(A_i x + d_i) >= t ||A_i||,  lower + t <= x <= upper - t,  t <= 1,

    built as one matrix in the box's own frame and handed to :func:`lipopt.highs_lp.solve_lp`: its
    point where ``t`` exceeds :data:`~lipopt.verify.FULL_DIM_MARGIN`, else None. The climb's
    answer is verified by ``check_region`` again where it is used as a witness. Identity
    neurons give no row."""
    d = lower.size
    rows: list[FloatArray] = []
    limits: list[FloatArray] = []
    maps = zip(pattern_affine_maps(network, pattern), pattern, kinked(network))
    for (a_mat, d_vec), mask, kinks in maps:
        sign = 2.0 * mask - 1.0
        norms = np.linalg.norm(a_mat, axis=1)
        varying = (norms > 1e-14) & kinks
        constant = (norms <= 1e-14) & kinks
        if np.any(sign[constant] * d_vec[constant] < -1e-12):  # constant, of the wrong sign
            return None
        scale = sign[varying] / norms[varying]
        rows.append(-scale[:, None] * a_mat[varying])
        limits.append(scale * d_vec[varying])
    identity = np.eye(d)
    matrix = np.vstack([*rows, -identity, identity])
    matrix = np.hstack([matrix, np.ones((matrix.shape[0], 1))])  # the margin t's column
    cost = np.append(np.zeros(d), -1.0)  # min -t
    bounds = (np.append(lower, -np.inf), np.append(upper, 1.0))
    rhs = np.concatenate([*limits, -lower, upper])
    limit = None if time_limit is None else max(float(time_limit), 1e-3)
    answer = solve_lp(cost, sparse.csc_matrix(matrix), rhs, bounds, limit)
    if answer.status is not LpStatus.OPTIMAL or answer.x is None:
        return None  # not decided in time: None, as an undecided region
    if answer.x[d] <= FULL_DIM_MARGIN:
        return None
    return np.clip(answer.x[:d], lower, upper)


def reachable_flips(
    network: Network, pattern: list[FloatArray], domain: Domain
) -> NDArray[np.bool_]:
    """Per hidden neuron (layers concatenated), whether its other sign is reached anywhere in
    the domain by its pre-activation's affine map on ``pattern``'s region, ``z = A x + d``
    (:func:`pattern_affine_maps`): ``min z < 0`` for an active gate, ``max z > 0`` for an
    inactive one, the range taken over an ℓ1 or ℓ2 ball exactly (``A x_0 + d ± ρ ||A_i||_*``),
    else over the domain's bounding box, and widened. Flipping one gate leaves that neuron's
    map as it is (only later layers' maps change), so a neuron marked False has no one-gate
    neighbour region in the domain: the climb need not spend a margin LP on it."""
    reached = []
    for (a_mat, d_vec), mask in zip(pattern_affine_maps(network, pattern), pattern):
        if isinstance(domain, (L1Ball, L2Ball)):
            mid = a_mat @ domain.center + d_vec
            spread = domain.radius * np.linalg.norm(a_mat, ord=domain.dual_order, axis=1)
        else:
            low, high = domain.bounding_box()
            mid = a_mat @ ((low + high) / 2.0) + d_vec
            spread = np.abs(a_mat) @ ((high - low) / 2.0)
        slack = REACH_SLACK * (1.0 + np.abs(mid) + spread)
        reached.append(np.where(mask > 0.5, mid - spread < slack, mid + spread > -slack))
    return np.concatenate(reached) if reached else np.zeros(0, dtype=bool)


def _key(pattern: list[FloatArray]) -> bytes:
    """A pattern's gates as bytes (a dictionary key)."""
    return np.concatenate(pattern).astype(np.int8).tobytes() if pattern else b""


def _ascend(
    network: Network,
    c: ArrayLike,
    norm: InputNorm,
    regions: _Regions,
    pattern: list[FloatArray],
    point: FloatArray,
    value: float,
    max_flips: int,
) -> tuple[list[FloatArray], FloatArray, float]:
    """Climb from ``pattern`` (region point ``point``, value ``value``): try the patterns one
    gate away best score first, then, where none is higher with a full-dimensional region, two
    gates away, and so on up to ``max_flips``; after each move start again from one gate. Ends
    at the first size-``max_flips`` local maximum, or when the LPs or the time run out."""
    flips = 1
    movable = np.concatenate(kinked(network)) if network.hidden_widths else None
    while flips <= max_flips:
        if flips > 1 and regions.late():
            break
        gates = movable
        if flips == 1 and movable is not None:
            gates = movable & reachable_flips(network, pattern, regions.domain)
        batch = _flips(pattern, flips, network.input_dim, gates)
        moved = False
        if batch is not None:
            scores = np.asarray(dual_norm(network.pattern_gradients(batch, c), norm))
            for row in np.argsort(-scores, kind="stable"):
                if scores[row] <= value + IMPROVEMENT * max(1.0, abs(value)):
                    break
                neighbour = [masks[row] for masks in batch]
                if not regions.can_decide(neighbour):
                    return pattern, point, value
                inside = regions.inside(neighbour)
                if inside is not None:  # copied: a row of the batch would keep it all alive
                    pattern = [mask.copy() for mask in neighbour]
                    point, value, moved = inside, float(scores[row]), True
                    break
        flips = 1 if moved else flips + 1
    return pattern, point, value


def pattern_climb(
    network: Network,
    domain: Domain,
    c: ArrayLike,
    norm: InputNorm | str,
    starts: Sequence[FloatArray],
    max_checks: int = 200,
    deadline: float | None = None,
    max_flips: int = 1,
    wide_checks: int = 0,
) -> ClimbResult | None:
    """Climb from each point of ``starts`` in turn (module docstring), spending at most
    ``max_checks`` margin LPs in all (a pattern met again costs none) and stopping at
    ``deadline`` (``time.perf_counter()`` seconds); the best region reached, or None if no
    start lies in a full-dimensional region of the domain (a start on a boundary is first moved
    inside its region by the LP).

    With ``max_flips > 1`` the best region reached then climbs on, with the LPs left and
    ``wide_checks`` more, moving also to patterns up to ``max_flips`` gates away where no nearer
    one is higher (each size scored in one batch, skipped where the batch would be larger than
    :data:`MAX_WIDE_ENTRIES` allows)."""
    input_norm = InputNorm.parse(norm)
    regions = _Regions(network, domain, max_checks, deadline)
    best: tuple[list[FloatArray], FloatArray, float] | None = None
    for start in starts:
        pattern = network.activation_pattern(np.asarray(start, dtype=np.float64))
        if not network.is_relu:  # an identity neuron's gate is kept at 1 (no kink)
            pattern = [np.where(kinks, m, 1.0) for m, kinks in zip(pattern, kinked(network))]
        if not regions.can_decide(pattern):
            break
        point = regions.inside(pattern)
        if point is None:
            continue
        gradient = network.pattern_gradients([m[None, :] for m in pattern], c)
        value = float(np.asarray(dual_norm(gradient, input_norm))[0])
        reached = _ascend(network, c, input_norm, regions, pattern, point, value, 1)
        if best is None or reached[2] > best[2]:
            best = reached
    if best is None:
        return None
    if max_flips > 1:
        regions.max_checks += wide_checks
        best = _ascend(network, c, input_norm, regions, *best, max_flips)
    return ClimbResult(best[1], best[2], regions.checks)


__all__ = ["ClimbResult", "pattern_climb"]
