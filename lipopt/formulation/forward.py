"""Forward pass: the domain constraints and the ReLU big-M encoding.

For a hidden neuron with pre-activation ``z ∈ [l, u]``:
- ``l >= 0`` (always active):   ``h = z``, no binary;
- ``u <= 0`` (always inactive): ``h = 0``, no variable at all;
- otherwise a binary ``a`` and  ``h >= z,  h <= u·a,  h <= z - l·(1 - a)``, with ``h >= 0``
  as the variable's lower bound.
``a`` is the neuron's activation (1 = on); the backward pass reuses it.

A neuron of slope ``α`` (``h = α z + (1 - α) relu(z)``, :mod:`lipopt.activation`;
``NetworkBounds.slopes``): active (``l >= 0``, or ``α = 1`` whatever its bounds) ``h = z``;
inactive ``h = α z``; unstable with ``α != 0``: ``r = relu(z)`` by the rows above (on ``r``,
``r ∈ [0, u]``) and ``h = α z + (1 - α) r``, one binary. ``h``'s bounds are its exact range
(``NetworkBounds.hidden_range``), which may be negative. A ReLU layer keeps the model above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lipopt.activation import apply
from lipopt.bounds.interval import NetworkBounds, NeuronState
from lipopt.domain import Domain, L1Ball, L2Ball, ball_part, cut_rows
from lipopt.formulation.terms import Term, is_constant, linear_map
from lipopt.lazy import PYOMO, lazy_module
from lipopt.network import Network

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)


def _box_input(model: pe.ConcreteModel, lower: np.ndarray, upper: np.ndarray) -> list[Term]:
    d = lower.size
    model.x = pe.Var(range(d), bounds=lambda _, j: (float(lower[j]), float(upper[j])))
    return [model.x[j] for j in range(d)]


def _add_l1_rows(model: pe.ConcreteModel, ball: L1Ball) -> None:
    """``||x - x0||_1 <= ρ`` lifted: ``dev_j >= ±(x_j - x0_j)``, ``Σ dev_j <= ρ``."""
    d = ball.dim
    centre = ball.center
    model.x_dev = pe.Var(range(d), bounds=(0.0, ball.radius))
    model.x_dev_pos = pe.Constraint(
        range(d), rule=lambda m, j: m.x_dev[j] >= m.x[j] - float(centre[j])
    )
    model.x_dev_neg = pe.Constraint(
        range(d), rule=lambda m, j: m.x_dev[j] >= float(centre[j]) - m.x[j]
    )
    model.x_in_ball = pe.Constraint(
        expr=pe.quicksum(model.x_dev[j] for j in range(d)) <= ball.radius
    )


def _add_cut_rows(model: pe.ConcreteModel, a: np.ndarray, b: np.ndarray) -> None:
    """The polytope's rows ``Σ_j a_kj x_j <= b_k`` (zero coefficients left out)."""
    model.x_cut = pe.Constraint(
        range(a.shape[0]),
        rule=lambda m, k: pe.quicksum(
            float(a[k, j]) * m.x[j] for j in np.flatnonzero(a[k])
        ) <= float(b[k]),
    )  # fmt: skip


def add_input(model: pe.ConcreteModel, domain: Domain) -> list[Term]:
    """Input variables ``x`` constrained to the domain: its bounding box as the variables'
    bounds, the ℓ1 ball's lifted rows, a polytope's rows (the ℓ2 ball itself: add_ball_row, or
    add_tangent_cut while solving)."""
    lower, upper = domain.bounding_box()
    x = _box_input(model, lower, upper)
    ball = ball_part(domain)
    if isinstance(ball, L1Ball):
        _add_l1_rows(model, ball)
    rows = cut_rows(domain)
    if rows is not None:
        _add_cut_rows(model, *rows)
    return x


def add_ball_row(model: pe.ConcreteModel, domain: L2Ball) -> None:
    """``Σ_j ((x_j - c_j)/ρ)^2 <= 1``: the ℓ2 ball as one convex quadratic row (SCIP), in place
    of the tangent cuts; scaled by ρ, so the solver's absolute tolerance on the row is relative
    to the ball (unscaled, 1e-7 on ``ρ^2`` let a ball of radius 1e-4 grow threefold)."""
    centre, scale = domain.center, 1.0 / domain.radius
    model.x_in_ball = pe.Constraint(
        expr=pe.quicksum((scale * (model.x[j] - float(centre[j]))) ** 2 for j in range(domain.dim))
        <= 1.0
    )


#: a point counts as outside the ℓ2 ball beyond this share of its radius (the solvers' tolerance)
BALL_TOLERANCE = 1e-7


def add_tangent_cut(model: pe.ConcreteModel, domain: Domain, point: np.ndarray) -> bool:
    """Where the model takes the ℓ2 ball by its bounding box (no :func:`add_ball_row`) and
    ``point`` lies outside the ball, add to the list ``ball_cuts`` ``n·(x - c) <= ρ`` with
    ``n = (point - c)/||point - c||_2``: the tangent plane at the ball's point nearest
    ``point``, valid on the ball (``n·(x - c) <= ||x - c||_2``), which cuts ``point`` off.
    False where nothing was added."""
    ball = ball_part(domain)
    if not isinstance(ball, L2Ball) or model.component("x_in_ball") is not None:
        return False
    offset = np.asarray(point, dtype=np.float64) - ball.center
    length = float(np.linalg.norm(offset))
    if length <= ball.radius * (1.0 + BALL_TOLERANCE):
        return False
    if model.component("ball_cuts") is None:
        model.ball_cuts = pe.ConstraintList()
    normal = offset / length
    model.ball_cuts.add(
        pe.quicksum(float(normal[j]) * (model.x[j] - float(ball.center[j]))
                    for j in range(ball.dim) if normal[j] != 0.0) <= ball.radius
    )  # fmt: skip
    return True


def add_forward(
    model: pe.ConcreteModel,
    network: Network,
    bounds: NetworkBounds,
    x: list[Term],
    relax: bool,
) -> list[dict[int, pe.Var]]:
    """Encode every hidden layer; returns, per layer, the activation binaries of unstable neurons.

    Components are named per hidden layer ``k`` (1-based, as in the paper): ``h{k}[i]`` post-
    activation, ``a{k}[i]`` activation binary, constraints ``relu{k}_*[i]``; a layer with a
    neuron of slope ``α != 0`` (``bounds.slopes``) is encoded by :func:`_sloped_layer`.
    """
    binary_domain = pe.UnitInterval if relax else pe.Binary
    activations: list[dict[int, pe.Var]] = []
    h: list[Term] = list(x)
    for k, (affine, lower, upper, state) in enumerate(
        zip(network.affine_layers[:-1], bounds.pre_lower, bounds.pre_upper, bounds.states), start=1
    ):
        z = linear_map(affine.matrix, h, affine.bias)
        alpha = None if bounds.slopes is None else bounds.slopes[k - 1]
        if alpha is not None and np.any(alpha):
            layer = HiddenLayer(k, z, (lower, upper), state, binary_domain)
            gates, h = _sloped_layer(model, layer, alpha, bounds.hidden_range(k - 1))
        else:
            gates, h = _relu_layer(model, HiddenLayer(k, z, (lower, upper), state, binary_domain))
        activations.append(gates)
    return activations


@dataclass(frozen=True)
class HiddenLayer:
    """One hidden layer to encode: its index ``k`` (1-based), pre-activations ``z`` (numbers or
    expressions) with their bounds ``ranges = (l, u)``, states, and the binaries' domain."""

    k: int
    z: list[Term]
    ranges: tuple[np.ndarray, np.ndarray]
    state: np.ndarray
    binary_domain: Any


def _relu_layer(model: pe.ConcreteModel, layer: HiddenLayer) -> tuple[dict[int, Any], list[Term]]:
    """A ReLU layer (the module docstring's encoding); returns its binaries and ``h``."""
    k, z, state = layer.k, layer.z, layer.state
    lower, upper = layer.ranges
    width = len(z)
    live = [i for i in range(width) if state[i] != NeuronState.INACTIVE]
    unstable = [i for i in range(width) if state[i] == NeuronState.UNSTABLE]
    h_var = pe.Var(
        live, bounds={i: (max(float(lower[i]), 0.0), max(float(upper[i]), 0.0)) for i in live}
    )
    a_var = pe.Var(unstable, domain=layer.binary_domain)
    setattr(model, f"h{k}", h_var)
    setattr(model, f"a{k}", a_var)
    _add_active(model, k, h_var, z, [i for i in live if state[i] == NeuronState.ACTIVE])
    cons = pe.ConstraintList()
    setattr(model, f"relu{k}_unstable", cons)
    for i in unstable:
        if is_constant(z[i]):  # cannot happen with sound bounds; keep the encoding valid anyway
            z_i = float(z[i])
            cons.add(h_var[i] == max(z_i, 0.0))
            continue
        _add_big_m(cons, h_var[i], z[i], a_var[i], (float(lower[i]), float(upper[i])))
    h = [h_var[i] if state[i] != NeuronState.INACTIVE else 0.0 for i in range(width)]
    return {i: a_var[i] for i in unstable}, h


def _add_active(
    model: pe.ConcreteModel, k: int, h_var: pe.Var, z: list[Term], active: list[int]
) -> None:
    """``h{k}[i] = z_i`` for the ACTIVE neurons (rows ``relu{k}_active``)."""
    setattr(
        model,
        f"relu{k}_active",
        pe.Constraint(active, expr={i: h_var[i] == z[i] for i in active}),
    )


def _add_big_m(
    cons: pe.ConstraintList, r: Term, z: Term, a: Term, bounds: tuple[float, float]
) -> None:
    """``r = relu(z)`` for ``z ∈ [l, u]``, ``l < 0 < u``, and ``r >= 0`` (its variable's bound):
    ``r >= z,  r <= u·a,  r <= z - l·(1 - a)``."""
    lo, hi = bounds
    cons.add(r >= z)
    cons.add(r <= hi * a)
    cons.add(r <= z - lo * (1 - a))


def _sloped_layer(
    model: pe.ConcreteModel,
    layer: HiddenLayer,
    alpha: np.ndarray,
    hidden: tuple[np.ndarray, np.ndarray],
) -> tuple[dict[int, Any], list[Term]]:
    """A layer with slopes ``α`` (``h = α z + (1 - α) relu(z)``), ``hidden`` the range of ``h``:
    ACTIVE ``h = z``; INACTIVE ``h = α z`` (no variable where ``α = 0``); UNSTABLE with
    ``α = 0`` as a ReLU; UNSTABLE otherwise ``r{k}[i] = relu(z)`` by the big-M rows and
    ``h = α z + (1 - α) r`` (rows ``relu{k}_slope``). Returns the binaries and ``h``."""
    k, z, state = layer.k, layer.z, layer.state
    lower, upper = layer.ranges
    width = len(z)
    live = [i for i in range(width) if state[i] != NeuronState.INACTIVE or alpha[i] != 0.0]
    unstable = [i for i in range(width) if state[i] == NeuronState.UNSTABLE]
    bent = [i for i in unstable if alpha[i] != 0.0 and not is_constant(z[i])]
    h_var = pe.Var(live, bounds={i: (float(hidden[0][i]), float(hidden[1][i])) for i in live})
    a_var = pe.Var(unstable, domain=layer.binary_domain)
    r_var = pe.Var(bent, bounds={i: (0.0, max(float(upper[i]), 0.0)) for i in bent})
    for name, component in (("h", h_var), ("a", a_var), ("r", r_var)):
        setattr(model, f"{name}{k}", component)
    _add_active(model, k, h_var, z, [i for i in live if state[i] == NeuronState.ACTIVE])
    scaled = [i for i in live if state[i] == NeuronState.INACTIVE]
    setattr(
        model,
        f"relu{k}_inactive",
        pe.Constraint(scaled, expr={i: h_var[i] == float(alpha[i]) * z[i] for i in scaled}),
    )
    cons, slope = pe.ConstraintList(), pe.ConstraintList()
    setattr(model, f"relu{k}_unstable", cons)
    setattr(model, f"relu{k}_slope", slope)
    for i in unstable:
        bounds = (float(lower[i]), float(upper[i]))
        if is_constant(z[i]):  # cannot happen with sound bounds; keep the encoding valid anyway
            cons.add(h_var[i] == float(apply(alpha[i : i + 1], float(z[i]))[0]))
        elif alpha[i] == 0.0:
            _add_big_m(cons, h_var[i], z[i], a_var[i], bounds)
        else:
            _add_big_m(cons, r_var[i], z[i], a_var[i], bounds)
            a_i = float(alpha[i])
            slope.add(h_var[i] == a_i * z[i] + (1.0 - a_i) * r_var[i])
    h = [h_var[i] if i in h_var else 0.0 for i in range(width)]
    return {i: a_var[i] for i in unstable}, h
