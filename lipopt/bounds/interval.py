"""Interval (hyperbox) bounds, forward and backward (paper appendix D.3).

Forward, for ``z = W h + b`` with ``h ∈ [l, u]`` written as centre ``c = (l+u)/2`` and radius
``r = (u-l)/2``:  ``z ∈ [W c + b - |W| r,  W c + b + |W| r]``; then ``relu`` is monotone.
The first layer uses the exact image of the domain: for the ℓ1 ball of radius ρ around x0,
``w·x ∈ [w·x0 - ρ ||w||_∞, w·x0 + ρ ||w||_∞]``.

Per-neuron activations ``h = α z + (1 - α) relu(z)`` (lipopt.activation): ``h``'s range is the
hull of its values at ``l, u`` and (where ``l < 0 < u``) 0, and the switch ``s = D y`` with
``D ∈ {α, 1}`` lies in the hull of ``[ly, uy]`` and ``α [ly, uy]``; an identity neuron is
ACTIVE. The ReLU text below is the case ``α = 0``.

Backward (the chain rule ``y_K = W_L^T c``, ``s_k = a_k ⊙ y_k``, ``y_{k-1} = W_k^T s_k``,
``∇f = W_1^T s_1``): the switch ``s = a·y`` with ``y ∈ [ly, uy]`` lies in ``[ly, uy]`` if the neuron
is always active, ``{0}`` if always inactive, and ``[min(ly, 0), max(uy, 0)]`` otherwise; the
transposed affine maps use the same centre/radius rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.activation import switch_range, value_range
from lipopt.bounds.cut_range import affine_range
from lipopt.domain import Domain, Intersection, L1Ball, L2Ball, Polytope
from lipopt.network import Affine, Network
from lipopt.norms import OutputNorm

FloatArray = NDArray[np.float64]

#: what starts the backward pass: a fixed output weighting c, or an output norm's dual ball
Seed = Union[ArrayLike, OutputNorm]


class NeuronState(IntEnum):
    """Whether a ReLU's input keeps one sign over the whole domain."""

    INACTIVE = 0
    ACTIVE = 1
    UNSTABLE = 2


#: plain ints of the states for hot loops (an Enum member lookup costs a Python call each time)
_ACTIVE, _INACTIVE = int(NeuronState.ACTIVE), int(NeuronState.INACTIVE)
_UNSTABLE = int(NeuronState.UNSTABLE)


def classify(
    lower: FloatArray, upper: FloatArray, alpha: FloatArray | None = None
) -> NDArray[np.int8]:
    """ACTIVE where ``l >= 0``, INACTIVE where ``u <= 0`` (checked first), else UNSTABLE; an
    identity neuron (``α = 1``, slopes ``alpha``) is ACTIVE whatever its bounds (``h = z``,
    derivative 1: exactly what ACTIVE means downstream)."""
    state = np.full(lower.shape, NeuronState.UNSTABLE, dtype=np.int8)
    state[lower >= 0] = NeuronState.ACTIVE
    state[upper <= 0] = NeuronState.INACTIVE
    if alpha is not None:
        state[alpha == 1.0] = NeuronState.ACTIVE
    return state


@dataclass(frozen=True, eq=False)
class NetworkBounds:
    """Sound bounds for one network, domain and backward seed ``c``.

    Attributes:
        pre_lower, pre_upper: per hidden layer k, bounds on the pre-activation ``z_k``.
        grad_lower, grad_upper: per hidden layer k, bounds on ``y_k``, the gradient of the
            objective w.r.t. the post-activation ``h_k`` (the switch input of
            ``s_k = a_k y_k``).
        input_grad_lower, input_grad_upper: bounds on the input gradient ``∇f = W_1^T s_1``.
        method: how they were computed.
        slopes: the network's ``α`` per hidden layer, or None for a ReLU network. A state
            then reads: ACTIVE ``h = z``, ``s = y``; INACTIVE ``h = α z``, ``s = α y``;
            UNSTABLE ``h = α z + (1 - α) relu(z)``, ``s = α y + (1 - α) a y``.
    """

    pre_lower: tuple[FloatArray, ...]
    pre_upper: tuple[FloatArray, ...]
    grad_lower: tuple[FloatArray, ...]
    grad_upper: tuple[FloatArray, ...]
    input_grad_lower: FloatArray
    input_grad_upper: FloatArray
    method: str = "interval"
    slopes: tuple[FloatArray, ...] | None = None

    @property
    def states(self) -> tuple[NDArray[np.int8], ...]:
        alphas = self.slopes or (None,) * len(self.pre_lower)
        return tuple(
            classify(lo, hi, alpha) for lo, hi, alpha in zip(self.pre_lower, self.pre_upper, alphas)
        )

    @property
    def unstable_count(self) -> int:
        return int(sum(np.count_nonzero(s == NeuronState.UNSTABLE) for s in self.states))

    def switch_bounds(self, layer: int) -> tuple[FloatArray, FloatArray]:
        """Bounds on ``s_k = D_k ⊙ y_k`` for hidden layer index ``layer`` (0-based)."""
        alpha = None if self.slopes is None else self.slopes[layer]
        return _switch(self.states[layer], self.grad_lower[layer], self.grad_upper[layer], alpha)

    def hidden_range(self, layer: int) -> tuple[FloatArray, FloatArray]:
        """Bounds on the post-activation ``h_k`` of hidden layer index ``layer`` (0-based)."""
        alpha = None if self.slopes is None else self.slopes[layer]
        return _post_range(alpha, self.pre_lower[layer], self.pre_upper[layer])


#: relative outward rounding of every computed bound (float error is far smaller)
OUTWARD = 1e-10


def widen(lower: FloatArray, upper: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Round bounds outward by ``OUTWARD·(1 + |bound|)``: floating-point sums may land a few
    ulps inside the true range, which is unsound and trips solvers' presolve; a bound that is
    a hair loose costs nothing."""
    scale = OUTWARD * (1.0 + np.maximum(np.abs(lower), np.abs(upper)))
    return lower - scale, upper + scale


def _affine_interval(
    weight: FloatArray, bias: FloatArray, lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    centre = (upper + lower) / 2.0
    radius = (upper - lower) / 2.0
    mid = weight @ centre + bias
    spread = abs(weight) @ radius  # abs() keeps a scipy sparse matrix sparse
    # widen(mid - spread, mid + spread) in fewer array operations (this is the hot loop of the
    # region search): max(|mid - spread|, |mid + spread|) = |mid| + spread
    slack = spread + OUTWARD * (1.0 + np.abs(mid) + spread)
    return mid - slack, mid + slack


def first_layer_bounds(affine: Affine, domain: Domain) -> tuple[FloatArray, FloatArray]:
    """Exact range of ``W x + b`` over the domain (box: |W| r; a ball: ρ times the dual norm
    of each row, ``||w_i||_∞`` for the ℓ1 ball, ``||w_i||_2`` for the ℓ2 ball; a polytope, or
    an ℓ1 ball ∩ one: LPs with a dual certificate, lipopt.bounds.cut_range; an ℓ2 ball ∩ a
    polytope: the LP range over the polytope met with the ball's)."""
    if isinstance(domain, (Polytope, Intersection)):
        return affine_range(affine.matrix, affine.bias, domain)
    if isinstance(domain, (L1Ball, L2Ball)):
        mid = affine.matrix @ domain.center + affine.bias
        spread = domain.radius * affine.row_norms(domain.dual_order)
        return widen(mid - spread, mid + spread)
    lower, upper = domain.bounding_box()
    return _affine_interval(affine.matrix, affine.bias, lower, upper)


def slopes_of(network: Network) -> tuple[FloatArray, ...] | None:
    """``network.slopes``, or None for a ReLU network (what :class:`NetworkBounds` keeps)."""
    return None if network.is_relu else network.slopes


def _switch(
    state: NDArray[np.int8], lower: FloatArray, upper: FloatArray, alpha: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    if alpha is not None:
        return switch_range(alpha, state, lower, upper)
    # unstable: the range widened to include 0; active: unchanged; inactive: {0}
    unstable, live = state == _UNSTABLE, state != _INACTIVE
    s_lower = np.where(live, np.minimum(lower, 0.0, where=unstable, out=lower.copy()), 0.0)
    s_upper = np.where(live, np.maximum(upper, 0.0, where=unstable, out=upper.copy()), 0.0)
    return s_lower, s_upper


def forward_interval(network: Network, domain: Domain) -> tuple[list[FloatArray], list[FloatArray]]:
    """Interval bounds on the pre-activations ``z_1 .. z_K`` of the hidden layers."""
    affines = network.affine_layers
    lowers: list[FloatArray] = []
    uppers: list[FloatArray] = []
    if len(affines) == 1:
        return lowers, uppers
    lo, hi = first_layer_bounds(affines[0], domain)
    lowers.append(lo)
    uppers.append(hi)
    for k, affine in enumerate(affines[1:-1]):
        h_lo, h_hi = hidden_range(network, k, lo, hi)
        dead = dead_outputs(network, k, hi)
        lo, hi = _affine_interval(affine.matrix, affine.bias, h_lo, h_hi)
        # a row with no negative weight or bias sums non-negative ReLU outputs: z >= 0 exactly
        # (in floating point too), not a hair below as the outward rounding would say; so the
        # pass-through neurons of a compiled max-pooling are stable, without a binary
        if np.all(h_lo >= 0.0):
            lo = np.where(_nonnegative_rows(affine), np.maximum(lo, 0.0), lo)
        lo, hi = pin_constant_rows(affine, dead, lo, hi)
        lowers.append(lo)
        uppers.append(hi)
    return lowers, uppers


def dead_outputs(network: Network, layer: int, upper: FloatArray) -> NDArray[np.bool_]:
    """The neurons of hidden layer ``layer`` (0-based) whose output is exactly 0 over the
    domain: ReLUs (``α = 0``) whose pre-activation's upper bound ``upper`` is at most 0."""
    return (upper <= 0.0) & (network.slopes[layer] == 0.0)


def pin_constant_rows(
    affine: Affine, dead: NDArray[np.bool_], lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Bounds of ``z = W h + b`` with every row whose nonzero weights all read ``dead`` inputs
    (outputs exactly 0 over the domain) set to ``[b_i, b_i]``: such a ``z_i`` is the constant
    ``b_i`` in exact arithmetic, so the bound needs no outward rounding. A compiled
    max-pooling over dead ReLUs gives such rows (``relu(a - b)``, ``a = b = 0``); rounded
    outward to ``±1e-10`` they would count as unstable, with a binary and a relaxed switch,
    though their gradient ``∇z_i`` is 0 and no pattern depends on them."""
    if not dead.any():
        return lower, upper
    reads_live = (abs(affine.matrix) @ (~dead).astype(np.float64)) > 0.0
    if reads_live.all():
        return lower, upper
    bias = affine.bias
    return np.where(reads_live, lower, bias), np.where(reads_live, upper, bias)


def hidden_range(
    network: Network, layer: int, lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The range of ``h_k = α z + (1 - α) relu(z)`` for ``z ∈ [lower, upper]`` (hidden layer
    ``layer``, 0-based): ``[relu(l), relu(u)]`` on a ReLU layer."""
    return _post_range(network.slopes[layer], lower, upper)


def _post_range(
    alpha: FloatArray | None, lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`~lipopt.activation.value_range`, or ``[relu(l), relu(u)]`` where every ``α = 0``
    (``alpha`` None or zeros)."""
    if alpha is None or not np.any(alpha):
        return np.maximum(lower, 0.0), np.maximum(upper, 0.0)
    return value_range(alpha, lower, upper)


def _nonnegative_rows(affine: Affine) -> NDArray[np.bool_]:
    """Rows of ``W h + b`` whose weights and bias are all at least 0."""
    return (affine.row_minima() >= 0.0) & (affine.bias >= 0.0)


def seed_bounds(network: Network, seed: Seed) -> tuple[FloatArray, FloatArray]:
    """Bounds on ``y_K = W_L^T w``: exact for a fixed ``c``; over the dual ball for a norm."""
    last = network.affine_layers[-1].weight
    if isinstance(seed, OutputNorm):
        return seed.seed_bounds(last)
    top = last.T @ np.asarray(seed, dtype=np.float64)
    return top, top.copy()


def backward_interval(
    network: Network,
    states: list[NDArray[np.int8]],
    top_lower: FloatArray,
    top_upper: FloatArray,
) -> tuple[list[FloatArray], list[FloatArray], FloatArray, FloatArray]:
    """Interval bounds on the backward pass given bounds on ``y_K = W_L^T w``.

    Returns per-layer bounds on ``y_k`` (first hidden layer first) and bounds on ``∇f``.
    """
    affines = network.affine_layers
    alphas = slopes_of(network) or (None,) * len(states)
    y_lo, y_hi = top_lower, top_upper
    grad_lo: list[FloatArray] = []
    grad_hi: list[FloatArray] = []
    for state, affine, alpha in zip(reversed(states), reversed(affines[:-1]), reversed(alphas)):
        grad_lo.append(y_lo)
        grad_hi.append(y_hi)
        s_lo, s_hi = _switch(state, y_lo, y_hi, alpha)
        y_lo, y_hi = _affine_interval(affine.matrix.T, np.zeros(affine.in_features), s_lo, s_hi)
    grad_lo.reverse()
    grad_hi.reverse()
    return grad_lo, grad_hi, y_lo, y_hi


def interval_bounds(network: Network, domain: Domain, seed: Seed) -> NetworkBounds:
    """Forward and backward interval bounds for the objective seeded by ``c`` or a norm."""
    return bounds_from_pre_activations(network, *forward_interval(network, domain), seed)


def bounds_from_pre_activations(
    network: Network,
    pre_lower: list[FloatArray],
    pre_upper: list[FloatArray],
    seed: Seed,
    method: str = "interval",
) -> NetworkBounds:
    """Complete forward bounds with backward interval bounds into a :class:`NetworkBounds`."""
    states = network_states(network, pre_lower, pre_upper)
    top_lo, top_hi = seed_bounds(network, seed)
    backward = backward_interval(network, states, top_lo, top_hi)
    return assembled((pre_lower, pre_upper), backward, method, slopes_of(network))


def network_states(
    network: Network, pre_lower: Sequence[FloatArray], pre_upper: Sequence[FloatArray]
) -> list[NDArray[np.int8]]:
    """:func:`classify` per hidden layer with the network's slopes."""
    alphas = slopes_of(network) or (None,) * len(pre_lower)
    return [classify(lo, hi, a) for lo, hi, a in zip(pre_lower, pre_upper, alphas, strict=True)]


def assembled(
    forward: tuple[Sequence[FloatArray], Sequence[FloatArray]],
    backward: tuple[Sequence[FloatArray], Sequence[FloatArray], FloatArray, FloatArray],
    method: str,
    slopes: tuple[FloatArray, ...] | None = None,
) -> NetworkBounds:
    """A :class:`NetworkBounds` from a forward pass's ``(lower, upper)`` per hidden layer and a
    backward pass's ``(y lower, y upper, ∇f lower, ∇f upper)``; ``slopes`` as
    :func:`slopes_of`."""
    grad_lo, grad_hi, in_lo, in_hi = backward
    return NetworkBounds(
        pre_lower=tuple(forward[0]),
        pre_upper=tuple(forward[1]),
        grad_lower=tuple(grad_lo),
        grad_upper=tuple(grad_hi),
        input_grad_lower=in_lo,
        input_grad_upper=in_hi,
        method=method,
        slopes=slopes,
    )
