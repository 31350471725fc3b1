"""Two caps added for large networks (issue 29): the region search's late rule (give up when at
its rate it would take over ``late_factor`` times its limit) and the attack's flip-move size
cap (``ATTACK_FLIP_MAX_ENTRIES``)."""

from __future__ import annotations

import numpy as np

from lipopt import LinfBall, Network
from lipopt import policy as policy_module
from lipopt.bounds import propagate
from lipopt.heuristics import attack as attack_module
from lipopt.network import Affine, ReLU
from lipopt.search.regions import RegionOptions, search_regions


def _network() -> tuple[Network, LinfBall, np.ndarray]:
    """speed.py's [10,20,30,20,2] recipe, seed 1, on its ℓ∞ ball: a search of ~4400 nodes."""
    sizes, rng = [10, 20, 30, 20, 2], np.random.default_rng(1001)
    layers: list = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        weight = rng.normal(size=(fan_out, fan_in)) * np.sqrt(2.0 / fan_in)
        layers.append(Affine(weight, rng.normal(size=fan_out) * 0.5))
        if i < len(sizes) - 2:
            layers.append(ReLU())
    return Network.from_layers(layers), LinfBall(rng.uniform(size=10), 0.1), np.array([1.0, -1.0])


def test_a_late_search_gives_up_at_the_first_check_and_an_unhurried_one_finishes():
    net, ball, c = _network()
    box = ball.as_box()
    bounds = propagate(net, box, c)
    runs = {}
    for factor in (None, 1e-9):
        options = RegionOptions(time_limit=600.0, late_factor=factor)
        runs[factor] = search_regions(net, box, c, "linf", bounds, options)
    assert runs[None].complete and runs[None].nodes > 1000
    assert not runs[1e-9].complete and runs[1e-9].nodes < 1000
    assert runs[1e-9].upper >= runs[None].upper * (1 - 1e-9)  # still a sound bound


def test_the_attack_drops_its_flip_moves_above_the_size_cap(monkeypatch):
    net, ball, c = _network()
    calls = []
    original = attack_module._flip_candidates

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(attack_module, "_flip_candidates", spy)
    attack_module.gradient_attack(net, ball, c, "linf", restarts=4, steps=3, rng=0)
    assert calls  # under the cap: flips
    calls.clear()
    monkeypatch.setattr(policy_module, "ATTACK_FLIP_MAX_ENTRIES", 4 * 70 * 10 - 1)
    attack_module.gradient_attack(net, ball, c, "linf", restarts=4, steps=3, rng=0)
    assert not calls
