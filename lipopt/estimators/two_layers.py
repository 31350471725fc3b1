"""HR-1 (SHOR) and HR-2 for two hidden layers (the seed's appendix, ``../shared/semialgebraic.md``
§1 and §3), as moment relaxations with a proven bound.

``f(x) = wᵀ ReLU(A₂ ReLU(A₁ x + b₁) + b₂)`` over the box. Variables, all normalised: the input
``ξ`` (``x = m + ρ ξ``), ReLU's derivatives ``u₁, u₂``, the hidden output ``η`` (``x₁ = m₁ +
ρ₁ η`` on its sound range ``[max(0, l_z₁), max(0, h_z₁)]``), ``t`` (the ℓ∞ dual ball) and, for
HR-2, stand-ins ``ω₁, ω₂`` of the pre-activations. The problem is

    max  Σ_k w_k Σ_j A₂_kj Σ_i A₁_ji t_i u₁_j u₂_k                          (degree 3)

subject to each layer's derivative constraints, the hidden outputs' ``x₁ (x₁ − z₁) = 0``,
``x₁ >= 0``, ``x₁ >= z₁`` and the valid ``x₁ = u₁ z₁``, and the boxes of ξ and t.

- **HR-1** (what ``shor`` computes for two layers): the moment block on
  ``(1, ξ, u₁, η, u₂, t)`` with every constraint as a scalar moment constraint, and for each
  second-layer neuron k the lifted block on ``(1, t, u₂_k·u₁)``, whose entries
  ``L(t_i u₁_j u₂_k)`` carry the cubic objective; its diagonal ``L((u₁_j u₂_k)²)`` equals
  ``L(u₁_j u₂_k)`` (both u are 0 or 1), which keeps the block bounded.
- **HR-2** adds the order-2 blocks on ``(ξ_i, t_i)``, ``(η_j, ω₁_j)``, ``(u₁_j, ω₁_j)`` and
  ``(u₂_k, ω₂_k)`` with their localizing blocks (:mod:`lipopt.estimators.relaxation_parts`).

The moments of any feasible point are feasible, so either value is at least the exact constant;
HR-2 keeps HR-1's constraints, so it is at most HR-1.
"""

from __future__ import annotations

import numpy as np

from lipopt.estimators.base import FloatArray
from lipopt.estimators.moments import Poly, Relaxation, add, const, mul, scale, var
from lipopt.estimators.relaxation_parts import (
    BALL_ROWS,
    ONE,
    affine,
    between,
    derivative,
    input_blocks,
    neuron_constraints,
    output_blocks,
    pre_activation_blocks,
    unstable,
    z_range,
)  # fmt: skip
from lipopt.estimators.semialgebraic import Layered


class Layout:
    """Variable indices in order: ξ (d), u₁ (n₁), η (n₁), u₂ (n₂), t (d), ω₁ (n₁), ω₂ (n₂)."""

    def __init__(self, d: int, n1: int, n2: int) -> None:
        self.d, self.n1, self.n2 = d, n1, n2
        sizes = [d, n1, n1, n2, d, n1, n2]
        self.starts = np.concatenate([[0], np.cumsum(sizes)])

    @property
    def count(self) -> int:
        return int(self.starts[-1])

    def _group(self, which: int, size: int) -> list[Poly]:
        return [var(int(self.starts[which]) + i) for i in range(size)]

    def xi(self) -> list[Poly]:
        return self._group(0, self.d)

    def u1(self) -> list[Poly]:
        return self._group(1, self.n1)

    def eta(self) -> list[Poly]:
        return self._group(2, self.n1)

    def u2(self) -> list[Poly]:
        return self._group(3, self.n2)

    def t(self) -> list[Poly]:
        return self._group(4, self.d)

    def omega1(self) -> list[Poly]:
        return self._group(5, self.n1)

    def omega2(self) -> list[Poly]:
        return self._group(6, self.n2)


class Affines:
    """The network's maps in the normalised variables: ``z₁(ξ)``, ``u₁``, ``x₁``, ``z₂``,
    ``u₂``. A stable neuron's derivative is a constant and its output is ``z₁`` or 0, so only
    unstable neurons bring variables (which keeps the SDP away from degenerate faces)."""

    def __init__(self, net: Layered, at: Layout) -> None:
        (a1, a2), (b1, b2) = net.weights, net.biases
        lower, upper = net.box
        mid, rad = (lower + upper) / 2, (upper - lower) / 2
        (z1_lo, z1_hi), (z2_lo, z2_hi) = net.z_bounds
        x1_lo, x1_hi = np.maximum(z1_lo, 0.0), np.maximum(z1_hi, 0.0)
        mid1, rad1 = (x1_lo + x1_hi) / 2, (x1_hi - x1_lo) / 2
        self.z1 = [affine(a1[j] * rad, a1[j] @ mid + b1[j], at.xi()) for j in range(at.n1)]
        self.u1 = [derivative(z1_lo[j], z1_hi[j], u) for j, u in enumerate(at.u1())]
        self.x1 = [
            self.z1[j] if z1_lo[j] > 0 else const(0.0) if z1_hi[j] < 0
            else add(const(mid1[j]), scale(eta, rad1[j]))
            for j, eta in enumerate(at.eta())
        ]  # fmt: skip
        self.z2 = [affine(a2[k], b2[k], self.x1) for k in range(at.n2)]
        self.u2 = [derivative(z2_lo[k], z2_hi[k], u) for k, u in enumerate(at.u2())]
        self.unstable1 = unstable(z1_lo, z1_hi)
        self.unstable2 = unstable(z2_lo, z2_hi)


def _objective(net: Layered, at: Layout, maps: Affines) -> tuple[Poly, list[list[int]]]:
    """The cubic objective (degree 3 where both derivatives vary, lower where one is a
    constant), and per unstable second-layer neuron k the unstable first-layer neurons j whose
    products ``u₂_k u₁_j`` it needs (``w_k A₂_kj ≠ 0``)."""
    (a1, a2), w = net.weights, net.w
    t = at.t()
    terms: list[Poly] = []
    for k in range(at.n2):
        for j in np.flatnonzero(w[k] * a2[k]):
            path = mul(maps.u1[j], maps.u2[k])
            for i in np.flatnonzero(a1[j]):
                terms.append(scale(mul(t[i], path), float(w[k] * a2[k, j] * a1[j, i])))
    carried = [[j for j in maps.unstable1 if w[k] * a2[k, j] != 0.0 and np.any(a1[j])]
               if k in maps.unstable2 else [] for k in range(at.n2)]  # fmt: skip
    return add(*terms), carried


def _first_order(relax: Relaxation, net: Layered, at: Layout, maps: Affines) -> None:
    """HR-1: the moment block, every constraint as a scalar one, and the lifted blocks."""
    xi, eta, t = at.xi(), at.eta(), at.t()
    u1 = [maps.u1[j] for j in maps.unstable1]
    u2 = [maps.u2[k] for k in maps.unstable2]
    etas = [eta[j] for j in maps.unstable1]
    relax.blocks.append(([ONE, *xi, *u1, *etas, *u2, *t], ONE))
    relax.objective, carried = _objective(net, at, maps)
    relax.inequalities += [between(p, -1, 1) for p in [*xi, *t, *etas]]
    relax.inequalities += BALL_ROWS[net.norm](t)
    for j in maps.unstable1:
        z, x = maps.z1[j], maps.x1[j]
        neuron_constraints(relax, maps.u1[j], z, z_range(net.z_bounds[0], j))
        relax.equalities += [
            mul(x, add(x, scale(z, -1.0))),
            add(x, scale(mul(maps.u1[j], z), -1.0)),
        ]
        relax.inequalities += [x, add(x, scale(z, -1.0))]
    for k in maps.unstable2:
        neuron_constraints(relax, maps.u2[k], maps.z2[k], z_range(net.z_bounds[1], k))
    for k, js in enumerate(carried):
        if js:
            relax.blocks.append(([ONE, *t, *[mul(maps.u2[k], maps.u1[j]) for j in js]], ONE))


def _second_order(relax: Relaxation, net: Layered, at: Layout, maps: Affines) -> None:
    """HR-2's small blocks on the pairs ``(ξ_i, t_i)``, and for unstable neurons
    ``(η_j, ω₁_j)``, ``(u₁_j, ω₁_j)`` and ``(u₂_k, ω₂_k)``, with the stand-ins tied to the
    pre-activations they stand for."""
    xi, eta, t = at.xi(), at.eta(), at.t()
    omega1, omega2 = at.omega1(), at.omega2()
    for i in range(at.d):
        input_blocks(relax, xi[i], t[i])
    for j in maps.unstable1:
        w = pre_activation_blocks(
            relax,
            (maps.u1[j], omega1[j]),
            maps.z1[j],
            z_bounds=z_range(net.z_bounds[0], j),
            also=[eta[j]],
        )
        output_blocks(relax, eta[j], omega1[j], maps.x1[j], w)
    for k in maps.unstable2:
        pre_activation_blocks(relax, (maps.u2[k], omega2[k]), maps.z2[k],
                              z_bounds=z_range(net.z_bounds[1], k))  # fmt: skip


def relaxation(net: Layered, level: int = 2) -> Relaxation:
    """HR-1 (``level=1``) or HR-2 (``level=2``) of a two-hidden-layer ``cᵀ f`` over the box."""
    d = net.weights[0].shape[1]
    at = Layout(d, net.weights[0].shape[0], net.weights[1].shape[0])
    binary = frozenset(m[0] for p in [*at.u1(), *at.u2()] for m in p)
    relax = Relaxation(bounds=[1.0] * at.count, binary=binary)
    maps = Affines(net, at)
    _first_order(relax, net, at, maps)
    if level >= 2:
        _second_order(relax, net, at, maps)
    return relax


def lifted_point(net: Layered, x: FloatArray, t: FloatArray) -> FloatArray:
    """The values of every variable of :class:`Layout` at the input ``x`` with dual ``t`` (for
    checking the constraint builder: a feasible point's moments satisfy every constraint)."""
    (a1, a2), (b1, b2) = net.weights, net.biases
    lower, upper = net.box
    z1 = a1 @ x + b1
    x1 = np.maximum(z1, 0.0)
    z2 = a2 @ x1 + b2
    z1_lo, z1_hi = net.z_bounds[0]
    x1_lo, x1_hi = np.maximum(z1_lo, 0.0), np.maximum(z1_hi, 0.0)

    def unit(value: FloatArray, low: FloatArray, high: FloatArray) -> FloatArray:
        rad = (high - low) / 2
        return np.divide(value - (low + high) / 2, rad, out=np.zeros_like(value), where=rad > 0)

    (l2, h2) = net.z_bounds[1]
    return np.concatenate([
        unit(x, lower, upper), (z1 > 0).astype(float), unit(x1, x1_lo, x1_hi),
        (z2 > 0).astype(float), t, unit(z1, z1_lo, z1_hi), unit(z2, l2, h2),
    ])  # fmt: skip
