"""The norm objects (issue 43, item 5): each norm's dual, label, polytope flag, numpy dual norm
and factors against closed forms; every per-norm table has a row for every member; every
command's norm choices are the enums' (filtered) members."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lipopt.bounds.tangent import DIRECTION_BALLS
from lipopt.certify import BALL_NORMS
from lipopt.cli import make_parser
from lipopt.domain import BALLS, Box
from lipopt.estimators.relaxation_parts import BALL_ROWS
from lipopt.estimators.semialgebraic import SDP_NORMS
from lipopt.formulation.build import OBJECTIVE_BUILDERS
from lipopt.formulation.objective import DUAL_BALLS, OBJECTIVES
from lipopt.heuristics.target import problem
from lipopt.norms import (
    EVERY_NORM,
    INPUT_FACTS,
    L2_OUTPUT_VALUES,
    OUTPUT_FACTS,
    POLYHEDRAL,
    InputNorm,
    OutputNorm,
    dual_norm,
    operator_value,
)
from tests.helpers import random_network

LINF, L1, L2 = InputNorm.LINF, InputNorm.L1, InputNorm.L2
#: numpy's order of each input norm, written out
ORDER = {LINF: np.inf, L1: 1.0, L2: 2.0}


def test_the_duals_are_the_closed_forms():
    assert (LINF.dual, L1.dual, L2.dual) == (L1, LINF, L2)
    for norm in InputNorm:
        assert norm.dual.dual is norm
        assert norm.order == ORDER[norm]
        assert norm.dual_order == ORDER[norm.dual]
        assert norm.dual_name == norm.dual.value
    assert (LINF.dual_order, L1.dual_order, L2.dual_order) == (1.0, np.inf, 2.0)


def test_the_labels_name_the_norm_and_what_the_constant_maximises():
    assert LINF.label == "linf (max ||grad||_1)"
    assert L1.label == "l1 (max ||grad||_inf)"
    assert L2.label == "l2 (max ||grad||_2)"


def test_polyhedral_norms():
    assert [n.is_polyhedral for n in InputNorm] == [True, True, False]
    assert POLYHEDRAL == (LINF, L1) and EVERY_NORM == (LINF, L1, L2)
    assert [n for n in OutputNorm if not n.is_polyhedral] == [OutputNorm.L2]
    assert InputNorm.polyhedral("L1") is L1
    with pytest.raises(ValueError, match="^the forward formulation takes the linf and l1 input"):
        InputNorm.polyhedral("l2", "the forward formulation")


def test_only_the_l1_input_norm_decomposes_into_candidates():
    assert [n for n in InputNorm if n.decomposes] == [L1]


@pytest.mark.parametrize("norm", list(InputNorm))
def test_the_dual_norm_is_numpys(norm):
    rng = np.random.default_rng(1)
    g = rng.normal(size=(4, 7))
    expected = np.linalg.norm(g, ord=ORDER[norm.dual], axis=-1)
    assert np.array_equal(norm.dual_norm(g), expected)
    assert np.array_equal(dual_norm(g, norm.value), expected)
    single = dual_norm(g[0], norm)
    assert isinstance(single, float) and single == expected[0]


@pytest.mark.parametrize("norm", list(InputNorm))
def test_the_dual_norm_is_the_largest_product_over_the_unit_ball(norm):
    """Hölder: ``x·g <= ||x||_α ||g||_{α*}``, with equality at a unit vector of α."""
    rng = np.random.default_rng(2)
    g = rng.normal(size=6)
    best = {LINF: np.sign(g), L1: np.eye(6)[np.argmax(np.abs(g))] * np.sign(g), L2: g}[norm]
    best = best / np.linalg.norm(best, ord=ORDER[norm])
    assert best @ g == pytest.approx(norm.dual_norm(g), rel=1e-12)
    for x in rng.normal(size=(200, 6)):
        assert x @ g <= np.linalg.norm(x, ord=ORDER[norm]) * norm.dual_norm(g) * (1 + 1e-12)


@pytest.mark.parametrize("norm", list(InputNorm))
@pytest.mark.parametrize("dim", [1, 2, 9])
def test_the_l2_factor_is_the_largest_norm_on_the_unit_l2_ball(norm, dim):
    factor = norm.l2_factor(dim)
    assert factor == {LINF: 1.0, L1: float(np.sqrt(dim)), L2: 1.0}[norm]
    at = np.ones(dim) / np.sqrt(dim) if norm is L1 else np.eye(dim)[0]
    assert np.linalg.norm(at, ord=ORDER[norm]) == pytest.approx(factor, rel=1e-12)
    rng = np.random.default_rng(dim)
    for v in rng.normal(size=(100, dim)):
        v = v / np.linalg.norm(v)
        assert np.linalg.norm(v, ord=ORDER[norm]) <= factor * (1 + 1e-12)


def test_the_estimators_scale_an_l2_bound_by_the_dual_s_factor():
    net = random_network(np.random.default_rng(0), [9, 4, 1])
    box = Box(-np.ones(9), np.ones(9))
    scales = {n: problem(net, box, n, None).l2_scale() for n in InputNorm}
    assert scales == {LINF: 3.0, L1: 1.0, L2: 1.0}


@pytest.mark.parametrize("norm", [n for n in OutputNorm if n.is_polyhedral])
@pytest.mark.parametrize("m", [1, 2, 4])
def test_the_seed_bounds_are_the_range_over_the_dual_ball_s_vertices(norm, m):
    if norm is OutputNorm.ABS and m != 1 or norm is OutputNorm.CROSS and m == 1:
        return  # abs is for one output; cross on one output also counts 0 (see seed_bounds)
    w = np.random.default_rng(m).normal(size=(m, 5))
    verts = norm.vertices(m)  # up to sign; cross: e_i and e_i - e_j, whose negatives are in
    flip = verts[m:] if norm is OutputNorm.CROSS else verts
    verts = np.vstack([verts, -flip])
    lower, upper = norm.seed_bounds(w)
    values = verts @ w
    assert np.allclose(lower, values.min(axis=0)) and np.allclose(upper, values.max(axis=0))


def test_the_l2_output_norm_s_seed_bounds_are_the_column_norms():
    w = np.random.default_rng(5).normal(size=(3, 4))
    lower, upper = OutputNorm.L2.seed_bounds(w)
    assert np.allclose(upper, np.linalg.norm(w, axis=0)) and np.allclose(lower, -upper)
    assert OutputNorm.L2.vertices(3) is None


def test_the_l2_output_value_is_each_input_norm_s_closed_form():
    jac = np.random.default_rng(6).normal(size=(3, 5))
    assert operator_value(jac, L2, "l2") == pytest.approx(np.linalg.norm(jac, 2))
    assert operator_value(jac, L1, "l2") == pytest.approx(np.linalg.norm(jac, axis=0).max())
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=5)))
    brute = np.linalg.norm(signs @ jac.T, axis=1).max()
    assert operator_value(jac, LINF, "l2") == pytest.approx(brute)


def test_every_norm_has_its_row_in_every_per_norm_table():
    """A norm added to an enum without its facts, objective or balls fails here."""
    assert set(INPUT_FACTS) == set(InputNorm) == set(L2_OUTPUT_VALUES)
    assert set(OBJECTIVE_BUILDERS) == set(InputNorm) == set(DIRECTION_BALLS)
    assert set(OBJECTIVES) == set(POLYHEDRAL)
    assert set(OUTPUT_FACTS) == set(OutputNorm) == set(DUAL_BALLS)
    assert SDP_NORMS == tuple(BALL_ROWS)
    assert sorted(BALLS) == sorted(InputNorm.choices())
    assert set(BALL_NORMS.values()) == set(InputNorm.choices())


def _choices(command: str) -> dict[str, list[str]]:
    """The choices of ``command``'s norm options, by destination."""
    parser = make_parser(show_all=True)
    sub = next(a for a in parser._subparsers._actions if a.choices and command in a.choices)  # noqa: SLF001
    actions = sub.choices[command]._actions  # noqa: SLF001
    return {a.dest: list(a.choices) for a in actions if a.dest in ("norm", "ball", "output_norm")}


EVERY_INPUT = [n.value for n in InputNorm]
POLYHEDRAL_INPUT = [n.value for n in InputNorm if n.is_polyhedral]
EVERY_OUTPUT = [n.value for n in OutputNorm]
POLYHEDRAL_OUTPUT = [n.value for n in OutputNorm if n.is_polyhedral]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("solve", {"ball": EVERY_INPUT, "norm": EVERY_INPUT, "output_norm": EVERY_OUTPUT}),
        # a single exported model takes only the norms whose balls are polytopes
        (
            "export",
            {"ball": EVERY_INPUT, "norm": POLYHEDRAL_INPUT, "output_norm": POLYHEDRAL_OUTPUT},
        ),
        ("compare", {"ball": EVERY_INPUT, "norm": EVERY_INPUT}),
        ("certify", {"ball": EVERY_INPUT}),
        ("batch", {"norm": EVERY_INPUT, "output_norm": EVERY_OUTPUT}),
    ],
)
def test_every_command_s_norm_choices_are_the_enums_members(command, expected):
    assert _choices(command) == expected


def test_the_summary_names_the_norm_by_its_label(tmp_path, capsys):
    from lipopt.cli import main
    from tests.helpers import save_onnx

    path = save_onnx(random_network(np.random.default_rng(4), [2, 3, 1]), tmp_path / "n.onnx")
    assert main(["solve", str(path), "--box", "0,1", "--norm", "l1", "--quiet"]) == 0
    assert "norm l1 (max ||grad||_inf)" in capsys.readouterr().out
