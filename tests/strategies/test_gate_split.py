"""gate_split=True: the domain cut by the hyperplane z_1i(x) = 0 of one first-layer neuron, the
two halves (its gate fixed to 1 and to 0) solved side by side or in turn, in either
formulation; the answer stays exact."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lipopt import Box, LipschitzError, lipschitz
from lipopt.norms import dual_norm
from lipopt.parallel.workers import can_fork
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt
from tests.test_lipschitz_oracle import SCALAR_CASES, scalar_case

# the module, not the function of the same name that lipopt re-exports
lipschitz_module = importlib.import_module("lipopt.lipschitz")
refine_module = importlib.import_module("lipopt.strategies.refine")

needs_fork = pytest.mark.skipif(not can_fork("highs"), reason="needs two cores and fork")

LINF_CASES = [case for case, (_, _, norm) in enumerate(SCALAR_CASES) if norm == "linf"]


def _spy_on_halves(monkeypatch) -> list[tuple[int, float, float | None]]:
    """Record (neuron, fixed gate value, cutoff) of every half solved in this process."""
    seen: list[tuple[int, float, float | None]] = []
    real = refine_module.solve_refined

    def spy(*args):
        lip, cutoff = args[0].lip, args[4]
        fixed = [(i, gate.value) for i, gate in lip.activations[0].items() if gate.fixed]
        assert len(fixed) == 1, "a half fixes exactly one first-layer gate"
        seen.append((fixed[0][0], fixed[0][1], cutoff))
        return real(*args)

    monkeypatch.setattr(refine_module, "solve_refined", spy)
    return seen


@pytest.mark.parametrize("formulation", ["backward", "forward"])
@pytest.mark.parametrize("case", LINF_CASES)
def test_gate_split_equals_brute_force(case, formulation, monkeypatch):
    """In one process (so that the spy sees both halves): each half fixes the gate of the
    most balanced first-layer neuron one way, runs under the attack's cutoff (at most the
    constant), and the larger half is the brute-force constant."""
    net, domain, norm, c, truth, _ = scalar_case(case)
    seen = _spy_on_halves(monkeypatch)
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation=formulation, split=False, regions=False,
        workers=1, gate_split=True,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    cvec = np.ones(1) if c is None else c
    assert dual_norm(net.gradients(res.witness, cvec), norm) == pytest.approx(res.lower)
    gates = res.model.activations[0]
    assert gates, "every l-inf oracle case has unstable first-layer neurons"
    neuron = res.model_stats["gate_split_neuron"]
    assert {(i, v) for i, v, _ in seen} == {(neuron, 1.0), (neuron, 0.0)}
    assert "attack" in res.timings  # attack "auto" runs before the halves
    assert all(cut is not None and cut <= truth.value for _, _, cut in seen)
    seed = lipschitz_module.resolve_seed(net, c, None)
    bounds = lipschitz_module.propagate(net, domain, seed, method="linear")
    lo, hi = bounds.pre_lower[0], bounds.pre_upper[0]
    assert min(-lo[neuron], hi[neuron]) == max(min(-lo[i], hi[i]) for i in gates)
    # the returned model is the plain problem again
    assert not gates[neuron].fixed and res.model.model.component("cutoff") is None


@pytest.mark.parametrize("formulation", ["backward", "forward"])
def test_the_split_hyperplane_cuts_the_box_and_sampled_gradients_stay_below(formulation):
    """The chosen neuron's hyperplane z_1i(x) = 0 crosses the box (points on both sides), the
    answer is the brute-force constant, and no sampled gradient norm exceeds it."""
    rng = np.random.default_rng(5)
    net = random_network(rng, [2, 6, 5, 1])
    box = Box(np.zeros(2), np.ones(2))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "linf")
    res = lipschitz(
        net, box, formulation=formulation, split=False, regions=False, workers=1,
        gate_split=True,
    )  # fmt: skip
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    neuron = res.model_stats["gate_split_neuron"]
    first = net.affine_layers[0]
    points = box.sample(20000, np.random.default_rng(0))
    side = points @ first.weight[neuron] + first.bias[neuron] >= 0
    assert side.any() and (~side).any()
    norms = np.array([dual_norm(net.gradients(x, np.ones(1)), "linf") for x in points])
    assert norms.max() <= res.upper * (1 + 1e-9)


def test_without_an_unstable_first_layer_neuron_the_model_is_solved_whole():
    """A tiny ball: every neuron is stable, the gradient is one number, nothing is split, and the
    progress says so."""
    from lipopt import LinfBall

    net = random_network(np.random.default_rng(3), [3, 6, 5, 1])
    centre = np.full(3, 0.5)
    messages: list[str] = []
    res = lipschitz(
        net, LinfBall(centre, 1e-9), formulation="backward", split=False, regions=False,
        gate_split=True, progress=messages.append,
    )  # fmt: skip
    assert res.status == "optimal" and "gate_split_neuron" not in res.model_stats
    assert res.value == pytest.approx(dual_norm(net.gradients(centre, np.ones(1)), "linf"))
    assert any("no unstable neuron in the first layer" in m for m in messages)


@needs_fork
@pytest.mark.parametrize("formulation", ["backward", "forward"])
@pytest.mark.parametrize("case", LINF_CASES[:4])
def test_gate_split_on_two_processes_equals_brute_force(case, formulation):
    net, domain, norm, c, truth, _ = scalar_case(case)
    messages: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation=formulation, split=False, regions=False,
        gate_split=True, progress=messages.append,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert "gate_split_neuron" in res.model_stats  # every l-inf oracle case has one to split
    assert any("of the first layer: two halves on 2 processes" in m for m in messages)


def _spy_on_halves_or_whole(monkeypatch) -> list[bool]:
    """Record, for every MIP solved in this process, whether a first-layer gate was fixed."""
    seen: list[bool] = []
    real = refine_module.solve_refined

    def spy(*args):
        lip = args[0].lip
        gates = lip.activations[0] if lip.activations else {}
        seen.append(any(gate.fixed for gate in gates.values()))
        return real(*args)

    monkeypatch.setattr(refine_module, "solve_refined", spy)
    return seen


def test_domain_split_parts_do_not_split_again(monkeypatch):
    """With the domain split, the parts are solved whole (they already split the domain)."""
    seen = _spy_on_halves_or_whole(monkeypatch)
    rng = np.random.default_rng(4)
    net = random_network(rng, [2, 6, 6, 1])
    box = Box(np.zeros(2), np.ones(2))
    truth = brute_force_lipschitz(*from_lipopt(net, box), None, "linf")
    res = lipschitz(net, box, formulation="backward", split=True, gate_split=True, workers=1)
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert seen and not any(seen)  # MIPs were solved, none with a first-layer gate fixed


# both ways of splitting in halves share one driver (_binary_split): each is checked here
SPLITS = [
    {"formulation": "forward", "gate_split": True},
    {"formulation": "backward", "gate_split": True},
    {"formulation": "backward", "sign_split": True},
]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("time_limit", [1.0, 2.5])
def test_time_limited_split_brackets_the_constant(time_limit, split):
    """Stopped early (gate or sign split), the upper bound is the larger of the halves' proven
    (or static) bounds and the lower bound is attained. No timing asserted."""
    rng = np.random.default_rng(8)
    net = random_network(rng, [5, 14, 14, 2])
    box = Box(np.zeros(5), np.ones(5))
    c = np.array([1.0, -1.0])
    exact = lipschitz(net, box, c=c, formulation="backward", regions=False)
    assert exact.status == "optimal"
    res = lipschitz(
        net, box, c=c, regions=False, time_limit=time_limit, **split
    )  # fmt: skip
    assert res.status in ("optimal", "time_limit")
    assert "gate_split_neuron" in res.model_stats or "sign_split_entry" in res.model_stats
    assert res.lower <= exact.value * (1 + 1e-9) <= res.upper * (1 + 2e-9)
    assert dual_norm(net.gradients(res.witness, c), "linf") == pytest.approx(res.lower)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"gate_split": "auto"}, "gate_split must be True or False"),
        ({"gate_split": 1, "formulation": "forward"}, "gate_split must be True or False"),
        ({"gate_split": np.True_, "formulation": "forward"}, "gate_split must be True or False"),
        ({"gate_split": True}, "needs formulation 'forward' or 'backward'"),
        ({"gate_split": True, "formulation": "forward", "norm": "l1"}, "gate split needs"),
        ({"gate_split": True, "formulation": "backward", "mode": "lp"}, "gate split needs"),
        ({"gate_split": True, "sign_split": True, "formulation": "backward"}, "not both"),
    ],
)
def test_gate_split_options_are_checked(kwargs, message):
    net = random_network(np.random.default_rng(2), [2, 6, 3])
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(LipschitzError, match=message):
        lipschitz(net, box, c=[1, 0, 0], **kwargs)


def test_gate_split_refuses_an_output_norm():
    net = random_network(np.random.default_rng(2), [2, 6, 3])
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(LipschitzError, match="fixed c"):
        lipschitz(net, box, output_norm="linf", formulation="backward", gate_split=True)
