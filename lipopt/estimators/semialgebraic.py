"""The polynomial problem of Chen, Lasserre, Magron and Pauwels (NeurIPS 2020), lifted: the
quadratic forms that SHOR relaxes (``../shared/semialgebraic.md`` §1–2).

One hidden layer, ``f(x) = cᵀ ReLU(A x + b)``, the box ``l <= x <= h``; ReLU's derivative as the
variable ``u`` with ``u (u − 1) = 0`` and ``(u − ½)(A x + b) >= 0``; the ℓ∞ input norm's dual as
``t ∈ [−1, 1]^d``. Then

    max  Σ_ij A_ji c_j t_i u_j   s.t.  the constraints below               (LCEP)

is at least the local Lipschitz constant ``max ||∇(cᵀf)||_1`` over the box (at a kink ``u`` may
take either value, so LCEP can exceed it only on networks outside general position). With
``v = (1, x, u, t)`` every term is a quadratic form ``vᵀ Q v``: the objective ``vᵀ C v``, the
inequalities ``vᵀ G_k v >= 0`` and the equalities ``vᵀ H_k v = 0``:

- the box: ``−(x_i − l_i)(x_i − h_i) >= 0``;
- the derivative: ``(u_j − ½)(A_j x + b_j) >= 0`` and ``u_j² − u_j = 0``;
- the dual ball: ``1 − t_i² >= 0`` (ℓ∞ input norm), and also ``1 − Σ_i t_i² >= 0`` (ℓ2);
- redundant, valid bounds that make the relaxation local: ``z_j − l_z >= 0``, ``h_z − z_j >= 0``
  and ``−(z_j − l_z)(z_j − h_z) >= 0`` for ``z = A x + b`` with sound bounds ``[l_z, h_z]``, and
  ``−(u_j − l_u)(u_j − h_u) >= 0`` with ``l_u = 1[l_z > 0]``, ``h_u = 1[h_z > 0]`` (stable
  neurons' derivative fixed).

Every feasible point's ``v`` satisfies all of them, and ``|v|² <= 1 + Σ max(l_i², h_i²) + n + d``
(``+ 1`` instead of ``+ d`` for ℓ2)
(:attr:`Lifted.trace_bound`), which bounds what an inexact certificate may miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lipopt.bounds import propagate
from lipopt.domain import Box, LinfBall
from lipopt.estimators.base import EstimatorOutOfScope, FloatArray, Problem
from lipopt.norms import InputNorm

#: every input norm (what the relaxations let through to their own check)
ALL_NORMS = tuple(InputNorm)
#: the input norms SHOR and HR-2 take: ℓ∞ (t in the box) and ℓ2 (t in the unit ball)
SDP_NORMS = (InputNorm.LINF, InputNorm.L2)
#: LiPopt-k's: its certificate is over a box of t
LINF_ONLY = (InputNorm.LINF,)


@dataclass(frozen=True)
class Layered:
    """What the relaxations need of ``cᵀ f``: ``f(x) = w·ReLU(A_m ⋯ ReLU(A_1 x + b_1) ⋯ + b_m)
    + const`` over the box, with sound pre-activation bounds per hidden layer."""

    weights: tuple[FloatArray, ...]
    biases: tuple[FloatArray, ...]
    w: FloatArray
    box: tuple[FloatArray, FloatArray]
    z_bounds: tuple[tuple[FloatArray, FloatArray], ...]
    norm: InputNorm = InputNorm.LINF

    @property
    def depth(self) -> int:
        """The number of hidden layers."""
        return len(self.weights)


def hidden_layers(
    prob: Problem,
    method: str,
    most: int,
    bounds: str = "linear",
    norms: tuple[InputNorm, ...] = SDP_NORMS,
) -> Layered:
    """The request as :class:`Layered`, or the one-line reason why ``method`` cannot take it
    (more than ``most`` hidden layers, an input norm not in ``norms``, a domain other than a
    box or an ℓ∞ ball)."""
    network, domain = prob.network, prob.domain
    depth = len(network.affine_layers) - 1
    if depth > most:
        built = "one hidden layer" if most == 1 else f"up to {most} hidden layers"
        raise EstimatorOutOfScope(
            f"{method} is built for {built}; this network has {depth} "
            "(deeper networks are not built yet)"
        )
    if prob.norm not in norms:
        names = " and ".join(n.value for n in norms)
        raise EstimatorOutOfScope(
            f"{method} is built for the {names} input norm{'s' * (len(norms) > 1)}"
        )
    if not isinstance(domain, (Box, LinfBall)):
        raise EstimatorOutOfScope(f"{method} needs a box or an linf ball")
    box: Any = domain.as_box() if isinstance(domain, LinfBall) else domain
    *hidden, last = network.affine_layers
    found = propagate(network, domain, prob.c, method=bounds)
    return Layered(
        tuple(a.weight for a in hidden), tuple(a.bias for a in hidden), prob.c @ last.weight,
        (box.lower, box.upper), tuple(zip(found.pre_lower, found.pre_upper)), prob.norm,
    )  # fmt: skip


@dataclass(frozen=True)
class Lifted:
    """LCEP as quadratic forms in ``v = (1, x, u, t)`` (``size = 1 + d + n + d``)."""

    d: int
    n: int
    objective: FloatArray
    inequalities: tuple[FloatArray, ...]
    equalities: tuple[FloatArray, ...]
    trace_bound: float

    @property
    def size(self) -> int:
        return 1 + 2 * self.d + self.n

    def x(self, i: int) -> int:
        return 1 + i

    def u(self, j: int) -> int:
        return 1 + self.d + j

    def t(self, i: int) -> int:
        return 1 + self.d + self.n + i

    def point(self, x: FloatArray, u: FloatArray, t: FloatArray) -> FloatArray:
        """The lifted vector ``v = (1, x, u, t)`` of a point."""
        return np.concatenate([[1.0], x, u, t])


def _form(size: int, linear: dict[int, float], constant: float = 0.0) -> FloatArray:
    """The symmetric matrix of ``constant + Σ a_k v_k`` as a form in ``v`` (v_0 = 1)."""
    q = np.zeros((size, size))
    q[0, 0] = constant
    for k, a in linear.items():
        q[0, k] += a / 2
        q[k, 0] += a / 2
    return q


def _product(first: FloatArray, second: FloatArray) -> FloatArray:
    """The form of the product of two affine functions ``(p·v)(q·v)`` given as coefficient
    vectors over ``v`` (entry 0 the constant)."""
    outer = np.outer(first, second)
    return (outer + outer.T) / 2


def lift(
    weight: FloatArray,
    bias: FloatArray,
    c: FloatArray,
    box: tuple[FloatArray, FloatArray],
    z_bounds: tuple[FloatArray, FloatArray],
    norm: InputNorm = InputNorm.LINF,
) -> Lifted:
    """LCEP of ``cᵀ ReLU(weight x + bias)`` over the box, with sound pre-activation bounds;
    ``t`` in the box (ℓ∞ input norm) or also in the unit ball ``1 − Σ t_i² >= 0`` (ℓ2)."""
    n, d = weight.shape
    size = 1 + 2 * d + n
    lower, upper = box
    z_lower, z_upper = z_bounds

    def affine(constant: float, terms: dict[int, float]) -> FloatArray:
        vec = np.zeros(size)
        vec[0] = constant
        for k, a in terms.items():
            vec[k] += a
        return vec

    x_idx = 1 + np.arange(d)
    u_idx, t_idx = 1 + d + np.arange(n), 1 + d + n + np.arange(d)
    objective = np.zeros((size, size))
    for j in range(n):
        for i in range(d):
            objective[t_idx[i], u_idx[j]] += weight[j, i] * c[j] / 2
            objective[u_idx[j], t_idx[i]] += weight[j, i] * c[j] / 2
    ineq: list[FloatArray] = []
    eq: list[FloatArray] = []
    for i in range(d):
        x_i = affine(0.0, {x_idx[i]: 1.0})
        ineq.append(-_product(x_i - lower[i] * _e0(size), x_i - upper[i] * _e0(size)))
        t_i = affine(0.0, {t_idx[i]: 1.0})
        ineq.append(_form(size, {}, 1.0) - _product(t_i, t_i))
    for j in range(n):
        z_j = affine(float(bias[j]), dict(zip(x_idx, weight[j])))
        u_j = affine(0.0, {u_idx[j]: 1.0})
        ineq.append(_product(u_j - 0.5 * _e0(size), z_j))
        eq.append(_product(u_j, u_j) - _form(size, {u_idx[j]: 1.0}))
        ineq.append(_product(z_j - z_lower[j] * _e0(size), _e0(size)))
        ineq.append(_product(z_upper[j] * _e0(size) - z_j, _e0(size)))
        ineq.append(-_product(z_j - z_lower[j] * _e0(size), z_j - z_upper[j] * _e0(size)))
        l_u, h_u = float(z_lower[j] > 0), float(z_upper[j] > 0)
        ineq.append(-_product(u_j - l_u * _e0(size), u_j - h_u * _e0(size)))
    if norm is InputNorm.L2:
        t_all = np.zeros(size)
        t_all[t_idx] = 1.0
        ineq.append(_form(size, {}, 1.0) - np.diag(t_all))
    t_size = 1.0 if norm is InputNorm.L2 else d  # |t|² <= 1 in the unit ball, <= d in the box
    trace = 1.0 + float(np.sum(np.maximum(lower**2, upper**2))) + n + t_size
    return Lifted(d, n, objective, tuple(ineq), tuple(eq), trace)


def _e0(size: int) -> FloatArray:
    """The coefficient vector of the constant 1."""
    e = np.zeros(size)
    e[0] = 1.0
    return e
