"""Witnesses: points where the objective is attained, each checked in numpy.

A witness's value is the objective recomputed at a differentiable point of the domain, so it is
attained: a lower bound on the constant. ``certified_pattern``: the point lies in a
full-dimensional linear region (checked by the margin LP, :func:`lipopt.verify.check_region`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import Seed
from lipopt.bracket import closed
from lipopt.domain import Domain
from lipopt.kinks import is_differentiable_at
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm, dual_norm, operator_value
from lipopt.verify import Dimension, check_region

FloatArray = NDArray[np.float64]


@dataclass
class Witness:
    """A point, the objective attained there, and whether its region is full-dimensional."""

    point: FloatArray
    norm_value: float
    certified_pattern: bool


def value_at(
    network: Network, point: FloatArray, seed: Seed, norm: InputNorm, hint: FloatArray | None = None
) -> float:
    """The objective attained at a differentiable point: ``||∇(c^T f)||_{α*}`` for a vector c,
    ``max_{w ∈ B_β*} ||J^T w||_{α*}`` for an output norm β (``hint``: the solver's w)."""
    if isinstance(seed, OutputNorm):
        return operator_value(network.jacobian_at(point), norm, seed, hint)
    return float(dual_norm(network.gradients(point, seed), norm))


def below(value: float) -> float:
    """A cutoff just below an attained value: the solver's tolerances cannot cut it off."""
    return value - 1e-6 * max(1.0, abs(value))


def attains(upper: float, witness: Witness | None) -> bool:
    """The one certification rule: a witness in a full-dimensional region (margin LP) attains
    ``upper``, so ``upper`` is the constant, for any network. Each strategy adds its own
    condition that ``upper`` is proven optimal (a finished solve, a complete search)."""
    return witness is not None and witness.certified_pattern and closed(upper, witness.norm_value)


def best_witness(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm,
    candidates: list[FloatArray],
    rng: np.random.Generator,
    fallback: bool = True,
    deadline: float | None = None,
) -> Witness | None:
    """The best verified point among candidates: each candidate's own numpy pattern is checked
    to be full-dimensional, and its deepest point is used (a differentiable point). With
    ``fallback``, random points of the domain are tried when no candidate qualifies. Past
    ``deadline`` (``time.perf_counter()`` seconds) the margin LPs stop and candidates count only
    where differentiable, uncertified."""
    best: Witness | None = None
    for x in candidates:
        pattern = network.activation_pattern(x)
        left = None if deadline is None else deadline - time.perf_counter()
        check = check_region(network, pattern, domain, left)
        full = check.dimension is Dimension.FULL and check.point is not None
        if full and check.point is not None:  # (full says so: the test narrows for mypy)
            point = check.point
        elif is_differentiable_at(network, x) and domain.contains(x, tol=0.0):
            point = x
        else:
            continue
        value = value_at(network, point, seed, norm)
        if best is None or value > best.norm_value:
            best = Witness(point, value, full)
    if best is None and fallback:  # random points are differentiable with probability one
        best = best_differentiable(network, seed, norm, list(domain.sample(64, rng)))
    return best


def best_differentiable(
    network: Network, seed: Seed, norm: InputNorm, points: list[FloatArray]
) -> Witness | None:
    """The best of ``points`` where the network is differentiable, uncertified (no margin
    LP): the value there is attained."""
    best: Witness | None = None
    for point in points:
        if is_differentiable_at(network, point):
            value = value_at(network, point, seed, norm)
            if best is None or value > best.norm_value:
                best = Witness(np.asarray(point, dtype=np.float64), value, False)
    return best
