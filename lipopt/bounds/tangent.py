"""Bounds on the forward-mode tangents (directional derivatives) of the hidden layers.

The forward-mode encoding (:mod:`lipopt.formulation.tangent`) writes the Lipschitz constant as

    L = max_{x ∈ X} ||∇(c^T f)(x)||_{α*} = max_{x ∈ X, ||v||_α <= 1} c^T J(x) v,

and computes ``J(x) v`` forward, layer by layer: ``t_0 = W_0 v``, ``d_k = a_k ⊙ t_k`` (the
switch of neuron ``k``'s activation ``a_k``), ``t_{k+1} = W_{k+1} d_k``, value ``c^T W_K d_{K-1}``
(no biases: a tangent is a difference). Its switches need bounds ``l <= t_k <= u``; they hold
for every direction ``v`` in the unit ball ``V`` of the input norm α (ℓ∞: the box
``[-1, 1]^d``; ℓ1: the cross-polytope) and every activation pattern the forward bounds allow.

* First layer: ``t_0 = W_0 v`` has the exact range ``±||W_0[i]||_1`` (box) or
  ``±max_j |W_0[i, j]|`` (ℓ1 ball).
* Interval step: ``d_k ∈ [min(l, 0), max(u, 0)]`` for an unstable neuron, ``[l, u]`` for an
  active one, ``{0}`` for an inactive one; then ``t_{k+1} = W_{k+1} d_k`` by interval arithmetic.
* Linear step (CROWN): each unstable switch lies between the chords of ``min(t, 0)`` and
  ``max(t, 0)`` over ``[l, u]`` (:func:`lipopt.bounds.linear.switch_relaxation`); substituting
  them back to ``v`` leaves an affine function ``Λ v + μ`` whose maximum over ``V`` is exact
  (``||Λ_i||_1`` on the box, ``max_j |Λ_ij|`` on the ℓ1 ball). The result is intersected with
  the interval step and rounded outward as the other bound passes are.

Two-piece activations ``h = α z + (1 - α) relu(z)``: the tangent switch is ``d = D t`` with
``D = 1`` (ACTIVE, every identity neuron), ``α`` (INACTIVE) or ``D ∈ {α, 1}`` (UNSTABLE), the
backward switch's rule applied forward: ``d`` lies in the hull of ``[l, u]`` and ``α [l, u]``
(:func:`lipopt.activation.switch_range`) and between the lines of
:func:`lipopt.bounds.relaxation.switch_relaxation` with the slopes. ``states`` must come from
:func:`lipopt.bounds.interval.network_states` (or :attr:`NetworkBounds.states`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.concretise import DOMAIN_RANGES, _outward, intersect
from lipopt.bounds.interval import _affine_interval, _switch, first_layer_bounds
from lipopt.bounds.linear import _relax_upper, switch_relaxation
from lipopt.bounds.relaxation import layer_slopes
from lipopt.domain import Box, Domain, L1Ball
from lipopt.network import Affine, Network
from lipopt.norms import InputNorm

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class TangentBounds:
    """Per hidden layer k, bounds ``lower[k] <= t_k <= upper[k]`` on the tangent ``J_k(x) v``
    of the pre-activation, for every x in the domain and every ``v`` in the unit ball of the
    input norm."""

    lower: tuple[FloatArray, ...]
    upper: tuple[FloatArray, ...]


def _unit_box(dim: int) -> Domain:
    return Box(-np.ones(dim), np.ones(dim))


def _unit_l1_ball(dim: int) -> Domain:
    return L1Ball(np.zeros(dim), 1.0)


#: the set of directions ``v`` of each input norm: its unit ball (ℓ2, which the forward
#: formulation does not take, gets the box around its ball)
DIRECTION_BALLS: dict[InputNorm, Callable[[int], Domain]] = {
    InputNorm.LINF: _unit_box,
    InputNorm.L1: _unit_l1_ball,
    InputNorm.L2: _unit_box,
}


def direction_ball(norm: InputNorm, dim: int) -> Domain:
    """The unit ball of the input norm, the set of directions ``v``."""
    return DIRECTION_BALLS[norm](dim)


def _linear_step(
    network: Network,
    ball: Domain,
    k: int,
    relaxations: Sequence[tuple[FloatArray, FloatArray, FloatArray, FloatArray]],
) -> tuple[FloatArray, FloatArray]:
    """Back-substituted bounds on ``t_k`` (``k >= 1``) over the direction ball."""
    affines = network.affine_layers
    bounds: list[FloatArray] = []
    for sign in (1.0, -1.0):  # upper bound of sign · t_k; the lower bound is -(upper of -t_k)
        coeffs = sign * affines[k].matrix
        shift = np.zeros(coeffs.shape[0])
        magnitude = np.zeros(coeffs.shape[0])
        for j in range(k - 1, -1, -1):
            up_slope, up_shift, low_slope, low_shift = relaxations[j]
            coeffs, extra, size = _relax_upper(coeffs, (up_slope, up_shift), (low_slope, low_shift))
            shift = shift + extra
            magnitude = magnitude + size
            coeffs = coeffs @ affines[j].matrix
        _, hi, size = DOMAIN_RANGES[type(ball)](coeffs, ball)
        bounds.append(_outward(hi + shift, magnitude + size))
    return -bounds[1], bounds[0]


#: ``refine(k, lowers, uppers, lo, hi) -> (lo, hi)``: tighter sound bounds on layer ``k``'s
#: tangent, given the bounds of layers ``< k`` (``lowers``, ``uppers``) and this layer's ``lo, hi``
Refine = Callable[
    [int, Sequence[FloatArray], Sequence[FloatArray], FloatArray, FloatArray],
    tuple[FloatArray, FloatArray],
]


def tangent_bounds(
    network: Network,
    states: Sequence[NDArray[np.int8]],
    norm: InputNorm | str,
    refine: Refine | None = None,
) -> TangentBounds:
    """Sound bounds on every hidden layer's tangent ``t_k``, first layer first.

    ``states`` are the neurons' states from the forward bounds (active, inactive, unstable).
    ``refine`` (optional) tightens each layer after the first before the next is bounded from
    it (:mod:`lipopt.search.subnets` solves sub-network MIPs there); its bounds are intersected with
    these.
    """
    affines = network.affine_layers
    ball = direction_ball(InputNorm.polyhedral(norm, "the forward formulation"), network.input_dim)
    lowers: list[FloatArray] = []
    uppers: list[FloatArray] = []
    relaxations: list[tuple[FloatArray, FloatArray, FloatArray, FloatArray]] = []
    for k in range(len(affines) - 1):
        weight = affines[k].matrix
        if k == 0:
            lo, hi = first_layer_bounds(Affine(weight, np.zeros(weight.shape[0])), ball)
        else:
            alpha = layer_slopes(network, k - 1)
            d_lo, d_hi = _switch(states[k - 1], lowers[-1], uppers[-1], alpha)
            step = _affine_interval(weight, np.zeros(weight.shape[0]), d_lo, d_hi)
            lo, hi = intersect(step, _linear_step(network, ball, k, relaxations))
            if refine is not None:
                lo, hi = intersect((lo, hi), refine(k, lowers, uppers, lo, hi))
        lowers.append(lo)
        uppers.append(hi)
        relaxations.append(switch_relaxation(states[k], lo, hi, layer_slopes(network, k)))
    return TangentBounds(tuple(lowers), tuple(uppers))


__all__ = ["Refine", "TangentBounds", "direction_ball", "tangent_bounds"]
