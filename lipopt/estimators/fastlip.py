"""FastLip (Weng et al. 2018): interval bounds on the gradient, then its largest dual norm.

Interval bound propagation (:mod:`lipopt.bounds.interval`) gives a box ``[l, u]`` that contains
``∇(c^T f)(x)`` for every x in the domain (neurons whose pre-activation keeps one sign on X are
fixed on or off; the others may switch). With two-piece activations ``h = α z + (1 - α) relu(z)``
the derivative ``D`` is 1 on an active neuron (every identity neuron), ``α`` on an inactive one
and either on an unstable one, so the switch ``s = D y`` ranges over the hull of ``[ly, uy]`` and
``α [ly, uy]`` (:meth:`lipopt.bounds.interval.NetworkBounds.switch_bounds`). The largest dual norm
over that box is a certified upper bound:

* ℓ∞ input: ``max_{g ∈ [l,u]} ||g||_1 = Σ_j max(|l_j|, |u_j|)``;
* ℓ1 input: ``max_{g ∈ [l,u]} ||g||_∞ = max_j max(|l_j|, |u_j|)``.

Local (uses the domain); cost: two passes of interval arithmetic, i.e. a few matrix products.
This is exactly the bound LipMIP starts from, and LipLP is never above it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.bounds.interval import interval_bounds
from lipopt.domain import Domain
from lipopt.estimators.base import Estimate, Kind, problem, stopwatch
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm, dual_norm

NAME = "fastlip"
KIND = Kind.UPPER


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    **options: Any,
) -> Estimate:
    """``||max(|l|, |u|)||_{α*}`` over the interval bounds ``[l, u]`` of the input gradient."""
    if options:
        raise TypeError(f"fastlip takes no options, got {sorted(options)}")
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)
        bounds = interval_bounds(network, domain, prob.c)
        corner = np.maximum(np.abs(bounds.input_grad_lower), np.abs(bounds.input_grad_upper))
        value = float(dual_norm(corner, prob.norm))
    return Estimate(NAME, value, KIND, elapsed[0], {"unstable_neurons": bounds.unstable_count})
