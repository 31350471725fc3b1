"""Certified robustness radii from Lipschitz constants (paper appendix E.2).

Binary (one output, class = sign f): ``||y - x|| < |f(x)| / L`` keeps the sign (eq. 100).
Multi-class (class ``i = argmax f(x)``, margins ``f_ij = f_i - f_j``), Lemma 9 / Theorem 10:

- ``pairwise``: ``r = min_j f_ij(x) / L(f_ij)``, one LipMIP per class pair (c = e_i - e_j);
- ``naive``:    ``r = min_j f_ij(x) / max_j L(f_ij)``, the same MIPs with the per-pair maximum;
- ``cross``:    ``r = min_j f_ij(x) / L^(α,×)(f)``, one LipMIP with the cross-norm;
- ``class``:    ``r = min_j f_ij(x) / L^(α,×(i))(f)``, one LipMIP with the class-specific
  cross-norm of the predicted class (eqs. 118-119; :func:`class_vertices`).

Proposition 7 gives ``cross <= naive <= pairwise``; the dual ball of ``×(i)`` lies in the
cross-norm's and contains every ``e_i - e_j``, so ``cross <= class <= naive``. Every L used is a
certified upper bound (the solver's proven bound), so each radius is certified even when a solve
is stopped early. The constant holds over the domain (the requested ball around x), so the
certified set is the part of that ball within ``r`` of x; a radius beyond the ball's is capped at
it.

Time: ``time_limit`` bounds each constant's solve; ``total_time_limit`` bounds the whole call,
each constant getting ``min(time_limit, what is left)``. Once the total is spent, the constants
left are not solved but bounded by interval bound propagation (FastLip: the largest dual norm
over the gradient's interval box, a proven upper bound), with status :data:`BUDGET_SPENT`.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.domain import BALLS, Domain, L1Ball, L2Ball, LinfBall, intersect
from lipopt.lipschitz import LipschitzError, check_arguments, lipschitz
from lipopt.network import Affine, Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.status import Status, Unsolved

#: the balls a radius is certified in
Ball = LinfBall | L1Ball | L2Ball
#: the norm of each ball, in which its radius is certified
BALL_NORMS: dict[type, str] = {ball: name for name, ball in BALLS.items()}
#: the status of a constant left unsolved because the call's total time limit was spent: its
#: value is the interval bound (a proven upper bound), so the radius stays certified
BUDGET_SPENT = Unsolved.TOTAL_TIME_LIMIT


class CertifyMethod(str, Enum):
    CROSS = "cross"
    CLASS = "class"
    PAIRWISE = "pairwise"
    NAIVE = "naive"


def class_vertices(m: int, predicted: int) -> np.ndarray:
    """The vertices of the dual ball of the class-specific cross-norm ``×(i)``, one per row.

    The paper (eqs. 118-119) defines, for the predicted class i,
    ``||z||_×(i) = sup_{y ∈ P(i)} |y^T z|`` with ``P(i) = conv({e_i - e_j} ∪ {e_i})``; the
    authors' code (``targetCrossLipschitz``) states it as ``w_i = 1, w_j ∈ [-1, 0] (j != i),
    Σ_{j != i} w_j >= -1``, whose vertices are ``e_i`` and ``e_i - e_j``. So
    ``||z||_×(i) = max(|z_i|, max_{j != i} |z_i - z_j|)``, and, the objective being convex in
    the dual vector, ``L^(α,×(i))(f) = max(L^α(f_i), max_{j != i} L^α(f_i - f_j))``.

    ``e_i`` is what makes ``×(i)`` a norm (with it the m vertices are linearly independent;
    Lemma 10): without it the constant would be ``max_j L^α(f_ij)``, the ``naive`` one. As
    every ``e_i - e_j`` lies in ``P(i)`` (eq. 115 holds) and ``P(i) ⊆ E`` (Definition 22),
    ``max_j L^α(f_ij) <= L^(α,×(i)) <= L^(α,×)``: Theorem 10 certifies its radius, and
    ``cross <= class <= naive <= pairwise``.

    Args:
        m: the number of outputs (classes).
        predicted: the predicted class i.

    Returns:
        ``A`` of shape (m, m): row 0 is ``e_i``, then ``e_i - e_j`` for each ``j != i`` in
        order; ``||z||_×(i) = ||A z||_∞``.
    """
    eye = np.eye(m)
    return np.vstack(
        [eye[predicted], *(eye[predicted] - eye[j] for j in range(m) if j != predicted)]
    )


def class_network(network: Network, predicted: int) -> Network:
    """``A f`` with ``A`` = :func:`class_vertices`: its ℓ∞ output norm is ``f``'s ``×(i)``, so
    ``L^(α,×(i))(f) = L^(α,∞)(A f)`` (``||A z||_∞ = max over the vertices |v^T z|``), one exact
    LipMIP over the ℓ1 dual ball of the m outputs of ``A f``. Only the last affine map changes
    (``A W_L``, ``A b_L``); the hidden layers, their bounds and binaries are ``f``'s."""
    vertices = class_vertices(network.output_dim, predicted)
    last = network.layers[-1]
    assert isinstance(last, Affine)
    mapped = last.then(Affine(vertices, np.zeros(len(vertices))))
    return Network((*network.layers[:-1], mapped))


@dataclass(frozen=True)
class CertifyResult:
    """A certified radius around ``x``.

    Attributes:
        predicted: the predicted class (binary: 1 if f(x) > 0 else 0).
        margins: ``f_i(x) - f_j(x)`` per other class j (binary: ``{"|f|": |f(x)|}``).
        lipschitz: the constants used, by name (``"cross"``, ``"class"``, ``"i-j"`` pairs, or
            ``"f"``): each a proven upper bound, the exact constant where ``exact`` says so.
        radius: the certified radius in the input norm (capped at the ball's radius).
        uncapped_radius: margin / constant before capping.
        ball_radius: the radius of the requested ball.
        certified_ball: every point of the requested ball keeps the predicted class.
        capped: the radius was larger than the ball and was capped.
        method, norm: how it was computed; ``statuses``: solver status of each constant
            (:data:`BUDGET_SPENT` where it was bounded without a solve).
        seconds: total time.
        lower: per constant, the value attained at a point (a lower bound), or None.
        exact: per constant, whether it is exact (status ``optimal``) rather than a bracket.
        total_time_limit: the time limit of the whole call, or None.
        clip: the valid input range ``(LO, HI)`` the constants were taken within (the ball ∩
            ``[LO, HI]^d``), or None: the radius certifies the points of that intersection.
    """

    predicted: int
    margins: dict[str, float]
    lipschitz: dict[str, float]
    radius: float
    uncapped_radius: float
    ball_radius: float
    certified_ball: bool
    capped: bool
    method: str
    norm: str
    statuses: dict[str, str]
    seconds: float
    lower: dict[str, float | None] = field(default_factory=dict)
    exact: dict[str, bool] = field(default_factory=dict)
    total_time_limit: float | None = None
    clip: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Constants:
    """The constants of one certificate: each solved within ``min(time_limit, what is left of
    the total)``, or, once the total is spent, bounded by interval bounds without a solve."""

    def __init__(
        self, network: Network, ball: Domain, norm: str, options: dict[str, Any], deadline: float
    ) -> None:
        self.network, self.ball, self.norm = network, ball, norm  # ball: the ball ∩ any clip
        self.options, self.deadline = options, deadline
        self.values: dict[str, float] = {}
        self.statuses: dict[str, str] = {}
        self.lower: dict[str, float | None] = {}

    def __call__(self, name: str, network: Network | None = None, **objective: Any) -> float:
        """The constant ``name`` of ``c^T f`` (``c=...``) or under ``output_norm=...``, of
        ``network`` (default: the certificate's)."""
        net = self.network if network is None else network
        left = self.deadline - time.perf_counter()
        if left <= 0:
            value = propagated_constant(net, self.ball, self.norm, **objective)
            self.values[name], self.statuses[name], self.lower[name] = value, BUDGET_SPENT, None
            return value
        options = dict(self.options)
        if left != float("inf"):
            limit = options.get("time_limit")
            options["time_limit"] = left if limit is None else min(limit, left)
        res = lipschitz(net, self.ball, norm=self.norm, **objective, **options)
        self.values[name], self.statuses[name], self.lower[name] = res.value, res.status, res.lower
        return res.value


def propagated_constant(
    network: Network,
    ball: Domain,
    norm: str,
    c: ArrayLike | None = None,
    output_norm: str | None = None,
) -> float:
    """A proven upper bound on the constant without a solve: the Jacobian-norm bound
    (:mod:`lipopt.bounds.jacobian`) on the linear bounds, never above the largest dual norm over
    their interval box of the input gradient (of ``c^T f``, or of ``J^T w`` over the output
    norm's dual ball)."""
    seed: Any = OutputNorm.parse(output_norm) if output_norm is not None else c
    if seed is None:
        seed = np.ones(1)
    return jacobian_norm_bound(network, ball, seed, InputNorm.parse(norm)).value


def clipped(ball: Ball, clip: tuple[float, float] | None) -> Domain:
    """The set the constants are taken over: the ball ∩ ``[LO, HI]^d`` (the ball without a
    clip); the centre must lie in the range."""
    if clip is None:
        return ball
    low, high = (float(v) for v in clip)
    if not low < high:
        raise LipschitzError(f"clip takes (LO, HI) with LO < HI, got {clip!r}")
    outside = np.flatnonzero((ball.center < low) | (ball.center > high))
    if outside.size:
        j = int(outside[0])
        raise LipschitzError(
            f"the input lies outside the clip range [{low:g}, {high:g}]: x[{j}] = "
            f"{ball.center[j]:g}"
        )
    return intersect(ball, clip=(low, high))


def check_certify(
    network: Network,
    ball: Ball,
    method: CertifyMethod | str = CertifyMethod.CROSS,
    total_time_limit: float | None = None,
    *,
    clip: tuple[float, float] | None = None,
    **solve_options: Any,
) -> tuple[str, CertifyMethod]:
    """Raise the error :func:`certify` would raise for these arguments, without solving; the
    ball's norm and the method."""
    norm = BALL_NORMS.get(type(ball))
    if norm is None:
        raise LipschitzError("certify needs a ball around the input (--center and --radius)")
    domain = clipped(ball, clip)
    try:
        how = CertifyMethod(method)
    except ValueError:
        *first, last = (m.value for m in CertifyMethod)
        choices = f"{', '.join(first)} or {last}"
        raise LipschitzError(f"unknown method {method!r}; choose {choices}") from None
    total = total_time_limit
    if total is not None and (
        isinstance(total, bool) or not isinstance(total, numbers.Real) or not total > 0
    ):
        raise LipschitzError(f"total time limit must be positive, got {total!r}")
    m = network.output_dim
    objective: dict[str, Any] = {}
    if m > 1 and how is CertifyMethod.CLASS:
        network, objective = class_network(network, 0), {"output_norm": "linf"}
    elif m > 1:
        pair = np.eye(m)[0] - np.eye(m)[1]
        objective = {"output_norm": "cross"} if how is CertifyMethod.CROSS else {"c": pair}
    check_arguments(network, domain, norm, **objective, **solve_options)
    return norm, how


def certify(
    network: Network,
    ball: Ball,
    method: CertifyMethod | str = CertifyMethod.CROSS,
    *,
    total_time_limit: float | None = None,
    clip: tuple[float, float] | None = None,
    **solve_options: Any,
) -> CertifyResult:
    """The certified radius around ``ball.center`` w.r.t. the ball's own norm.

    Args:
        network: the classifier (one output: sign; several: argmax).
        ball: the ℓ∞, ℓ1 or ℓ2 ball around the input x; constants are taken over it, in the
            ball's own norm (the ℓ2 ball: the exact ℓ2 constant, :mod:`lipopt.formulation.l2`).
        method: ``cross``, ``class``, ``pairwise`` or ``naive`` (ignored for one output).
        total_time_limit: seconds for the whole call: each constant's solve gets
            ``min(time_limit, what is left)``; once it is spent, the constants left are not
            solved but bounded by interval bounds (status :data:`BUDGET_SPENT`), so the radius
            stays certified. None (the default): no total limit.
        clip: the valid range ``(LO, HI)`` of every input (e.g. ``(0, 1)`` for pixels): the
            constants are taken over the ball ∩ ``[LO, HI]^d``, so the radius certifies the
            points of the ball within the range (Lemma 9 holds on any convex set around x).
        **solve_options: passed to :func:`lipopt.lipschitz` for every constant (solver, gap,
            ...). ``time_limit`` is **per constant**: ``pairwise`` and ``naive`` solve one
            constant per other class, so the call may take up to (classes - 1) times it.
    """
    norm, how = check_certify(network, ball, method, total_time_limit, clip=clip, **solve_options)
    start = time.perf_counter()
    deadline = float("inf") if total_time_limit is None else start + total_time_limit
    constant = _Constants(network, clipped(ball, clip), norm, solve_options, deadline)
    logits = network.forward(ball.center)
    if network.output_dim == 1:
        predicted = int(logits[0] > 0)
        margins = {"|f|": float(abs(logits[0]))}
        raw = _ratio(margins["|f|"], constant("f"))
    else:
        predicted = int(np.argmax(logits))
        others = [j for j in range(network.output_dim) if j != predicted]
        margins = {f"{predicted}-{j}": float(logits[predicted] - logits[j]) for j in others}
        raw = _multiclass_radius(network, how, predicted, margins, constant)
    return CertifyResult(
        predicted=predicted,
        margins=margins,
        lipschitz=constant.values,
        radius=float(min(raw, ball.radius)),
        uncapped_radius=float(raw),
        ball_radius=float(ball.radius),
        certified_ball=bool(raw > ball.radius),  # Lemma 9 is strict: ||y - x|| < r
        capped=bool(raw > ball.radius),
        method=how.value if network.output_dim > 1 else "binary",
        norm=norm,
        statuses=constant.statuses,
        seconds=time.perf_counter() - start,
        lower=constant.lower,
        exact={name: status == Status.OPTIMAL for name, status in constant.statuses.items()},
        total_time_limit=None if total_time_limit is None else float(total_time_limit),
        clip=None if clip is None else (float(clip[0]), float(clip[1])),
    )


def _multiclass_radius(
    network: Network,
    how: CertifyMethod,
    predicted: int,
    margins: dict[str, float],
    constant: _Constants,
) -> float:
    """The uncapped radius of ``how`` for the predicted class i, its margins by ``"i-j"``."""
    if how is CertifyMethod.CROSS:
        return _ratio(min(margins.values()), constant("cross", output_norm="cross"))
    if how is CertifyMethod.CLASS:
        mapped = class_network(network, predicted)
        return _ratio(min(margins.values()), constant("class", mapped, output_norm="linf"))
    eye = np.eye(network.output_dim)
    others = [j for j in range(network.output_dim) if j != predicted]
    pair = {j: constant(f"{predicted}-{j}", c=eye[predicted] - eye[j]) for j in others}
    if how is CertifyMethod.PAIRWISE:
        return min(_ratio(margins[f"{predicted}-{j}"], pair[j]) for j in others)
    return _ratio(min(margins.values()), max(pair.values()))


def _ratio(margin: float, constant: float) -> float:
    """``margin / L``; a zero constant means f is constant on the ball (radius unbounded)."""
    if constant <= 0:
        return float("inf") if margin > 0 else 0.0
    return max(margin, 0.0) / constant


def predicted_class(network: Network, x: ArrayLike) -> np.ndarray:
    """Predicted classes of a batch: argmax, or ``f > 0`` for one output."""
    out = network.forward(np.atleast_2d(np.asarray(x, dtype=np.float64)))
    return (out[:, 0] > 0).astype(int) if out.shape[1] == 1 else np.argmax(out, axis=1)
