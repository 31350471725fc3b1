"""The slope search of :mod:`lipopt.bounds.jacobian`: projected gradient (Adam) over the box of
sound line parameters, in torch (imported only here, only when a search is asked for).

Every parameter is a number ``θ ∈ [0, 1]`` naming one line of a sound family (the families and
their proofs are in :mod:`lipopt.bounds.jacobian`):

* an unstable switch on ``[l', u'] = [min(ly, 0), max(uy, 0)]``: the upper line of slope ``θ``
  and shift ``max(-θ l', (1 - θ) u')``, the lower line of slope ``θ`` and shift
  ``min((1 - θ) l', -θ u')``;
* the switch of a two-piece activation, ``s = α y + (1 - α) t``, uses the lines of ``t`` above
  on its part ``(1 - α) t`` (:mod:`lipopt.bounds.jacobian`); its ``α y`` part is exact;
* a convex term ``φ(g_j)`` of the objective on ``[l_j, u_j]``: slope
  ``λ = lo + θ (hi - lo)`` with ``[lo, hi]`` the subgradients of φ at the ends, shift
  ``max(φ(l) - λ l, φ(u) - λ u)``.

Each step clips ``θ`` back into ``[0, 1]``, so every iterate is a sound bound; the search keeps,
per objective row, the parameters of the smallest value seen. This module only *searches*: the
caller re-evaluates the parameters it returns in numpy with outward rounding, and that value is
the certified one. Nothing here decides soundness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt.network import is_sparse
from lipopt.norms import OutputNorm

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class SlopeProblem:
    """What a slope search needs, as plain arrays.

    Attributes:
        matrices: the affine layers' weights ``W_0 .. W_K`` (dense or scipy sparse).
        unstable, active: per hidden layer, 0/1 masks of the neurons' states.
        low, up: per hidden layer, ``l' = min(ly, 0)`` and ``u' = max(uy, 0)`` of ``y_k``.
        kind: the convex term ``"abs"`` or ``"square"``, or ``None`` for the rows ``±e_j``.
        g_low, g_up: bounds on the input gradient ``g``.
        seed: the output weighting ``c`` or an output norm.
        slopes: ``α`` per hidden layer, or None for a ReLU network.
    """

    matrices: tuple[Any, ...]
    unstable: tuple[FloatArray, ...]
    active: tuple[FloatArray, ...]
    low: tuple[FloatArray, ...]
    up: tuple[FloatArray, ...]
    kind: str | None
    g_low: FloatArray
    g_up: FloatArray
    seed: Any
    slopes: tuple[FloatArray, ...] | None = None

    def layer_slopes(self, layer: int) -> FloatArray | None:
        """``α`` of hidden layer ``layer``, or None when it is all ReLU (the ReLU code)."""
        if self.slopes is None or not np.any(self.slopes[layer]):
            return None
        return self.slopes[layer]


#: the parameters of one search: per hidden layer (θ_up, θ_low), then θ of the objective's terms
Thetas = tuple[list[tuple[FloatArray, FloatArray]], FloatArray | None]


def _torch_seed(seed: Any, torch: Any) -> Callable[[Any], Any]:
    """The support function of the seed set, row by row, for coefficients (rows, m)."""
    if not isinstance(seed, OutputNorm):
        vec = torch.as_tensor(np.asarray(seed, dtype=np.float64))
        return lambda coeffs: coeffs @ vec

    def cross(coeffs: Any) -> Any:
        top, bottom = coeffs.max(dim=1).values, coeffs.min(dim=1).values
        if coeffs.shape[1] == 1:
            return torch.clamp(top, min=0.0)
        return torch.maximum(top, top - bottom)

    rules: dict[OutputNorm, Callable[[Any], Any]] = {
        OutputNorm.ABS: lambda coeffs: coeffs.abs().sum(dim=1),
        OutputNorm.L1: lambda coeffs: coeffs.abs().sum(dim=1),
        OutputNorm.LINF: lambda coeffs: coeffs.abs().max(dim=1).values,
        OutputNorm.L2: lambda coeffs: torch.linalg.vector_norm(coeffs, dim=1),
        OutputNorm.CROSS: cross,
    }
    return rules[seed]


def _transposed_product(matrix: Any, torch: Any) -> Callable[[Any], Any]:
    """``coeffs ↦ coeffs @ W^T`` for a dense or sparse ``W`` (sparse kept sparse)."""
    if is_sparse(matrix):
        coo = matrix.tocoo()
        indices = torch.as_tensor(np.vstack([coo.row, coo.col]).astype(np.int64))
        values = torch.as_tensor(coo.data.astype(np.float64))
        weight = torch.sparse_coo_tensor(indices, values, coo.shape).coalesce()
        return lambda coeffs: torch.sparse.mm(weight, coeffs.T).T
    dense_t = torch.as_tensor(np.array(matrix, dtype=np.float64)).T  # a writable copy
    return lambda coeffs: coeffs @ dense_t


def _objective(problem: SlopeProblem, theta: Any, torch: Any) -> tuple[Any, Any]:
    """Rows on ``g`` and their constants: the lines of ``Σ φ(g_j)`` (one row), or ``±e_j``."""
    lo_g = torch.as_tensor(problem.g_low)
    hi_g = torch.as_tensor(problem.g_up)
    if problem.kind is None:
        eye = torch.eye(lo_g.shape[0], dtype=torch.float64)
        return torch.cat([eye, -eye]), torch.zeros(2 * lo_g.shape[0], dtype=torch.float64)
    if problem.kind == "abs":
        phi_lo, phi_hi, lo, hi = lo_g.abs(), hi_g.abs(), -1.0, 1.0
    else:
        phi_lo, phi_hi, lo, hi = lo_g**2, hi_g**2, 2.0 * lo_g, 2.0 * hi_g
    slope = lo + theta * (hi - lo)
    shift = torch.maximum(phi_lo - slope * lo_g, phi_hi - slope * hi_g)
    return slope[None, :], shift.sum()[None]


def _bound(problem: SlopeProblem, params: Sequence[Any], ops: tuple[Any, ...], torch: Any) -> Any:
    """The back-substituted upper bound of every objective row, as a torch graph."""
    products, support = ops
    count = len(problem.unstable)
    coeffs, shift = _objective(problem, params[-1] if problem.kind else None, torch)
    coeffs = products[0](coeffs)
    for k in range(count):
        unstable, active = torch.as_tensor(problem.unstable[k]), torch.as_tensor(problem.active[k])
        low, up = torch.as_tensor(problem.low[k]), torch.as_tensor(problem.up[k])
        t_up, t_low = params[2 * k], params[2 * k + 1]
        up_slope = active + unstable * t_up
        up_shift = unstable * torch.maximum(-t_up * low, (1.0 - t_up) * up)
        low_slope = active + unstable * t_low
        low_shift = unstable * torch.minimum((1.0 - t_low) * low, -t_low * up)
        alpha = problem.layer_slopes(k)
        if alpha is None:
            pos, neg = torch.clamp(coeffs, min=0.0), torch.clamp(coeffs, max=0.0)
            relaxed = pos * up_slope + neg * low_slope
        else:  # s = α y + (1 - α) t: the lines on t's part, α y exact
            a = torch.as_tensor(np.array(alpha))  # a writable copy
            on_t = coeffs * (unstable * (1.0 - a))
            pos, neg = torch.clamp(on_t, min=0.0), torch.clamp(on_t, max=0.0)
            direct = coeffs * torch.where(active > 0.0, torch.ones_like(a), a)
            relaxed = direct + pos * (unstable * t_up) + neg * (unstable * t_low)
        shift = shift + (pos * up_shift).sum(dim=1) + (neg * low_shift).sum(dim=1)
        coeffs = products[k + 1](relaxed)
    return support(coeffs) + shift


def search_slopes(
    problem: SlopeProblem, start: Thetas, iterations: int, rate: float = 0.1
) -> tuple[Thetas, int]:
    """``iterations`` projected Adam steps from ``start``; the best parameters per row seen
    (including ``start``) and the number of steps taken."""
    import torch

    switch, term = start
    params = [torch.tensor(np.array(a, dtype=np.float64), requires_grad=True) for pair in switch
              for a in pair]  # fmt: skip
    if term is not None:
        params.append(torch.tensor(np.array(term, dtype=np.float64), requires_grad=True))
    ops = (
        [_transposed_product(m, torch) for m in problem.matrices],
        _torch_seed(problem.seed, torch),
    )
    best = [p.detach().clone() for p in params]
    best_value = torch.full((2 * problem.g_low.shape[0] if problem.kind is None else 1,), np.inf,
                            dtype=torch.float64)  # fmt: skip
    optimiser = torch.optim.Adam(params, lr=rate)
    for step in range(iterations + 1):
        value = _bound(problem, params, ops, torch)
        with torch.no_grad():
            better = value < best_value
            best_value = torch.where(better, value, best_value)
            for kept, p in zip(best, params, strict=True):
                if kept.dim() == 2 and kept.shape[0] == better.shape[0]:
                    kept[better] = p[better]  # per-row parameters: each row keeps its best
                elif bool(better.any()):
                    kept.copy_(p)
        if step == iterations:
            break
        optimiser.zero_grad()
        value.sum().backward()
        optimiser.step()
        with torch.no_grad():
            for p in params:
                p.clamp_(0.0, 1.0)  # the projection: back into the box of sound lines
    arrays = [b.numpy() for b in best]
    pairs = [(arrays[2 * k], arrays[2 * k + 1]) for k in range(len(switch))]
    return (pairs, arrays[-1] if term is not None else None), iterations
