"""The MIP of networks with per-neuron slopes ``h = α z + (1 - α) relu(z)`` (#46) against brute
force: each formulation's optimum is at least every sampled gradient norm and equals the largest
one (a fine grid over the 2-d box, plus dense samples next to the solver's point); one binary per
unstable non-identity neuron; a ReLU network's model is the same whatever layer spells it.

The brute force is this file's own numpy chain rule (``D = α + (1 - α)[z > 0]``), no lipopt code.
Bounds: ``interval`` mostly, the default ``linear`` where said; four-input networks against
``tests.oracle`` (its exact region enumeration), where a grid cannot reach.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyomo.environ as pe
import pytest

from lipopt import Box, build_model, lipschitz
from lipopt.activation import Activation
from lipopt.balance import balanced
from lipopt.bounds import propagate
from lipopt.bounds.interval import NeuronState
from lipopt.estimators import liplp
from lipopt.formulation import ModelSpec, build
from lipopt.formulation.objective import set_candidate
from lipopt.formulation.products import gate_products, remove_products, set_products
from lipopt.network import Affine, Network, ReLU
from lipopt.norms import InputNorm, OutputNorm
from lipopt.search.subnets import prefix_network, subnet_tangent_bounds
from lipopt.solvers import SolveOptions, Termination, available, get
from lipopt.solvers.export import write_model
from tests.oracle import brute_force_lipschitz

#: slope pools: ReLU, identity among ReLUs, leaky, |z|, the brief's mix, uniform reals (None)
POOLS = {
    "relu": (0.0,),
    "identity": (0.0, 1.0),
    "leaky": (0.1,),
    "abs": (-1.0, 0.0),
    "mix": (0.0, 1.0, 0.1, 0.25, -1.0),
    "uniform": None,
}
#: the dual norm of each input norm, as numpy's ``ord``
DUAL = {InputNorm.LINF: 1, InputNorm.L1: np.inf, InputNorm.L2: 2}
BOX = Box(-np.ones(2), np.ones(2))
GRID = np.array(list(itertools.product(np.linspace(-1.0, 1.0, 401), repeat=2)))
TOLERANCE = 1e-6


def _weights(seed: int, widths: list[int], pool: str) -> tuple[list, list]:
    """Random ``[(W, b), ...]`` and one slope array per hidden layer drawn from ``pool``."""
    rng = np.random.default_rng(seed)
    weights = [
        (rng.normal(size=(n, m)), rng.normal(size=n) * 0.5) for m, n in zip(widths, widths[1:])
    ]
    choices = POOLS[pool]
    slopes = [
        rng.uniform(-1.5, 1.5, size=n) if choices is None else rng.choice(choices, size=n)
        for n in widths[1:-1]
    ]
    return weights, slopes


def _network(weights: list, slopes: list) -> Network:
    layers: list = []
    for (w, b), alpha in zip(weights, [*slopes, None]):
        layers.append(Affine(w, b))
        if alpha is not None:
            layers.append(Activation(alpha))
    return Network(tuple(layers))


def _jacobians(weights: list, slopes: list, points: np.ndarray) -> np.ndarray:
    """``J(x)`` at every point, shape (n, m, d): the chain rule with ``D = α + (1 - α)[z > 0]``."""
    h, jac = points, np.broadcast_to(np.eye(points.shape[1]), (len(points), *[points.shape[1]] * 2))
    for (w, b), alpha in zip(weights[:-1], slopes):
        z = h @ w.T + b
        derivative = alpha + (1.0 - alpha) * (z > 0)
        jac = derivative[:, :, None] * np.einsum("ij,njk->nik", w, jac)
        h = alpha * z + (1.0 - alpha) * np.maximum(z, 0.0)
    return np.einsum("ij,njk->nik", weights[-1][0], jac)


def _norms(weights: list, slopes: list, points: np.ndarray, seed, norm: InputNorm) -> np.ndarray:
    """The objective at every point: ``||c^T J||_{norm*}``, or for the ℓ∞ output norm
    ``max_i ||J_i||_{norm*}`` (its dual ball's vertices ``±e_i``)."""
    jac = _jacobians(weights, slopes, points)
    if isinstance(seed, OutputNorm):
        assert seed is OutputNorm.LINF
        return np.linalg.norm(jac, ord=DUAL[norm], axis=2).max(axis=1)
    return np.linalg.norm(np.einsum("m,nmd->nd", seed, jac), ord=DUAL[norm], axis=1)


def _solved(lip, solver: str = "highs") -> tuple[float, np.ndarray]:
    result = get(solver).solve(lip.model, SolveOptions())
    assert result.termination is Termination.OPTIMAL and result.bound is not None
    point = np.array([result.values.get(v, 0.0) for v in lip.x])
    return float(result.bound), np.clip(point, -1.0, 1.0)


def _near(point: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dense samples within 1e-4 of ``point`` in the box: the optimal region meets the ball
    around its maximiser in a cone, which some of them hit."""
    return np.clip(point + rng.uniform(-1e-4, 1e-4, size=(20000, point.size)), -1.0, 1.0)


def _check(value: float, point: np.ndarray, weights, slopes, seed, norm: InputNorm) -> None:
    sampled = _norms(weights, slopes, GRID, seed, norm).max()
    local = _norms(weights, slopes, _near(point, np.random.default_rng(0)), seed, norm).max()
    scale = max(1.0, value)
    assert value >= sampled - TOLERANCE * scale  # an upper bound on every gradient
    assert value == pytest.approx(max(sampled, local), abs=TOLERANCE * scale)  # attained


CASES = [
    (pool, norm, form)
    for pool in POOLS
    for norm in (InputNorm.LINF, InputNorm.L1)
    for form in ("backward", "forward")
]


@pytest.mark.parametrize(("pool", "norm", "form"), CASES)
def test_mip_optimum_is_the_largest_gradient_norm(pool: str, norm: InputNorm, form: str) -> None:
    """Fixed c, ℓ∞ and ℓ1 input norms, both formulations, interval bounds, three seeds."""
    for seed in range(3):
        weights, slopes = _weights(seed, [2, 5, 4, 2], pool)
        net, c = _network(weights, slopes), np.array([1.0, -0.5])
        bounds = propagate(net, BOX, c, method="interval")
        lip = build(net, BOX, c, norm, bounds, ModelSpec(formulation=form))
        value, point = _solved(lip)
        _check(value, point, weights, slopes, c, norm)


@pytest.mark.parametrize("pool", list(POOLS))
def test_output_norm_model(pool: str) -> None:
    """The ℓ∞ output norm (``w`` over the ℓ1 ball jointly with x), backward formulation."""
    for seed in range(2):
        weights, slopes = _weights(10 + seed, [2, 5, 4, 2], pool)
        net = _network(weights, slopes)
        bounds = propagate(net, BOX, OutputNorm.LINF, method="interval")
        lip = build(net, BOX, OutputNorm.LINF, InputNorm.LINF, bounds)
        value, point = _solved(lip)
        _check(value, point, weights, slopes, OutputNorm.LINF, InputNorm.LINF)


@pytest.mark.skipif("scip" not in available(), reason="the exact ℓ2 objective needs SCIP")
@pytest.mark.parametrize("pool", ["identity", "abs", "uniform"])
def test_l2_quadratic_model(pool: str) -> None:
    """ℓ2 input norm: ``t <= ||g||_2^2`` maximised by SCIP; its square root is the constant."""
    weights, slopes = _weights(20, [2, 4, 3, 1], pool)
    net, c = _network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    lip = build(net, BOX, c, InputNorm.L2, bounds, ModelSpec(quadratic=True))
    squared, point = _solved(lip, "scip")
    _check(math.sqrt(max(squared, 0.0)), point, weights, slopes, c, InputNorm.L2)


@pytest.mark.parametrize(
    ("pool", "norm", "form"),
    [
        ("mix", "linf", "backward"),
        ("mix", "l1", "forward"),
        ("abs", "l2", "backward"),
        ("uniform", "linf", "forward"),
        ("leaky", "l1", "backward"),
    ],
)
def test_lipschitz_end_to_end(pool: str, norm: str, form: str) -> None:
    """``lipschitz`` with the MIP forced (no region search, split or BaB), interval bounds: the
    brute force's value (ℓ2: SCIP's quadratic objective or the refined chords), ``optimal`` and
    certified at a witness whose value is recomputed here."""
    weights, slopes = _weights(30, [2, 5, 4, 1], pool)
    net, c = _network(weights, slopes), np.array([1.0])
    result = lipschitz(
        net, BOX, norm, c, bounds="interval", formulation=form, regions=False, split=False,
        bab=False, attack=False, subnet_bounds=False,
    )  # fmt: skip
    assert result.status == "optimal" and result.exact_certified
    expected = _norms(weights, slopes, GRID, c, InputNorm.parse(norm)).max()
    assert result.value == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert result.lower is not None and result.lower <= expected * (1 + 1e-6) + 1e-6
    if result.witness is not None:
        at = _norms(weights, slopes, np.asarray(result.witness)[None, :], c, InputNorm.parse(norm))
        assert result.lower == pytest.approx(at[0], rel=1e-6, abs=1e-9)


def test_gate_products_of_a_sloped_network() -> None:
    """Two hidden layers, ℓ1 input norm: every candidate ``±g_j`` maximised as a sum of gate
    products (``D = p + q a`` expanded) gives the brute force's ``max ||g||_∞``."""
    for pool, seed in itertools.product(("mix", "uniform", "abs"), range(2)):
        weights, slopes = _weights(40 + seed, [2, 5, 4, 1], pool)
        net, c = _network(weights, slopes), np.array([1.0])
        bounds = propagate(net, BOX, c, method="interval")
        lip = build(net, BOX, c, InputNorm.L1, bounds, ModelSpec(decompose=True))
        products = gate_products(net, c, bounds.states)
        assert products is not None and products.slopes is not None
        best, best_point = -np.inf, np.zeros(2)
        for candidate in lip.candidates:
            set_products(lip.model, lip.activations, products, candidate)
            value, point = _solved(lip)
            remove_products(lip.model)
            set_candidate(lip.model, lip.gradient, candidate, None)
            if value > best:
                best, best_point = value, point
        _check(best, best_point, weights, slopes, c, InputNorm.L1)


def _binaries(model: pe.ConcreteModel) -> int:
    return sum(1 for v in model.component_data_objects(pe.Var) if v.is_binary())


@pytest.mark.parametrize("pool", ["identity", "mix", "uniform"])
def test_one_binary_per_unstable_non_identity_neuron(pool: str) -> None:
    """The forward formulation has no objective binaries: its binaries are the activations',
    one for each neuron with ``l < 0 < u`` and ``α != 1``, none for an identity neuron."""
    weights, slopes = _weights(50, [2, 8, 6, 1], pool)
    net, c = _network(weights, slopes), np.array([1.0])
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
    weights, _ = _weights(60, [2, 4, 3, 1], "relu")
    slopes = [np.ones(4), np.ones(3)]
    net, c = _network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    lip = build(net, BOX, c, InputNorm.LINF, bounds, ModelSpec(formulation="forward"))
    assert _binaries(lip.model) == 0
    value, _ = _solved(lip)
    gradient = c @ weights[2][0] @ weights[1][0] @ weights[0][0]
    assert value == pytest.approx(np.abs(gradient).sum(), rel=1e-9)


@pytest.mark.parametrize("form", ["backward", "forward"])
def test_relu_network_model_is_the_same_whatever_spells_it(tmp_path, form: str) -> None:
    """``ReLU()`` layers and ``Activation(zeros)`` layers give the same model, row for row (the
    written LP files are equal), with the same optimum."""
    for seed in range(3):
        weights, _ = _weights(70 + seed, [3, 6, 5, 1], "relu")
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
            values.append(_solved(lip)[0])
        assert texts[0] == texts[1]
        assert values[0] == values[1]


def test_bounds_without_slopes_are_refused() -> None:
    """Bounds computed as if every neuron were a ReLU (``slopes`` None) cannot build the model
    of a network with other activations: one line, not a wrong model."""
    weights, slopes = _weights(80, [2, 4, 1], "mix")
    net, c = _network(weights, slopes), np.array([1.0])
    relu_bounds = propagate(Network.from_affines(net.affine_layers), BOX, c, method="interval")
    with pytest.raises(ValueError, match="do not take the network's activations"):
        build(net, BOX, c, InputNorm.LINF, relu_bounds)


def test_default_bounds() -> None:
    """The default (linear) bounds, once they take slopes: the same optimum as brute force."""
    weights, slopes = _weights(90, [2, 5, 4, 1], "mix")
    net, c = _network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="linear")
    if bounds.slopes is None:
        pytest.skip("the linear bounds do not take slopes yet")
    lip = build(net, BOX, c, InputNorm.LINF, bounds)
    value, point = _solved(lip)
    _check(value, point, weights, slopes, c, InputNorm.LINF)


def test_prefix_network_keeps_the_slopes() -> None:
    """A sub-network ``x -> z_k`` keeps the slopes of its hidden layers (its tangent bounds are
    the Lipschitz constants of these sub-networks)."""
    weights, slopes = _weights(100, [2, 5, 4, 3, 1], "uniform")
    net = _network(weights, slopes)
    prefix = prefix_network(net, 2)
    assert len(prefix.slopes) == 2
    for got, want in zip(prefix.slopes, slopes):
        np.testing.assert_array_equal(got, want)
    x = np.random.default_rng(0).uniform(-1, 1, size=(50, 2))
    np.testing.assert_allclose(prefix.forward(x), net.pre_activations(x)[2])


def test_balanced_network_keeps_the_slopes() -> None:
    """Balancing a badly scaled neuron (a power-of-two scale, which commutes with every
    ``h = α z + (1 - α) relu(z)``) keeps the slopes and the function."""
    weights, slopes = _weights(110, [2, 4, 3, 1], "mix")
    weights[0][0][1] *= 1e6
    weights[0][1][1] *= 1e6
    weights[1][0][:, 1] *= 1e-6
    net = _network(weights, slopes)
    balanced_net = balanced(net, 1e3)
    assert balanced_net is not net
    for got, want in zip(balanced_net.slopes, slopes):
        np.testing.assert_array_equal(got, want)
    x = np.random.default_rng(1).uniform(-1, 1, size=(100, 2))
    np.testing.assert_allclose(balanced_net.forward(x), net.forward(x), rtol=1e-12)


@pytest.mark.parametrize("relax", [False, True])
def test_exported_model(tmp_path, relax: bool) -> None:
    """The export path (``build_model``, then the LP file): with interval bounds the written
    model of a sloped network names ``r{k}`` and solves to the brute force's value (its LP
    relaxation to at least it); with the default linear bounds, until they take slopes, a
    one-line refusal."""
    weights, slopes = _weights(120, [2, 5, 4, 1], "abs")
    net, c = _network(weights, slopes), np.array([1.0])
    lip = build_model(net, BOX, "linf", c, bounds="interval", relax=relax)
    text = write_model(lip.model, tmp_path / "sloped.lp").read_text()
    assert "r1(" in text or "r2(" in text
    value = _solved(lip)[0]
    expected = _norms(weights, slopes, GRID, c, InputNorm.LINF).max()
    if relax:
        assert value >= expected - TOLERANCE
    else:
        assert value == pytest.approx(expected, rel=TOLERANCE)
    if propagate(net, BOX, c, method="linear").slopes is None:
        with pytest.raises(ValueError, match="linear bounds do not take"):
            build_model(net, BOX, "linf", c)


def test_liplp_bounds_the_constant() -> None:
    """LipLP (the relaxation, interval bounds) of a sloped network is at least the constant."""
    weights, slopes = _weights(130, [2, 5, 4, 1], "uniform")
    net, c = _network(weights, slopes), np.array([1.0])
    estimate = liplp.estimate(net, BOX, "linf", c)
    assert estimate.value >= _norms(weights, slopes, GRID, c, InputNorm.LINF).max() - TOLERANCE


LEVERS = [
    ("linf", {"sign_split": True, "formulation": "backward"}),
    ("linf", {"gate_split": True, "formulation": "forward"}),
    ("linf", {"gate_split": True, "formulation": "backward"}),
    ("l1", {"decompose": True, "products": True, "formulation": "backward"}),
    ("l1", {"decompose": True, "products": False, "formulation": "backward"}),
    ("linf", {"split": True, "formulation": "backward"}),
]


@pytest.mark.parametrize(("norm", "levers"), LEVERS, ids=lambda v: str(v))
def test_unions_of_models(norm: str, levers: dict) -> None:
    """The unions built on the model (sign and gate halves, the ℓ1 candidates with and without
    gate products, the domain split) give the brute force's value on sloped networks."""
    for pool in ("mix", "uniform"):
        weights, slopes = _weights(140, [2, 6, 5, 1], pool)
        net, c = _network(weights, slopes), np.array([1.0])
        options = dict(bounds="interval", regions=False, bab=False, attack=False, split=False)
        result = lipschitz(net, BOX, norm, c, **{**options, "subnet_bounds": False, **levers})
        expected = _norms(weights, slopes, GRID, c, InputNorm.parse(norm)).max()
        assert result.status == "optimal"
        assert result.value == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_subnet_tangent_bounds_hold_on_sloped_networks() -> None:
    """The sub-network refinement (sub-MIPs of prefixes that keep the slopes) bounds every
    sampled tangent: ``|t_k[i]| <= ||∇z_k[i](x)||_1`` over the unit box of directions."""
    weights, slopes = _weights(150, [2, 5, 4, 3, 1], "mix")
    net, c = _network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    tangent, stats = subnet_tangent_bounds(net, BOX, bounds, "linf", get("highs"), 20.0)
    assert stats["sub_mips"] + stats["searched"] > 0
    points = np.random.default_rng(2).uniform(-1.0, 1.0, size=(20000, 2))
    for k in range(len(slopes)):
        prefix = [*weights[: k + 1]]
        reach = np.abs(_jacobians(prefix, slopes[:k], points)).sum(axis=2).max(axis=0)
        assert np.all(reach <= tangent.upper[k] + 1e-7)
        assert np.all(-reach >= tangent.lower[k] - 1e-7)


ORACLE_CASES = [("mix", "linf"), ("uniform", "l1"), ("abs", "linf"), ("identity", "l1")]


@pytest.mark.parametrize(("pool", "norm"), ORACLE_CASES)
def test_four_inputs_against_the_oracle(pool: str, norm: str) -> None:
    """Four inputs, ten hidden neurons, the default (linear) bounds: both formulations' optimum
    is the oracle's exact constant (its full-dimensional regions, enumerated)."""
    weights, slopes = _weights(160, [4, 6, 4, 1], pool)
    net, c = _network(weights, slopes), np.array([1.0])
    box = Box(-np.ones(4), np.ones(4))
    truth = brute_force_lipschitz(weights, ("box", -np.ones(4), np.ones(4)), c, norm, slopes=slopes)
    bounds = propagate(net, box, c)
    assert bounds.slopes is not None
    for form in ("backward", "forward"):
        lip = build(net, box, c, norm, bounds, ModelSpec(formulation=form))
        value, _ = _solved(lip)
        assert value == pytest.approx(truth.value, rel=TOLERANCE, abs=TOLERANCE)
