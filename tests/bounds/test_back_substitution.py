"""The two back-substitution kernels (lipopt.bounds.back_substitution): the same sums on ReLU and
two-piece networks, dense and sparse weights, one row of lines or one per row; the kept-columns
kernel, forced on every call, still never below sampled gradient norms (two-piece networks) or
the brute-force oracle's exact constant (ReLU); a layer of dead neurons; which kernel runs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from scipy import sparse

import lipopt.bounds.back_substitution as kernels
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.jacobian import chord_switches, jacobian_norm_bound, slope_problem
from lipopt.bounds.jacobian_slopes import SlopeProblem
from lipopt.bounds.sign_groups import sign_group_bound
from lipopt.domain import Box
from lipopt.norms import InputNorm, OutputNorm
from tests import oracle
from tests.bounds.activation_cases import (
    TOL,
    WIDTHS,
    backward_truth,
    forward_truth,
    make_case,
    sampled_case,
)
from tests.helpers import network_from_weights


def _problem(case: int, kind: str, seed_kind: str, sparse_weights: bool) -> SlopeProblem:
    """Case ``case``'s network (``kind``: two-piece activations, or ReLU with the same weights)
    over an ℓ∞ ball, its root bounds' slope problem; ``sparse_weights``: every matrix of the
    problem as a scipy CSR array (the network's own are dense at these sizes)."""
    network, weights, _, domain, seed, *_ = sampled_case(case, "linf", seed_kind)
    if kind == "relu":
        network = network_from_weights(weights)
    problem = slope_problem(network, split_bounds(network, domain, seed, {}), seed, InputNorm.L1)
    if sparse_weights:
        problem = replace(problem, matrices=tuple(sparse.csr_array(m) for m in problem.matrices))
    return problem


def _both(problem, switch, rows) -> list[tuple[np.ndarray, ...]]:
    """Each kernel's coefficients on ``w``, constants and magnitudes, every column first."""
    out = []
    for kernel in (kernels.every_column, kernels.kept_columns):
        sums = [np.zeros(rows.shape[0]), np.zeros(rows.shape[0])]
        out.append((kernel(problem, switch, rows, sums), *sums))
    return out


@pytest.mark.parametrize("sparse_weights", [False, True])
@pytest.mark.parametrize("seed_kind", ["c", "norm"])
@pytest.mark.parametrize("kind", ["relu", "two-piece"])
@pytest.mark.parametrize("case", range(len(WIDTHS) * 2))
def test_the_kernels_give_the_same_sums(
    case: int, kind: str, seed_kind: str, sparse_weights: bool
) -> None:
    """Sign rows, random rows and the rows ±e_j; the chords broadcast and random lines per row."""
    problem = _problem(case, kind, seed_kind, sparse_weights)
    assert sparse.issparse(problem.matrices[0]) == sparse_weights
    assert (problem.slopes is None) == (kind == "relu")
    rng = np.random.default_rng(case)
    d = problem.g_low.shape[0]
    rows = np.vstack([rng.choice([-1.0, 1.0], size=(9, d)), rng.normal(size=(5, d)),
                      np.eye(d), -np.eye(d)])  # fmt: skip
    chords = chord_switches(problem)
    per_row = [(rng.random((rows.shape[0], t.shape[1])), rng.random((rows.shape[0], t.shape[1])))
               for t, _ in chords]  # fmt: skip
    for switch in (chords, per_row):
        every, kept = _both(problem, switch, rows)
        for a, b in zip(every, kept, strict=True):
            scale = 1.0 + np.abs(a)
            assert np.all(np.abs(a - b) <= 1e-12 * scale), (case, np.max(np.abs(a - b) / scale))


def test_a_layer_of_dead_neurons_carries_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every neuron of the second hidden layer dead on the box: no column is kept there, and
    both kernels leave no coefficient on the seed and the same constants (layer 0's)."""
    rng = np.random.default_rng(4)
    weights = oracle.random_network_weights(rng, [3, 5, 4, 2])
    weights[1] = (weights[1][0], np.full(4, -100.0))
    net = network_from_weights(weights)
    box = Box(-np.ones(3), np.ones(3))
    c = rng.normal(size=2)
    problem = slope_problem(net, split_bounds(net, box, c, {}), c, InputNorm.L1)
    assert not problem.active[1].any() and not problem.unstable[1].any()
    rows = rng.choice([-1.0, 1.0], size=(6, 3))
    shapes: list[tuple[int, ...]] = []
    real = kernels._gathered
    monkeypatch.setattr(
        kernels, "_gathered", lambda *a: (lambda m: (shapes.append(m.shape), m)[1])(real(*a))
    )
    every, kept = _both(problem, chord_switches(problem), rows)
    assert shapes[1][1] == 0 and shapes[2][0] == 0  # layer 1 carried no neuron, in nor out
    assert np.all(every[0] == 0.0) and np.all(kept[0] == 0.0)
    assert np.allclose(every[1], kept[1], rtol=1e-12, atol=0.0)


@pytest.fixture
def kept_everywhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every back-substitution takes the kept-columns kernel, one row or many; the test fails
    if it never ran."""
    monkeypatch.setattr(kernels, "KEPT_COLUMNS_MIN_ROWS", 1)
    calls: list[int] = []
    real = kernels.kept_columns
    monkeypatch.setattr(kernels, "kept_columns", lambda *a: (calls.append(1), real(*a))[1])
    monkeypatch.setattr(kernels, "every_column", None)  # would raise if called
    yield
    assert calls, "the kept-columns kernel never ran"


@pytest.mark.usefixtures("kept_everywhere")
@pytest.mark.parametrize("norm", ["linf", "l1", "l2"])
@pytest.mark.parametrize("case", range(len(WIDTHS) * 2))
def test_kept_columns_bounds_stay_above_sampled_gradients(case: int, norm: str) -> None:
    """Two-piece networks (leaky, identity, negative and steep slopes): 5000 sampled gradient
    norms at most the Jacobian bound, and for ℓ∞ input at most the sign-group bound."""
    network, weights, slopes, domain, seed, x, top, _ = sampled_case(case, "linf", "c")
    _, grad = backward_truth(weights, slopes, forward_truth(weights, slopes, x), top)
    dual = {"linf": 1, "l1": np.inf, "l2": 2}[norm]
    largest = float(np.max(np.linalg.norm(grad, ord=dual, axis=1)))
    assert jacobian_norm_bound(network, domain, seed, norm).value >= largest * (1.0 - TOL)
    if norm == "linf":
        bounds = split_bounds(network, domain, seed, {})
        assert sign_group_bound(network, bounds, seed, 2) >= largest * (1.0 - TOL)


@pytest.mark.usefixtures("kept_everywhere")
@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_kept_columns_bounds_never_below_the_exact_constant(norm: str) -> None:
    """8 random ReLU networks [3, 8, 8, 2] on a box, fixed c and the ℓ1 output norm."""
    rng = np.random.default_rng(81)
    for index in range(8):
        net = network_from_weights(oracle.random_network_weights(rng, [3, 8, 8, 2]))
        centre = rng.normal(size=3)
        box = Box(centre - rng.uniform(0.5, 1.5, 3), centre + rng.uniform(0.5, 1.5, 3))
        seed = rng.normal(size=2) if index % 2 else OutputNorm.L1
        spec = oracle.from_lipopt(net, box)
        if isinstance(seed, OutputNorm):
            exact = oracle.brute_force_lipschitz(*spec, None, norm, seed.value).value
        else:
            exact = oracle.brute_force_lipschitz(*spec, seed, norm).value
        bound = jacobian_norm_bound(net, box, seed, norm).value
        assert bound >= exact * (1.0 - 1e-9) - 1e-12, (index, bound, exact)
        if norm == "linf":
            grouped = sign_group_bound(net, split_bounds(net, box, seed, {}), seed, 3)
            assert grouped >= exact * (1.0 - 1e-9) - 1e-12, (index, grouped, exact)


def test_many_rows_take_the_kept_columns_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows at the threshold go to :func:`kept_columns`, fewer to :func:`every_column`."""
    network, *_ = make_case(3, [4, 6, 6, 2])
    problem = slope_problem(
        network, split_bounds(network, Box(-np.ones(4), np.ones(4)), np.ones(2), {}),
        np.ones(2), InputNorm.L1,
    )  # fmt: skip
    taken: list[str] = []
    for name in ("every_column", "kept_columns"):
        real = getattr(kernels, name)
        monkeypatch.setattr(
            kernels, name, lambda *a, _real=real, _name=name: (taken.append(_name), _real(*a))[1]
        )
    threshold = kernels.KEPT_COLUMNS_MIN_ROWS
    for count in (1, threshold - 1, threshold):
        rows = np.ones((count, 4))
        zeros = np.zeros(count)
        kernels.back_substitute_rows(problem, chord_switches(problem), rows, (zeros, zeros))
    assert taken == ["every_column", "every_column", "kept_columns"]
