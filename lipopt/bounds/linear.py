"""Linear (CROWN / DeepPoly-style) bounds, forward and backward.

Notation: affine layers ``A_0 .. A_K`` (``A_k = (W_k, b_k)``), hidden layers ``k = 0 .. K-1``,

    z_0 = W_0 x + b_0,  h_k = relu(z_k),  z_{k+1} = W_{k+1} h_k + b_{k+1},  f = W_K h_{K-1} + b_K,

and the backward pass ``y_{K-1} = W_K^T w``, ``s_k = a_k ⊙ y_k``, ``y_{k-1} = W_k^T s_k`` with
``y_{-1} = ∇f`` (``w = c`` or ``w`` in the output norm's dual ball ``B``).

**Forward.** Given bounds ``l_j <= z_j <= u_j`` of the earlier layers, every ``h_j`` is sandwiched
between two linear functions of ``z_j``:

* active (``l >= 0``): ``h = z``; inactive (``u <= 0``): ``h = 0``;
* unstable (``l < 0 < u``): ``α z <= h <= λ (z - l)`` with ``λ = u / (u - l)`` (the chord of relu
  over ``[l, u]``, valid because relu is convex) and ``α ∈ {0, 1}`` (both lines lie below relu);
  CROWN's adaptive choice ``α = 1`` iff ``u >= -l`` minimises the area of the relaxation.

To bound ``z_k = Λ h_{k-1} + c`` with ``Λ = W_k, c = b_k`` from above, replace ``h_j`` by its upper
line where ``Λ`` is positive and by its lower line where ``Λ`` is negative (each term only grows),
then substitute ``h_j``'s argument ``z_j = W_j h_{j-1} + b_j`` exactly; at ``j = 0`` this leaves
an affine function ``Λ x + c`` of the input, whose maximum over the domain is exact:

* box with centre ``m`` and radius ``r``:  ``Λ m + |Λ| r + c``;
* ℓ1 ball of radius ``ρ`` around ``x0``:  ``Λ x0 + ρ max_j |Λ_ij| + c`` (a vertex ``x0 ± ρ e_j``).

The lower bound is symmetric (lower line where ``Λ`` is positive, upper line where negative, and
the minimum over the domain). The result is intersected with the interval step from the
already-tightened previous layer, so by induction every bound is at least as tight as
:func:`lipopt.bounds.interval.forward_interval`'s.

**Backward.** For a neuron with state fixed by the forward bounds the switch is exact
(``s = y`` active, ``s = 0`` inactive). For an unstable neuron the binary ``a`` is free, so
``s ∈ {0, y}`` and, for ``y ∈ [ly, uy]``,

    min(y, 0) <= s <= max(y, 0).

``max(y, 0)`` is convex, so on ``[ly, uy]`` it lies below its chord; ``min(y, 0)`` is concave, so it
lies above its chord. Hence (``ly < 0 < uy``)

    -ly/(uy - ly) · (y - uy)  <=  s  <=  uy/(uy - ly) · (y - ly),

while ``ly >= 0`` gives ``0 <= s <= y`` and ``uy <= 0`` gives ``y <= s <= 0``. These hold for every
value of the binary, in particular for every activation pattern the MIP may choose. Bounding
``y_{k-1} = W_k^T s_k`` then back-substitutes exactly as in the forward pass — relax ``s_j`` into an
affine function of ``y_j``, substitute ``y_j = W_{j+1}^T s_{j+1}`` exactly, up to
``y_{K-1} = W_K^T w`` — and ends with an affine function ``Λ w + c`` maximised exactly over the
seed set: the number ``Λ c`` for a fixed ``c``, or the support function of the dual ball
(:meth:`lipopt.norms.OutputNorm.seed_bounds`). Where the interval pass treats the switches as
independent (a sum of intervals), the back-substitution keeps their shared dependence on the
upper layers (an interval of a sum); it is again intersected with the interval step from the
tightened layer above, so it is never looser than :func:`lipopt.bounds.interval.backward_interval`.

**Two-piece activations** ``h = α z + (1 - α) relu(z)`` (:mod:`lipopt.activation`). Forward:
an unstable neuron's lines are ``α z + (1 - α) L`` and ``α z + (1 - α) U`` for the ReLU lines
``L <= relu(z) <= U`` above (swapped when ``α > 1``): for ``α <= 1`` the chord of the convex ``h``
through ``(l, α l)``, ``(u, u)`` above and ``s z``, ``s ∈ {α, 1}``, below; stable neurons are
exact, ``h = z`` (ACTIVE, which includes every identity neuron) or ``h = α z`` (INACTIVE); the
interval step reads ``h``'s exact range (:func:`lipopt.bounds.interval.hidden_range`).
Backward: ``s = D y = α y + (1 - α) a y``; with the switch lines ``L(y) <= a y <= U(y)`` above,
``α y + (1 - α) L <= s <= α y + (1 - α) U`` (swapped when ``α > 1``), i.e. the chords of
``max(y, α y)`` and ``min(y, α y)``; ``s = y`` active, ``s = α y`` inactive
(:mod:`lipopt.bounds.relaxation`). Every line holds for both values of ``a``, so the argument
above goes through unchanged. A layer with every ``α = 0`` runs the ReLU code.

**Rounding.** Each linear bound (before the intersection) is widened outward by ``1e-12`` times the
magnitude of the terms it sums plus ``1e-10 (1 + |bound|)`` (the interval pass's own outward
rounding), so that floating-point error in the back-substitution can neither make a neuron look
stable when it is not nor hand the solver a range a few ulps too tight.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.bounds.concretise import (
    DOMAIN_RANGES,
    _outward,
    _seed_range,
    intersect,
)
from lipopt.bounds.interval import (
    NetworkBounds,
    NeuronState,
    Seed,
    _affine_interval,
    _switch,
    assembled,
    backward_interval,
    dead_outputs,
    first_layer_bounds,
    forward_interval,
    hidden_range,
    interval_bounds,
    network_states,
    pin_constant_rows,
    seed_bounds,
    slopes_of,
)
from lipopt.bounds.relaxation import (
    Lines,
    _relax_upper,
    activation_relaxation,
    layer_slopes,
    relu_relaxation,
    switch_relaxation,
)
from lipopt.domain import Domain
from lipopt.network import Network, is_sparse

FloatArray = NDArray[np.float64]


# ---------------------------------------------------------------------------- forward
def substitute_to_input(
    network: Network,
    k: int,
    rows: tuple[FloatArray, FloatArray],
    relaxations: Sequence[Lines],
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(Λ, c, magnitude)`` with ``W h_{k-1} + b <= Λ x + c`` at every point whose hidden
    layers ``j < k`` lie in the ranges the ``relaxations`` were built from, for the rows
    ``(W, b)`` (of layer ``k``'s affine map, or a signed selection of them): back-substitution
    through the upper line where a coefficient is positive and the lower line where it is
    negative; ``magnitude`` sums the absolute constant terms (for the outward rounding)."""
    affines = network.affine_layers
    coeffs, shift = rows
    magnitude = np.abs(shift).copy()
    for j in range(k - 1, -1, -1):
        up_slope, up_shift, low_slope, low_shift = relaxations[j]
        coeffs, extra, size = _relax_upper(coeffs, (up_slope, up_shift), (low_slope, low_shift))
        shift = shift + extra
        magnitude = magnitude + size
        inner = affines[j]
        shift = shift + coeffs @ inner.bias
        magnitude = magnitude + abs(coeffs) @ np.abs(inner.bias)
        coeffs = coeffs @ inner.matrix  # dense @ sparse stays dense, no dense W made
    return coeffs, shift, magnitude


def _forward_layer(
    network: Network,
    domain: Domain,
    k: int,
    relaxations: Sequence[Lines],
) -> tuple[FloatArray, FloatArray]:
    """Linear bounds on ``z_k`` (hidden layer ``k >= 1``) by back-substitution to the input."""
    affine = network.affine_layers[k]
    bounds: list[FloatArray] = []
    for sign in (1.0, -1.0):  # upper bound of  sign · z_k;  the lower bound is -(upper of -z_k)
        rows = (sign * affine.matrix, sign * affine.bias)
        coeffs, shift, magnitude = substitute_to_input(network, k, rows, relaxations)
        _, hi, size = DOMAIN_RANGES[type(domain)](coeffs, domain)
        bound = hi + shift
        bounds.append(_outward(bound, magnitude + size))
    return -bounds[1], bounds[0]


def linear_layer(
    network: Network,
    domain: Domain,
    k: int,
    lowers: Sequence[FloatArray],
    uppers: Sequence[FloatArray],
) -> tuple[FloatArray, FloatArray]:
    """Bounds on ``z_k`` (hidden layer ``k >= 1``) from bounds on ``z_0 .. z_{k-1}``.

    The intersection of the back-substituted linear bound (relaxations built from
    ``lowers[:k]``, ``uppers[:k]``) and the interval step from ``[l_{k-1}, u_{k-1}]``; rows
    that read only dead ReLUs of layer ``k - 1`` are their bias exactly
    (:func:`~lipopt.bounds.interval.pin_constant_rows`).
    """
    affine = network.affine_layers[k]
    step = _affine_interval(
        affine.matrix, affine.bias, *hidden_range(network, k - 1, lowers[k - 1], uppers[k - 1])
    )
    relaxations = [
        activation_relaxation(lowers[j], uppers[j], layer_slopes(network, j)) for j in range(k)
    ]
    bounds = intersect(step, _forward_layer(network, domain, k, relaxations))
    return pin_constant_rows(affine, dead_outputs(network, k - 1, uppers[k - 1]), *bounds)


def forward_linear(
    network: Network,
    domain: Domain,
    reference: tuple[Sequence[FloatArray], Sequence[FloatArray]] | None = None,
) -> tuple[list[FloatArray], list[FloatArray]]:
    """Linear bounds on the pre-activations ``z`` of every hidden layer, first layer first.

    The first layer's range is exact (:func:`first_layer_bounds`); every later layer takes
    :func:`linear_layer` from the tightened layers before it, intersected with the
    ``reference`` bounds (by default :func:`forward_interval`'s), so that no bound is looser
    than the reference, not even by a rounding error.
    """
    affines = network.affine_layers
    lowers: list[FloatArray] = []
    uppers: list[FloatArray] = []
    if len(affines) == 1:
        return lowers, uppers
    plain = forward_interval(network, domain) if reference is None else reference
    lo, hi = first_layer_bounds(affines[0], domain)
    lowers.append(lo)
    uppers.append(hi)
    for k in range(1, len(affines) - 1):
        lo, hi = intersect(
            linear_layer(network, domain, k, lowers, uppers), (plain[0][k], plain[1][k])
        )
        lowers.append(lo)
        uppers.append(hi)
    return lowers, uppers


# ---------------------------------------------------------------------------- backward
def _backward_layer(
    network: Network,
    seed: Seed,
    k: int,
    relaxations: dict[int, Lines],
    kept: NDArray[np.bool_] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Linear bounds on ``y_{k-1} = W_k^T s_k`` (``y_{-1} = ∇f``) by back-substitution to ``w``.

    ``relaxations[j]`` holds the switch lines of hidden layer ``j`` for ``j = k .. K-1``;
    ``kept``: the entries of ``y_{k-1}`` to bound (default all); the others get ``(-inf, inf)``.
    """
    if kept is not None:
        lo, hi = np.full(kept.shape[0], -np.inf), np.full(kept.shape[0], np.inf)
        if np.any(kept):
            lo[kept], hi[kept] = _backward_rows(network, seed, k, relaxations, kept)
        return lo, hi
    return _backward_rows(network, seed, k, relaxations, None)


def _backward_rows(
    network: Network,
    seed: Seed,
    k: int,
    relaxations: dict[int, Lines],
    kept: NDArray[np.bool_] | None,
) -> tuple[FloatArray, FloatArray]:
    """:func:`_backward_layer` on the rows ``kept`` of ``W_k^T`` (all when None)."""
    affines = network.affine_layers
    top = len(affines) - 1
    rows = affines[k].matrix.T
    if kept is not None:
        rows = sparse.csr_array(rows)[kept] if is_sparse(rows) else rows[kept]
    # upper bounds of  y  (first half) and of  -y  (second half) in one pass; the lower bound is
    # -(upper bound of -y)
    both_signs = sparse.vstack if sparse.issparse(rows) else np.concatenate
    coeffs = both_signs([rows, -rows])
    shift = np.zeros(coeffs.shape[0])
    magnitude = np.zeros(coeffs.shape[0])
    for j in range(k, top):
        up_slope, up_shift, low_slope, low_shift = relaxations[j]
        coeffs, extra, size = _relax_upper(coeffs, (up_slope, up_shift), (low_slope, low_shift))
        shift = shift + extra
        magnitude = magnitude + size
        coeffs = coeffs @ affines[j + 1].matrix.T
    _, hi, size = _seed_range(coeffs, seed)
    both = _outward(hi + shift, magnitude + size)
    bounds = [both[: rows.shape[0]], both[rows.shape[0] :]]
    return -bounds[1], bounds[0]


def input_gradient_linear(
    network: Network,
    states: Sequence[NDArray[np.int8]],
    seed: Seed,
    grad_lower: Sequence[FloatArray],
    grad_upper: Sequence[FloatArray],
) -> tuple[FloatArray, FloatArray]:
    """Bounds on ``∇f = W_1^T s_1`` by one back-substitution to the seed through the switch
    chords of every hidden layer, built from given sound bounds on each ``y_k`` (e.g. the
    interval pass's) instead of re-tightening every layer as :func:`backward_linear` does:
    cheaper, and as tight for ``∇f`` when the ``y_k`` bounds are not improved on the way."""
    relaxations = {
        k: switch_relaxation(states[k], grad_lower[k], grad_upper[k], layer_slopes(network, k))
        for k in range(len(network.affine_layers) - 1)
    }
    return _backward_layer(network, seed, 0, relaxations)


def backward_linear(
    network: Network,
    states: Sequence[NDArray[np.int8]],
    seed: Seed,
    reference: NetworkBounds | None = None,
    unstable_only: bool = False,
) -> tuple[list[FloatArray], list[FloatArray], FloatArray, FloatArray]:
    """Bounds on the backward pass: per hidden layer ``y_k`` (first layer first), then ``∇f``.

    ``y_{K-1} = W_K^T w`` is exact (:func:`seed_bounds`); every lower layer intersects the
    back-substituted linear bound, the interval step from the tightened layer above and the
    ``reference`` bounds (by default :func:`backward_interval` with the same states; any sound
    bounds for the same seed will do, e.g. the interval method's own). ``unstable_only``:
    back-substitute only the ``y_k`` of unstable neurons (and all of ``∇f``), the only ones a
    switch relaxation reads (a stable neuron's switch is exact); the others keep the interval
    step's bound.
    """
    affines = network.affine_layers
    top = len(affines) - 1
    y_lo, y_hi = seed_bounds(network, seed)
    if reference is None:
        ref_lo, ref_hi, ref_in_lo, ref_in_hi = backward_interval(network, list(states), y_lo, y_hi)
    else:
        ref_lo, ref_hi = list(reference.grad_lower), list(reference.grad_upper)
        ref_in_lo, ref_in_hi = reference.input_grad_lower, reference.input_grad_upper
    plain_lo = [*ref_lo, ref_in_lo]  # index k - 1 = -1 is the input gradient
    plain_hi = [*ref_hi, ref_in_hi]
    grad_lo: list[FloatArray] = []
    grad_hi: list[FloatArray] = []
    relaxations: dict[int, Lines] = {}
    for k in range(top - 1, -1, -1):
        grad_lo.append(y_lo)
        grad_hi.append(y_hi)
        state, alpha = states[k], layer_slopes(network, k)
        relaxations[k] = switch_relaxation(state, y_lo, y_hi, alpha)
        s_lo, s_hi = _switch(state, y_lo, y_hi, alpha)
        step = _affine_interval(affines[k].matrix.T, np.zeros(affines[k].in_features), s_lo, s_hi)
        step = intersect(step, (plain_lo[k - 1], plain_hi[k - 1]))
        kept = states[k - 1] == NeuronState.UNSTABLE if unstable_only and k > 0 else None
        y_lo, y_hi = intersect(step, _backward_layer(network, seed, k, relaxations, kept))
    grad_lo.reverse()
    grad_hi.reverse()
    return grad_lo, grad_hi, y_lo, y_hi


def linear_bounds(network: Network, domain: Domain, seed: Seed) -> NetworkBounds:
    """Linear forward and backward bounds, elementwise inside :func:`interval_bounds`'s."""
    plain = interval_bounds(network, domain, seed)
    pre_lower, pre_upper = forward_linear(network, domain, (plain.pre_lower, plain.pre_upper))
    states = network_states(network, pre_lower, pre_upper)
    backward = backward_linear(network, states, seed, plain)
    return assembled((pre_lower, pre_upper), backward, "linear", slopes_of(network))


__all__ = [
    "activation_relaxation",
    "backward_linear",
    "linear_layer",
    "substitute_to_input",
    "forward_linear",
    "input_gradient_linear",
    "linear_bounds",
    "relu_relaxation",
    "switch_relaxation",
]
