"""The Jacobian-norm bound: above the exact constant (tests/oracle.py), never above FastLip,
exact when every neuron is stable, and strictly tighter than FastLip on random networks."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt.bounds.interval import interval_bounds
from lipopt.bounds.jacobian import jacobian_norm_bound
from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.norms import OutputNorm
from tests import oracle
from tests.helpers import network_from_weights

REL = 1e-9
NORMS = ("linf", "l1", "l2")


def _domain(kind: int, rng: np.random.Generator, d: int):
    """A unit box, an ℓ∞ ball or an ℓ1 ball around a random point."""
    if kind == 0:
        return Box(-np.ones(d), np.ones(d))
    if kind == 1:
        return LinfBall(rng.normal(size=d), 0.4)
    return L1Ball(rng.normal(size=d), 0.8)


def _cases(count: int, widths: list[int], seed: int):
    rng = np.random.default_rng(seed)
    for i in range(count):
        weights = oracle.random_network_weights(rng, widths)
        yield (
            network_from_weights(weights),
            _domain(i % 3, rng, widths[0]),
            rng.normal(size=widths[-1]),
        )


@pytest.mark.parametrize("norm", NORMS)
def test_sound_and_never_above_fastlip(norm: str) -> None:
    """30 random networks, three kinds of domain: exact <= bound <= FastLip, with and without
    the slope search (its result is the certified value, so it must stay above the exact)."""
    for net, domain, c in _cases(30, [3, 8, 8, 2], seed=11):
        exact = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c, norm).value
        chord = jacobian_norm_bound(net, domain, c, norm)
        searched = jacobian_norm_bound(net, domain, c, norm, iterations=5)
        for bound in (chord, searched):
            assert bound.value >= exact * (1.0 - REL) - 1e-12
            assert bound.value <= bound.fastlip * (1.0 + 1e-12)
        assert searched.value <= chord.value * (1.0 + 1e-12)
        assert searched.iterations == 5


@pytest.mark.parametrize("output", [OutputNorm.L1, OutputNorm.LINF, OutputNorm.CROSS])
def test_sound_for_output_norms(output: OutputNorm) -> None:
    """An output norm's dual ball as the seed: still above the exact constant."""
    for net, domain, _ in _cases(6, [3, 6, 6, 3], seed=5):
        spec = oracle.from_lipopt(net, domain)
        exact = oracle.brute_force_lipschitz(*spec, None, "linf", output.value).value
        bound = jacobian_norm_bound(net, domain, output, "linf", iterations=3)
        assert exact * (1.0 - REL) - 1e-12 <= bound.value <= bound.fastlip * (1.0 + 1e-12)


@pytest.mark.parametrize("norm", NORMS)
def test_stable_network_is_exact(norm: str) -> None:
    """A tiny box around a point where no pre-activation is near 0: every neuron is stable,
    the gradient is the constant J^T c and the bound is its dual norm."""
    rng = np.random.default_rng(3)
    net = network_from_weights(oracle.random_network_weights(rng, [4, 12, 12, 3]))
    point = rng.normal(size=4)
    box = Box(point - 1e-7, point + 1e-7)
    c = rng.normal(size=3)
    assert interval_bounds(net, box, c).unstable_count == 0
    truth = float(oracle.dual_norm(net.jacobian_at(point).T @ c, norm))
    bound = jacobian_norm_bound(net, box, c, norm)
    assert bound.value == pytest.approx(truth, rel=1e-9)
    assert bound.chord == pytest.approx(truth, rel=1e-9)


def test_tighter_than_fastlip() -> None:
    """Two hidden layers of 16 on the unit box, ℓ∞ input: never above FastLip, strictly below
    it somewhere; the median ratios to the exact constant are printed."""
    ratios, fast_ratios = [], []
    for net, _, c in _cases(8, [2, 16, 16, 1], seed=7):
        box = Box(-np.ones(2), np.ones(2))
        exact = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, box), c, "linf").value
        bound = jacobian_norm_bound(net, box, c, "linf")
        ratios.append(bound.value / exact)
        fast_ratios.append(bound.fastlip / exact)
    print(f"median bound/exact {np.median(ratios):.3f}, FastLip/exact {np.median(fast_ratios):.3f}")
    assert all(r <= f * (1.0 + 1e-12) for r, f in zip(ratios, fast_ratios, strict=True))
    assert any(r < f * (1.0 - 1e-3) for r, f in zip(ratios, fast_ratios, strict=True))
