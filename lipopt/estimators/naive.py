"""NaiveUB: the product of the layers' ℓ2 operator norms, scaled to the input norm.

For ``g(x) = ∇(c^T f)(x) = W_1^T D_1 W_2^T ... D_{L-1} W_L^T c`` with ``D_k`` diagonal, each
entry a slope of its neuron (0 or 1 for ReLU; ``α`` or 1 for ``h = α z + (1 - α) relu(z)``, so
``||D_k||_2 <= s_k := max(1, max_i |α_i|)``, 1 for a ReLU layer), submultiplicativity of the
spectral norm gives, at every x,

    ||g(x)||_2 <= ||c^T W_L||_2 · s_{L-1} ||W_{L-1}||_2 ··· s_1 ||W_1||_2  =: N_2.

The last factor is the row vector ``c^T W_L`` (at most ``||c||_2 ||W_L||_2``). Then the dual norm
of the requested input norm is bounded by norm equivalence:

* ℓ∞ input (dual ℓ1): ``||g||_1 <= sqrt(d) ||g||_2``, so ``L^∞ <= sqrt(d) · N_2``;
* ℓ1 input (dual ℓ∞): ``||g||_∞ <= ||g||_2``, so ``L^1 <= N_2``.

A certified upper bound; global (ignores the domain); cost: one SVD per layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.estimators.base import Estimate, Kind, problem, stopwatch
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm

NAME = "naive"
KIND = Kind.UPPER


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    **options: Any,
) -> Estimate:
    """``scale · ||c^T W_L||_2 · Π_k s_k ||W_k||_2`` with scale ``sqrt(d)`` (ℓ∞) or 1 (ℓ1)
    and ``s_k`` the largest slope magnitude of hidden layer k, at least 1 (module docstring)."""
    if options:
        raise TypeError(f"naive takes no options, got {sorted(options)}")
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)
        norms = [float(np.linalg.norm(w, ord=2)) for w in prob.scalar_weights()]
        l2 = float(np.prod(norms))
        detail: dict[str, Any] = {"layer_norms": norms}
        if not network.is_relu:  # ||D_k||_2 <= max(1, max |α|) (ReLU layers: 1)
            slopes = [max(1.0, float(np.max(np.abs(a), initial=0.0))) for a in network.slopes]
            l2 *= float(np.prod(slopes))
            detail["slope_norms"] = slopes
        value = prob.l2_scale() * l2
    return Estimate(
        NAME, value, KIND, elapsed[0], {"l2_bound": l2, "scale": prob.l2_scale(), **detail}
    )
