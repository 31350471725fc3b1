"""The ℓ1 candidates of a two-hidden-layer network as sums of gate products: the algebra
against the oracle's Jacobians, exactness against brute force, and the model left as it was."""

from __future__ import annotations

import itertools

import numpy as np
import pyomo.environ as pe
import pytest
from pyomo.core.expr.visitor import identify_variables

from lipopt import Box, L1Ball, LinfBall, lipschitz
from lipopt.bounds import propagate
from lipopt.bounds.interval import NeuronState
from lipopt.formulation import ModelSpec, build
from lipopt.formulation.objective import Candidate, set_candidate
from lipopt.formulation.products import gate_products, remove_products, set_products
from lipopt.lipschitz import LipschitzError
from lipopt.norms import InputNorm
from lipopt.solvers import SolveOptions, Termination, get
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt, jacobian_of_pattern


def _gates_of(states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random 0/1 gate vector that agrees with the stable neurons' states."""
    gates = rng.integers(0, 2, size=states.size).astype(float)
    gates[states == NeuronState.ACTIVE] = 1.0
    gates[states == NeuronState.INACTIVE] = 0.0
    return gates


@pytest.mark.parametrize(
    ("seed", "domain"),
    [(11, Box(np.zeros(4), np.ones(4))), (15, LinfBall(np.full(4, 0.5), 0.1))],
    ids=["unit-box", "ball-with-every-state-in-both-layers"],
)
def test_product_objective_is_the_gradient_entry_at_every_gate_pattern(seed, domain) -> None:
    """With the gates fixed to any pattern and the rest free, max Σ q y = sign · (c^T J)_j,
    J = W_3 D_2 W_2 D_1 W_1 computed by the oracle. The ball's layers each hold active,
    inactive and unstable neurons, so every kind of term (constant, one gate, two gates)
    occurs."""
    rng = np.random.default_rng(seed)
    net = random_network(rng, [4, 6, 5, 2])
    c = np.array([1.0, -1.0])
    bounds = propagate(net, domain, c)
    if isinstance(domain, LinfBall):
        for states in bounds.states:
            assert set(np.asarray(states).tolist()) == {0, 1, 2}
    lip = build(net, domain, c, InputNorm.L1, bounds, ModelSpec(decompose=True))
    products = gate_products(net, c, bounds.states)
    assert products is not None
    weights = from_lipopt(net, domain)[0]
    model = lip.model
    for name in ("relu1_unstable", "relu2_unstable", "relu1_active", "relu2_active"):
        if model.component(name) is not None:  # the gates are set by hand, not by x
            model.component(name).deactivate()
    for _ in range(6):
        gates = [_gates_of(np.asarray(s), rng) for s in bounds.states]
        for layer, binaries in zip(gates, lip.activations):
            for i, var in binaries.items():
                var.fix(layer[i])
        truth = c @ jacobian_of_pattern(weights, gates)
        for cand in lip.candidates:
            set_products(model, lip.activations, products, cand)
            result = get("highs").solve(model, SolveOptions())
            assert result.incumbent == pytest.approx(cand.sign * truth[cand.index], abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_each_candidate_has_the_same_maximum_and_cutoff_verdicts_as_the_backward_model(seed):
    """Per candidate, with x free in an ℓ∞ ball where both layers have active neurons (so the
    constant and one-gate terms occur) and the second unstable ones: the product model's
    maximum equals the backward model's (itself tested against brute force), and the cutoff
    ``>= max + 1e-4`` is infeasible while ``>= max - 1e-4`` is not."""
    rng = np.random.default_rng(400 + seed)
    net = random_network(rng, [4, 6, 6, 1])
    domain = LinfBall(rng.uniform(size=4), 0.15)
    bounds = propagate(net, domain, np.ones(1))
    assert all((np.asarray(s) == NeuronState.ACTIVE).any() for s in bounds.states)
    assert (np.asarray(bounds.states[1]) == NeuronState.UNSTABLE).any()
    lip = build(net, domain, np.ones(1), InputNorm.L1, bounds, ModelSpec(decompose=True))
    products = gate_products(net, np.ones(1), bounds.states)
    solver = get("highs")
    for cand in lip.candidates:
        remove_products(lip.model)
        set_candidate(lip.model, lip.gradient, cand)
        backward = solver.solve(lip.model, SolveOptions()).incumbent
        set_products(lip.model, lip.activations, products, cand)
        product = solver.solve(lip.model, SolveOptions()).incumbent
        assert product == pytest.approx(backward, abs=1e-7)
        set_products(lip.model, lip.activations, products, cand, cutoff=backward + 1e-4)
        assert solver.solve(lip.model, SolveOptions()).termination is Termination.INFEASIBLE
        set_products(lip.model, lip.activations, products, cand, cutoff=backward - 1e-4)
        assert solver.solve(lip.model, SolveOptions()).termination is Termination.OPTIMAL


def test_gate_products_only_for_two_hidden_layers() -> None:
    rng = np.random.default_rng(3)
    for widths, expected in [([3, 4, 1], False), ([3, 4, 4, 1], True), ([3, 4, 4, 4, 1], False)]:
        net = random_network(rng, widths)
        domain = Box(np.zeros(3), np.ones(3))
        states = propagate(net, domain, np.ones(1)).states
        assert (gate_products(net, np.ones(1), states) is not None) == expected


def test_removing_products_restores_the_backward_model() -> None:
    rng = np.random.default_rng(4)
    net = random_network(rng, [5, 6, 6, 1])
    domain = Box(np.zeros(5), np.ones(5))
    bounds = propagate(net, domain, np.ones(1))
    lip = build(net, domain, np.ones(1), InputNorm.L1, bounds, ModelSpec(decompose=True))
    products = gate_products(net, np.ones(1), bounds.states)
    set_products(lip.model, lip.activations, products, lip.candidates[0], cutoff=0.5)
    assert not lip.model.switch1.active and lip.model.cutoff.lower == 0.5
    set_products(lip.model, lip.activations, products, lip.candidates[1])  # replaces
    assert lip.model.component("cutoff") is None
    remove_products(lip.model)
    assert lip.model.component("prod_y") is None and lip.model.component("prod_links") is None
    assert lip.model.switch1.active and lip.model.y1_def.active


# two hidden layers, the l1 input norm: boxes and balls (stable neurons), 2 to 6 inputs
PRODUCT_CASES = [
    ([2, 8, 8, 2], Box([0.0, 0.0], [1.0, 1.0])),
    ([3, 10, 6, 3], LinfBall([0.5, 0.5, 0.5], 0.4)),
    ([3, 6, 8, 1], L1Ball([0.5, 0.5, 0.5], 0.8)),
    ([5, 7, 7, 2], Box(np.zeros(5), np.ones(5))),
    ([6, 6, 6, 1], LinfBall(np.full(6, 0.3), 0.2)),
]


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "2-processes"])
@pytest.mark.parametrize("products", [True, False], ids=["products", "backward"])
@pytest.mark.parametrize("case", range(len(PRODUCT_CASES)))
def test_decomposition_with_and_without_products_equals_brute_force(case, products, workers):
    widths, domain = PRODUCT_CASES[case]
    rng = np.random.default_rng(300 + case)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, "l1")
    res = lipschitz(
        net, domain, "l1", c=c, decompose=True, products=products, split=False,
        regions=False, workers=workers,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.model_stats["gate_products"] == int(products)
    if workers == 1:  # the in-process model is the backward model again, objective included
        model = res.model.model
        assert model.component("prod_y") is None
        assert all(con.active for con in model.component_objects(pe.Constraint))
        used = list(identify_variables(model.objective.expr))
        # none of a deleted product: a deleted variable has no parent component
        assert used and all(var.parent_component() is not None for var in used)
        assert all(var.model() is model for var in used)


def test_sampled_start_is_a_verified_cutoff() -> None:
    """The decomposition starts from the best of the sampled points: its value is attained
    (at most the exact constant) and the candidates are solved against it."""
    rng = np.random.default_rng(21)
    net = random_network(rng, [5, 8, 8, 1])
    domain = Box(np.zeros(5), np.ones(5))
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, "l1")
    said: list[str] = []
    res = lipschitz(
        net, domain, "l1", decompose=True, split=False, regions=False, workers=1,
        progress=said.append,
    )  # fmt: skip
    lines = [line for line in said if line.startswith("sampling: ")]
    assert len(lines) == 1
    sampled = float(lines[0].split()[1])
    assert 0 < sampled <= truth.value * (1 + 1e-5)  # the line rounds to 6 digits
    assert res.value == pytest.approx(truth.value, rel=1e-6)


def test_products_must_be_a_bool() -> None:
    net = random_network(np.random.default_rng(1), [5, 4, 4, 1])
    with pytest.raises(LipschitzError, match="products must be"):
        lipschitz(net, Box(np.zeros(5), np.ones(5)), "l1", products="yes")


def test_every_gate_pattern_of_tiny_layers() -> None:
    """All 2^(n1+n2) patterns of a [2,2,2,1] network: with each y at the end of its interval
    that maximising takes (``min(a, b)`` for ``q > 0``, ``max(0, a + b - 1)`` for ``q < 0``),
    ``Σ q y`` is the pattern's gradient entry, for both entries and signs."""
    rng = np.random.default_rng(8)
    net = random_network(rng, [2, 2, 2, 1])
    domain = Box([-1.0, -1.0], [1.0, 1.0])
    bounds = propagate(net, domain, np.ones(1))
    products = gate_products(net, np.ones(1), bounds.states)
    weights = from_lipopt(net, domain)[0]
    for first in itertools.product([0.0, 1.0], repeat=2):
        for second in itertools.product([0.0, 1.0], repeat=2):
            truth = np.ones(1) @ jacobian_of_pattern(weights, [np.array(first), np.array(second)])
            low = np.array([[max(0.0, a + b - 1) for b in second] for a in first])
            high = np.array([[min(a, b) for b in second] for a in first])
            for j, sign in itertools.product(range(2), (1.0, -1.0)):
                q = products.coefficients(Candidate(j, sign, -np.inf, np.inf))
                value = float((q * np.where(q > 0, high, low)).sum())
                assert value == pytest.approx(sign * truth[j], abs=1e-12)
