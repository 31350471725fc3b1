"""ECLipsE, ECLipsE-Fast (Xu & Sivaranjani, NeurIPS 2024) and ECLipsE-Gen-Local (TMLR 2026):
compositional ℓ2 Lipschitz bounds, one small problem per layer, from the ``eclipse-nn`` package
(``pip install 'lipopt[eclipse]'``).

All three bound the ℓ2 constant of the scalar network ``cᵀ f`` (``||∇(cᵀf)||_2``) through the
layer recursion of :mod:`lipopt.estimators.eclipse_chain`; they differ in the multipliers ``λ``
of each layer and in the slopes:

* ``eclipse``: per layer, the package's SDP (``eclipse_nn.eclipsE.sdp``, SCS at eps 1e-6)
  chooses diagonal ``λ`` for ReLU's global slopes ``[0, 1]``. A **global** bound, so also an
  upper bound of the local constant on any domain.
* ``eclipse-fast``: ECLipsE-Fast's closed form ``λ = 2 / λ_max(W_i M⁻¹ W_iᵀ)``; global.
* ``eclipse-local``: ECLipsE-Gen-Local over an ℓ2 ball ``||x - x₀||_2 <= ε``: each neuron's
  pre-activation range is ``z_j(x₀) ± ε sqrt(w_j M⁻¹ w_jᵀ)``, a neuron of known sign gets its
  exact slope, and ``eclipse_nn.utils.find_good_lambdas`` chooses ``λ`` (``algo`` ``Fast``: one
  scalar by an SDP, the package's default; ``Acc``: diagonal; ``CF``: closed form with the
  slopes widened to ``[0, β]``). A layer whose neurons all keep their sign is merged into the
  next, as the package does.

**Proven, not the solver's word.** Whatever multipliers the package returns, lipopt keeps them
only where its own numpy check certifies the layer (:func:`~lipopt.estimators.eclipse_chain.
step`); otherwise the layer takes the closed form (ECLipsE-Fast's for ``eclipse``, CF for
``eclipse-local``), whose step always certifies. So every value is an upper bound of the ℓ2
constant up to float64 rounding, with margins; ``detail["fallback_layers"]`` counts the layers
that fell back. SCS's multipliers, certified, can still be poor (on the bundled
synthetic-2x20x40x20x2 network ECLipsE's chain gave 1179, ECLipsE-Fast's 629), so as the
package falls back to ECLipsE-Fast when it rejects a layer, ``eclipse`` reports the smaller of
its chain and ECLipsE-Fast's (``detail["sdp_value"]``, ``detail["fast_value"]``), and
``eclipse-local`` with ``Fast``/``Acc`` the smaller of that chain and CF's
(``detail["algo_value"]``, ``detail["cf_value"]``): each is certified, so the smaller is too,
and neither is ever above the package's own answer.

Two places where this differs from the package 0.1.7 as shipped (both measured, see
docs/estimators.md): its ECLipsE rejects a layer whose solver matrix has an eigenvalue below
−1e-8 (SCS at 1e-6 often leaves −1e-6) and then reruns the whole network as ECLipsE-Fast
(``detail["package_accepts"]`` says whether it would have kept every layer); and its
Gen-Local accepts Acc/Fast answers only when cvxpy's status contains ``"Solved"``, which
cvxpy's ``"optimal"`` never does, so it always falls back to CF (``detail["package_status"]``).

Scope: the ℓ2 input norm only (their theorem is ℓ2 → ℓ2); ``eclipse-local`` takes ℓ2 balls
only. The network is lipopt's ``Affine (ReLU Affine)*``; a convolution is its affine matrix.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lipopt.domain import Domain, L2Ball
from lipopt.estimators import eclipse_chain as chain
from lipopt.estimators.base import (
    Estimate,
    EstimatorFailed,
    EstimatorOutOfScope,
    EstimatorUnavailable,
    FloatArray,
    Kind,
    problem,
    runs_lowered,
    stopwatch,
)
from lipopt.network import Network
from lipopt.norms import InputNorm

KIND = Kind.UPPER
INSTALL_HINT = "pip install 'lipopt[eclipse]'"
ALGOS = ("Fast", "Acc", "CF")


def _package(name: str) -> Any:
    """The ``eclipse_nn`` package, or :class:`EstimatorUnavailable` naming the extra."""
    try:
        import eclipse_nn
    except ImportError:
        raise EstimatorUnavailable(f"{name} needs the eclipse-nn package: {INSTALL_HINT}") from None
    return eclipse_nn


def _no_options(options: dict[str, Any]) -> None:
    if options:
        raise ValueError(f"ECLipsE takes no option(s) {', '.join(sorted(options))}")


def _weights(
    network: Network, domain: Domain, norm: InputNorm | str, c: ArrayLike | None, name: str
) -> list[FloatArray]:
    """The scalar network's weights ``W_1, ..., c^T W_L``; the ℓ2 input norm only."""
    prob = problem(network, domain, norm, c, norms=(InputNorm.L2,), method=name)
    return [np.asarray(w, dtype=np.float64) for w in prob.scalar_weights()]


def _certified(m: FloatArray | None, layer: int, name: str) -> FloatArray:
    if m is None:
        raise EstimatorFailed(f"{name}: layer {layer}'s closed-form multipliers did not certify")
    return m


def _sdp_layer(
    eclipse_nn: Any, m: FloatArray, w: FloatArray, w_next: FloatArray
) -> tuple[FloatArray | None, bool]:
    """ECLipsE's SDP for one layer: ``λ`` (None if the solver gave none) and whether the
    package's own check (``s >= 1e-20``, ``λ >= 0``, solver matrix ⪰ −1e-8) accepts it."""
    k = 0.25 * w @ np.linalg.solve(m, w.T)
    k = 0.5 * (k + k.T) + 1e-10 * np.eye(w.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        s, lam, schur, _status = eclipse_nn.eclipsE.sdp(w.shape[0], w_next, k)
    if s is None or lam is None:
        return None, False
    diag = np.diag(np.asarray(lam, dtype=np.float64)).copy()
    lowest = float(np.linalg.eigvalsh(np.asarray(schur, dtype=np.float64)).min())
    return diag, bool(s >= 1e-20 and np.all(diag >= 0) and lowest >= -1e-8)


def _global(weights: list[FloatArray], eclipse_nn: Any | None) -> tuple[float, dict[str, Any]]:
    """ECLipsE (``eclipse_nn`` given: the package's SDP per layer) or ECLipsE-Fast (None)."""
    m = np.eye(weights[0].shape[1])
    fallback, accepts = 0, True
    for i, w in enumerate(weights[:-1]):
        zero, one = np.zeros(w.shape[0]), np.ones(w.shape[0])
        new = None
        if eclipse_nn is not None:
            lam, ok = _sdp_layer(eclipse_nn, m, w, weights[i + 1])
            accepts = accepts and ok
            new = None if lam is None else chain.repaired_step(m, w, lam, zero, one)
            fallback += new is None
        if new is None:
            new = chain.step(m, w, chain.fast_multipliers(m, w, zero, one), zero, one)
        m = _certified(new, i + 1, "ECLipsE")
    value = chain.final_bound(m, weights[-1])
    if value is None:
        raise EstimatorFailed("ECLipsE: the last layer's bound did not certify")
    detail: dict[str, Any] = {"certified": True}
    if eclipse_nn is not None:  # as the package falls back to ECLipsE-Fast: the better of both
        fast, _ = _global(weights, None)
        detail.update(fallback_layers=fallback, package_accepts=accepts, sdp_value=value,
                      fast_value=fast)  # fmt: skip
        value = min(value, fast)
    return value, detail


def _package_fast(eclipse_nn: Any, weights: list[FloatArray]) -> float:
    """``eclipse_nn.ECLipsE_Fast`` on the same weights (torch tensors, slopes [0, 1])."""
    import torch

    hidden = len(weights) - 1
    tensors = [torch.tensor(np.array(w)) for w in weights]
    return float(eclipse_nn.ECLipsE_Fast(tensors, [0.0] * hidden, [1.0] * hidden))


def _estimate_global(
    network: Network, domain: Domain, norm: InputNorm | str, c: ArrayLike | None, fast: bool
) -> Estimate:
    name = "eclipse-fast" if fast else "eclipse"
    title = "ECLipsE-Fast" if fast else "ECLipsE"
    eclipse_nn = _package(title)
    detail: dict[str, Any]
    with stopwatch() as elapsed:
        weights = _weights(network, domain, norm, c, title)
        if len(weights) == 1:
            value, detail = float(np.linalg.norm(weights[0])), {"certified": True, "affine": True}
        else:
            value, detail = _global(weights, None if fast else eclipse_nn)
        if fast and len(weights) > 1:  # the package's own closed form, for the record
            detail["package_value"] = _package_fast(eclipse_nn, weights)
    return Estimate(name, value, KIND, elapsed[0], {**detail, "scope": "global"})


@runs_lowered
def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.L2,
    c: ArrayLike | None = None,
    **options: Any,
) -> Estimate:
    """ECLipsE's global ℓ2 bound on ``||∇(cᵀf)||_2`` (the package's SDP per layer, certified
    in numpy; a layer it does not certify takes ECLipsE-Fast's multipliers)."""
    _no_options(options)
    return _estimate_global(network, domain, norm, c, fast=False)


@runs_lowered
def estimate_fast(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.L2,
    c: ArrayLike | None = None,
    **options: Any,
) -> Estimate:
    """ECLipsE-Fast's global ℓ2 bound (closed form; ``detail["package_value"]`` is the
    package's own ``ECLipsE_Fast``)."""
    _no_options(options)
    return _estimate_global(network, domain, norm, c, fast=True)


def _slopes(lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """ReLU's slope range on ``[lo, hi]`` (the package's ``actv_slope_range``)."""
    return (lo >= 0).astype(np.float64), (hi > 0).astype(np.float64)


def _local_layer(
    fgl: Any,
    m: FloatArray,
    w: FloatArray,
    w_next: FloatArray,
    slopes: tuple[FloatArray, FloatArray],
    algo: str,
) -> tuple[FloatArray | None, str]:
    """One Gen-Local layer: ``M_i`` from the package's multipliers for ``algo`` if they
    certify, else from CF's (slopes ``[0, β]``); and what was used, with the package's status."""
    alpha, beta = slopes
    if algo != "CF":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            lam, _ci, status, x_prev, _m = fgl(w, w_next, m, alpha, beta, algo)
        if x_prev is not None:
            new = chain.repaired_step(m, w, np.diag(lam), alpha, beta)
            if new is not None:
                return new, f"{algo} (package: {status})"
        how = f"CF (fallback; package: {status})"
    else:
        how = "CF"
    zero = np.zeros_like(alpha)
    lam, _ci, status, _x, _m = fgl(w, w_next, m, zero, beta, "CF")
    return chain.step(m, w, np.diag(lam), zero, beta), how


def _gen_local(
    network: Network, weights: list[FloatArray], ball: L2Ball, algo: str, fgl: Any
) -> tuple[float, dict[str, Any]]:
    """The Gen-Local recursion over the ball; the value and per-layer facts."""
    m, prefix = np.eye(ball.dim), np.eye(ball.dim)
    h = np.asarray(ball.center, dtype=np.float64)
    used: list[str] = []
    for i, layer in enumerate(network.affine_layers[:-1]):
        w = weights[i] @ prefix
        z = weights[i] @ h + layer.bias
        reach = ball.radius * chain.neuron_bounds(m, w)
        alpha, beta = _slopes(z - reach, z + reach)
        h = np.maximum(z, 0.0)
        if np.array_equal(alpha, beta):  # every neuron keeps its sign: merged into the next
            prefix, used = alpha[:, None] * w, [*used, "merged"]
            continue
        new, how = _local_layer(fgl, m, w, weights[i + 1], (alpha, beta), algo)
        m, prefix, used = (
            _certified(new, i + 1, "ECLipsE-Gen-Local"),
            np.eye(w.shape[0]),
            [*used, how],
        )
    last = weights[-1] @ prefix
    if not np.any(last):
        return 0.0, {"layers": used}
    value = chain.final_bound(m, last)
    if value is None:
        raise EstimatorFailed("ECLipsE-Gen-Local: the last layer's bound did not certify")
    return value, {"layers": used}


@runs_lowered
def estimate_local(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.L2,
    c: ArrayLike | None = None,
    *,
    algo: str = "Fast",
    **options: Any,
) -> Estimate:
    """ECLipsE-Gen-Local's ℓ2 bound on ``max ||∇(cᵀf)||_2`` over an ℓ2 ball.

    Args:
        algo: ``"Fast"`` (the package's default), ``"Acc"`` or ``"CF"``.
    """
    _no_options(options)
    if algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
    _package("ECLipsE-Gen-Local")
    from eclipse_nn.utils.find_good_lambdas import find_good_lambdas

    with stopwatch() as elapsed:
        weights = _weights(network, domain, norm, c, "ECLipsE-Gen-Local")
        if not isinstance(domain, L2Ball):
            raise EstimatorOutOfScope(
                f"ECLipsE-Gen-Local takes an l2 ball (--ball l2), not a {type(domain).__name__}"
            )
        value, detail = _gen_local(network, weights, domain, algo, find_good_lambdas)
        if algo != "CF":  # the package's own answer is CF's (module docs): the better of both
            cf, _ = _gen_local(network, weights, domain, "CF", find_good_lambdas)
            detail.update(algo_value=value, cf_value=cf)
            value = min(value, cf)
    facts = {**detail, "algo": algo, "certified": True, "scope": "local"}
    return Estimate("eclipse-local", value, KIND, elapsed[0], facts)
