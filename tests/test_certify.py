"""Certified radii are sound: nothing within the radius changes the predicted class."""

from __future__ import annotations

import importlib
import inspect
import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from lipopt import L1Ball, L2Ball, LinfBall, certify
from lipopt.certify import BUDGET_SPENT, predicted_class
from lipopt.cli import main
from lipopt.lipschitz import LipschitzError
from tests.helpers import random_network, save_onnx
from tests.oracle import brute_force_lipschitz, from_lipopt


def _points_within(center: np.ndarray, radius: float, norm: str, n: int, rng) -> np.ndarray:
    """Uniform points of the open ball of the given norm (the certified set)."""
    ball = BALLS[norm](center, radius * (1 - 1e-9))
    return ball.sample(n, rng)


BALLS = {"linf": LinfBall, "l1": L1Ball, "l2": L2Ball}


def _step(g: np.ndarray, norm: str) -> np.ndarray:
    """The steepest ascent direction of the norm's unit ball for the gradient ``g``."""
    if norm == "linf":
        return np.sign(g)
    if norm == "l2":
        return g / max(float(np.linalg.norm(g)), 1e-300)
    return np.eye(len(g))[np.argmax(np.abs(g))] * np.sign(g)


def _attack(net, x, predicted, radius, norm, rng, steps=60):
    """Projected gradient ascent on max_j f_j - f_i from random starts within the radius."""
    worst = []
    m = net.output_dim
    for start in _points_within(x, radius, norm, 8, rng):
        y = start.copy()
        for _ in range(steps):
            out = net.forward(y)
            if m == 1:
                c = np.array([-1.0 if predicted == 1 else 1.0])
            else:
                rival = max((j for j in range(m) if j != predicted), key=lambda j: out[j])
                c = np.eye(m)[rival] - np.eye(m)[predicted]
            g = net.gradients(y, c)
            step = radius / 10
            y = y + step * _step(g, norm)
            delta = y - x
            if norm == "linf":
                delta = np.clip(delta, -radius, radius)
            elif norm == "l2" and np.linalg.norm(delta) > radius:  # the l2 PGD's projection
                delta *= radius / np.linalg.norm(delta)
            elif norm == "l1" and np.abs(delta).sum() > radius:
                delta *= radius / np.abs(delta).sum()
            y = x + delta * (1 - 1e-9)
        worst.append(y)
    return np.array(worst)


CASES = [
    ([2, 10, 10, 3], "linf", 0.3),
    ([3, 8, 8, 4], "l1", 0.5),
    ([2, 8, 8, 1], "linf", 0.3),
    ([3, 8, 8, 3], "l2", 0.5),
    ([2, 8, 8, 1], "l2", 0.3),
]


def _assert_radius_keeps_the_class(net, x, res, ball_radius, rng) -> None:
    """The certified radius lies in [0, ball_radius], and 10,000 sampled points and an attack
    within it keep the predicted class."""
    norm = res.norm
    assert 0 <= res.radius <= ball_radius
    if res.radius == 0:
        return
    points = _points_within(x, res.radius, norm, 10_000, rng)
    assert np.all(predicted_class(net, points) == res.predicted)
    attacked = _attack(net, x, res.predicted, res.radius, norm, rng)
    assert np.all(predicted_class(net, attacked) == res.predicted)


@pytest.mark.parametrize("widths, norm, ball_radius", CASES)
@pytest.mark.parametrize("method", ["cross", "class", "pairwise", "naive"])
def test_certified_radius_is_sound(widths, norm, ball_radius, method):
    rng = np.random.default_rng(sum(widths) + len(method))
    net = random_network(rng, widths)
    x = rng.uniform(0, 1, size=widths[0])
    ball = BALLS[norm](x, ball_radius)
    res = certify(net, ball, method=method)
    assert res.norm == norm
    assert res.predicted == predicted_class(net, x)[0]
    _assert_radius_keeps_the_class(net, x, res, ball_radius, rng)


def test_cross_radius_never_exceeds_pairwise():
    """Proposition 7: cross <= naive <= pairwise."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        net = random_network(rng, [2, 8, 8, 4])
        ball = LinfBall(rng.uniform(0, 1, size=2), 0.2)
        radii = {
            m: certify(net, ball, method=m).uncapped_radius for m in ("cross", "naive", "pairwise")
        }
        assert radii["cross"] <= radii["naive"] * (1 + 1e-9)
        assert radii["naive"] <= radii["pairwise"] * (1 + 1e-9)


def test_radius_beyond_the_ball_is_capped():
    from lipopt import Affine, Network, ReLU

    # f(x) = relu(x) + 10 on [0.5 ± 0.1]: margin 10.5, L = 1, radius 10.5 > 0.1
    net = Network.from_layers([Affine([[1.0]], [0.0]), ReLU(), Affine([[1.0]], [10.0])])
    res = certify(net, LinfBall([0.5], 0.1))
    assert res.capped and res.certified_ball
    assert res.radius == pytest.approx(0.1)
    assert res.uncapped_radius == pytest.approx(10.5)


@pytest.mark.parametrize("seed", range(3))
def test_the_l2_radius_is_the_margin_over_the_exact_l2_constant(seed):
    """An ℓ2 ball's radius is the margin over the ℓ2 constant of the cross-norm, which the
    oracle gives over the same ball: never more (the constant is an upper bound), and equal
    when the solve is exact."""
    rng = np.random.default_rng(40 + seed)
    net = random_network(rng, [2, 6, 6, 3])
    ball = L2Ball(rng.uniform(0, 1, size=2), 0.4)
    res = certify(net, ball)
    truth = brute_force_lipschitz(*from_lipopt(net, ball), None, "l2", output_norm="cross")
    margin = min(res.margins.values())
    assert res.statuses == {"cross": "optimal"}
    assert res.lipschitz["cross"] == pytest.approx(truth.value, rel=1e-6)
    assert res.uncapped_radius <= margin / truth.value * (1 + 1e-6)
    assert res.uncapped_radius == pytest.approx(margin / truth.value, rel=1e-6)


# --- issue 44 item 5: exact or a bracket, the total time limit ---------------------------------

#: the keys certify's JSON had before issue 44 (kept; new ones are added after them)
OLD_KEYS = ["predicted", "margins", "lipschitz", "radius", "uncapped_radius", "ball_radius",
            "certified_ball", "capped", "method", "norm", "statuses", "seconds"]  # fmt: skip


def _four_classes():
    rng = np.random.default_rng(7)
    net = random_network(rng, [2, 8, 8, 4])
    return net, LinfBall(rng.uniform(0, 1, size=2), 0.2)


def test_text_marks_each_constant_exact_or_a_bracket():
    from lipopt.cli.certify import format_certificate

    net, ball = _four_classes()
    res = certify(net, ball)
    assert res.statuses == {"cross": "optimal"} and res.exact == {"cross": True}
    assert list(res.to_dict())[: len(OLD_KEYS)] == OLD_KEYS
    assert {"lower", "exact", "total_time_limit"} <= set(res.to_dict())
    text = format_certificate(res, "net.onnx")
    assert f"lipschitz   cross: {res.lipschitz['cross']:.6g} (exact)   (linf" in text
    assert "not exact" not in text
    bracket = replace(res, lipschitz={"cross": 218.695}, statuses={"cross": "time_limit"},
                      lower={"cross": 201.3}, exact={"cross": False})  # fmt: skip
    text = format_certificate(bracket, "net.onnx")
    assert "lipschitz   cross: <= 218.695 (time_limit; attained 201.3)   (linf" in text
    assert "note        1 of 1 constants not exact: the radius is certified from" in text


def test_the_docstring_says_time_limit_is_per_constant():
    doc = " ".join(certify.__doc__.split())
    assert "``time_limit`` is **per constant**" in doc
    assert "total_time_limit" in inspect.signature(certify).parameters


def test_total_time_limit_cuts_each_solve_then_bounds_the_rest(monkeypatch):
    """Each constant gets min(time_limit, what is left); once the total is spent the rest are
    bounded by interval bounds, never above the truth. A fake clock: each solve takes 6 s."""
    module = importlib.import_module("lipopt.certify")  # lipopt.certify is also the function
    net, ball = _four_classes()
    exact = certify(net, ball, method="pairwise")
    clock, given = [0.0], []
    real = module.lipschitz

    def six_seconds(network, domain, **options):
        given.append(options["time_limit"])
        clock[0] += 6.0
        return real(network, domain, **{**options, "time_limit": None})

    monkeypatch.setattr(module, "lipschitz", six_seconds)
    monkeypatch.setattr(module, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    res = certify(net, ball, method="pairwise", time_limit=8.0, total_time_limit=10.0)
    assert given == [8.0, 4.0]  # min(8, 10), then min(8, 10 - 6); then 2 s over: no solve
    names = list(res.lipschitz)
    assert [res.statuses[n] for n in names] == ["optimal", "optimal", BUDGET_SPENT]
    assert res.exact[names[2]] is False and res.lower[names[2]] is None
    assert res.lipschitz[names[2]] >= exact.lipschitz[names[2]] * (1 - 1e-9)
    assert res.radius <= exact.radius * (1 + 1e-9)
    assert res.total_time_limit == 10.0


@pytest.mark.parametrize("widths, norm, ball_radius", CASES)
@pytest.mark.parametrize("method", ["cross", "class", "pairwise", "naive"])
def test_a_spent_total_leaves_a_certified_radius(widths, norm, ball_radius, method):
    """With no time at all, every constant is the interval bound: the radius is still sound."""
    rng = np.random.default_rng(sum(widths) + len(method) + 1)
    net = random_network(rng, widths)
    x = rng.uniform(0, 1, size=widths[0])
    res = certify(net, BALLS[norm](x, ball_radius), method=method, total_time_limit=1e-12)
    assert set(res.statuses.values()) == {BUDGET_SPENT}
    assert not any(res.exact.values())
    _assert_radius_keeps_the_class(net, x, res, ball_radius, rng)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "30", True])
def test_a_bad_total_time_limit_is_refused_before_any_solve(bad, monkeypatch):
    module = importlib.import_module("lipopt.certify")  # lipopt.certify is also the function
    monkeypatch.setattr(module, "lipschitz", None)  # a solve would fail with a TypeError
    net, ball = _four_classes()
    with pytest.raises(LipschitzError, match="^total time limit must be positive, got "):
        certify(net, ball, total_time_limit=bad)


@pytest.fixture
def model_path(tmp_path):
    net, ball = _four_classes()
    return str(save_onnx(net, tmp_path / "net.onnx")), ball


def _cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "extra, error",
    [
        (["--total-time-limit", "0"], "total time limit must be positive, got 0.0"),
        (["--time-limit", "-1"], "time limit must be positive, got -1.0"),
        (["--solver", "nosuch"], "unknown solver 'nosuch'"),
    ],
)
def test_cli_checks_every_option_before_printing_anything(model_path, capsys, extra, error):
    path, ball = model_path
    centre = ",".join(repr(float(v)) for v in ball.center)
    code, out, err = _cli(capsys, "certify", path, "--center", centre, "--radius", "0.2", *extra)
    assert code == 2 and out == ""
    assert err.splitlines()[0].startswith(f"lipopt certify: error: {error}")
    assert len(err.splitlines()) == 1  # no progress line before it


def test_cli_total_time_limit_spent(model_path, capsys):
    path, ball = model_path
    centre = ",".join(repr(float(v)) for v in ball.center)
    argv = ["certify", path, "--center", centre, "--radius", "0.2", "--method", "naive",
            "--total-time-limit", "1e-12", "--quiet"]  # fmt: skip
    code, out, err = _cli(capsys, *argv)
    assert code == 0 and err == ""
    assert out.count("(not solved: total time limit spent; interval bound)") == 3
    assert "note        3 of 3 constants not exact" in out
    assert "note        the total time limit (1e-12 s) was spent before 3 of them" in out
    code, out, _ = _cli(capsys, *argv, "--json")
    data = json.loads(out)
    assert set(data["statuses"].values()) == {BUDGET_SPENT}
    assert data["total_time_limit"] == 1e-12 and not any(data["exact"].values())


def test_cli_total_time_limit_is_not_for_points(model_path, capsys, tmp_path):
    path, _ = model_path
    np.save(tmp_path / "x.npy", np.zeros((2, 2)))
    argv = ["certify", path, "--points", str(tmp_path / "x.npy"), "--radius", "0.1",
            "--out", str(tmp_path / "o.jsonl"), "--total-time-limit", "5"]  # fmt: skip
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("lipopt certify: error: --total-time-limit goes with --center")
