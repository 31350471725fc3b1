"""The linear-region search (lipopt.search.regions) against independent truth.

Truth is tests/oracle.py's brute-force region enumeration (it imports nothing from lipopt) and
closed forms; sampled gradients check that no bound is ever beaten.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Affine, Box, L1Ball, LinfBall, Network, ReLU, lipschitz
from lipopt.bounds import propagate
from lipopt.lipschitz import LipschitzError
from lipopt.norms import dual_norm
from lipopt.search.regions import RegionOptions, search_regions
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt
from tests.test_lipschitz_oracle import SCALAR_CASES

BOX_CASES = [i for i, case in enumerate(SCALAR_CASES) if not isinstance(case[1], L1Ball)]

# inputs of 5 and 6 dimensions: where regions="auto" is on (no domain split)
#: the module (``lipopt.lipschitz`` the attribute is the function of that name)
lipschitz_module = importlib.import_module("lipopt.lipschitz")
region_strategy = importlib.import_module("lipopt.strategies.region_search")
policy_module = importlib.import_module("lipopt.policy")
regions_module = importlib.import_module("lipopt.search.regions")

AUTO_CASES = [
    ([5, 8, 8, 1], LinfBall([0.5] * 5, 0.3), "linf"),
    ([5, 8, 8, 1], LinfBall([0.5] * 5, 0.3), "l1"),
    ([6, 10, 6, 2], Box(np.zeros(6), np.ones(6)), "linf"),
    ([6, 10, 6, 2], Box(np.zeros(6), np.ones(6)), "l1"),
]


def _case(case: int):
    widths, domain, norm = SCALAR_CASES[case]
    rng = np.random.default_rng(100 + case)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    return net, domain, norm, c, rng


@pytest.mark.parametrize("linear_bound", [True, False])
@pytest.mark.parametrize("case", BOX_CASES)
def test_region_search_equals_brute_force(case, linear_bound):
    net, domain, norm, c, rng = _case(case)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    res = lipschitz(net, domain, norm=norm, c=c, regions=RegionOptions(linear_bound=linear_bound))
    assert res.status == "optimal" and res.exact_certified
    assert "regions" in res.model_stats and res.model_stats["binaries"] == 0  # no MIP was run
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    cvec = np.ones(1) if c is None else c
    # the witness is in the domain and attains the value
    assert domain.contains(res.witness)
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.value, rel=1e-9)
    sampled = dual_norm(net.gradients(domain.sample(10_000, rng), cvec), norm)
    assert sampled.max() <= res.value * (1 + 1e-9)


@pytest.mark.parametrize("case", range(len(AUTO_CASES)))
def test_auto_region_search_in_five_and_more_dimensions_equals_brute_force(case):
    widths, domain, norm = AUTO_CASES[case]
    rng = np.random.default_rng(7 + case)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    # regions="auto" runs first here; one process, so that no race starts before it
    res = lipschitz(net, domain, norm=norm, c=c, workers=1)
    assert "regions" in res.timings
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("case", range(len(AUTO_CASES)))
def test_unfinished_search_hands_over_to_the_mip_and_keeps_exactness(monkeypatch, case):
    widths, domain, norm = AUTO_CASES[case]
    rng = np.random.default_rng(7 + case)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    monkeypatch.setattr(policy_module, "AUTO_REGION_NODES", 3)
    monkeypatch.setattr(policy_module, "AUTO_REGION_NODES_FEW_UNSTABLE", 3)
    res = lipschitz(net, domain, norm=norm, c=c, workers=1)  # one process: the hand-over itself
    assert "region search stopped after" in res.message
    assert "the MIP took over and finished" in res.message
    assert res.model_stats["binaries"] > 0  # the MIP ran
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower == pytest.approx(truth.value, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("limit", [1, 5, 20, 80])
@pytest.mark.parametrize("case", [2, 8, 10])
def test_stopped_search_brackets_the_constant(case, limit):
    net, domain, norm, c, _ = _case(case)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm).value
    box = domain if isinstance(domain, Box) else domain.as_box()
    cvec = np.ones(1) if c is None else np.asarray(c)
    found = search_regions(
        net, box, cvec, norm, propagate(net, box, cvec, "linear"),
        RegionOptions(node_limit=limit),
    )  # fmt: skip
    assert found.upper >= truth * (1 - 1e-9)
    if found.witness is not None:
        assert found.lower <= truth * (1 + 1e-9)
        assert dual_norm(net.gradients(found.witness, cvec), norm) == pytest.approx(found.lower)
    if found.complete:
        assert found.lower == pytest.approx(truth, rel=1e-6)


@pytest.mark.parametrize("case", BOX_CASES)
def test_a_complete_search_closed_the_whole_pattern_tree(case):
    # a node closed at branching depth k is 2^-k of the binary tree: a missed or doubled
    # closing path would leave the sum of a finished search below or above 1
    net, domain, norm, c, _ = _case(case)
    box = domain if isinstance(domain, Box) else domain.as_box()
    cvec = np.ones(1) if c is None else np.asarray(c)
    bounds = propagate(net, box, cvec, "linear")
    found = search_regions(net, box, cvec, norm, bounds)
    assert found.complete
    assert found.explored == pytest.approx(1.0, rel=1e-12)
    stopped = search_regions(net, box, cvec, norm, bounds, RegionOptions(node_limit=2))
    assert stopped.complete or stopped.explored < 1.0


def test_search_projected_past_its_limit_gives_up_with_a_sound_bracket():
    rng = np.random.default_rng(0)
    net = random_network(rng, [8, 16, 16, 2])  # its l1 search visits 1248 nodes to the end
    box, c = Box(np.zeros(8), np.ones(8)), np.array([1.0, -1.0])
    bounds = propagate(net, box, c, "linear")

    def search(projected_limit):
        options = RegionOptions(projected_limit=projected_limit)
        return search_regions(net, box, c, "l1", bounds, options)

    full = search(None)
    assert full.complete and full.nodes > 2 * regions_module.PROJECTION_START
    assert search(10**9).nodes == full.nodes  # a projection under the limit changes nothing
    given_up = search(1)  # every projection is over one node: stop at the first check
    assert not given_up.complete and given_up.nodes == regions_module.PROJECTION_START
    assert 0.0 < given_up.explored < 1.0
    sampled = dual_norm(net.gradients(box.sample(20_000, rng), c), "l1")
    assert given_up.upper >= max(sampled.max(), full.lower) * (1 - 1e-9)
    assert given_up.lower <= full.lower * (1 + 1e-9)
    assert dual_norm(net.gradients(given_up.witness, c), "l1") == pytest.approx(given_up.lower)


def test_auto_search_gives_up_early_only_where_most_neurons_are_unstable(monkeypatch):
    seen = []
    original = region_strategy.search_regions

    def spy(*args, **kwargs):
        seen.append(args[5])  # the RegionOptions
        return original(*args, **kwargs)

    monkeypatch.setattr(region_strategy, "search_regions", spy)
    net = random_network(np.random.default_rng(0), [8, 16, 16, 2])  # 30 of 32 unstable
    box = Box(np.zeros(8), np.ones(8))
    lipschitz(net, box, norm="l1", c=[1.0, -1.0], workers=1)
    lipschitz(net, LinfBall(np.full(8, 0.5), 0.05), norm="l1", c=[1.0, -1.0], workers=1)
    hard, easy = seen
    assert hard.projected_limit == policy_module.AUTO_REGION_PROJECTED_LIMIT
    assert hard.node_limit == policy_module.AUTO_REGION_NODES
    assert easy.projected_limit == policy_module.AUTO_REGION_PROJECTED_LIMIT_FEW_UNSTABLE
    assert easy.node_limit == policy_module.AUTO_REGION_NODES_FEW_UNSTABLE


def test_time_limited_search_returns_a_certified_bracket():
    net, domain, norm, c, _ = _case(13)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm).value
    res = lipschitz(net, domain, norm=norm, c=c, regions=RegionOptions(node_limit=4))
    assert res.status == "time_limit"
    assert res.upper >= truth * (1 - 1e-9)
    assert res.lower is None or res.lower <= truth * (1 + 1e-9)


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_single_linear_layer_is_its_weight_norm(norm):
    weight = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])
    net = Network.from_layers([Affine(weight, np.zeros(2))])
    c = np.array([1.0, -1.0])
    res = lipschitz(net, Box(np.zeros(3), np.ones(3)), norm=norm, c=c, regions=True)
    assert res.value == pytest.approx(dual_norm(weight.T @ c, norm))
    assert res.status == "optimal" and res.exact_certified


def test_all_stable_network_needs_no_branching():
    # every hidden neuron is active on the positive orthant: f is linear there
    w1, w2 = np.array([[1.0, 2.0], [0.5, -0.25]]), np.array([[1.0, -3.0]])
    net = Network.from_layers([Affine(w1, np.array([1.0, 1.0])), ReLU(), Affine(w2, [0.0])])
    res = lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), norm="linf", regions=True)
    assert res.value == pytest.approx(np.abs(w1.T @ w2[0]).sum())
    assert res.model_stats["regions"] == 1


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"output_norm": "l1"}, "fixed c"),
        ({"mode": "lp"}, "mode 'exact'"),
        ({"regions": "sometimes"}, "regions must be"),
    ],
)
def test_region_search_refuses_what_it_cannot_answer(kwargs, words):
    net = random_network(np.random.default_rng(0), [2, 4, 2])
    options = {"regions": True, "c": [1.0, -1.0], **kwargs}
    if "output_norm" in kwargs:
        options.pop("c")
    with pytest.raises(LipschitzError, match=words):
        lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), **options)


def test_region_search_refuses_l1_balls():
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    with pytest.raises(LipschitzError, match="l-inf ball"):
        lipschitz(net, L1Ball([0.0, 0.0], 1.0), regions=True)


def test_auto_region_search_runs_before_a_split_only_where_the_policy_says(monkeypatch):
    from lipopt import policy
    from lipopt.policy import AUTO_SPLIT_MAX_DIM

    monkeypatch.setattr(policy, "AUTO_REGIONS_FIRST_MIN_DIM", AUTO_SPLIT_MAX_DIM + 1)
    monkeypatch.setattr(policy, "AUTO_REGIONS_FIRST_MAX_HIDDEN", 5)
    rng = np.random.default_rng(5)
    for d, width in ((AUTO_SPLIT_MAX_DIM, 6), (AUTO_SPLIT_MAX_DIM, 5), (AUTO_SPLIT_MAX_DIM + 1, 6)):
        net = random_network(rng, [d, width, 1])
        res = lipschitz(net, Box(np.zeros(d), np.ones(d)), "linf")
        assert ("regions" in res.timings) == (d > AUTO_SPLIT_MAX_DIM or width <= 5)
        off = lipschitz(net, Box(np.zeros(d), np.ones(d)), "linf", regions=False)
        assert "regions" not in off.timings
        assert off.value == pytest.approx(res.value, rel=1e-6)


def test_long_searches_report_progress(monkeypatch):
    import lipopt.search.regions as regions_module

    monkeypatch.setattr(regions_module, "PROGRESS_SECONDS", 0.0)
    net, domain, norm, c, _ = _case(2)
    messages: list[str] = []
    lipschitz(net, domain, norm=norm, c=c, regions=True, progress=messages.append)
    assert any(m.startswith("region search:") and "nodes" in m for m in messages)


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("out", [[1.0, 3.0], [-1.0, 3.0], [5.0, -3.0]])
def test_neurons_constant_on_a_region_are_fixed_not_branched(norm, out):
    # the second layer's first neuron is h0 + h1 with h = relu of the inputs: on the region
    # where both inputs are negative it is the constant 0 (a zero row), which once crashed
    # the search with a division by zero
    net = Network.from_layers(
        [
            Affine(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 2.0]]), np.array([0.0, 0.0, 5.0])),
            ReLU(),
            Affine(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), np.zeros(2)),
            ReLU(),
            Affine(np.array([out]), np.zeros(1)),
        ]
    )
    domain = Box([-1.0, -1.0], [1.0, 1.0])
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, norm)
    res = lipschitz(net, domain, norm=norm, regions=True)
    assert res.status == "optimal" and res.exact_certified
    assert res.value == pytest.approx(truth.value, rel=1e-9)


def test_duplicate_neurons_whose_difference_is_zero_everywhere():
    d = 5
    w1 = np.zeros((3, d))
    w1[0, 0] = w1[1, 0] = 1.0
    w1[2] = 1.0
    net = Network.from_layers(
        [
            Affine(w1, np.array([0.0, 0.0, 10.0])),
            ReLU(),
            Affine(np.array([[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]]), np.zeros(2)),
            ReLU(),
            Affine(np.array([[1.0, 2.0]]), np.zeros(1)),
        ]
    )
    # h0 - h1 is 0 everywhere, so f = 2 * (sum(x) + 10) on the box: the constant is 2 * ||1||_1
    res = lipschitz(net, Box(-np.ones(d), np.ones(d)), "linf")
    assert res.value == pytest.approx(2.0 * d) and res.status == "optimal"


def test_mip_and_search_agree_with_a_neuron_that_is_zero_on_the_whole_domain():
    # layer-1 neuron 2 has zero weights and bias: its binary appears in no constraint, so the
    # solver returns no value for it (the MIP once failed with a KeyError there)
    rng = np.random.default_rng(0)
    w1, b1 = rng.normal(size=(6, 6)), rng.normal(size=6) * 0.5
    w1[2], b1[2] = 0.0, 0.0
    net = Network.from_layers([Affine(w1, b1), ReLU(), Affine(rng.normal(size=(1, 6)), [0.0])])
    domain = Box(np.zeros(6), np.ones(6))
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, "linf").value
    for regions in (True, False):
        res = lipschitz(net, domain, norm="linf", regions=regions)
        assert res.value == pytest.approx(truth, rel=1e-6)


@pytest.mark.parametrize(
    "mip_status, lower, ending, status",
    [
        ("time_limit", 1.0, "the MIP took over and stopped at the time limit", "time_limit"),
        ("time_limit", 2.0, "the MIP took over and stopped at the time limit", "optimal"),
        ("optimal", 2.0, "the MIP took over and finished", "optimal"),
    ],
)
def test_handover_note_says_how_the_mip_ended(mip_status, lower, ending, status):
    from lipopt.search.regions import RegionSearch

    mip = lipschitz_module.LipschitzResult(
        value=2.0, lower=lower, upper=2.0, status=mip_status, witness=np.zeros(2),
        exact_certified=False, model_stats={}, timings={"solve": 1.0}, solver="highs", norm="linf",
        c=None,
    )  # fmt: skip
    found = RegionSearch(1.5, np.ones(2), 3.0, False, 4000, 4000, 10, 2.5)
    merged = region_strategy.with_region_bounds(mip, found, {"regions": 2.5})
    assert merged.message.endswith(f"region search stopped after 4000 nodes; {ending}")
    assert merged.status == status and merged.timings == {"solve": 1.0, "regions": 2.5}
    assert merged.lower == max(lower, 1.5)  # the better attained value of the two


@pytest.mark.parametrize(
    "mip_upper, mip_lower, upper, status",
    [
        (2.0, 1.0, 3.2, "time_limit"),  # the MIP's bound is below the search's 3.0: dropped
        (3.5, 3.4, 3.5, "time_limit"),  # the search's 3.2 is below the MIP's 3.4: dropped
        (2.0, 4.0, 4.0, "solver_error"),  # both below the MIP's attained 4.0: neither trusted
    ],
)
def test_a_bound_below_the_others_attained_value_takes_no_part(mip_upper, mip_lower, upper, status):
    from lipopt.search.regions import RegionSearch

    mip = lipschitz_module.LipschitzResult(
        value=mip_upper, lower=mip_lower, upper=mip_upper, status="time_limit",
        witness=np.zeros(2), exact_certified=False, model_stats={}, timings={}, solver="highs",
        norm="linf", c=None,
    )  # fmt: skip
    found = RegionSearch(3.0, np.ones(2), 3.2, False, 4000, 4000, 10, 2.5)
    merged = region_strategy.with_region_bounds(mip, found, {"regions": 2.5})
    assert merged.upper == pytest.approx(upper) and merged.lower == max(mip_lower, 3.0)
    assert merged.status == status
    assert ("not used" in merged.message) == (status == "solver_error")
