"""The sign-group bound (lipopt.bounds.sign_groups), against independent truth: never below the
brute-force oracle's exact constant (fixed c and output norms, four kinds of domain), never below
10,000 sampled gradient norms on the bundled digits models, the exact ``||J^T c||_1`` where every
neuron is stable, sound over any order of the entries; its rows are every sign vector of every
group, and chunking changes nothing but the last bits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import lipopt.bounds.back_substitution as back_substitution
import lipopt.bounds.sign_groups as sign_groups
from benchmarks.margins import top_two_margin
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import interval_bounds
from lipopt.bounds.sign_groups import ordered_rows, sign_group_bound, sign_rows
from lipopt.domain import Box, L1Ball, L2Ball, LinfBall
from lipopt.norms import OutputNorm
from tests import oracle
from tests.helpers import fast_first, network_from_weights

REL = 1e-9
MODELS = Path(__file__).resolve().parents[2] / "models"


def _domain(kind: int, rng: np.random.Generator, d: int):
    """A unit box, an ℓ∞, an ℓ1 or an ℓ2 ball around a random point."""
    return [
        lambda: Box(-np.ones(d), np.ones(d)),
        lambda: LinfBall(rng.normal(size=d), 0.5),
        lambda: L1Ball(rng.normal(size=d), 1.0),
        lambda: L2Ball(rng.normal(size=d), 0.8),
    ][kind % 4]()


def test_rows_are_every_sign_vector_of_every_group() -> None:
    rows, owners = sign_rows(5, 2)  # groups {0, 1}, {2, 3}, {4}
    assert rows.shape == (4 + 4 + 2, 5)
    assert list(owners) == [0] * 4 + [1] * 4 + [2] * 2
    for group, members in enumerate(([0, 1], [2, 3], [4])):
        block = rows[owners == group]
        outside = np.delete(block, members, axis=1)
        assert not outside.any()
        signs = {tuple(row) for row in block[:, members]}
        assert len(signs) == 2 ** len(members)
        assert all(set(s) <= {-1.0, 1.0} for s in signs)
    with pytest.raises(ValueError, match="at least one entry"):
        sign_rows(3, 0)


@pytest.mark.parametrize("size", fast_first([8, 1, 2]))  # the policy's size fast
def test_never_below_the_exact_constant(size: int) -> None:
    """16 random networks [3, 8, 8, 2] with ℓ∞ input, fixed c, on the root's bounds."""
    rng = np.random.default_rng(60 + size)
    for index in range(16):
        weights = oracle.random_network_weights(rng, [3, 8, 8, 2])
        net = network_from_weights(weights)
        domain = _domain(index, rng, 3)
        c = rng.normal(size=2)
        exact = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c, "linf").value
        bound = sign_group_bound(net, split_bounds(net, domain, c, {}), c, size)
        assert bound >= exact * (1.0 - REL) - 1e-12, (index, bound, exact)


def test_ordered_rows_group_the_order_s_runs() -> None:
    rows, owners = ordered_rows(5, 2, [3, 0, 4, 1, 2])  # groups {3, 0}, {4, 1}, {2}
    for group, members in enumerate(([3, 0], [4, 1], [2])):
        block = rows[owners == group]
        assert not np.delete(block, members, axis=1).any()
        assert len({tuple(row) for row in block[:, members]}) == 2 ** len(members)
    for bad in ([0, 1, 2, 3], [0, 0, 1, 2, 3], [0, 1, 2, 3, 5]):
        with pytest.raises(ValueError, match="permutation of the 5 entries"):
            ordered_rows(5, 2, bad)


def test_never_below_the_exact_constant_in_any_order() -> None:
    """Groups of 2 over a random permutation of the entries, 12 random networks [4, 8, 8, 2]."""
    rng = np.random.default_rng(64)
    for index in range(12):
        net = network_from_weights(oracle.random_network_weights(rng, [4, 8, 8, 2]))
        domain = _domain(index, rng, 4)
        c = rng.normal(size=2)
        exact = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c, "linf").value
        order = rng.permutation(4)
        bound = sign_group_bound(net, split_bounds(net, domain, c, {}), c, 2, order)
        assert bound >= exact * (1.0 - REL) - 1e-12, (index, order, bound, exact)


@pytest.mark.parametrize("output", [OutputNorm.L1, OutputNorm.LINF, OutputNorm.CROSS])
def test_never_below_the_exact_constant_for_output_norms(output: OutputNorm) -> None:
    rng = np.random.default_rng(71)
    for index in range(6):
        net = network_from_weights(oracle.random_network_weights(rng, [3, 6, 6, 3]))
        domain = _domain(index, rng, 3)
        spec = oracle.from_lipopt(net, domain)
        exact = oracle.brute_force_lipschitz(*spec, None, "linf", output.value).value
        bound = sign_group_bound(net, split_bounds(net, domain, output, {}), output, 2)
        assert bound >= exact * (1.0 - REL) - 1e-12, (index, bound, exact)


def test_exact_where_every_neuron_is_stable() -> None:
    """A tiny box where no pre-activation is near 0: the gradient is the constant ``J^T c``,
    every back-substitution is exact, and each group's best sign vector is its sign."""
    rng = np.random.default_rng(3)
    net = network_from_weights(oracle.random_network_weights(rng, [6, 12, 12, 3]))
    point = rng.normal(size=6)
    box = Box(point - 1e-7, point + 1e-7)
    c = rng.normal(size=3)
    assert interval_bounds(net, box, c).unstable_count == 0
    truth = float(np.abs(net.jacobian_at(point).T @ c).sum())
    bounds = split_bounds(net, box, c, {})
    for size in (1, 4, 6):
        assert sign_group_bound(net, bounds, c, size) == pytest.approx(truth, rel=1e-9)


@pytest.mark.parametrize("kernel_rows", [1, 1 << 30])  # every chunk on one kernel: kept, every
def test_chunks_change_nothing(monkeypatch: pytest.MonkeyPatch, kernel_rows: int) -> None:
    monkeypatch.setattr(back_substitution, "KEPT_COLUMNS_MIN_ROWS", kernel_rows)
    rng = np.random.default_rng(5)
    net = network_from_weights(oracle.random_network_weights(rng, [8, 16, 16, 1]))
    box = Box(-np.ones(8), np.ones(8))
    bounds = split_bounds(net, box, np.ones(1), {})
    whole = sign_group_bound(net, bounds, np.ones(1), 8)
    monkeypatch.setattr(sign_groups, "CHUNK_ENTRIES", 40)  # a few rows per chunk
    # the same up to the last bits: the rows' sums (BLAS) may be ordered by the chunk's size
    assert sign_group_bound(net, bounds, np.ones(1), 8) == pytest.approx(whole, rel=1e-13)


@pytest.mark.parametrize("name, radius", [("cnn", 0.05), ("resmlp", 0.1)])
def test_never_below_sampled_gradients_on_the_bundled_models(name: str, radius: float) -> None:
    """10,000 sampled gradient norms (each attained) over an ℓ∞ ball around a test image,
    c the top-2 margin: none above the bound."""
    pytest.importorskip("onnx")
    from lipopt.io import load_onnx

    net = load_onnx(MODELS / f"digits-{name}.onnx")
    x = np.load(MODELS / "digits-test.npz")["images"][1].reshape(-1)
    ball, c = LinfBall(x, radius), top_two_margin(net, x)
    sampled = oracle.sampled_max_gradient_norm(*oracle.from_lipopt(net, ball), c, "linf", n=10_000)
    bound = sign_group_bound(net, split_bounds(net, ball, c, {}), c, 8)
    assert sampled <= bound * (1.0 + REL)
