"""CLEVER's reverse-Weibull fit and its estimate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from lipopt import Box
from lipopt.estimators import Kind, clever
from lipopt.estimators.clever import fit_reverse_weibull
from tests.helpers import random_network


def test_fit_recovers_the_end_point_of_a_reverse_weibull_sample():
    sample = stats.weibull_max.rvs(3.0, loc=5.0, scale=2.0, size=400, random_state=0)
    fit = fit_reverse_weibull(sample)
    assert fit["loc"] == pytest.approx(5.0, rel=0.05)
    assert fit["p_value"] > 0.01
    assert fit["loc"] >= sample.max() - 1e-9


def test_fit_falls_back_to_the_maximum_on_constant_samples():
    fit = fit_reverse_weibull(np.full(10, 2.5))
    assert fit["loc"] == 2.5 and np.isnan(fit["p_value"])


def test_clever_is_a_heuristic_near_the_sampled_maximum():
    rng = np.random.default_rng(0)
    net = random_network(rng, [4, 16, 16, 1])
    est = clever.estimate(net, Box(np.zeros(4), np.ones(4)), "linf", batches=20, batch_size=64)
    assert est.kind is Kind.HEURISTIC
    assert est.detail["evaluations"] == 20 * 64
    assert est.value >= est.detail["sample_max"] * (1 - 1e-9) or np.isnan(est.detail["p_value"])
