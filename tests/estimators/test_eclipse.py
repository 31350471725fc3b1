"""ECLipsE, ECLipsE-Fast and ECLipsE-Gen-Local (the eclipse-nn package) against the
brute-force oracle's exact ℓ2 constants, against the package's own numbers, and their
one-line refusals."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lipopt import Box, L2Ball, LinfBall
from lipopt.compare import Unavailable, compare
from lipopt.estimators import Kind, eclipse
from lipopt.estimators.base import EstimatorOutOfScope, EstimatorUnavailable
from lipopt.heuristics.target import problem
from tests.helpers import random_network, require_module
from tests.oracle import brute_force_lipschitz, from_lipopt

GLOBAL = (eclipse.estimate, eclipse.estimate_fast)


@pytest.fixture
def package():
    """The eclipse-nn package (skipped without it; under CI a missing one fails)."""
    require_module("eclipse_nn")
    import eclipse_nn

    return eclipse_nn


def _cases() -> list[tuple[int, object, L2Ball]]:
    """Eight networks, one and two hidden layers (widths 2 to 7), ℓ2 balls of radius 0.1 to 2."""
    rng = np.random.default_rng(4747)
    cases = []
    for seed in range(8):
        d, *hidden = (int(v) for v in rng.integers(2, 8, size=2 + seed % 2))
        net = random_network(np.random.default_rng(300 + seed), [d, *hidden, 1], bias_std=0.5)
        cases.append((seed, net, L2Ball(rng.uniform(-1, 1, d), [0.1, 0.5, 2.0][seed % 3])))
    return cases


def _exact(net: object, ball: L2Ball) -> float:
    return brute_force_lipschitz(*from_lipopt(net, ball), np.ones(1), "l2").value


@pytest.mark.parametrize("seed, net, ball", _cases(), ids=lambda v: str(v)[:12])
def test_eclipse_global_values_bound_the_exact_local_l2_constant(package, seed, net, ball):
    """A global bound is above the local constant on any ball: no tolerance (proven)."""
    exact = _exact(net, ball)
    for method in GLOBAL:
        est = method(net, ball, "l2")
        assert est.kind is Kind.UPPER and est.detail["certified"]
        assert est.value >= exact * (1 - 1e-9) - 1e-12, est.name


@pytest.mark.parametrize("algo", eclipse.ALGOS)
@pytest.mark.parametrize("seed, net, ball", _cases(), ids=lambda v: str(v)[:12])
def test_eclipse_local_bounds_the_exact_l2_constant_on_the_ball(package, seed, net, ball, algo):
    exact = _exact(net, ball)
    est = eclipse.estimate_local(net, ball, "l2", algo=algo)
    assert est.kind is Kind.UPPER and est.detail["certified"]
    assert est.value >= exact * (1 - 1e-9) - 1e-12


def test_eclipse_global_bounds_a_near_global_constant(package):
    """On a ball of radius 50 the oracle's value is the global constant of the regions met."""
    net = random_network(np.random.default_rng(9), [2, 5, 4, 1], bias_std=0.3)
    big = L2Ball(np.zeros(2), 50.0)
    exact = _exact(net, big)
    for method in (*GLOBAL, eclipse.estimate_local):
        assert method(net, big, "l2").value >= exact * (1 - 1e-9)


def _package_global(package, net, fast: bool) -> tuple[float | None, int]:
    import torch

    weights = problem(net, L2Ball(np.zeros(net.input_dim), 1.0), "l2", None).scalar_weights()
    tensors = [torch.tensor(np.array(w)) for w in weights]
    slopes = ([0.0] * (len(weights) - 1), [1.0] * (len(weights) - 1))
    if fast:
        return float(package.ECLipsE_Fast(tensors, *slopes)), 0
    value, code = package.ECLipsE(tensors, *slopes)
    return (None if value is None else float(value)), code


@pytest.mark.parametrize("seed, net, ball", _cases(), ids=lambda v: str(v)[:12])
def test_eclipse_agrees_with_the_package_where_the_package_answers(package, seed, net, ball):
    """ECLipsE-Fast is the package's closed form; ECLipsE's SDP chain is the package's value
    wherever the package keeps every layer's SDP answer (exit code 0), and the value reported
    is never above the package's answer (ECLipsE, or ECLipsE-Fast where it falls back)."""
    fast = eclipse.estimate_fast(net, ball, "l2")
    package_fast = _package_global(package, net, True)[0]
    assert fast.value == pytest.approx(package_fast, rel=1e-8)
    assert fast.value == pytest.approx(fast.detail["package_value"], rel=1e-8)
    value, code = _package_global(package, net, False)
    est = eclipse.estimate(net, ball, "l2")
    if code == 0 and value is not None:
        assert est.detail["sdp_value"] == pytest.approx(value, rel=1e-5)
    answer = value if code == 0 and value is not None else package_fast
    assert est.value <= answer * (1 + 1e-5)
    assert est.value == min(est.detail["sdp_value"], est.detail["fast_value"])


@pytest.mark.parametrize("seed, net, ball", _cases(), ids=lambda v: str(v)[:12])
def test_eclipse_local_cf_is_the_packages_gen_local(package, seed, net, ball):
    """The package's Gen-Local (0.1.7) ends in CF for every algo (its status test looks for
    "Solved" in cvxpy's "optimal"): lipopt's CF gives the same number, and its Fast (the
    better of the certified Fast chain and CF's) no larger a one."""
    from eclipse_nn import get_lip_estimates

    weights = problem(net, ball, "l2", None).scalar_weights()
    biases = [a.bias for a in net.affine_layers[:-1]] + [np.zeros(1)]
    with contextlib.redirect_stdout(io.StringIO()):
        ref, _seconds, code = get_lip_estimates(
            weights, ball.center, ball.radius, "relu", biases, "Fast"
        )
    assert code == 0
    ours = eclipse.estimate_local(net, ball, "l2", algo="CF").value
    assert ours == pytest.approx(ref, rel=1e-6)
    assert eclipse.estimate_local(net, ball, "l2", algo="Fast").value <= ref * (1 + 1e-6)


def test_eclipse_local_on_a_tiny_ball_is_the_gradient_norm(package):
    """Every neuron keeps its sign: the layers merge and the bound is ||∇(cᵀf)(x₀)||_2."""
    rng = np.random.default_rng(8)
    net = random_network(rng, [3, 6, 4, 1])
    x = rng.uniform(-1, 1, 3)
    gradient = net.gradients(x[None, :], np.ones(1))[0]
    est = eclipse.estimate_local(net, L2Ball(x, 1e-6), "l2")
    assert est.value == pytest.approx(np.linalg.norm(gradient), rel=1e-8)
    assert est.detail["layers"] == ["merged", "merged"]


def test_an_affine_network_gives_the_norm_of_its_row(package):
    net = random_network(np.random.default_rng(2), [4, 1])
    row = net.affine_layers[0].weight[0]
    for method in (*GLOBAL, eclipse.estimate_local):
        value = method(net, L2Ball(np.zeros(4), 1.0), "l2").value
        assert value == pytest.approx(np.linalg.norm(row), rel=1e-8)


def test_eclipse_refuses_other_norms_and_domains_in_one_line(package):
    net = random_network(np.random.default_rng(1), [2, 4, 1])
    box = Box(-np.ones(2), np.ones(2))
    for method, title in ((eclipse.estimate, "ECLipsE"), (eclipse.estimate_fast, "ECLipsE-Fast")):
        with pytest.raises(EstimatorOutOfScope, match=f"^{title} is built for the l2 input norm$"):
            method(net, box, "linf")
    with pytest.raises(EstimatorOutOfScope, match="^ECLipsE-Gen-Local takes an l2 ball"):
        eclipse.estimate_local(net, box, "l2")
    with pytest.raises(EstimatorOutOfScope, match="^ECLipsE-Gen-Local takes an l2 ball"):
        eclipse.estimate_local(net, LinfBall(np.zeros(2), 0.5), "l2")
    results = compare(net, box, "linf", None, "eclipse,eclipse-fast,eclipse-local")
    assert all(isinstance(r, Unavailable) and "l2" in r.reason for r in results)


def test_without_the_package_each_method_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "eclipse_nn", None)  # `import eclipse_nn` raises ImportError
    net = random_network(np.random.default_rng(1), [2, 4, 1])
    ball = L2Ball(np.zeros(2), 1.0)
    for method in (*GLOBAL, eclipse.estimate_local):
        with pytest.raises(EstimatorUnavailable, match=r"pip install 'lipopt\[eclipse\]'$"):
            method(net, ball, "l2")
    with pytest.raises(EstimatorUnavailable) as info:
        eclipse.estimate_local(net, ball, "l2")
    assert str(info.value) == (
        "ECLipsE-Gen-Local needs the eclipse-nn package: pip install 'lipopt[eclipse]'"
    )


def test_lipopt_compare_runs_them_on_an_l2_ball_and_refuses_linf(package, capsys):
    from lipopt.cli import main

    model = str(Path(__file__).parents[2] / "models" / "synthetic-2x20x40x20x2.onnx")
    methods = "eclipse-fast,eclipse-local"
    ball = ["--center", "0.5,0.5", "--radius", "0.1", "--ball", "l2", "--c", "1,-1"]
    assert main(["compare", model, *ball, "--norm", "l2", "--methods", methods, "--json",
                 "--quiet"]) == 0  # fmt: skip
    entries = {m["name"]: m for m in json.loads(capsys.readouterr().out)["methods"]}
    assert entries["eclipse-local"]["kind"] == "upper"
    assert 0 < entries["eclipse-local"]["value"] <= entries["eclipse-fast"]["value"] * 1.01
    assert main(["compare", model, "--box", "0,1", "--c", "1,-1", "--methods", methods]) == 0
    out = capsys.readouterr().out
    assert "eclipse-fast: not run: ECLipsE-Fast is built for the l2 input norm" in out
