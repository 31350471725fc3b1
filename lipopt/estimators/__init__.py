"""Lipschitz estimators, side by side with the exact LipMIP (paper §7, App. F.1).

Each module exposes ``estimate(network, domain, norm="linf", c=None, **options) -> Estimate``
for the scalar function ``c^T f`` (``c`` defaults to ``[1]`` for one output) and the input norms
``linf`` and ``l1``. :data:`ESTIMATORS` lists them in the paper's order of the comparison, from
the cheapest bounds to the exact value; :data:`KINDS` gives each one's nominal guarantee.

=============  ===========  ================================================================
name           kind         what
=============  ===========  ================================================================
naive          upper        product of the layers' ℓ2 operator norms × norm-equivalence factor
random         lower        best gradient dual norm at random points
attack         lower        local search across linear regions for a larger gradient norm
fastlip        upper        interval bounds on the gradient
liplp          upper        LP relaxation of LipMIP
clever         heuristic    reverse-Weibull fit to sampled batch maxima
seqlip         heuristic    greedy SeqLip (ℓ2) × norm-equivalence factor, local
lipsdp         upper        LipSDP-Neuron (ℓ2) × norm-equivalence factor (needs cvxpy)
eclipse        upper        ECLipsE (Xu & Sivaranjani 2024): global ℓ2, layerwise SDPs, proven
eclipse-fast   upper        ECLipsE-Fast: global ℓ2, closed form
eclipse-local  upper        ECLipsE-Gen-Local (2026): ℓ2 balls, local slopes, proven
shor           upper        SHOR moment relaxation (Chen et al. 2020), proven from the dual
hr2            upper        HR-2: SHOR plus second-order blocks (Chen et al. 2020), proven
lipopt3        upper        LiPopt-3 (Latorre et al. 2020): Krivine/Handelman LP, proven
lipopt4        upper        LiPopt-4 (Latorre et al. 2020): the same at degree 4
lipmip         exact        the MIP (upper if stopped early)
=============  ===========  ================================================================

Activations other than ReLU (issue 46: ``h = α z + (1 - α) relu(z)`` per neuron; identity,
leaky, ``|z|``). ``naive`` bounds each ``||D_k||_2`` by ``max(1, max |α|)``; ``random``,
``clever`` and ``attack`` evaluate gradients through the network's own ``D = α + (1 - α) σ``, so
their values stay attained. ``seqlip``, ``lipsdp``, the three ``eclipse`` and ``shor``, ``hr2``,
``lipopt3``/``lipopt4``, whose math reads ReLU slopes, run on ``network.lowered()``, the same
function with ReLUs only (:func:`~lipopt.estimators.base.runs_lowered`, which marks their
``estimate``; ``detail["lowered"]`` says so), so each keeps its guarantee: the same function has
the same constant. ``fastlip``, ``liplp`` and ``lipmip`` read the slopes through the bounds and
the MIP.
"""

from __future__ import annotations

from lipopt.estimators import (
    attack,
    clever,
    eclipse,
    fastlip,
    hr2,
    liplp,
    lipmip,
    lipopt_k,
    lipsdp,
    naive,
    seqlip,
    shor,
)
from lipopt.estimators import random as random_lb
from lipopt.estimators.attack import gradient_attack
from lipopt.estimators.base import Estimate, Estimator, EstimatorUnavailable, Kind

#: name -> estimate function, in the order of the comparison
ESTIMATORS: dict[str, Estimator] = {
    "naive": naive.estimate,
    "random": random_lb.estimate,
    "attack": attack.estimate,
    "fastlip": fastlip.estimate,
    "liplp": liplp.estimate,
    "clever": clever.estimate,
    "seqlip": seqlip.estimate,
    "lipsdp": lipsdp.estimate,
    "eclipse-fast": eclipse.estimate_fast,
    "eclipse": eclipse.estimate,
    "eclipse-local": eclipse.estimate_local,
    "shor": shor.estimate,
    "hr2": hr2.estimate,
    "lipopt3": lipopt_k.estimate3,
    "lipopt4": lipopt_k.estimate4,
    "lipmip": lipmip.estimate,
}

#: name -> the guarantee the method gives in its default configuration
KINDS: dict[str, Kind] = {
    "naive": naive.KIND,
    "random": random_lb.KIND,
    "attack": attack.KIND,
    "fastlip": fastlip.KIND,
    "liplp": liplp.KIND,
    "clever": clever.KIND,
    "seqlip": seqlip.KIND,
    "lipsdp": lipsdp.KIND,
    "eclipse-fast": eclipse.KIND,
    "eclipse": eclipse.KIND,
    "eclipse-local": eclipse.KIND,
    "shor": shor.KIND,
    "hr2": hr2.KIND,
    "lipopt3": lipopt_k.KIND,
    "lipopt4": lipopt_k.KIND,
    "lipmip": lipmip.KIND,
}


def get(name: str) -> Estimator:
    """The estimate function of a method, with a clear error for an unknown name."""
    try:
        return ESTIMATORS[name]
    except KeyError:
        raise ValueError(
            f"unknown estimator {name!r}; choose from: {', '.join(ESTIMATORS)}"
        ) from None


__all__ = [
    "ESTIMATORS",
    "KINDS",
    "Estimate",
    "Estimator",
    "EstimatorUnavailable",
    "Kind",
    "get",
    "gradient_attack",
]
