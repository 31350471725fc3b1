"""The MIP of networks with per-neuron slopes ``h = α z + (1 - α) relu(z)`` (#46) against brute
force: each formulation's optimum is at least every sampled gradient norm and equals the largest
one (a fine grid over the 2-d box, plus dense samples next to the solver's point); four-input
networks against ``tests.oracle``; one binary per unstable non-identity neuron; a ReLU network's
model is the same whatever layer spells it. Bounds: ``interval``, the default where said.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyomo.environ as pe
import pytest

from lipopt import Box
from lipopt.activation import Activation
from lipopt.bounds import propagate
from lipopt.bounds.interval import NeuronState
from lipopt.formulation import ModelSpec, build
from lipopt.formulation.objective import set_candidate
from lipopt.formulation.products import gate_products, remove_products, set_products
from lipopt.network import Affine, Network, ReLU
from lipopt.norms import InputNorm, OutputNorm
from lipopt.solvers import available
from lipopt.solvers.export import write_model
from tests.formulation.activation_cases import (
    BOX,
    POOLS,
    TOLERANCE,
    check_exact,
    sloped_network,
    sloped_weights,
    solved,
)  # fmt: skip
from tests.oracle import brute_force_lipschitz

CASES = [
    (pool, norm, form)
    if (norm is InputNorm.LINF) == (form == "backward")  # two of four pairs with the fast ones
    else pytest.param(pool, norm, form, marks=pytest.mark.slow)
    for pool in POOLS
    for norm in (InputNorm.LINF, InputNorm.L1)
    for form in ("backward", "forward")
]


@pytest.mark.parametrize(("pool", "norm", "form"), CASES)
def test_mip_optimum_is_the_largest_gradient_norm(pool: str, norm: InputNorm, form: str) -> None:
    """Fixed c, ℓ∞ and ℓ1 input norms, both formulations, interval bounds, three seeds."""
    for seed in range(3):
        weights, slopes = sloped_weights(seed, [2, 5, 4, 2], pool)
        net, c = sloped_network(weights, slopes), np.array([1.0, -0.5])
        bounds = propagate(net, BOX, c, method="interval")
        lip = build(net, BOX, c, norm, bounds, ModelSpec(formulation=form))
        value, point = solved(lip)
        check_exact(value, point, weights, slopes, c, norm)


@pytest.mark.parametrize("pool", list(POOLS))
def test_output_norm_model(pool: str) -> None:
    """The ℓ∞ output norm (``w`` over the ℓ1 ball jointly with x), backward formulation."""
    for seed in range(2):
        weights, slopes = sloped_weights(10 + seed, [2, 5, 4, 2], pool)
        net = sloped_network(weights, slopes)
        bounds = propagate(net, BOX, OutputNorm.LINF, method="interval")
        lip = build(net, BOX, OutputNorm.LINF, InputNorm.LINF, bounds)
        value, point = solved(lip)
        check_exact(value, point, weights, slopes, OutputNorm.LINF, InputNorm.LINF)


@pytest.mark.skipif("scip" not in available(), reason="the exact ℓ2 objective needs SCIP")
@pytest.mark.parametrize("pool", ["identity", "abs", "uniform"])
def test_l2_quadratic_model(pool: str) -> None:
    """ℓ2 input norm: ``t <= ||g||_2^2`` maximised by SCIP; its square root is the constant."""
    weights, slopes = sloped_weights(20, [2, 4, 3, 1], pool)
    net, c = sloped_network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    lip = build(net, BOX, c, InputNorm.L2, bounds, ModelSpec(quadratic=True))
    squared, point = solved(lip, "scip")
    check_exact(math.sqrt(max(squared, 0.0)), point, weights, slopes, c, InputNorm.L2)


def test_gate_products_of_a_slopedsloped_network() -> None:
    """Two hidden layers, ℓ1 input norm: every candidate ``±g_j`` maximised as a sum of gate
    products (``D = p + q a`` expanded) gives the brute force's ``max ||g||_∞``."""
    for pool, seed in itertools.product(("mix", "uniform", "abs"), range(2)):
        weights, slopes = sloped_weights(40 + seed, [2, 5, 4, 1], pool)
        net, c = sloped_network(weights, slopes), np.array([1.0])
        bounds = propagate(net, BOX, c, method="interval")
        lip = build(net, BOX, c, InputNorm.L1, bounds, ModelSpec(decompose=True))
        products = gate_products(net, c, bounds.states)
        assert products is not None and products.slopes is not None
        best, best_point = -np.inf, np.zeros(2)
        for candidate in lip.candidates:
            set_products(lip.model, lip.activations, products, candidate)
            value, point = solved(lip)
            remove_products(lip.model)
            set_candidate(lip.model, lip.gradient, candidate, None)
            if value > best:
                best, best_point = value, point
        check_exact(best, best_point, weights, slopes, c, InputNorm.L1)


def _binaries(model: pe.ConcreteModel) -> int:
    return sum(1 for v in model.component_data_objects(pe.Var) if v.is_binary())


@pytest.mark.parametrize("pool", ["identity", "mix", "uniform"])
def test_one_binary_per_unstable_non_identity_neuron(pool: str) -> None:
    """The forward formulation has no objective binaries: its binaries are the activations',
    one for each neuron with ``l < 0 < u`` and ``α != 1``, none for an identity neuron."""
    weights, slopes = sloped_weights(50, [2, 8, 6, 1], pool)
    net, c = sloped_network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    lip = build(net, BOX, c, InputNorm.LINF, bounds, ModelSpec(formulation="forward"))
    expected = 0
    for k, (lower, upper, alpha) in enumerate(zip(bounds.pre_lower, bounds.pre_upper, slopes)):
        crossing = (lower < 0) & (upper > 0)
        expected += int(np.count_nonzero(crossing & (alpha != 1.0)))
        assert sorted(lip.activations[k]) == np.flatnonzero(crossing & (alpha != 1.0)).tolist()
        assert np.all(bounds.states[k][alpha == 1.0] == NeuronState.ACTIVE)
    assert _binaries(lip.model) == expected
    if pool == "identity":
        assert np.any((bounds.pre_lower[0] < 0) & (slopes[0] == 1.0))  # an identity crosses 0


def test_identity_network_needs_no_binary() -> None:
    """All ``α = 1``: a linear map, no binary in the forward model, value ``||c^T W_3 W_2 W_1||_1``
    (ℓ∞ input norm)."""
    weights, _ = sloped_weights(60, [2, 4, 3, 1], "relu")
    slopes = [np.ones(4), np.ones(3)]
    net, c = sloped_network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    lip = build(net, BOX, c, InputNorm.LINF, bounds, ModelSpec(formulation="forward"))
    assert _binaries(lip.model) == 0
    value, _ = solved(lip)
    gradient = c @ weights[2][0] @ weights[1][0] @ weights[0][0]
    assert value == pytest.approx(np.abs(gradient).sum(), rel=1e-9)


@pytest.mark.parametrize("form", ["backward", "forward"])
def test_relu_network_model_is_the_same_whatever_spells_it(tmp_path, form: str) -> None:
    """``ReLU()`` layers and ``Activation(zeros)`` layers give the same model, row for row (the
    written LP files are equal), with the same optimum."""
    for seed in range(3):
        weights, _ = sloped_weights(70 + seed, [3, 6, 5, 1], "relu")
        c = np.array([1.0])
        texts: list[str] = []
        values: list[float] = []
        for act in (lambda n: ReLU(), lambda n: Activation(np.zeros(n))):
            layers = [Affine(*weights[0]), act(6), Affine(*weights[1]), act(5), Affine(*weights[2])]
            net = Network(tuple(layers))
            box = Box(-np.ones(3), np.ones(3))
            bounds = propagate(net, box, c, method="interval")
            assert bounds.slopes is None
            lip = build(net, box, c, InputNorm.LINF, bounds, ModelSpec(formulation=form))
            path = write_model(lip.model, tmp_path / f"model{len(texts)}.lp")
            texts.append(path.read_text())
            values.append(solved(lip)[0])
        assert texts[0] == texts[1]
        assert values[0] == values[1]


def test_bounds_without_slopes_are_refused() -> None:
    """Bounds computed as if every neuron were a ReLU (``slopes`` None) cannot build the model
    of a network with other activations: one line, not a wrong model."""
    weights, slopes = sloped_weights(80, [2, 4, 1], "mix")
    net, c = sloped_network(weights, slopes), np.array([1.0])
    relu_bounds = propagate(Network.from_affines(net.affine_layers), BOX, c, method="interval")
    with pytest.raises(ValueError, match="do not take the network's activations"):
        build(net, BOX, c, InputNorm.LINF, relu_bounds)


def test_default_bounds() -> None:
    """The default (linear) bounds, once they take slopes: the same optimum as brute force."""
    weights, slopes = sloped_weights(90, [2, 5, 4, 1], "mix")
    net, c = sloped_network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="linear")
    if bounds.slopes is None:
        pytest.skip("the linear bounds do not take slopes yet")
    lip = build(net, BOX, c, InputNorm.LINF, bounds)
    value, point = solved(lip)
    check_exact(value, point, weights, slopes, c, InputNorm.LINF)


ORACLE_CASES = [("mix", "linf"), ("uniform", "l1"), ("abs", "linf"), ("identity", "l1")]


@pytest.mark.parametrize(("pool", "norm"), ORACLE_CASES)
def test_four_inputs_against_the_oracle(pool: str, norm: str) -> None:
    """Four inputs, ten hidden neurons, the default (linear) bounds: both formulations' optimum
    is the oracle's exact constant (its full-dimensional regions, enumerated)."""
    weights, slopes = sloped_weights(160, [4, 6, 4, 1], pool)
    net, c = sloped_network(weights, slopes), np.array([1.0])
    box = Box(-np.ones(4), np.ones(4))
    truth = brute_force_lipschitz(weights, ("box", -np.ones(4), np.ones(4)), c, norm, slopes=slopes)
    bounds = propagate(net, box, c)
    assert bounds.slopes is not None
    for form in ("backward", "forward"):
        lip = build(net, box, c, norm, bounds, ModelSpec(formulation=form))
        value, _ = solved(lip)
        assert value == pytest.approx(truth.value, rel=TOLERANCE, abs=TOLERANCE)
