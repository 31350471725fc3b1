"""The rules of the activation branch and bound (:mod:`lipopt.search.activation_bab`): which
neuron to split, which questions it answers exactly, a fixed pattern's value, and the polytope
that holds a node whose first layers are stable.

**The polytope.** When every neuron of hidden layers ``< p`` is stable on ``D_S``, every point of
``D_S`` has their pattern (or sits on a kink), and on that pattern's region each ``z_{p,i}`` is
affine in ``x``; so ``D_S`` lies in the closure of the polyhedron cut out by that pattern and by
the signs split at layer ``p``. If the margin LP finds that polyhedron meets the interior of ``D``
in no full-dimensional set, no interior point of ``D_S`` lies in an open linear region, and the
node contributes nothing to the constant (docs/encoding.md §11).

**Activation kinds.** On a pattern ``σ`` each hidden neuron is ``h = D z`` with
``D = α + (1 - α) σ`` (``α z`` on an inactive neuron); an identity neuron (``α = 1``) has no
kink, so it is never split and gives no row (:mod:`lipopt.search.kinds`): the states read here
have it ACTIVE.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.constrained import Neuron
from lipopt.bounds.interval import NetworkBounds, NeuronState, Seed
from lipopt.domain import (
    Box,
    Domain,
    Intersection,
    L1Ball,
    L2Ball,
    LinfBall,
    Polytope,
    ball_part,
)
from lipopt.network import Affine, Network
from lipopt.norms import MAX_SIGN_INPUTS, InputNorm, OutputNorm, dual_norm, operator_value
from lipopt.query import Query

FloatArray = NDArray[np.float64]
Splits = Mapping[Neuron, bool]

#: branching rules: ``score`` = the largest ``min(-l, u) · max(|ly|, |uy|)`` anywhere;
#: ``layer`` = the earliest layer holding an unstable neuron, the largest score in it;
#: ``auto`` = one of the two, by the root's unstable count (:func:`resolved_branching`)
BRANCHING = ("score", "layer", "auto")


def check_supported(network: Network, domain: Domain, seed: Seed, norm: InputNorm) -> None:
    """Refuse, in one line, a domain or an output norm whose leaf value is not exact here."""
    if not isinstance(domain, (Box, LinfBall, L1Ball, L2Ball, Polytope, Intersection)):
        raise ValueError(f"activation branch and bound: unsupported domain {type(domain).__name__}")
    if not isinstance(seed, OutputNorm):
        return
    m, d = network.output_dim, network.input_dim
    if seed is OutputNorm.L2:
        if norm is InputNorm.LINF and d > MAX_SIGN_INPUTS:
            raise ValueError(
                f"activation branch and bound: l2 output with l-inf input needs <= "
                f"{MAX_SIGN_INPUTS} inputs, not {d}"
            )
    elif seed.vertices(m) is None and not (norm is InputNorm.L1 and seed is OutputNorm.L1):
        raise ValueError(f"activation branch and bound: output norm {seed.value} on {m} outputs")


def supports_parts(query: Query) -> bool:
    """Whether the MIP on a part (:mod:`lipopt.strategies.bab_parts`) is built for the query:
    a fixed c, the ℓ∞ or ℓ1 input norm, a box, an ℓ∞/ℓ1 ball or a polytope (∩ an ℓ1 ball)."""
    return (
        query.fixed_c
        and query.norm in (InputNorm.LINF, InputNorm.L1)
        and isinstance(query.domain, (Box, LinfBall, L1Ball, Polytope))
        or isinstance(ball_part(query.domain), L1Ball)
        and isinstance(query.domain, Intersection)
        and query.fixed_c
        and query.norm in (InputNorm.LINF, InputNorm.L1)
    )


def pattern_value(
    network: Network, pattern: list[FloatArray], seed: Seed, norm: InputNorm
) -> float:
    """``||J_p^T c||_{α*}`` (or ``max_{w ∈ B*} ||J_p^T w||_{α*}``) of one activation pattern."""
    if isinstance(seed, OutputNorm):
        return operator_value(network.jacobian_from_pattern(pattern), norm, seed)
    grad = network.pattern_gradients([p[None, :] for p in pattern], seed, 1)
    return float(dual_norm(grad[0], norm))


def resolved_branching(rule: str, score_from: int, root_unstable: int) -> str:
    """The rule a search uses: ``auto`` is ``score`` from ``score_from`` unstable neurons at
    the root on (where the search stops on its time limit, splitting the neuron whose
    relaxation costs the bound most lowers it fastest), else ``layer`` (stable first layers
    let the margin LP drop empty parts, which closes small searches sooner)."""
    if rule != "auto":
        return rule
    return "score" if root_unstable >= score_from else "layer"


def branch_neuron(
    bounds: NetworkBounds, rule: str, slopes: Sequence[FloatArray] | None = None
) -> Neuron:
    """The unstable neuron to split: the largest ``min(-l, u) · max(|ly|, |uy|)`` (ties and
    zero scores by the width ``min(-l, u)``), anywhere (``score``) or in the earliest layer
    with an unstable neuron (``layer``); never an identity neuron of ``slopes`` (by default
    the bounds' own)."""
    best: tuple[float, float] = (-1.0, -1.0)
    chosen: Neuron | None = None
    slopes = slopes if slopes is not None else bounds.slopes
    for k, state in enumerate(bounds.states):
        kinked = state == NeuronState.UNSTABLE
        if slopes is not None:
            kinked &= slopes[k] != 1.0
        unstable = np.flatnonzero(kinked)
        if not unstable.size:
            continue
        width = np.minimum(-bounds.pre_lower[k], bounds.pre_upper[k])[unstable]
        reach = np.maximum(np.abs(bounds.grad_lower[k]), np.abs(bounds.grad_upper[k]))[unstable]
        keys = list(zip(width * reach, width, strict=True))
        j = max(range(len(keys)), key=keys.__getitem__)
        if keys[j] > best:
            best, chosen = keys[j], (k, int(unstable[j]))
        if rule == "layer":
            break
    if chosen is None:
        raise ValueError("no unstable neuron to branch on")
    return chosen


def linear_part(
    network: Network, states: Sequence[NDArray[np.int8]], splits: Splits, checked: int
) -> tuple[Network, list[FloatArray]] | None:
    """With hidden layers ``< p`` all stable (``p`` the first with an unstable neuron), every
    ``z_{p,i}`` is affine on their pattern's region, so ``D_S`` lies in the polytope of that
    pattern and of the signs split at layer ``p``. Returns the network of layers ``< p`` and
    layer ``p``'s split rows (zero output) and that pattern, for the margin LP
    (:func:`lipopt.verify.check_region`); None when it fixes no more than ``checked`` neurons
    (checked before) or nothing at all. The states have identity neurons ACTIVE
    (:func:`lipopt.search.kinds.identity_active`); the sub-network keeps the slopes."""
    p = next(k for k, s in enumerate(states) if np.any(s == NeuronState.UNSTABLE))
    rows = sorted((i, active) for (k, i), active in splits.items() if k == p)
    if sum(network.hidden_widths[:p]) + len(rows) <= checked:
        return None
    pattern = [(s == NeuronState.ACTIVE).astype(np.float64) for s in states[:p]]
    affines = list(network.affine_layers[:p])
    slopes = list(network.slopes[:p])
    width = network.input_dim if p == 0 else network.hidden_widths[p - 1]
    if rows:
        index = [i for i, _ in rows]
        layer = network.affine_layers[p]
        affines.append(Affine(layer.weight[index], layer.bias[index]))
        slopes.append(network.slopes[p][index])
        pattern.append(np.array([1.0 if active else 0.0 for _, active in rows]))
        width = len(rows)
    if not pattern:
        return None
    affines.append(Affine(np.zeros((1, width)), np.zeros(1)))
    part = Network.from_affines(affines, None if network.is_relu else slopes)
    return part, pattern


__all__ = [
    "BRANCHING", "branch_neuron", "check_supported", "linear_part", "pattern_value",
    "resolved_branching",
    "supports_parts",
]  # fmt: skip
