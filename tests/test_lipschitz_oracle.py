"""The MIP's value equals an independent brute force (region enumeration, tests/oracle.py)."""

from __future__ import annotations

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall, lipschitz
from lipopt.norms import dual_norm
from lipopt.parallel.workers import can_fork
from tests.helpers import fast_first, random_network
from tests.oracle import assert_certified_exact, brute_force_lipschitz, from_lipopt

# (widths, domain, norm): 1 to 4 hidden layers, widths up to 16, 1 to 3 outputs, boxes and balls
SCALAR_CASES = [
    ([2, 16, 1], Box([0.0, 0.0], [1.0, 1.0]), "linf"),
    ([2, 16, 1], Box([0.0, 0.0], [1.0, 1.0]), "l1"),
    ([2, 8, 8, 2], Box([-1.0, -1.0], [1.0, 1.0]), "linf"),
    ([2, 8, 8, 2], LinfBall([0.2, -0.3], 0.5), "l1"),
    ([3, 10, 6, 3], LinfBall([0.5, 0.5, 0.5], 0.4), "linf"),
    ([3, 10, 6, 3], L1Ball([0.5, 0.5, 0.5], 0.8), "l1"),
    ([2, 6, 6, 6, 2], Box([0.0, 0.0], [1.0, 1.0]), "l1"),
    ([2, 6, 6, 6, 2], L1Ball([0.0, 0.0], 1.0), "linf"),
    ([3, 5, 5, 5, 5, 1], Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "linf"),
    ([3, 5, 5, 5, 5, 1], LinfBall([0.1, 0.2, 0.3], 0.5), "l1"),
    ([2, 12, 12, 3], Box([-2.0, -1.0], [1.0, 2.0]), "linf"),
    ([2, 12, 12, 3], L1Ball([0.3, 0.3], 1.5), "l1"),
    ([4, 8, 8, 2], Box([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]), "linf"),
    ([1, 16, 16, 1], Box([-3.0], [3.0]), "linf"),
]


def scalar_case(case: int):
    """SCALAR_CASES[case] made concrete: network, domain, norm, c, brute-force truth, and the
    generator (for sampling) that made them."""
    widths, domain, norm = SCALAR_CASES[case]
    rng = np.random.default_rng(100 + case)
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1]) if widths[-1] > 1 else None
    truth = brute_force_lipschitz(*from_lipopt(net, domain), c, norm)
    return net, domain, norm, c, truth, rng


@pytest.mark.parametrize("case", range(len(SCALAR_CASES)))
def test_lipschitz_equals_brute_force_scalar(case):
    net, domain, norm, c, truth, rng = scalar_case(case)
    res = lipschitz(net, domain, norm=norm, c=c)
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.exact_certified
    cvec = np.ones(1) if c is None else c
    sampled = dual_norm(net.gradients(domain.sample(10_000, rng), cvec), norm)
    assert sampled.max() <= res.value * (1 + 1e-9) and res.lower <= res.upper


VECTOR_CASES = [
    ([2, 8, 8, 2], Box([0.0, 0.0], [1.0, 1.0])),
    ([2, 10, 3], LinfBall([0.2, 0.1], 0.6)),
    ([3, 6, 6, 4], L1Ball([0.5, 0.5, 0.5], 0.8)),
    ([2, 6, 6, 6, 3], Box([-1.0, -1.0], [1.0, 1.0])),
]


@pytest.mark.parametrize("output_norm", ["l1", "linf", "cross"])
@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("case", range(len(VECTOR_CASES)))
def test_lipschitz_equals_brute_force_output_norms(case, norm, output_norm):
    widths, domain = VECTOR_CASES[case]
    net = random_network(np.random.default_rng(200 + case), widths)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, norm, output_norm)
    res = lipschitz(net, domain, norm=norm, output_norm=output_norm)
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower <= res.upper * (1 + 1e-9)
    assert res.exact_certified, res.message


@pytest.mark.parametrize("output_norm", ["abs", "l1", "linf", "cross"])
@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_output_norms_on_one_output_match_the_scalar_path(norm, output_norm):
    net = random_network(np.random.default_rng(7), [3, 8, 8, 1])
    domain = LinfBall([0.2, 0.4, 0.6], 0.5)
    scalar = lipschitz(net, domain, norm=norm)
    vector = lipschitz(net, domain, norm=norm, output_norm=output_norm)
    assert vector.value == pytest.approx(scalar.value, rel=1e-7)
    assert vector.output_norm == output_norm and vector.c is None


def test_cross_norm_dominates_every_pairwise_constant():
    """Prop. 7 needs L^(α,×) >= max_j L^α(f_ij); check it against the pairwise MIPs."""
    net = random_network(np.random.default_rng(9), [2, 8, 8, 4])
    domain = Box([0.0, 0.0], [1.0, 1.0])
    cross = lipschitz(net, domain, output_norm="cross").value
    for i in range(4):
        for j in range(4):
            if i != j:
                c = np.eye(4)[i] - np.eye(4)[j]
                assert lipschitz(net, domain, c=c).value <= cross * (1 + 1e-9)


def test_abs_output_norm_needs_one_output():
    from lipopt import LipschitzError

    net = random_network(np.random.default_rng(1), [2, 4, 3])
    with pytest.raises(LipschitzError, match="one-output"):
        lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), output_norm="abs")
    with pytest.raises(LipschitzError, match="not both"):
        lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), c=[1, 0, 0], output_norm="l1")


L1_SCALAR = [k for k, (_, _, norm) in enumerate(SCALAR_CASES) if norm == "l1"]


@pytest.mark.parametrize(
    ("decompose", "workers"),
    [(True, 1), (True, 2), (False, 1)],
    ids=["decomposed", "decomposed-2-processes", "selection"],
)
@pytest.mark.parametrize("case", L1_SCALAR)
def test_l1_norm_with_and_without_decomposition_equals_brute_force(case, decompose, workers):
    """max ||∇||_∞ by one MIP per candidate ±∂_j (in this process or on two forked ones), or
    one MIP with selection binaries: all exact."""
    net, domain, norm, c, truth, rng = scalar_case(case)
    said: list[str] = []
    res = lipschitz(
        net, domain, norm=norm, c=c, decompose=decompose, split=False, regions=False,
        workers=workers, progress=said.append,
    )  # fmt: skip
    forked = any("candidates on 2 processes" in line for line in said)
    assert forked == (decompose and workers == 2 and can_fork("highs"))
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert ("candidates" in res.model_stats) == decompose
    if decompose:  # no selection binaries: only the unstable neurons branch
        assert res.model_stats["binaries"] == res.model_stats["unstable_neurons"]


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "selection"])
@pytest.mark.parametrize("output_norm", ["l1", "linf", "cross"])
@pytest.mark.parametrize("case", [0, 2])
def test_l1_norm_output_norms_with_and_without_decomposition(case, output_norm, decompose):
    """The decomposition also holds with w in an output norm's dual ball: g = J^T w."""
    widths, domain = VECTOR_CASES[case]
    net = random_network(np.random.default_rng(200 + case), widths)
    truth = brute_force_lipschitz(*from_lipopt(net, domain), None, "l1", output_norm)
    res = lipschitz(net, domain, norm="l1", output_norm=output_norm, decompose=decompose)
    assert res.status == "optimal" and res.exact_certified, res.message
    assert res.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.lower <= res.upper * (1 + 1e-9)


@pytest.mark.parametrize("time_limit", [1e-4, 0.05, 0.3])
def test_time_limited_decomposed_solve_brackets_the_constant(time_limit):
    """Whatever the time limit lets finish, lower <= L <= upper: candidates not reached keep
    their propagated bound, the lower bound is attained at the witness. No timing asserted."""
    rng = np.random.default_rng(31)
    net = random_network(rng, [6, 24, 24, 2])
    domain = LinfBall(rng.uniform(size=6), 0.3)
    c = np.array([1.0, -1.0])
    exact = lipschitz(net, domain, norm="l1", c=c, decompose=False)
    assert exact.status == "optimal"
    res = lipschitz(net, domain, norm="l1", c=c, time_limit=time_limit)
    assert res.status in ("optimal", "time_limit")
    assert res.upper >= exact.value * (1 - 1e-9)
    if res.lower is not None:
        assert res.lower <= exact.value * (1 + 1e-9)
        assert dual_norm(net.gradients(res.witness, c), "l1") == pytest.approx(res.lower)
    if res.status == "optimal":
        assert res.value == pytest.approx(exact.value, rel=1e-6)
    sampled = dual_norm(net.gradients(domain.sample(5000, rng), c), "l1")
    assert sampled.max() <= res.upper * (1 + 1e-9)


@pytest.mark.parametrize("formulation", ["backward", "forward"])
@pytest.mark.parametrize("case", fast_first(range(len(SCALAR_CASES)), fast=6))
def test_each_formulation_equals_brute_force_scalar(case, formulation):
    """The chain rule backward and the directional derivative forward: both exact, as MIPs."""
    net, domain, norm, c, truth, rng = scalar_case(case)
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation=formulation, split=False, regions=False,
        decompose=False,
    )  # fmt: skip
    assert res.status == "optimal" and res.exact_certified, res.message
    assert_certified_exact(res.value, truth.value)
    assert res.lower == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert res.model.formulation.value == formulation
    if formulation == "forward":  # no sign or selection binaries: only unstable neurons branch
        assert res.model_stats["binaries"] == res.model_stats["unstable_neurons"]


def test_forward_formulation_needs_a_fixed_c():
    from lipopt import LipschitzError

    net = random_network(np.random.default_rng(2), [2, 6, 3])
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(LipschitzError, match="fixed c"):
        lipschitz(net, box, output_norm="linf", formulation="forward")
    with pytest.raises(LipschitzError, match="unknown formulation"):
        lipschitz(net, box, c=[1, 0, 0], formulation="sideways")
    # "auto" falls back to the backward model for an output norm
    res = lipschitz(net, box, output_norm="linf", split=False)
    assert res.model.formulation.value == "backward"


@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("time_limit", [0.2, 1.0])
def test_time_limited_forward_solve_brackets_the_constant(norm, time_limit):
    """Stopped early, the forward model's proven bound is still an upper bound and the lower
    bound is attained at the witness. No timing asserted; with 0.2 s on a loaded machine the
    solver may stop before its root LP, and then the answer is the one-line error saying so
    (as in tests/solvers/test_conformance.py), never an unproven number."""
    from lipopt.solvers import SolverError

    rng = np.random.default_rng(8)
    net = random_network(rng, [5, 14, 14, 2])
    domain = Box(np.zeros(5), np.ones(5))
    c = np.array([1.0, -1.0])
    exact = lipschitz(net, domain, norm=norm, c=c, formulation="backward", regions=False)
    assert exact.status == "optimal"
    try:
        res = lipschitz(
            net, domain, norm=norm, c=c, formulation="forward", regions=False,
            time_limit=time_limit,
        )  # fmt: skip
    except SolverError as err:
        assert time_limit < 1.0 and "without a proven bound" in str(err)
        return
    assert res.status in ("optimal", "time_limit")
    assert res.upper >= exact.value * (1 - 1e-9)
    if res.lower is not None:
        assert res.lower <= exact.value * (1 + 1e-9)
        assert dual_norm(net.gradients(res.witness, c), norm) == pytest.approx(res.lower)
    if res.status == "optimal":
        assert res.value == pytest.approx(exact.value, rel=1e-6)


@pytest.mark.parametrize("domain", [Box([0.0, 0.0], [1.0, 2.0]), L1Ball([0.5, 0.5], 1.0)])
@pytest.mark.parametrize("norm", ["linf", "l1"])
@pytest.mark.parametrize("formulation", ["backward", "forward"])
def test_network_without_hidden_layers_is_its_weight_norm(formulation, norm, domain):
    """An affine map f(x) = W x + b: the constant of c^T f is ||W^T c||_{α*} (closed form)."""
    from lipopt.network import Affine, Network

    weight = np.array([[1.0, -2.0], [0.5, 3.0]])
    net = Network.from_layers([Affine(weight, np.array([0.1, -0.2]))])
    c = np.array([1.0, -1.0])
    res = lipschitz(
        net, domain, norm=norm, c=c, formulation=formulation, split=False, regions=False
    )
    assert res.status == "optimal"
    assert res.value == pytest.approx(float(dual_norm(weight.T @ c, norm)), rel=1e-9)
