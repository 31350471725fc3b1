"""Input norms and their duals.

For a scalar function the local Lipschitz constant w.r.t. the input norm ``α`` is the largest
*dual* norm of the gradient over the domain (paper Theorem 1):

    L^α(f, X) = sup_{x ∈ X} ||∇f(x)||_{α*},   ℓ∞* = ℓ1,  ℓ1* = ℓ∞,  ℓ2* = ℓ2.

The MIP's objective is linear where the dual ball is a polytope, ℓ∞ and ℓ1 (:data:`POLYHEDRAL`);
for ℓ2 it over-estimates ``||g||_2^2`` by chords refined at each solution
(:mod:`lipopt.formulation.l2`, :mod:`lipopt.strategies.l2_outer`), so a single exported model
and the forward formulation take only the polyhedral norms.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

NormT = TypeVar("NormT", bound=Enum)


def _parse(cls: type[NormT], value: object, what: str) -> NormT:
    """``cls`` member named by ``value`` (case-insensitive), or a ValueError listing the names."""
    if isinstance(value, cls):
        return value
    try:
        return cls(str(value).lower())
    except ValueError:
        names = ", ".join(str(m.value) for m in cls)
        raise ValueError(f"unknown {what} {value!r}; choose one of: {names}") from None


class InputNorm(str, Enum):
    """The norm measuring input distances ``||x - y||_α``."""

    LINF = "linf"
    L1 = "l1"
    L2 = "l2"

    @classmethod
    def parse(cls, value: str | InputNorm) -> InputNorm:
        return _parse(cls, value, "input norm")

    @classmethod
    def polyhedral(cls, value: str | InputNorm, what: str = "a single exported model") -> InputNorm:
        """:meth:`parse`, refusing ℓ2 with one line naming ``what`` needs a polytope as the dual
        ball (ℓ∞ or ℓ1): the ℓ2 model's objective is an over-estimate refined while solving."""
        norm = cls.parse(value)
        if norm not in POLYHEDRAL:
            raise ValueError(
                f"{what} takes the linf and l1 input norms; the l2 model's objective is an "
                "over-estimate that 'lipopt solve --norm l2' refines while it solves"
            )
        return norm

    @property
    def dual_order(self) -> float:
        """The order p of the dual norm ℓp applied to gradients."""
        return {InputNorm.LINF: 1.0, InputNorm.L1: float("inf"), InputNorm.L2: 2.0}[self]

    @property
    def dual_name(self) -> str:
        return {InputNorm.LINF: "l1", InputNorm.L1: "linf", InputNorm.L2: "l2"}[self]


#: the input norms whose dual ball is a polytope: what the exact MIP and region search take
POLYHEDRAL = (InputNorm.LINF, InputNorm.L1)
#: every input norm (what the sampling and ℓ2-based estimators take)
EVERY_NORM = tuple(InputNorm)


def dual_norm(gradients: ArrayLike, norm: InputNorm | str) -> np.ndarray | float:
    """Dual norm of gradient vectors along the last axis: ``||g||_1`` for ℓ∞, ``||g||_∞`` for ℓ1,
    ``||g||_2`` for ℓ2."""
    order = InputNorm.parse(norm).dual_order
    g = np.asarray(gradients, dtype=np.float64)
    out = np.linalg.norm(g, ord=order, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


class OutputNorm(str, Enum):
    """The norm β measuring output distances ``||f(x) - f(y)||_β`` (paper appendix E).

    The (α, β) constant is ``max_x max_{w ∈ B_β*} ||J(x)^T w||_{α*}`` with ``B_β*`` the dual
    ball of β: ``abs`` (one output) and ``l1`` -> ``[-1, 1]^m``; ``linf`` -> the ℓ1 ball;
    ``cross`` (Definition 22) -> the polytope E = conv({e_i} ∪ {e_i - e_j}) of Proposition 6
    (|·| in the objective makes E and its symmetric hull give the same value); ``l2`` -> the
    Euclidean unit ball, not a polytope: the model states ``Σ w_i^2 <= 1`` (SCIP), and with
    the ℓ2 input norm the constant is the largest spectral norm of the Jacobian.
    """

    ABS = "abs"
    L1 = "l1"
    LINF = "linf"
    CROSS = "cross"
    L2 = "l2"

    @classmethod
    def parse(cls, value: str | OutputNorm) -> OutputNorm:
        return _parse(cls, value, "output norm")

    def check_outputs(self, m: int) -> None:
        if self is OutputNorm.ABS and m != 1:
            raise ValueError(
                f"output norm 'abs' is for one-output networks; this one has {m} outputs "
                "(use l1, linf or cross, or give c)"
            )

    def seed_bounds(self, last_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact range of ``W_L^T w`` over the dual ball (per coordinate)."""
        w = np.asarray(last_weight, dtype=np.float64)  # (m, n)
        if self in (OutputNorm.ABS, OutputNorm.L1):  # w in [-1, 1]^m
            spread = np.abs(w).sum(axis=0)
            return -spread, spread
        if self is OutputNorm.LINF:  # w in the l1 ball: vertices ±e_i
            spread = np.abs(w).max(axis=0)
            return -spread, spread
        if self is OutputNorm.L2:  # w in the l2 ball: |W^T w|_j <= ||W[:, j]||_2
            spread = np.linalg.norm(w, axis=0)
            return -spread, spread
        # cross: vertices e_i and e_i - e_j (i != j), and 0 lies inside
        top, bottom = w.max(axis=0), w.min(axis=0)
        if w.shape[0] == 1:
            return np.minimum(bottom, 0.0), np.maximum(top, 0.0)
        return np.minimum(bottom, bottom - top), np.maximum(top, top - bottom)

    def vertices(self, m: int, max_count: int = 1 << 16) -> np.ndarray | None:
        """Vertices of the dual ball (up to sign, which the objective ignores), or None if
        there are more than ``max_count`` (or none: the ℓ2 ball)."""
        if self is OutputNorm.ABS:
            return np.ones((1, 1))
        if self is OutputNorm.L2:  # a ball: no vertices
            return None
        if self is OutputNorm.LINF:
            return np.eye(m)
        if self is OutputNorm.L1:
            if 1 << max(m - 1, 0) > max_count:
                return None
            signs = ((np.arange(1 << (m - 1))[:, None] >> np.arange(m - 1)) & 1) * -2.0 + 1.0
            return np.hstack([np.ones((signs.shape[0], 1)), signs])
        pairs = [np.eye(m)[i] - np.eye(m)[j] for i in range(m) for j in range(m) if i < j]
        return np.vstack([np.eye(m), *([np.array(pairs)] if pairs else [])])


def operator_value(
    jacobian: np.ndarray,
    input_norm: InputNorm | str,
    output_norm: OutputNorm | str,
    hint: np.ndarray | None = None,
) -> float:
    """``max_{w ∈ B_β*} ||J^T w||_{α*}`` for one Jacobian J (m, d), by the dual ball's vertices.

    ℓ1 input with ℓ1 output has the closed form ``max_j ||J[:, j]||_1``; the ℓ2 output norm has
    its own (:func:`_l2_output_value`); where the vertices are
    too many (only ℓ1 output norms on more than 17 outputs), the value at ``hint`` (e.g. the
    solver's w) is a lower bound, once pulled into the dual ball (the ℓ∞ unit ball): a solver's
    w may stand outside it by its tolerance, and its value would then exceed what is attained.
    """
    alpha = InputNorm.parse(input_norm)
    beta = OutputNorm.parse(output_norm)
    jac = np.asarray(jacobian, dtype=np.float64)
    if alpha is InputNorm.L1 and beta in (OutputNorm.L1, OutputNorm.ABS):
        return float(np.abs(jac).sum(axis=0).max())
    if beta is OutputNorm.L2:
        return _l2_output_value(jac, alpha, hint)
    verts = beta.vertices(jac.shape[0])
    if verts is None:  # ℓ1 output: its dual ball is the ℓ∞ unit ball
        if hint is None:
            return 0.0
        w = np.asarray(hint, dtype=np.float64).reshape(1, -1)
        verts = w / max(1.0, float(np.abs(w).max()))
    return float(np.max(dual_norm(verts @ jac, alpha)))


#: the ℓ2 output norm with the ℓ∞ input norm enumerates sign vectors up to this many inputs
MAX_SIGN_INPUTS = 16


def _l2_output_value(jac: np.ndarray, alpha: InputNorm, hint: np.ndarray | None) -> float:
    """``max_{||w||_2 <= 1} ||J^T w||_{α*}``: ℓ2 input, the spectral norm ``σ_max(J)``; ℓ1 input,
    ``max_j ||J[:, j]||_2``; ℓ∞ input, ``max_{s ∈ {±1}^d} ||J s||_2`` (``||J^T w||_1 =
    max_s s^T J^T w``), enumerated up to :data:`MAX_SIGN_INPUTS` inputs, beyond that the value
    at ``hint`` pulled into the ball (a lower bound; 0 without one)."""
    if alpha is InputNorm.L2:
        return float(np.linalg.norm(jac, 2)) if jac.size else 0.0
    if alpha is InputNorm.L1:
        return float(np.linalg.norm(jac, axis=0).max())
    signs = OutputNorm.L1.vertices(jac.shape[1], 1 << (MAX_SIGN_INPUTS - 1))  # up to ±
    if signs is not None:
        return float(np.linalg.norm(signs @ jac.T, axis=1).max())
    if hint is None:
        return 0.0
    w = np.asarray(hint, dtype=np.float64).reshape(-1)
    w = w / max(1.0, float(np.linalg.norm(w)))
    return float(np.abs(jac.T @ w).sum())
