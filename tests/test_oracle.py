"""Checks of the brute-force oracle (tests/oracle.py) against truth computed independently here.

Every reference value below is computed in this file without the oracle's region search: closed
forms, exact 1-D breakpoint propagation, dense grids, primal vertex enumeration, and the
H-description of the cross-norm's set (paper Prop. 6) solved as an LP.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from tests.oracle import (
    OracleResult,
    brute_force_lipschitz,
    cross_norm,
    from_lipopt,
    output_dual_vertices,
    random_network_weights,
    sample_domain,
    sampled_max_gradient_norm,
)

DUAL_ORD = {"linf": 1, "l1": np.inf}


# --------------------------------------------------------------------------- independent helpers


def _forward(weights, x):
    """f and the hidden pre-activations at a batch (n, d)."""
    h, pre = x, []
    for w, b in weights[:-1]:
        z = h @ w.T + b
        pre.append(z)
        h = np.maximum(z, 0.0)
    w, b = weights[-1]
    return h @ w.T + b, pre


def _pattern_keys(pre):
    """One hashable key per row: the concatenated sign pattern."""
    bits = np.concatenate([z > 0 for z in pre], axis=1)
    return [row.tobytes() for row in np.packbits(bits, axis=1)]


def _in_domain(x, domain):
    kind = domain[0]
    if kind == "box":
        return bool(np.all(x >= domain[1] - 1e-12) and np.all(x <= domain[2] + 1e-12))
    return bool(np.abs(x - domain[1]).sum() <= domain[2] + 1e-12)


def _fd_gradient(weights, x, c, h=1e-6):
    """Central differences of c^T f at one point (exact when x ± h e_i share x's region)."""
    d = x.shape[0]
    pts = np.vstack([x, x + h * np.eye(d), x - h * np.eye(d)])
    out, pre = _forward(weights, pts)
    keys = _pattern_keys(pre)
    assert all(k == keys[0] for k in keys), "finite-difference stencil crosses a kink"
    vals = out @ c
    return (vals[1 : d + 1] - vals[d + 1 :]) / (2 * h)


def _exact_1d_pieces(weights, lo, hi):
    """Exact breakpoints of a 1-D-input ReLU net on [lo, hi] by propagating knots layer by layer.

    Between consecutive knots every neuron of the layers seen so far has a constant sign, so the
    next layer's pre-activations are affine there and their zeros are found exactly.
    """
    knots = np.array([lo, hi], dtype=np.float64)
    for depth in range(len(weights) - 1):
        _, pre = _forward(weights, knots[:, None])
        z = pre[depth]
        za, zb = z[:-1], z[1:]
        cross = (za * zb) < 0
        seg, unit = np.nonzero(cross)
        t = za[seg, unit] / (za[seg, unit] - zb[seg, unit])
        new = knots[seg] + t * (knots[seg + 1] - knots[seg])
        knots = np.unique(np.concatenate([knots, new]))
    return knots


# --------------------------------------------------------------------------- no hidden layer


@pytest.mark.parametrize("input_norm", ["linf", "l1"])
@pytest.mark.parametrize(
    "domain", [("box", -np.ones(3), 2 * np.ones(3)), ("l1", np.array([0.5, -1.0, 2.0]), 0.3)]
)
def test_oracle_no_hidden_layer_is_dual_norm(input_norm, domain):
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(2, 3)), rng.normal(size=2)
    c = np.array([1.5, -0.5])
    res = brute_force_lipschitz([(w, b)], domain, c, input_norm)
    expected = np.linalg.norm(w.T @ c, ord=DUAL_ORD[input_norm])
    assert res.value == pytest.approx(expected, rel=1e-14)
    assert res.n_regions == 1
    assert _in_domain(res.argmax_point, domain)


# --------------------------------------------------------------------------- 1-D input


@pytest.mark.parametrize(
    ("seed", "widths", "domain"),
    [
        (1, [1, 8, 1], ("box", [-2.0], [2.0])),
        (2, [1, 8, 8, 1], ("box", [-2.0], [2.0])),
        (3, [1, 12, 12, 12, 1], ("box", [-1.5], [1.0])),
        (4, [1, 16, 16, 16, 16, 2], ("l1", [0.3], 1.2)),
        (5, [1, 10, 10, 1], ("l1", [-0.5], 0.7)),
    ],
)
def test_oracle_1d_matches_exact_breakpoints_and_grid(seed, widths, domain):
    rng = np.random.default_rng(seed)
    weights = random_network_weights(rng, widths)
    c = np.ones(widths[-1]) if widths[-1] == 1 else np.array([1.0, -2.0])
    if domain[0] == "box":
        lo, hi = domain[1][0], domain[2][0]
    else:
        lo, hi = domain[1][0] - domain[2], domain[1][0] + domain[2]

    # exact: breakpoints propagated layer by layer, slope of c^T f on each piece
    knots = _exact_1d_pieces(weights, lo, hi)
    out, _ = _forward(weights, knots[:, None])
    widths_ = np.diff(knots)
    slopes = np.abs(np.diff(out @ c)) / widths_
    kept = widths_ > 2e-9  # the oracle keeps a region iff its inradius (half-width) > 1e-9
    exact = slopes[kept].max()

    # dense grid: finite differences between consecutive grid points in the same linear piece
    grid = np.linspace(lo, hi, 400_001)
    gout, gpre = _forward(weights, grid[:, None])
    keys = _pattern_keys(gpre)
    same = np.array([keys[i] == keys[i + 1] for i in range(len(keys) - 1)])
    fd = np.abs(np.diff(gout @ c)) / np.diff(grid)
    grid_max = fd[same].max()

    for input_norm in ("linf", "l1"):
        res = brute_force_lipschitz(weights, domain, c, input_norm)
        assert res.value == pytest.approx(exact, rel=1e-9)
        assert res.n_regions == int(kept.sum())
        assert grid_max <= res.value * (1 + 1e-9)
        assert grid_max == pytest.approx(res.value, rel=1e-7)
        assert lo <= res.argmax_point[0] <= hi


# --------------------------------------------------------------------------- 2-D grid


@pytest.mark.parametrize(
    ("seed", "widths", "domain", "input_norm"),
    [
        (10, [2, 8, 8, 1], ("box", np.array([-1.0, -1.0]), np.array([1.0, 1.0])), "linf"),
        (11, [2, 6, 6, 6, 1], ("box", np.array([-1.0, 0.0]), np.array([1.0, 1.5])), "l1"),
        (12, [2, 10, 8, 1], ("l1", np.array([0.2, -0.1]), 1.0), "linf"),
    ],
)
def test_oracle_2d_matches_dense_grid(seed, widths, domain, input_norm):
    rng = np.random.default_rng(seed)
    weights = random_network_weights(rng, widths)
    _check_against_grid(weights, domain, np.ones(1), input_norm, n=801)


@pytest.mark.parametrize("input_norm", ["linf", "l1"])
def test_oracle_degenerate_integer_network_matches_grid(input_norm):
    """Hyperplanes through one point, duplicated and parallel neurons, a layer-2 neuron equal to
    a layer-1 neuron, neurons constant on regions: a non-general-position network."""
    w1 = np.array([[1, 0], [0, 1], [1, 1], [1, -1], [1, 0], [2, 0], [0, -1]], dtype=float)
    b1 = np.array([0, 0, 0, 0, 0, 0, 0.5])
    w2 = np.array(
        [
            [1, 0, 0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0, 0, 0],
            [1, -1, 0, 1, 0, 0, 0],
            [0, 0, 0, 0, 1, -1, 0],
            [1, 1, 1, 1, 1, 1, 1],
        ],
        dtype=float,
    )
    b2 = np.array([0, 0, 0, 0, -1.0])
    w3, b3 = np.array([[1.0, -2.0, 1.0, 3.0, 0.5]]), np.zeros(1)
    weights = [(w1, b1), (w2, b2), (w3, b3)]
    domain = ("box", -np.ones(2), np.ones(2))
    # the grid is shifted off the lattice that the integer hyperplanes pass through
    res = _check_against_grid(weights, domain, np.ones(1), input_norm, n=801, shift=np.pi * 1e-5)
    assert res.n_regions == 19  # counted by hand: every region is wide, the grid sees them all


def _check_against_grid(weights, domain, c, input_norm, n, shift=0.0):
    res = brute_force_lipschitz(weights, domain, c, input_norm, collect_regions=True)
    assert res.regions is not None and len(res.regions) == res.n_regions

    # grid over the domain's bounding box, restricted to the domain
    if domain[0] == "box":
        lo, hi = domain[1], domain[2]
    else:
        lo, hi = domain[1] - domain[2], domain[1] + domain[2]
    step = float(np.max((hi - lo) / (n - 1)))
    xs = np.stack(
        np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n)), axis=-1
    ).reshape(-1, 2)
    xs = xs + shift
    if domain[0] == "box":
        xs = xs[np.all((xs >= lo) & (xs <= hi), axis=1)]
    else:
        xs = xs[np.abs(xs - domain[1]).sum(axis=1) <= domain[2]]
    _, pre = _forward(weights, xs)
    keys = _pattern_keys(pre)
    grid_patterns = set(keys)

    oracle_patterns = {np.packbits(np.concatenate(r.pattern) > 0).tobytes() for r in res.regions}
    assert len(oracle_patterns) == res.n_regions  # distinct
    # every pattern seen on the grid is a region the oracle found (no region missed)
    assert len(grid_patterns) <= res.n_regions
    assert grid_patterns <= oracle_patterns
    # every oracle region with a ball of radius > step inside it must show up on the grid
    for region in res.regions:
        if region.margin > step:
            assert np.packbits(np.concatenate(region.pattern) > 0).tobytes() in grid_patterns

    # each region's point really has its pattern (recomputed here)
    for region in res.regions:
        assert _in_domain(region.point, domain)
        _, p = _forward(weights, region.point[None, :])
        assert np.array_equal(
            np.concatenate([z[0] > 0 for z in p]), np.concatenate(region.pattern) > 0
        )

    # gradient norm on the grid: per distinct pattern, by finite differences at a grid point
    # whose stencil stays in the region
    by_pattern = {}
    for i, k in enumerate(keys):
        by_pattern.setdefault(k, []).append(i)
    grid_max = 0.0
    for idx in by_pattern.values():
        for i in idx[:: max(1, len(idx) // 5)]:
            try:
                g = _fd_gradient(weights, xs[i], c, h=1e-7)
            except AssertionError:
                continue
            grid_max = max(grid_max, np.linalg.norm(g, ord=DUAL_ORD[input_norm]))
            break
    assert grid_max <= res.value * (1 + 1e-6)
    assert res.argmax_margin > step  # the argmax region is wide enough to be on the grid
    assert grid_max == pytest.approx(res.value, rel=1e-6)
    g = _fd_gradient(weights, res.argmax_point, c, h=min(1e-7, res.argmax_margin / 10))
    assert np.linalg.norm(g, ord=DUAL_ORD[input_norm]) == pytest.approx(res.value, rel=1e-6)
    return res


# --------------------------------------------------------------------------- soundness vs sampling


@pytest.mark.parametrize("input_norm", ["linf", "l1"])
@pytest.mark.parametrize("kind", ["box", "l1"])
@pytest.mark.parametrize(
    ("seed", "widths"), [(20, [2, 10, 10, 1]), (21, [3, 8, 8, 8, 1]), (22, [4, 12, 12, 2])]
)
def test_oracle_sampled_gradient_norm_is_below(seed, widths, kind, input_norm):
    rng = np.random.default_rng(seed)
    weights = random_network_weights(rng, widths)
    d = widths[0]
    center = rng.normal(size=d) * 0.3
    domain = ("box", center - 0.5, center + 0.5) if kind == "box" else ("l1", center, 0.8)
    c = np.ones(1) if widths[-1] == 1 else np.array([1.0, -1.0])
    res = brute_force_lipschitz(weights, domain, c, input_norm)
    sampled = sampled_max_gradient_norm(weights, domain, c, input_norm, n=10_000, rng=rng)
    assert 0 < sampled <= res.value * (1 + 1e-12)
    assert _in_domain(res.argmax_point, domain)
    g = _fd_gradient(weights, res.argmax_point, c, h=min(1e-7, res.argmax_margin / 10))
    assert np.linalg.norm(g, ord=DUAL_ORD[input_norm]) == pytest.approx(res.value, rel=1e-6)


@pytest.mark.parametrize("output_norm", ["l1", "linf", "cross"])
@pytest.mark.parametrize("input_norm", ["linf", "l1"])
def test_oracle_vector_sampled_gradient_norm_is_below(input_norm, output_norm):
    rng = np.random.default_rng(30)
    weights = random_network_weights(rng, [3, 10, 10, 3])
    domain = ("l1", np.zeros(3), 1.0)
    res = brute_force_lipschitz(weights, domain, None, input_norm, output_norm)
    sampled = sampled_max_gradient_norm(
        weights, domain, None, input_norm, n=10_000, rng=rng, output_norm=output_norm
    )
    assert 0 < sampled <= res.value * (1 + 1e-12)


# --------------------------------------------------------------------------- vector output norms


def _cross_norm_by_prop6_lp(y):
    """sup_{x in P} |y^T x| with P the H-description of paper Prop. 6 (eq. 111).

    Variables x+ (m), x- (m): x+, x- >= 0, sum x+ <= 1, sum x- <= 1, sum x- - sum x+ <= 0.
    """
    m = len(y)
    a_ub = np.array(
        [
            np.concatenate([np.ones(m), np.zeros(m)]),
            np.concatenate([np.zeros(m), np.ones(m)]),
            np.concatenate([-np.ones(m), np.ones(m)]),
        ]
    )
    b_ub = np.array([1.0, 1.0, 0.0])
    obj = np.concatenate([y, -y])
    best = 0.0
    for sign in (1.0, -1.0):
        res = linprog(-sign * obj, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
        best = max(best, -res.fun)
    return best


def _input_ball_vertices(d, input_norm):
    if input_norm == "linf":
        return np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    return np.vstack([np.eye(d), -np.eye(d)])


@pytest.mark.parametrize("seed", [40, 41, 42])
@pytest.mark.parametrize("input_norm", ["linf", "l1"])
@pytest.mark.parametrize("output_norm", ["l1", "linf", "cross"])
def test_oracle_linear_vector_norm_is_operator_norm(seed, input_norm, output_norm):
    rng = np.random.default_rng(seed)
    m, d = 4, 3
    w, b = rng.normal(size=(m, d)), rng.normal(size=m)
    res = brute_force_lipschitz(
        [(w, b)], ("box", -np.ones(d), np.ones(d)), None, input_norm, output_norm
    )
    # closed forms where they exist
    if (input_norm, output_norm) == ("linf", "linf"):
        assert res.value == pytest.approx(np.abs(w).sum(axis=1).max(), rel=1e-12)  # max row l1
    if (input_norm, output_norm) == ("l1", "l1"):
        assert res.value == pytest.approx(np.abs(w).sum(axis=0).max(), rel=1e-12)  # max col l1
    if (input_norm, output_norm) == ("l1", "linf"):
        assert res.value == pytest.approx(np.abs(w).max(), rel=1e-12)
    # always: the PRIMAL sup_{||v||_alpha <= 1} ||W v||_beta, attained at an input-ball vertex,
    # with ||.||_beta computed independently (cross-norm: Prop. 6's LP)
    beta = {
        "l1": lambda y: np.abs(y).sum(),
        "linf": lambda y: np.abs(y).max(),
        "cross": _cross_norm_by_prop6_lp,
    }[output_norm]
    primal = max(beta(w @ v) for v in _input_ball_vertices(d, input_norm))
    assert res.value == pytest.approx(primal, rel=1e-9)


def test_cross_norm_dual_vertices_match_prop6():
    rng = np.random.default_rng(50)
    for m in (1, 2, 3, 5):
        verts = output_dual_vertices("cross", m)
        # each vertex of conv(E ∪ -E) (up to sign) lies in P of Prop. 6 (E ⊆ P)
        for v in verts:
            xp, xm = np.maximum(v, 0), np.maximum(-v, 0)
            assert xp.sum() <= 1 + 1e-15 and xm.sum() <= 1 + 1e-15 and xp.sum() >= xm.sum()
        for _ in range(20):
            y = rng.normal(size=m)
            ours = np.abs(verts @ y).max()
            assert ours == pytest.approx(_cross_norm_by_prop6_lp(y), rel=1e-9, abs=1e-12)
            assert cross_norm(y) == pytest.approx(ours, rel=1e-12)
    # E is not symmetric: -e_1 is outside P (sum x+ = 0 < sum x- = 1); the dual ball is
    # conv(E ∪ -E), whose support function is the |.| in Definition 22
    minus_e1 = -np.eye(3)[0]
    assert np.maximum(minus_e1, 0).sum() < np.maximum(-minus_e1, 0).sum()


@pytest.mark.parametrize("input_norm", ["linf", "l1"])
def test_oracle_vector_norms_agree_with_scalar_oracle(input_norm):
    """max over regions and over dual vertices commute: vector value = max of scalar values."""
    rng = np.random.default_rng(60)
    m = 3
    weights = random_network_weights(rng, [2, 8, 8, m])
    domain = ("box", -np.ones(2), np.ones(2))
    scalar = {}
    for w in output_dual_vertices("l1", m):
        scalar[tuple(w)] = brute_force_lipschitz(weights, domain, w, input_norm).value
    l1 = brute_force_lipschitz(weights, domain, None, input_norm, "l1").value
    assert l1 == pytest.approx(max(scalar.values()), rel=1e-12)
    e = np.eye(m)
    linf = brute_force_lipschitz(weights, domain, None, input_norm, "linf").value
    per_unit = [brute_force_lipschitz(weights, domain, e[i], input_norm).value for i in range(m)]
    assert linf == pytest.approx(max(per_unit), rel=1e-12)
    cross = brute_force_lipschitz(weights, domain, None, input_norm, "cross").value
    pairs = [
        brute_force_lipschitz(weights, domain, e[i] - e[j], input_norm).value
        for i, j in itertools.combinations(range(m), 2)
    ]
    assert cross == pytest.approx(max(per_unit + pairs), rel=1e-12)
    # the cross-norm constant bounds every margin function's constant (paper eq. 115-116)
    assert cross >= max(pairs) - 1e-12


def test_oracle_scalar_output_norms_coincide():
    rng = np.random.default_rng(61)
    weights = random_network_weights(rng, [3, 8, 8, 1])
    domain = ("l1", np.zeros(3), 1.0)
    values = {
        brute_force_lipschitz(weights, domain, None, "linf", norm).value
        for norm in ("abs", "l1", "linf", "cross")
    }
    values.add(brute_force_lipschitz(weights, domain, np.ones(1), "linf").value)
    values.add(brute_force_lipschitz(weights, domain, -np.ones(1), "linf").value)
    assert max(values) - min(values) <= 1e-12 * max(values)


# --------------------------------------------------------------------------- internal consistency


@pytest.mark.parametrize(
    ("seed", "widths", "radius", "kind", "with_linprog"),
    [
        (70, [2, 10, 10, 10, 1], 1.0, "box", True),
        (71, [3, 10, 10, 1], 1.0, "l1", False),
        (72, [4, 8, 8, 8, 1], 0.4, "box", False),
    ],
)
def test_oracle_engines_and_filters_agree(seed, widths, radius, kind, with_linprog):
    """The LP engine and the box filters are speed-ups only: same regions, same value."""
    rng = np.random.default_rng(seed)
    weights = random_network_weights(rng, widths)
    d = widths[0]
    domain = ("linf", np.zeros(d), radius) if kind == "box" else ("l1", np.zeros(d), radius)
    configs = [("highspy", "auto"), ("highspy", "none"), ("highspy", "lp"), ("highspy", "fbbt")]
    if with_linprog:  # scipy's linprog is ~10x slower per LP: one network is enough
        configs.append(("linprog", "auto"))
    results = [
        brute_force_lipschitz(
            weights, domain, np.ones(1), "linf", lp_backend=backend, bbox_filter=bbox
        )
        for backend, bbox in configs
    ]
    assert len({r.n_regions for r in results}) == 1
    assert max(r.value for r in results) - min(r.value for r in results) <= 1e-12


def test_oracle_duplicate_and_dead_neurons():
    """Degenerate nets: a duplicated neuron adds no region; a neuron fed only by a neuron that is
    dead on part of the domain is constant there."""
    rng = np.random.default_rng(80)
    w1, b1 = rng.normal(size=(5, 2)), rng.normal(size=5) * 0.5
    w2, b2 = rng.normal(size=(4, 5)), rng.normal(size=4) * 0.5
    w3, b3 = rng.normal(size=(1, 4)), rng.normal(size=1)
    base = [(w1, b1), (w2, b2), (w3, b3)]
    domain = ("box", -np.ones(2), np.ones(2))
    ref = brute_force_lipschitz(base, domain, np.ones(1), "linf")
    # duplicate neuron 0 of layer 1, splitting its outgoing weights in two halves
    w1d, b1d = np.vstack([w1, w1[:1]]), np.append(b1, b1[0])
    w2d = np.hstack([w2, w2[:, :1] * 0.5])
    w2d[:, 0] *= 0.5
    dup = brute_force_lipschitz([(w1d, b1d), (w2d, b2), (w3, b3)], domain, np.ones(1), "linf")
    assert dup.n_regions == ref.n_regions
    assert dup.value == pytest.approx(ref.value, rel=1e-12)
    # extra layer-2 neuron fed only by layer-1 neuron 0, with a positive bias: on the half-plane
    # where neuron 0 is off it is the constant 0.7 (active, zero gradient), elsewhere it varies
    w2e = np.vstack([w2, np.eye(5)[:1] * 2.0])
    b2e = np.append(b2, 0.7)
    w3e = np.hstack([w3, [[1.3]]])
    ext = brute_force_lipschitz([(w1, b1), (w2e, b2e), (w3e, b3)], domain, np.ones(1), "linf")
    sampled = sampled_max_gradient_norm(
        [(w1, b1), (w2e, b2e), (w3e, b3)], domain, np.ones(1), "linf", n=50_000, rng=rng
    )
    assert sampled <= ext.value * (1 + 1e-12)
    assert ext.value == pytest.approx(sampled, rel=1e-3)


def test_oracle_largest_architecture_small_domain():
    rng = np.random.default_rng(90)
    weights = random_network_weights(rng, [4, 16, 16, 16, 16, 1])
    domain = ("linf", rng.normal(size=4) * 0.2, 0.05)
    res = brute_force_lipschitz(weights, domain, np.ones(1), "linf")
    assert isinstance(res, OracleResult)
    assert res.n_regions >= 1
    sampled = sampled_max_gradient_norm(weights, domain, np.ones(1), "linf", n=20_000, rng=rng)
    assert sampled <= res.value * (1 + 1e-12)


# --------------------------------------------------------------------------- helpers of oracle.py


def test_sample_domain_is_inside_and_uniform():
    rng = np.random.default_rng(100)
    pts = sample_domain(("l1", np.array([1.0, -1.0]), 2.0), 2, 200_000, rng)
    r = np.abs(pts - np.array([1.0, -1.0])).sum(axis=1)
    assert np.all(r <= 2.0)
    # uniform in a 2-D ball: P(||x - c|| <= r/2) = 1/4; each quadrant 1/4
    assert np.mean(r <= 1.0) == pytest.approx(0.25, abs=0.005)
    assert np.mean(pts[:, 0] > 1.0) == pytest.approx(0.5, abs=0.005)
    box = sample_domain(("box", [0.0, 2.0], [1.0, 3.0]), 2, 1000, rng)
    assert np.all((box >= [0, 2]) & (box <= [1, 3]))


def test_random_network_weights_shapes_and_scales():
    rng = np.random.default_rng(110)
    weights = random_network_weights(rng, [4, 300, 200, 3])
    assert [w.shape for w, _ in weights] == [(300, 4), (200, 300), (3, 200)]
    assert [b.shape for _, b in weights] == [(300,), (200,), (3,)]
    assert np.std(weights[1][0]) == pytest.approx(np.sqrt(2 / 300), rel=0.02)
    assert np.std(np.concatenate([weights[0][1], weights[1][1]])) == pytest.approx(0.5, rel=0.1)


def test_from_lipopt_reads_plain_data():
    network_mod = pytest.importorskip("lipopt.network")
    rng = np.random.default_rng(120)
    weights = random_network_weights(rng, [3, 5, 2])
    net = network_mod.Network.from_layers(
        [
            network_mod.Affine(weights[0][0], weights[0][1]),
            network_mod.ReLU(),
            network_mod.Affine(weights[1][0], weights[1][1]),
        ]
    )

    class Box:
        lower = np.zeros(3)
        upper = np.ones(3)

    class LinfBall:
        center = np.full(3, 0.5)
        radius = 0.5

    class L1Ball:
        center = np.zeros(3)
        radius = 0.7

    for dom in (Box(), LinfBall()):
        got_w, got_d = from_lipopt(net, dom)
        assert got_d[0] == "box"
        np.testing.assert_array_equal(got_d[1], np.zeros(3))
        np.testing.assert_array_equal(got_d[2], np.ones(3))
        for (gw, gb), (w, b) in zip(got_w, weights, strict=True):
            np.testing.assert_array_equal(gw, w)
            np.testing.assert_array_equal(gb, b)
    got_w, got_d = from_lipopt(net, L1Ball())
    assert got_d[0] == "l1" and got_d[2] == 0.7
    res = brute_force_lipschitz(*from_lipopt(net, Box()), np.array([1.0, -1.0]), "linf")
    ref = brute_force_lipschitz(
        weights, ("box", np.zeros(3), np.ones(3)), np.array([1.0, -1.0]), "linf"
    )
    assert res.value == ref.value and res.n_regions == ref.n_regions


def test_certified_exact_rejects_a_value_below_the_truth_or_beyond_the_promise():
    from tests.oracle import assert_certified_exact

    assert_certified_exact(0.9059806423, 0.9059797089)  # 9.3e-7 above: within 1e-6
    assert_certified_exact(12.0 + 1.1e-5, 12.0)  # 1e-6 relative above 1
    for value, truth in [
        (0.9059797089 - 1e-8, 0.9059797089),
        (0.5 + 1.1e-6, 0.5),
        (12.0 + 1.3e-5, 12.0),
    ]:
        with pytest.raises(AssertionError):
            assert_certified_exact(value, truth)
