"""The sign-group bound of a sub-domain from a shortlist of sign vectors its parent passed on,
instead of every sign vector of every group.

:func:`~lipopt.bounds.sign_groups.sign_group_bound` takes, for each group ``G`` of gradient
entries, ``max_σ B(σ)`` over all ``2^|G|`` sign vectors (2048 rows for 64 entries in groups of
8). In a branch and bound the sub-domain ``D_S`` of a child lies in its parent's, and the
parent's bounds hold there too. A :class:`SignShortlist` keeps, per group, the ``kept`` sign
vectors with the largest bounds (their rows and bounds ``B_P(σ)``) and ``rest_G``, a bound on
``B_P(σ)`` of every other sign vector of the group. The child computes ``B_C(σ)`` on its own
bounds for the shortlisted rows only, and takes

    M_G = max( max_{σ in S_G} min(B_C(σ), B_P(σ)),  rest_G ).

**Soundness.** For every ``x`` in ``D_S`` and ``σ`` in ``S_G``, both ``B_C(σ)`` and ``B_P(σ)``
are at least ``σᵀ g_G(x)``: each is its back-substitution bound over a set of bounds that holds
on ``D_S`` (the parent's domain holds the child's). For ``σ`` outside ``S_G``,
``σᵀ g_G(x) <= B_P(σ) <= rest_G``. So ``M_G >= max_σ σᵀ g_G(x) = ||g_G(x)||_1`` and
``Σ_G max(M_G, 0) >= max_x ||g(x)||_1``, rounded up as the full bound is. ``rest_G`` passes to
the grandchildren unchanged when it is kept: it still bounds every sign vector outside ``S_G``
over their (smaller) domains.

**Cost.** Where the shortlist's best value falls below ``rest_G``, the bound of every sign
vector outside the list might be larger, so that group is computed in full on the child's bounds
(its new list: its own largest ``kept``; ``rest_G``: the next largest). Otherwise ``M_G`` is the
shortlist's best, and equals the full bound wherever ``B_C <= B_P`` (tighter bounds, tighter
relaxation). On the digits networks at 0.1, over 300 nodes, a group's best sign vector was its
parent's best in at least half the groups, and within the parent's 16 best in 98.8-99.9 %
(``docs/performance.md``): a child bounds ``kept`` rows per group, and the whole group (``2^|G|``
rows) where the list falls short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.bounds.jacobian import slope_problem
from lipopt.bounds.sign_groups import group_best, ordered_rows, rounded_sum, row_bounds
from lipopt.network import Network
from lipopt.norms import InputNorm

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: the sign vectors a parent passes on per group: 16 held the best one of 98.8-99.9 % of the
#: groups of the digits networks' children (module docstring)
KEPT_ROWS = 16


@dataclass(frozen=True)
class SignShortlist:
    """Per group ``G``: the shortlisted rows (``index``, into the search's
    :func:`~lipopt.bounds.sign_groups.ordered_rows`), upper bounds ``values`` of their
    ``σᵀ g_G`` over the sub-domain that holds the list, and ``rest[G]`` >= that of every other
    sign vector of the group (``-inf``: every sign vector of the group is listed)."""

    index: IntArray
    values: FloatArray
    rest: FloatArray


def _listed(
    index: IntArray, values: FloatArray, owners: IntArray, groups: int, kept: int
) -> SignShortlist:
    """The ``kept`` largest of each group's rows ``index`` (bounds ``values``) and, per group,
    the largest of the others (``-inf`` where none is left)."""
    order = np.lexsort((-values, owners[index]))
    index, values = index[order], values[order]
    group_of = owners[index]
    first = np.searchsorted(group_of, np.arange(groups))
    rank = np.arange(index.size) - first[group_of]
    rest = np.full(groups, -np.inf)
    dropped = rank == kept  # each group's largest row past the list
    rest[group_of[dropped]] = values[dropped]
    keep = rank < kept
    return SignShortlist(index[keep], values[keep], rest)


def _merged(parts: Sequence[SignShortlist], groups: int) -> SignShortlist:
    """One shortlist of the disjoint groups of ``parts``."""
    rest = np.full(groups, -np.inf)
    for part in parts:
        listed = part.rest > -np.inf
        rest[listed] = part.rest[listed]
    index = np.concatenate([part.index for part in parts])
    values = np.concatenate([part.values for part in parts])
    return SignShortlist(index, values, rest)


def shortlist_bound(
    network: Network,
    bounds: NetworkBounds,
    seed: Seed,
    grouping: tuple[int, Sequence[int] | IntArray | None],
    listed: SignShortlist | None,
    kept: int | None = None,
) -> tuple[float, SignShortlist]:
    """``Σ_G max(M_G, 0)`` (module docstring) over the groups ``grouping = (size, order)`` of
    :func:`~lipopt.bounds.sign_groups.sign_group_bound`, from the parent's shortlist ``listed``
    (None: every sign vector, the full bound), and the shortlist this sub-domain passes on.
    A certified upper bound on ``max ||∇(c^T f)||_1`` over the domain of ``bounds``; ``kept``:
    the sign vectors listed per group (None: :data:`KEPT_ROWS`)."""
    kept = KEPT_ROWS if kept is None else kept
    problem = slope_problem(network, bounds, seed, InputNorm.L1)
    rows, owners = ordered_rows(problem.g_low.shape[0], grouping[0], grouping[1], keep=True)
    groups = int(owners[-1]) + 1
    if listed is None:
        values = row_bounds(problem, rows)
        best = group_best(values, owners, groups)
        every = np.arange(rows.shape[0])
        return rounded_sum(np.maximum(best, 0.0)), _listed(every, values, owners, groups, kept)
    values = np.minimum(row_bounds(problem, rows[listed.index]), listed.values)
    best = group_best(values, owners[listed.index], groups)
    redo = best < listed.rest  # a sign vector off the list may bound the group higher
    still = ~redo[owners[listed.index]]
    rest = np.where(redo, -np.inf, listed.rest)
    parts = [SignShortlist(listed.index[still], values[still], rest)]
    if redo.any():
        every = np.nonzero(redo[owners])[0]
        full = row_bounds(problem, rows[every])
        best[redo] = group_best(full, owners[every], groups)[redo]
        parts.append(_listed(every, full, owners, groups, kept))
    return rounded_sum(np.maximum(best, 0.0)), _merged(parts, groups)


__all__ = ["KEPT_ROWS", "SignShortlist", "shortlist_bound"]
