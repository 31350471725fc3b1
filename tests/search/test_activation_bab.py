"""The activation branch and bound against the brute-force oracle (tests/oracle.py): run to the
end it is exact and its witness attains the value; stopped early its bracket still holds the
truth. Prints the nodes needed against the root's unstable neurons (``pytest -s``)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import lipopt.bounds.sign_shortlist as sign_shortlist
from lipopt.domain import Box, L1Ball, L2Ball, LinfBall
from lipopt.norms import OutputNorm
from lipopt.search import bab_empty as empty_module
from lipopt.search.activation_bab import ActivationBabOptions, activation_bab
from lipopt.status import Status
from tests import oracle
from tests.helpers import fast_first, network_from_weights


def _case(rng: np.random.Generator, index: int, domains: tuple[str, ...]):
    """A random network [d, n1, n2, m] (d in 2..4, widths 6..10) and a domain of the kinds."""
    d, n1, n2 = int(rng.integers(2, 5)), int(rng.integers(6, 11)), int(rng.integers(6, 11))
    m = 1 + index % 2
    weights = oracle.random_network_weights(rng, [d, n1, n2, m])
    kind = domains[index % len(domains)]
    domain = {
        "box": lambda: Box(-np.ones(d), np.ones(d)),
        "linf": lambda: LinfBall(rng.normal(size=d), 0.5),
        "l1": lambda: L1Ball(rng.normal(size=d), 1.0),
        "l2": lambda: L2Ball(rng.normal(size=d), 0.8),
    }[kind]()
    return weights, domain, rng.normal(size=m)


def _check_exact(
    weights,
    domain,
    seed,
    norm: str,
    output: str = "abs",
    cuts: bool = False,
    group: int = 0,
    swaps: int = -1,
    empty_lp: bool = False,
) -> str:
    net = network_from_weights(weights)
    spec = oracle.from_lipopt(net, domain)
    c = None if isinstance(seed, OutputNorm) else seed
    truth = oracle.brute_force_lipschitz(*spec, c, norm, output).value
    options = ActivationBabOptions(
        split_cuts=cuts, sign_group=group, sign_order_swaps=swaps,
        empty_lp_at=10**6 if empty_lp else 0, prefix_share=0.0 if empty_lp else 1.0,
    )  # fmt: skip
    out = activation_bab(net, domain, seed, norm, options=options)
    assert out.status == Status.OPTIMAL, (out.status, out.lower, out.upper, truth)
    scale = max(1.0, abs(truth))
    assert abs(out.upper - truth) <= 1e-6 * scale, (out.upper, truth)
    assert abs(out.lower - truth) <= 1e-6 * scale, (out.lower, truth)
    assert out.witness is not None and domain.contains(out.witness, tol=0.0)
    attained = oracle.gradient_norms(spec.weights, out.witness[None, :], c, norm, output)[0]
    assert attained == pytest.approx(out.lower, rel=1e-9, abs=1e-12)
    return f"unstable {out.root_unstable:3d}  nodes {out.nodes:4d}  {out.seconds:.2f} s"


@pytest.mark.parametrize(
    ("row", "norm", "domains"),
    [
        (0, "linf", ("box", "linf")),
        (1, "l1", ("box", "linf")),
        (2, "l2", ("box", "l1")),
        (3, "linf", ("l1", "l2")),
    ],
)
@pytest.mark.parametrize("cuts", fast_first([False, True]), ids=["clipped", "split-cuts"])
# the split-cuts sweep with the slow ones; test_exact_for_output_norms keeps both fast
def test_exact_on_random_networks(
    row: int, norm: str, domains: tuple[str, ...], cuts: bool
) -> None:
    """6 networks per row, 24 in all: optimal, the oracle's value, attained at the witness;
    with the splits' input-space cuts too (:mod:`lipopt.bounds.split_cuts`)."""
    rng = np.random.default_rng(20 + row)
    for index in range(6):
        weights, domain, c = _case(rng, index, domains)
        report = _check_exact(weights, domain, c, norm, cuts=cuts)
        print(f"{norm} {type(domain).__name__:8s} {report}")


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_exact_with_every_node_checked_by_the_emptiness_lp(
    norm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 networks on four kinds of domain, every node taken given the emptiness LP
    (:mod:`lipopt.bounds.split_empty`, rate 0) and none the margin LP on its stable first
    layers (which finds these small networks' empty nodes first): optimal, the oracle's value,
    attained; the LP dropped nodes (else the sweep shows nothing)."""
    proofs: list[bool] = []
    real = empty_module.proven_empty

    def counted(*args, **kwargs) -> bool:
        proofs.append(real(*args, **kwargs))
        return proofs[-1]

    monkeypatch.setattr(empty_module, "proven_empty", counted)
    rng = np.random.default_rng(60 if norm == "linf" else 61)
    for index in range(8):
        weights, domain, c = _case(rng, index, ("box", "linf", "l1", "l2"))
        report = _check_exact(weights, domain, c, norm, cuts=bool(index % 2), empty_lp=True)
        print(f"{norm} {type(domain).__name__:8s} {report}")
    assert sum(proofs) >= 10, (sum(proofs), len(proofs))


@pytest.mark.parametrize("output", [OutputNorm.L1, OutputNorm.LINF, OutputNorm.CROSS])
@pytest.mark.parametrize("cuts", [False, True], ids=["clipped", "split-cuts"])
def test_exact_for_output_norms(output: OutputNorm, cuts: bool) -> None:
    rng = np.random.default_rng(41)
    for index in range(2):
        weights = oracle.random_network_weights(rng, [3, 7, 7, 3])
        domain = Box(-np.ones(3), np.ones(3)) if index else LinfBall(rng.normal(size=3), 0.5)
        report = _check_exact(weights, domain, output, "linf", output.value, cuts)
        print(f"output {output.value} {report}")


@pytest.mark.slow  # an oracle sweep; the planned search's test keeps a fast exact case
@pytest.mark.parametrize("group", [2, 8])
def test_exact_with_sign_groups(group: int) -> None:
    """The nodes also bounded by their sign groups (:mod:`lipopt.bounds.sign_groups`), ℓ∞
    input: 8 networks over four kinds of domain and two output norms, exact and attained."""
    rng = np.random.default_rng(90 + group)
    for index in range(8):
        weights, domain, c = _case(rng, index, ("box", "linf", "l1", "l2"))
        report = _check_exact(weights, domain, c, "linf", cuts=True, group=group)
        print(f"groups of {group} {type(domain).__name__:8s} {report}")
    for output in (OutputNorm.L1, OutputNorm.CROSS):
        weights = oracle.random_network_weights(rng, [3, 7, 7, 3])
        domain = LinfBall(rng.normal(size=3), 0.5)
        _check_exact(weights, domain, output, "linf", output.value, True, group)


def test_exact_with_a_chosen_sign_order() -> None:
    """Groups of 1 and 2 over an order chosen on the root (lipopt.bounds.sign_order, with
    swaps): exact and attained on 6 networks of 3-4 inputs, four kinds of domain, and an
    output norm."""
    rng = np.random.default_rng(93)
    for index in range(6):
        weights, domain, c = _case(rng, index, ("box", "linf", "l1", "l2"))
        _check_exact(weights, domain, c, "linf", group=1 + index % 2, swaps=10)
    weights = oracle.random_network_weights(rng, [4, 7, 7, 3])
    domain = LinfBall(rng.normal(size=4), 0.5)
    _check_exact(weights, domain, OutputNorm.L1, "linf", "l1", group=2, swaps=10)


def test_exact_from_shortlists_of_one_sign_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each node's sign-group bound from the one sign vector per group its parent listed
    (lipopt.bounds.sign_shortlist: groups past their list recomputed), groups of 2 and 3:
    exact and attained on 6 networks, four kinds of domain."""
    monkeypatch.setattr(sign_shortlist, "KEPT_ROWS", 1)
    rng = np.random.default_rng(95)
    for index in range(6):
        weights, domain, c = _case(rng, index, ("box", "linf", "l1", "l2"))
        _check_exact(weights, domain, c, "linf", cuts=True, group=2 + index % 2)


def test_sign_groups_stop_after_the_probe_where_they_gain_too_little() -> None:
    """Groups on a [4, 10, 10, 1] unit box: they lower many nodes' bounds (fewer nodes, the
    same exact value); with a gain floor no bound can reach, they stop after the probe's 4."""
    rng = np.random.default_rng(7)
    net = network_from_weights(oracle.random_network_weights(rng, [4, 10, 10, 1]))
    box = Box(-np.ones(4), np.ones(4))
    found = {}
    for name, group, floor in (("off", 0, 0.0), ("on", 8, 0.0), ("floor", 8, 2.0)):
        options = ActivationBabOptions(
            sign_group=group, sign_group_probe=4, sign_group_min_gain=floor, attack_restarts=0
        )
        found[name] = activation_bab(net, box, np.ones(1), "linf", options=options)
        assert found[name].status == Status.OPTIMAL
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, box), np.ones(1), "linf").value
    for out in found.values():
        assert out.upper == pytest.approx(truth, rel=1e-6)
    assert found["off"].regrouped == 0
    assert found["on"].regrouped > 4 and found["on"].nodes < found["off"].nodes
    assert found["floor"].regrouped <= 4


def test_brackets_under_limits() -> None:
    """A node limit of 0, 1 or 3, or a deadline already close: lower <= truth <= upper, the
    lower attained at the witness, and the status says why it stopped."""
    rng = np.random.default_rng(5)
    stopped = 0
    for index in range(6):
        weights, domain, c = _case(rng, index, ("box", "linf"))
        net = network_from_weights(weights)
        spec = oracle.from_lipopt(net, domain)
        truth = oracle.brute_force_lipschitz(*spec, c, "linf").value
        runs = [
            activation_bab(net, domain, c, "linf", options=ActivationBabOptions(node_limit=n))
            for n in (0, 1, 3)
        ]
        runs.append(activation_bab(net, domain, c, "linf", deadline=time.perf_counter() + 0.02))
        for out in runs:
            assert out.lower <= truth * (1 + 1e-9) + 1e-12
            assert out.upper >= truth * (1 - 1e-9) - 1e-12
            assert out.witness is not None
            attained = oracle.gradient_norms(spec.weights, out.witness[None, :], c, "linf")[0]
            assert attained == pytest.approx(out.lower, rel=1e-9, abs=1e-12)
            if out.status in (Status.INTERRUPTED, Status.TIME_LIMIT):
                stopped += 1
            else:
                assert out.status == Status.OPTIMAL
    assert stopped >= 6


def test_solve_part_hook() -> None:
    """Nodes with few unstable neurons go to the caller: an answer that closes nothing leaves
    a sound but open bracket (upper_bound); None keeps splitting (exact)."""
    rng = np.random.default_rng(10)
    weights, domain, c = _case(rng, 0, ("box",))
    net = network_from_weights(weights)
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c, "linf").value
    seen: list[int] = []

    def loose(node, lower):
        seen.append(node.unstable)
        return (node.upper, 0.0, None)

    options = ActivationBabOptions(mip_at=4, attack_restarts=0)
    out = activation_bab(net, domain, c, "linf", options=options, solve_part=loose)
    assert seen and max(seen) <= 4 and out.solved == len(seen)
    assert out.lower <= truth * (1 + 1e-9) and out.upper >= truth * (1 - 1e-9)
    assert out.status in (Status.UPPER_BOUND, Status.OPTIMAL)
    out = activation_bab(
        net, domain, c, "linf", options=options, solve_part=lambda node, lower: None
    )
    assert out.status == Status.OPTIMAL and out.upper == pytest.approx(truth, rel=1e-6)


def test_both_branching_rules_are_exact() -> None:
    rng = np.random.default_rng(14)
    weights, domain, c = _case(rng, 0, ("box",))
    net = network_from_weights(weights)
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c, "l1").value
    for rule in ("score", "layer"):
        out = activation_bab(net, domain, c, "l1", options=ActivationBabOptions(branching=rule))
        assert out.status == Status.OPTIMAL and out.upper == pytest.approx(truth, rel=1e-6)
        print(f"{rule}: {out.nodes} nodes, {out.root_unstable} unstable")


def test_refusals() -> None:
    net = network_from_weights(oracle.random_network_weights(np.random.default_rng(0), [2, 3, 1]))
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="branching"):
        activation_bab(net, box, [1.0], "linf", options=ActivationBabOptions(branching="x"))
    with pytest.raises(ValueError, match="unsupported domain"):
        activation_bab(net, object(), [1.0], "linf")  # type: ignore[arg-type]
