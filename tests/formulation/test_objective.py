"""The ℓ∞-dual objective's candidates and the decomposed model."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pe

from lipopt import LinfBall
from lipopt.formulation.objective import Candidate, linf_candidates, set_candidate
from lipopt.lipschitz import build_model
from tests.helpers import random_network


def test_linf_candidates_sorted_by_bound_and_dominated_dropped() -> None:
    model = pe.ConcreteModel()
    model.g = pe.Var(range(3))
    g = [model.g[0], model.g[1], model.g[2], -0.5]
    lower = np.array([-1.0, 0.6, -0.1, -0.5])
    upper = np.array([2.0, 0.9, 0.4, -0.5])
    cands = linf_candidates(g, lower, upper)
    # every candidate's bound reaches the floor max(lower bounds) = 0.6 (from +g1)
    assert [(c.index, c.sign) for c in cands] == [(0, 1.0), (0, -1.0), (1, 1.0)]
    assert [c.upper for c in cands] == [2.0, 1.0, 0.9]
    assert all(c.lower <= c.upper for c in cands)


def test_linf_candidates_constant_entry_is_its_absolute_value() -> None:
    cands = linf_candidates([-0.5, 0.25], np.array([-0.5, 0.25]), np.array([-0.5, 0.25]))
    assert cands == [Candidate(0, -1.0, 0.5, 0.5, True)]
    assert cands[0].expression([-0.5, 0.25]) == 0.5


def test_decomposed_model_has_no_selection_binaries_and_swaps_objective() -> None:
    rng = np.random.default_rng(5)
    net = random_network(rng, [4, 10, 10, 2])
    domain = LinfBall(rng.uniform(size=4), 0.3)
    plain = build_model(net, domain, "l1", [1.0, -1.0])
    lip = build_model(net, domain, "l1", [1.0, -1.0], decompose=True)
    assert lip.candidates and plain.candidates == []
    assert lip.model.component("g_pick") is None and plain.model.component("g_pick") is not None
    assert lip.stats["binaries"] == lip.stats["unstable_neurons"]
    second = lip.candidates[1]
    set_candidate(lip.model, lip.gradient, second, cutoff=0.25)
    assert lip.model.cutoff.lower == 0.25
    set_candidate(lip.model, lip.gradient, second)
    assert lip.model.component("cutoff") is None
