import json

import numpy as np
import pytest

from lipopt.domain import Box, DomainError, L1Ball, LinfBall, load_vector, parse_ball, parse_box


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: Box([1.0, 0.0], [0.0, 1.0]), "lower < upper"),
        (lambda: Box([0.0, 0.0], [0.0, 1.0]), "lower < upper"),
        (lambda: Box([0.0, 0.0], [1.0]), "entries"),
        (lambda: Box([np.nan, 0.0], [1.0, 1.0]), "NaN"),
        (lambda: LinfBall([0.0, 0.0], -0.1), "positive"),
        (lambda: LinfBall([0.0, 0.0], 0.0), "positive"),
        (lambda: L1Ball([0.0, np.inf], 0.1), "NaN or infinite"),
        (lambda: L1Ball([0.0], float("nan")), "finite"),
    ],
)
def test_domain_rejects_bad_values(make, fragment):
    with pytest.raises(DomainError, match=fragment):
        make()


def test_parse_box_negative_numbers_and_broadcast():
    box = parse_box("-1,1", 3)
    np.testing.assert_array_equal(box.lower, [-1, -1, -1])
    np.testing.assert_array_equal(box.upper, [1, 1, 1])


def test_parse_box_from_json_and_npy(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"lower": [0, -2], "upper": [1, 3]}))
    box = parse_box(str(path), 2)
    np.testing.assert_array_equal(box.lower, [0, -2])
    npy = tmp_path / "b.npy"
    np.save(npy, np.array([[0.0, -2.0], [1.0, 3.0]]))
    np.testing.assert_array_equal(parse_box(str(npy), 2).upper, [1, 3])


@pytest.mark.parametrize(
    "text, dim, fragment",
    [
        ("0,1,2", 2, "LO,HI"),
        ("1,0", 2, "lower < upper"),
        ("a,b", 2, "comma-separated"),
        ("missing.json", 2, "not found"),
    ],
)
def test_parse_box_errors(text, dim, fragment):
    with pytest.raises(DomainError, match=fragment):
        parse_box(text, dim)


def test_parse_box_wrong_length_file(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"lower": [0, 0, 0], "upper": [1, 1, 1]}))
    with pytest.raises(DomainError, match="takes 2 inputs"):
        parse_box(str(path), 2)


def test_parse_ball_center_from_files(tmp_path):
    np.save(tmp_path / "x.npy", np.array([0.1, -0.5]))
    (tmp_path / "x.txt").write_text("0.1 -0.5\n")
    (tmp_path / "x.json").write_text("[0.1, -0.5]")
    for name in ("x.npy", "x.txt", "x.json"):
        ball = parse_ball(str(tmp_path / name), 0.2, "linf", 2)
        np.testing.assert_allclose(ball.center, [0.1, -0.5])
    assert isinstance(parse_ball("-0.5,0.2", 0.1, "l1", 2), L1Ball)


def test_parse_ball_wrong_length():
    with pytest.raises(DomainError, match="takes 3 inputs"):
        parse_ball("0.1,0.2", 0.1, "linf", 3)


def test_load_vector_rejects_nan():
    with pytest.raises(DomainError, match="NaN"):
        load_vector("1,nan", "--c")


@pytest.mark.parametrize(
    "domain",
    [
        Box([0.0, -1.0, 2.0], [1.0, 1.0, 2.5]),
        LinfBall([0.3, 0.1, 0.0], 0.2),
        L1Ball([0.3, 0.1, 0.0], 0.5),
    ],
)
def test_domain_samples_lie_inside(domain, rng):
    points = domain.sample(2000, rng)
    assert points.shape == (2000, 3)
    assert all(domain.contains(p) for p in points)


def test_l1_ball_samples_fill_the_ball(rng):
    ball = L1Ball([0.0, 0.0], 1.0)
    radii = np.abs(ball.sample(20000, rng)).sum(axis=1)
    # uniform in a 2-D ball: P(||x||_1 <= 1/2) = 1/4
    assert abs(np.mean(radii <= 0.5) - 0.25) < 0.02
    assert radii.max() > 0.98
