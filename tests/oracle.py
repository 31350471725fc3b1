"""Independent ground truth for local Lipschitz constants of small ReLU networks, and of networks
whose hidden neurons are two-piece linear, ``h = alpha z + (1 - alpha) relu(z)`` (issue 46).

This module is the yardstick the MIP is tested against, so it deliberately shares no code with
``lipopt``: it takes plain numpy weights and a plain domain description, and has its own forward
pass, Jacobians, dual norms and LPs (HiGHS, through ``highspy`` or ``scipy.optimize.linprog``;
for the l2 ball, small conic programs through ``cvxpy`` and Clarabel, imported only there).
Only :func:`from_lipopt` touches lipopt objects, and it only *reads* their weights, biases, slopes
and domain parameters (duck-typed; nothing from lipopt is imported).

Entry points: :func:`brute_force_lipschitz` (the exact constant; ``constraints=(A, b)`` cuts
the domain by ``A x <= b``), :func:`from_lipopt` (a :class:`LipoptArgs`),
:func:`random_network_weights`, :func:`sampled_max_gradient_norm` (a lower bound),
:func:`sample_domain`, :func:`gradient_norms`, :func:`output_dual_vertices`, :func:`cross_norm`.

The math (Jordan & Dimakis 2020, Thm. 1/2 and App. E). The network is

    z_1 = W_1 x + b_1,  h_i = relu(z_i),  z_{i+1} = W_{i+1} h_i + b_{i+1},  f(x) = z_L.

Slopes (issue 46). Every function taking weights also takes ``slopes``: per hidden layer, one
real ``alpha`` per neuron, and then ``h_i = alpha z_i + (1 - alpha) relu(z_i)`` (``alpha = 0``
ReLU, ``1`` identity, ``0 < alpha < 1`` leaky, ``-1`` ``|z|``); ``None`` means ReLU everywhere,
or the slopes a :class:`SlopedWeights` carries (as :func:`from_lipopt` returns for a network with
non-ReLU slopes, so they cannot be dropped on the way). Each neuron keeps one kink, at ``z = 0``;
with the pattern ``sigma = [z > 0]`` its slope is ``D = alpha + (1 - alpha) sigma``, so an
inactive neuron passes ``alpha z`` on, not 0. An identity neuron (``alpha = 1``) has no kink: the
search never branches on it and its hyperplane bounds no region (its ``z`` takes either sign in
one region; patterns report it as 1). Everything below holds with these ``D``: the function is
still continuous and affine on each region.

On every *activation pattern region* (fixed sign of every hidden pre-activation with a kink)
``f`` is affine with Jacobian ``J = W_L D_{L-1} W_{L-1} ... D_1 W_1``. The local
(alpha, beta)-Lipschitz constant over the open domain ``X`` (the interior of the box / l1 ball /
l2 ball given here, cut by the linear constraints if any: see below) is

    L = max over regions R with R ∩ X full-dimensional of  max_{w in B*_beta} ||J_R^T w||_{alpha*},

where ``B*_beta`` is the dual unit ball of the output norm (or the single vector ``c`` for the
scalar function ``c^T f``), ``||.||_{alpha*}`` is the dual of the input norm (linf -> l1,
l1 -> linf, l2 -> l2). A convex function of ``w`` is maximised at a vertex of the polytope
``B*_beta``, so only its vertices are needed (and only one of ``w, -w``).

Output norms and the vertices of their dual balls (one of each ± pair):

* ``"abs"`` (m == 1): ``w = 1``.
* ``"l1"``: dual ball = linf unit ball, vertices ``{-1, +1}^m``.
* ``"linf"``: dual ball = l1 unit ball, vertices ``±e_i``.
* ``"cross"`` (paper Definition 22, Proposition 6). The paper *defines* the cross-norm through a
  set, ``||y||_x := sup_{v in E} |v^T y|`` with
  ``E = conv({e_i} ∪ {e_i - e_j : i != j})``. So ``E`` is **not** the cross-norm's unit ball; it
  generates the **dual** ball: ``||y||_x`` is the support function of ``E ∪ -E``, hence the dual
  unit ball is ``conv(E ∪ -E)`` (``E`` itself is not symmetric: it contains ``e_1`` but not
  ``-e_1``, see the H-description ``P`` of Prop. 6 where ``sum x^+ >= sum x^-``). Its vertices are
  ``±e_i`` and ``e_i - e_j`` (``i != j``; ``-(e_i - e_j) = e_j - e_i``). Therefore
  ``||y||_x = max(max_i |y_i|, max_{i,j} (y_i - y_j))`` and the cross-norm Lipschitz constant is
  the max over regions of
  ``max(max_i ||J^T e_i||_{alpha*}, max_{i<j} ||J^T (e_i - e_j)||_{alpha*})``.
  For m == 1 it reduces to ``"abs"``.

Region enumeration is a depth-first search over the hidden neurons, layer by layer. Once all signs
of layers ``< k`` are fixed, every pre-activation of layer ``k`` is affine in ``x``, ``a^T x + b``
(``h = D z`` on the region; rows normalised to ``||a||_2 = 1`` so margins are Euclidean
distances). A sign ``s`` of the next neuron is kept iff

    max t  s.t.  s_i (a_i^T x + b_i) >= t  (all fixed, non-stable neurons),  x in X shrunk by t

has an optimum ``t > tol`` (``tol = 1e-9``): ``t`` is the radius of the largest Euclidean ball
inside (region ∩ X) -- the Chebyshev centre LP -- and it is positive iff the open region meets the
domain's interior, i.e. iff region ∩ X is full-dimensional. (Requiring ``x`` in the domain shrunk
by ``t``, rather than merely in the domain, gives the same yes/no answer for a convex
full-dimensional domain and makes the returned point strictly interior.) The LP's answer is never
trusted alone: the margin is recomputed in numpy at the LP's ``x`` and that recomputed value
decides, so every kept region has a certificate point. Shortcuts that do not change the result:

* the point certifying the parent region already proves one sign feasible when ``|z| > tol``
  there, so only the other sign needs an LP;
* a neuron whose pre-activation has one sign over a box containing the current region gets one
  branch and no constraint (its hyperplane cannot cut the region). The box is the domain's,
  tightened by interval bound propagation after every branch and, where it pays, replaced by the
  exact bounding box (2d LPs) on entering a layer;
* a neuron whose pre-activation is constant on the region (``a == 0``, e.g. all its inputs dead)
  takes the sign of its constant and adds no constraint.

At each leaf the certificate point is pushed through an independent forward pass and must show
exactly the enumerated pattern (else ``RuntimeError``).

Linear constraints (``constraints=(A, b)``; issue 47, lipopt's Polytope and Intersection domains).
The set becomes ``{x in domain : A x <= b}``. The rows are normalised (``||a_k||_2 = 1``, so
``b_k - a_k^T x`` is the Euclidean distance to the k-th hyperplane; a zero row is dropped when
``b_k >= 0`` and makes the set empty otherwise) and belong to the domain everywhere above: the
Chebyshev LP gets ``a_k^T x + t <= b_k``, so its optimum is still the inradius of region ∩ X,
and the recomputed margin includes ``min_k (b_k - a_k^T x)``. A region meeting the set only in a
lower-dimensional face (on a constraint's hyperplane, say) has inradius 0 and is not counted; a
set without interior raises ``ValueError``. The shortcuts stay sound: the domain's box still
contains the (smaller) set, so interval bounds over it and the branches they discard stay valid;
the bound tightening also reads the rows (valid inequalities of the set); the exact bounding box
LPs carry them (``t >= 0``); a parent's certificate point and margin already account for them.

The Euclidean ball ``("l2", center, radius)`` is not a polyhedron, so it does not enter the search
above. Every region meeting the ball full-dimensionally also meets its bounding box
``center ± radius`` full-dimensionally, so the box's regions are enumerated as above, and each one
is then kept iff the conic program (``rows x + rhs >= 0``: the region's normalised half-spaces)

    max t  s.t.  rows x + rhs >= t,  ||x - center||_2 + t <= radius

(the Chebyshev centre of region ∩ ball, solved with Clarabel) has ``t > tol``; again the margin is
recomputed in numpy at the solver's ``x`` and that value decides (a solver ``t`` clearly above
``tol`` that the recomputation does not confirm raises ``RuntimeError``). With constraints, the
box's enumeration carries them (a region meeting ball ∩ constraints full-dimensionally meets
box ∩ constraints so) and the conic program gets their rows ``b_k - a_k^T x >= t`` beside the
region's.
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

import numpy as np
from scipy.optimize import linprog

Weights = list[tuple[np.ndarray, np.ndarray]]
Slopes = list[np.ndarray]  # alpha per hidden layer, one per neuron
DomainSpec = tuple  # ("box", lo, hi) | ("l1" | "l2" | "linf", center, radius)
Constraints = tuple  # (A, b): the rows A x <= b, A of shape (k, d)

INPUT_DUAL = {"linf": 1.0, "l1": np.inf, "l2": 2.0}  # input norm -> order of its dual norm
OUTPUT_NORMS = ("abs", "l1", "linf", "cross")
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
#: how far above the truth an exact answer's certified upper bound may sit: the promise of
#: docs/encoding.md §11, 1e-6 · max(1, |truth|). MIP solvers hold each row to 1e-6 (absolute),
#: so their optimum can exceed the true one by about that much; below 1 that is more than 1e-6
#: relative (0.906 came back 0.9059806, 9.3e-7 above)
EXACT_PROMISE = 1e-6


def assert_certified_exact(value: float, truth: float) -> None:
    """``value``, an exact answer's certified upper bound, is never below ``truth`` (beyond
    float rounding, 1e-9 relative) and at most :data:`EXACT_PROMISE` · max(1, |truth|) above."""
    scale = max(1.0, abs(truth))
    assert truth - 1e-9 * scale <= value <= truth + EXACT_PROMISE * scale, (value, truth)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Region:
    """One full-dimensional activation region met by the domain."""

    pattern: tuple[np.ndarray, ...]  # 0/1 masks per hidden layer
    point: np.ndarray  # a point strictly inside region ∩ domain
    margin: float  # Euclidean radius of a ball around `point` inside region ∩ domain
    value: float  # max_w ||J^T w||_{alpha*} on this region


@dataclass(frozen=True)
class OracleResult:
    """Brute-force answer.

    Attributes:
        value: the local Lipschitz constant (max over full-dimensional regions).
        argmax_point: Chebyshev centre of (a region attaining ``value``) ∩ domain.
        n_regions: number of distinct full-dimensional activation patterns meeting the domain.
        argmax_pattern: the 0/1 masks of that region.
        argmax_dual: the dual vector ``w`` (``c`` in the scalar case) attaining ``value``.
        argmax_margin: Euclidean inradius of that region ∩ domain around ``argmax_point``.
        n_lps: number of LPs solved (l2 ball: plus the conic programs).
        seconds: wall-clock time.
        regions: every region (only when ``collect_regions=True``).
    """

    value: float
    argmax_point: np.ndarray
    n_regions: int
    argmax_pattern: tuple[np.ndarray, ...] = ()
    argmax_dual: np.ndarray = field(default_factory=lambda: np.zeros(0))
    argmax_margin: float = 0.0
    n_lps: int = 0
    seconds: float = 0.0
    regions: list[Region] | None = None


class _LayerForms(NamedTuple):
    """Pre-activations of one hidden layer on the current region: ``z_a x + z_b``, the same rows
    normalised (``a_n x + b_n``, ``||a_n||_2 = 1``) and which rows branch on nothing (``fixed``:
    constant on the region, ``a == 0``, or an identity neuron, ``alpha = 1``, with no kink)."""

    z_a: np.ndarray
    z_b: np.ndarray
    a_n: np.ndarray
    b_n: np.ndarray
    fixed: np.ndarray


class ConstrainedDomain(tuple):
    """A domain spec (the plain 3-tuple, e.g. ``("box", lo, hi)``) that also carries linear
    constraints ``(A, b)``, as :func:`from_lipopt` returns for a Polytope or an Intersection.
    The oracle's functions apply them when called without ``constraints=``, so
    ``brute_force_lipschitz(*from_lipopt(net, polytope), c, norm)`` cannot drop them."""

    constraints: Constraints

    def __new__(cls, spec: DomainSpec, constraints: Constraints | None = None) -> ConstrainedDomain:
        obj = super().__new__(cls, spec)
        obj.constraints = constraints  # (None only while copy/pickle restores its __dict__)
        return obj


class SlopedWeights(list):
    """Plain weights ``[(W, b), ...]`` that also carry the per-neuron slopes ``alpha`` of the
    hidden layers (``h = alpha z + (1 - alpha) relu(z)``), as :func:`from_lipopt` returns for a
    network with non-ReLU activations and :func:`random_network_weights` when it draws slopes.
    The oracle's functions use them when called without ``slopes=``, so
    ``brute_force_lipschitz(*from_lipopt(net, dom), c, norm)`` cannot drop them."""

    slopes: Slopes

    def __init__(self, weights: Sequence[tuple[Any, Any]], slopes: Sequence[Any]) -> None:
        super().__init__(weights)
        self.slopes = [np.array(a, dtype=np.float64).reshape(-1) for a in slopes]


class LipoptArgs(NamedTuple):
    """``(weights, domain)``; ``weights`` is a :class:`SlopedWeights` for a network with
    non-ReLU activations (``slopes`` reads them back, ``None`` for a ReLU network);
    ``constraints`` is ``(A, b)`` for a Polytope or Intersection domain
    (also carried by ``domain``, a :class:`ConstrainedDomain`), else ``None``."""

    weights: Weights
    domain: DomainSpec

    @property
    def constraints(self) -> Constraints | None:
        return getattr(self.domain, "constraints", None)

    @property
    def slopes(self) -> Slopes | None:
        return getattr(self.weights, "slopes", None)


# --------------------------------------------------------------------------- plain helpers


def _as_weights(weights: Sequence[tuple[Any, Any]]) -> Weights:
    out: Weights = []
    for w, b in weights:
        w = np.array(w, dtype=np.float64)
        b = np.array(b, dtype=np.float64).reshape(-1)
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise ValueError(f"bad layer shapes {w.shape}, {b.shape}")
        out.append((w, b))
    for (w1, _), (w2, _) in zip(out, out[1:], strict=False):
        if w1.shape[0] != w2.shape[1]:
            raise ValueError(f"shapes do not chain: {w1.shape} then {w2.shape}")
    return out


def _network(
    weights: Sequence[tuple[Any, Any]], slopes: Sequence[Any] | None = None
) -> tuple[Weights, Slopes]:
    """Plain weights and the slopes ``alpha`` of every hidden layer: ``slopes`` or, when that is
    ``None``, those a :class:`SlopedWeights` carries, or zeros (ReLU) when neither has any."""
    carried = getattr(weights, "slopes", None)
    plain = _as_weights(weights)
    widths = [w.shape[0] for w, _ in plain[:-1]]
    if slopes is None:
        slopes = carried
    elif carried is not None and not all(
        np.array_equal(np.asarray(u, dtype=np.float64).reshape(-1), v)
        for u, v in zip(slopes, carried, strict=True)
    ):
        raise ValueError("slopes= differs from the slopes the weights carry")
    if slopes is None:
        return plain, [np.zeros(n) for n in widths]
    alphas = [np.array(a, dtype=np.float64).reshape(-1) for a in slopes]
    if [a.size for a in alphas] != widths:
        raise ValueError(f"slopes of sizes {[a.size for a in alphas]} for hidden widths {widths}")
    if not all(np.all(np.isfinite(a)) for a in alphas):
        raise ValueError("slopes must be finite")
    return plain, alphas


def activate(alpha: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``h = alpha z + (1 - alpha) relu(z)`` elementwise (``alpha`` along the last axis)."""
    return alpha * z + (1.0 - alpha) * np.maximum(z, 0.0)


def gain(alpha: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``D = alpha + (1 - alpha) sigma``: the slope of each neuron on the side ``sigma`` (0/1)."""
    return alpha + (1.0 - alpha) * np.asarray(mask, dtype=np.float64)


def _canonical_domain(domain: DomainSpec, d: int) -> tuple[str, np.ndarray, Any]:
    kind = domain[0]
    if kind == "linf":
        center = np.broadcast_to(np.asarray(domain[1], dtype=np.float64), (d,))
        radius = np.broadcast_to(np.asarray(domain[2], dtype=np.float64), (d,))
        return _canonical_domain(("box", center - radius, center + radius), d)
    if kind == "box":
        lo = np.broadcast_to(np.asarray(domain[1], dtype=np.float64), (d,)).copy()
        hi = np.broadcast_to(np.asarray(domain[2], dtype=np.float64), (d,)).copy()
        if not np.all(hi > lo):
            raise ValueError("box must be full-dimensional (upper > lower)")
        return "box", lo, hi
    if kind in ("l1", "l2"):
        center = np.broadcast_to(np.asarray(domain[1], dtype=np.float64), (d,)).copy()
        radius = float(domain[2])
        if not radius > 0:
            raise ValueError(f"{kind} ball radius must be positive")
        return kind, center, radius
    raise ValueError(f"unknown domain kind {kind!r}")


def _canonical_constraints(
    domain: DomainSpec, constraints: Constraints | None, d: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``A x <= b`` of ``constraints`` or, when that is ``None``, of a
    :class:`ConstrainedDomain`, normalised to ``||a_k||_2 = 1`` (so ``b_k - a_k x`` is the
    Euclidean distance to the hyperplane); no constraints give 0 rows. A row ``0 x <= b_k`` is
    dropped when ``b_k >= 0`` (it holds everywhere) and makes the set empty otherwise."""
    carried = getattr(domain, "constraints", None)
    if constraints is None:
        constraints = carried
    elif carried is not None and not all(
        np.array_equal(np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64))
        for u, v in zip(constraints, carried, strict=True)
    ):
        raise ValueError("constraints= differs from the constraints the domain carries")
    if constraints is None:
        return np.zeros((0, d)), np.zeros(0)
    a = np.array(constraints[0], dtype=np.float64).reshape(-1, d)
    b = np.array(constraints[1], dtype=np.float64).reshape(-1)
    if b.shape != (a.shape[0],) or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"constraints must be finite (A (k, {d}), b (k,)): {a.shape}, {b.shape}")
    norms = np.linalg.norm(a, axis=1)
    zero = norms <= 1e-300
    if np.any(b[zero] < 0):
        raise ValueError("a constraint 0 x <= b with b < 0: the set is empty")
    return a[~zero] / norms[~zero, None], b[~zero] / norms[~zero]


def dual_norm(g: np.ndarray, input_norm: str) -> np.ndarray:
    """Dual norm of the input norm along the last axis: linf -> l1, l1 -> linf, l2 -> l2."""
    if input_norm not in INPUT_DUAL:
        raise ValueError(f"unknown input norm {input_norm!r}")
    return np.linalg.norm(np.asarray(g, dtype=np.float64), ord=INPUT_DUAL[input_norm], axis=-1)


def output_dual_vertices(output_norm: str, m: int) -> np.ndarray:
    """Vertices (rows, one of each ± pair) of the dual unit ball of the output norm on R^m."""
    if output_norm == "abs":
        if m != 1:
            raise ValueError(f"output norm 'abs' needs a scalar output, got m={m}")
        return np.ones((1, 1))
    if output_norm == "l1":
        signs = [(1.0, *rest) for rest in itertools.product((1.0, -1.0), repeat=m - 1)]
        return np.array(signs, dtype=np.float64).reshape(-1, m)
    if output_norm == "linf":
        return np.eye(m)
    if output_norm == "cross":
        rows = [np.eye(m)[i] for i in range(m)]
        for i, j in itertools.combinations(range(m), 2):
            v = np.zeros(m)
            v[i], v[j] = 1.0, -1.0
            rows.append(v)
        return np.array(rows)
    raise ValueError(f"unknown output norm {output_norm!r}")


def cross_norm(y: np.ndarray) -> np.ndarray:
    """``||y||_x = max(max_i |y_i|, max_{i,j} y_i - y_j)`` along the last axis."""
    y = np.asarray(y, dtype=np.float64)
    return np.maximum(np.abs(y).max(axis=-1), y.max(axis=-1) - y.min(axis=-1))


def l2_output_norm(jac: np.ndarray, input_norm: str) -> float:
    """``max_{||w||_2 <= 1} ||J^T w||_{alpha*}`` for one Jacobian J (m, d), the l2 output norm
    (its dual ball is the Euclidean ball, not a polytope): l2 input, the largest singular value;
    l1 input (dual linf), the largest column norm ``max_j ||J[:, j]||_2``; linf input (dual l1),
    ``||J^T w||_1 = max_s s^T J^T w`` over sign vectors s, so ``max_s ||J s||_2`` over all 2^d."""
    jac = np.asarray(jac, dtype=np.float64)
    if input_norm == "l2":
        return float(np.linalg.svd(jac, compute_uv=False)[0])
    if input_norm == "l1":
        return float(np.sqrt((jac**2).sum(axis=0)).max())
    if input_norm == "linf":
        d = jac.shape[1]
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d)))
        return float(np.sqrt(((signs @ jac.T) ** 2).sum(axis=1)).max())
    raise ValueError(f"unknown input norm {input_norm!r}")


def _region_value(
    jac: np.ndarray, dual_rows: np.ndarray | None, input_norm: str
) -> tuple[float, np.ndarray | None]:
    """``max_w ||J^T w||_{alpha*}`` for a region's Jacobian ``jac`` and the dual row attaining it
    (``None`` for the l2 output norm, ``dual_rows is None``: its dual ball has no vertices)."""
    if dual_rows is None:
        return l2_output_norm(jac, input_norm), None
    values = dual_norm(dual_rows @ jac, input_norm)
    k = int(np.argmax(values))
    return float(values[k]), dual_rows[k].copy()


def _dual_rows(c: Any, output_norm: str, m: int) -> np.ndarray:
    if c is not None:
        cvec = np.asarray(c, dtype=np.float64).reshape(-1)
        if cvec.shape != (m,):
            raise ValueError(f"c has shape {cvec.shape}, expected ({m},)")
        return cvec[None, :]
    return output_dual_vertices(output_norm, m)


def forward(weights: Weights, x: np.ndarray, slopes: Sequence[Any] | None = None) -> np.ndarray:
    """f at a batch (n, d) -> (n, m) (or one point (d,) -> (m,))."""
    weights, alphas = _network(weights, slopes)
    h = np.atleast_2d(np.asarray(x, dtype=np.float64))
    for alpha, (w, b) in zip(alphas, weights[:-1], strict=True):
        h = activate(alpha, h @ w.T + b)
    w, b = weights[-1]
    y = h @ w.T + b
    return y[0] if np.ndim(x) == 1 else y


def activation_patterns(
    weights: Weights, x: np.ndarray, slopes: Sequence[Any] | None = None
) -> list[np.ndarray]:
    """Per hidden layer, the (n, width) boolean pattern ``z > 0`` at a batch of inputs."""
    weights, alphas = _network(weights, slopes)
    h = np.atleast_2d(np.asarray(x, dtype=np.float64))
    out = []
    for alpha, (w, b) in zip(alphas, weights[:-1], strict=True):
        z = h @ w.T + b
        out.append(z > 0)
        h = activate(alpha, z)
    return out


def jacobians(weights: Weights, x: np.ndarray, slopes: Sequence[Any] | None = None) -> np.ndarray:
    """Jacobians (n, m, d) at a batch of inputs, the slope right of each kink taken at it
    (``D = alpha`` at ``z = 0``: relu'(0) = 0)."""
    weights, alphas = _network(weights, slopes)
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    masks = activation_patterns(weights, x, alphas)
    jac = np.broadcast_to(weights[0][0], (x.shape[0], *weights[0][0].shape))
    for alpha, mask, (w, _) in zip(alphas, masks, weights[1:], strict=True):
        jac = np.einsum("ij,njk->nik", w, gain(alpha, mask)[:, :, None] * jac)
    return np.array(jac)


def jacobian_of_pattern(
    weights: Weights, pattern: Sequence[np.ndarray], slopes: Sequence[Any] | None = None
) -> np.ndarray:
    """``W_L D_{L-1} ... D_1 W_1`` for a 0/1 pattern, ``D = diag(alpha + (1 - alpha) sigma)``."""
    weights, alphas = _network(weights, slopes)
    jac = weights[0][0]
    for alpha, mask, (w, _) in zip(alphas, pattern, weights[1:], strict=True):
        jac = w @ (gain(alpha, mask)[:, None] * jac)
    return np.array(jac)


def gradient_norms(
    weights: Weights,
    x: np.ndarray,
    c: Any,
    input_norm: str,
    output_norm: str = "abs",
    *,
    slopes: Sequence[Any] | None = None,
) -> np.ndarray:
    """``max_w ||J(x)^T w||_{alpha*}`` at each point of a batch (``D = alpha`` at a kink)."""
    weights, alphas = _network(weights, slopes)
    if c is None and output_norm == "l2":
        return np.array([l2_output_norm(j, input_norm) for j in jacobians(weights, x, alphas)])
    rows = _dual_rows(c, output_norm, weights[-1][0].shape[0])
    return dual_norm(row_gradients(weights, x, rows, alphas), input_norm).max(axis=1)


def row_gradients(
    weights: Weights, x: np.ndarray, rows: np.ndarray, slopes: Sequence[Any] | None = None
) -> np.ndarray:
    """``w^T J(x)`` for each row ``w`` of ``rows`` (k, m) at a batch: (n, k, d), by the backward
    pass ``w^T W_L D_{L-1} ... D_1 W_1`` (``D = alpha`` at a kink); cheaper than
    :func:`jacobians` when k is small and the layers are wide."""
    weights, alphas = _network(weights, slopes)
    masks = activation_patterns(weights, np.atleast_2d(np.asarray(x, dtype=np.float64)), alphas)
    grads = np.broadcast_to(rows @ weights[-1][0], (masks[0].shape[0] if masks else 1,
                            rows.shape[0], weights[-1][0].shape[1]))  # fmt: skip
    for alpha, mask, (w, _) in zip(
        reversed(alphas), reversed(masks), reversed(weights[:-1]), strict=True
    ):
        grads = (grads * gain(alpha, mask)[:, None, :]) @ w
    if not masks:
        grads = np.broadcast_to(grads, (np.atleast_2d(x).shape[0], *grads.shape[1:]))
    return np.array(grads)


# --------------------------------------------------------------------------- LP machinery


class _MarginLP:
    """Chebyshev-centre LP of (normalised half-spaces pushed on a stack) ∩ (domain).

    Variables ``[x, t]`` (box) or ``[x, u, t]`` (l1 ball, ``u >= |x - center|``). A pushed
    half-space ``row x + rhs >= 0`` (``||row||_2 = 1``) enters as ``row x + rhs >= t``; the domain
    enters shrunk by ``t`` (box: ``lo + t <= x <= hi - t``; l1 ball:
    ``sum u + sqrt(d) t <= radius``, the l1 ball's facets having Euclidean normals
    ``(±1, ..., ±1)/sqrt(d)``). So the optimum ``t`` is the radius of the largest Euclidean ball
    inside (polyhedron ∩ domain).

    Linear constraints ``a_k x <= b_k`` (unit rows, :func:`_canonical_constraints`) belong to the
    domain and enter shrunk alike, ``a_k x + t <= b_k``.

    Two interchangeable engines, both HiGHS: ``"highspy"`` keeps one model and adds/deletes rows as
    the search pushes/pops (warm-started, ~15x less overhead per LP); ``"linprog"`` rebuilds the LP
    for ``scipy.optimize.linprog(method="highs")`` every time.
    """

    def __init__(
        self,
        domain: tuple[str, np.ndarray, Any],
        d: int,
        backend: str,
        constraints: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        if backend not in ("highspy", "linprog"):
            raise ValueError(f"unknown LP backend {backend!r}")
        self.kind, self.p, self.q = domain
        self.cons_a, self.cons_b = (
            (np.zeros((0, d)), np.zeros(0)) if constraints is None else constraints
        )
        self.d = d
        self.backend = backend
        self.count = 0
        self.size = 0  # rows on the stack
        self._rows = np.zeros((64, d))
        self._rhs = np.zeros(64)
        eye = np.eye(d)
        if self.kind == "box":
            lo, hi = self.p, self.q
            ones = np.ones((d, 1))
            self.dom_a = np.vstack([np.hstack([-eye, ones]), np.hstack([eye, ones])])
            self.dom_b = np.concatenate([-lo, hi])
            self.col_lo = np.concatenate([lo, [-np.inf]])
            self.col_hi = np.concatenate([hi, [np.inf]])
            self.mid, self.half = (lo + hi) / 2, (hi - lo) / 2
        else:
            center, radius = self.p, self.q
            zcol = np.zeros((d, 1))
            self.dom_a = np.vstack(
                [
                    np.hstack([eye, -eye, zcol]),
                    np.hstack([-eye, -eye, zcol]),
                    np.concatenate([np.zeros(d), np.ones(d), [np.sqrt(d)]])[None, :],
                ]
            )
            self.dom_b = np.concatenate([center, -center, [radius]])
            self.col_lo = np.concatenate([center - radius, np.zeros(d), [-np.inf]])
            self.col_hi = np.concatenate([center + radius, np.full(d, radius), [np.inf]])
        cons = np.zeros((len(self.cons_b), self.dom_a.shape[1]))
        cons[:, :d], cons[:, -1] = self.cons_a, 1.0  # a_k x + t <= b_k
        self.dom_a = np.vstack([self.dom_a, cons])
        self.dom_b = np.concatenate([self.dom_b, self.cons_b])
        self.nvar = self.dom_a.shape[1]
        self.cost = np.zeros(self.nvar)
        self.cost[-1] = -1.0
        if backend == "highspy":
            self._init_highspy()

    # ---- highspy engine
    def _init_highspy(self) -> None:
        import highspy

        self._hs = highspy
        inf = highspy.kHighsInf
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("presolve", "off")
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        for j in range(self.nvar):
            lo = -inf if np.isinf(self.col_lo[j]) else float(self.col_lo[j])
            hi = inf if np.isinf(self.col_hi[j]) else float(self.col_hi[j])
            h.addVar(lo, hi)
        h.changeColCost(self.nvar - 1, -1.0)
        for row, b in zip(self.dom_a, self.dom_b, strict=True):
            nz = np.flatnonzero(row).astype(np.int32)
            h.addRow(-inf, float(b), len(nz), nz, row[nz])
        self._h = h
        self._objective = (self.cost.tobytes(), -np.inf)
        self._base_rows = self.dom_a.shape[0]
        self._idx = np.concatenate([np.arange(self.d), [self.nvar - 1]]).astype(np.int32)

    # ---- stack
    def push(self, row: np.ndarray, rhs: float) -> None:
        if self.size == len(self._rhs):
            self._rows = np.vstack([self._rows, np.zeros_like(self._rows)])
            self._rhs = np.concatenate([self._rhs, np.zeros_like(self._rhs)])
        self._rows[self.size] = row
        self._rhs[self.size] = rhs
        self.size += 1
        if self.backend == "highspy":
            # row x + rhs >= t  <=>  -row x + t <= rhs
            vals = np.empty(self.d + 1)
            vals[:-1], vals[-1] = -row, 1.0
            self._h.addRow(-self._hs.kHighsInf, float(rhs), self.d + 1, self._idx, vals)

    def pop(self) -> None:
        self.size -= 1
        if self.backend == "highspy":
            last = self._base_rows + self.size
            self._h.deleteRows(1, np.array([last], dtype=np.int32))

    def stack(self) -> tuple[np.ndarray, np.ndarray]:
        """The pushed half-spaces ``rows x + rhs >= 0`` (views: use before the next push)."""
        return self._rows[: self.size], self._rhs[: self.size]

    # ---- geometry
    def domain_margin(self, x: np.ndarray) -> float:
        """Distance from ``x`` to the nearest facet of the domain or constraint hyperplane."""
        if self.kind == "box":
            m = float(min(np.min(x - self.p), np.min(self.q - x)))
        else:
            m = float((self.q - np.abs(x - self.p).sum()) / np.sqrt(self.d))
        return float(np.min(self.cons_b - self.cons_a @ x, initial=m))

    def margin(self, x: np.ndarray) -> float:
        """Recomputed certificate at ``x``: distance to the nearest pushed hyperplane / domain
        facet, negative if ``x`` violates one."""
        m = self.domain_margin(x)
        if self.size:
            rows, rhs = self.stack()
            m = min(m, float(np.min(rows @ x + rhs)))
        return m

    def intervals(
        self, a: np.ndarray, b: np.ndarray, box: tuple[np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of each ``a_k^T x + b_k`` over ``box`` (and, for the l1 ball, over the ball):
        each exact, so valid over any region inside both (constraints only shrink the set)."""
        mid, half = (box[0] + box[1]) / 2, (box[1] - box[0]) / 2
        centre, spread = a @ mid + b, np.abs(a) @ half
        lower, upper = centre - spread, centre + spread
        if self.kind == "l1":
            centre, spread = a @ self.p + b, self.q * np.abs(a).max(axis=1)
            lower, upper = np.maximum(lower, centre - spread), np.minimum(upper, centre + spread)
        return lower, upper

    def outer_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The domain's bounding box (it contains domain ∩ constraints as well)."""
        if self.kind == "box":
            return self.p.copy(), self.q.copy()
        return self.p - self.q, self.p + self.q

    def tighten(
        self, box: tuple[np.ndarray, np.ndarray], passes: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """Feasibility-based bound tightening: a box still containing (stack ∩ domain) if ``box``
        did. Interval reasoning only (no LP) over the pushed rows and the constraints; padded by
        1e-12 against rounding."""
        lo, hi = box
        rows, rhs = self.stack()
        rows, rhs = np.vstack([rows, -self.cons_a]), np.concatenate([rhs, self.cons_b])
        pos, neg = rows > 1e-9, rows < -1e-9
        safe = np.where(pos | neg, rows, 1.0)
        for _ in range(passes):
            # row x + rhs >= 0  =>  row_i x_i >= -rhs - sum_{j != i} max(row_j x_j) over the box
            top = np.maximum(rows * lo, rows * hi)
            bound = (top - (top.sum(axis=1) + rhs)[:, None]) / safe
            lo = np.maximum(lo, np.where(pos, bound, -np.inf).max(axis=0, initial=-np.inf))
            hi = np.minimum(hi, np.where(neg, bound, np.inf).min(axis=0, initial=np.inf))
            if self.kind == "l1":
                gap = np.maximum(0.0, np.maximum(lo - self.p, self.p - hi))  # min |x_i - c_i|
                slack = self.q - (gap.sum() - gap)
                lo, hi = np.maximum(lo, self.p - slack), np.minimum(hi, self.p + slack)
        pad = 1e-12 * (1.0 + np.abs(lo) + np.abs(hi))
        lo, hi = lo - pad, hi + pad
        return np.minimum(lo, hi), np.maximum(lo, hi)

    # ---- solves
    def _run(self, cost: np.ndarray, t_lower: float) -> np.ndarray:
        self.count += 1
        if self.backend == "highspy":
            h = self._h
            key = (cost.tobytes(), t_lower)
            if key != self._objective:  # changing the objective only when needed keeps warm starts
                h.changeColsCost(self.nvar, np.arange(self.nvar, dtype=np.int32), cost)
                h.changeColBounds(self.nvar - 1, t_lower, self._hs.kHighsInf)
                self._objective = key
            h.run()
            if h.getModelStatus() == self._hs.HighsModelStatus.kOptimal:
                return np.array(h.getSolution().col_value)
            # a warm start gone wrong: rebuild from scratch once, then fall back to linprog
            h.clearSolver()
            h.run()
            if h.getModelStatus() == self._hs.HighsModelStatus.kOptimal:
                return np.array(h.getSolution().col_value)
        rows, rhs = self.stack()
        neuron_a = np.zeros((len(rows), self.nvar))
        neuron_a[:, : self.d] = -rows
        neuron_a[:, -1] = 1.0
        col_lo = np.concatenate([self.col_lo[:-1], [t_lower]])
        bounds = [
            (float(lo) if np.isfinite(lo) else None, float(hi) if np.isfinite(hi) else None)
            for lo, hi in zip(col_lo, self.col_hi, strict=True)
        ]
        res = linprog(
            cost,
            A_ub=np.vstack([self.dom_a, neuron_a]),
            b_ub=np.concatenate([self.dom_b, rhs]),
            bounds=bounds,
            method="highs",
            options=_HIGHS_OPTIONS,
        )
        if res.status != 0 or res.x is None:  # pragma: no cover - always feasible & bounded
            raise RuntimeError(f"margin LP failed: {res.message}")
        return np.array(res.x)

    def solve(self) -> tuple[float, np.ndarray]:
        """Chebyshev centre: returns (recomputed margin, x)."""
        x = self._run(self.cost, -np.inf)[: self.d]
        return self.margin(x), x

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact bounding box of (closed polyhedron ∩ domain ∩ constraints), 2d LPs, padded by
        1e-9."""
        lo, hi = np.empty(self.d), np.empty(self.d)
        for i in range(self.d):
            for sign, out in ((1.0, lo), (-1.0, hi)):
                cost = np.zeros(self.nvar)
                cost[i] = sign
                out[i] = self._run(cost, 0.0)[i]
        pad = 1e-9 * (1.0 + np.abs(lo) + np.abs(hi))
        return lo - pad, hi + pad


# --------------------------------------------------------------------------- the oracle


def brute_force_lipschitz(
    weights: Sequence[tuple[np.ndarray, np.ndarray]],
    domain: DomainSpec,
    c: np.ndarray | None,
    input_norm: str,
    output_norm: str = "abs",
    *,
    tol: float = 1e-9,
    collect_regions: bool = False,
    lp_backend: str = "highspy",
    bbox_filter: str = "auto",
    constraints: Constraints | None = None,
    slopes: Sequence[Any] | None = None,
) -> OracleResult:
    """Exact local Lipschitz constant by enumerating the full-dimensional activation regions.

    Args:
        weights: ``[(W_1, b_1), ..., (W_L, b_L)]``, ``W_i`` of shape (out, in); ReLU between
            consecutive affine maps, none after the last.
        domain: ``("box", lower, upper)``, ``("linf", center, radius)`` (the box center±radius)
            ``("l1", center, radius)`` (``{x : ||x - center||_1 <= radius}``) or
            ``("l2", center, radius)`` (``{x : ||x - center||_2 <= radius}``: the regions of its
            bounding box, each kept iff a conic program finds it meets the ball; see the module
            docstring).
        c: for the scalar function ``c^T f``; ``None`` for the vector case with ``output_norm``.
        input_norm: ``"linf"`` (gradient measured in l1), ``"l1"`` (in linf) or ``"l2"``.
        output_norm: ``"abs"`` (m == 1), ``"l1"``, ``"linf"``, ``"cross"`` or ``"l2"``
            (:func:`l2_output_norm`); ignored if ``c`` is given.
        tol: a region counts iff (region ∩ domain) contains a Euclidean ball of radius ``> tol``.
        collect_regions: also return every region in ``result.regions``.
        lp_backend: ``"highspy"`` (incremental, fast) or ``"linprog"`` (scipy); same answers.
        bbox_filter: how to bound the current region by a box, to skip the LP for neurons that
            cannot cross it: ``"fbbt"`` (interval bound tightening after every branch, no LPs),
            ``"lp"`` (that, plus the exact bounding box by 2d LPs on entering each hidden layer
            after the first), ``"auto"`` (the exact box only where more than 2d neurons of the
            layer may cross the current box) or ``"none"`` (domain box only). A speed-up only:
            the regions and the value do not depend on it.
        constraints: ``(A, b)``: the domain becomes ``{x in domain : A x <= b}`` (any domain
            kind); ``None`` uses those a :class:`ConstrainedDomain` carries, if any. Raises
            ``ValueError`` if the set has no interior (no Euclidean ball of radius ``> tol``).
        slopes: per hidden layer, the slope ``alpha`` of each neuron
            (``h = alpha z + (1 - alpha) relu(z)``); ``None`` uses those a
            :class:`SlopedWeights` carries, or ReLU everywhere. Identity neurons (``alpha = 1``)
            have no kink: never branched on, no row, reported as 1 in the patterns.

    Returns:
        OracleResult(value, argmax_point, n_regions, ...).
    """
    start = time.perf_counter()
    weights, alphas = _network(weights, slopes)
    d = weights[0][0].shape[1]
    m = weights[-1][0].shape[0]
    dual_rows = None if c is None and output_norm == "l2" else _dual_rows(c, output_norm, m)
    if input_norm not in INPUT_DUAL:
        raise ValueError(f"unknown input norm {input_norm!r}")
    if bbox_filter not in ("fbbt", "lp", "auto", "none"):
        raise ValueError(f"unknown bbox_filter {bbox_filter!r}")
    dom = _canonical_domain(domain, d)
    cons = _canonical_constraints(domain, constraints, d)
    if dom[0] == "l2":
        box_result = brute_force_lipschitz(
            weights,
            ("box", dom[1] - dom[2], dom[1] + dom[2]),
            c,
            input_norm,
            output_norm,
            tol=tol,
            collect_regions=True,
            lp_backend=lp_backend,
            bbox_filter=bbox_filter,
            constraints=cons,
            slopes=alphas,
        )
        return _l2_ball_result(
            (weights, alphas),
            (dom, cons),
            box_result,
            (dual_rows, input_norm),
            tol,
            collect_regions,
            start,
        )
    lp = _MarginLP(dom, d, lp_backend, cons)
    hidden = weights[:-1]
    masks = [np.zeros(w.shape[0]) for w, _ in hidden]
    scales = [
        np.array([_row_scale(weights, alphas, k, j) for j in range(w.shape[0])])
        for k, (w, _) in enumerate(hidden)
    ]
    identity = [alpha == 1.0 for alpha in alphas]
    best: dict[str, Any] = {"value": -np.inf}
    regions: list[Region] = []
    n_regions = 0

    def leaf(h_a: np.ndarray, point: np.ndarray, margin: float) -> None:
        nonlocal n_regions
        n_regions += 1
        value, dual = _region_value(weights[-1][0] @ h_a, dual_rows, input_norm)
        pattern = tuple(mk.copy() for mk in masks)
        _verify_leaf(weights, alphas, pattern, point)
        if collect_regions:
            regions.append(Region(pattern, point.copy(), margin, value))
        if value > best["value"]:
            best.update(
                value=value,
                pattern=pattern,
                point=point.copy(),
                margin=margin,
                dual=dual,
            )

    def enter(
        layer: int,
        h_a: np.ndarray,
        h_b: np.ndarray,
        point: np.ndarray,
        margin: float,
        box: tuple[np.ndarray, np.ndarray],
    ) -> None:
        """All signs of layers < ``layer`` are fixed and ``h_{layer-1} = h_a x + h_b``."""
        if layer == len(hidden):
            leaf(h_a, point, margin)
            return
        w, b = hidden[layer]
        z_a, z_b = w @ h_a, w @ h_b + b
        norms = np.linalg.norm(z_a, axis=1)
        const = norms <= 1e-12 * np.maximum(1.0, scales[layer])  # constant on the region
        masks[layer][const] = (z_b[const] > 0).astype(np.float64)
        masks[layer][identity[layer]] = 1.0
        fixed = const | identity[layer]
        norms[const] = 1.0
        if layer > 0 and bbox_filter in ("lp", "auto"):
            exact = bbox_filter == "lp"
            if not exact:  # "auto": the exact box only when it may save more LPs than its 2d
                lower, upper = lp.intervals(z_a / norms[:, None], z_b / norms, box)
                exact = np.count_nonzero((lower < 0) & (upper > 0) & ~fixed) > 2 * d
            if exact:
                lo, hi = lp.bounding_box()
                box = (np.maximum(box[0], lo), np.minimum(box[1], hi))
        forms = _LayerForms(z_a, z_b, z_a / norms[:, None], z_b / norms, fixed)
        walk(layer, 0, forms, point, margin, box)

    def walk(
        layer: int,
        unit: int,
        forms: _LayerForms,
        point: np.ndarray,
        margin: float,
        box: tuple[np.ndarray, np.ndarray],
    ) -> None:
        """Fix neurons ``unit..`` of hidden ``layer``; ``point`` certifies the current region
        with Euclidean ``margin``; ``box`` contains it."""
        z_a, z_b, a_n, b_n, fixed = forms
        lower, upper = lp.intervals(a_n, b_n, box)
        mask = masks[layer]
        for j in range(unit, len(b_n)):
            if fixed[j]:
                continue
            if lower[j] >= 0 or upper[j] <= 0:  # cannot cut the region: no branch, no row
                mask[j] = 1.0 if lower[j] >= 0 else 0.0
                continue
            v = float(a_n[j] @ point + b_n[j])
            for sign in (1.0, -1.0):
                lp.push(sign * a_n[j], sign * b_n[j])
                if sign * v > tol:  # the parent's certificate point already lies on this side
                    child_point, child_margin = point, min(margin, sign * v)
                else:
                    child_margin, child_point = lp.solve()
                if child_margin > tol:
                    mask[j] = 1.0 if sign > 0 else 0.0
                    child_box = box if bbox_filter == "none" else lp.tighten(box)
                    walk(layer, j + 1, forms, child_point, child_margin, child_box)
                lp.pop()
            return
        slope = gain(alphas[layer], mask)  # h = D z on the region: alpha z where inactive
        enter(layer + 1, slope[:, None] * z_a, slope * z_b, point, margin, box)

    root_margin, root_point = lp.solve()
    if root_margin <= tol:  # a valid domain is full-dimensional; with constraints it may not be
        raise ValueError(f"domain ∩ constraints has no interior (inradius {root_margin:.3g})")
    enter(0, np.eye(d), np.zeros(d), root_point, root_margin, lp.outer_box())
    if n_regions == 0:  # pragma: no cover - the domain itself is full-dimensional
        raise RuntimeError("no full-dimensional region found")
    # recentre the reported point: Chebyshev centre of the whole argmax region ∩ domain
    centre_lp = _MarginLP(dom, d, lp_backend, cons)
    for row, rhs in zip(*_pattern_constraints(weights, best["pattern"], alphas), strict=True):
        centre_lp.push(row, float(rhs))
    centre_margin, centre = centre_lp.solve()
    if centre_margin > best["margin"]:
        best.update(point=centre, margin=centre_margin)
    _verify_leaf(weights, alphas, best["pattern"], best["point"])
    return OracleResult(
        value=float(best["value"]),
        argmax_point=best["point"],
        n_regions=n_regions,
        argmax_pattern=best["pattern"],
        argmax_dual=best["dual"],
        argmax_margin=float(best["margin"]),
        n_lps=lp.count + centre_lp.count,
        seconds=time.perf_counter() - start,
        regions=regions if collect_regions else None,
    )


#: Clarabel's tolerances, tried in turn: 1e-10, then its defaults (1e-8, spelt out: a re-solve
#: keeps the previous settings otherwise) should the tight ones end "inaccurate"; the recomputed
#: margin then sits within ~1e-10 (~1e-8) of ``t``
_CONIC_SETTINGS = tuple(
    {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol} for tol in (1e-10, 1e-8)
)
#: a conic optimum ``t`` this far above ``tol`` must be confirmed by the recomputed margin
_CONIC_SLACK = 1e-7


def _l2_chebyshev(
    rows: np.ndarray, rhs: np.ndarray, center: np.ndarray, radius: float
) -> tuple[float, float, np.ndarray]:
    """Chebyshev centre of ``{rows x + rhs >= 0} ∩ {||x - center||_2 <= radius}`` (unit rows):
    ``max t  s.t.  rows x + rhs >= t,  ||x - center||_2 + t <= radius`` with Clarabel.
    Returns (the solver's t, the margin recomputed in numpy at its x, x)."""
    import cvxpy as cp

    x, t = cp.Variable(len(center)), cp.Variable()
    constraints = [cp.norm(x - center, 2) + t <= radius]
    if len(rhs):
        constraints.append(rows @ x + rhs >= t)
    problem = cp.Problem(cp.Maximize(t), constraints)
    for settings in _CONIC_SETTINGS:
        with warnings.catch_warnings():  # "solution may be inaccurate": handled here
            warnings.simplefilter("ignore")
            problem.solve(solver=cp.CLARABEL, **settings)
        if problem.status == cp.OPTIMAL and x.value is not None:
            break
    else:
        raise RuntimeError(f"l2-ball conic program failed: {problem.status}")
    point = np.array(x.value, dtype=np.float64)
    margin = radius - float(np.linalg.norm(point - center))
    if len(rhs):
        margin = min(margin, float(np.min(rows @ point + rhs)))
    return float(t.value), margin, point


def _l2_ball_result(
    network: tuple[Weights, Slopes],
    domain: tuple[tuple[str, np.ndarray, Any], tuple[np.ndarray, np.ndarray]],
    box_result: OracleResult,
    norms: tuple[np.ndarray | None, str],
    tol: float,
    collect_regions: bool,
    start: float,
) -> OracleResult:
    """Keep the regions of (the ball's bounding box ∩ constraints) (``box_result``) that meet
    (the l2 ball ∩ constraints) full-dimensionally, by :func:`_l2_chebyshev`, and take the
    largest value among them. ``domain`` is ``(the canonical ball, the canonical constraints)``,
    ``norms`` is ``(dual_rows, input_norm)`` as in :func:`_region_value`, ``network`` is
    ``(weights, slopes)``."""
    weights, alphas = network
    (_, center, radius), (cons_a, cons_b) = domain
    dual_rows, input_norm = norms
    kept: list[Region] = []
    best: tuple[float, Region, np.ndarray | None] | None = None
    for region in box_result.regions or []:
        rows, rhs = _pattern_constraints(weights, region.pattern, alphas)
        rows, rhs = np.vstack([rows, -cons_a]), np.concatenate([rhs, cons_b])  # b - a x >= t
        t_opt, margin, point = _l2_chebyshev(rows, rhs, center, radius)
        if margin <= tol:
            if t_opt > tol + _CONIC_SLACK:
                raise RuntimeError(f"conic optimum t={t_opt} not confirmed (margin {margin})")
            continue
        _verify_leaf(weights, alphas, region.pattern, point)
        value, dual = _region_value(
            jacobian_of_pattern(weights, region.pattern, alphas), dual_rows, input_norm
        )
        kept.append(Region(region.pattern, point, margin, value))
        if best is None or value > best[0]:
            best = (value, kept[-1], dual)
    if best is None:  # the ball is full-dimensional; with constraints it may not be
        raise ValueError("l2 ball ∩ constraints has no interior")
    value, region, dual = best
    return OracleResult(
        value=value,
        argmax_point=region.point,
        n_regions=len(kept),
        argmax_pattern=region.pattern,
        argmax_dual=dual,
        argmax_margin=region.margin,
        n_lps=box_result.n_lps + len(box_result.regions or []),
        seconds=time.perf_counter() - start,
        regions=kept if collect_regions else None,
    )


def _row_scale(weights: Weights, alphas: Slopes, layer: int, unit: int) -> float:
    """``||a||`` without cancellation, ``|| |W_k[unit]| G_{k-1} |W_{k-1}| ... G_1 |W_1| ||`` with
    ``G = diag(max(1, |alpha|))`` (the largest ``|D|``): a neuron whose gradient is below 1e-12
    of this is treated as constant on the region."""
    v = np.abs(weights[layer][0][unit])
    for alpha, (w, _) in zip(reversed(alphas[:layer]), reversed(weights[:layer]), strict=True):
        v = (v * np.maximum(1.0, np.abs(alpha))) @ np.abs(w)
    return float(np.linalg.norm(v))


def _pattern_constraints(
    weights: Weights, pattern: Sequence[np.ndarray], alphas: Slopes | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Signed, normalised half-spaces ``rows x + rhs >= 0`` of every non-constant neuron with a
    kink (identity neurons, ``alpha = 1``, give none; ``alphas=None``: ReLU)."""
    weights, alphas = _network(weights, alphas)
    d = weights[0][0].shape[1]
    h_a, h_b = np.eye(d), np.zeros(d)
    rows, rhs = [], []
    for k, (alpha, mask, (w, b)) in enumerate(zip(alphas, pattern, weights[:-1], strict=True)):
        z_a, z_b = w @ h_a, w @ h_b + b
        for unit in range(w.shape[0]):
            if alpha[unit] == 1.0:
                continue
            norm = float(np.linalg.norm(z_a[unit]))
            if norm > 1e-12 * max(1.0, _row_scale(weights, alphas, k, unit)):
                sign = 1.0 if mask[unit] > 0 else -1.0
                rows.append(sign * z_a[unit] / norm)
                rhs.append(sign * z_b[unit] / norm)
        slope = gain(alpha, mask)
        h_a, h_b = slope[:, None] * z_a, slope * z_b
    if not rows:
        return np.zeros((0, d)), np.zeros(0)
    return np.array(rows), np.array(rhs)


def _verify_leaf(
    weights: Weights, alphas: Slopes, pattern: Sequence[np.ndarray], point: np.ndarray
) -> None:
    """The certificate point must show the pattern in an independent forward pass (identity
    neurons, with no kink, may take either sign)."""
    h = point
    for alpha, mask, (w, b) in zip(alphas, pattern, weights[:-1], strict=True):
        z = w @ h + b
        # neurons constant on the region may sit at exactly 0; compare only where |z| is clear
        clear = np.abs(z) > 1e-12 * (1.0 + np.abs(w) @ np.abs(h) + np.abs(b))
        clear &= alpha != 1.0
        if np.any((z > 0)[clear] != (mask[clear] > 0)):
            raise RuntimeError("oracle certificate point does not show its activation pattern")
        h = activate(alpha, z)


# --------------------------------------------------------------------------- random nets, sampling


@overload
def random_network_weights(
    rng: np.random.Generator,
    widths: Sequence[int],
    scale: float = 1.0,
    bias_std: float = 0.5,
    *,
    slopes: None = None,
    slope_range: None = None,
) -> Weights: ...


@overload
def random_network_weights(
    rng: np.random.Generator,
    widths: Sequence[int],
    scale: float = 1.0,
    bias_std: float = 0.5,
    *,
    slopes: Sequence[float],
    slope_range: None = None,
) -> SlopedWeights: ...


@overload
def random_network_weights(
    rng: np.random.Generator,
    widths: Sequence[int],
    scale: float = 1.0,
    bias_std: float = 0.5,
    *,
    slopes: None = None,
    slope_range: tuple[float, float],
) -> SlopedWeights: ...


def random_network_weights(
    rng: np.random.Generator,
    widths: Sequence[int],
    scale: float = 1.0,
    bias_std: float = 0.5,
    *,
    slopes: Sequence[float] | None = None,
    slope_range: tuple[float, float] | None = None,
) -> Weights:
    """He-normal weights ``N(0, scale^2 * 2 / fan_in)`` and ``N(0, bias_std^2)`` biases.

    ``widths = [d, n_1, ..., n_{L-1}, m]``. With ``slopes`` (a few values, e.g.
    ``(0, 1, 0.1, -1)``) each hidden neuron's ``alpha`` is drawn uniformly among them, with
    ``slope_range=(lo, hi)`` uniformly in that interval; either returns a
    :class:`SlopedWeights` (the slopes drawn after the weights, so the weights are those drawn
    without them).
    """
    out: Weights = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=False):
        w = rng.normal(0.0, scale * np.sqrt(2.0 / fan_in), size=(fan_out, fan_in))
        b = rng.normal(0.0, bias_std, size=fan_out)
        out.append((w, b))
    if slopes is not None and slope_range is not None:
        raise ValueError("give slopes (choices) or slope_range, not both")
    hidden = widths[1:-1]
    if slopes is not None:
        choices = np.asarray(slopes, dtype=np.float64)
        return SlopedWeights(out, [rng.choice(choices, size=n) for n in hidden])
    if slope_range is not None:
        return SlopedWeights(out, [rng.uniform(*slope_range, size=n) for n in hidden])
    return out


#: rejection sampling inside constraints draws at most this many batches of ``max(n, 1000)``
#: domain points, so it needs an acceptance rate of about 1 / _SAMPLE_ROUNDS or more
_SAMPLE_ROUNDS = 100


def sample_domain(
    domain: DomainSpec,
    d: int,
    n: int,
    rng: np.random.Generator,
    constraints: Constraints | None = None,
) -> np.ndarray:
    """``n`` points uniform in the domain (∩ ``{A x <= b}`` for ``constraints=(A, b)``, or those
    a :class:`ConstrainedDomain` carries: by rejection from the domain's samples; ``ValueError``
    when too few are accepted, see :data:`_SAMPLE_ROUNDS`).

    l1 ball: the first d coordinates of a Dirichlet(1, ..., 1) vector on d + 1 cells (normalised
    exponentials) are uniform in the simplex ``{y >= 0, sum y <= 1}``; random signs per coordinate
    make them uniform in the unit l1 ball. l2 ball: a Gaussian direction, normalised, times
    ``radius * U^(1/d)`` (the radius of a uniform point has density ∝ r^(d-1)).
    """
    cons_a, cons_b = _canonical_constraints(domain, constraints, d)
    if not len(cons_b):
        return _sample_plain(domain, d, n, rng)
    kept, drawn = [], 0
    for _ in range(_SAMPLE_ROUNDS):
        x = _sample_plain(domain, d, max(n, 1000), rng)
        drawn += len(x)
        kept.append(x[np.all(x @ cons_a.T <= cons_b, axis=1)])
        if sum(map(len, kept)) >= n:
            return np.concatenate(kept)[:n]
    got = sum(map(len, kept))
    raise ValueError(
        f"rejection sampling kept {got} of {drawn} domain points inside the constraints "
        f"(acceptance {got / drawn:.2g}), fewer than the {n} asked: the set is too small a part "
        "of the domain"
    )


def _sample_plain(domain: DomainSpec, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform in the domain itself (see :func:`sample_domain`)."""
    kind, p, q = _canonical_domain(domain, d)
    if kind == "box":
        return p + (q - p) * rng.random((n, d))
    if kind == "l2":
        direction = rng.normal(size=(n, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        return p + direction * (q * rng.random((n, 1)) ** (1.0 / d))
    e = rng.exponential(size=(n, d + 1))
    simplex = e[:, :d] / e.sum(axis=1, keepdims=True)  # uniform in {y >= 0, sum y <= 1}
    signs = rng.choice((-1.0, 1.0), size=(n, d))
    return p + q * signs * simplex


def sampled_max_gradient_norm(
    weights: Sequence[tuple[np.ndarray, np.ndarray]],
    domain: DomainSpec,
    c: np.ndarray | None,
    input_norm: str,
    n: int = 10000,
    rng: np.random.Generator | None = None,
    output_norm: str = "abs",
    *,
    constraints: Constraints | None = None,
    slopes: Sequence[Any] | None = None,
) -> float:
    """Largest ``max_w ||J(x)^T w||_{alpha*}`` over ``n`` uniform samples of the domain (∩
    ``constraints``, as in :func:`sample_domain`): a LOWER bound. ``slopes`` as in
    :func:`brute_force_lipschitz`."""
    weights, alphas = _network(weights, slopes)
    rng = np.random.default_rng(0) if rng is None else rng
    x = sample_domain(domain, weights[0][0].shape[1], n, rng, constraints)
    return float(gradient_norms(weights, x, c, input_norm, output_norm, slopes=alphas).max())


# --------------------------------------------------------------------------- lipopt adapter


def from_lipopt(network: Any, domain: Any) -> LipoptArgs:
    """Plain ``(weights, domain)`` from a lipopt ``Network`` and ``Box``/``LinfBall``/``L1Ball``/
    ``L2Ball``/``Polytope``/``Intersection``.

    Only reads ``network.affine_layers[i].weight/.bias``, ``network.slopes`` (when present: the
    per-neuron ``alpha`` of each hidden layer, zeros for ReLU) and the domain's ``lower/upper``,
    ``center/radius``, ``A/b`` (Polytope: ``{lower <= x <= upper, A x <= b}``) or
    ``ball/polytope`` (Intersection: ball ∩ polytope). A Polytope becomes ``("box", lower, upper)``
    with constraints ``(A, b)``; an Intersection the ball's spec with constraints ``A x <= b``,
    ``x <= upper``, ``-x <= -lower``. Those come back as ``.constraints`` (``None`` for the other
    domains) and are carried by the domain spec (a :class:`ConstrainedDomain`), so the usual
    ``brute_force_lipschitz(*from_lipopt(net, dom), c, "linf")`` applies them, as does passing
    ``constraints=args.constraints``. Slopes other than all zeros come back carried by the weights
    (a :class:`SlopedWeights`; ``.slopes`` reads them), so every function here uses them; a
    ReLU network gives a plain list.
    """
    layers = network.affine_layers if hasattr(network, "affine_layers") else network
    weights = [
        (np.array(layer.weight, dtype=np.float64), np.array(layer.bias, dtype=np.float64))
        for layer in layers
    ]
    slopes = [np.array(a, dtype=np.float64).reshape(-1) for a in getattr(network, "slopes", ())]
    if any(np.any(a) for a in slopes):
        if len(slopes) != len(weights) - 1:
            raise ValueError(f"{len(slopes)} slope arrays for {len(weights) - 1} hidden layers")
        weights = SlopedWeights(weights, slopes)
    return LipoptArgs(weights, _lipopt_domain(domain))


def _lipopt_domain(domain: Any) -> DomainSpec:
    """The plain spec of a lipopt domain (duck-typed, see :func:`from_lipopt`)."""
    name = type(domain).__name__
    if hasattr(domain, "ball") and hasattr(domain, "polytope"):
        ball, poly = _lipopt_domain(domain.ball), domain.polytope
        if isinstance(ball, ConstrainedDomain):
            raise TypeError(f"unsupported ball {type(domain.ball).__name__} in {name}")
        a, b = np.array(poly.A, dtype=np.float64), np.array(poly.b, dtype=np.float64)
        lower = np.array(poly.lower, dtype=np.float64).reshape(-1)
        upper = np.array(poly.upper, dtype=np.float64).reshape(-1)
        eye = np.eye(len(lower))
        up, low = np.isfinite(upper), np.isfinite(lower)
        rows = np.vstack([a.reshape(-1, len(lower)), eye[up], -eye[low]])
        return ConstrainedDomain(
            ball, (rows, np.concatenate([b.reshape(-1), upper[up], -lower[low]]))
        )
    if name in ("L1Ball", "L2Ball"):
        kind = "l1" if name == "L1Ball" else "l2"
        return (kind, np.array(domain.center, dtype=np.float64), float(domain.radius))
    if name == "LinfBall":
        center = np.array(domain.center, dtype=np.float64)
        radius = np.array(domain.radius, dtype=np.float64)
        return ("box", center - radius, center + radius)
    if hasattr(domain, "lower") and hasattr(domain, "upper"):
        box = (
            "box",
            np.array(domain.lower, dtype=np.float64),
            np.array(domain.upper, dtype=np.float64),
        )
        if hasattr(domain, "A") and hasattr(domain, "b"):
            a, b = np.array(domain.A, dtype=np.float64), np.array(domain.b, dtype=np.float64)
            return ConstrainedDomain(box, (a, b))
        return box
    raise TypeError(f"unsupported domain {name}")
