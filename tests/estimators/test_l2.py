"""The ℓ2 input norm in SHOR and HR-2 (issue 27: "ℓ2 changes only the t constraint"), against
the brute-force oracle's exact ℓ2 constant and sampled gradients; and the one-line refusals
wherever ℓ2 is not built (a single exported model, LiPopt-k)."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, LinfBall, build_model
from lipopt.compare import compare
from lipopt.estimators import ESTIMATORS, Kind, hr2, lipopt_k, shor
from lipopt.estimators.base import EstimatorOutOfScope
from tests.estimators.test_shor import ORDER_TOLERANCE, TOLERANCE
from tests.helpers import random_network, require_module
from tests.oracle import brute_force_lipschitz, from_lipopt, sampled_max_gradient_norm

require_module("cvxpy")

#: the methods that take the ℓ2 input norm; every other one says it does not
L2_METHODS = {
    "naive", "random", "attack", "fastlip", "clever", "seqlip", "lipsdp", "shor", "hr2",
    "lipmip", "liplp", "eclipse", "eclipse-fast", "eclipse-local",
}  # fmt: skip


def _cases() -> list[tuple[int, object, object]]:
    """12 networks, one and two hidden layers (widths 2 to 8), boxes and linf balls."""
    rng = np.random.default_rng(2702)
    cases = []
    for seed in range(12):
        d, *hidden = (int(v) for v in rng.integers(2, 9, size=2 + seed % 2))
        net = random_network(np.random.default_rng(200 + seed), [d, *hidden, 1])
        centre = rng.uniform(-1, 1, d)
        domain = Box(centre - 0.5, centre + 0.5) if seed % 3 else LinfBall(centre, 0.2)
        cases.append((seed, net, domain))
    return cases


@pytest.mark.parametrize("seed, net, domain", _cases(), ids=lambda v: str(v)[:12])
def test_shor_and_hr2_bound_the_exact_l2_constant(seed, net, domain):
    """``shor >= hr2 >= exact >= max sampled ||∇f||_2``, the exact value from the oracle."""
    oracle = brute_force_lipschitz(*from_lipopt(net, domain), np.ones(1), "l2").value
    sampled = sampled_max_gradient_norm(*from_lipopt(net, domain), np.ones(1), "l2")
    assert oracle >= sampled * (1 - 1e-9) - 1e-12
    high, second = shor.estimate(net, domain, "l2"), hr2.estimate(net, domain, "l2")
    for est in (high, second):
        assert est.kind is Kind.UPPER
        assert est.value >= oracle * (1 - 1e-9) - 1e-12, est.name  # proven: no tolerance
    assert second.value <= high.value + ORDER_TOLERANCE * max(1.0, high.value)
    linf = shor.estimate(net, domain, "linf").value  # ||g||_2 <= ||g||_1: the l2 bound is lower
    assert high.value <= linf + ORDER_TOLERANCE * max(1.0, linf)


def test_one_neuron_gives_c_times_its_l2_norm():
    net = random_network(np.random.default_rng(5), [4, 1, 1])
    a, c = net.affine_layers[0].weight[0], net.affine_layers[1].weight[0, 0]
    centre = -net.affine_layers[0].bias[0] * a / (a @ a)  # the kink crosses the box
    for method in (shor, hr2):
        est = method.estimate(net, Box(centre - 1, centre + 1), "l2")
        assert est.value == pytest.approx(abs(c) * np.linalg.norm(a), rel=TOLERANCE)


def test_every_neuron_stable_gives_the_l2_norm_of_the_gradient():
    rng = np.random.default_rng(8)
    net = random_network(rng, [3, 6, 4, 1])
    x = rng.uniform(-1, 1, 3)
    gradient = net.gradients(x[None, :], np.ones(1))[0]
    for method in (shor, hr2):
        est = method.estimate(net, LinfBall(x, 1e-4), "l2")
        assert est.value == pytest.approx(np.linalg.norm(gradient), rel=1e-4)


def test_a_single_exported_model_refuses_l2_in_one_line():
    """The ℓ2 objective is refined while solving, so no single model is exported."""
    net = random_network(np.random.default_rng(1), [2, 4, 1])
    with pytest.raises(ValueError, match="^a single exported model takes the linf and l1"):
        build_model(net, Box(-np.ones(2), np.ones(2)), norm="l2")


def test_every_other_estimator_says_it_does_not_take_l2():
    net = random_network(np.random.default_rng(1), [2, 4, 1])
    box = Box(-np.ones(2), np.ones(2))
    for name, method in ESTIMATORS.items():
        if name in L2_METHODS:
            continue
        with pytest.raises(EstimatorOutOfScope, match="l2 input norm|linf input norm"):
            method(net, box, "l2")
    with pytest.raises(EstimatorOutOfScope, match="LiPopt-3 is built for the linf input norm"):
        lipopt_k.estimate3(net, box, "l2")


def test_compare_in_l2_lists_what_it_could_not_run():
    net = random_network(np.random.default_rng(3), [3, 5, 1])
    box = Box(np.zeros(3), np.ones(3))
    methods = "random,shor,hr2,lipmip,liplp,lipopt3"
    results = {r.name: r for r in compare(net, box, "l2", methods=methods)}
    assert "linf input norm" in results["lipopt3"].reason
    oracle = brute_force_lipschitz(*from_lipopt(net, box), np.ones(1), "l2").value
    assert results["random"].value <= oracle * (1 + 1e-9) <= results["hr2"].value * (1 + 1e-9)
    assert results["shor"].value >= oracle * (1 - 1e-9)
    assert results["lipmip"].value == pytest.approx(oracle, rel=1e-6)  # the exact value
    assert results["liplp"].value >= oracle * (1 - 1e-9)
