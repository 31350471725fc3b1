"""Soundness at issue 45's scale: the 8×8 digits MLP 64-64-64-10 and CNN conv8-conv16/2-fc64-fc10
of ``benchmarks/models/`` (``benchmarks/train_scale_models.py``), ℓ∞ balls around test images, c
the difference of the two top logits. Independent truth: 10,000 sampled gradient norms and the
gradient attack, each attained, so never above a proven upper bound. Checked: the root's
Jacobian-norm bound (the cap every unfinished answer now meets), stopped default solves (where
the branch and bound may race the backward MIP), and stopped ``bab=True`` solves: each upper
bound is above every sample, and each lower bound is the value recomputed at its witness."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from benchmarks.margins import top_two_margin
from lipopt import LinfBall, lipschitz
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.heuristics.attack import gradient_attack
from lipopt.io import load_onnx
from lipopt.network import Network
from lipopt.norms import dual_norm
from tests.oracle import from_lipopt, sampled_max_gradient_norm

pytest.importorskip("onnx")
MODELS = Path(__file__).resolve().parents[1] / "benchmarks" / "models"
CASES = [("mlp", 0, 0.05), ("mlp", 1, 0.1), ("cnn", 0, 0.05), ("cnn", 1, 0.1)]


@cache
def _network(name: str) -> Network:
    return load_onnx(MODELS / f"scale-{name}.onnx")


def _query(name: str, image: int, radius: float) -> tuple[Network, LinfBall, np.ndarray]:
    net = _network(name)
    x = np.load(MODELS / "scale-test.npz")["images"][image].reshape(-1)
    return net, LinfBall(x, radius), top_two_margin(net, x)


@cache
def _attained(name: str, image: int, radius: float) -> float:
    """The largest of 10,000 sampled gradient norms and the attack's."""
    net, ball, c = _query(name, image, radius)
    sampled = sampled_max_gradient_norm(*from_lipopt(net, ball), c, "linf", n=10_000)
    _, attacked = gradient_attack(net, ball, c, "linf", rng=np.random.default_rng(0))
    return max(sampled, attacked)


def _check_bracket(result, net: Network, ball: LinfBall, c: np.ndarray, attained: float) -> None:
    assert attained <= result.upper * (1 + 1e-9)
    assert result.lower <= result.upper * (1 + 1e-9)
    assert ball.contains(result.witness, tol=1e-9)
    at_witness = float(dual_norm(net.gradients(result.witness[None, :], c), "linf")[0])
    assert result.lower == pytest.approx(at_witness, rel=1e-9)


@pytest.mark.parametrize("name, image, radius", CASES)
def test_the_root_jacobian_bound_is_above_every_sample(name, image, radius):
    net, ball, c = _query(name, image, radius)
    bound = jacobian_norm_bound(net, ball, c, "linf").value
    assert _attained(name, image, radius) <= bound * (1 + 1e-9)


@pytest.mark.parametrize("name, image, radius", CASES)
@pytest.mark.parametrize("bab", ["auto", True])
def test_stopped_solves_are_brackets_above_every_sample(name, image, radius, bab):
    net, ball, c = _query(name, image, radius)
    result = lipschitz(net, ball, c=c, time_limit=8, bab=bab)
    _check_bracket(result, net, ball, c, _attained(name, image, radius))
    if result.status != "optimal":  # never looser than bound propagation alone
        assert result.upper <= jacobian_norm_bound(net, ball, c, "linf").value * (1 + 1e-9)
