"""NaiveUB: the product of the layers' ℓ2 operator norms, scaled to the input norm.

For ``g(x) = ∇(c^T f)(x) = W_1^T D_1 W_2^T ... D_{L-1} W_L^T c`` with ``D_k`` diagonal 0/1
(so ``||D_k||_2 <= 1``), submultiplicativity of the spectral norm gives, at every x,

    ||g(x)||_2 <= ||c^T W_L||_2 · ||W_{L-1}||_2 ··· ||W_1||_2  =: N_2.

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
    """``scale · ||c^T W_L||_2 · Π_k ||W_k||_2`` with scale ``sqrt(d)`` (ℓ∞) or 1 (ℓ1)."""
    if options:
        raise TypeError(f"naive takes no options, got {sorted(options)}")
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)
        norms = [float(np.linalg.norm(w, ord=2)) for w in prob.scalar_weights()]
        l2 = float(np.prod(norms))
        value = prob.l2_scale() * l2
    return Estimate(
        NAME,
        value,
        KIND,
        elapsed[0],
        {"l2_bound": l2, "scale": prob.l2_scale(), "layer_norms": norms},
    )
