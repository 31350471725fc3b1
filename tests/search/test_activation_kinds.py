"""The pattern searches on per-neuron activations ``h = α z + (1 - α) relu(z)`` (#46).

Truth is independent of lipopt: the network's gradient is recomputed here in numpy from its
weights and slopes (``D = 1`` where ``z > 0``, else ``α``), on a fine grid of the domain (with
one input, 20 001 points: every region of these small networks is hit) and at the witnesses
lipopt returns; closed forms for the margin LP and the identity networks. A proven upper bound
never falls below a sampled gradient norm, a witness lies in the domain and its recomputed norm
is the reported lower bound, and an upper bound equal to that attained value is the constant.
"""

from __future__ import annotations

import importlib
from dataclasses import replace

import numpy as np
import pytest

from lipopt import Affine, Box, L1Ball, L2Ball, LinfBall, Network, Polytope, lipschitz
from lipopt.activation import Activation
from lipopt.bounds.interval import interval_bounds
from lipopt.bounds.relaxation import activation_relaxation
from lipopt.kinks import is_differentiable_at, is_inside_a_region
from lipopt.norms import InputNorm
from lipopt.search.activation_bab import BabNode, activation_bab
from lipopt.search.activation_rules import branch_neuron
from lipopt.search.kinds import identity_active, unstable_count
from lipopt.search.regions import search_regions
from lipopt.verify import Dimension, check_region
from tests.oracle import brute_force_lipschitz, from_lipopt

attack = importlib.import_module("lipopt.heuristics.attack")
climb = importlib.import_module("lipopt.heuristics.climb")

#: the named kinds: ReLU, identity, two leaky slopes, |z|
KINDS = (0.0, 1.0, 0.1, 0.25, -1.0)


# ------------------------------------------------------------------ independent truth
def _slopes(rng: np.random.Generator, width: int) -> np.ndarray:
    """One α per neuron: a named kind, or (one in five) a uniform real in [-1.5, 1.5]."""
    named = rng.choice(KINDS, size=width)
    return np.where(rng.random(width) < 0.2, rng.uniform(-1.5, 1.5, width), named)


def _weights(seed: int, dims: list[int]) -> tuple[list[tuple[np.ndarray, np.ndarray]], list]:
    rng = np.random.default_rng(seed)
    layers = [
        (rng.normal(size=(dims[i + 1], dims[i])), 0.5 * rng.normal(size=dims[i + 1]))
        for i in range(len(dims) - 1)
    ]
    return layers, [_slopes(rng, width) for width in dims[1:-1]]


def _network(layers: list, slopes: list) -> Network:
    return Network.from_affines([Affine(w, b) for w, b in layers], slopes)


def _gradients(layers: list, slopes: list, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Gradients of ``c^T f`` at a batch (n, d), by the chain rule written out here."""
    h, derivs = x, []
    for (w, b), alpha in zip(layers[:-1], slopes):
        z = h @ w.T + b
        derivs.append(np.where(z > 0, 1.0, alpha))
        h = alpha * z + (1.0 - alpha) * np.maximum(z, 0.0)
    y = np.broadcast_to(layers[-1][0].T @ c, (x.shape[0], layers[-1][0].shape[1]))
    for (w, _), deriv in zip(reversed(layers[:-1]), reversed(derivs)):
        y = (y * deriv) @ w
    return y


def _gates(layers: list, slopes: list, x: np.ndarray) -> list[np.ndarray]:
    """The pattern ``z > 0`` at one point, per hidden layer."""
    h, gates = x, []
    for (w, b), alpha in zip(layers[:-1], slopes):
        z = w @ h + b
        gates.append(z > 0)
        h = alpha * z + (1.0 - alpha) * np.maximum(z, 0.0)
    return gates


def _norm(g: np.ndarray, norm: str) -> np.ndarray:
    order = {"linf": 1, "l1": np.inf, "l2": 2}[norm]  # the dual norm of the input norm
    return np.linalg.norm(g, ord=order, axis=-1)


def _grid(domain, d: int) -> np.ndarray:
    """A fine grid of the domain's bounding box (20 001 points for one input, 401² for two,
    61³ for three), kept where it lies in the domain (checked here from its definition)."""
    lower, upper = domain.bounding_box()
    count = {1: 20_001, 2: 401}.get(d, 61)
    axes = [np.linspace(lo, hi, count) for lo, hi in zip(lower, upper)]
    points = np.stack(np.meshgrid(*axes), axis=-1).reshape(-1, d)
    if isinstance(domain, (L1Ball, L2Ball)):
        order = 1 if isinstance(domain, L1Ball) else 2
        distance = np.linalg.norm(points - domain.center, ord=order, axis=1)
        points = points[distance <= domain.radius]
    if isinstance(domain, Polytope):
        points = points[np.all(points @ domain.A.T <= domain.b, axis=1)]
    return points


def _case(seed: int, domain_kind: str, inputs: tuple[int, int] = (1, 3), widest: int = 5):
    """A random α network with 1-2 inputs (``inputs``: the range) and 1-2 hidden layers of 1-4
    neurons (``widest``: the bound above), and a domain."""
    rng = np.random.default_rng(1000 + seed)
    d = int(rng.integers(*inputs))
    dims = [d, *(int(w) for w in rng.integers(1, widest, size=int(rng.integers(1, 3)))), 1]
    layers, slopes = _weights(seed, dims)
    center = rng.uniform(-0.5, 0.5, d)
    domain = {
        "box": Box(center - 1.0, center + rng.uniform(0.2, 1.0, d)),
        "linf": LinfBall(center, 0.8),
        "l1": L1Ball(center, 1.0),
        "l2": L2Ball(center, 0.9),
        "polytope": Polytope(np.ones((1, d)), [0.3 + center.sum()], center - 1.0, center + 1.0),
    }[domain_kind]
    return layers, slopes, domain, np.ones(1)


def _check_answer(result, layers, slopes, domain, c, norm: str, exact: bool) -> None:
    """Upper >= every sampled norm; the witness in the domain attains ``lower``; exact answers
    equal their attained value, and with one input the grid's maximum."""
    d = layers[0][0].shape[1]
    sampled = float(np.max(_norm(_gradients(layers, slopes, _grid(domain, d), c), norm)))
    assert result.value >= sampled - 1e-9 * max(1.0, sampled)
    assert result.witness is not None and domain.contains(result.witness)
    attained = float(_norm(_gradients(layers, slopes, result.witness[None, :], c), norm)[0])
    assert attained == pytest.approx(result.lower, rel=1e-9, abs=1e-12)
    assert result.lower <= result.value * (1 + 1e-9)
    if exact:
        assert result.status == "optimal"
        assert result.value == pytest.approx(attained, rel=1e-6, abs=1e-9)
        if d == 1:  # the grid is practically exhaustive
            assert result.value == pytest.approx(sampled, rel=1e-6, abs=1e-9)


# ------------------------------------------------------------------ the searches end to end
@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("domain_kind", ["box", "linf", "polytope"])
@pytest.mark.parametrize("seed", range(10))
def test_region_search_on_slopes_equals_grid(seed, domain_kind, norm):
    layers, slopes, domain, c = _case(seed, domain_kind)
    net = _network(layers, slopes)
    result = lipschitz(net, domain, norm, c, regions=True, bounds="interval", split=False)
    assert "regions" in result.model_stats and result.model_stats["binaries"] == 0
    _check_answer(result, layers, slopes, domain, c, norm, exact=True)


@pytest.mark.parametrize("norm", ["linf", "l1", "l2"])
@pytest.mark.parametrize("domain_kind", ["box", "polytope"])
@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("bounds", ["interval", "linear"])
def test_region_search_on_slopes_equals_oracle(bounds, seed, domain_kind, norm):
    """2-3 inputs, up to 7 neurons a layer: exact against the oracle's region enumeration."""
    layers, slopes, domain, c = _case(50 + seed, domain_kind, inputs=(2, 4), widest=8)
    net = _network(layers, slopes)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    result = lipschitz(net, domain, norm, c, regions=True, bounds=bounds, split=False)
    assert result.status == "optimal" and result.exact_certified
    assert result.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    _check_answer(result, layers, slopes, domain, c, norm, exact=True)


@pytest.mark.parametrize(
    "domain_kind, norm", [("box", "linf"), ("l1", "l1"), ("l2", "l2"), ("linf", "l1")]
)
@pytest.mark.parametrize("seed", range(4))
def test_activation_bab_on_slopes_is_sound(seed, domain_kind, norm):
    layers, slopes, domain, c = _case(seed, domain_kind)
    result = lipschitz(_network(layers, slopes), domain, norm, c, bab=True, bounds="interval")
    _check_answer(result, layers, slopes, domain, c, norm, exact=result.status == "optimal")


# ------------------------------------------------------------------ identity neurons
def _identity_network(seed: int, d: int = 2) -> tuple[list, list]:
    layers, _ = _weights(seed, [d, 3, 4, 1])
    return layers, [np.ones(3), np.ones(4)]


def _product(layers: list, c: np.ndarray) -> np.ndarray:
    grad = layers[-1][0].T @ c
    for w, _ in reversed(layers[:-1]):
        grad = w.T @ grad
    return grad


@pytest.mark.parametrize("seed", range(3))
def test_identity_network_is_one_region(seed):
    layers, slopes = _identity_network(seed)
    net, box, c = _network(layers, slopes), Box(-np.ones(2), np.ones(2)), np.ones(1)
    found = search_regions(net, box, c, "linf", interval_bounds(net, box, c))
    assert found.complete and found.regions == 1 and found.lps == 0
    truth = float(np.abs(_product(layers, c)).sum())  # f is affine: ||W^T c||_1
    assert found.upper == pytest.approx(truth, rel=1e-12)
    assert found.lower == pytest.approx(truth, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_identity_network_is_never_split(seed):
    layers, slopes = _identity_network(seed)
    net, ball, c = _network(layers, slopes), L1Ball(np.zeros(2), 1.0), np.ones(1)
    found = activation_bab(net, ball, c, "l1")
    assert found.root_unstable == 0 and found.nodes == 0
    truth = float(np.abs(_product(layers, c)).max())
    assert found.upper == pytest.approx(truth, rel=1e-9)
    assert found.lower == pytest.approx(truth, rel=1e-9)


@pytest.mark.parametrize("rule", ["score", "layer"])
def test_identity_neurons_are_never_branched_on(rule):
    """Bounds that leave identity neurons UNSTABLE (built without the slopes): the branching
    rule still picks only neurons with a kink, the counts skip them, and with only identity
    neurons left there is nothing to split."""
    w1 = np.array([[3.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    layers = [(w1, np.zeros(3)), (np.array([[5.0, 1.0, 1.0]]), np.zeros(1))]
    box, c = Box(-np.ones(2), np.ones(2)), np.ones(1)
    net = _network(layers, [np.array([1.0, 0.1, -1.0])])
    bounds = replace(interval_bounds(net, box, c), slopes=None)  # states: all three UNSTABLE
    assert branch_neuron(bounds, rule) == (0, 0)  # blind to the slopes: the identity scores 15
    assert branch_neuron(bounds, rule, net.slopes) == (0, 1)  # 2 against |z|'s 1
    assert unstable_count(net, bounds.states) == 2
    assert identity_active(net, bounds.states)[0].tolist() == [1, 2, 2]
    only = _network(layers, [np.array([1.0, 1.0, 1.0])])
    with pytest.raises(ValueError, match="no unstable neuron"):
        branch_neuron(bounds, rule, only.slopes)
    assert unstable_count(only, bounds.states) == 0


def test_identity_neurons_beside_stable_ones_are_one_region():
    """Identity neurons whose z changes sign on the box, beside leaky neurons stable on it."""
    w1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]])
    b1 = np.array([0.0, 0.0, 5.0, -5.0])  # the last two: active, inactive on [-1, 1]^2
    layers = [(w1, b1), (np.array([[1.0, -2.0, 0.5, 3.0]]), np.zeros(1))]
    slopes = [np.array([1.0, 1.0, 0.1, 0.25])]
    net, box, c = _network(layers, slopes), Box(-np.ones(2), np.ones(2)), np.ones(1)
    found = search_regions(net, box, c, "linf", interval_bounds(net, box, c))
    assert found.complete and found.regions == 1
    # gradient: (1 + 0.5 + 0.25 * 3 * 0.5, -2 + 0.5 - 0.25 * 3) = (1.875, -2.25)
    assert found.upper == pytest.approx(1.875 + 2.25, rel=1e-12)


# ------------------------------------------------------------------ kinks and the margin LP
def test_identity_neuron_at_zero_is_no_kink():
    """z = 0 on an identity neuron: differentiable; on any other slope: a kink."""
    w1, b1 = np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 3.0])
    layers = [(w1, b1), (np.array([[2.0, 1.0]]), np.zeros(1))]
    point, box = np.array([0.25, 0.25]), Box(-np.ones(2), np.ones(2))  # z = (0, 3.5)
    identity = _network(layers, [np.array([1.0, 0.1])])
    assert is_differentiable_at(identity, point)
    assert is_inside_a_region(identity, box, point)
    for alpha in (0.0, 0.1, -1.0, 1.3):
        kinked = _network(layers, [np.array([alpha, 0.1])])
        assert not is_differentiable_at(kinked, point)
        assert not is_inside_a_region(kinked, box, point)


def test_margin_lp_reads_inactive_neurons_as_alpha_z():
    """|x| then ``|x| - 0.5``: on x < 0 the first neuron gives ``-x`` (not 0), so the pattern
    (inactive, active) is the full-dimensional region [-1, -0.5)."""
    layers = [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.array([-0.5]))]
    layers.append((np.array([[1.0]]), np.zeros(1)))
    net = _network(layers, [np.array([-1.0]), np.array([0.0])])
    check = check_region(net, [np.array([0.0]), np.array([1.0])], Box([-1.0], [1.0]))
    assert check.dimension is Dimension.FULL and check.point is not None
    assert -1.0 <= check.point[0] < -0.5
    empty = check_region(net, [np.array([0.0]), np.array([0.0])], Box([-1.0], [-0.75]))
    assert empty.dimension is Dimension.LOWER  # there |x| - 0.5 >= 0.25 > 0


def test_margin_lp_gives_identity_neurons_no_row():
    """An identity neuron's gate changes nothing: either value gives the same whole region."""
    layers = [(np.array([[1.0], [1.0]]), np.array([0.0, 0.5])), (np.ones((1, 2)), np.zeros(1))]
    net, box = _network(layers, [np.array([1.0, 0.0])]), Box([-1.0], [1.0])
    for gate in (0.0, 1.0):
        check = check_region(net, [np.array([gate, 1.0])], box)
        assert check.dimension is Dimension.FULL
        # only z_2 = x + 0.5 > 0 cuts the box: (-0.5, 1], whose deepest point is 0.75 inside
        assert check.margin == pytest.approx(0.75, rel=1e-6)
    relu = _network(layers, [np.array([0.0, 0.0])])  # a ReLU's gate 1 cuts at x = 0 instead
    assert check_region(relu, [np.array([1.0, 1.0])], box).margin == pytest.approx(0.5, rel=1e-6)


# ------------------------------------------------------------------ pieces
@pytest.mark.parametrize("seed", range(5))
def test_activation_relaxation_encloses_the_activation(seed):
    rng = np.random.default_rng(seed)
    alpha = np.concatenate([np.array(KINDS), rng.uniform(-1.5, 1.5, 15)])
    lower = rng.uniform(-2.0, 1.0, alpha.size)
    upper = lower + rng.uniform(0.0, 3.0, alpha.size)
    s_up, t_up, s_lo, t_lo = activation_relaxation(lower, upper, alpha)
    z = lower + (upper - lower) * rng.random((500, alpha.size))
    z[:2] = lower, upper
    h = alpha * z + (1.0 - alpha) * np.maximum(z, 0.0)
    slack = 1e-12 * (1.0 + np.abs(z))
    assert np.all(s_lo * z + t_lo <= h + slack) and np.all(h <= s_up * z + t_up + slack)


@pytest.mark.parametrize("seed", range(4))
def test_attack_flip_predicts_the_flipped_pattern(seed):
    """A flip's predicted norm is exactly the norm of the gradient with that neuron's derivative
    switched between α and 1; identity neurons are never candidates."""
    layers, slopes = _weights(seed, [2, 4, 3, 1])
    slopes[0][0] = 1.0
    net, box, c = _network(layers, slopes), Box(-np.ones(2), np.ones(2)), np.ones(1)
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, (3, 2))
    value, _, _, _ = attack._flip_candidates(attack.problem(net, box, "linf", c), x)
    assert np.all(value[:, 0] == -np.inf)
    flat = np.concatenate(slopes)
    for r in range(x.shape[0]):
        gates = np.concatenate(_gates(layers, slopes, x[r]))
        for n in np.flatnonzero(flat != 1.0):
            flipped = gates.copy()
            flipped[n] = not flipped[n]
            grad, offset = layers[-1][0].T @ c, flat.size
            for (w, _), alpha in zip(reversed(layers[:-1]), reversed(slopes)):
                offset -= alpha.size
                grad = w.T @ (np.where(flipped[offset : offset + alpha.size], 1.0, alpha) * grad)
            assert value[r, n] == pytest.approx(np.abs(grad).sum(), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_pattern_climb_on_slopes_attains_its_value(seed):
    layers, slopes = _weights(seed, [2, 4, 3, 1])
    net, box, c = _network(layers, slopes), Box(-np.ones(2), np.ones(2)), np.ones(1)
    starts = list(box.sample(4, np.random.default_rng(seed)))
    found = climb.pattern_climb(net, box, c, "linf", starts, max_checks=50, max_flips=2)
    assert found is not None and box.contains(found.point)
    attained = float(_norm(_gradients(layers, slopes, found.point[None, :], c), "linf")[0])
    assert found.value == pytest.approx(attained, rel=1e-9)
    exact = search_regions(net, box, c, "linf", interval_bounds(net, box, c))
    assert exact.complete and found.value <= exact.upper * (1 + 1e-9)


def test_climb_never_flips_identity_gates():
    batch = climb._flips([np.array([1.0, 0.0, 1.0])], 1, movable=np.array([True, False, True]))
    assert batch is not None
    assert np.array_equal(batch[0], np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))


def test_balancing_keeps_the_slopes():
    balance = importlib.import_module("lipopt.balance")
    w1 = np.array([[1e6, -2e6], [1.0, 1.0]])
    layers = [(w1, np.array([1e5, 0.5])), (np.array([[1e-6, 2.0]]), np.zeros(1))]
    slopes = [np.array([-1.0, 0.25])]
    net = _network(layers, slopes)
    scaled = balance.balanced(net, 16.0)
    assert scaled is not net
    assert isinstance(scaled.layers[1], Activation)
    assert np.array_equal(scaled.slopes[0], slopes[0])
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (50, 2))
    assert np.array_equal(scaled.forward(x), net.forward(x))


# ------------------------------------------------------------------ against the oracle, larger
@pytest.mark.parametrize("domain_kind, norm", [("l1", "l1"), ("l2", "l2"), ("box", "linf")])
@pytest.mark.parametrize("seed", range(3))
def test_activation_bab_on_slopes_equals_oracle(seed, domain_kind, norm):
    """3 inputs, hidden layers of 10 and 8 neurons (200-400 regions): the activation branch and
    bound, with the MIP on its small parts, closes on the oracle's value."""
    layers, slopes = _weights(200 + seed, [3, 10, 8, 1])
    net, c = _network(layers, slopes), np.ones(1)
    domain = {"l1": L1Ball, "l2": L2Ball}.get(domain_kind, LinfBall)(np.zeros(3), 1.0)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    result = lipschitz(net, domain, norm, c, bab=True, time_limit=120)
    assert result.status == "optimal" and result.exact_certified
    assert result.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    _check_answer(result, layers, slopes, domain, c, norm, exact=True)


@pytest.mark.parametrize("domain_kind, norm", [("l1", "l1"), ("box", "linf")])
@pytest.mark.parametrize("seed", range(3))
def test_activation_bab_splits_then_parts_equal_oracle(seed, domain_kind, norm, monkeypatch):
    """The hand-off lowered to 3 unstable neurons: parts are split first, then solved by the
    MIP with sign rows on the model's own pre-activations (an inactive α neuron read as α z)."""
    monkeypatch.setattr(importlib.import_module("lipopt.policy"), "BAB_MIP_AT", 3)
    layers, slopes = _weights(300 + seed, [3, 8, 8, 1])
    net, c = _network(layers, slopes), np.ones(1)
    domain = L1Ball(np.zeros(3), 1.0) if domain_kind == "l1" else LinfBall(np.zeros(3), 1.0)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    result = lipschitz(net, domain, norm, c, bab=True, time_limit=120)
    assert result.status == "optimal" and result.model_stats["bab_nodes"] > 1
    assert result.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    _check_answer(result, layers, slopes, domain, c, norm, exact=True)


@pytest.mark.parametrize("seed", [404, 405, 406, 407])
def test_a_part_mip_on_slopes_stays_in_its_part(seed):
    """Random splits of a deeper layer, below first-layer neurons inactive on the box with
    ``α != 0`` (``h = α z`` in the sign rows): the part's MIP bound is above every sampled norm
    in the part (the split signs checked on z computed here), and its witness lies in it."""
    bab_parts = importlib.import_module("lipopt.strategies.bab_parts")
    split_bounds = importlib.import_module("lipopt.bounds.constrained").split_bounds
    layers, slopes = _weights(seed, [3, 8, 8, 1])
    net, c, box = _network(layers, slopes), np.ones(1), Box(np.full(3, -0.3), np.full(3, 0.3))
    query = importlib.import_module("lipopt.query").Query(net, box, InputNorm.LINF, c)
    rng = np.random.default_rng(seed)
    root = split_bounds(net, box, c, {})
    unstable = [(1, int(i)) for i in np.flatnonzero(root.states[1] == 2)]
    samples = box.sample(20_000, rng)
    z = [np.array([w @ x + b for x in samples]) for (w, b) in layers[:1]]
    h = slopes[0] * z[0] + (1.0 - slopes[0]) * np.maximum(z[0], 0.0)
    z.append(h @ layers[1][0].T + layers[1][1])
    checked = 0
    for _ in range(8):
        picks = rng.choice(len(unstable), size=min(2, len(unstable)), replace=False)
        splits = {unstable[n]: bool(rng.integers(2)) for n in picks}
        bounds = split_bounds(net, box, c, splits)
        if bounds is None:
            continue
        node = BabNode(tuple(splits.items()), bounds, np.inf, unstable_count(net, bounds.states))
        answer = bab_parts.part_solver(query, None)(node, 0.0)
        assert answer is not None
        upper, lower, witness = answer
        inside = np.ones(len(samples), dtype=bool)
        for (k, i), active in splits.items():
            inside &= (z[k][:, i] >= 0) if active else (z[k][:, i] <= 0)
        if inside.any():
            values = _norm(_gradients(layers, slopes, samples[inside], c), "linf")
            assert values.max() <= upper * (1 + 1e-9) + 1e-12
            checked += 1
        if witness is not None:
            gates = _gates(layers, slopes, witness.point)
            assert all(gates[k][i] == active for (k, i), active in splits.items())
            attained = _norm(_gradients(layers, slopes, witness.point[None, :], c), "linf")[0]
            assert attained == pytest.approx(lower, rel=1e-9)
    assert checked >= 1
