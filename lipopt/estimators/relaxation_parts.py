"""The pieces both moment relaxations (HR-1/SHOR and HR-2, one or two hidden layers) are made
of, in normalised variables (``../shared/semialgebraic.md`` §1–3).

Every variable lives in [−1, 1] (inputs ``ξ``, hidden outputs ``η``, the pre-activations'
stand-ins ``ω``, the dual variable ``t``) or [0, 1] (ReLU's derivative ``u``), so every
monomial's bound in the proof of :func:`~lipopt.estimators.moments.proven_bound` is 1. An
affine quantity such as the pre-activation ``z_j`` is a polynomial of degree 1 in them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lipopt.estimators.base import FloatArray
from lipopt.estimators.moments import Poly, Relaxation, add, const, mul, scale, var
from lipopt.norms import InputNorm

ONE = const(1.0)


def between(p: Poly, low: float, high: float) -> Poly:
    """``−(p − low)(p − high)``: non-negative exactly when ``low <= p <= high``."""
    return scale(mul(add(p, const(-low)), add(p, const(-high))), -1.0)


def derivative(low: float, high: float, variable: Poly) -> Poly:
    """ReLU's derivative on a neuron with pre-activation bounds ``[l, h]``: the constant 1 or 0
    where it is stable (``l > 0`` or ``h < 0``), else the variable. Exact on the feasible set,
    and it keeps the SDP off the degenerate face where a pinned variable would sit."""
    if low > 0:
        return ONE
    return const(0.0) if high < 0 else variable


def unstable(low: FloatArray, high: FloatArray) -> list[int]:
    """The neurons that may cross their kink (``l <= 0 <= h``): the ones :func:`derivative`
    leaves a variable."""
    return [j for j in range(len(low)) if low[j] <= 0 <= high[j]]


def z_range(z_bounds: tuple[FloatArray, FloatArray], neuron: int) -> tuple[float, float]:
    """The sound bounds ``(l, h)`` on one pre-activation."""
    low, high = z_bounds
    return float(low[neuron]), float(high[neuron])


def support(z: Poly) -> list[Poly]:
    """The variables an affine polynomial depends on."""
    return [var(m[0]) for m in z if len(m) == 1]


def unit_ball(ts: Sequence[Poly]) -> Poly:
    """``1 − Σ_i t_i²``: non-negative exactly in the ℓ2 unit ball (the ℓ2 input norm's dual)."""
    return add(ONE, *[scale(mul(t, t), -1.0) for t in ts])


def _no_rows(ts: Sequence[Poly]) -> list[Poly]:
    return []


def _ball_row(ts: Sequence[Poly]) -> list[Poly]:
    return [unit_ball(ts)]


#: beyond ``t ∈ [−1, 1]^d``, the rows keeping the dual variable ``t`` in the unit ball of each
#: input norm the relaxations take (``max_t t·g`` over that ball is ``||g||_{α*}``)
BALL_ROWS: dict[InputNorm, Callable[[Sequence[Poly]], list[Poly]]] = {
    InputNorm.LINF: _no_rows,
    InputNorm.L2: _ball_row,
}


def affine(weight_row: FloatArray, bias: float, inputs: Sequence[Poly]) -> Poly:
    """``bias + Σ_i weight_row[i] · inputs[i]`` (zero weights left out)."""
    terms = [scale(p, float(a)) for a, p in zip(weight_row, inputs) if a != 0.0]
    return add(const(float(bias)), *terms)


def neuron_constraints(relax: Relaxation, u: Poly, z: Poly, z_range: tuple[float, float]) -> None:
    """ReLU's derivative ``u`` of the pre-activation ``z`` with sound bounds ``[l, h]``, as
    scalar moment constraints: ``u² − u = 0``, ``(u − ½) z >= 0``, ``l <= z <= h`` (linear and
    as the product ``−(z − l)(z − h) >= 0``) and ``u`` fixed where the neuron is stable
    (``−(u − 1[l > 0])(u − 1[h > 0]) >= 0``)."""
    low, high = z_range
    relax.equalities.append(add(mul(u, u), scale(u, -1.0)))
    relax.inequalities += [
        mul(add(u, const(-0.5)), z), add(z, const(-low)), add(const(high), scale(z, -1.0)),
        between(z, low, high), between(u, float(low > 0), float(high > 0)),
    ]  # fmt: skip


def stand_in(z_range: tuple[float, float], omega: Poly) -> Poly:
    """``w = mid + rad·ω``: the variable ``ω ∈ [−1, 1]`` standing for a pre-activation with
    bounds ``[l, h]``."""
    low, high = z_range
    return add(const((low + high) / 2), scale(omega, (high - low) / 2))


def tie(relax: Relaxation, w: Poly, z: Poly, against: Sequence[Poly]) -> None:
    """``L((w − z)·q) = 0`` for ``q`` in ``against``: the stand-in's moments of degree <= 2
    equal those of the polynomial it stands for."""
    gap = add(w, scale(z, -1.0))
    relax.equalities += [mul(gap, q) for q in against]


def order_two_block(relax: Relaxation, a: Poly, b: Poly) -> list[Poly]:
    """The order-2 moment block on the pair ``(a, b)`` (basis ``1, a, b, a², ab, b²``); the
    order-1 basis ``(1, a, b)`` for its localizing blocks."""
    relax.blocks.append(([ONE, a, b, mul(a, a), mul(a, b), mul(b, b)], ONE))
    return [ONE, a, b]


def input_blocks(relax: Relaxation, xi: Poly, t: Poly) -> None:
    """HR-2's blocks on an input and its dual variable: the order-2 moment block and the
    localizing blocks of ``ξ ∈ [−1, 1]`` and ``t ∈ [−1, 1]``."""
    basis = order_two_block(relax, xi, t)
    relax.blocks.append((basis, between(xi, -1, 1)))
    relax.blocks.append((basis, between(t, -1, 1)))


def neuron_blocks(relax: Relaxation, u: Poly, omega: Poly, w: Poly, z_range: tuple) -> None:
    """HR-2's blocks on a neuron's ``(u, ω)``: the order-2 moment block, the localizing
    equality of ``u² − u = 0`` and the localizing blocks of ``(u − ½) w``, the fixed ``u`` of a
    stable neuron and ``ω ∈ [−1, 1]``."""
    low, high = z_range
    basis = order_two_block(relax, u, omega)
    relax.localizing_equality(basis, add(mul(u, u), scale(u, -1.0)))
    for g in (mul(add(u, const(-0.5)), w), between(u, float(low > 0), float(high > 0)),
              between(omega, -1, 1)):  # fmt: skip
        relax.blocks.append((basis, g))


def pre_activation_blocks(
    relax: Relaxation,
    pair: tuple[Poly, Poly],
    z: Poly,
    *,
    z_bounds: tuple[float, float],
    also: Sequence[Poly] = (),
) -> Poly:
    """HR-2's treatment of an unstable neuron's pre-activation ``z`` with derivative ``u``
    (``pair = (u, ω)``): the stand-in ``w`` of ``ω``, tied to ``z`` against
    ``1, u, ω``, the variables of ``z`` and ``also``, and the blocks of
    :func:`neuron_blocks`; the stand-in ``w``."""
    u, omega = pair
    w = stand_in(z_bounds, omega)
    tie(relax, w, z, [ONE, u, omega, *also, *support(z)])
    neuron_blocks(relax, u, omega, w, z_bounds)
    return w


def output_blocks(relax: Relaxation, eta: Poly, omega: Poly, x: Poly, w: Poly) -> None:
    """HR-2's blocks on a hidden output ``x = ReLU(z)`` (normalised ``η``) and its
    pre-activation's stand-in ``w`` (normalised ``ω``): the order-2 moment block, the
    localizing equality of ``x (x − w) = 0`` and the localizing blocks of ``x >= 0``,
    ``x − w >= 0``, ``η ∈ [−1, 1]`` and ``ω ∈ [−1, 1]``."""
    basis = order_two_block(relax, eta, omega)
    relax.localizing_equality(basis, mul(x, add(x, scale(w, -1.0))))
    for g in (x, add(x, scale(w, -1.0)), between(eta, -1, 1), between(omega, -1, 1)):
        relax.blocks.append((basis, g))
