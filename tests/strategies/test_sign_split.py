"""sign_split=True: the backward model's search split in the halves g_j >= 0 and g_j <= 0,
each a MIP with the sign binary fixed, side by side or in turn; the answer stays exact."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Box, LipschitzError, lipschitz
from lipopt.norms import dual_norm
from lipopt.parallel.workers import can_fork
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt
from tests.strategies.test_race import _spy_on_race
from tests.test_lipschitz_oracle import SCALAR_CASES, scalar_case

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")
refine_module = importlib.import_module("lipopt.strategies.refine")
policy_module = importlib.import_module("lipopt.policy")

needs_fork = pytest.mark.skipif(not can_fork("highs"), reason="needs two cores and fork")

LINF_CASES = [case for case, (_, _, norm) in enumerate(SCALAR_CASES) if norm == "linf"]


def _spy_on_halves(monkeypatch) -> list[tuple[int, float, float | None, bool]]:
    """Record (entry, fixed sign, cutoff, cut_off) of every half solved in this process."""
    seen: list[tuple[int, float, float | None, bool]] = []
    real = refine_module.solve_refined

    def spy(*args):
        lip, cutoff = args[0].lip, args[4]
        signs = lip.model.component("g_sign")
        fixed = [(j, signs[j].value) for j in signs if signs[j].fixed] if signs else []
        solved = real(*args)
        assert len(fixed) == 1, "a half fixes exactly one sign binary"
        seen.append((fixed[0][0], fixed[0][1], cutoff, solved.cut_off))
        return solved

    monkeypatch.setattr(refine_module, "solve_refined", spy)
    return seen


@pytest.mark.parametrize("attack", [True, False])
@pytest.mark.parametrize("case", LINF_CASES)
def test_sign_split_equals_brute_force(case, attack, monkeypatch):
    """In one process (so that the spy sees both halves): each half fixes the sign binary of
    the widest gradient entry one way, runs under a cutoff below the constant, and the larger
    half is the brute-force constant."""
    net, domain, norm, c, truth, _ = scalar_case(case)
    seen = _spy_on_halves(monkeypatch)
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation="backward", split=False, regions=False,
        workers=1, attack=attack, sign_split=True,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    cvec = np.ones(1) if c is None else c
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower)
    signs = res.model.model.component("g_sign")
    open_signs = [] if signs is None else [j for j in signs if not signs[j].fixed]
    if not open_signs:  # every gradient entry keeps its sign: nothing to split
        assert not seen and "sign_split_entry" not in res.model_stats
        return
    entry = res.model_stats["sign_split_entry"]
    assert {(j, s) for j, s, _, _ in seen} == {(entry, 1.0), (entry, 0.0)}
    assert all(cut is not None and cut <= truth.value for _, _, cut, _ in seen)
    bounds = lipschitz_module.propagate(net, domain, lipschitz_module.resolve_seed(net, c, None))
    width = bounds.input_grad_upper - bounds.input_grad_lower
    assert width[entry] == max(width[j] for j in open_signs)
    # the returned model is the plain problem again
    assert not signs[entry].fixed and res.model.model.component("cutoff") is None


@needs_fork
@pytest.mark.parametrize("case", LINF_CASES[:4])
def test_sign_split_on_two_processes_equals_brute_force(case):
    net, domain, norm, c, truth, _ = scalar_case(case)
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation="backward", split=False, regions=False,
        sign_split=True,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("output_norm", ["linf", "l1"])
def test_sign_split_with_an_output_norm_equals_brute_force(output_norm):
    """With an output norm the gradient's entries range jointly with w; the halves still cover
    every (x, w)."""
    rng = np.random.default_rng(31)
    net = random_network(rng, [3, 8, 6, 2])
    box = Box(np.zeros(3), np.ones(3))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "linf", output_norm)
    res = lipschitz(
        net, box, output_norm=output_norm, formulation="backward", split=False, regions=False,
        sign_split=True, workers=1,
    )  # fmt: skip
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert "sign_split_entry" in res.model_stats


@needs_fork
@pytest.mark.parametrize(
    "widths, sign_split, splits",
    [
        ([3, 10, 10, 1], False, False),  # the default: the race
        ([3, 10, 10, 1], True, True),  # the split instead of the race
        ([3, 8, 8, 8, 1], False, False),
        ([3, 8, 8, 8, 1], True, True),
    ],
)
def test_the_split_replaces_the_race_only_when_asked(widths, sign_split, splits, monkeypatch):
    monkeypatch.setattr(policy_module, "RACE_AFTER", 1e-4)  # every solve that may race does
    seen = _spy_on_race(monkeypatch)
    rng = np.random.default_rng(10)
    net = random_network(rng, widths)
    box = Box(np.zeros(3), np.ones(3))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "linf")
    messages: list[str] = []
    res = lipschitz(
        net, box, split=False, regions=False, sign_split=sign_split, progress=messages.append
    )
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert bool(seen) != splits  # raced exactly where it did not split
    assert all(kw["sign_split"] is False for kw in seen.values())
    assert any("split on a gradient sign" in m for m in messages) == splits
    assert ("sign_split_entry" in res.model_stats) == splits
    assert "attack" in res.timings  # attack "auto": the racers, or the split in their place


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sign_split": "auto"}, "sign_split must be True or False"),
        ({"sign_split": True, "norm": "l1"}, "sign split needs"),
        ({"sign_split": True, "mode": "lp"}, "sign split needs"),
        ({"sign_split": True, "formulation": "forward"}, "sign split needs"),
    ],
)
def test_sign_split_options_are_checked(kwargs, message):
    net = random_network(np.random.default_rng(2), [2, 6, 3])
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(LipschitzError, match=message):
        lipschitz(net, box, c=[1, 0, 0], **kwargs)
