"""Backward pass: the chain rule with switch constraints (paper eq. 13, appendix D.2).

``y_K = W_L^T c``; for each hidden layer k (last first) ``s_k = a_k ⊙ y_k`` and
``y_{k-1} = W_k^T s_k``; the input gradient is ``∇f = W_1^T s_1``.

The switch ``s = a·y`` with ``y ∈ [ly, uy]`` and binary ``a`` is exact under
``s <= y - ly(1 - a),  s >= y - uy(1 - a),  s <= uy·a,  s >= ly·a``;
when ``y`` is a known number the switch is simply the linear term ``y·a``.

With slopes ``α`` (``NetworkBounds.slopes``) the chain rule multiplies by ``D = α + (1 - α) a``
instead of ``a``: ``s = y`` on an active neuron, ``α y`` on an inactive one, and on an unstable
one ``s = α y + (1 - α) t`` with ``t = a·y`` switched as above (the variable ``s{k}[i]`` is then
``t``). One binary per unstable neuron, the forward pass's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lipopt.bounds.interval import NetworkBounds, NeuronState
from lipopt.formulation.terms import Term, is_constant, linear_map
from lipopt.lazy import PYOMO, lazy_module
from lipopt.network import Network

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)


def add_switch(
    cons: pe.ConstraintList, out: Term, value: Term, a: Term, lower: float, upper: float
) -> None:
    """``out = a · value`` for a binary ``a`` and ``value ∈ [lower, upper]``: the four switch
    constraints of the module docstring, appended to ``cons``."""
    lo, hi = float(lower), float(upper)
    cons.add(out <= value - lo * (1 - a))
    cons.add(out >= value - hi * (1 - a))
    cons.add(out <= hi * a)
    cons.add(out >= lo * a)


def add_switched_layer(
    model: pe.ConcreteModel,
    values: Sequence[Term],
    ranges: tuple[np.ndarray, np.ndarray],
    state: np.ndarray,
    gates: dict[int, Any],
    names: tuple[str, str, str],
    alpha: np.ndarray | None = None,
) -> list[Term]:
    """``D_i · value_i`` for one hidden layer, ``D = α + (1 - α) a``: the values (gradients or
    tangents, within ``ranges``) named as variables so that expressions never nest, then
    switched by the gates.

    Inactive neurons give ``α·value`` (0 for a ReLU), active ones the value, unstable ones a
    variable ``t = a·value`` under the four switch constraints (a number times the gate where the
    value is a number), and ``α·value + (1 - α)·t`` where ``α != 0``. ``alpha``: the slopes (None:
    a ReLU layer). ``names``: the components of the value variables (with ``{name}_def`` their
    definitions), of the switched variables and of the switch constraints.
    """
    value_name, switched_name, cons_name = names
    lower, upper = ranges
    scaled = np.zeros(len(values)) if alpha is None else alpha
    index = [
        i
        for i in range(len(values))
        if not is_constant(values[i]) and (state[i] != NeuronState.INACTIVE or scaled[i] != 0.0)
    ]
    value_var = pe.Var(index, bounds={i: (float(lower[i]), float(upper[i])) for i in index})
    setattr(model, value_name, value_var)
    setattr(
        model,
        f"{value_name}_def",
        pe.Constraint(index, expr={i: value_var[i] == values[i] for i in index}),
    )
    unstable = [i for i in index if state[i] == NeuronState.UNSTABLE]
    switched_var = pe.Var(
        unstable,
        bounds={i: (min(float(lower[i]), 0.0), max(float(upper[i]), 0.0)) for i in unstable},
    )
    setattr(model, switched_name, switched_var)
    cons = pe.ConstraintList()
    setattr(model, cons_name, cons)
    out: list[Term] = []
    for i in range(len(values)):
        value = values[i] if is_constant(values[i]) or i not in value_var else value_var[i]
        if state[i] == NeuronState.INACTIVE:
            out.append(0.0 if scaled[i] == 0.0 else _scaled(float(scaled[i]), value))
            continue
        if state[i] == NeuronState.ACTIVE:
            out.append(value)
            continue
        if is_constant(value):
            switched: Term = float(value) * gates[i]
        else:
            add_switch(cons, switched_var[i], value, gates[i], lower[i], upper[i])
            switched = switched_var[i]
        a_i = float(scaled[i])
        out.append(switched if a_i == 0.0 else _scaled(a_i, value) + (1.0 - a_i) * switched)
    return out


def _scaled(factor: float, value: Term) -> Term:
    """``factor · value``, a number where ``value`` is one."""
    return factor * float(value) if is_constant(value) else factor * value


def backward_names(k: int) -> tuple[str, str, str]:
    """The components of hidden layer k (1-based) in the backward pass: its value variables
    ``y{k}`` (defined by ``y{k}_def``), switched variables ``s{k}`` and switch constraints
    ``switch{k}`` (:func:`add_switched_layer`'s ``names``)."""
    return f"y{k}", f"s{k}", f"switch{k}"


def backward_constraints(model: pe.ConcreteModel, hidden_layers: int) -> list[Any]:
    """The backward pass's constraints of a model with ``hidden_layers`` hidden layers: each
    layer's value definitions and switch constraints, those the model has."""
    found = []
    for k in range(1, hidden_layers + 1):
        value_name, _, switch_name = backward_names(k)
        for name in (f"{value_name}_def", switch_name):
            if (component := model.component(name)) is not None:
                found.append(component)
    return found


def add_backward(
    model: pe.ConcreteModel,
    network: Network,
    bounds: NetworkBounds,
    activations: list[dict[int, pe.Var]],
    seed: Sequence[Term],
) -> list[Term]:
    """Encode the backward pass from the output seed; returns the input-gradient entries.

    Components per hidden layer k: ``y{k}[i]`` (gradient w.r.t. ``h_k``, a variable where it is
    not a number), ``s{k}[i]`` (gradient w.r.t. ``z_k`` for unstable neurons), constraints
    ``switch{k}``.
    """
    affines = network.affine_layers
    last = affines[-1]
    y = linear_map(last.matrix.T, list(seed), np.zeros(last.in_features))
    states = bounds.states
    for k in range(len(affines) - 1, 0, -1):  # hidden layer k (1-based), last first
        state = states[k - 1]
        ly, uy = bounds.grad_lower[k - 1], bounds.grad_upper[k - 1]
        alpha = None if bounds.slopes is None else bounds.slopes[k - 1]
        s = add_switched_layer(
            model, y, (ly, uy), state, activations[k - 1], backward_names(k), alpha
        )
        affine = affines[k - 1]
        y = linear_map(affine.matrix.T, s, np.zeros(affine.in_features))
    return y
