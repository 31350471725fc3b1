"""The brute-force oracle (tests/oracle.py) on domains cut by linear constraints ``A x <= b``
(issue 47: lipopt's Polytope and Intersection domains).

Reference values are computed here without the oracle's region search: closed forms for
hand-placed hyperplanes, exact 1-D breakpoints on the interval the constraints leave, the
Jacobian at uniform samples drawn and filtered inside the set here, and two identities of sets
(constraints containing the whole domain change nothing; axis-aligned constraints on a box are
a smaller box).
"""

from __future__ import annotations

import copy
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from tests.oracle import (
    ConstrainedDomain,
    brute_force_lipschitz,
    from_lipopt,
    random_network_weights,
    sample_domain,
    sampled_max_gradient_norm,
)

DUAL_ORD = {"linf": 1, "l1": np.inf, "l2": 2}


def fast_first(seeds: range) -> list:
    """The first seed with the README's test command, the others marked slow (this module
    tests the oracle alone, so it does not take tests.helpers, which imports lipopt)."""
    return [s if i == 0 else pytest.param(s, marks=pytest.mark.slow) for i, s in enumerate(seeds)]


SQUARE = ("box", -np.ones(2), np.ones(2))
DOMAINS_2D = {
    "box": SQUARE,
    "l1": ("l1", np.zeros(2), 1.9),
    "l2": ("l2", np.zeros(2), 1.3),
}


# --------------------------------------------------------------------------- independent helpers


def _jacobian(weights, x):
    """The Jacobian at one point, computed here (relu'(0) = 0)."""
    jac, h = np.eye(len(x)), np.asarray(x, dtype=np.float64)
    for w, b in weights[:-1]:
        z = w @ h + b
        jac = (z > 0)[:, None] * (w @ jac)
        h = np.maximum(z, 0.0)
    return weights[-1][0] @ jac


def _pattern(weights, x):
    h, bits = np.asarray(x, dtype=np.float64), []
    for w, b in weights[:-1]:
        z = w @ h + b
        bits.append(z > 0)
        h = np.maximum(z, 0.0)
    return np.concatenate(bits).tobytes()


def _uniform(domain, n, rng):
    """Uniform points of a box / l1 ball / l2 ball, drawn here (rejection from the box)."""
    kind, p, q = domain
    lo, hi = (np.asarray(p), np.asarray(q)) if kind == "box" else (p - q, p + q)
    x = lo + (hi - lo) * rng.random((n, len(lo)))
    if kind == "l1":
        x = x[np.abs(x - p).sum(axis=1) <= q]
    elif kind == "l2":
        x = x[np.linalg.norm(x - p, axis=1) <= q]
    return x


def _two_neuron_net():
    """``f(x) = 10 relu(x0 + x1 - 1) + 0.5 relu(x0)``: on [-1,1]^2 the steep region is the corner
    ``x0 + x1 > 1`` (gradient (10.5, 10)); where ``x0 + x1 < 1`` and ``x0 > 0`` it is (0.5, 0),
    where ``x0 < 0`` it is 0."""
    return [
        (np.array([[1.0, 1.0], [1.0, 0.0]]), np.array([-1.0, 0.0])),
        (np.array([[10.0, 0.5]]), np.zeros(1)),
    ]


def _containing_rows(domain, rng, k=4):
    """``k`` random rows ``A x <= b`` whose half-spaces contain the whole domain: half tangent
    to it (b = its support function), half with slack."""
    kind, p, q = domain
    a = rng.normal(size=(k, len(p)))
    if kind == "box":
        support = a @ ((p + q) / 2) + np.abs(a) @ ((q - p) / 2)
    else:
        dual = np.inf if kind == "l1" else 2
        support = a @ p + q * np.linalg.norm(a, ord=dual, axis=1)
    return a, support + np.where(np.arange(k) % 2, 0.0, rng.uniform(0.01, 1.0, k))


def _random_rows(domain, rng, k):
    """``k`` random half-spaces all containing a random interior point of the domain (so the set
    has an interior), each cutting the domain somewhere near that point."""
    x0 = _uniform(domain, 50, rng)[0]
    a = rng.normal(size=(k, len(x0)))
    return a, a @ x0 + rng.uniform(0.05, 0.6, k) * np.linalg.norm(a, axis=1)


# --------------------------------------------------------------------------- (a) closed forms


@pytest.mark.parametrize("kind", ["box", "l1", "l2"])
@pytest.mark.parametrize(
    ("input_norm", "steep", "flat"),
    [("linf", 20.5, 0.5), ("l1", 10.5, 0.5), ("l2", float(np.hypot(10.5, 10.0)), 0.5)],
)
def test_constraint_cutting_off_the_steep_corner(kind, input_norm, steep, flat):
    weights, domain = _two_neuron_net(), DOMAINS_2D[kind]
    assert brute_force_lipschitz(weights, domain, None, input_norm).value == pytest.approx(steep)
    cut = (np.array([[1.0, 1.0]]), np.array([0.5]))
    res = brute_force_lipschitz(weights, domain, None, input_norm, constraints=cut)
    assert res.value == pytest.approx(flat, rel=1e-12)
    assert res.argmax_point.sum() < 0.5 and res.argmax_point[0] > 0
    # the corner only trimmed (x0 + x1 <= 1.2 leaves x0 + x1 in (1, 1.2)): still steep
    trim = (np.array([[1.0, 1.0]]), np.array([1.2]))
    res = brute_force_lipschitz(weights, domain, None, input_norm, constraints=trim)
    assert res.value == pytest.approx(steep, rel=1e-12)
    assert 1.0 < res.argmax_point.sum() < 1.2
    # and with a second row 3 x0 <= 0 only the dead part x0 < 0 is left: 0
    left = (np.array([[1.0, 1.0], [3.0, 0.0]]), np.array([0.5, 0.0]))
    assert brute_force_lipschitz(weights, domain, None, input_norm, constraints=left).value == 0.0


@pytest.mark.parametrize(
    ("rows", "rhs", "expected"),
    [
        ([[1.0]], [0.2], 1.0),  # x <= 0.2: the steep piece x > 0.2 is cut off
        ([[2.0], [-1.0]], [0.4, 0.0], 0.0),  # 0 <= x <= 0.2: both neurons off
        ([[-1.0]], [-0.5], 3.0),  # x >= 0.5: only the steep piece
        ([[1.0], [-4.0]], [0.9, 2.0], 3.0),  # -0.5 <= x <= 0.9
    ],
)
def test_1d_closed_form(rows, rhs, expected):
    """``f(x) = 3 relu(x - 0.2) + relu(-x)`` on [-1, 1]: slopes -1, 0, 3."""
    weights = [(np.array([[1.0], [-1.0]]), np.array([-0.2, 0.0])), (np.array([[3.0, 1.0]]), [0.0])]
    res = brute_force_lipschitz(
        weights, ("box", [-1.0], [1.0]), None, "linf", constraints=(np.array(rows), np.array(rhs))
    )
    assert res.value == expected


def _exact_1d(weights, lo, hi):
    """Largest |slope| of a scalar 1-D ReLU net on [lo, hi]: between consecutive knots every
    neuron of the layers seen so far keeps its sign, so the next layer's zeros are found exactly
    by linear interpolation; pieces shorter than 2e-9 (inradius <= 1e-9) are not counted."""

    def hidden(x, depth):
        h = x[:, None]
        for w, b in weights[:depth]:
            h = np.maximum(h @ w.T + b, 0.0)
        return h @ weights[depth][0].T + weights[depth][1]

    knots = np.array([lo, hi])
    for depth in range(len(weights) - 1):
        z = hidden(knots, depth)
        seg, unit = np.nonzero(z[:-1] * z[1:] < 0)
        t = z[seg, unit] / (z[seg, unit] - z[seg + 1, unit])
        knots = np.unique(np.concatenate([knots, knots[seg] + t * np.diff(knots)[seg]]))
    out = hidden(knots, len(weights) - 1)[:, 0]
    widths = np.diff(knots)
    return float((np.abs(np.diff(out)) / widths)[widths > 2e-9].max())


@pytest.mark.parametrize("seed", range(6))
def test_1d_random_net_matches_exact_breakpoints_on_the_cut_interval(seed):
    rng = np.random.default_rng(300 + seed)
    weights = random_network_weights(rng, [1, 10, 10, 1])
    rows = np.array([[rng.uniform(0.5, 2.0)], [-rng.uniform(0.5, 2.0)], [0.0]])
    lo, hi = sorted(rng.uniform(-1.5, 1.5, 2))
    rhs = np.array([rows[0, 0] * hi, rows[1, 0] * lo, 1.0])  # lo <= x <= hi; 0 x <= 1 holds
    res = brute_force_lipschitz(
        weights, ("box", [-2.0], [2.0]), None, "linf", constraints=(rows, rhs)
    )
    assert res.value == pytest.approx(_exact_1d(weights, lo, hi), rel=1e-9)
    assert lo < res.argmax_point[0] < hi


# --------------------------------------------------------------------------- (b) no-op constraints


@pytest.mark.parametrize("seed", fast_first(range(3)))
@pytest.mark.parametrize("kind", ["box", "l1", "l2"])
@pytest.mark.parametrize("input_norm", ["linf", "l1", "l2"])
def test_constraints_containing_the_domain_change_nothing(seed, kind, input_norm):
    rng = np.random.default_rng(400 + seed)
    d = 2 if kind == "l2" else 3
    weights = random_network_weights(rng, [d, 8, 6, 1])
    domain = {
        "box": ("box", -np.ones(d), np.ones(d)),
        "l1": ("l1", rng.normal(size=d) * 0.2, 1.5),
        "l2": ("l2", rng.normal(size=d) * 0.2, 1.0),
    }[kind]
    ref = brute_force_lipschitz(weights, domain, None, input_norm)
    res = brute_force_lipschitz(
        weights, domain, None, input_norm, constraints=_containing_rows(domain, rng)
    )
    assert res.value == ref.value
    assert res.n_regions == ref.n_regions


@pytest.mark.parametrize("seed", range(4))
def test_axis_aligned_constraints_are_a_smaller_box(seed):
    """``x_j <= u_j`` and ``-x_j <= -l_j`` on a box are the box [max(lo, l), min(hi, u)]."""
    rng = np.random.default_rng(500 + seed)
    d = 2 + seed % 2
    weights = random_network_weights(rng, [d, 10, 8, 1])
    lo, hi = -np.ones(d), np.ones(d)
    cut_lo, cut_hi = rng.uniform(-0.9, -0.1, d), rng.uniform(0.1, 0.9, d)
    rows = np.vstack([np.diag(rng.uniform(0.5, 3.0, d)), -np.diag(rng.uniform(0.5, 3.0, d))])
    rhs = np.concatenate([np.diag(rows[:d]) * cut_hi, np.diag(rows[d:]) * cut_lo])
    for norm in ("linf", "l1"):
        ref = brute_force_lipschitz(weights, ("box", cut_lo, cut_hi), None, norm)
        res = brute_force_lipschitz(weights, ("box", lo, hi), None, norm, constraints=(rows, rhs))
        assert res.value == pytest.approx(ref.value, rel=1e-12)
        assert res.n_regions == ref.n_regions


# --------------------------------------------------------------------------- (c) random constraints


@pytest.mark.parametrize("seed", fast_first(range(4)))
@pytest.mark.parametrize("kind", ["box", "l1", "l2"])
@pytest.mark.parametrize("input_norm", ["linf", "l2"])
def test_random_constraints_between_inside_samples_and_the_whole_domain(seed, kind, input_norm):
    rng = np.random.default_rng(600 + seed)
    weights = random_network_weights(rng, [2, 10, 8, 1])
    domain = DOMAINS_2D[kind]
    rows, rhs = _random_rows(domain, rng, 1 + seed % 3)
    res = brute_force_lipschitz(
        weights, domain, None, input_norm, constraints=(rows, rhs), collect_regions=True
    )
    whole = brute_force_lipschitz(weights, domain, None, input_norm).value
    x = _uniform(domain, 40_000, rng)
    x = x[np.all(x @ rows.T <= rhs, axis=1)]
    assert len(x) > 200
    grads = [np.linalg.norm(_jacobian(weights, p)[0], DUAL_ORD[input_norm]) for p in x[:3000]]
    assert max(grads) - 1e-9 <= res.value <= whole + 1e-12
    # every pattern seen strictly inside the set is a region the oracle kept, and every region's
    # certificate point lies inside the set
    kept = {_pattern(weights, r.point) for r in res.regions}
    assert {_pattern(weights, p) for p in x} <= kept
    for region in res.regions:
        assert np.all(rows @ region.point <= rhs)


# --------------------------------------------------------------------------- (d) slivers


@pytest.mark.parametrize("kind", ["box", "l2"])
def test_region_meeting_the_set_only_in_a_face_is_not_counted(kind):
    """``f(x) = 10 relu(x0 - 0.5) + relu(x1)``: steep region x0 > 0.5 (l1 gradient 11)."""
    weights = [(np.eye(2), np.array([-0.5, 0.0])), (np.array([[10.0, 1.0]]), np.zeros(1))]
    domain = DOMAINS_2D[kind]
    for slack, expected, n_regions in [(0.0, 1, 2), (1e-12, 1, 2), (-0.1, 1, 2), (1e-6, 11, 4)]:
        cut = (np.array([[2.0, 0.0]]), np.array([2 * (0.5 + slack)]))  # x0 <= 0.5 + slack
        res = brute_force_lipschitz(weights, domain, None, "linf", constraints=cut)
        assert res.value == expected, slack
        assert res.n_regions == n_regions, slack  # x1 > 0 or < 0, times x0 >< 0.5 if thick
    # a wedge: x0 >= 0.5 and x0 + 1e-12 x1 <= 0.5 has no interior at all
    flat = (np.array([[-1.0, 0.0], [1.0, 1e-12]]), np.array([-0.5, 0.5]))
    with pytest.raises(ValueError, match="no interior"):
        brute_force_lipschitz(weights, domain, None, "linf", constraints=flat)


def test_set_without_interior_or_empty_is_an_error():
    weights = _two_neuron_net()
    for rows, rhs in [([[1.0, 1.0], [-1.0, -1.0]], [0.5, -0.5]), ([[0.0, 0.0]], [-1.0])]:
        with pytest.raises(ValueError):
            brute_force_lipschitz(
                weights, SQUARE, None, "linf", constraints=(np.array(rows), np.array(rhs))
            )
    # a zero row with b >= 0 holds everywhere
    zero = (np.zeros((1, 2)), np.array([0.0]))
    assert brute_force_lipschitz(weights, SQUARE, None, "linf", constraints=zero).value == 20.5


# --------------------------------------------------------------------------- shortcuts, sampling


@pytest.mark.parametrize("seed", fast_first(range(3)))
@pytest.mark.parametrize("kind", ["box", "l1"])
def test_engines_and_filters_agree_with_constraints(seed, kind):
    """Every bounding-box shortcut (and the linprog engine) keeps the same regions: the rows
    only shrink the set the boxes contain."""
    rng = np.random.default_rng(700 + seed)
    weights = random_network_weights(rng, [3, 8, 6, 6, 1])
    domain = {"box": ("box", -np.ones(3), np.ones(3)), "l1": ("l1", np.zeros(3), 1.5)}[kind]
    cons = _random_rows(domain, rng, 3)
    results = [
        brute_force_lipschitz(
            weights, domain, None, "linf", constraints=cons, lp_backend=backend, bbox_filter=bbox
        )
        for backend, bbox in [
            ("highspy", "fbbt"),
            ("highspy", "lp"),
            ("highspy", "auto"),
            ("highspy", "none"),
            ("linprog", "auto"),
        ]
    ]
    assert len({r.n_regions for r in results}) == 1
    assert max(r.value for r in results) - min(r.value for r in results) <= 1e-12


@pytest.mark.parametrize("kind", ["box", "l1", "l2"])
def test_sample_domain_with_constraints_is_inside_and_uniform(kind):
    rng = np.random.default_rng(800)
    domain = DOMAINS_2D[kind]
    cut = (np.array([[1.0, 0.0]]), np.array([0.0]))  # the left half: symmetric in x1
    pts = sample_domain(domain, 2, 50_000, rng, cut)
    assert pts.shape == (50_000, 2) and np.all(pts[:, 0] <= 0)
    assert np.mean(pts[:, 1] > 0) == pytest.approx(0.5, abs=0.01)
    ref = _uniform(domain, 200_000, rng)
    ref = ref[ref[:, 0] <= 0]
    for cut_at in (-0.3, -0.6, -0.9):
        assert np.mean(pts[:, 0] > cut_at) == pytest.approx(np.mean(ref[:, 0] > cut_at), abs=0.01)
    # no constraints: the same draws as before
    a = sample_domain(domain, 2, 100, np.random.default_rng(1))
    b = sample_domain(domain, 2, 100, np.random.default_rng(1), None)
    np.testing.assert_array_equal(a, b)


def test_sample_domain_rejects_a_tiny_set_clearly():
    tiny = (np.array([[1.0, 0.0]]), np.array([-1.0 + 1e-7]))
    with pytest.raises(ValueError, match="rejection sampling"):
        sample_domain(SQUARE, 2, 100, np.random.default_rng(0), tiny)


def test_sampled_gradient_norm_with_constraints_stays_in_the_flat_part():
    weights, cut = _two_neuron_net(), (np.array([[1.0, 1.0]]), np.array([0.5]))
    assert sampled_max_gradient_norm(weights, SQUARE, None, "linf", n=5000) == 20.5
    got = sampled_max_gradient_norm(weights, SQUARE, None, "linf", n=5000, constraints=cut)
    assert got == 0.5


# --------------------------------------------------------------------------- from_lipopt


def _lipopt_like_net(weights):
    layers = [SimpleNamespace(weight=w, bias=b) for w, b in weights]
    return SimpleNamespace(affine_layers=layers)


class Polytope(SimpleNamespace):
    pass


class Intersection(SimpleNamespace):
    pass


class L2Ball(SimpleNamespace):
    pass


class Box(SimpleNamespace):
    pass


def test_from_lipopt_reads_a_polytope():
    weights = _two_neuron_net()
    poly = Polytope(A=[[1.0, 1.0]], b=[0.5], lower=-np.ones(2), upper=np.ones(2))
    args = from_lipopt(_lipopt_like_net(weights), poly)
    got_w, got_d = args  # still two fields
    assert got_d[0] == "box" and len(got_d) == 3 and isinstance(got_d, ConstrainedDomain)
    np.testing.assert_array_equal(got_d[1], -np.ones(2))
    np.testing.assert_array_equal(args.constraints[0], [[1.0, 1.0]])
    np.testing.assert_array_equal(args.constraints[1], [0.5])
    explicit = brute_force_lipschitz(*args, None, "linf", constraints=args.constraints)
    carried = brute_force_lipschitz(*args, None, "linf")  # the spec carries the rows
    assert explicit.value == carried.value == 0.5
    assert sampled_max_gradient_norm(*args, None, "linf", n=2000) == 0.5
    with pytest.raises(ValueError, match="differs"):
        brute_force_lipschitz(*args, None, "linf", constraints=(np.eye(2), np.ones(2)))
    for copied in (copy.deepcopy(args.domain), pickle.loads(pickle.dumps(args.domain))):
        assert isinstance(copied, ConstrainedDomain) and copied[0] == "box"
        np.testing.assert_array_equal(copied.constraints[1], [0.5])
    plain = from_lipopt(_lipopt_like_net(weights), Box(lower=-np.ones(2), upper=np.ones(2)))
    assert plain.constraints is None and type(plain.domain) is tuple


def test_from_lipopt_reads_an_intersection():
    """l2 ball of radius 1.3 ∩ {x0 + x1 <= 1.2, box [-1, 0.8] x [-1, 1]} still meets the steep
    corner ``x0 + x1 > 1`` (around (0.6, 0.5)); with the box's upper corner at (0.4, 0.5) it
    cannot (x0 + x1 <= 0.9), and only the polytope's box, folded into the rows, cuts it off."""
    weights = _two_neuron_net()
    ball = L2Ball(center=np.zeros(2), radius=1.3)
    for upper, expected in [((0.8, 1.0), 20.5), ((0.4, 0.5), 0.5)]:
        poly = Polytope(A=[[1.0, 1.0]], b=[1.2], lower=-np.ones(2), upper=np.array(upper))
        args = from_lipopt(_lipopt_like_net(weights), Intersection(ball=ball, polytope=poly))
        assert args.domain[0] == "l2" and args.domain[2] == 1.3
        a, b = args.constraints
        assert a.shape == (5, 2) and b.shape == (5,)
        x = _uniform(("box", -np.ones(2), np.array(upper)), 2000, np.random.default_rng(0))
        x = x[(x.sum(axis=1) <= 1.2) & (np.linalg.norm(x, axis=1) <= 1.3)]
        assert np.all(x @ a.T <= b + 1e-12)  # the set's points satisfy the folded-in rows
        assert not np.all(np.array([0.9, -0.95]) @ a.T <= b)  # outside the polytope's box
        res = brute_force_lipschitz(*args, None, "linf", constraints=args.constraints)
        assert res.value == expected
        assert np.linalg.norm(res.argmax_point) < 1.3 and np.all(res.argmax_point < upper)
