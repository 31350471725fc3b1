"""Exact beyond general position (issue 31): on networks with zero biases, integer weights,
duplicated, mirrored, dead and zero neurons, exact zeros and neurons scaled by 1e±6, every
``optimal`` answer is the true constant (the independent oracle's, over full-dimensional regions
only, to 1e-6 relative) and every other answer's bracket contains it.

The fuzz here is fast and seeded; ``benchmarks/degenerate.py`` is its long run.
"""

from __future__ import annotations

import numpy as np
import pytest

import lipopt
from lipopt import Affine, Network, ReLU
from lipopt.driver import NOT_PROVEN_EXACT, honest
from lipopt.norms import InputNorm
from lipopt.query import Query
from tests.degenerate import Case, degenerate_case, verdict
from tests.helpers import domain_from_spec, network_from_weights
from tests.oracle import brute_force_lipschitz, sampled_max_gradient_norm

#: seeds of the fast fuzz, in chunks (one test each)
CHUNK = 50
CHUNKS = 10


def judged(case: Case, **options) -> tuple[str, float, lipopt.LipschitzResult]:
    """lipopt's answer to ``case`` and how it compares with the oracle's truth."""
    truth = brute_force_lipschitz(case.weights, case.domain, case.c, case.norm,
                                  case.output_norm or "abs").value
    net, domain = network_from_weights(case.weights), domain_from_spec(case.domain)
    res = lipopt.lipschitz(net, domain, case.norm, case.c, output_norm=case.output_norm,
                           time_limit=60, **options)
    return verdict(truth, res.status, res.upper, res.lower), truth, res


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_every_optimal_answer_is_the_truth_and_every_bracket_holds_it(chunk):
    wrong = []
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        case = degenerate_case(seed)
        outcome, truth, res = judged(case)
        if outcome not in ("exact", "bracket"):
            wrong.append(f"{case.describe()}: {outcome} (truth {truth:.10g}, {res.status} "
                         f"value {res.value:.10g}, lower {res.lower})")
        elif res.status == "optimal":
            assert res.exact_certified and res.witness is not None
        assert res.lower is not None and res.witness is not None, case.describe()
    assert not wrong, "\n".join(wrong)


def test_the_fuzz_covers_every_feature_domain_norm_and_objective():
    cases = [degenerate_case(seed) for seed in range(CHUNK * CHUNKS)]
    assert {f for c in cases for f in c.features} == {
        "zero_bias", "integer", "duplicate", "mirror", "dead", "zero_neuron", "exact_zeros",
        "scaled",
    }  # fmt: skip
    assert {c.domain[0] for c in cases} == {"box", "linf", "l1"}
    assert {c.norm for c in cases} == {"linf", "l1"}
    assert {c.output_norm for c in cases} == {None, "abs", "l1", "linf", "cross"}


# --- regressions: each was answered `optimal` with a wrong value before issue 31 (measured by
# benchmarks/degenerate.py on the code before it); the truth is the oracle's, checked by sampling

REGRESSIONS = {
    # zero biases, l-inf norm, scalar c: optimal 32 with lower 13
    15: 16.0,
    # zero biases, integer weights and a dead neuron, l1 input, cross-norm: optimal 12, lower 8
    28: 8.0,
    # zero biases, integer weights, a duplicated neuron, l1 input on an l1 ball, cross-norm:
    # optimal 20 with lower 0
    62: 18.0,
    # zero biases and a zero neuron, l1 input: optimal 0.88990479 with lower 0.26277626
    52: 0.6878289893,
    # zero biases, a dead and a zero neuron, l1 ball, cross-norm: optimal 0.05767706 where
    # the gradient is 0 on every full-dimensional region
    186: 0.0,
    # integer weights, zero biases, a box, l1 input: optimal 17 with lower 8
    283: 8.0,
    # a neuron scaled by 1e6 (outgoing 1e-6): HiGHS proved 3e-10 "optimal"; the truth is 2.24
    699: 2.238124123,
}


@pytest.mark.parametrize("seed", sorted(REGRESSIONS))
def test_a_network_that_was_answered_wrongly_gets_its_true_constant(seed):
    case = degenerate_case(seed)
    outcome, truth, res = judged(case)
    assert truth == pytest.approx(REGRESSIONS[seed], rel=1e-9, abs=1e-12)
    sampled = sampled_max_gradient_norm(case.weights, case.domain, case.c, case.norm,
                                        output_norm=case.output_norm or "abs")
    assert sampled <= truth * (1 + 1e-9) + 1e-12
    assert outcome == "exact" and res.status == "optimal", (res.status, res.value, truth)


def test_a_network_whose_gradient_is_zero_on_every_full_dimensional_region():
    """relu(x) - relu(x) + relu(-x) - relu(-x) with duplicated neurons: f is 0, but at x = 0
    the chain rule may pick any of the 16 patterns, with gradients up to 2 in size."""
    first = Affine(np.array([[1.0], [1.0], [-1.0], [-1.0]]), np.zeros(4))
    net = Network.from_layers([first, ReLU(), Affine(np.array([[1.0, -1.0, 1.0, -1.0]]), [0.0])])
    res = lipopt.lipschitz(net, lipopt.Box([-1.0], [1.0]), split=False, regions=False)
    assert res.status == "optimal" and res.value == pytest.approx(0.0, abs=1e-9)


def test_an_optimum_not_shown_attained_is_reported_as_an_upper_bound():
    """A bracket the solver calls optimal, whose lower does not meet its value (the network is
    not in general position at the optimum): the result says ``upper_bound`` and why."""
    first = Affine(np.array([[1.0], [-1.0]]), np.zeros(2))
    net = Network.from_layers([first, ReLU(), Affine(np.array([[-1.0, 1.0]]), np.zeros(1))])
    res = lipopt.lipschitz(net, lipopt.Box([-1.0], [1.0]), max_refinements=0, split=False,
                           regions=False)
    assert res.status == "upper_bound" and not res.exact_certified
    assert res.lower == pytest.approx(1.0) and res.value == pytest.approx(2.0)
    assert NOT_PROVEN_EXACT in res.message
    exact = lipopt.lipschitz(net, lipopt.Box([-1.0], [1.0]), split=False, regions=False)
    assert exact.status == "optimal" and exact.value == pytest.approx(1.0)


def test_a_witness_on_a_kink_does_not_make_a_bracket_exact():
    """Even where lower meets value, a witness at which two neurons vanish is no proof."""
    from lipopt.bracket import Bracket

    first = Affine(np.array([[1.0], [-1.0]]), np.zeros(2))
    net = Network.from_layers([first, ReLU(), Affine(np.array([[1.0, 1.0]]), np.zeros(1))])
    query = Query(net, lipopt.Box([-1.0], [1.0]), InputNorm.LINF, np.ones(1))
    on_kink = Bracket(1.0, 1.0, np.zeros(1), "optimal", False, {}, {}, "test")
    assert honest(on_kink, query).status == "upper_bound"
    inside = Bracket(1.0, 1.0, np.array([0.5]), "optimal", False, {}, {}, "test")
    assert honest(inside, query).status == "optimal" and honest(inside, query).exact_certified


def test_a_box_of_zero_width_in_a_coordinate_is_refused_with_what_to_do():
    with pytest.raises(lipopt.DomainError, match="hold an input fixed, fold it into the first"):
        lipopt.Box([0.0, 0.5], [1.0, 0.5])


def test_a_region_one_millionth_of_a_thin_domain_wide_is_seen():
    """10 relu(x) - 10 relu(x - 1e-12) + 0.5 relu(-x) on [-1e-6, 1e-6]: slope 10 on (0, 1e-12),
    so the constant is 10. The margin LP works relative to the domain's size, where the region
    is as wide as 1e-6 of a unit box: not taken as empty."""
    first = Affine(np.array([[1.0], [1.0], [-1.0]]), np.array([0.0, -1e-12, 0.0]))
    net = Network.from_layers([first, ReLU(), Affine(np.array([[10.0, -10.0, 0.5]]), np.zeros(1))])
    box = lipopt.Box([-1e-6], [1e-6])
    for options in ({}, {"split": False, "regions": False, "attack": False}):
        res = lipopt.lipschitz(net, box, **options)
        assert res.status == "optimal" and res.value == pytest.approx(10.0, rel=1e-6), options


def test_racers_bounds_below_an_attained_value_take_no_part():
    """meet(): a racer whose proven bound is below what another attained is wrong; the answer
    is not optimal on its word, and the bound left is one that holds."""
    from lipopt.bracket import Bracket, meet

    wrong = Bracket(1e-3, 0.0, np.zeros(1), "optimal", False, {}, {}, "wrong")
    right = Bracket(2.5, 2.2, np.ones(1), "time_limit", False, {}, {}, "right")
    met = meet([wrong, right])
    assert met.upper == 2.5 and met.lower == 2.2 and met.status == "time_limit"
    alone = meet([wrong, Bracket(1e-3, 2.2, np.ones(1), "optimal", False, {}, {}, "w2")])
    assert alone.status == "solver_error" and "numerical trouble" in alone.message


@pytest.mark.parametrize(
    ("uppers", "lower", "trusted", "sound", "upper", "met"),
    [
        ([3.0, 2.0], None, (0, 1), True, 2.0, False),  # nothing attained: the least bound
        ([3.0, 2.0], 2.0, (0, 1), True, 2.0, True),  # the least bound is attained: closed
        ([3.0, 1.0], 2.0, (0,), True, 3.0, False),  # 1.0 < 2.0 attained: it takes no part
        ([1.0, 1.5], 2.0, (0, 1), False, 2.0, False),  # both wrong: none trusted, not met
        ([2.0 - 1e-12, 4.0], 2.0, (0, 1), True, 2.0, True),  # below by rounding only: raised
    ],
)
def test_settle_drops_the_bounds_an_attained_value_contradicts(
    uppers: list[float],
    lower: float | None,
    trusted: tuple[int, ...],
    sound: bool,
    upper: float,
    met: bool,
) -> None:
    """settle(), the rule of meet() and of the region search's fallback, by hand: an upper bound
    more than the tolerance below the attained value is wrong and not used; the answer is never
    below the attained value; it is closed only on a bound that holds."""
    from lipopt.bracket import settle

    settled = settle(uppers, lower)
    assert settled.trusted == trusted and settled.sound is sound
    assert settled.upper == upper and settled.met is met
