"""The pattern tree of :mod:`lipopt.search.regions`: its nodes, the feasibility LP of a partial
pattern, and the bounds and moves of one search.

A node fixes the signs of some neurons; with layers ``1 .. k-1`` fixed, ``z_k = A_k x + b_k`` on
its region, so fixing neuron ``i`` of layer ``k`` adds the row ``±(a_i x + b_i) >= e ||a_i||``
to the LP ``max e`` over the box (and a polytope's rows; ``0 <= e <= 1``): the pattern's region
has an interior point iff ``e* > 0``. A node's bound on ``||g||_{α*}`` over every completion of
its pattern is the interval backward pass with its neuron states (times ``1 + PRUNE_SLACK``).

Per-neuron activations ``h = α z + (1 - α) relu(z)`` (:mod:`lipopt.activation`): the pattern
``σ = [z > 0]`` is what a node fixes, and on its region ``h = D z`` with ``D = α + (1 - α) σ``
(``α z`` on a neuron fixed inactive). An identity neuron (``α = 1``) has no kink: it is ACTIVE
from the root on, never branched on and never a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import (
    NetworkBounds,
    NeuronState,
    _affine_interval,
    backward_interval,
    classify,
    hidden_range,
    slopes_of,
)
from lipopt.bounds.linear import input_gradient_linear, relu_relaxation
from lipopt.bounds.relaxation import activation_relaxation
from lipopt.domain import Box, Polytope, cut_rows
from lipopt.network import Network
from lipopt.norms import InputNorm, dual_norm
from lipopt.search.kinds import identity_active

FloatArray = NDArray[np.float64]
#: :func:`~lipopt.bounds.interval.backward_interval`'s result: per-layer ``y`` bounds, ``∇f``'s
Backward = tuple[list[FloatArray], list[FloatArray], FloatArray, FloatArray]

#: relative slack when comparing a node's bound with the best value (float rounding)
PRUNE_SLACK = 1e-9


@dataclass
class Node:
    """A partial pattern of the depth-first search, with what it knows on its region."""

    layer: int  # hidden layer being fixed (0-based)
    depth: int  # number of LP rows on the path to this node
    row: tuple[FloatArray, float] | None  # (a, b): the node's own constraint a·x + b >= ||a|| e
    states: list[NDArray[np.int8]]  # per hidden layer, NeuronState of each neuron on this node
    affine: tuple[FloatArray, FloatArray]  # (A_k, b_k): z_k = A_k x + b_k on this node
    z_range: tuple[FloatArray, FloatArray]  # bounds of z_k on the box
    point: FloatArray  # an interior point of the parent's polytope
    margin: float  # its margin
    bound: float
    #: the interval backward pass with ``states`` (per-layer ``y`` bounds, then ``∇f``'s) that
    #: gave ``bound``: reused by the branching score and the linear bound
    backward: Backward | None = None


class FeasibilityLP:
    """``max e`` over the polytope of a partial pattern, rows added and removed DFS-style."""

    def __init__(self, domain: Box | Polytope) -> None:
        """The box as the variables' bounds; a polytope's rows ``a·x <= b`` kept below the
        pattern's rows (without the margin: a point of the polytope with a ball of radius
        ``e > 0`` inside the region has points of the polytope's interior in that ball)."""
        import highspy

        lower, upper = domain.bounding_box()
        self.dim = len(lower)
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        for j in range(self.dim):
            self.highs.addVar(float(lower[j]), float(upper[j]))
        self.highs.addVar(0.0, 1.0)
        self.highs.changeColCost(self.dim, -1.0)  # HiGHS minimises: min -e
        self.rows = 0
        self.index = np.arange(self.dim + 1, dtype=np.int32)
        rows = cut_rows(domain)
        self.base = 0 if rows is None else rows[0].shape[0]
        for a, b in zip(*rows) if rows is not None else ():
            self.highs.addRow(
                -highspy.kHighsInf, float(b), self.dim + 1, self.index, np.append(a, 0.0)
            )
        self.solves = 0
        self.infinity = highspy.kHighsInf
        self.status = highspy.HighsModelStatus

    def truncate(self, depth: int) -> None:
        if self.rows > depth:
            gone = np.arange(self.base + depth, self.base + self.rows, dtype=np.int32)
            self.highs.deleteRows(self.rows - depth, gone)
            self.rows = depth

    def push(self, a: FloatArray, b: float) -> None:
        """Add ``a·x + b >= ||a|| e``, i.e. ``-a·x/||a|| + e <= b/||a||``."""
        norm = float(np.linalg.norm(a))
        coef = np.append(-a / norm, 1.0)
        self.highs.addRow(-self.infinity, b / norm, len(self.index), self.index, coef)
        self.rows += 1

    def solve(self) -> tuple[float, FloatArray | None]:
        """The largest margin and its point; ``(-1, None)`` when the polytope is empty.

        Raises:
            RuntimeError: HiGHS ended neither optimal nor infeasible (numerical trouble).
        """
        self.solves += 1
        self.highs.run()
        status = self.highs.getModelStatus()
        if status == self.status.kInfeasible:
            return -1.0, None
        if status != self.status.kOptimal:
            raise RuntimeError(f"HiGHS: {self.highs.modelStatusToString(status)}")
        values = np.asarray(self.highs.getSolution().col_value)
        return float(values[self.dim]), values[: self.dim].copy()


def _fixed(state: NDArray[np.int8], index: int, value: NeuronState) -> NDArray[np.int8]:
    out = state.copy()
    out[index] = value
    return out


class SearchState:
    """One search: the network and box, the best verified value so far, and the moves on nodes
    (their bounds, entering a layer, branching, checking a leaf)."""

    def __init__(
        self,
        network: Network,
        domain: Box | Polytope,
        c: FloatArray,
        norm: InputNorm,
        bounds: NetworkBounds,
    ) -> None:
        self.network = network
        self.alphas = slopes_of(network) or (None,) * (len(network.affine_layers) - 1)
        self.domain = domain
        self.affines = network.affine_layers
        self.hidden = len(self.affines) - 1
        lower, upper = domain.bounding_box()
        self.box = (np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64))
        self.c = np.asarray(c, dtype=np.float64)
        self.norm = norm
        self.pre_lower = [np.asarray(v) for v in bounds.pre_lower]
        self.pre_upper = [np.asarray(v) for v in bounds.pre_upper]
        self.seed = self.affines[-1].weight.T @ self.c  # y of the last hidden layer
        self.best = -np.inf
        self.best_point: FloatArray | None = None
        self.unverified = -np.inf  # values of leaves whose interior point failed the check
        self.nodes = 0
        self.regions = 0

    def on_box(self, matrix: FloatArray, offset: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Range of ``matrix x + offset`` over the box, rounded outward."""
        return _affine_interval(matrix, offset, *self.box)

    # -- bounds -------------------------------------------------------------------------------
    def backward(
        self, states: list[NDArray[np.int8]]
    ) -> tuple[list[FloatArray], list[FloatArray], FloatArray, FloatArray]:
        """Interval bounds on the backward pass with the given neuron states."""
        return backward_interval(self.network, states, self.seed, self.seed)

    def bound_and_grads(self, states: list[NDArray[np.int8]]) -> tuple[float, Backward]:
        """Upper bound on ``||g||_{α*}`` over every pattern that agrees with ``states``, and
        the interval backward pass it came from."""
        backward = self.backward(states)
        return self.norm_bound(backward[2], backward[3]), backward

    def norm_bound(self, lower: FloatArray, upper: FloatArray) -> float:
        """Upper bound on ``||g||_{α*}`` for ``g`` in ``[lower, upper]``, with the prune slack."""
        magnitude = np.maximum(np.abs(lower), np.abs(upper))
        value = float(dual_norm(magnitude, self.norm))
        return value * (1.0 + PRUNE_SLACK)

    def linear_bound(self, states: list[NDArray[np.int8]], backward: Backward) -> float:
        """:meth:`bound_and_grads`'s bound tightened: ``∇f`` back-substituted to ``c`` through the
        switch chords of the interval pass's ``y`` ranges, intersected with its interval."""
        grad_lo, grad_hi, in_lo, in_hi = backward
        lo, hi = input_gradient_linear(self.network, states, self.c, grad_lo, grad_hi)
        return self.norm_bound(np.maximum(lo, in_lo), np.minimum(hi, in_hi))

    def impact(self, node: Node) -> FloatArray:
        """Branching score of each neuron of the node's layer k: how much fixing it can move
        the gradient bound, ``max|y_k,i| · ||a_i||_1 · (u_i - l_i)``, with ``y_k`` the interval
        of the backward pass at layer k and ``a_i x + b_i`` the neuron's affine map.

        Measured on benchmarks/speed.py's balls: half the nodes of branching on the widest
        neuron, and 2.5-4x faster."""
        backward = node.backward if node.backward is not None else self.backward(node.states)
        grad_lo, grad_hi = backward[0], backward[1]
        ylo, yhi = grad_lo[node.layer], grad_hi[node.layer]
        zlo, zhi = node.z_range
        magnitude = np.maximum(np.abs(ylo), np.abs(yhi))
        return magnitude * np.abs(node.affine[0]).sum(axis=1) * (zhi - zlo)

    def child_bounds(
        self, node: Node, state_k: NDArray[np.int8]
    ) -> tuple[float, list[NDArray[np.int8]], Backward]:
        """Neuron states of a child whose layer-k states are ``state_k``: the next layer is
        re-bounded through the CROWN relaxation of this layer's activations (exact for fixed
        neurons), deeper layers by intervals; returns the gradient bound, the states and the
        backward bounds behind the gradient bound."""
        k = node.layer
        states = list(node.states)
        states[k] = state_k
        if k + 1 < self.hidden:
            zl, zh = self.next_range(node, state_k)
            for j in range(k + 1, self.hidden):
                if j > k + 1:
                    layer = self.affines[j]
                    h_lo, h_hi = hidden_range(self.network, j - 1, zl, zh)
                    zl, zh = _affine_interval(layer.weight, layer.bias, h_lo, h_hi)
                zl, zh = np.maximum(zl, self.pre_lower[j]), np.minimum(zh, self.pre_upper[j])
                # keep what the node already knew (sound on its region, which holds the child's)
                states[j] = np.where(
                    node.states[j] == NeuronState.UNSTABLE,
                    classify(zl, zh, self.alphas[j]),
                    node.states[j],
                ).astype(np.int8)
        bound, backward = self.bound_and_grads(states)
        return bound, states, backward

    def next_range(self, node: Node, state_k: NDArray[np.int8]) -> tuple[FloatArray, FloatArray]:
        """Bounds of ``z_{k+1}`` on a child of ``node`` whose layer-k states are ``state_k``:
        ``W_{k+1} h_k + b_{k+1}`` with each ``h_k`` between two lines of ``z_k = A x + b``
        (:func:`~lipopt.bounds.relaxation.activation_relaxation`; on a ReLU layer
        :func:`relu_relaxation`, whose lower line has no shift), maximised and minimised over the
        box."""
        k, alpha = node.layer, self.alphas[node.layer]
        # on this node a neuron fixed active has z >= 0, one fixed inactive z <= 0
        zlo, zhi = node.z_range
        active = state_k == NeuronState.ACTIVE
        if alpha is not None:
            active &= alpha != 1.0  # an identity neuron is ACTIVE whatever its sign
        zlo = np.where(active, np.maximum(zlo, 0.0), zlo)
        zhi = np.where(state_k == NeuronState.INACTIVE, np.minimum(zhi, 0.0), zhi)
        nxt = self.affines[k + 1]
        wp, wn = np.maximum(nxt.weight, 0.0), np.minimum(nxt.weight, 0.0)
        if alpha is None:
            slope_up, shift_up, slope_low = relu_relaxation(zlo, zhi)
            low_shift, up_shift = wn @ shift_up, wp @ shift_up
        else:
            slope_up, shift_up, slope_low, shift_low = activation_relaxation(zlo, zhi, alpha)
            low_shift = wp @ shift_low + wn @ shift_up
            up_shift = wp @ shift_up + wn @ shift_low
        matrix, offset = node.affine
        low_coef, up_coef = wp * slope_low + wn * slope_up, wp * slope_up + wn * slope_low
        zl, _ = self.on_box(low_coef @ matrix, low_coef @ offset + low_shift + nxt.bias)
        _, zh = self.on_box(up_coef @ matrix, up_coef @ offset + up_shift + nxt.bias)
        return zl, zh

    # -- nodes ----------------------------------------------------------------------------------
    def enter_layer(self, node: Node) -> None:
        """Set the node's layer-k range from its exact affine map and fix the stable neurons."""
        matrix, offset = node.affine
        k = node.layer
        zlo, zhi = self.on_box(matrix, offset)
        zlo, zhi = np.maximum(zlo, self.pre_lower[k]), np.minimum(zhi, self.pre_upper[k])
        node.z_range = (zlo, zhi)
        known = node.states[k]
        state = np.where(known == NeuronState.UNSTABLE, classify(zlo, zhi, self.alphas[k]), known)
        # a neuron constant on this node (zero row) is fixed by its constant's sign; at 0 its
        # output is 0 whatever the derivative, so 0 is taken (no LP row, which would be 0 = 0);
        # an identity neuron stays ACTIVE
        constant = ~np.any(matrix != 0.0, axis=1)
        if self.alphas[k] is not None:
            constant &= self.alphas[k] != 1.0
        state[constant] = np.where(offset[constant] > 0, NeuronState.ACTIVE, NeuronState.INACTIVE)
        node.states = list(node.states)
        node.states[k] = state.astype(np.int8)

    def next_layer(self, node: Node) -> Node:
        """All of layer k fixed: compose its pattern into the affine map of layer k+1."""
        matrix, offset = node.affine
        mask = (node.states[node.layer] == NeuronState.ACTIVE).astype(np.float64)
        slope = self.network.derivatives(node.layer, mask)  # h = D z, D = α + (1 - α) σ
        nxt = self.affines[node.layer + 1]
        return Node(
            node.layer + 1, node.depth, None, node.states,
            (nxt.weight @ (slope[:, None] * matrix), nxt.weight @ (slope * offset) + nxt.bias),
            node.z_range, node.point, node.margin, node.bound,
        )  # fmt: skip

    def strictly_inside(self, point: FloatArray, states: list[NDArray[np.int8]]) -> bool:
        """Whether every pre-activation at ``point`` has its pattern's sign strictly (so a ball
        around the point lies in the pattern's region); neurons constant on the region (a zero
        row of their affine map along the pattern) and identity neurons (no kink) are exempt."""
        matrix = self.affines[0].weight
        layers = zip(self.network.pre_activations(point), states, self.affines[1:], self.alphas)
        for k, (z, state, nxt, alpha) in enumerate(layers):
            active = state == NeuronState.ACTIVE
            varying = np.any(matrix != 0.0, axis=1)
            if alpha is not None:
                varying &= alpha != 1.0
            if not np.all(np.where(varying, np.where(active, z[0] > 0, z[0] < 0), True)):
                return False
            matrix = nxt.weight @ (self.network.derivatives(k, active)[:, None] * matrix)
        return True

    def _inside_domain(self, point: FloatArray, margin: float) -> FloatArray:
        """A polytope's LP point may sit on a row up to the LP's tolerance: moved towards the
        polytope's interior point by at most half the region's margin (so its pattern stays)."""
        inside = getattr(self.domain, "interior_point", None)
        if inside is None or self.domain.contains(point, tol=0.0):
            return point
        gap = float(np.linalg.norm(inside - point))
        share = min(0.5, 0.5 * margin / gap) if gap > 0 else 0.0
        return point + share * (inside - point)

    def leaf(self, node: Node) -> None:
        """A complete pattern: verify its interior point in numpy and record the value."""
        self.regions += 1
        matrix, _ = node.affine  # the output Jacobian
        value = float(dual_norm(matrix.T @ self.c, self.norm))
        point = self._inside_domain(np.clip(node.point, self.box[0], self.box[1]), node.margin)
        if self.domain.contains(point, tol=0.0) and self.strictly_inside(point, node.states):
            attained = float(dual_norm(self.network.gradients(point, self.c), self.norm))
            if attained > self.best:
                self.best, self.best_point = attained, point
        else:
            self.unverified = max(self.unverified, value)

    def root(self, states: Sequence[NDArray[np.int8]]) -> Node:
        """The node of the empty pattern (neuron states from the propagated bounds), its first
        layer entered and its gradient bound set."""
        first = self.network.affine_layers[0]
        inside = getattr(self.domain, "interior", None)  # a polytope's centre may lie outside
        point = (self.box[0] + self.box[1]) / 2 if inside is None else inside.point.copy()
        margin = 1.0 if inside is None else min(1.0, inside.slack)
        states = identity_active(self.network, states)
        root = Node(
            0, 0, None, list(states), (first.weight.copy(), first.bias.copy()),
            (np.zeros(0), np.zeros(0)), point, margin, 0.0,
        )  # fmt: skip
        if self.hidden:
            self.enter_layer(root)
        root.bound, root.backward = self.bound_and_grads(root.states)
        return root

    def branch(self, node: Node, i: int) -> list[Node]:
        """The two children that fix neuron ``i`` of the node's layer active (row ``a_i x + b_i
        >= 0``) and inactive (its negation), the one with the larger bound last."""
        k = node.layer
        matrix, offset = node.affine
        children = []
        for active in (True, False):
            state_k = _fixed(
                node.states[k], i, NeuronState.ACTIVE if active else NeuronState.INACTIVE
            )
            bound, states, backward = self.child_bounds(node, state_k)
            sign = 1.0 if active else -1.0
            children.append(
                Node(
                    k,
                    node.depth + 1,
                    (sign * matrix[i], sign * float(offset[i])),
                    states,
                    node.affine,
                    node.z_range,
                    node.point,
                    node.margin,
                    bound,
                    backward,
                )  # fmt: skip
            )
        children.sort(key=lambda child: child.bound)
        return children
