"""Rows that read only dead ReLUs are their bias exactly (``bounds.interval.pin_constant_rows``):
their bounds are ``[b, b]``, not ``b`` rounded outward, so a row with ``b = 0`` is inactive,
not unstable, in every forward pass; the constants stay the oracle's (tests/oracle.py)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from benchmarks.margins import top_two_margin
from lipopt import Affine, Box, LinfBall, Network, ReLU, lipschitz
from lipopt.activation import Activation
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NeuronState, interval_bounds
from lipopt.bounds.linear import forward_linear, linear_bounds
from lipopt.bounds.lp import lp_bounds
from lipopt.search.activation_bab import ActivationBabOptions, activation_bab
from lipopt.status import Status
from tests import oracle
from tests.helpers import network_from_weights

#: layer 1: neuron 0 is dead on the unit box [-1, 1]^2 (z <= -8); layer 2: rows 0 and 1 read
#: only it (z = 0 and z = 0.5 exactly), rows 2 and 3 read live neurons too
WEIGHTS = [
    (np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 2.0]]), np.array([-10.0, 0.1, 0.2])),
    (
        np.array([[3.0, 0.0, 0.0], [-2.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.5, -1.0, 1.0]]),
        np.array([0.0, 0.5, -0.3, 0.1]),
    ),
    (np.array([[1.0, -1.0, 2.0, 1.5]]), np.array([0.0])),
]
BOX = Box([-1.0, -1.0], [1.0, 1.0])


def test_rows_reading_only_dead_relus_are_pinned_in_every_forward_pass() -> None:
    net, c = network_from_weights(WEIGHTS), np.ones(1)
    passes = {
        "interval": interval_bounds(net, BOX, c),
        "linear": linear_bounds(net, BOX, c),
        "lp": lp_bounds(net, BOX, c),
        "split": split_bounds(net, BOX, c, {}),  # no parent: nothing pinned to intersect with
    }
    for name, bounds in passes.items():
        assert bounds is not None
        lower, upper = bounds.pre_lower[1], bounds.pre_upper[1]
        assert lower[:2].tolist() == [0.0, 0.5] and upper[:2].tolist() == [0.0, 0.5], name
        inactive, active, unstable = NeuronState.INACTIVE, NeuronState.ACTIVE, NeuronState.UNSTABLE
        assert bounds.states[1].tolist() == [inactive, active, unstable, unstable], name
        assert bounds.unstable_count == 4, name  # two in each layer


def test_the_linear_pass_pins_rows_itself() -> None:
    """``forward_linear`` with a loose reference (the interval bounds widened by 1): its own
    rows reading only the dead neuron are still exactly ``[0, 0]`` and ``[0.5, 0.5]``."""
    net = network_from_weights(WEIGHTS)
    plain = interval_bounds(net, BOX, np.ones(1))
    loose = ([lo - 1.0 for lo in plain.pre_lower], [hi + 1.0 for hi in plain.pre_upper])
    lowers, uppers = forward_linear(net, BOX, loose)
    assert lowers[1][:2].tolist() == [0.0, 0.5] and uppers[1][:2].tolist() == [0.0, 0.5]


def test_both_parts_of_a_split_on_a_zero_row_keep_it_at_zero() -> None:
    """``z_{1,0} = 0`` everywhere: both ``z_{1,0} >= 0`` and ``z_{1,0} <= 0`` hold on the whole
    box, so each part keeps it at ``[0, 0]``, inactive; with its pinned bias a row of
    ``z_{1,1} = 0.5`` leaves no part where it is ``<= 0``."""
    net, c = network_from_weights(WEIGHTS), np.ones(1)
    for active in (True, False):
        part = split_bounds(net, BOX, c, {(1, 0): active})
        assert part is not None
        assert (part.pre_lower[1][0], part.pre_upper[1][0]) == (0.0, 0.0)
        assert part.states[1][0] == NeuronState.INACTIVE
    assert split_bounds(net, BOX, c, {(1, 1): False}) is None


def test_a_leaky_neuron_is_never_dead() -> None:
    """With slope 0.1 the inactive neuron 0 passes ``0.1 z`` on: rows reading it move with x."""
    (w1, b1), (w2, b2), (w3, b3) = WEIGHTS
    alpha = np.array([0.1, 0.0, 0.0])
    net = Network.from_layers([Affine(w1, b1), Activation(alpha), Affine(w2, b2), ReLU(),
                               Affine(w3, b3)])  # fmt: skip
    bounds = linear_bounds(net, BOX, np.ones(1))
    assert bounds.pre_lower[1][0] < bounds.pre_upper[1][0]
    assert bounds.pre_lower[1][0] <= -3.0 * 0.1 * 8.0


@pytest.mark.parametrize("norm", ["linf", "l1", "l2"])
def test_the_constants_stay_the_oracles(norm: str) -> None:
    net, c = network_from_weights(WEIGHTS), np.ones(1)
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, BOX), c, norm).value
    runs = [lipschitz(net, BOX, c=c, norm=norm, regions=False, split=False)]
    if norm != "l2":
        runs.append(lipschitz(net, BOX, c=c, norm=norm, bab=True))
    for result in runs:
        assert result.status == "optimal"
        assert result.value == pytest.approx(truth, rel=1e-6)


def test_the_bundled_cnn_closes_at_a_small_radius() -> None:
    """The bundled digits CNN's compiled max-pooling over dead ReLUs: at radius 0.0002 around
    test image 1, 45 of its 55 unstable-looking neurons are such rows. The branch and bound
    alone closes there (it stood at [225.24, 227.26] after 20 s with them unstable), its value
    attained at its witness and above 20 000 sampled gradients."""
    from pathlib import Path  # noqa: PLC0415

    from lipopt.io import load_onnx  # noqa: PLC0415

    models = Path(__file__).resolve().parents[2] / "models"
    net = load_onnx(models / "digits-cnn.onnx")
    x = np.load(models / "digits-test.npz")["images"][1].reshape(-1)
    c, ball = top_two_margin(net, x), LinfBall(x, 0.0002)
    assert linear_bounds(net, ball, c).unstable_count == 10
    options = ActivationBabOptions(sign_group=8, split_cuts=True)
    out = activation_bab(net, ball, c, "linf", options=options, deadline=time.perf_counter() + 60)
    assert out.status == Status.OPTIMAL and out.witness is not None
    assert out.lower == pytest.approx(np.abs(net.gradients(out.witness, c)).sum(), rel=1e-9)
    points = x + 0.0002 * np.random.default_rng(0).uniform(-1.0, 1.0, size=(20_000, x.size))
    assert np.abs(net.gradients(points, c)).sum(axis=1).max() <= out.upper * (1.0 + 1e-9)
