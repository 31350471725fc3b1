"""LiPopt-k (Latorre et al. 2020): proven upper bounds, the hierarchy's order, and the seed's
closed form for the pattern-free variant (``../shared/semialgebraic.md`` §7)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lipopt import Box, LinfBall
from lipopt.estimators import Kind, lipopt_k
from lipopt.estimators.base import EstimatorOutOfScope
from tests.estimators.test_shor import _cases
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt


@pytest.mark.parametrize("seed, net, domain", _cases(), ids=lambda v: str(v)[:12])
def test_lipopt_bounds_the_exact_value_and_k4_is_tighter(seed, net, domain):
    oracle = brute_force_lipschitz(*from_lipopt(net, domain), np.ones(1), "linf").value
    three = lipopt_k.estimate3(net, domain)
    four = lipopt_k.estimate4(net, domain)
    assert three.kind is Kind.UPPER and three.name == "lipopt3"
    assert three.value >= oracle * (1 - 1e-9) - 1e-12  # proven: no tolerance
    assert four.value >= oracle * (1 - 1e-9) - 1e-12
    assert four.value <= three.value + 1e-7 * max(1.0, three.value)  # more products, lower γ


@pytest.mark.parametrize("seed", range(4))
def test_global_variant_is_above_the_pattern_free_maximum(seed):
    """Without fixing stable neurons, LiPopt bounds ``max_{t ∈ {±1}^d} Σ_j (w_j A_j t)_+``
    (s ∈ [0, 1] chosen per neuron), which it cannot beat: the max of F over the box."""
    rng = np.random.default_rng(seed)
    net = random_network(rng, [5, 6, 1])
    (a, _b), (w, _c) = ((layer.weight, layer.bias) for layer in net.affine_layers)
    closed = max(
        float(np.maximum(w[0] * (a @ np.array(t)), 0.0).sum())
        for t in itertools.product((-1.0, 1.0), repeat=5)
    )
    est = lipopt_k.estimate3(net, LinfBall(rng.uniform(-1, 1, 5), 0.1), local=False)
    assert est.value >= closed * (1 - 1e-9)
    assert est.value == pytest.approx(closed, rel=1e-6)  # and reaches it here (bilinear F)


def test_one_neuron_gives_c_times_its_l1_norm():
    net = random_network(np.random.default_rng(5), [4, 1, 1])
    a, c = net.affine_layers[0].weight[0], net.affine_layers[1].weight[0, 0]
    centre = -net.affine_layers[0].bias[0] * a / (a @ a)
    assert lipopt_k.estimate3(net, Box(centre - 1, centre + 1)).value == pytest.approx(
        abs(c) * np.abs(a).sum(), rel=1e-7
    )


def test_deeper_networks_are_out_of_scope():
    net = random_network(np.random.default_rng(1), [2, 4, 4, 4, 1])
    with pytest.raises(EstimatorOutOfScope, match="LiPopt-3 is built for up to 2 hidden layers"):
        lipopt_k.estimate3(net, Box(-np.ones(2), np.ones(2)))
