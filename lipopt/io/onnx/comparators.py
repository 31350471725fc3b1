"""Maxima, minima and sorting of the entries of a flat input-dependent vector, as activation
layers of the per-neuron two-piece kind (``h = α z + (1 - α) relu(z)``).

One comparison of ``a`` and ``b`` costs one kinked neuron ``d = relu(a - b)``:

    max(a, b) = b + d,    min(a, b) = a - d,

and the operand read back (``b`` or ``a``) passes the layer as a *carry* neuron: an identity
(``α = 1``, never a binary) for a value of any sign; a ReLU neuron (``α = 0``, stable: its lower
bound is 0) where the vector is known to be non-negative (a Relu's output, so a ReLU network
stays one). A comparator of a sorting network computes both from its one ``d``. Within a layer
equal neurons are made once (a carry read by two comparisons, ``d`` by max and min), unless
``share`` is off (the ReLU encoding of max-pooling kept neuron for neuron as it was).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from lipopt.io.onnx.symbolic import Symbolic, through_activation

Terms = tuple[tuple[int, float], ...]
"""A linear form as ``(index, weight)`` pairs: of the input entries, or of the neurons."""


class _Layer:
    """One activation layer being built over the entries of ``value`` (flat)."""

    def __init__(self, value: Symbolic, carry_slope: float, share: bool) -> None:
        self.value, self.carry_slope, self.share = value, carry_slope, share
        self.rows: list[Terms] = []
        self.slopes: list[float] = []
        self.known: dict[tuple[Terms, float], int] = {}
        self.outputs: list[Terms] = []
        self.offsets: list[float] = []
        self.constant = np.zeros(value.offset.size, dtype=bool)
        if share:  # entries that do not depend on the input need no carry neuron
            used = abs(value.flat_linear()).sum(axis=0)
            self.constant = np.asarray(used).reshape(-1) == 0.0

    def neuron(self, terms: Terms, slope: float) -> int:
        """The index of the neuron ``act(Σ w x_i)`` with slope ``slope`` (made once if shared)."""
        key = (terms, slope)
        if self.share and key in self.known:
            return self.known[key]
        self.rows.append(terms)
        self.slopes.append(slope)
        self.known[key] = len(self.rows) - 1
        return len(self.rows) - 1

    def carry(self, entry: int) -> tuple[Terms, float]:
        """Entry ``entry`` read back after the layer: a carry neuron, or its constant value."""
        if self.constant[entry]:
            return (), float(self.value.offset.reshape(-1)[entry])
        return ((self.neuron(((entry, 1.0),), self.carry_slope), 1.0),), 0.0

    def emit(self, terms: Terms, offset: float) -> int:
        """A new output entry ``Σ w h_j + offset``; returns its index."""
        self.outputs.append(terms)
        self.offsets.append(offset)
        return len(self.outputs) - 1

    def carried(self, entry: int) -> int:
        return self.emit(*self.carry(entry))

    def compare(self, a: int, b: int, largest: bool) -> int:
        """``max(a, b) = b + relu(a - b)`` or ``min(a, b) = a - relu(a - b)`` as an output."""
        terms, offset = self.carry(b if largest else a)
        difference = self.neuron(((a, 1.0), (b, -1.0)), 0.0)
        return self.emit((*terms, (difference, 1.0 if largest else -1.0)), offset)

    def apply(self) -> Symbolic:
        """The flat vector of the outputs, through the layer."""
        value = self.value
        rows, cols, weights = _coo([(i, row) for i, row in enumerate(self.rows)])
        pre = sparse.csr_array((weights, (rows, cols)), shape=(len(self.rows), value.offset.size))
        sums, parts, mix = _coo(list(enumerate(self.outputs)))
        post = sparse.csr_array((mix, (sums, parts)), shape=(len(self.outputs), len(self.rows)))
        slopes = np.array(self.slopes)
        alpha = slopes if np.any(slopes) else None
        return through_activation(value, (pre, np.zeros(len(self.rows))), alpha,
                                  (post, np.array(self.offsets)), (len(self.outputs),))  # fmt: skip


def _coo(forms: list[tuple[int, Terms]]) -> tuple[list[int], list[int], list[float]]:
    rows = [row for row, terms in forms for _ in terms]
    cols = [col for _, terms in forms for col, _ in terms]
    weights = [weight for _, terms in forms for _, weight in terms]
    return rows, cols, weights


def extremes(
    value: Symbolic, cells: Sequence[Sequence[int]], largest: bool, nonnegative: bool = False
) -> Symbolic:
    """The flat vector of ``max`` (``largest``) or ``min`` of ``value``'s entries over each cell
    (lists of flat indices), by pairwise comparisons: ``ceil(log2 |cell|)`` layers, one kinked
    neuron per comparison; an odd member is carried. ``nonnegative``: ``value >= 0`` on every
    input (a Relu's output), carried by ReLU neurons, each neuron made as it comes (module
    docstring)."""
    current = value.reshaped((value.offset.size,), batched=False)
    members = [list(cell) for cell in cells]
    while any(len(cell) > 1 for cell in members):
        layer = _Layer(current, 0.0 if nonnegative else 1.0, share=not nonnegative)
        following = []
        for cell in members:
            pairs = [cell[start : start + 2] for start in range(0, len(cell), 2)]
            following.append([
                layer.compare(pair[0], pair[1], largest) if len(pair) == 2
                else layer.carried(pair[0]) for pair in pairs
            ])  # fmt: skip
        current, members = layer.apply(), following
    return current.select(np.array([cell[0] for cell in members]), batched=False)


def merge_exchange(size: int) -> list[list[tuple[int, int]]]:
    """Batcher's merge-exchange sorting network for ``size`` entries (Knuth, TAOCP vol. 3,
    5.2.2, Algorithm M), as passes of disjoint comparators ``(i, j)``, ``i < j``: after all,
    ``x_i <= x_j`` for every ``i < j``. Its comparators number 1, 3, 5, 9, 12, 16, 19 for sizes
    2 to 8 (optimal up to 4)."""
    passes: list[list[tuple[int, int]]] = []
    if size < 2:
        return passes
    top = 1 << (int(size - 1).bit_length() - 1)
    p = top
    while p > 0:
        q, r, d = top, 0, p
        while True:
            passes.append([(i, i + d) for i in range(size - d) if i & p == r])
            if q == p:
                break
            d, q, r = q - p, q // 2, p
        p //= 2
    return [step for step in passes if step]


def sorted_groups(value: Symbolic, groups: NDArray[np.integer]) -> Symbolic:
    """``value`` (flat) with the entries of each row of ``groups`` (flat indices, all rows of
    one length) sorted ascending along the row, by :func:`merge_exchange`: a layer per pass,
    one kinked neuron per comparator (``relu(a - b)``, giving both ``max`` and ``min``), every
    other entry carried by an identity."""
    current = value.reshaped((value.offset.size,), batched=False)
    for step in merge_exchange(groups.shape[1]):
        partner: dict[int, tuple[int, bool]] = {}
        for low, high in step:
            for a, b in zip(groups[:, low], groups[:, high]):
                partner[int(a)] = (int(b), False)  # the lower place takes the minimum
                partner[int(b)] = (int(a), True)
        layer = _Layer(current, 1.0, share=True)
        for entry in range(current.offset.size):
            if entry not in partner:
                layer.carried(entry)
                continue
            other, largest = partner[entry]
            first, second = (other, entry) if largest else (entry, other)
            layer.compare(first, second, largest)
        current = layer.apply()
    return current
