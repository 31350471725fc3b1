"""HR-2: the second-order "heuristic relaxation" of Chen, Lasserre, Magron and Pauwels
(NeurIPS 2020) — SHOR's moment matrix plus small second-order blocks, an upper bound on the
local Lipschitz constant at most SHOR's (``../shared/semialgebraic.md`` §3).

Variables ``x`` (the input, in the box), ``u`` (ReLU's derivative), ``t`` (ℓ∞'s dual ball) and,
for the neurons' blocks, ``w_j`` standing for the pre-activation ``z_j = A_j x + b_j`` (``x``
and ``w`` are normalised to [−1, 1] before the relaxation is built). The relaxation
(:mod:`lipopt.estimators.moments`) has

- SHOR: the moment block on ``(1, x, u, t)`` and every constraint of
  :mod:`lipopt.estimators.semialgebraic` as a scalar moment constraint;
- per input i, on ``(x_i, t_i)``: the order-2 moment block on ``(1, x, t, x², xt, t²)`` and the
  localizing blocks on ``(1, x, t)`` of ``−(x − l)(x − h) >= 0`` and ``1 − t² >= 0``;
- per neuron j, on ``(u_j, w_j)``: the order-2 moment block, the localizing equality of
  ``u² − u = 0`` and the localizing blocks of ``(u − ½) w``, ``−(u − l_u)(u − h_u)`` and
  ``−(w − l_z)(w − h_z)``; ``w``'s moments of degree <= 2 are tied to ``x``'s by
  ``L((w − z)·q) = 0`` for ``q ∈ {1, u, w, x_i}``, its higher ones belong to the block.

Every feasible point (with ``w = z(x)``) gives a feasible moment vector, so the relaxation is
at least the constant; it keeps every SHOR constraint, so it is at most SHOR. The value is the
dual bound **proven in numpy** (:func:`~lipopt.estimators.moments.proven_bound`). Scope: one
hidden layer, the ℓ∞ input norm, boxes and ℓ∞ balls. Needs cvxpy (``pip install
'lipopt[sdp]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    EstimatorUnavailable,
    FloatArray,
    Kind,
    problem,
    stopwatch,
)
from lipopt.estimators.moments import (
    Poly,
    Relaxation,
    add,
    compile_relaxation,
    const,
    mul,
    proven_bound,
    scale,
    solve_dual,
    var,
)  # fmt: skip
from lipopt.estimators.semialgebraic import one_layer
from lipopt.network import Network
from lipopt.norms import InputNorm

NAME = "hr2"
KIND = Kind.UPPER


def _between(p: Poly, low: float, high: float) -> Poly:
    """``−(p − low)(p − high)``: non-negative exactly when ``low <= p <= high``."""
    return scale(mul(add(p, const(-low)), add(p, const(-high))), -1.0)


class _Layout:
    """Variable indices: x, then u, then t, then w."""

    def __init__(self, d: int, n: int) -> None:
        self.d, self.n = d, n

    def x(self, i: int) -> Poly:
        return var(i)

    def u(self, j: int) -> Poly:
        return var(self.d + j)

    def t(self, i: int) -> Poly:
        return var(self.d + self.n + i)

    def w(self, j: int) -> Poly:
        return var(2 * self.d + self.n + j)


def _shor_part(relax: Relaxation, at: _Layout, net: tuple, zb: tuple) -> list[Poly]:
    """SHOR's block and scalar constraints in the normalised input ``ξ ∈ [−1, 1]^d``; the
    pre-activation polynomials ``z_j(ξ)``. ``net`` is ``(A, A·diag(ρ), A m + b, c)``: the
    objective keeps the weights, the constraints see ``x = m + ρ ξ``."""
    weight, weight_xi, bias_xi, c = net
    z_lo, z_hi = zb
    d, n = at.d, at.n
    basis = [const(1.0)] + [at.x(i) for i in range(d)] + [at.u(j) for j in range(n)]
    relax.blocks.append((basis + [at.t(i) for i in range(d)], const(1.0)))
    relax.objective = add(*[scale(mul(at.t(i), at.u(j)), weight[j, i] * c[j])
                            for j in range(n) for i in range(d)])  # fmt: skip
    zs = [add(const(bias_xi[j]), *[scale(at.x(i), weight_xi[j, i]) for i in range(d)])
          for j in range(n)]  # fmt: skip
    for i in range(d):
        relax.inequalities += [_between(at.x(i), -1, 1), _between(at.t(i), -1, 1)]
    for j, z in enumerate(zs):
        u = at.u(j)
        relax.equalities.append(add(mul(u, u), scale(u, -1.0)))
        relax.inequalities += [
            mul(add(u, const(-0.5)), z), add(z, const(-z_lo[j])), add(const(z_hi[j]), scale(z, -1)),
            _between(z, z_lo[j], z_hi[j]),
            _between(u, float(z_lo[j] > 0), float(z_hi[j] > 0)),
        ]  # fmt: skip
    return zs


def _second_order(relax: Relaxation, at: _Layout, zb: tuple, zs: list[Poly]) -> None:
    """HR-2's blocks on each pair ``(ξ_i, t_i)`` and ``(u_j, ω_j)``, with
    ``w_j = z_mid + z_rad ω_j`` (ω ∈ [−1, 1]) tied to ``z_j(ξ)``."""
    z_lo, z_hi = zb
    one = const(1.0)
    for i in range(at.d):
        x, t = at.x(i), at.t(i)
        relax.blocks.append(([one, x, t, mul(x, x), mul(x, t), mul(t, t)], one))
        relax.blocks.append(([one, x, t], _between(x, -1, 1)))
        relax.blocks.append(([one, x, t], _between(t, -1, 1)))
    for j, z in enumerate(zs):
        u, omega = at.u(j), at.w(j)
        w = add(const((z_lo[j] + z_hi[j]) / 2), scale(omega, (z_hi[j] - z_lo[j]) / 2))
        tie = add(w, scale(z, -1.0))
        support = [at.x(i) for i in np.flatnonzero(z_coefficients(z, at.d))]
        relax.equalities += [mul(tie, q) for q in [one, u, omega, *support]]
        relax.blocks.append(([one, u, omega, mul(u, u), mul(u, omega), mul(omega, omega)], one))
        relax.localizing_equality([one, u, omega], add(mul(u, u), scale(u, -1.0)))
        for g in (mul(add(u, const(-0.5)), w), _between(u, float(z_lo[j] > 0), float(z_hi[j] > 0)),
                  _between(omega, -1, 1)):  # fmt: skip
            relax.blocks.append(([one, u, omega], g))


def z_coefficients(z: Poly, d: int) -> FloatArray:
    """The coefficients of ``x_0 .. x_{d-1}`` in an affine polynomial."""
    return np.array([z.get((i,), 0.0) for i in range(d)])


def relaxation(net: tuple, box: tuple, z_bounds: tuple, level: int = 2) -> Relaxation:
    """SHOR (``level=1``) or HR-2 (``level=2``) of ``cᵀ ReLU(A x + b)`` over the box, in
    normalised variables (``x = m + ρ ξ``, ``w = z_mid + z_rad ω``, every variable in
    [−1, 1]): the same relaxation (moment relaxations are invariant under affine changes of
    variables), but every monomial's bound is 1, so the proof's residual term stays as small
    as the solver's residuals (on ±10 boxes it was 0.1 in raw variables)."""
    weight, bias, c = net
    n, d = weight.shape
    lower, upper = box
    mid, radius = (lower + upper) / 2, (upper - lower) / 2
    relax = Relaxation(bounds=[1.0] * (2 * d + 2 * n))
    at = _Layout(d, n)
    zs = _shor_part(relax, at, (weight, weight * radius, weight @ mid + bias, c), z_bounds)
    if level >= 2:
        _second_order(relax, at, z_bounds, zs)
    return relax


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    solver: str | None = None,
    bounds: str = "linear",
    level: int = 2,
    **options: Any,
) -> Estimate:
    """The proven HR-2 bound (``level=1``: SHOR through the same machinery) on
    ``max ||∇(cᵀf)||_1`` over the domain; ``solver`` a cvxpy SDP solver (default Clarabel)."""
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        raise EstimatorUnavailable("HR-2 needs cvxpy: pip install 'lipopt[sdp]'") from None
    with stopwatch() as elapsed:
        net = one_layer(problem(network, domain, norm, c), "HR-2", bounds)
        relax = relaxation((net.weight, net.bias, net.w), net.box, net.z_bounds, level)
        compiled = compile_relaxation(relax)
        duals = solve_dual(compiled, solver, options)
        value, extra = proven_bound(compiled, duals)
    detail = {"solver": duals["solver"], "status": duals["status"], "value_solver": duals["value"],
              "correction": extra, "moments": len(compiled.monomials),
              "blocks": len(compiled.sides), "level": level}  # fmt: skip
    return Estimate(NAME, value, KIND, elapsed[0], detail)
