"""Branches that meet again (residual ``Add``, ``Concat``): two input-dependent tensors read
different layer stacks, so they are rewritten to read one stack that runs both side by side.

Say ``a`` reads ``h_A`` after the layers ``P + A`` and ``b`` reads ``h_B`` after ``P + B``,
where ``P`` is the common part (ending in an activation, or empty) with output ``h_P``. The
merged stack is ``P`` followed by layers that compute ``[h_A; h_B]``:

- the first merged layer reads ``h_P`` for both branches (the two first affine maps stacked);
  where it has non-ReLU neurons, neurons that both branches compute alike (the same row, bias
  and slope: ``max(a, b)`` and ``min(a, b)`` share ``relu(a - b)``) are kept once, and what
  read them reads the one kept;
- later layers are block diagonal, one block per branch; each merged activation layer is the
  two branches' slopes side by side (a :class:`ReLU` when both are);
- the shorter branch is padded with *carry* neurons. The output of a ReLU layer (``h >= 0``)
  is carried by ReLU neurons ``relu(h) = h``: exact and stable (its lower bound is 0; it never
  gets a binary), and a ReLU network stays one. Anything else (the raw network input of a skip
  connection, the output of a layer with other slopes, which may be negative) is carried by
  identity neurons (``α = 1``): one neuron per value, never a binary.

Only the entries of ``h`` that the shorter branch's value reads are carried.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from lipopt.io.onnx.symbolic import FloatArray, Symbolic
from lipopt.network import Activation, Affine, Layer, ReLU, as_dense

Slopes = Any  # FloatArray of one slope per neuron, or None for a ReLU layer
Step = tuple[Affine, Slopes]
"""One merged-to-be layer of a branch: its affine map and the slopes of the activation after."""


def _common_length(first: tuple[Layer, ...], second: tuple[Layer, ...]) -> int:
    """How many leading layers the two stacks share (the same affine and activation objects)."""
    count = 0
    for one, other in zip(first, second):
        if not (isinstance(one, ReLU) and isinstance(other, ReLU)) and one is not other:
            break
        count += 1
    return count - count % 2  # the common part ends after an activation


def _steps(layers: tuple[Layer, ...]) -> list[Step]:
    """``(Affine, Act)*`` as pairs of the affine map and its slopes (``None``: ReLU)."""
    steps: list[Step] = []
    for affine, act in zip(layers[0::2], layers[1::2]):
        assert isinstance(affine, Affine)
        steps.append((affine, act.alpha if isinstance(act, Activation) else None))
    return steps


def _carry_slopes(prefix: tuple[Layer, ...], width: int) -> Slopes:
    """Slopes of ``width`` carry neurons for the output of ``prefix``: ReLU (``None``) after a
    ReLU layer, else identities (the raw input, or a layer with other slopes)."""
    if prefix and isinstance(prefix[-1], ReLU):
        return None
    return np.ones(width)


def _stack(parts: list[Any], vertical: bool) -> Any:
    """Matrices stacked (vertically or side by side), sparse if any of them is."""
    if any(sparse.issparse(part) for part in parts):
        return sparse.csr_array((sparse.vstack if vertical else sparse.hstack)(parts))
    return (np.vstack if vertical else np.hstack)(parts)


def _carried(linear: Any, depth: int, prefix: tuple[Layer, ...]) -> tuple[list[Step], Any]:
    """``depth`` carry layers for the entries of ``h`` (the output of ``prefix``) that
    ``linear`` (rows: the entries of ``h``) reads, and ``linear`` restated on the carried
    outputs (module docstring: ReLU carries of ReLU outputs, identity carries of the rest)."""
    used = np.flatnonzero(np.asarray(abs(linear).sum(axis=1)).reshape(-1) > 0.0)
    if used.size == 0:
        used = np.array([0])
    pick: Any = sparse.identity(linear.shape[0], format="csr")[used]
    width = pick.shape[0]
    slopes = _carry_slopes(prefix, width)
    first = Affine(pick, np.zeros(width))
    return [(first, slopes), *((_identity(width), slopes) for _ in range(depth - 1))], linear[used]


def _identity(width: int) -> Affine:
    return Affine(sparse.identity(width, format="csr"), np.zeros(width))


def _flat_linear(group: list[Symbolic]) -> Any:
    """The group's linear maps side by side: shape ``(width, total entries)``."""
    return _stack([value.flat_linear() for value in group], vertical=False)


def _padded(group: list[Symbolic], common: int, depth: int) -> tuple[list[Step], Any]:
    """The group's branch after the common part, as ``depth`` steps (an affine map and the
    slopes of the activation after it), and the group's linear maps (side by side) from their
    output."""
    prefix = group[0].prefix
    own = _steps(prefix[common:])
    linear = _flat_linear(group)
    if not own:
        return _carried(linear, depth, prefix[:common])
    width = own[-1][0].out_features
    slopes = _carry_slopes(prefix, width)
    return own + [(_identity(width), slopes) for _ in range(depth - len(own))], linear


def _activation(first: Step, second: Step) -> Layer:
    """The activation after two steps side by side: ReLU when both are, else their slopes."""
    if first[1] is None and second[1] is None:
        return ReLU()
    return Activation(np.concatenate([_slopes_of(first), _slopes_of(second)]))


def _slopes_of(step: Step) -> FloatArray:
    affine, slopes = step
    return np.zeros(affine.out_features) if slopes is None else np.asarray(slopes, float)


def _shared(affine: Affine, act: Activation) -> tuple[Affine, Activation, Any] | None:
    """The layer with each group of equal neurons (same row, bias and slope) kept once, at its
    first place, and the 0/1 matrix ``S`` (kept x all) with ``h_all = S^T h_kept``; ``None``
    when no two neurons are equal."""
    matrix = affine.matrix
    dense = as_dense(matrix)
    table = np.column_stack([dense, affine.bias, act.alpha])
    _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    if len(first) == len(table):
        return None
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    keep = first[order]
    onto = sparse.csr_array(
        (np.ones(len(table)), (rank[np.asarray(inverse).reshape(-1)], np.arange(len(table)))),
        shape=(len(keep), len(table)),
    )
    return Affine(matrix[keep], affine.bias[keep]), Activation(act.alpha[keep]), onto


def _share_first(merged: list[Layer], common: int, readouts: list[Any]) -> list[Any]:
    """:func:`_shared` on the first merged layer (``merged[common:common + 2]``), in place;
    its reader (the next merged affine map, or else the ``readouts``) reads the kept neurons.
    Returns the readouts."""
    if len(merged) < common + 2:
        return readouts
    affine, act = merged[common], merged[common + 1]
    if not isinstance(act, Activation):
        return readouts
    assert isinstance(affine, Affine)
    found = _shared(affine, act)
    if found is None:
        return readouts
    merged[common], merged[common + 1], onto = found
    if len(merged) > common + 2:
        reader = merged[common + 2]
        assert isinstance(reader, Affine)
        merged[common + 2] = Affine(_as_matrix(reader.matrix @ onto.T), reader.bias)
        return readouts
    return [_as_matrix(onto @ readout) for readout in readouts]


def _as_matrix(matrix: Any) -> Any:
    return sparse.csr_array(matrix) if sparse.issparse(matrix) else np.asarray(matrix)


def _block_diagonal(first: Affine, second: Affine, shared_input: bool) -> Affine:
    """Both maps side by side: stacked when they read the same input, else block diagonal."""
    one, other = first.matrix, second.matrix
    if shared_input:
        weight = _stack([one, other], vertical=True)
    elif sparse.issparse(one) or sparse.issparse(other):
        weight = sparse.csr_array(sparse.block_diag((one, other)))
    else:
        weight = np.block(
            [
                [one, np.zeros((first.out_features, second.in_features))],
                [np.zeros((second.out_features, first.in_features)), other],
            ]
        )
    return Affine(weight, np.concatenate([first.bias, second.bias]))


def _same_stack(a: Symbolic, b: Symbolic) -> bool:
    return len(a.prefix) == len(b.prefix) == _common_length(a.prefix, b.prefix)


def _restated(
    group: list[Symbolic], prefix: tuple[Layer, ...], linear: FloatArray
) -> list[Symbolic]:
    """Each member of ``group`` on the stack ``prefix``, its columns of ``linear`` its map."""
    out = []
    start = 0
    for value in group:
        entries = int(np.prod(value.shape))
        block = linear[:, start : start + entries]
        start += entries
        if sparse.issparse(block):
            block = sparse.csr_array(block)
        else:
            block = block.reshape((-1, *value.shape))
        out.append(Symbolic(prefix, linear.shape[0], block, value.offset, value.batched))
    return out


def _merge(
    group_a: list[Symbolic], group_b: list[Symbolic]
) -> tuple[list[Symbolic], list[Symbolic]]:
    """Two groups (each on one stack) restated on one merged stack (module docstring)."""
    first, second = group_a[0], group_b[0]
    common = _common_length(first.prefix, second.prefix)
    depth = (max(len(first.prefix), len(second.prefix)) - common) // 2
    steps_a, linear_a = _padded(group_a, common, depth)
    steps_b, linear_b = _padded(group_b, common, depth)
    merged: list[Layer] = list(first.prefix[:common])
    for index, (one, other) in enumerate(zip(steps_a, steps_b)):
        merged += [_block_diagonal(one[0], other[0], shared_input=index == 0),
                   _activation(one, other)]  # fmt: skip
    rows_a, rows_b = linear_a.shape[0], linear_b.shape[0]
    top = _stack([linear_a, sparse.csr_array((rows_b, linear_a.shape[1]))], vertical=True)
    bottom = _stack([sparse.csr_array((rows_a, linear_b.shape[1])), linear_b], vertical=True)
    top, bottom = _share_first(merged, common, [top, bottom])
    prefix = tuple(merged)
    return _restated(group_a, prefix, top), _restated(group_b, prefix, bottom)


def align(values: list[Symbolic]) -> list[Symbolic]:
    """The values restated to read the output of one layer stack (module docstring), in order."""
    group = [values[0]]
    for value in values[1:]:
        if _same_stack(group[0], value):
            group.append(value)
        else:
            group, (restated,) = _merge(group, [value])
            group.append(restated)
    return group


def broadcast_sum(a: Symbolic, b: Symbolic, sign: float) -> Symbolic | None:
    """``a + sign b`` of two input-dependent tensors on one stack (a residual connection), or
    ``None`` when broadcasting would replicate either of them."""
    try:
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        return None
    entries = int(np.prod(shape))
    if entries != int(np.prod(a.shape)) or entries != int(np.prod(b.shape)):
        return None
    a, b = align([a, b])
    offset = a.offset.reshape(shape) + sign * b.offset.reshape(shape)
    if any(v.linear is None or v.is_sparse for v in (a, b)):  # flat: sparse where it can be
        summed = a.flat_linear() + sign * b.flat_linear()
        if sparse.issparse(summed):
            return a.with_map(sparse.csr_array(summed), offset, a.batched or b.batched)
        return a.with_map(np.asarray(summed).reshape((a.width, *shape)), offset,
                          a.batched or b.batched)  # fmt: skip
    linear = a.full_linear().reshape((a.width, *shape))
    linear = linear + sign * b.full_linear().reshape((b.width, *shape))
    return a.with_map(linear, offset, a.batched or b.batched)


def concatenate(parts: list[Symbolic | FloatArray], axis: int) -> Symbolic:
    """``concatenate(parts, axis)`` where some parts are input-dependent (``axis`` already
    non-negative): constants become offsets with a zero linear map."""
    symbols = align([part for part in parts if isinstance(part, Symbolic)])
    width = symbols[0].width
    pending = iter(symbols)
    linears, offsets = [], []
    for part in parts:
        if isinstance(part, Symbolic):
            value = next(pending)
            linears.append(value.full_linear())
            offsets.append(value.offset)
        else:
            offsets.append(np.asarray(part, dtype=np.float64))
            linears.append(np.zeros((width, *offsets[-1].shape)))
    offset = np.concatenate(offsets, axis=axis)
    linear = np.concatenate(linears, axis=axis + 1)
    return symbols[0].with_map(linear, offset, symbols[0].batched)
