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

from collections.abc import Callable
from dataclasses import dataclass
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
    """The norm measuring input distances ``||x - y||_α``; each member's facts (its dual,
    whether its ball is a polytope, its factor against ℓ2) are its row of :data:`INPUT_FACTS`."""

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
        if not norm.is_polyhedral:
            names = " and ".join(n.value for n in POLYHEDRAL)
            raise ValueError(
                f"{what} takes the {names} input norms; the l2 model's objective is an "
                "over-estimate that 'lipopt solve --norm l2' refines while it solves"
            )
        return norm

    @classmethod
    def choices(cls, polyhedral: bool = False) -> list[str]:
        """The names a command line offers: every member, or only the polyhedral ones."""
        return [n.value for n in cls if n.is_polyhedral or not polyhedral]

    @property
    def order(self) -> float:
        """The order p of this norm, ℓp."""
        return INPUT_FACTS[self].order

    @property
    def dual(self) -> InputNorm:
        """The dual norm, the one the constant measures gradients in (ℓ∞ <-> ℓ1, ℓ2 <-> ℓ2)."""
        return INPUT_FACTS[self].dual

    @property
    def dual_order(self) -> float:
        """The order p of the dual norm ℓp applied to gradients."""
        return self.dual.order

    @property
    def dual_name(self) -> str:
        return self.dual.value

    @property
    def is_polyhedral(self) -> bool:
        """The unit balls of this norm and its dual are polytopes: the MIP's objective is
        linear (ℓ∞, ℓ1); ℓ2's is an over-estimate of ``||g||_2^2``."""
        return INPUT_FACTS[self].polyhedral

    @property
    def decomposes(self) -> bool:
        """The dual norm is ℓ∞, the largest of ``±g_j``: the objective splits into candidates
        (:func:`lipopt.formulation.objective.linf_candidates`)."""
        return self.dual is InputNorm.LINF

    @property
    def objective(self) -> str:
        """What the constant maximises, as the summary writes it: ``max ||grad||_1`` for ℓ∞."""
        return f"max ||grad||_{INPUT_FACTS[self.dual].subscript}"

    @property
    def label(self) -> str:
        """The norm and its objective: ``linf (max ||grad||_1)``."""
        return f"{self.value} ({self.objective})"

    def dual_norm(self, gradients: ArrayLike) -> np.ndarray:
        """``||g||_{α*}`` of gradient vectors along the last axis."""
        return np.linalg.norm(np.asarray(gradients, dtype=np.float64), ord=self.dual_order, axis=-1)

    def l2_factor(self, dim: int) -> float:
        """``max ||v||_α`` over the unit ℓ2 ball of R^dim: ``||v||_α <= factor · ||v||_2``
        (ℓ1: ``sqrt(dim)`` by Cauchy-Schwarz; ℓ∞ and ℓ2: 1). The factor from an ℓ2 Lipschitz
        bound to the α constant is the dual's, ``α.dual.l2_factor(dim)``."""
        return INPUT_FACTS[self].l2_factor(dim)


def _one(dim: int) -> float:
    return 1.0


def _root(dim: int) -> float:
    return float(np.sqrt(dim))


@dataclass(frozen=True)
class InputNormFacts:
    """What the code asks of an input norm: its order p (ℓp), its dual, whether its balls are
    polytopes, the subscript the summary writes for it, and its factor against ℓ2."""

    order: float
    dual: InputNorm
    polyhedral: bool
    subscript: str
    l2_factor: Callable[[int], float]


#: the facts of each input norm: one row per member
INPUT_FACTS: dict[InputNorm, InputNormFacts] = {
    InputNorm.LINF: InputNormFacts(float("inf"), InputNorm.L1, True, "inf", _one),
    InputNorm.L1: InputNormFacts(1.0, InputNorm.LINF, True, "1", _root),
    InputNorm.L2: InputNormFacts(2.0, InputNorm.L2, False, "2", _one),
}

#: the input norms whose dual ball is a polytope: what the exact MIP and region search take
POLYHEDRAL = tuple(n for n in InputNorm if n.is_polyhedral)
#: every input norm (what the sampling and ℓ2-based estimators take)
EVERY_NORM = tuple(InputNorm)


def dual_norm(gradients: ArrayLike, norm: InputNorm | str) -> np.ndarray | float:
    """Dual norm of gradient vectors along the last axis: ``||g||_1`` for ℓ∞, ``||g||_∞`` for ℓ1,
    ``||g||_2`` for ℓ2."""
    out = InputNorm.parse(norm).dual_norm(gradients)
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

    @classmethod
    def choices(cls, polyhedral: bool = False) -> list[str]:
        """The names a command line offers: every member, or only the polyhedral ones."""
        return [n.value for n in cls if n.is_polyhedral or not polyhedral]

    @property
    def is_polyhedral(self) -> bool:
        """The dual ball is a polytope (every output norm but ℓ2, whose ball is a quadratic
        row, or its bounding box in the LP relaxation)."""
        return OUTPUT_FACTS[self].polyhedral

    def check_outputs(self, m: int) -> None:
        if self is OutputNorm.ABS and m != 1:
            raise ValueError(
                f"output norm 'abs' is for one-output networks; this one has {m} outputs "
                "(use l1, linf or cross, or give c)"
            )

    def seed_bounds(self, last_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact range of ``W_L^T w`` over the dual ball (per coordinate)."""
        return OUTPUT_FACTS[self].spread(np.asarray(last_weight, dtype=np.float64))  # (m, n)

    def vertices(self, m: int, max_count: int = 1 << 16) -> np.ndarray | None:
        """Vertices of the dual ball (up to sign, which the objective ignores), or None if
        there are more than ``max_count`` (or none: the ℓ2 ball)."""
        return OUTPUT_FACTS[self].vertices(m, max_count)


Spread = tuple[np.ndarray, np.ndarray]


def _box_spread(w: np.ndarray) -> Spread:
    """w in [-1, 1]^m."""
    spread = np.abs(w).sum(axis=0)
    return -spread, spread


def _l1_spread(w: np.ndarray) -> Spread:
    """w in the ℓ1 ball: vertices ±e_i."""
    spread = np.abs(w).max(axis=0)
    return -spread, spread


def _l2_spread(w: np.ndarray) -> Spread:
    """w in the ℓ2 ball: ``|W^T w|_j <= ||W[:, j]||_2``."""
    spread = np.linalg.norm(w, axis=0)
    return -spread, spread


def _cross_spread(w: np.ndarray) -> Spread:
    """Vertices e_i and e_i - e_j (i != j), and 0 lies inside."""
    top, bottom = w.max(axis=0), w.min(axis=0)
    if w.shape[0] == 1:
        return np.minimum(bottom, 0.0), np.maximum(top, 0.0)
    return np.minimum(bottom, bottom - top), np.maximum(top, top - bottom)


def _one_vertex(m: int, max_count: int) -> np.ndarray | None:
    return np.ones((1, 1))


def _no_vertices(m: int, max_count: int) -> np.ndarray | None:
    return None  # a ball: no vertices


def _unit_vectors(m: int, max_count: int) -> np.ndarray | None:
    return np.eye(m)


def _sign_vectors(m: int, max_count: int) -> np.ndarray | None:
    """The sign vectors of {±1}^m up to sign (first entry +1), None beyond ``max_count``."""
    if 1 << max(m - 1, 0) > max_count:
        return None
    signs = ((np.arange(1 << (m - 1))[:, None] >> np.arange(m - 1)) & 1) * -2.0 + 1.0
    return np.hstack([np.ones((signs.shape[0], 1)), signs])


def _cross_vertices(m: int, max_count: int) -> np.ndarray | None:
    pairs = [np.eye(m)[i] - np.eye(m)[j] for i in range(m) for j in range(m) if i < j]
    return np.vstack([np.eye(m), *([np.array(pairs)] if pairs else [])])


@dataclass(frozen=True)
class OutputNormFacts:
    """What the code asks of an output norm: whether its dual ball is a polytope, the exact
    range of ``W^T w`` over that ball, and the ball's vertices."""

    polyhedral: bool
    spread: Callable[[np.ndarray], Spread]
    vertices: Callable[[int, int], np.ndarray | None]


#: the facts of each output norm: one row per member
OUTPUT_FACTS: dict[OutputNorm, OutputNormFacts] = {
    OutputNorm.ABS: OutputNormFacts(True, _box_spread, _one_vertex),
    OutputNorm.L1: OutputNormFacts(True, _box_spread, _sign_vectors),
    OutputNorm.LINF: OutputNormFacts(True, _l1_spread, _unit_vectors),
    OutputNorm.CROSS: OutputNormFacts(True, _cross_spread, _cross_vertices),
    OutputNorm.L2: OutputNormFacts(False, _l2_spread, _no_vertices),
}


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
    return L2_OUTPUT_VALUES[alpha](jac, hint)


def _spectral(jac: np.ndarray, hint: np.ndarray | None) -> float:
    return float(np.linalg.norm(jac, 2)) if jac.size else 0.0


def _largest_column(jac: np.ndarray, hint: np.ndarray | None) -> float:
    return float(np.linalg.norm(jac, axis=0).max())


def _largest_signed(jac: np.ndarray, hint: np.ndarray | None) -> float:
    signs = _sign_vectors(jac.shape[1], 1 << (MAX_SIGN_INPUTS - 1))  # up to ±
    if signs is not None:
        return float(np.linalg.norm(signs @ jac.T, axis=1).max())
    if hint is None:
        return 0.0
    w = np.asarray(hint, dtype=np.float64).reshape(-1)
    w = w / max(1.0, float(np.linalg.norm(w)))
    return float(np.abs(jac.T @ w).sum())


#: ``max_{||w||_2 <= 1} ||J^T w||_{α*}`` for each input norm α (from J and the solver's w)
L2_OUTPUT_VALUES: dict[InputNorm, Callable[[np.ndarray, np.ndarray | None], float]] = {
    InputNorm.LINF: _largest_signed,
    InputNorm.L1: _largest_column,
    InputNorm.L2: _spectral,
}
