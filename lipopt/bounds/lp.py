"""LP-based tightening of the pre-activation bounds (optimisation-based bound tightening, OBBT).

Hidden layer by hidden layer (``k = 1 .. K-1``; the first layer's range is already exact), every
neuron still unstable after the linear bounds gets two LPs over the relaxation ``R_k`` of the
layers before it:

    min / max  W_k[i] · h_{k-1} + b_k[i]   over  (x, h_0, .., h_{k-1}) ∈ R_k,

where ``R_k`` is: ``x`` in the domain (the box as variable bounds; the ℓ1 ball lifted with
``t >= ±(x - x0)``, ``Σ t <= ρ``; the ℓ2 ball as its bounding box, a polyhedron containing it,
so sound, while the first layer's ranges stay the exact ones over the ball; a polytope's rows
``A x <= b`` as rows), and for each earlier
neuron with ``z = W h_prev + b`` and (already tightened) bounds ``[l, u]``: ``h = z`` if active,
``h = 0`` if inactive, and the triangle ``h >= 0, h >= z, h <= u (z - l) / (u - l)`` if unstable.
``R_k`` contains every reachable ``(x, h)``, so its LP range contains the true range of ``z_k[i]``;
the triangle is the convex hull of each neuron's graph, so this is at least as tight as the linear
bounds (CROWN picks one of the two lower lines; the LP keeps both). A neuron whose ``min >= 0`` or
``max <= 0`` becomes stable (one binary fewer in the forward and one in the backward pass), and the
others get smaller big-M constants. Layer ``k``'s new bounds enter ``R_{k+1}``, and layer ``k+1``
is first re-bounded by :func:`lipopt.bounds.linear.linear_layer` from them.

**Two-piece activations** ``h = α z + (1 - α) relu(z)``: an ACTIVE neuron (``l >= 0``, or
``α = 1``) has ``h = z``, an INACTIVE one ``h = α z``; an unstable one gets the convex hull of
``h``'s graph over ``[l, u]``, for ``α <= 1`` (``h = max(z, α z)`` convex)

    h >= z,   h >= α z,   h <= λ (z - l) + α l,   λ = (u - α l) / (u - l)

(the chord through ``(l, α l)`` and ``(u, u)``), and for ``α > 1`` (concave) the same three
inequalities reversed. ``h``'s column bounds are its exact range
(:func:`lipopt.activation.value_range`). Only neurons that are UNSTABLE in this sense (never an
identity neuron) get LPs. A layer with every ``α = 0`` is built as above.

**Safe LP bounds** (Neumaier & Shcherbina 2004). The LP solver's optimal value carries its
tolerances, so it is not used as the bound. Instead, for ``min c·v`` s.t. ``r_lo <= A v <= r_hi``,
``v_lo <= v <= v_hi`` (all column bounds finite here) and *any* row multipliers ``y`` (the
solver's duals, with the sign each finite side allows), the identity
``c·v = y·(A v) + (c - A^T y)·v`` gives the valid bound

    c·v  >=  Σ_i min(y_i r_lo_i, y_i r_hi_i)  +  Σ_j min(d_j v_lo_j, d_j v_hi_j),   d = c - A^T y,

evaluated in numpy and widened by ``1e-9`` of the magnitude of its terms (plus
``1e-10 |bound|``). Any ``y`` gives a sound bound; good duals give a tight one. So a solver
failure or a stop at the time budget never makes the bounds unsound: the neuron keeps the
linear bound.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from lipopt.activation import value_range
from lipopt.bounds.concretise import intersect
from lipopt.bounds.domain_lp import DomainLP
from lipopt.bounds.interval import (
    NetworkBounds,
    NeuronState,
    Seed,
    assembled,
    classify,
    interval_bounds,
    network_states,
    slopes_of,
)
from lipopt.bounds.linear import backward_linear, forward_linear, linear_layer
from lipopt.bounds.relaxation import layer_slopes
from lipopt.domain import Domain
from lipopt.network import Network

FloatArray = NDArray[np.float64]

#: default seconds for all of the LPs of one call (the linear bounds are always computed)
TIME_BUDGET = 10.0


class NetworkRelaxation(DomainLP):
    """The LP relaxation ``R_k`` of :func:`tighten` (and of
    :func:`lipopt.bounds.split_empty.proven_empty`): the domain's LP, grown one hidden layer at
    a time."""

    def add_layer(
        self,
        previous: NDArray[np.intp],
        weight: FloatArray,
        bias: FloatArray,
        lower: FloatArray,
        upper: FloatArray,
        alpha: FloatArray | None = None,
    ) -> NDArray[np.intp]:
        """Columns ``h = relu(W v[previous] + b)`` relaxed with bounds ``[l, u]`` on the input;
        with slopes ``alpha`` (not all zero), ``h = α z + (1 - α) relu(z)``
        (:meth:`add_activation`)."""
        if alpha is not None and np.any(alpha):
            return self.add_activation(previous, (weight, bias), lower, upper, alpha)
        state = classify(lower, upper)
        h = self.add_columns(np.maximum(lower, 0.0), np.maximum(upper, 0.0))
        n = bias.size
        eye = np.eye(n)
        active = state == NeuronState.ACTIVE
        unstable = state == NeuronState.UNSTABLE
        # active: h - W v = b
        self.add_rows(h, eye[active], previous, -weight[active], bias[active], bias[active])
        # unstable: h - W v >= b  and  h - λ W v <= λ (b - l),  λ = u / (u - l)
        lam = upper[unstable] / (upper[unstable] - lower[unstable])
        b_u = bias[unstable]
        self.add_rows(h, eye[unstable], previous, -weight[unstable], b_u, np.full(b_u.size, np.inf))
        self.add_rows(
            h,
            eye[unstable],
            previous,
            -lam[:, None] * weight[unstable],
            np.full(b_u.size, -np.inf),
            lam * (b_u - lower[unstable]),
        )
        return h

    def add_activation(
        self,
        previous: NDArray[np.intp],
        affine: tuple[FloatArray, FloatArray],
        lower: FloatArray,
        upper: FloatArray,
        alpha: FloatArray,
    ) -> NDArray[np.intp]:
        """Columns ``h = α z + (1 - α) relu(z)``, ``z = W v[previous] + b ∈ [l, u]``: ``h = z``
        (ACTIVE), ``h = α z`` (INACTIVE), else the hull of the module docstring, written
        ``σ (h - c z) >= σ c b`` for ``c ∈ {1, α}`` and ``σ (h - λ z) <= σ (λ (b - l) + α l)``
        with ``σ = 1`` where ``α <= 1``, ``-1`` where ``α > 1``."""
        weight, bias = affine
        state = classify(lower, upper, alpha)
        h = self.add_columns(*value_range(alpha, lower, upper))
        eye = np.eye(bias.size)
        for fixed, slope in ((NeuronState.ACTIVE, 1.0), (NeuronState.INACTIVE, alpha)):
            rows = state == fixed  # h - c W v = c b
            c = np.broadcast_to(slope, bias.shape)[rows]
            lhs = c * bias[rows]
            self.add_rows(h, eye[rows], previous, -c[:, None] * weight[rows], lhs, lhs)
        rows = state == NeuronState.UNSTABLE
        lo, hi, a, b_u = lower[rows], upper[rows], alpha[rows], bias[rows]
        sign = np.where(a <= 1.0, 1.0, -1.0)[:, None]
        free = np.full(b_u.size, np.inf)
        for c in (np.ones_like(a), a):  # σ (h - c z) >= σ c b
            coeff = sign * (-c[:, None] * weight[rows])
            self.add_rows(h, sign * eye[rows], previous, coeff, sign[:, 0] * c * b_u, free)
        lam = (hi - a * lo) / (hi - lo)
        chord = sign[:, 0] * (lam * (b_u - lo) + a * lo)
        coeff = sign * (-lam[:, None] * weight[rows])
        self.add_rows(h, sign * eye[rows], previous, coeff, -free, chord)
        return h


def tighten(
    network: Network,
    domain: Domain,
    lowers: list[FloatArray],
    uppers: list[FloatArray],
    time_budget: float = TIME_BUDGET,
) -> tuple[list[FloatArray], list[FloatArray], dict[str, float]]:
    """OBBT of hidden layers ``1 .. K-1`` starting from sound bounds; returns tightened copies.

    Each layer is first re-bounded by :func:`linear_layer` from the tightened layers before it,
    then its unstable neurons by two LPs each (the min first; the max is skipped when the min
    already shows the neuron active, and vice versa). Stops solving LPs at ``time_budget``
    seconds; the bounds are sound at every point. Stats: ``lps``, ``stabilised``, ``seconds``.
    """
    start = time.perf_counter()
    deadline = start + time_budget
    lowers = [lo.copy() for lo in lowers]
    uppers = [hi.copy() for hi in uppers]
    stats = {"lps": 0.0, "stabilised": 0.0, "seconds": 0.0}
    affines = network.affine_layers
    if len(affines) <= 2:
        return lowers, uppers, stats
    relaxation = NetworkRelaxation(domain)
    previous = relaxation.inputs
    for k in range(1, len(affines) - 1):
        before = affines[k - 1]
        previous = relaxation.add_layer(
            previous,
            before.weight,
            before.bias,
            lowers[k - 1],
            uppers[k - 1],
            layer_slopes(network, k - 1),
        )
        lo, hi = intersect((lowers[k], uppers[k]), linear_layer(network, domain, k, lowers, uppers))
        weight, bias = affines[k].weight, affines[k].bias
        kinked = network.slopes[k] != 1.0  # an identity neuron never needs a binary
        unstable_before = int(np.count_nonzero((lo < 0) & (hi > 0) & kinked))
        for i in np.flatnonzero((lo < 0) & (hi > 0) & kinked):
            cost = np.zeros(relaxation.n_cols)
            cost[previous] = weight[i]
            low = relaxation.minimum(cost, deadline)
            if low is not None:
                stats["lps"] += 1
                lo[i] = max(lo[i], low + bias[i])
            if lo[i] >= 0:
                continue
            high = relaxation.minimum(-cost, deadline)
            if high is not None:
                stats["lps"] += 1
                hi[i] = min(hi[i], -high + bias[i])
            if time.perf_counter() >= deadline:
                break
        hi = np.maximum(hi, lo)
        lowers[k], uppers[k] = lo, hi
        stats["stabilised"] += unstable_before - int(np.count_nonzero((lo < 0) & (hi > 0) & kinked))
    stats["seconds"] = time.perf_counter() - start
    return lowers, uppers, stats


def lp_bounds(
    network: Network, domain: Domain, seed: Seed, time_budget: float = TIME_BUDGET
) -> NetworkBounds:
    """Linear bounds, then OBBT of the pre-activations, then linear backward bounds.

    Elementwise inside :func:`lipopt.bounds.linear.linear_bounds`' forward bounds and inside
    :func:`interval_bounds`' everywhere.
    """
    plain = interval_bounds(network, domain, seed)
    lowers, uppers = forward_linear(network, domain, (plain.pre_lower, plain.pre_upper))
    lowers, uppers, _ = tighten(network, domain, lowers, uppers, time_budget)
    states = network_states(network, lowers, uppers)
    backward = backward_linear(network, states, seed, plain)
    return assembled((lowers, uppers), backward, "lp", slopes_of(network))


__all__ = ["TIME_BUDGET", "NetworkRelaxation", "lp_bounds", "tighten"]
