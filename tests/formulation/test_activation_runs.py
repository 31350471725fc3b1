"""The stages around the MIP on networks with per-neuron slopes (#46): ``lipschitz`` with the
MIP forced and with its unions (halves, candidates, products, domain split), the export path,
LipLP, balancing, and the sub-networks of the forward model's tangent bounds, each against the
brute force of :mod:`tests.formulation.activation_cases`.
"""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import build_model, lipschitz
from lipopt.balance import balanced
from lipopt.bounds import propagate
from lipopt.estimators import liplp
from lipopt.norms import InputNorm
from lipopt.search.subnets import prefix_network, subnet_tangent_bounds
from lipopt.solvers import get
from lipopt.solvers.export import write_model
from tests.formulation.activation_cases import (
    BOX,
    GRID,
    TOLERANCE,
    jacobians,
    objective_values,
    sloped_network,
    sloped_weights,
    solved,
)  # fmt: skip


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
    weights, slopes = sloped_weights(30, [2, 5, 4, 1], pool)
    net, c = sloped_network(weights, slopes), np.array([1.0])
    result = lipschitz(
        net, BOX, norm, c, bounds="interval", formulation=form, regions=False, split=False,
        bab=False, attack=False, subnet_bounds=False,
    )  # fmt: skip
    assert result.status == "optimal" and result.exact_certified
    expected = objective_values(weights, slopes, GRID, c, InputNorm.parse(norm)).max()
    assert result.value == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert result.lower is not None and result.lower <= expected * (1 + 1e-6) + 1e-6
    if result.witness is not None:
        witness = np.asarray(result.witness)[None, :]
        at = objective_values(weights, slopes, witness, c, InputNorm.parse(norm))
        assert result.lower == pytest.approx(at[0], rel=1e-6, abs=1e-9)


def test_prefix_network_keeps_the_slopes() -> None:
    """A sub-network ``x -> z_k`` keeps the slopes of its hidden layers (its tangent bounds are
    the Lipschitz constants of these sub-networks)."""
    weights, slopes = sloped_weights(100, [2, 5, 4, 3, 1], "uniform")
    net = sloped_network(weights, slopes)
    prefix = prefix_network(net, 2)
    assert len(prefix.slopes) == 2
    for got, want in zip(prefix.slopes, slopes):
        np.testing.assert_array_equal(got, want)
    x = np.random.default_rng(0).uniform(-1, 1, size=(50, 2))
    np.testing.assert_allclose(prefix.forward(x), net.pre_activations(x)[2])


def test_balanced_network_keeps_the_slopes() -> None:
    """Balancing a badly scaled neuron (a power-of-two scale, which commutes with every
    ``h = α z + (1 - α) relu(z)``) keeps the slopes and the function."""
    weights, slopes = sloped_weights(110, [2, 4, 3, 1], "mix")
    weights[0][0][1] *= 1e6
    weights[0][1][1] *= 1e6
    weights[1][0][:, 1] *= 1e-6
    net = sloped_network(weights, slopes)
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
    weights, slopes = sloped_weights(120, [2, 5, 4, 1], "abs")
    net, c = sloped_network(weights, slopes), np.array([1.0])
    lip = build_model(net, BOX, "linf", c, bounds="interval", relax=relax)
    text = write_model(lip.model, tmp_path / "sloped.lp").read_text()
    assert "r1(" in text or "r2(" in text
    value = solved(lip)[0]
    expected = objective_values(weights, slopes, GRID, c, InputNorm.LINF).max()
    if relax:
        assert value >= expected - TOLERANCE
    else:
        assert value == pytest.approx(expected, rel=TOLERANCE)
    if propagate(net, BOX, c, method="linear").slopes is None:
        with pytest.raises(ValueError, match="linear bounds do not take"):
            build_model(net, BOX, "linf", c)


def test_liplp_bounds_the_constant() -> None:
    """LipLP (the relaxation, interval bounds) of a sloped network is at least the constant."""
    weights, slopes = sloped_weights(130, [2, 5, 4, 1], "uniform")
    net, c = sloped_network(weights, slopes), np.array([1.0])
    estimate = liplp.estimate(net, BOX, "linf", c)
    expected = objective_values(weights, slopes, GRID, c, InputNorm.LINF).max()
    assert estimate.value >= expected - TOLERANCE


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
        weights, slopes = sloped_weights(140, [2, 6, 5, 1], pool)
        net, c = sloped_network(weights, slopes), np.array([1.0])
        options = dict(bounds="interval", regions=False, bab=False, attack=False, split=False)
        result = lipschitz(net, BOX, norm, c, **{**options, "subnet_bounds": False, **levers})
        expected = objective_values(weights, slopes, GRID, c, InputNorm.parse(norm)).max()
        assert result.status == "optimal"
        assert result.value == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_subnet_tangent_bounds_hold_on_sloped_networks() -> None:
    """The sub-network refinement (sub-MIPs of prefixes that keep the slopes) bounds every
    sampled tangent: ``|t_k[i]| <= ||∇z_k[i](x)||_1`` over the unit box of directions."""
    weights, slopes = sloped_weights(150, [2, 5, 4, 3, 1], "mix")
    net, c = sloped_network(weights, slopes), np.array([1.0])
    bounds = propagate(net, BOX, c, method="interval")
    tangent, stats = subnet_tangent_bounds(net, BOX, bounds, "linf", get("highs"), 20.0)
    assert stats["sub_mips"] + stats["searched"] > 0
    points = np.random.default_rng(2).uniform(-1.0, 1.0, size=(20000, 2))
    for k in range(len(slopes)):
        prefix = [*weights[: k + 1]]
        reach = np.abs(jacobians(prefix, slopes[:k], points)).sum(axis=2).max(axis=0)
        assert np.all(reach <= tangent.upper[k] + 1e-7)
        assert np.all(-reach >= tangent.lower[k] - 1e-7)
