"""certify with --clip: the constants over the ball ∩ [LO, HI]^d (against the oracle with the
range's rows), a radius at least the unclipped one, sound on samples of the clipped ball, and
one line for a centre outside the range."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lipopt import L1Ball, LinfBall, certify, intersect
from lipopt.cli import main
from lipopt.lipschitz import LipschitzError
from tests.helpers import random_network, save_onnx
from tests.oracle import brute_force_lipschitz, from_lipopt


@pytest.mark.parametrize("ball_kind, norm", [(LinfBall, "linf"), (L1Ball, "l1")])
def test_the_clipped_constant_is_the_oracles_and_the_radius_grows(ball_kind, norm):
    rng = np.random.default_rng(21)
    net = random_network(rng, [3, 8, 8, 3])
    ball = ball_kind(np.array([0.95, 0.05, 0.5]), 0.3)  # pokes out of [0, 1] on two sides
    whole = certify(net, ball, method="cross")
    cut = certify(net, ball, method="cross", clip=(0.0, 1.0))
    domain = intersect(ball, clip=(0.0, 1.0))
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, norm, "cross").value
    assert cut.statuses["cross"] == "optimal"
    assert cut.lipschitz["cross"] == pytest.approx(truth, rel=1e-6)
    assert cut.lipschitz["cross"] <= whole.lipschitz["cross"] * (1 + 1e-9)
    assert cut.radius >= whole.radius * (1 - 1e-9) and cut.clip == (0.0, 1.0)
    # sound: no point of the clipped ball within the radius changes the class
    points = domain.sample(4000, rng)
    offsets = np.abs(points - ball.center)
    distance = offsets.max(1) if norm == "linf" else offsets.sum(1)
    near = points[distance < cut.radius]
    assert len(near) > 0
    assert all(int(np.argmax(net.forward(p))) == cut.predicted for p in near)


def test_a_centre_outside_the_range_is_refused():
    net = random_network(np.random.default_rng(22), [2, 6, 2])
    with pytest.raises(LipschitzError, match=r"outside the clip range \[0, 1\]: x\[0\] = 1.2"):
        certify(net, LinfBall([1.2, 0.5], 0.1), clip=(0.0, 1.0))


def test_the_cli_takes_clip_and_says_so(tmp_path, capsys):
    net = random_network(np.random.default_rng(23), [2, 6, 6, 3])
    path = str(save_onnx(net, tmp_path / "n.onnx"))
    code = main(["certify", path, "--center", "0.95,0.5", "--radius", "0.2", "--clip", "0,1"])
    out = capsys.readouterr().out
    assert code == 0 and "∩ [0, 1]^d (--clip)" in out
    code = main(["certify", path, "--center", "0.95,0.5", "--radius", "0.2", "--clip", "0,1",
                 "--json"])  # fmt: skip
    assert code == 0 and json.loads(capsys.readouterr().out)["clip"] == [0.0, 1.0]
    code = main(["certify", path, "--center", "1.5,0.5", "--radius", "0.2", "--clip", "0,1"])
    err = capsys.readouterr().err
    assert code == 2 and "outside the clip range" in err and err.count("\n") == 1
