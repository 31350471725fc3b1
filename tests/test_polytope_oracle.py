"""Polytope domains against the brute-force oracle (tests/oracle.py, which takes the rows on its
own): every case's rows cut off the maximiser of the set they cut, so an answer that ignored a
row would be wrong, and the test checks that it would be."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, Disjunction, L1Ball, L2Ball, LinfBall, Polytope, intersect, lipschitz
from lipopt.norms import dual_norm
from tests.helpers import random_network
from tests.oracle import assert_certified_exact, brute_force_lipschitz, from_lipopt

UNIT3 = Box(np.zeros(3), np.ones(3))
# (widths, the set the rows cut, --clip or None, input norm, output norm or None for a scalar c)
CASES = [
    ([3, 8, 8, 1], UNIT3, None, "linf", None),
    ([3, 8, 8, 1], UNIT3, None, "l1", None),
    ([2, 12, 12, 2], Box([-1.0, -1.0], [1.0, 1.0]), None, "linf", None),
    ([2, 12, 12, 2], Box([-1.0, -1.0], [1.0, 1.0]), None, "l1", None),
    ([3, 10, 6, 3], LinfBall([0.5, 0.5, 0.5], 0.4), None, "linf", "linf"),
    ([3, 10, 6, 3], LinfBall([0.8, 0.5, 0.5], 0.4), (0.0, 1.0), "l1", "l1"),
    ([3, 10, 6, 3], L1Ball([0.5, 0.5, 0.5], 0.8), None, "l1", None),
    ([3, 10, 6, 3], L1Ball([0.2, 0.5, 0.5], 0.6), (0.0, 1.0), "linf", "cross"),
    ([2, 6, 6, 6, 2], Box([0.0, 0.0], [1.0, 1.0]), None, "linf", "cross"),
    ([4, 8, 8, 2], Box(np.zeros(4), np.ones(4)), None, "linf", None),
    ([4, 8, 8, 2], L1Ball(np.full(4, 0.5), 0.7), None, "l1", "linf"),
    ([2, 16, 1], Box([0.0, 0.0], [1.0, 1.0]), None, "l2", None),
    ([3, 8, 8, 1], L2Ball([0.5, 0.5, 0.5], 0.5), None, "l2", None),
    ([3, 8, 8, 2], L2Ball([0.9, 0.5, 0.5], 0.4), (0.0, 1.0), "linf", None),
]


def _objective(rng: np.random.Generator, outputs: int, output_norm: str | None) -> dict:
    if output_norm is not None:
        return {"output_norm": output_norm}
    return {"c": rng.normal(size=outputs) if outputs > 1 else [1.0]}


def _oracle(net, domain, norm, objective):
    c = objective.get("c")
    output_norm = objective.get("output_norm", "abs")
    c = None if c is None else np.asarray(c, dtype=np.float64)
    return brute_force_lipschitz(*from_lipopt(net, domain), c, norm, output_norm)


def _cutting_rows(rng, base, whole, centre):
    """Two rows: one through a point between the set's centre and the maximiser, cutting the
    maximiser off, and one random row the centre keeps."""
    toward = whole.argmax_point - centre
    normal = toward / np.linalg.norm(toward)
    other = rng.normal(size=centre.size)
    other /= np.linalg.norm(other)
    low, high = base.bounding_box()
    for share in (0.5, 0.25, 0.0, -0.2):
        rows = np.vstack([normal, other])
        limits = [normal @ (centre + share * toward), other @ centre + 0.3 * np.min(high - low)]
        yield Polytope(rows, limits, low - 1.0, high + 1.0)


def polytope_case(case: int):
    """CASES[case] made concrete: network, domain (rows cutting off the maximiser), norm,
    objective, the oracle's value with the rows, and without them."""
    widths, base, clip, norm, output_norm = CASES[case]
    rng = np.random.default_rng(300 + case)
    net = random_network(rng, widths)
    objective = _objective(rng, widths[-1], output_norm)
    uncut = intersect(base, clip=clip)
    whole = _oracle(net, uncut, norm, objective)
    low, high = uncut.bounding_box()
    centre = getattr(uncut, "interior_point", getattr(uncut, "center", (low + high) / 2))
    for cut in _cutting_rows(rng, uncut, whole, np.asarray(centre)):
        domain = intersect(uncut, cut=cut)
        truth = _oracle(net, domain, norm, objective)
        if truth.value < whole.value * (1 - 1e-4):
            return net, domain, norm, objective, truth.value, whole.value
    raise AssertionError(f"case {case}: no row tried cuts off the maximiser")


def _check_answer(res, net, domain, norm, objective, truth):
    assert res.status == "optimal", (res.status, res.message)
    assert_certified_exact(res.value, truth)
    assert res.lower == pytest.approx(truth, rel=1e-6, abs=1e-9)
    assert domain.contains(res.witness)
    if "c" in objective:
        grad = net.gradients(res.witness, np.asarray(objective["c"], dtype=np.float64))
        assert float(dual_norm(grad, norm)) == pytest.approx(res.lower, rel=1e-9)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_default_plan_equals_the_oracle_over_a_polytope(case):
    net, domain, norm, objective, truth, whole = polytope_case(case)
    assert truth < whole * (1 - 1e-4)  # ignoring the rows would give a wrong value
    res = lipschitz(net, domain, norm=norm, **objective)
    _check_answer(res, net, domain, norm, objective, truth)


SOLVER_CASES = [0, 3, 6, 9]


@pytest.mark.parametrize("case", SOLVER_CASES)
@pytest.mark.parametrize(
    "solver",
    [
        pytest.param("highs", marks=pytest.mark.requires_solver("highs")),
        pytest.param("scip", marks=pytest.mark.requires_solver("scip")),
        pytest.param("cbc", marks=pytest.mark.requires_solver("cbc")),
    ],
)
def test_each_solver_takes_the_rows(case, solver):
    net, domain, norm, objective, truth, _ = polytope_case(case)
    res = lipschitz(net, domain, norm=norm, solver=solver, regions=False, split=False,
                    **objective)  # fmt: skip
    _check_answer(res, net, domain, norm, objective, truth)


STRATEGIES = [
    {"regions": True},
    {"bab": True},
    {"regions": False, "split": False, "formulation": "forward"},
    {"regions": False, "split": False, "bounds": "lp"},  # OBBT with the rows in its LPs
]
#: the region search takes polytopes, not an l1 ball ∩ rows (case 6): the others there
STRATEGY_CASES = [(case, s) for case in (0, 2, 3, 9) for s in STRATEGIES]
STRATEGY_CASES += [(6, s) for s in STRATEGIES[1:]]


@pytest.mark.parametrize("case, strategy", STRATEGY_CASES)
def test_each_strategy_keeps_the_rows(case, strategy):
    net, domain, norm, objective, truth, _ = polytope_case(case)
    res = lipschitz(net, domain, norm=norm, **strategy, **objective)
    _check_answer(res, net, domain, norm, objective, truth)


def test_a_union_of_input_sets_is_the_largest_of_its_constants():
    net, domain, norm, objective, truth, _ = polytope_case(2)
    other = Polytope([[1.0, 0.0]], [-0.2], [-1.0, -1.0], [1.0, 1.0])  # x0 <= -0.2
    second = _oracle(net, other, norm, objective).value
    res = lipschitz(net, Disjunction((domain, other)), norm=norm, **objective)
    assert res.status == "optimal"
    assert_certified_exact(res.value, max(truth, second))
    assert Disjunction((domain, other)).contains(res.witness)
