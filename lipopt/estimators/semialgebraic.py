"""The polynomial problem of Chen, Lasserre, Magron and Pauwels (NeurIPS 2020), and the reading
of a request that the relaxations share (``../shared/semialgebraic.md`` §1).

One hidden layer, ``f(x) = cᵀ ReLU(A x + b)``, the box ``l <= x <= h``; ReLU's derivative as the
variable ``u`` with ``u (u − 1) = 0`` and ``(u − ½)(A x + b) >= 0``; the ℓ∞ input norm's dual as
``t ∈ [−1, 1]^d`` (ℓ2: the unit ball ``Σ t_i² <= 1``). Then

    max  Σ_ij A_ji c_j t_i u_j   s.t.  the constraints below               (LCEP)

is at least the local Lipschitz constant ``max ||∇(cᵀf)||_{α*}`` over the box (at a kink ``u``
may take either value, so LCEP can exceed it only on networks outside general position):

- the box: ``−(x_i − l_i)(x_i − h_i) >= 0``;
- the derivative: ``(u_j − ½)(A_j x + b_j) >= 0`` and ``u_j² − u_j = 0``;
- the dual ball: ``1 − t_i² >= 0`` (ℓ∞ input norm), and also ``1 − Σ_i t_i² >= 0`` (ℓ2);
- redundant, valid bounds that make the relaxation local: ``z_j − l_z >= 0``, ``h_z − z_j >= 0``
  and ``−(z_j − l_z)(z_j − h_z) >= 0`` for ``z = A x + b`` with sound bounds ``[l_z, h_z]``, and
  a stable neuron's derivative fixed (``1`` where ``l_z > 0``, ``0`` where ``h_z < 0``).

Two hidden layers add the hidden output's constraints (:mod:`lipopt.estimators.two_layers`).
The relaxations themselves: :mod:`lipopt.estimators.hr2` (SHOR at level 1, HR-2 at level 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lipopt.bounds import propagate
from lipopt.domain import Box, LinfBall, Polytope
from lipopt.estimators.base import EstimatorOutOfScope, FloatArray, Problem
from lipopt.estimators.relaxation_parts import BALL_ROWS
from lipopt.norms import InputNorm

#: the input norms SHOR and HR-2 take: ℓ∞ (t in the box) and ℓ2 (t in the unit ball)
SDP_NORMS = tuple(BALL_ROWS)
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
    #: the domain was a polytope: the relaxation runs over its bounding box (a superset, so the
    #: bound still holds for the polytope, but ignores its rows)
    cut_to_box: bool = False

    @property
    def depth(self) -> int:
        """The number of hidden layers."""
        return len(self.weights)


def hidden_layers(prob: Problem, method: str, most: int, bounds: str = "linear") -> Layered:
    """The request (its input norm already checked by :func:`~lipopt.estimators.base.problem`)
    as :class:`Layered`, or the one-line reason why ``method`` cannot take it (more than
    ``most`` hidden layers, a domain other than a box or an ℓ∞ ball)."""
    network, domain = prob.network, prob.domain
    depth = len(network.affine_layers) - 1
    if depth > most:
        built = "one hidden layer" if most == 1 else f"up to {most} hidden layers"
        raise EstimatorOutOfScope(
            f"{method} is built for {built}; this network has {depth} "
            "(deeper networks are not built yet)"
        )
    cut = isinstance(domain, Polytope)
    if cut:  # a superset: the bound holds, the rows are not used
        domain = Box(*domain.bounding_box())
    if not isinstance(domain, (Box, LinfBall)):
        raise EstimatorOutOfScope(f"{method} needs a box, an linf ball or a polytope")
    box: Any = domain.as_box() if isinstance(domain, LinfBall) else domain
    *hidden, last = network.affine_layers
    found = propagate(network, domain, prob.c, method=bounds)
    return Layered(
        tuple(a.weight for a in hidden), tuple(a.bias for a in hidden), prob.c @ last.weight,
        (box.lower, box.upper), tuple(zip(found.pre_lower, found.pre_upper)), prob.norm, cut,
    )  # fmt: skip


def box_note(net: Layered) -> dict[str, str]:
    """The estimate's note where the relaxation took a polytope's bounding box."""
    if not net.cut_to_box:
        return {}
    return {"domain": "the polytope's bounding box: an upper bound that ignores its rows"}
