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
hidden layer here, two in :mod:`lipopt.estimators.two_layers`; the ℓ∞ and ℓ2 input norms (ℓ2
adds ``1 − Σ t_i² >= 0``); boxes and ℓ∞ balls. Stable neurons' derivatives are constants.
Needs cvxpy (``pip install 'lipopt[sdp]'``).
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators import two_layers
from lipopt.estimators.base import (
    Estimate,
    EstimatorUnavailable,
    Kind,
    problem,
    runs_lowered,
    stopwatch,
)
from lipopt.estimators.moments import (
    Poly,
    Relaxation,
    add,
    compile_relaxation,
    mul,
    proven_bound,
    scale,
    solve_dual,
    var,
)  # fmt: skip
from lipopt.estimators.relaxation_parts import (
    BALL_ROWS,
    ONE,
    affine,
    between,
    derivative,
    input_blocks,
    neuron_constraints,
    pre_activation_blocks,
    unstable,
    z_range,
)  # fmt: skip
from lipopt.estimators.semialgebraic import SDP_NORMS, Layered, box_note, hidden_layers
from lipopt.network import Network
from lipopt.norms import InputNorm

NAME = "hr2"
KIND = Kind.UPPER


class _Layout:
    """Variable indices: x, then u, then t, then w. A stable neuron's derivative is the
    constant 0 or 1 (:func:`derivative`); ``unstable`` lists the others."""

    def __init__(self, d: int, n: int, z_bounds: tuple) -> None:
        self.d, self.n = d, n
        low, high = z_bounds
        self.derivatives = [derivative(low[j], high[j], var(d + j)) for j in range(n)]
        self.unstable = unstable(low, high)

    def x(self, i: int) -> Poly:
        return var(i)

    def u(self, j: int) -> Poly:
        return self.derivatives[j]

    def t(self, i: int) -> Poly:
        return var(self.d + self.n + i)

    def w(self, j: int) -> Poly:
        return var(2 * self.d + self.n + j)


def _shor_part(relax: Relaxation, at: _Layout, net: tuple, zb: tuple) -> list[Poly]:
    """SHOR's block and scalar constraints in the normalised input ``ξ ∈ [−1, 1]^d``; the
    pre-activation polynomials ``z_j(ξ)``. ``net`` is ``(A, A·diag(ρ), A m + b, c)``: the
    objective keeps the weights, the constraints see ``x = m + ρ ξ``."""
    weight, weight_xi, bias_xi, c = net
    d, n = at.d, at.n
    xs, ts = [at.x(i) for i in range(d)], [at.t(i) for i in range(d)]
    relax.blocks.append(([ONE, *xs, *[at.u(j) for j in at.unstable], *ts], ONE))
    relax.objective = add(*[scale(mul(at.t(i), at.u(j)), weight[j, i] * c[j])
                            for j in range(n) for i in range(d)])  # fmt: skip
    zs = [affine(weight_xi[j], bias_xi[j], xs) for j in range(n)]
    relax.inequalities += [between(p, -1, 1) for p in [*xs, *ts]]
    for j in at.unstable:
        neuron_constraints(relax, at.u(j), zs[j], z_range(zb, j))
    return zs


def _second_order(relax: Relaxation, at: _Layout, zb: tuple, zs: list[Poly]) -> None:
    """HR-2's blocks on each pair ``(ξ_i, t_i)`` and ``(u_j, ω_j)``, with
    ``w_j = z_mid + z_rad ω_j`` (ω ∈ [−1, 1]) tied to ``z_j(ξ)``."""
    for i in range(at.d):
        input_blocks(relax, at.x(i), at.t(i))
    for j in at.unstable:
        pre_activation_blocks(relax, (at.u(j), at.w(j)), zs[j], z_bounds=z_range(zb, j))


def relaxation(
    net: tuple, box: tuple, z_bounds: tuple, level: int = 2, norm: InputNorm = InputNorm.LINF
) -> Relaxation:
    """SHOR (``level=1``) or HR-2 (``level=2``) of ``cᵀ ReLU(A x + b)`` over the box, in
    normalised variables (``x = m + ρ ξ``, ``w = z_mid + z_rad ω``, every variable in
    [−1, 1]): the same relaxation (moment relaxations are invariant under affine changes of
    variables), but every monomial's bound is 1, so the proof's residual term stays as small
    as the solver's residuals (on ±10 boxes it was 0.1 in raw variables)."""
    weight, bias, c = net
    n, d = weight.shape
    lower, upper = box
    mid, radius = (lower + upper) / 2, (upper - lower) / 2
    relax = Relaxation(bounds=[1.0] * (2 * d + 2 * n), binary=frozenset(range(d, d + n)))
    at = _Layout(d, n, z_bounds)
    zs = _shor_part(relax, at, (weight, weight * radius, weight @ mid + bias, c), z_bounds)
    relax.inequalities += BALL_ROWS[norm]([at.t(i) for i in range(d)])
    if level >= 2:
        _second_order(relax, at, z_bounds, zs)
    return relax


def layered_relaxation(net: Layered, level: int) -> Relaxation:
    """The relaxation of the right depth: one hidden layer, or two (:mod:`two_layers`)."""
    if net.depth == 1:
        one = ((net.weights[0], net.biases[0], net.w), net.box, net.z_bounds[0])
        return relaxation(*one, level=level, norm=net.norm)
    return two_layers.relaxation(net, level)


def solve_proven(relax: Relaxation, solver: str | None, options: dict[str, Any]) -> dict:
    """Compile, solve the dual SDP and prove the bound; the value and what the detail shows."""
    compiled = compile_relaxation(relax)
    duals = solve_dual(compiled, solver, options)
    value, extra = proven_bound(compiled, duals)
    return {"value": value, "solver": duals["solver"], "status": duals["status"],
            "value_solver": duals["value"], "correction": extra,
            "moments": len(compiled.monomials), "blocks": len(compiled.sides),
            "block_side": max(compiled.sides)}  # fmt: skip


@runs_lowered
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
    """The proven HR-2 bound (``level=1``: SHOR/HR-1 through the same machinery) on
    ``max ||∇(cᵀf)||_1`` over the domain, for one or two hidden layers; ``solver`` a cvxpy SDP
    solver (default Clarabel)."""
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        raise EstimatorUnavailable("HR-2 needs cvxpy: pip install 'lipopt[sdp]'") from None
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=SDP_NORMS, method="HR-2")
        net = hidden_layers(prob, "HR-2", 2, bounds)
        facts = solve_proven(layered_relaxation(net, level), solver, options)
    value = facts.pop("value")
    return Estimate(NAME, value, KIND, elapsed[0], {**facts, "level": level, **box_note(net)})
