"""A bound on ``max_x ||g(x)||_1`` that fixes the signs of the gradient, a group of entries at a
time, instead of taking the chord of each ``|g_j|``.

With the ℓ∞ input norm the Jacobian-norm bound (:mod:`lipopt.bounds.jacobian`) relaxes
``||g||_1 = Σ_j |g_j|`` by the chord of ``|·|`` over each entry's range ``[l_j, u_j]``. Where the
entry's sign is open, that line lies up to ``-2 l_j u_j / (u_j - l_j)`` above ``|g_j|``, and on
trained networks those constants are most of the bound
(``benchmarks/results/bab_objective_loss.md``). This bound has no such constant.

**The bound.** Split the entries into groups ``G_1, ..., G_m`` of at most ``size`` entries:
consecutive runs of ``order``, a permutation of the entries (default: their own order; which
order couples the entries best is chosen by :mod:`lipopt.bounds.sign_order`; any partition
gives a sound bound). For every ``x`` in the domain, ``||g(x)||_1 = Σ_G ||g_G(x)||_1`` and
``||g_G(x)||_1 = max_{σ ∈ {±1}^G} σᵀ g_G(x)``. For each sign vector ``σ`` of a group, the
back-substitution of :func:`lipopt.bounds.jacobian.back_substitute` with the objective row
``σ`` (zero off the group) gives ``B(σ) >= σᵀ g_G(x)`` at every ``x`` and every activation
pattern the bounds allow: the argument of that module for any fixed row (each relaxed switch
only grows the row's value, the seed's range is exact, and the result is rounded outward).
So ``max_σ B(σ) >= ||g_G(x)||_1`` for every ``x``, and

    Σ_G max_{σ ∈ {±1}^G} B(σ)  >=  max_x Σ_G ||g_G(x)||_1  =  max_x ||g(x)||_1.

The sum is rounded up (``(1 + 2 m ε)`` over the float sum of ``m`` non-negative terms). The
rows of all groups (``Σ_G 2^{|G|}``) go through one back-substitution, in chunks that keep each
layer's coefficient matrix under :data:`CHUNK_ENTRIES` entries. The chord lines are the ones of
the Jacobian bound; only the objective differs. A group of every entry gives ``max_σ B(σ)``,
the relaxation's own maximum of ``||g||_1``; smaller groups lose the coupling between groups but
cost ``2^size`` rows each.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.bounds.jacobian import (
    SlopeProblem,
    back_substitute,
    chord_switches,
    slope_problem,
)
from lipopt.network import Network
from lipopt.norms import InputNorm

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: the most entries (rows x widest layer) a chunk of objective rows may hold in one
#: back-substitution (32 MiB of float64 per array)
CHUNK_ENTRIES = 1 << 22


def group_rows(members: Sequence[int] | IntArray, dim: int) -> FloatArray:
    """Every sign vector of the entries ``members``, as rows of length ``dim`` (zero off
    them)."""
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(members))))
    rows = np.zeros((signs.shape[0], dim))
    rows[:, members] = signs
    return rows


def _built_rows(dim: int, size: int, order: tuple[int, ...] | None) -> tuple[FloatArray, IntArray]:
    """Every sign vector of every group (group ``k``: ``order[k size : (k + 1) size]``, the
    last may be shorter; None: the entries' own order), as rows of length ``dim``, and the
    group of each row."""
    if size < 1:
        raise ValueError(f"a sign group needs at least one entry, not {size}")
    entries = np.arange(dim) if order is None else np.asarray(order, dtype=np.int64)
    blocks: list[FloatArray] = []
    owners: list[IntArray] = []
    for group, start in enumerate(range(0, dim, size)):
        rows = group_rows(entries[start : start + size], dim)
        blocks.append(rows)
        owners.append(np.full(rows.shape[0], group, dtype=np.int64))
    return np.vstack(blocks), np.concatenate(owners)


@lru_cache(maxsize=8)
def sign_rows(dim: int, size: int) -> tuple[FloatArray, IntArray]:
    """Every sign vector of every group of ``size`` consecutive entries (the last may be
    shorter), as rows of length ``dim``, and the group of each row."""
    return _built_rows(dim, size, None)


#: the rows of the searches' chosen orders (one per query; 2: a search and the next)
_ordered_cache = lru_cache(maxsize=2)(_built_rows)


def row_bounds(problem: SlopeProblem, rows: FloatArray) -> FloatArray:
    """``B`` of each row (its own back-substitution bound), in chunks of rows."""
    widest = max([problem.g_low.shape[0], *(low.shape[0] for low in problem.low)])
    chunk = max(1, CHUNK_ENTRIES // widest)
    lines = (chord_switches(problem), None)  # one row of lines, broadcast to every row
    values = [
        back_substitute(problem, lines, objective=rows[start : start + chunk])
        for start in range(0, rows.shape[0], chunk)
    ]
    return np.concatenate(values)


def group_best(values: FloatArray, owners: IntArray, groups: int) -> FloatArray:
    """Each of ``groups`` groups' largest value (``owners``: the group of each value; ``-inf``
    where a group has none)."""
    best = np.full(groups, -np.inf)
    np.maximum.at(best, owners, values)
    return best


def group_maxima(problem: SlopeProblem, rows: FloatArray, owners: IntArray) -> FloatArray:
    """Each group's ``max(max_σ B(σ), 0)``, from its rows (``owners``: the group of each row)."""
    best = group_best(row_bounds(problem, rows), owners, int(owners[-1]) + 1)
    return np.maximum(best, 0.0)


def rounded_sum(terms: FloatArray) -> float:
    """The float sum of ``m`` non-negative terms times ``1 + 2 m ε``: at least their exact sum."""
    return float(terms.sum()) * (1.0 + 2.0 * terms.size * float(np.finfo(np.float64).eps))


def ordered_rows(
    dim: int, size: int, order: Sequence[int] | IntArray | None, keep: bool = False
) -> tuple[FloatArray, IntArray]:
    """:func:`sign_rows` with group ``k`` made of the entries ``order[k size : (k + 1) size]``
    (None: the entries' own order); ``order`` must be a permutation of ``range(dim)``.
    ``keep``: the rows are cached for the next call with the same order (a search's, whose
    every node reads them: at 784 inputs and groups of 8 they are 25 088 x 784 floats)."""
    if order is None:
        return sign_rows(dim, size)
    perm = np.asarray(order, dtype=np.int64)
    if perm.shape != (dim,) or not np.array_equal(np.sort(perm), np.arange(dim)):
        raise ValueError(f"a sign-group order must be a permutation of the {dim} entries")
    key = tuple(int(entry) for entry in perm)
    return _ordered_cache(dim, size, key) if keep else _built_rows(dim, size, key)


def sign_group_bound(
    network: Network,
    bounds: NetworkBounds,
    seed: Seed,
    size: int,
    order: Sequence[int] | IntArray | None = None,
) -> float:
    """``Σ_G max_σ B(σ)`` over groups of ``size`` entries, consecutive in ``order`` (module
    docstring): a certified upper bound on ``max ||∇(c^T f)||_1``, the ℓ∞ input norm's
    constant, over the domain of ``bounds`` (``seed``: the vector c or an output norm)."""
    problem = slope_problem(network, bounds, seed, InputNorm.L1)  # rows given here, not ±e_j
    rows, owners = ordered_rows(problem.g_low.shape[0], size, order, keep=True)
    return rounded_sum(group_maxima(problem, rows, owners))


__all__ = [
    "CHUNK_ENTRIES", "group_best", "group_maxima", "group_rows", "ordered_rows", "rounded_sum",
    "row_bounds", "sign_group_bound", "sign_rows",
]  # fmt: skip
