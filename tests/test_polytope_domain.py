"""Polytopes, a ball ∩ a polytope and unions: validation, the interior point, the bounding box,
samples, the map into the set, parsing, and the first layer's range (against closed forms and
brute force, not lipopt's own output)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import linprog

from lipopt.bounds.cut_range import affine_range
from lipopt.domain import (
    Box,
    Disjunction,
    DomainError,
    Intersection,
    L1Ball,
    L2Ball,
    LinfBall,
    Polytope,
    intersect,
    parse_clip,
    parse_polytope,
)
from lipopt.domain.interior import pull_inside

SQUARE = ([-1.0, -1.0], [1.0, 1.0])


@pytest.mark.parametrize(
    "a, b, fragment",
    [
        ([[1.0, 1.0]], [-3.0], "empty"),  # x0 + x1 <= -3 misses the square
        ([[1.0, 1.0]], [-2.0], "no interior"),  # only the corner (-1, -1)
        ([[1.0, 1.0], [-1.0, -1.0]], [0.0, 0.0], "no interior"),  # the diagonal, flat
        ([[0.0, 0.0]], [-1.0], "empty"),  # 0 <= -1
        ([[1.0, 1.0, 1.0]], [0.0], "shape"),
        ([[1.0, np.nan]], [0.0], "NaN"),
        ([[1.0, 1.0]], [0.0, 1.0], "rows"),
    ],
)
def test_a_polytope_without_interior_or_malformed_is_refused_in_one_line(a, b, fragment):
    with pytest.raises(DomainError, match=fragment) as info:
        Polytope(a, b, *SQUARE)
    assert "\n" not in str(info.value)


def test_the_interior_point_has_the_largest_inscribed_ball():
    # the triangle x0 + x1 <= 0 in the square: the largest ball inside has radius
    # 2 / (2 + sqrt 2) (closed form of the right isoceles triangle with legs 2)
    polytope = Polytope([[1.0, 1.0]], [0.0], *SQUARE)
    assert polytope.interior.slack == pytest.approx(2.0 / (2.0 + np.sqrt(2.0)), rel=1e-9)
    assert polytope.contains(polytope.interior_point, tol=0.0)


def test_the_bounding_box_is_tight_and_holds_the_set():
    polytope = Polytope([[1.0, 1.0], [1.0, -1.0]], [0.5, 0.25], *SQUARE)
    low, high = polytope.bounding_box()
    # the two rows added: 2 x0 <= 0.75, reached at x1 = 0.125; x1 = 1 and x0 = -1 are reached
    assert high[0] == pytest.approx(0.375, abs=1e-8) and high[0] >= 0.375
    assert high[1] == pytest.approx(1.0) and low[0] == pytest.approx(-1.0)
    points = polytope.sample(2000, np.random.default_rng(0))
    assert np.all(points <= high) and np.all(points >= low)


@pytest.mark.parametrize("rows", [[[1.0, 1.0]], [[1.0, 1.0], [-1.0, 2.0]]])
def test_samples_lie_inside_by_rejection_and_by_hit_and_run(rows):
    b = [-1.9] + [0.5] * (len(rows) - 1)  # a sliver: one draw in 200 of the box lands inside
    for cut in ([[1.0, 1.0]], rows):
        polytope = Polytope(cut, b[: len(cut)], *SQUARE)
        points = polytope.sample(300, np.random.default_rng(1))
        assert points.shape == (300, 2)
        assert all(polytope.contains(p) for p in points)
        assert np.ptp(points[:, 0]) > 0.0  # not one point repeated


def test_an_l2_ball_cut_by_a_polytope_finds_a_point_in_both_or_says_how_far():
    cut = Polytope([[1.0, 1.0]], [-1.4], -5.0, 5.0)  # the ball's nearest point: distance 0.99
    domain = intersect(L2Ball([0.0, 0.0], 1.0), cut=cut)
    assert isinstance(domain, Intersection)
    assert domain.contains(domain.interior_point, tol=0.0)
    points = domain.sample(200, np.random.default_rng(2))
    assert all(domain.contains(p) for p in points)
    with pytest.raises(DomainError, match="1.06066"):  # 1.5 / sqrt 2 > 1
        intersect(L2Ball([0.0, 0.0], 1.0), cut=Polytope([[1.0, 1.0]], [-1.5], -5.0, 5.0))


def test_a_shallow_cap_of_an_l2_ball_keeps_its_inradius():
    # the cap cut from the unit disc by x0 + x1 >= 1.4138: its inscribed circle has radius
    # (1 - h) / 2 with h = 1.4138 / sqrt 2 the line's distance from the centre
    cap = intersect(L2Ball([0.0, 0.0], 1.0), cut=Polytope([[-1.0, -1.0]], [-1.4138], -5.0, 5.0))
    inradius = (1.0 - 1.4138 / np.sqrt(2.0)) / 2.0
    assert 0.99 * inradius <= cap.interior.slack <= inradius
    assert cap.contains(cap.interior_point, tol=0.0)
    with pytest.raises(DomainError, match="outside the radius 1"):  # 1.4143 / sqrt 2 > 1
        intersect(L2Ball([0.0, 0.0], 1.0), cut=Polytope([[-1.0, -1.0]], [-1.4143], -5.0, 5.0))


def test_intersect_returns_the_simplest_domain_of_the_set():
    ball = L2Ball([0.5, 0.5], 0.2)
    assert intersect(ball, clip=(0.0, 1.0)) is ball  # the clip does not cut it
    clipped = intersect(LinfBall([0.9, 0.5], 0.2), clip=(0.0, 1.0))
    assert isinstance(clipped, Box)
    np.testing.assert_allclose(clipped.upper, [1.0, 0.7])
    cut = Polytope([[1.0, 0.0]], [0.95], 0.0, 2.0)
    both = intersect(Box([0.0, 0.0], [1.0, 1.0]), clip=(0.0, 0.99), cut=cut)
    assert isinstance(both, Polytope)
    np.testing.assert_allclose(both.upper, [0.99, 0.99])
    l1 = intersect(L1Ball([0.0, 0.0], 1.0), clip=(0.0, 1.0))
    assert isinstance(l1, Intersection) and not l1.contains([-0.1, 0.0])
    with pytest.raises(DomainError, match="coordinate 0"):
        intersect(Box([0.0, 0.0], [1.0, 1.0]), clip=(2.0, 3.0))


def test_pull_inside_maps_every_point_into_the_set():
    domain = intersect(L1Ball([0.0, 0.0, 0.0], 1.0), cut=Polytope([[1.0, 1.0, 1.0]], [-0.5], -5, 5))
    rng = np.random.default_rng(3)
    points = rng.normal(size=(100, 3)) * 2.0
    moved = pull_inside(domain, points)
    assert all(domain.contains(p, tol=0.0) for p in moved)
    inside = domain.sample(20, rng)
    np.testing.assert_array_equal(pull_inside(domain, inside), inside)  # kept where inside


def test_parse_polytope_from_json_and_npz_and_refusals(tmp_path):
    text = tmp_path / "p.json"
    text.write_text(json.dumps({"A": [[1, 1]], "b": [0.5], "lower": -1, "upper": 1}))
    polytope = parse_polytope(str(text), 2)
    np.testing.assert_array_equal(polytope.lower, [-1, -1])
    archive = tmp_path / "p.npz"
    np.savez(archive, A=np.array([[1.0, 1.0]]), b=np.array([0.5]), lower=-np.ones(2),
             upper=np.ones(2))  # fmt: skip
    np.testing.assert_array_equal(parse_polytope(str(archive), 2).A, polytope.A)
    (tmp_path / "short.json").write_text(json.dumps({"A": [[1, 1]], "b": [0.5]}))
    with pytest.raises(DomainError, match="lacks lower, upper"):
        parse_polytope(str(tmp_path / "short.json"), 2)
    with pytest.raises(DomainError, match="not found"):
        parse_polytope(str(tmp_path / "none.json"), 2)
    with pytest.raises(DomainError, match=r"shape \(m, 3\)"):
        parse_polytope(str(text), 3)
    assert parse_clip("0,1") == (0.0, 1.0)
    with pytest.raises(DomainError, match="LO < HI"):
        parse_clip("1,0")


def test_a_union_checks_its_parts():
    union = Disjunction((Box([0.0], [1.0]), Polytope([[1.0]], [3.0], 2.0, 4.0)))
    assert union.contains([2.5]) and not union.contains([1.5])
    high = float(union.bounding_box()[1][0])
    assert high == pytest.approx(3.0) and high >= 3.0  # the row x <= 3 tightens the box
    with pytest.raises(DomainError, match="two parts"):
        Disjunction((Box([0.0], [1.0]),))
    with pytest.raises(DomainError, match="input counts"):
        Disjunction((Box([0.0], [1.0]), Box([0.0, 0.0], [1.0, 1.0])))


def _lp_range(w: np.ndarray, a: np.ndarray, b: np.ndarray, box) -> tuple[float, float]:
    """Independent truth: scipy's LP over the polytope."""
    bounds = list(zip(*box))
    low = linprog(w, A_ub=a, b_ub=b, bounds=bounds, method="highs").fun
    high = -linprog(-w, A_ub=a, b_ub=b, bounds=bounds, method="highs").fun
    return low, high


def test_the_first_layer_range_over_a_polytope_is_the_lp_range_and_holds_on_samples():
    rng = np.random.default_rng(4)
    for _ in range(5):
        d = 4
        a, b = rng.normal(size=(3, d)), rng.uniform(0.2, 1.0, size=3)
        polytope = Polytope(a, b, -np.ones(d), np.ones(d))
        weight, bias = rng.normal(size=(6, d)), rng.normal(size=6)
        low, high = affine_range(weight, bias, polytope)
        for i in range(6):
            lo, hi = _lp_range(weight[i], a, b, (-np.ones(d), np.ones(d)))
            assert low[i] == pytest.approx(lo + bias[i], abs=1e-7)
            assert high[i] == pytest.approx(hi + bias[i], abs=1e-7)
        values = polytope.sample(500, rng) @ weight.T + bias
        assert np.all(values >= low) and np.all(values <= high)


def test_the_first_layer_range_over_an_l1_ball_cut_by_a_row_is_the_lp_range():
    ball, cut = L1Ball([0.0, 0.0], 1.0), Polytope([[1.0, 0.0]], [0.25], -5.0, 5.0)
    domain = intersect(ball, cut=cut)
    low, high = affine_range(np.array([[1.0, 0.0], [1.0, 1.0]]), np.zeros(2), domain)
    # x0 <= 0.25 on the l1 ball: x0 in [-1, 0.25]; x0 + x1 <= 1 (the ball's face) is reached
    np.testing.assert_allclose(low, [-1.0, -1.0], atol=1e-8)
    np.testing.assert_allclose(high, [0.25, 1.0], atol=1e-8)
    assert np.all(high >= [0.25, 1.0]) and np.all(low <= [-1.0, -1.0])  # outward
