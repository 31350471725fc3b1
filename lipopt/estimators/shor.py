"""SHOR: the first-order moment (Shor) relaxation of the polynomial problem of Chen, Lasserre,
Magron and Pauwels (NeurIPS 2020) — an upper bound on the local Lipschitz constant.

The problem (:mod:`lipopt.estimators.semialgebraic`) maximises the gradient polynomial over
points ``(x, u, t)`` that satisfy ReLU's derivative constraints, the box and the dual ball. SHOR
relaxes it to one moment matrix on ``(1, x, u, t)`` ⪰ 0 with every constraint written in its
entries (HR-1 for one hidden layer); for two hidden layers the cubic objective needs the seed's
lifted blocks on ``(1, t, u₂_k·u₁)`` (:mod:`lipopt.estimators.two_layers`). Both are built by
the moment machinery of :mod:`lipopt.estimators.moments` in normalised variables (every
variable in [−1, 1] or [0, 1]; stable neurons' derivatives as constants), and solved in the
dual form with cvxpy.

**The number is proven, not read off the solver** (:func:`~lipopt.estimators.moments.
proven_bound`): the solver's multipliers are made feasible (PSD parts, ``λ >= 0``), the
Lagrangian's coefficients recomputed in numpy, and what is left over bounded with the
variables' bounds; ``detail["correction"]`` is what that adds to the solver's value.

Scope: one or two hidden layers (deeper ones are refused), the ℓ∞ and ℓ2 input norms, boxes and
ℓ∞ balls, a scalar ``cᵀ f``. Cost (one layer): an SDP with one PSD block of side ``1 + 2d + u``
(u unstable neurons). Needs cvxpy (``pip install 'lipopt[sdp]'``: Clarabel, or SCS via
``solver="SCS"``).
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    EstimatorUnavailable,
    Kind,
    problem,
    runs_lowered,
    stopwatch,
)
from lipopt.estimators.hr2 import layered_relaxation, solve_proven
from lipopt.estimators.semialgebraic import SDP_NORMS, box_note, hidden_layers
from lipopt.network import Network
from lipopt.norms import InputNorm

NAME = "shor"
KIND = Kind.UPPER
INSTALL_HINT = "pip install 'lipopt[sdp]'"


@runs_lowered
def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    solver: str | None = None,
    bounds: str = "linear",
    **options: Any,
) -> Estimate:
    """The proven SHOR bound on ``max ||∇(cᵀf)||_{α*}`` over the domain (HR-1 for two hidden
    layers).

    Args:
        solver: a cvxpy SDP solver name (default: Clarabel if installed, else SCS).
        bounds: the pre-activation bounds of the redundant constraints (``linear`` or
            ``interval``).
        options: passed to ``cvxpy.Problem.solve``.
    """
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        raise EstimatorUnavailable(f"SHOR needs cvxpy: {INSTALL_HINT}") from None
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=SDP_NORMS, method="SHOR")
        net = hidden_layers(prob, "SHOR", 2, bounds)
        facts = solve_proven(layered_relaxation(net, 1), solver, options)
    value = facts.pop("value")
    detail = {**facts, "relaxation": "SHOR" if net.depth == 1 else "HR-1", **box_note(net)}
    return Estimate(NAME, value, KIND, elapsed[0], detail)
