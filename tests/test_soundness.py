"""Soundness on random networks: no sampled gradient beats the value; lower is attained."""

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall, lipschitz
from lipopt.norms import dual_norm
from tests.helpers import random_network

CASES = [
    ([2, 10, 10, 1], Box([0.0, 0.0], [1.0, 1.0]), "linf"),
    ([2, 10, 10, 1], Box([0.0, 0.0], [1.0, 1.0]), "l1"),
    ([3, 8, 8, 8, 2], LinfBall([0.5, 0.5, 0.5], 0.3), "linf"),
    ([3, 8, 8, 8, 2], LinfBall([0.5, 0.5, 0.5], 0.3), "l1"),
    ([4, 12, 6, 3], L1Ball([0.1, 0.2, 0.3, 0.4], 0.8), "linf"),
    ([4, 12, 6, 3], L1Ball([0.1, 0.2, 0.3, 0.4], 0.8), "l1"),
]


#: the decomposition only concerns the l1 input norm: linf cases run once, l1 cases both ways
PARAMS = [
    pytest.param(*case, decompose, id=f"{i}-{case[2]}-{'decomposed' if decompose else 'selection'}")
    for i, case in enumerate(CASES)
    for decompose in ((True, False) if case[2] == "l1" else (True,))
]


@pytest.mark.parametrize("widths, domain, norm, decompose", PARAMS)
def test_sampled_gradient_norms_never_exceed_value(widths, domain, norm, decompose):
    rng = np.random.default_rng(sum(widths))
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    res = lipschitz(net, domain, norm=norm, c=c, decompose=decompose)
    cvec = np.ones(1) if c is None else c
    sampled = dual_norm(net.gradients(domain.sample(10_000, rng), cvec), norm)
    assert sampled.max() <= res.value * (1 + 1e-9) + 1e-12
    assert res.lower is not None and res.lower <= res.upper
    # the lower bound really is the gradient norm at the witness, which lies in the domain
    assert domain.contains(res.witness)
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower, rel=1e-12)
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(res.lower, rel=1e-6)
