"""Sparse weight matrices (issue 29): convolutions stay sparse from the import through the
bounds and the MIP. A 28×28 input never becomes a dense 784-column matrix there: the dense
weight is never asked for. Sparse and dense storage of the same map give the same bounds,
models and constants."""

from __future__ import annotations

import io
import pickle
import warnings

import numpy as np
import pytest
from scipy import sparse

from benchmarks.margins import top_two_margin
from lipopt import Affine, LinfBall, Network, ReLU, lipschitz
from lipopt.bounds import propagate
from lipopt.lipschitz import build_model
from lipopt.network import SPARSE_MIN_ENTRIES

torch = pytest.importorskip("torch")


def _banded(rows: int, cols: int, seed: int) -> np.ndarray:
    """A matrix with three nonzeros per row, like a 1-D convolution's."""
    rng = np.random.default_rng(seed)
    weight = np.zeros((rows, cols))
    for i in range(rows):
        weight[i, [(i + j) % cols for j in range(3)]] = rng.normal(size=3)
    return weight


def test_a_convolution_like_matrix_is_stored_sparse_and_means_the_same_map():
    weight, bias = _banded(64, 64, 0), np.arange(64.0)
    affine = Affine(weight, bias)
    assert affine.is_sparse and affine.nonzeros == 192
    assert np.array_equal(affine.weight, weight)
    assert not Affine(np.ones((64, 64)), bias).is_sparse  # dense stays dense
    assert not Affine(weight[:8, :8], bias[:8]).is_sparse  # below SPARSE_MIN_ENTRIES
    assert 8 * 8 < SPARSE_MIN_ENTRIES <= 64 * 64
    kept = Affine(weight, bias, dense_only=True)
    assert not kept.is_sparse and not affine.dense().is_sparse
    again = pickle.loads(pickle.dumps(affine))
    assert again.is_sparse and np.array_equal(again.weight, weight)
    assert not pickle.loads(pickle.dumps(kept)).is_sparse
    with pytest.raises(AttributeError, match="immutable"):
        affine.bias = bias  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del affine.bias
    assert not Affine(sparse.csr_array(np.ones((64, 64))), bias).is_sparse  # dense given sparse
    with pytest.raises(ValueError):
        affine.matrix.data[0] = 1.0


def test_composition_and_row_norms_agree_with_dense_algebra():
    first, second = _banded(64, 40, 1), _banded(50, 64, 2)
    a, b = Affine(first, np.ones(64)), Affine(second, np.zeros(50))
    composed = a.then(b)
    assert np.allclose(composed.weight, second @ first)
    assert np.allclose(composed.bias, second @ np.ones(64))
    for order in (1, 2, np.inf):
        assert np.allclose(a.row_norms(order), np.linalg.norm(first, ord=order, axis=1))
    assert np.array_equal(a.row_minima(), first.min(axis=1))
    assert Affine(sparse.csr_array(first), np.zeros(64)).is_sparse


def _mnist_like_cnn() -> Network:
    """Conv(1→4, 3, stride 2) ReLU Conv(4→4, 3, stride 2) ReLU Linear(→10) on 1×28×28,
    exported by torch and imported."""
    from lipopt.io import load_onnx  # noqa: PLC0415

    torch.manual_seed(0)
    nn = torch.nn
    module = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.ReLU(), nn.Conv2d(4, 4, 3, stride=2),
                           nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10)).eval()  # fmt: skip
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.zeros(1, 1, 28, 28),), buffer, dynamo=False)
    return load_onnx(buffer.getvalue())


def test_a_28x28_cnn_is_bounded_and_modelled_without_a_dense_weight(monkeypatch):
    """The conv layers import sparse (9 of 784 entries per row of the first); the interval and
    linear bounds and both MIP formulations are built without ever asking for a dense weight,
    and they are the dense network's."""
    net = _mnist_like_cnn()
    first = net.affine_layers[0]
    assert first.is_sparse and first.in_features == 784 and first.nonzeros <= 9 * 4 * 13 * 13
    assert net.affine_layers[1].is_sparse
    dense = net.dense()
    x = np.random.default_rng(0).uniform(size=784)
    ball, c = LinfBall(x, 0.002), np.eye(10)[0] - np.eye(10)[1]
    expected = {m: propagate(dense, ball, c, method=m) for m in ("interval", "linear")}

    def refuse(self: Affine) -> np.ndarray:
        if self.is_sparse:
            raise AssertionError("a dense weight was asked for")
        return self.matrix

    monkeypatch.setattr(Affine, "weight", property(refuse))
    assert np.allclose(net.forward(x), dense.forward(x))
    for method, want in expected.items():
        got = propagate(net, ball, c, method=method)
        for ours, theirs in zip(got.pre_upper + got.grad_upper, want.pre_upper + want.grad_upper):
            assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-9)
    for formulation in ("backward", "forward"):
        model = build_model(net, ball, c=c, formulation=formulation)
        assert model is not None


def test_sparse_and_dense_storage_give_the_same_constant():
    """The bundled digits CNN (sparse conv and pooling layers) and its dense copy: the same
    exact constant over a small ball around a test image."""
    from pathlib import Path  # noqa: PLC0415

    from lipopt.io import load_onnx  # noqa: PLC0415

    models = Path(__file__).resolve().parents[1] / "models"
    net = load_onnx(models / "digits-cnn.onnx")
    assert sum(a.is_sparse for a in net.affine_layers) >= 4
    x = np.load(models / "digits-test.npz")["images"][1].reshape(-1)
    c = top_two_margin(net, x)
    values = [lipschitz(n, LinfBall(x, 0.002), c=c, regions=False) for n in (net, net.dense())]
    assert all(v.status == "optimal" for v in values)
    assert values[0].value == pytest.approx(values[1].value, rel=1e-6)


def test_a_network_of_sparse_layers_chains_and_canonicalises():
    a = Affine(_banded(64, 64, 3), np.zeros(64))
    b = Affine(_banded(64, 64, 4), np.ones(64))
    net = Network.from_layers([a, b, ReLU(), a])  # a then b compose into one map
    assert net.hidden_widths == (64,)
    x = np.random.default_rng(1).normal(size=64)
    expected = a.weight @ np.maximum(b.weight @ (a.weight @ x) + 1.0, 0.0)
    assert np.allclose(net.forward(x), expected)


def test_dense_up_to_a_size_keeps_the_larger_matrices_sparse():
    """``Network.dense(max_entries)`` (the branch and bound's node bounds hold small sparse
    matrices dense): the first conv (676 x 784) stays sparse, the second (144 x 676) becomes
    dense, and the map is the same."""
    net = _mnist_like_cnn()
    part = net.dense(max_entries=200_000)
    assert [a.is_sparse for a in net.affine_layers] == [True, True, False]
    assert [a.is_sparse for a in part.affine_layers] == [True, False, False]
    assert not any(a.is_sparse for a in net.dense().affine_layers)
    x = np.random.default_rng(2).uniform(size=(5, 784))
    assert np.allclose(part.forward(x), net.forward(x), rtol=1e-12, atol=1e-12)


def test_the_branch_and_bound_answers_alike_with_small_layers_dense(monkeypatch):
    """The activation branch and bound on a network of two sparse (banded, 64 x 64) layers,
    with its node bounds on the sparse layers and on dense copies
    (``ActivationBabOptions.dense_below``): the children's bounds get the dense copy and the
    sign-group bound the sparse layers; both runs finish, with the same value, attained at
    their witnesses, and no sampled gradient in the ball exceeds it."""
    from lipopt.search import activation_bab as search  # noqa: PLC0415
    from lipopt.search.activation_bab import ActivationBabOptions, activation_bab  # noqa: PLC0415

    seen: dict[str, set[tuple[bool, ...]]] = {"split_bounds": set(), "shortlist_bound": set()}

    def recording(name):
        original = getattr(search, name)

        def record(network, *args, **kwargs):
            seen[name].add(tuple(a.is_sparse for a in network.affine_layers))
            return original(network, *args, **kwargs)

        monkeypatch.setattr(search, name, record)

    recording("split_bounds")
    recording("shortlist_bound")

    rng = np.random.default_rng(5)
    first = Affine(_banded(64, 64, 5), 0.1 * rng.normal(size=64))
    second = Affine(_banded(64, 64, 6), 0.1 * rng.normal(size=64))
    last = Affine(rng.normal(size=(1, 64)), np.zeros(1))
    net = Network.from_layers([first, ReLU(), second, ReLU(), last])
    assert [a.is_sparse for a in net.affine_layers] == [True, True, False]
    x, c = rng.uniform(-1.0, 1.0, size=64), np.ones(1)
    ball = LinfBall(x, 0.15)
    outs = []
    for dense_below in (0, 1 << 16):
        options = ActivationBabOptions(sign_group=8, split_cuts=True, dense_below=dense_below)
        for kept in seen.values():
            kept.clear()
        out = activation_bab(net, ball, c, "linf", options=options)
        node_layers = (False, False, False) if dense_below else (True, True, False)
        assert seen == {"split_bounds": {node_layers}, "shortlist_bound": {(True, True, False)}}
        assert out.status == "optimal" and out.witness is not None and out.nodes > 0
        assert out.lower == pytest.approx(np.abs(net.gradients(out.witness, c)).sum(), rel=1e-9)
        outs.append(out)
    assert outs[0].upper == pytest.approx(outs[1].upper, rel=1e-9)
    points = x + 0.15 * rng.uniform(-1.0, 1.0, size=(20_000, x.size))
    sampled = np.abs(net.gradients(points, c)).sum(axis=1).max()
    assert sampled <= outs[1].upper * (1.0 + 1e-9)


def test_the_planned_branch_and_bound_takes_the_policys_dense_threshold():
    from dataclasses import replace  # noqa: PLC0415

    from lipopt.config import LEVER_DEFAULTS  # noqa: PLC0415
    from lipopt.configure import configure  # noqa: PLC0415
    from lipopt.plan import Facts, plan  # noqa: PLC0415
    from lipopt.plan.nodes import ActivationBab  # noqa: PLC0415
    from lipopt.policy import Policy  # noqa: PLC0415
    from tests.helpers import random_network  # noqa: PLC0415

    net = random_network(np.random.default_rng(0), [4, 6, 6, 2])
    levers = {**LEVER_DEFAULTS, "time_limit": 60.0, "bab": True}
    facts = Facts(2, True, frozenset({"highs", "scip"}))
    for threshold in (Policy.current().bab_dense_max_entries, 123):
        policy = replace(Policy.current(), bab_dense_max_entries=threshold)
        query, config = configure(
            net, LinfBall(np.full(4, 0.5), 0.1), "linf", (np.ones(2), None), levers, policy
        )
        node = plan(query, config, facts, policy)
        assert isinstance(node, ActivationBab) and node.options.dense_below == threshold
