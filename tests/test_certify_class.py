"""The class-specific cross-norm ``×(i)`` (``certify(method="class")``, paper eqs. 118-119):
its dual ball, its exact constant against the brute-force oracle, where its radius falls among
the other methods, and the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import linprog

from lipopt import Affine, L1Ball, LinfBall, Network, ReLU, certify
from lipopt.certify import class_network, class_vertices, predicted_class
from lipopt.cli import main
from lipopt.lipschitz import LipschitzError
from tests.helpers import random_network, save_onnx
from tests.oracle import brute_force_lipschitz, from_lipopt

METHODS = ("cross", "class", "naive", "pairwise")


def _support(z: np.ndarray, predicted: int) -> float:
    """``sup |w^T z|`` over the authors' H-description of P(i) (lipMIP's
    ``targetCrossLipschitz``): ``w_i = 1``, ``w_j ∈ [-1, 0]``, ``Σ_{j != i} w_j >= -1``."""
    m = len(z)
    bounds = [(1.0, 1.0) if j == predicted else (-1.0, 0.0) for j in range(m)]
    row = [[0.0 if j == predicted else -1.0 for j in range(m)]]  # -Σ w_j <= 1
    best = 0.0
    for sign in (1.0, -1.0):
        res = linprog(-sign * z, A_ub=row, b_ub=[1.0], bounds=bounds, method="highs")
        best = max(best, -float(res.fun))
    return best


@pytest.mark.parametrize("m", [2, 3, 5])
def test_class_vertices_give_the_papers_norm(m):
    """``||A z||_∞`` is the support function of P(i) at ``z`` (and of its symmetric hull)."""
    rng = np.random.default_rng(m)
    for predicted in range(m):
        vertices = class_vertices(m, predicted)
        assert vertices.shape == (m, m)
        assert np.linalg.matrix_rank(vertices) == m  # a norm, not a seminorm (Lemma 10)
        for z in rng.normal(size=(5, m)):
            assert np.abs(vertices @ z).max() == pytest.approx(_support(z, predicted), abs=1e-9)


def test_class_network_maps_the_outputs_only():
    rng = np.random.default_rng(3)
    net = random_network(rng, [3, 6, 6, 4])
    mapped = class_network(net, 2)
    x = rng.uniform(0, 1, size=(20, 3))
    assert mapped.hidden_widths == net.hidden_widths
    assert np.allclose(mapped.forward(x), net.forward(x) @ class_vertices(4, 2).T)


def _oracle(net: Network, ball, norm: str, c: np.ndarray) -> float:
    return brute_force_lipschitz(*from_lipopt(net, ball), c, norm).value


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_class_constant_is_the_oracles_max_over_its_vertices(seed, norm):
    """The one LipMIP's constant equals ``max(L(f_i), max_j L(f_i - f_j))``, each scalar
    constant from the brute-force oracle (an independent enumeration of linear regions)."""
    rng = np.random.default_rng(100 + seed)
    m = 3 + seed % 2
    net = random_network(rng, [2, 6, 6, m])
    x = rng.uniform(0, 1, size=2)
    ball = (LinfBall if norm == "linf" else L1Ball)(x, 0.3)
    res = certify(net, ball, method="class")
    assert res.statuses == {"class": "optimal"} and res.exact == {"class": True}
    i = res.predicted
    truth = max(_oracle(net, ball, norm, v) for v in class_vertices(m, i))
    assert res.lipschitz["class"] == pytest.approx(truth, rel=1e-6)
    assert res.uncapped_radius == pytest.approx(min(res.margins.values()) / truth, rel=1e-6)


@pytest.mark.parametrize("widths", [[2, 8, 8, 4], [3, 6, 6, 5], [2, 10, 3]])
def test_radii_order_cross_class_naive_pairwise(widths):
    """On exact solves, at every point: cross <= class <= naive <= pairwise (Prop. 7 and
    ``E ⊇ P(i) ∋ e_i - e_j``); several networks and so several predicted classes."""
    classes = set()
    for seed in range(4):
        rng = np.random.default_rng(seed + sum(widths))
        net = random_network(rng, widths)
        ball = LinfBall(rng.uniform(0, 1, size=widths[0]), 0.2)
        results = {m: certify(net, ball, method=m) for m in METHODS}
        for res in results.values():
            assert all(res.exact.values())
        radii = [results[m].uncapped_radius for m in METHODS]
        for smaller, larger in zip(radii, radii[1:]):
            assert smaller <= larger * (1 + 1e-7)
        classes.add(results["class"].predicted)
    assert len(classes) >= 2


def _common_mode_network(scale: float) -> Network:
    """Every logit carries the same ``scale * relu(x_0 - x_1)``: the differences cancel it,
    ``f_i`` keeps it (what cross-entropy cannot see)."""
    rng = np.random.default_rng(5)
    base = random_network(rng, [2, 6, 3])
    first, last = base.affine_layers
    hidden = Affine(np.vstack([first.weight, [1.0, -1.0]]), np.append(first.bias, 0.0))
    out = Affine(np.hstack([last.weight, np.full((3, 1), scale)]), last.bias)
    return Network.from_layers([hidden, ReLU(), out])


def test_the_e_i_vertex_counts():
    """Where ``L(f_i)`` is the largest, the class constant is it (above naive's max_j
    L(f_ij)), as the paper's definition has it: the radius falls strictly below naive's."""
    net = _common_mode_network(scale=20.0)
    ball = LinfBall([0.6, 0.4], 0.2)
    cls, naive = certify(net, ball, method="class"), certify(net, ball, method="naive")
    i = cls.predicted
    l_i = _oracle(net, ball, "linf", np.eye(3)[i])
    assert l_i > max(naive.lipschitz.values()) * 1.5
    assert cls.lipschitz["class"] == pytest.approx(l_i, rel=1e-6)
    assert cls.uncapped_radius < naive.uncapped_radius


@pytest.mark.parametrize("seed", range(3))
def test_class_radius_keeps_the_class_under_sampling_and_attack(seed):
    from tests.test_certify import _assert_radius_keeps_the_class

    rng = np.random.default_rng(200 + seed)
    net = random_network(rng, [2, 10, 10, 5])
    x = rng.uniform(0, 1, size=2)
    res = certify(net, LinfBall(x, 0.3), method="class")
    assert res.method == "class" and list(res.lipschitz) == ["class"]
    assert res.predicted == predicted_class(net, x)[0]
    _assert_radius_keeps_the_class(net, x, res, 0.3, rng)


def test_one_output_ignores_the_method():
    net = random_network(np.random.default_rng(1), [2, 6, 1])
    res = certify(net, LinfBall([0.5, 0.5], 0.1), method="class")
    assert res.method == "binary" and list(res.lipschitz) == ["f"]


def test_an_unknown_method_names_class():
    net = random_network(np.random.default_rng(1), [2, 6, 3])
    with pytest.raises(LipschitzError, match="choose cross, class, pairwise or naive"):
        certify(net, LinfBall([0.5, 0.5], 0.1), method="classwise")


def test_cli_method_class(tmp_path, capsys):
    rng = np.random.default_rng(7)
    net = random_network(rng, [2, 8, 8, 4])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    x = rng.uniform(0, 1, size=2)
    centre = ",".join(repr(float(v)) for v in x)
    argv = ["certify", path, "--center", centre, "--radius", "0.2", "--method", "class"]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "(linf input norm, method class)" in out and "lipschitz   class: " in out
    assert main([*argv, "--quiet", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = certify(net, LinfBall(x, 0.2), method="class")
    assert data["method"] == "class" and set(data["lipschitz"]) == {"class"}
    assert data["lipschitz"]["class"] == pytest.approx(expected.lipschitz["class"], rel=1e-9)


def test_certify_points_with_method_class_equal_certify_alone(tmp_path, capsys):
    """``certify --points --method class``: each JSON line's class constant is the single
    call's, for each point's own predicted class."""
    net = random_network(np.random.default_rng(8), [2, 6, 6, 4])
    model = str(save_onnx(net, tmp_path / "net.onnx"))
    points = np.array([[0.1, 0.2], [0.7, 0.4]])
    np.save(tmp_path / "x.npy", points)
    out = tmp_path / "c.jsonl"
    argv = ["certify", model, "--points", str(tmp_path / "x.npy"), "--radius", "0.2",
            "--method", "class", "--out", str(out), "--jobs", "1", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    lines = sorted((json.loads(v) for v in out.read_text().splitlines()), key=lambda v: v["id"])
    assert len(lines) == 2
    for line, x in zip(lines, points):
        alone = certify(net, LinfBall(x, 0.2), method="class")
        assert line["method"] == "class" and line["predicted"] == alone.predicted
        assert line["lipschitz"]["class"] == pytest.approx(alone.lipschitz["class"], rel=1e-6)
