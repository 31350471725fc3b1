"""Branch and bound on the input domain keeps the exact value (paper Theorem 1)."""

import numpy as np
import pytest

from lipopt import Box, LinfBall, lipschitz
from lipopt.norms import dual_norm
from lipopt.search.split import SplitOptions, split_box
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

CASES = [
    ([2, 8, 8, 2], Box([0.0, 0.0], [1.0, 1.0]), "linf"),
    ([2, 8, 8, 2], Box([0.0, 0.0], [1.0, 1.0]), "l1"),
    ([3, 10, 10, 1], LinfBall([0.5, 0.5, 0.5], 0.5), "linf"),
    ([3, 10, 10, 1], LinfBall([0.5, 0.5, 0.5], 0.5), "l1"),
]


@pytest.mark.parametrize("widths, domain, norm", CASES)
def test_split_value_equals_brute_force(widths, domain, norm):
    rng = np.random.default_rng(sum(widths))
    net = random_network(rng, widths)
    c = [1.0, -1.0] if widths[-1] == 2 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm).value
    res = lipschitz(net, domain, norm=norm, c=c, split=SplitOptions(leaf_unstable=3))
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth, rel=1e-6)
    assert res.lower == pytest.approx(truth, rel=1e-6)
    assert res.model_stats["parts"] > 1  # it really split
    cvec = np.ones(1) if c is None else np.asarray(c)
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower, rel=1e-9)


def test_split_with_output_norm_matches_unsplit():
    net = random_network(np.random.default_rng(5), [2, 8, 8, 3])
    box = Box([0.0, 0.0], [1.0, 1.0])
    plain = lipschitz(net, box, output_norm="cross")
    split = lipschitz(net, box, output_norm="cross", split=SplitOptions(leaf_unstable=4))
    assert split.value == pytest.approx(plain.value, rel=1e-6)


def test_split_box_halves_the_domain():
    net = random_network(np.random.default_rng(0), [3, 4, 1])
    box = Box([0.0, -1.0, 2.0], [1.0, 1.0, 6.0])
    left, right = split_box(box, net)
    j = int(np.flatnonzero(left.upper != box.upper)[0])
    assert left.upper[j] == right.lower[j] == pytest.approx((box.lower[j] + box.upper[j]) / 2)
    np.testing.assert_array_equal(left.lower, box.lower)
    np.testing.assert_array_equal(right.upper, box.upper)


def test_split_time_limit_keeps_bounds_certified():
    net = random_network(np.random.default_rng(1), [2, 16, 16, 2])
    box = Box([0.0, 0.0], [1.0, 1.0])
    exact = lipschitz(net, box, c=[1, -1]).value
    res = lipschitz(net, box, c=[1, -1], split=SplitOptions(leaf_unstable=2), time_limit=0.5)
    assert res.lower <= exact * (1 + 1e-9)
    assert res.upper >= exact * (1 - 1e-6)
