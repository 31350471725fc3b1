"""The pattern climb inside lipschitz(): which starts and budget it gets, that its point becomes
the MIP's first cutoff (after the attack, and in the ℓ1 decomposition), and that it never runs
with an output norm. The climb is replaced by a stand-in that returns the brute-force oracle's
best point, so the cutoff it must produce is known independently."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Box, lipschitz
from lipopt.heuristics import attack as attack_module
from lipopt.heuristics import climb as climb_module
from lipopt.heuristics import starts as starts_module
from lipopt.heuristics import witness as witness_module
from lipopt.heuristics.climb import ClimbResult
from lipopt.norms import dual_norm
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

lipschitz_module = importlib.import_module("lipopt.lipschitz")
refine_module = importlib.import_module("lipopt.strategies.refine")
policy_module = importlib.import_module("lipopt.policy")


def _stand_in(monkeypatch, point: np.ndarray, value: float) -> list[dict]:
    """Replace pattern_climb by one that records its arguments and returns ``point``."""
    calls: list[dict] = []

    def fake(network, domain, c, norm, starts, max_checks=200, deadline=None, **wide):
        calls.append(dict(starts=list(starts), max_checks=max_checks, deadline=deadline, **wide))
        return ClimbResult(np.asarray(point, dtype=np.float64), value, 0)

    monkeypatch.setattr(climb_module, "pattern_climb", fake)
    return calls


def _spy_on_cutoffs(monkeypatch) -> list[float | None]:
    seen: list[float | None] = []
    real = refine_module.solve_refined

    def spy(*args):
        seen.append(args[4] if len(args) > 4 else None)
        return real(*args)

    monkeypatch.setattr(refine_module, "solve_refined", spy)
    return seen


def _poor_start(monkeypatch, net, box, norm: str, constant: float) -> np.ndarray:
    """Make the attack and the sampled starts return a point well below the constant (the
    least of 64 sampled points), so that only the climb can supply the constant."""
    points = box.sample(64, np.random.default_rng(0))
    values = dual_norm(net.gradients(points, np.ones(1)), norm)
    poor = points[int(np.argmin(values))]
    assert values.min() < 0.9 * constant  # else the test could not tell the climb's part
    monkeypatch.setattr(attack_module, "gradient_attack", lambda *a, **k: (poor, values.min()))
    monkeypatch.setattr(
        starts_module, "top_sampled", lambda *args: [poor.copy() for _ in range(args[-1])]
    )
    return poor


@pytest.mark.parametrize("norm, decompose", [("linf", False), ("l1", False), ("l1", True)])
def test_after_the_attack_the_climbs_point_is_the_first_cutoff(norm, decompose, monkeypatch):
    """attack=True: the climb starts from the attack's point and the 3 best sampled points, with
    the full budget; given the oracle's best point, the first MIP's cutoff sits just below the
    constant, and the answer is still exact."""
    rng = np.random.default_rng(31)
    net = random_network(rng, [4, 8, 8, 1])
    box = Box(np.zeros(4), np.ones(4))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, norm)
    poor = _poor_start(monkeypatch, net, box, norm, truth.value)
    calls = _stand_in(monkeypatch, truth.argmax_point, truth.value)
    cutoffs = _spy_on_cutoffs(monkeypatch)
    res = lipschitz(
        net, box, norm=norm, attack=True, formulation="backward", split=False, regions=False,
        decompose=decompose, workers=1, time_limit=600,
    )  # fmt: skip
    assert res.value == pytest.approx(truth.value, rel=1e-6) and res.exact_certified
    first = calls[0]
    assert len(first["starts"]) == 1 + policy_module.CLIMB_SAMPLED_STARTS
    assert first["max_checks"] == policy_module.CLIMB_CHECKS
    assert first.get("max_flips", 1) == 1 and first.get("wide_checks", 0) == 0  # one gate
    assert first["deadline"] is not None  # the time limit bounds the climb
    assert all(np.array_equal(start, poor) for start in first["starts"])
    assert cutoffs and cutoffs[0] == pytest.approx(witness_module.below(truth.value), rel=1e-9)


def test_the_decompositions_climb_starts_from_its_best_sampled_points(monkeypatch):
    """ℓ1 decomposition without the attack: one climb, from the DECOMPOSE_VERIFIED best sampled
    points, widened to WIDE_FLIPS gates with WIDE_CHECKS more LPs; given the oracle's best
    point, every candidate runs under the cutoff just below the constant, or is skipped by its
    bound."""
    rng = np.random.default_rng(32)
    net = random_network(rng, [5, 8, 8, 1])
    box = Box(np.zeros(5), np.ones(5))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "l1")
    calls = _stand_in(monkeypatch, truth.argmax_point, truth.value)
    cutoffs = _spy_on_cutoffs(monkeypatch)
    res = lipschitz(net, box, norm="l1", decompose=True, regions=False, split=False, workers=1)
    assert res.value == pytest.approx(truth.value, rel=1e-6) and res.exact_certified
    assert len(calls) == 1 and len(calls[0]["starts"]) == policy_module.DECOMPOSE_VERIFIED
    assert calls[0]["max_flips"] == policy_module.WIDE_FLIPS > 1
    assert calls[0]["wide_checks"] == policy_module.WIDE_CHECKS > 0
    below = witness_module.below(truth.value)
    assert all(cut == pytest.approx(below, rel=1e-9) for cut in cutoffs)


def test_no_climb_with_an_output_norm(monkeypatch):
    calls = _stand_in(monkeypatch, np.zeros(4), 0.0)
    rng = np.random.default_rng(33)
    net = random_network(rng, [4, 6, 6, 2])
    box = Box(np.zeros(4), np.ones(4))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "l1", "linf")
    res = lipschitz(net, box, norm="l1", output_norm="linf", regions=False, split=False, workers=1)
    assert res.value == pytest.approx(truth.value, rel=1e-6)
    assert calls == []
