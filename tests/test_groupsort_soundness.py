"""Soundness on the bundled GroupSort model (issue 46): ``models/moons-groupsort.onnx``, two
GroupSort-2 layers between orthonormalised linear maps (``models/train_groupsort.py``).
Independent truth: the brute-force oracle's exact constant; 10,000 sampled gradient norms and
the gradient attack never exceed a proven value; stopped solves give brackets that contain the
sampled maximum; and the 1-Lipschitz theorem of such networks (GroupSort is 1-Lipschitz in ℓ2,
so ``||∇(cᵀf)||_2 <= ||c||_2 Π ||W_k||_2``, the spectral norms computed here from the file's
weights with onnx, not through lipopt)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from lipopt import Box, L2Ball, LinfBall, lipschitz
from lipopt.heuristics.attack import gradient_attack
from lipopt.io import load_onnx
from lipopt.network import Network
from tests.oracle import brute_force_lipschitz, from_lipopt, sampled_max_gradient_norm

onnx = pytest.importorskip("onnx")
MODEL = Path(__file__).resolve().parents[1] / "models" / "moons-groupsort.onnx"
C = np.array([1.0, -1.0])
DATA_BOX = Box([-1.5, -1.0], [2.5, 1.5])  # the two moons and a margin around them

QUERIES = [
    (DATA_BOX, "linf"),
    (DATA_BOX, "l2"),
    (LinfBall([0.5, 0.25], 0.3), "linf"),
    (L2Ball([0.5, 0.25], 0.5), "l2"),
    (L2Ball([0.0, 0.5], 0.4), "l1"),
]


@cache
def _network() -> Network:
    return load_onnx(MODEL)


def _lower_bounds(net: Network, domain: object, norm: str) -> float:
    """The largest of 10,000 sampled gradient norms and the attack's: each attained."""
    sampled = sampled_max_gradient_norm(*from_lipopt(net, domain), C, norm, n=10_000)
    _, attacked = gradient_attack(net, domain, C, norm, rng=np.random.default_rng(0))
    return max(sampled, attacked)


def _spectral_product() -> float:
    """``Π ||W_k||_2`` of the file's Gemm/MatMul weights, read with onnx."""
    from onnx import numpy_helper

    graph = onnx.load(MODEL).graph
    weights = [numpy_helper.to_array(t) for t in graph.initializer if t.dims and len(t.dims) == 2]
    assert len(weights) == 3
    return float(np.prod([np.linalg.norm(w.astype(np.float64), 2) for w in weights]))


def test_the_bundled_model_is_groupsort():
    """Two layers of 8 comparisons each: 8 kinked neurons per layer, the rest identities."""
    net = _network()
    assert [int(np.count_nonzero(a != 1.0)) for a in net.slopes] == [8, 8]
    assert all(set(np.unique(a)) <= {0.0, 1.0} for a in net.slopes)


@pytest.mark.parametrize("domain, norm", QUERIES)
def test_exact_and_above_every_sample(domain, norm):
    net = _network()
    result = lipschitz(net, domain, norm, c=C, time_limit=60)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), C, norm).value
    assert result.status == "optimal"
    assert abs(result.value - truth) <= 1e-6 * max(1.0, truth)
    assert _lower_bounds(net, domain, norm) <= result.value * (1 + 1e-9)


def test_the_l2_constant_obeys_the_one_lipschitz_bound():
    net = _network()
    result = lipschitz(net, DATA_BOX, "l2", c=C, time_limit=60)
    assert result.status == "optimal"
    assert result.value <= np.linalg.norm(C) * _spectral_product() * (1 + 1e-9)


@pytest.mark.parametrize("limit", [0.02, 0.2])
@pytest.mark.parametrize("domain, norm", QUERIES[:2])
def test_stopped_solves_bracket_the_sampled_maximum(domain, norm, limit):
    net = _network()
    result = lipschitz(net, domain, norm, c=C, time_limit=limit)
    found = _lower_bounds(net, domain, norm)
    assert result.lower is not None and result.lower <= result.upper
    assert found <= result.upper * (1 + 1e-9)


def test_a_stopped_part_of_the_data_box_brackets_too():
    """A ball around a point between the moons, stopped after the bounds: the bracket holds the
    sampled maximum."""
    net = _network()
    ball = LinfBall([0.5, 0.0], 0.5)
    result = lipschitz(net, ball, "linf", c=C, time_limit=0.01)
    assert _lower_bounds(net, ball, "linf") <= result.upper * (1 + 1e-9)
