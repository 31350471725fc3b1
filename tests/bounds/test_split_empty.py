"""The emptiness LP of a sub-domain (lipopt.bounds.split_empty), against independent truth: a
sub-domain ``D_S`` it proves empty holds no point of any full-dimensional activation region the
brute-force oracle finds (each region's interior point, its pre-activations computed by the
oracle in numpy); on a hand-made network it proves the one empty sign combination and none of
the others; and the Farkas check refuses a feasible LP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.domain_lp import DomainLP
from lipopt.bounds.split_empty import proven_empty
from lipopt.domain import Box, L1Ball, L2Ball, LinfBall
from tests import oracle
from tests.helpers import network_from_weights

DOMAINS = {
    "box": lambda rng, d: Box(-np.ones(d), np.ones(d)),
    "linf": lambda rng, d: LinfBall(rng.normal(size=d), 0.7),
    "l1": lambda rng, d: L1Ball(rng.normal(size=d), 1.2),
    "l2": lambda rng, d: L2Ball(rng.normal(size=d), 0.9),
}


def _pre_activations(weights, point: np.ndarray) -> list[np.ndarray]:
    """``z_k`` at ``point``, ReLU between the affine maps (the oracle's weights)."""
    h, out = point, []
    for w, b in weights[:-1]:
        z = w @ h + b
        out.append(z)
        h = np.maximum(z, 0.0)
    return out


def _meets(weights, points: list[np.ndarray], splits: dict[tuple[int, int], bool]) -> bool:
    """Whether one of ``points`` has every split neuron strictly on its side."""
    for point in points:
        z = _pre_activations(weights, point)
        if all((z[k][i] > 0) == active for (k, i), active in splits.items()):
            return True
    return False


@pytest.mark.parametrize("kind", sorted(DOMAINS))
def test_an_empty_proof_holds_no_point_of_any_region(kind: str) -> None:
    """8 random networks [3, 7, 7, 1]; on each, 12 random sets of 2-4 splits over both hidden
    layers: a proof of emptiness never meets a region's interior point, and some sets are
    proved empty (the test can fail both ways)."""
    rng = np.random.default_rng({"box": 1, "linf": 2, "l1": 3, "l2": 4}[kind])
    proved = checked = 0
    for _ in range(8):
        weights = oracle.random_network_weights(rng, [3, 7, 7, 1])
        net = network_from_weights(weights)
        domain = DOMAINS[kind](rng, 3)
        spec = oracle.from_lipopt(net, domain)
        found = oracle.brute_force_lipschitz(*spec, np.ones(1), "linf", collect_regions=True)
        points = [region.point for region in found.regions or []]
        for _ in range(12):
            count = int(rng.integers(2, 5))
            neurons = {(int(rng.integers(0, 2)), int(rng.integers(0, 7))) for _ in range(count)}
            splits = {neuron: bool(rng.integers(0, 2)) for neuron in neurons}
            bounds = split_bounds(net, domain, np.ones(1), splits)
            if bounds is None:
                assert not _meets(spec.weights, points, splits)
                continue
            checked += 1
            if proven_empty(net, domain, bounds):
                proved += 1
                assert not _meets(spec.weights, points, splits), splits
    assert checked >= 40 and proved >= 5, (checked, proved)


def test_the_one_empty_sign_combination_of_a_hand_made_network() -> None:
    """``z_0 = x_0 + x_1 - 1.5`` and ``z_1 = 0.2 - x_0`` on the box [-1, 1]²: both ``>= 0``
    would need ``x_0 + x_1 >= 1.5`` with ``x_0 <= 0.2``, ``x_1 <= 1``; each range alone is
    non-empty, so only the coupled LP sees it. The other three combinations hold points."""
    w0 = np.array([[1.0, 1.0], [-1.0, 0.0]])
    b0 = np.array([-1.5, 0.2])
    net = network_from_weights([(w0, b0), (np.ones((1, 2)), np.zeros(1))])
    box = Box(-np.ones(2), np.ones(2))
    for first, second in itertools.product((True, False), repeat=2):
        bounds = split_bounds(net, box, np.ones(1), {(0, 0): first, (0, 1): second})
        assert bounds is not None
        assert proven_empty(net, box, bounds) == (first and second)


def test_the_farkas_check_refuses_a_feasible_lp_and_proves_an_infeasible_one() -> None:
    """``x_0 + x_1 >= 3`` on [-1, 1]² has no point; ``>= 1.5`` has (0.9, 0.9)."""
    for needed, empty in ((3.0, True), (1.5, False)):
        lp = DomainLP(Box(-np.ones(2), np.ones(2)))
        lp.add_rows(
            lp.inputs, np.ones((1, 2)), lp.inputs[:0], np.zeros((1, 0)),
            np.array([needed]), np.array([np.inf]),
        )  # fmt: skip
        assert lp.proven_infeasible(None) is empty
