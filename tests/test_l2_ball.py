"""ℓ2-ball domains (issue 28): ``{x : ||x - c||_2 <= ρ}``, taken by SCIP as one convex quadratic
row and by HiGHS as its bounding box cut at each solution outside it, against the brute-force
oracle (``tests/oracle.py``: the bounding box's regions, each checked against the ball by a conic
program); the margin check's verdicts against the same conic program; sampled and attacked
gradients; stopped solves; the CLI. The ℓ2 input norm over ℓ2 balls is in test_l2_exact.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lipopt import Affine, Box, L2Ball, lipschitz
from lipopt.bounds.interval import first_layer_bounds
from lipopt.cli import main
from lipopt.domain import DomainError, parse_ball
from lipopt.formulation.forward import add_tangent_cut
from lipopt.heuristics.attack import gradient_attack, project
from lipopt.lipschitz import build_model
from lipopt.verify import Dimension, check_region
from tests.helpers import random_network, save_onnx
from tests.oracle import (
    _l2_chebyshev,
    _pattern_constraints,
    brute_force_lipschitz,
    from_lipopt,
    sampled_max_gradient_norm,
)

RELATIVE = 1e-6
TARGETS = ("c", "l1", "linf", "cross", "l2")


def _case(seed: int):
    """A small network (two or three inputs, one or two hidden layers, three outputs) and an
    ℓ2 ball that cuts through its regions."""
    rng = np.random.default_rng(2850 + seed)
    d = 2 + seed % 2
    hidden = [6] if seed % 3 == 0 else [5, 4]
    net = random_network(rng, [d, *hidden, 3])
    return net, L2Ball(rng.uniform(-0.5, 0.5, d), 0.7), rng.normal(size=3)


def _oracle(net, ball, norm: str, target: str, c) -> float:
    if target == "c":
        return brute_force_lipschitz(*from_lipopt(net, ball), c, norm).value
    return brute_force_lipschitz(*from_lipopt(net, ball), None, norm, output_norm=target).value


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_the_constant_over_an_l2_ball_is_the_oracles(seed, norm):
    """8 networks × the ℓ∞ and ℓ1 input norms × a fixed c and one output norm: the default
    plan (SCIP, the ball's quadratic row) and HiGHS's MIP (the bounding box and tangent cuts;
    not for the ℓ2 output norm, whose ball only SCIP takes) give the oracle's value."""
    net, ball, c = _case(seed)
    for target in ("c", TARGETS[1 + seed % 4]):
        truth = _oracle(net, ball, norm, target, c)
        keywords = {"c": c} if target == "c" else {"output_norm": target}
        plans = [("auto", {})] + ([("highs", {"formulation": "backward"})] * (target != "l2"))
        for solver, levers in plans:
            result = lipschitz(net, ball, norm, solver=solver, **levers, **keywords)
            where = f"{target} {solver}"
            assert result.status == "optimal" and result.exact_certified, where
            assert result.value == pytest.approx(truth, rel=RELATIVE), where
            assert result.lower <= truth * (1 + 1e-9) + 1e-12, where
            assert ball.contains(result.witness), where


def test_tangent_cuts_are_what_closes_highs_model():
    """A ball small against its bounding box: HiGHS's first optimum lies in a corner of the box
    outside the ball; the cuts there (pattern and tangent) are refinements, and the value is
    the oracle's, below the box's."""
    rng = np.random.default_rng(15)  # 3 refinements (the value 4.13, the box's 6.18)
    net = random_network(rng, [4, 10, 10, 1])
    ball = L2Ball(np.array([0.1, -0.2, 0.0, 0.3]), 1.0)
    truth = _oracle(net, ball, "linf", "c", np.ones(1))
    box = brute_force_lipschitz(*from_lipopt(net, Box(*ball.bounding_box())), [1.0], "linf")
    result = lipschitz(net, ball, c=[1.0], solver="highs", formulation="backward")
    assert result.status == "optimal" and result.value == pytest.approx(truth, rel=RELATIVE)
    assert result.refinements >= 1
    assert truth < box.value * (1 - 1e-3)  # the ball is what the answer measured


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_sampled_and_attacked_gradients_never_exceed_the_value(seed, norm):
    net, ball, c = _case(10 + seed)
    result = lipschitz(net, ball, norm, c=c)
    sampled = sampled_max_gradient_norm(*from_lipopt(net, ball), c, norm, n=10_000)
    assert sampled <= result.value * (1 + 1e-9)
    point, attacked = gradient_attack(net, ball, c, norm, rng=np.random.default_rng(seed))
    assert ball.contains(point) and attacked <= result.value * (1 + 1e-9)


@pytest.mark.parametrize("solver", ["highs", "scip"])
@pytest.mark.parametrize("limit", [0.05, 0.5])
def test_a_stopped_solve_brackets_the_oracles_value(solver, limit):
    rng = np.random.default_rng(11)
    net = random_network(rng, [3, 10, 10, 2])
    ball = L2Ball(np.zeros(3), 1.5)
    truth = _oracle(net, ball, "linf", "cross", None)
    result = lipschitz(
        net, ball, output_norm="cross", solver=solver, time_limit=limit, formulation="backward"
    )
    assert result.lower is None or result.lower <= truth * (1 + 1e-9)
    assert result.upper >= truth * (1 - RELATIVE)


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_the_lp_mode_over_an_l2_ball_is_a_sound_upper_bound(solver):
    net, ball, c = _case(3)
    truth = _oracle(net, ball, "linf", "c", c)
    result = lipschitz(net, ball, c=c, solver=solver, mode="lp")
    assert result.status == "relaxation" and result.value >= truth * (1 - 1e-9)


def _patterns(net, ball, rng):
    """Activation patterns of points inside, on and outside the ball, and with one flip."""
    d = net.input_dim
    directions = rng.normal(size=(30, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    scales = rng.uniform(0.0, 2.0, size=(30, 1)) * ball.radius
    for x in ball.center + directions * scales:
        pattern = [(z > 0).astype(float) for z in net.pre_activations(x[None, :])]
        pattern = [p[0] for p in pattern]
        yield pattern
        flipped = [p.copy() for p in pattern]
        layer = rng.integers(len(flipped))
        unit = rng.integers(len(flipped[layer]))
        flipped[layer][unit] = 1.0 - flipped[layer][unit]
        yield flipped


@pytest.mark.parametrize("seed", range(4))
def test_the_margin_check_over_an_l2_ball_agrees_with_a_conic_solver(seed):
    """``check_region`` decides ``max t: region rows >= t, ||x - c|| + t <= ρ`` without a
    conic solver (a weak-duality certificate, least-norm points); its verdicts against the
    oracle's conic program (cvxpy, Clarabel): full-dimensional only with a positive optimum and
    a point strictly inside both, lower-dimensional only with an optimum at most 0."""
    rng = np.random.default_rng(90 + seed)
    net = random_network(rng, [2 + seed % 3, 6, 5, 2])
    ball = L2Ball(rng.uniform(-0.5, 0.5, net.input_dim), 0.6)
    weights = from_lipopt(net, ball).weights
    decided = 0
    for pattern in _patterns(net, ball, rng):
        check = check_region(net, pattern, ball)
        rows, rhs = _pattern_constraints(weights, pattern)
        conic, _, _ = _l2_chebyshev(rows, rhs, ball.center, ball.radius)
        if check.dimension is Dimension.FULL:
            assert conic > 0 and check.margin <= conic * (1 + 1e-6) / ball.radius
            assert ball.contains(check.point, tol=0.0)
            assert all(
                np.all((z[0] > 0) == (p > 0))
                for z, p in zip(net.pre_activations(check.point[None, :]), pattern)
            )
        if check.dimension is Dimension.LOWER:
            assert conic <= 1e-7
        decided += check.dimension is not Dimension.UNDECIDED
    assert decided == 60  # no undecided verdict on these


def test_the_first_layer_range_over_an_l2_ball_is_exact():
    """``w·x + b`` ranges over ``w·c + b ± ρ ||w||_2``, attained at ``c ± ρ w/||w||``."""
    rng = np.random.default_rng(3)
    weight, bias = rng.normal(size=(5, 4)), rng.normal(size=5)
    ball = L2Ball(rng.normal(size=4), 0.3)
    lower, upper = first_layer_bounds(Affine(weight, bias), ball)
    tops = ball.center + ball.radius * weight / np.linalg.norm(weight, axis=1, keepdims=True)
    assert np.allclose(upper, np.einsum("ij,ij->i", weight, tops) + bias, rtol=1e-9)
    bottoms = 2 * ball.center - tops
    assert np.allclose(lower, np.einsum("ij,ij->i", weight, bottoms) + bias, rtol=1e-9)
    samples = ball.sample(5000, rng) @ weight.T + bias
    assert np.all(samples >= lower) and np.all(samples <= upper)


def test_a_tangent_cut_holds_on_the_ball_and_cuts_the_point_off():
    net = random_network(np.random.default_rng(0), [3, 4, 1])
    ball = L2Ball(np.array([0.2, 0.0, -0.1]), 0.5)
    lip = build_model(net, ball, c=[1.0])  # the exported model: the ball's quadratic row
    assert lip.model.component("x_in_ball") is not None
    assert lip.model.component("ball_cuts") is None
    assert not add_tangent_cut(lip.model, ball, ball.center + 2.0)  # no cuts in this model
    import pyomo.environ as pe  # noqa: PLC0415

    from lipopt.formulation.forward import add_input  # noqa: PLC0415 - the encoder alone

    model = pe.ConcreteModel()
    add_input(model, ball)  # the bounding box: the cuts come while solving
    outside = ball.center + np.array([0.6, 0.0, 0.0])
    assert not add_tangent_cut(model, ball, ball.center + np.array([0.3, 0.0, 0.0]))  # inside
    assert add_tangent_cut(model, ball, outside)
    cut = model.ball_cuts[1]
    for point in [*ball.sample(200, np.random.default_rng(1)), outside]:
        for j, value in enumerate(point):
            model.x[j].value = float(value)
        holds = pe.value(cut.body) <= pe.value(cut.upper) + 1e-12
        assert holds or not ball.contains(point)  # every point of the ball keeps the cut
    assert pe.value(cut.body) > pe.value(cut.upper)  # the outside point is cut off


def test_the_ball_samples_projects_and_parses():
    rng = np.random.default_rng(0)
    ball = L2Ball(np.array([1.0, -1.0, 0.5]), 0.25)
    points = ball.sample(4000, rng)
    distances = np.linalg.norm(points - ball.center, axis=1)
    assert np.all(distances <= 0.25) and np.mean(distances <= 0.125) == pytest.approx(
        1 / 8, abs=0.02
    )
    far = ball.center + np.array([3.0, 4.0, 0.0])
    nearest = project(ball, far)
    assert np.allclose(nearest, ball.center + 0.25 * np.array([0.6, 0.8, 0.0]))
    assert ball.contains(nearest, tol=0.0)  # a hair inside, not outside by rounding
    assert parse_ball("1,-1,0.5", 0.25, "l2", 3).describe() == "l2 ball of radius 0.25 in R^3"
    with pytest.raises(DomainError, match="radius must be positive"):
        L2Ball(np.zeros(2), 0.0)


def test_the_cli_solves_certifies_and_exports_over_an_l2_ball(tmp_path, capsys):
    net = random_network(np.random.default_rng(4), [2, 6, 3])
    model = str(save_onnx(net, tmp_path / "net.onnx"))
    ball = ["--center", "0.1,0.2", "--radius", "0.5", "--ball", "l2"]
    truth = _oracle(net, L2Ball(np.array([0.1, 0.2]), 0.5), "l2", "c", np.array([1.0, -1.0, 0]))
    assert main(["solve", model, *ball, "--c", "1,-1,0", "--norm", "l2", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["status"] == "optimal" and answer["value"] == pytest.approx(truth, rel=1e-6)
    assert main(["certify", model, *ball, "--json"]) == 0
    certificate = json.loads(capsys.readouterr().out)
    cross = _oracle(net, L2Ball(np.array([0.1, 0.2]), 0.5), "l2", "cross", None)
    assert certificate["norm"] == "l2"
    assert certificate["lipschitz"]["cross"] == pytest.approx(cross, rel=1e-6)
    margin = min(certificate["margins"].values())
    assert certificate["uncapped_radius"] == pytest.approx(margin / cross, rel=1e-6)
    out = tmp_path / "model.lp"
    assert main(["export", model, *ball, "--c", "1,-1,0", "--output", str(out)]) == 0
    assert "x_in_ball" in out.read_text()  # the ball as its quadratic row


def test_certify_points_in_l2_balls_equal_certify_alone(tmp_path, capsys):
    """``certify --points --ball l2``: each line's ℓ2 constant is that of the single call."""
    net = random_network(np.random.default_rng(8), [2, 6, 3])
    model = str(save_onnx(net, tmp_path / "net.onnx"))
    points = np.array([[0.1, 0.2], [-0.3, 0.4]])
    np.save(tmp_path / "x.npy", points)
    out = tmp_path / "c.jsonl"
    ball = ["--radius", "0.3", "--ball", "l2", "--quiet"]
    assert main(["certify", model, "--points", str(tmp_path / "x.npy"), *ball, "--out", str(out),
                 "--jobs", "1"]) == 0  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    capsys.readouterr()
    assert len(lines) == 2
    for line, x in zip(sorted(lines, key=lambda v: v["id"]), points):
        assert line["norm"] == "l2"
        centre = f"{float(x[0])!r},{float(x[1])!r}"
        assert main(["certify", model, "--center", centre, *ball, "--json"]) == 0
        alone = json.loads(capsys.readouterr().out)
        assert line["lipschitz"]["cross"] == pytest.approx(alone["lipschitz"]["cross"], rel=1e-6)
