"""Bounds over a sub-domain cut out by fixing the signs of some hidden pre-activations.

For splits ``S`` (each a neuron ``(k, i)`` and a sign) the sub-domain is

    D_S = {x ∈ D : z_{k,i}(x) >= 0 for (k, i) split active,  z_{k,i}(x) <= 0 for split inactive}.

Every ``x ∈ D`` lies in ``D_S`` for one of the two signs of any neuron, so the children of a
split cover their parent (on the common face ``z = 0`` both do), and the Lipschitz constant over
``D`` is the largest of the constants over the leaves of any split tree (the supremum runs over
the differentiable points of the interior, each of which lies in some leaf).

**Forward.** Layer by layer, as :func:`lipopt.bounds.linear.forward_linear`: layer 0 by its
exact range over ``D`` (:func:`first_layer_bounds`), layer ``k >= 1`` by :func:`linear_layer` on
the ranges of the layers below. As soon as layer ``k`` is computed, each split neuron of it is
clipped: active ``l = max(l, 0)``, inactive ``u = min(u, 0)``. Soundness, by induction on ``k``:
if ``[l_j, u_j]`` contains ``z_j(x)`` for every ``x ∈ D_S`` and ``j < k``, then the relaxation
lines of :func:`activation_relaxation` built from them hold at every ``x ∈ D_S``, so the
back-substituted affine function ``Λ x + c`` bounds ``z_k(x)`` at every ``x ∈ D_S``; its maximum
over ``D ⊇ D_S`` bounds it too (a bound over a superset). The interval step from the clipped
layer ``k - 1`` is sound on ``D_S`` by the same argument. On ``D_S`` a split active neuron has
``z >= 0``, so ``[max(l, 0), u]`` still contains ``z``; likewise ``[l, min(u, 0)]`` for an inactive
one. The later layers read the clipped ranges, so a split neuron is stable (``h = z`` or
``h = 0``) in every relaxation above it. ``reference`` bounds (a parent's, sound on a superset of
``D_S``) are intersected in at every layer: a sub-domain's bounds only shrink.

**Empty sub-domains.** The ranges are sound for every point of ``D_S``; if one of them is empty
(``l > u`` by more than :data:`EMPTY_SLACK` relative, far above the outward rounding), no point
exists: ``D_S = ∅`` and :func:`split_bounds` returns None. A crossing within the slack is closed
(``u = l``).

**Backward.** The states are classified from the clipped ranges (a split neuron is stable) and
:func:`backward_linear` bounds ``y_k`` and ``∇f`` over every activation pattern they allow; every
pattern of a differentiable point of ``D_S`` is one of them. Its reference is the interval
backward pass with the same states, intersected with the parent's backward bounds (sound: the
parent allows every pattern the child allows).

**Two-piece activations** ``h = α z + (1 - α) relu(z)``: a split is on the sign of ``z``, so a
neuron split active has ``h = z`` (``s = y``) and one split inactive ``h = α z`` (``s = α y``) on
``D_S``; :func:`linear_layer` and :func:`backward_linear` read the slopes, the states come from
:func:`network_states` (an identity neuron is ACTIVE whatever its split). The shortcut "a row with
no negative weight or bias has ``z >= 0``" needs ``h >= 0`` below, so it is taken only where the
layer below has ``h``'s range in ``[0, ∞)`` (always for ReLU).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import (
    NetworkBounds,
    Seed,
    _nonnegative_rows,
    assembled,
    backward_interval,
    first_layer_bounds,
    hidden_range,
    network_states,
    seed_bounds,
    slopes_of,
)
from lipopt.bounds.linear import backward_linear, linear_layer
from lipopt.domain import Domain
from lipopt.network import Network

FloatArray = NDArray[np.float64]

#: a hidden neuron, as (layer, index), both 0-based
Neuron = tuple[int, int]
#: the fixed signs: True for ``z >= 0`` (active), False for ``z <= 0`` (inactive)
Splits = Mapping[Neuron, bool]

#: a range counts as empty when ``l > u + EMPTY_SLACK (1 + |l| + |u|)``
EMPTY_SLACK = 1e-9


def _by_layer(splits: Splits, widths: Sequence[int]) -> list[list[tuple[int, bool]]]:
    """The splits grouped per hidden layer; a neuron outside the network raises ValueError."""
    grouped: list[list[tuple[int, bool]]] = [[] for _ in widths]
    for (layer, index), active in splits.items():
        if not (0 <= layer < len(widths) and 0 <= index < widths[layer]):
            raise ValueError(f"split neuron {(layer, index)} is not a hidden neuron")
        grouped[layer].append((index, bool(active)))
    return grouped


def _clip(
    lower: FloatArray, upper: FloatArray, layer_splits: Sequence[tuple[int, bool]]
) -> tuple[FloatArray, FloatArray] | None:
    """The range with each split neuron's sign imposed (active: ``l >= 0``, inactive: ``u <= 0``);
    None when a range is empty beyond :data:`EMPTY_SLACK` (else crossings are closed)."""
    lo, hi = lower.copy(), upper.copy()
    for index, active in layer_splits:
        if active:
            lo[index] = max(lo[index], 0.0)
        else:
            hi[index] = min(hi[index], 0.0)
    slack = EMPTY_SLACK * (1.0 + np.abs(lo) + np.abs(hi))
    if np.any(lo > hi + slack):
        return None
    return lo, np.maximum(hi, lo)


def _meet(
    first: tuple[FloatArray, FloatArray], second: tuple[FloatArray, FloatArray] | None
) -> tuple[FloatArray, FloatArray]:
    """Elementwise intersection, crossings left in place for :func:`_clip` to judge."""
    if second is None:
        return first
    return np.maximum(first[0], second[0]), np.minimum(first[1], second[1])


def split_forward(
    network: Network,
    domain: Domain,
    splits: Splits,
    reference: NetworkBounds | None = None,
    fresh_from: int = 0,
) -> tuple[list[FloatArray], list[FloatArray]] | None:
    """Sound bounds on every hidden pre-activation over ``D_S``, or None when ``D_S`` is empty
    (module docstring). Layers below ``fresh_from`` are taken from ``reference`` (clipped, not
    recomputed): a shortcut for a child whose new split lies at ``fresh_from``, whose lower
    layers see the same inputs as its parent's."""
    affines = network.affine_layers
    grouped = _by_layer(splits, network.hidden_widths)
    lowers: list[FloatArray] = []
    uppers: list[FloatArray] = []
    for k in range(len(affines) - 1):
        ref = None if reference is None else (reference.pre_lower[k], reference.pre_upper[k])
        if ref is not None and k < fresh_from:
            computed = ref
        elif k == 0:
            computed = _meet(first_layer_bounds(affines[0], domain), ref)
        else:
            computed = _meet(linear_layer(network, domain, k, lowers, uppers), ref)
            if np.all(hidden_range(network, k - 1, lowers[-1], uppers[-1])[0] >= 0.0):
                # sums of non-negative outputs with no negative weight: z >= 0
                rows = _nonnegative_rows(affines[k])
                computed = (np.where(rows, np.maximum(computed[0], 0.0), computed[0]), computed[1])
        clipped = _clip(computed[0], computed[1], grouped[k])
        if clipped is None:
            return None
        lowers.append(clipped[0])
        uppers.append(clipped[1])
    return lowers, uppers


def _backward_reference(
    network: Network, states: list[NDArray[np.int8]], seed: Seed, parent: NetworkBounds | None
) -> NetworkBounds:
    """The interval backward pass with ``states``, intersected with the parent's bounds."""
    top_lo, top_hi = seed_bounds(network, seed)
    grad_lo, grad_hi, in_lo, in_hi = backward_interval(network, states, top_lo, top_hi)
    if parent is not None:
        pairs = [
            _meet((lo, hi), (plo, phi))
            for lo, hi, plo, phi in zip(
                grad_lo, grad_hi, parent.grad_lower, parent.grad_upper, strict=True
            )
        ]
        grad_lo, grad_hi = [p[0] for p in pairs], [p[1] for p in pairs]
        in_lo, in_hi = _meet((in_lo, in_hi), (parent.input_grad_lower, parent.input_grad_upper))
    return NetworkBounds(
        pre_lower=(),
        pre_upper=(),
        grad_lower=tuple(grad_lo),
        grad_upper=tuple(np.maximum(hi, lo) for lo, hi in zip(grad_lo, grad_hi, strict=True)),
        input_grad_lower=in_lo,
        input_grad_upper=np.maximum(in_hi, in_lo),
        method="interval",
        slopes=slopes_of(network),
    )


def split_bounds(
    network: Network,
    domain: Domain,
    seed: Seed,
    splits: Splits,
    reference: NetworkBounds | None = None,
    fresh_from: int = 0,
) -> NetworkBounds | None:
    """Sound forward and backward bounds over ``D_S`` (the module docstring says why), or None
    when the splits leave ``D_S`` empty.

    ``reference``: bounds sound on a superset of ``D_S`` for the same seed (a parent node's),
    intersected in everywhere; ``fresh_from``: see :func:`split_forward`.
    """
    forward = split_forward(network, domain, splits, reference, fresh_from)
    if forward is None:
        return None
    pre_lower, pre_upper = forward
    states = network_states(network, pre_lower, pre_upper)
    ref = _backward_reference(network, states, seed, reference)
    backward = backward_linear(network, states, seed, ref, unstable_only=True)
    return assembled((pre_lower, pre_upper), backward, "linear-split", slopes_of(network))


__all__ = ["EMPTY_SLACK", "Neuron", "Splits", "split_bounds", "split_forward"]
