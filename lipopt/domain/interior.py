"""The interior of a polytope or of a ball ∩ a polytope: Chebyshev-centre LPs, tight bounding
boxes and hit-and-run sampling.

The Euclidean slack of a point ``x`` to ``{lower <= x <= upper, A x <= b} ∩ B`` is

    t(x) = min( (b_k - a_k·x) / ||a_k||_2,  x_j - lower_j,  upper_j - x_j,  s_B(x) )

with ``s_B(x) = R - ||x - c||_2`` for the ℓ2 ball and ``(R - ||x - c||_1) / sqrt(d)`` for the ℓ1
ball (the ℓ1 ball's facets have normals of Euclidean length ``sqrt(d)``). The set has an interior
iff ``max_x t(x) > 0``. For a polytope or an ℓ1 ball ∩ a polytope one LP maximises ``t`` over
``(x, t)`` (the Chebyshev centre). For an ℓ2 ball ∩ a polytope, the polytope's own centre is
taken if it lies inside the ball; else the largest shrink ``δ`` of the polytope whose point
nearest the ball's centre (a QP) lies within ``R - δ``, by bisection. Whatever a solver returns,
the slack is recomputed in numpy at its point, and only a positive recomputed slack admits the
set: the solvers propose, numpy decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, hstack, identity, vstack

from lipopt.domain.shapes import DomainError, FloatArray, L1Ball, L2Ball

#: slack below this (times the box's widest side, at least 1) counts as no interior
INTERIOR_TOL = 1e-9


def _tolerance(lower: FloatArray, upper: FloatArray) -> float:
    """:data:`INTERIOR_TOL` times the box's widest side (at least 1)."""
    return INTERIOR_TOL * max(1.0, float(np.max(upper - lower)))


@dataclass(frozen=True)
class Interior:
    """A point strictly inside the set and its Euclidean slack (radius of a ball inside)."""

    point: FloatArray
    slack: float


def slack(
    a: FloatArray, b: FloatArray, box: tuple[FloatArray, FloatArray], ball: Any, x: FloatArray
) -> float:
    """``t(x)`` of the module docstring, in numpy."""
    lower, upper = box
    parts = [float(np.min(x - lower)), float(np.min(upper - x))]
    if a.shape[0]:
        parts.append(float(np.min((b - a @ x) / np.linalg.norm(a, axis=1))))
    if isinstance(ball, L2Ball):
        parts.append(float(ball.radius - np.linalg.norm(x - ball.center)))
    elif isinstance(ball, L1Ball):
        parts.append(float(ball.radius - np.sum(np.abs(x - ball.center))) / np.sqrt(x.size))
    return float(min(parts))


def _slack_rows(
    a: FloatArray, b: FloatArray, lower: FloatArray, upper: FloatArray
) -> tuple[Any, FloatArray]:
    """Rows ``[A | ||a||] (x, t) <= b`` and the box's ``±x_j + t <= ±bound``, sparse."""
    d = lower.size
    eye = identity(d, format="csr")
    ones = csr_matrix(np.ones((d, 1)))
    rows = [hstack([eye, ones]), hstack([-eye, ones])]
    rhs = [upper, -lower]
    if a.shape[0]:
        rows.append(hstack([csr_matrix(a), csr_matrix(np.linalg.norm(a, axis=1)[:, None])]))
        rhs.append(b)
    return vstack(rows, format="csr"), np.concatenate(rhs)


def _l1_rows(ball: L1Ball, a_ub: Any, b_ub: FloatArray) -> tuple[Any, FloatArray]:
    """Add ``s_j >= ±(x_j - c_j)`` and ``Σ s_j + sqrt(d) t <= R`` with new variables ``s``."""
    d = ball.dim
    eye = identity(d, format="csr")
    grown = hstack([a_ub, csr_matrix((a_ub.shape[0], d))])
    zero_t = csr_matrix((d, 1))
    plus = hstack([eye, zero_t, -eye])  # x - s <= c
    minus = hstack([-eye, zero_t, -eye])  # -x - s <= -c
    total = hstack([csr_matrix((1, d)), csr_matrix([[np.sqrt(d)]]), csr_matrix(np.ones((1, d)))])
    rhs = np.concatenate([b_ub, ball.center, -ball.center, [ball.radius]])
    return vstack([grown, plus, minus, total], format="csr"), rhs


def _solve(a_ub: Any, b_ub: FloatArray, n_vars: int, d: int) -> tuple[FloatArray, float]:
    from scipy.optimize import linprog  # scipy.optimize takes ~0.5 s to import: not at import

    cost = np.zeros(n_vars)
    cost[d] = -1.0
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=(None, None), method="highs")
    if res.status != 0 or res.x is None:
        raise DomainError(f"the interior LP of the input set failed: {res.message}")
    return np.asarray(res.x[:d]), float(res.x[d])


def chebyshev(
    a: FloatArray, b: FloatArray, lower: FloatArray, upper: FloatArray, ball: Any
) -> Interior:
    """A point of largest slack (ℓ2 ball: of positive slack), or :class:`DomainError` saying
    why there is none."""
    d = lower.size
    tol = _tolerance(lower, upper)
    a_ub, b_ub = _slack_rows(a, b, lower, upper)
    if isinstance(ball, L1Ball):
        a_ub, b_ub = _l1_rows(ball, a_ub, b_ub)
    x, bound = _solve(a_ub, b_ub, a_ub.shape[1], d)
    found = Interior(x, slack(a, b, (lower, upper), ball if isinstance(ball, L1Ball) else None, x))
    if found.slack <= tol:
        if bound < -tol:
            where = " of the ball" if ball is not None else ""
            raise DomainError(
                f"the input set is empty: no point{where} meets every linear row inside its box"
            )
        raise DomainError(
            f"the input set has no interior: its rows leave no ball of radius above {tol:g} "
            "inside; a Lipschitz constant is taken over an open set"
        )
    if isinstance(ball, L2Ball):
        return _inside_l2(a, b, (lower, upper), ball, found)
    return found


def _inside_l2(
    a: FloatArray, b: FloatArray, box: tuple[FloatArray, FloatArray], ball: L2Ball, poly: Interior
) -> Interior:
    """A point of (near-)largest slack in ``ball ∩ polytope``: with ``P_δ`` the polytope with
    every row and bound shrunk by ``δ``, a ball of radius ``δ`` fits in the set iff
    ``dist(c, P_δ) + δ <= R``, and the left side grows with ``δ``; so the largest such ``δ``
    (the set's inradius) is found by bisection, each step one QP for the point of ``P_δ``
    nearest the centre. The slack of the best point is recomputed in numpy."""
    tol = _tolerance(*box)
    if ball.contains(poly.point, tol=-tol):
        return Interior(poly.point, slack(a, b, box, ball, poly.point))
    nearest = _nearest(a, b, box, ball.center, 0.0)
    distance = float(np.linalg.norm(nearest - ball.center))
    if distance >= ball.radius:
        raise DomainError(
            "the input set has no interior: the polytope's nearest point to the ball's centre "
            f"lies at {distance:.6g}, outside the radius {ball.radius:g}"
        )
    best = Interior(nearest, slack(a, b, box, ball, nearest))
    low, high = 0.0, min(poly.slack, ball.radius - distance)
    for _ in range(60):
        delta = 0.5 * (low + high)
        x = _nearest(a, b, box, ball.center, delta)
        found = slack(a, b, box, ball, x)
        if found > best.slack:
            best = Interior(x, found)
        low, high = (delta, high) if np.linalg.norm(x - ball.center) + delta <= ball.radius else (
            low, delta)  # fmt: skip
        if high - low <= 1e-3 * high and best.slack > tol:
            break
    if best.slack > tol:
        return best
    raise DomainError(
        f"the input set has no interior: the ball and the polytope overlap by less than {tol:g}"
    )


def _nearest(
    a: FloatArray,
    b: FloatArray,
    box: tuple[FloatArray, FloatArray],
    center: FloatArray,
    delta: float,
) -> FloatArray:
    """``argmin ||x - center||_2`` over the polytope with every row and bound shrunk by ``delta``
    (HiGHS's QP solver: ``½ x·(2I)x - 2 center·x``)."""
    import highspy

    d = center.size
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addVars(d, box[0] + delta, box[1] - delta)
    h.changeColsCost(d, np.arange(d, dtype=np.int32), -2.0 * center)
    if a.shape[0]:
        sparse = csr_matrix(a)
        upper = b - delta * np.linalg.norm(a, axis=1)
        lows = np.full(a.shape[0], -highspy.kHighsInf)
        h.addRows(a.shape[0], lows, upper, sparse.nnz, sparse.indptr, sparse.indices, sparse.data)
    start = np.arange(d + 1, dtype=np.int32)
    triangular = int(highspy.HessianFormat.kTriangular)
    h.passHessian(d, d, triangular, start, start[:-1], np.full(d, 2.0))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return np.clip(center, box[0], box[1])
    return np.asarray(h.getSolution().col_value)


def bounding_box_lp(
    a: FloatArray, b: FloatArray, lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``min x_j`` and ``max x_j`` over ``{lower <= x <= upper, A x <= b}``, by 2d LPs, each
    widened by 1e-9 relative so the box holds the set despite the LP's tolerance."""
    import highspy

    d = lower.size
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addVars(d, lower, upper)
    sparse = csr_matrix(a)
    h.addRows(
        a.shape[0],
        np.full(a.shape[0], -highspy.kHighsInf),
        b,
        sparse.nnz,
        sparse.indptr,
        sparse.indices,
        sparse.data,
    )
    low, high = lower.copy(), upper.copy()
    for j in range(d):
        for sense, out in ((1.0, low), (-1.0, high)):
            h.changeColsCost(d, np.arange(d, dtype=np.int32), np.eye(1, d, j).ravel() * sense)
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                continue  # keep the declared bound: always sound
            value = h.getSolution().col_value[j]
            widen = 1e-9 * (1.0 + abs(value))
            out[j] = max(lower[j], value - widen) if sense > 0 else min(upper[j], value + widen)
    return low, high


def _linear_reach(domain: Any, x: FloatArray, u: FloatArray) -> tuple[FloatArray, FloatArray]:
    """For rays ``x + s u_k`` (rows of ``u``): the interval of ``s`` inside the rows and box."""
    poly = getattr(domain, "polytope", domain)
    normals = np.hstack([u, -u, u @ poly.A.T])  # (n, 2d + m)
    room = np.concatenate([poly.upper - x, x - poly.lower, poly.b - poly.A @ x])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = room / normals
    high = np.min(np.where(normals > 0, ratio, np.inf), axis=1)
    low = np.max(np.where(normals < 0, ratio, -np.inf), axis=1)
    return low, high


def _ball_reach(ball: Any, x: FloatArray, u: FloatArray, high: FloatArray) -> FloatArray:
    """The largest ``s <= high`` with ``x + s u_k`` in the ball (``x`` inside): the root of a
    quadratic for the ℓ2 ball, a vectorised bisection (50 halvings) for the ℓ1 ball."""
    offset = x - ball.center
    if isinstance(ball, L2Ball):
        qa = np.sum(u * u, axis=1)
        qb = 2.0 * u @ offset
        qc = float(offset @ offset) - ball.radius**2
        root = (-qb + np.sqrt(np.maximum(qb * qb - 4.0 * qa * qc, 0.0))) / (2.0 * qa)
        return np.minimum(high, root)
    inside, outside = np.zeros(len(u)), np.minimum(high, 1e300)
    reached = np.abs(offset + outside[:, None] * u).sum(axis=1) <= ball.radius
    for _ in range(50):
        middle = 0.5 * (inside + outside)
        ok = np.abs(offset + middle[:, None] * u).sum(axis=1) <= ball.radius
        inside, outside = np.where(ok, middle, inside), np.where(ok, outside, middle)
    return np.where(reached, outside, inside)


def _chord(domain: Any, x: FloatArray, u: FloatArray) -> tuple[float, float]:
    """The interval of ``s`` with ``x + s u`` in the set."""
    low, high = _linear_reach(domain, x, u[None, :])
    ball = getattr(domain, "ball", None)
    if ball is None:
        return float(low[0]), float(high[0])
    up = _ball_reach(ball, x, u[None, :], high)
    down = _ball_reach(ball, x, -u[None, :], -low)
    return float(-down[0]), float(up[0])


def hit_and_run(domain: Any, n: int, rng: np.random.Generator) -> FloatArray:
    """``n`` points of a hit-and-run walk from the interior point (a random direction, then a
    uniform point of the chord through the set); 50 burn-in steps and ``min(d, 20)`` between
    kept points."""
    x = np.array(domain.interior_point, dtype=np.float64)
    thin = min(x.size, 20)
    out = np.empty((n, x.size))
    for step in range(50 + n * thin):
        u = rng.normal(size=x.size)
        u /= np.linalg.norm(u)
        low, high = _chord(domain, x, u)
        x = x + rng.uniform(low, high) * u
        kept = step - 50
        if kept >= 0 and kept % thin == 0:
            out[kept // thin] = x
    return out


def pull_inside(domain: Any, points: FloatArray) -> FloatArray:
    """Each point (rows) clipped to the bounding box, then, if still outside, moved along the
    segment to the interior point until it is inside (a map into the set, not the Euclidean
    projection: the attack only needs its iterates kept inside). Vectorised over the points."""
    low, high = domain.bounding_box()
    arr = np.clip(np.atleast_2d(np.asarray(points, dtype=np.float64)), low, high)
    start = np.asarray(domain.interior_point, dtype=np.float64)
    outside = np.array([not domain.contains(x, tol=0.0) for x in arr], dtype=bool)
    if np.any(outside):
        step = arr[outside] - start
        _, reach = _linear_reach(domain, start, step)
        ball = getattr(domain, "ball", None)
        if ball is not None:
            reach = _ball_reach(ball, start, step, reach)
        share = np.minimum(1.0, reach) * (1.0 - 1e-12)
        arr[outside] = start + share[:, None] * step
    return arr if np.ndim(points) > 1 else arr[0]
