"""Certified robustness radii from Lipschitz constants (paper appendix E.2).

Binary (one output, class = sign f): ``||y - x|| < |f(x)| / L`` keeps the sign (eq. 100).
Multi-class (class ``i = argmax f(x)``, margins ``f_ij = f_i - f_j``), Lemma 9 / Theorem 10:

- ``pairwise``: ``r = min_j f_ij(x) / L(f_ij)``, one LipMIP per class pair (c = e_i - e_j);
- ``naive``:    ``r = min_j f_ij(x) / max_j L(f_ij)``, the same MIPs with the per-pair maximum;
- ``cross``:    ``r = min_j f_ij(x) / L^(α,×)(f)``, one LipMIP with the cross-norm.

Proposition 7 gives ``cross <= naive <= pairwise``. Every L used is a certified upper bound (the
solver's proven bound), so each radius is certified even when a solve is stopped early. The
constant holds over the domain (the requested ball around x), so the certified set is the part
of that ball within ``r`` of x; a radius beyond the ball's is capped at it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import L1Ball, L2Ball, LinfBall
from lipopt.lipschitz import LipschitzError, lipschitz
from lipopt.network import Network

#: the norm of each ball, in which its radius is certified
BALL_NORMS: dict[type, str] = {LinfBall: "linf", L1Ball: "l1", L2Ball: "l2"}


class CertifyMethod(str, Enum):
    CROSS = "cross"
    PAIRWISE = "pairwise"
    NAIVE = "naive"


@dataclass(frozen=True)
class CertifyResult:
    """A certified radius around ``x``.

    Attributes:
        predicted: the predicted class (binary: 1 if f(x) > 0 else 0).
        margins: ``f_i(x) - f_j(x)`` per other class j (binary: ``{"|f|": |f(x)|}``).
        lipschitz: the constants used, by name (``"cross"``, ``"i-j"`` pairs, or ``"f"``).
        radius: the certified radius in the input norm (capped at the ball's radius).
        uncapped_radius: margin / constant before capping.
        ball_radius: the radius of the requested ball.
        certified_ball: every point of the requested ball keeps the predicted class.
        capped: the radius was larger than the ball and was capped.
        method, norm: how it was computed; ``statuses``: solver status of each constant.
        seconds: total time.
    """

    predicted: int
    margins: dict[str, float]
    lipschitz: dict[str, float]
    radius: float
    uncapped_radius: float
    ball_radius: float
    certified_ball: bool
    capped: bool
    method: str
    norm: str
    statuses: dict[str, str]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def certify(
    network: Network,
    ball: LinfBall | L1Ball | L2Ball,
    method: CertifyMethod | str = CertifyMethod.CROSS,
    **solve_options: Any,
) -> CertifyResult:
    """The certified radius around ``ball.center`` w.r.t. the ball's own norm.

    Args:
        network: the classifier (one output: sign; several: argmax).
        ball: the ℓ∞, ℓ1 or ℓ2 ball around the input x; constants are taken over it, in the
            ball's own norm (the ℓ2 ball: the exact ℓ2 constant, :mod:`lipopt.formulation.l2`).
        method: ``cross``, ``pairwise`` or ``naive`` (ignored for one output).
        **solve_options: passed to :func:`lipopt.lipschitz` (solver, time_limit, gap, ...).
    """
    norm = BALL_NORMS.get(type(ball))
    if norm is None:
        raise LipschitzError("certify needs a ball around the input (--center and --radius)")
    how = CertifyMethod(method) if not isinstance(method, CertifyMethod) else method
    start = time.perf_counter()
    x = ball.center
    logits = network.forward(x)
    constants: dict[str, float] = {}
    statuses: dict[str, str] = {}

    def constant(name: str, **kwargs: Any) -> float:
        res = lipschitz(network, ball, norm=norm, **kwargs, **solve_options)
        constants[name], statuses[name] = res.value, res.status
        return res.value

    if network.output_dim == 1:
        predicted = int(logits[0] > 0)
        margins = {"|f|": float(abs(logits[0]))}
        raw = _ratio(margins["|f|"], constant("f"))
    else:
        predicted = int(np.argmax(logits))
        others = [j for j in range(network.output_dim) if j != predicted]
        margins = {f"{predicted}-{j}": float(logits[predicted] - logits[j]) for j in others}
        if how is CertifyMethod.CROSS:
            raw = _ratio(min(margins.values()), constant("cross", output_norm="cross"))
        else:
            eye = np.eye(network.output_dim)
            pair = {j: constant(f"{predicted}-{j}", c=eye[predicted] - eye[j]) for j in others}
            if how is CertifyMethod.PAIRWISE:
                raw = min(_ratio(margins[f"{predicted}-{j}"], pair[j]) for j in others)
            else:
                raw = _ratio(min(margins.values()), max(pair.values()))
    capped = raw > ball.radius
    radius = min(raw, ball.radius)
    return CertifyResult(
        predicted=predicted,
        margins=margins,
        lipschitz=constants,
        radius=float(radius),
        uncapped_radius=float(raw),
        ball_radius=float(ball.radius),
        certified_ball=bool(raw > ball.radius),  # Lemma 9 is strict: ||y - x|| < r
        capped=bool(capped),
        method=how.value if network.output_dim > 1 else "binary",
        norm=norm,
        statuses=statuses,
        seconds=time.perf_counter() - start,
    )


def _ratio(margin: float, constant: float) -> float:
    """``margin / L``; a zero constant means f is constant on the ball (radius unbounded)."""
    if constant <= 0:
        return float("inf") if margin > 0 else 0.0
    return max(margin, 0.0) / constant


def predicted_class(network: Network, x: ArrayLike) -> np.ndarray:
    """Predicted classes of a batch: argmax, or ``f > 0`` for one output."""
    out = network.forward(np.atleast_2d(np.asarray(x, dtype=np.float64)))
    return (out[:, 0] > 0).astype(int) if out.shape[1] == 1 else np.argmax(out, axis=1)
