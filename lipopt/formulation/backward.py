"""Backward pass: the chain rule with switch constraints (paper eq. 13, appendix D.2).

``y_K = W_L^T c``; for each hidden layer k (last first) ``s_k = a_k ⊙ y_k`` and
``y_{k-1} = W_k^T s_k``; the input gradient is ``∇f = W_1^T s_1``.

The switch ``s = a·y`` with ``y ∈ [ly, uy]`` and binary ``a`` is exact under
``s <= y - ly(1 - a),  s >= y - uy(1 - a),  s <= uy·a,  s >= ly·a``;
when ``y`` is a known number the switch is simply the linear term ``y·a``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyomo.environ as pe

from lipopt.bounds.interval import NetworkBounds, NeuronState
from lipopt.formulation.terms import Term, is_constant, linear_map
from lipopt.network import Network


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
    y = linear_map(last.weight.T, list(seed), np.zeros(last.in_features))
    states = bounds.states
    for k in range(len(affines) - 1, 0, -1):  # hidden layer k (1-based), last first
        state = states[k - 1]
        ly, uy = bounds.grad_lower[k - 1], bounds.grad_upper[k - 1]
        # name the incoming gradient as variables so that expressions never nest
        var_index = [
            i for i in range(len(y)) if not is_constant(y[i]) and state[i] != NeuronState.INACTIVE
        ]
        y_var = pe.Var(var_index, bounds={i: (float(ly[i]), float(uy[i])) for i in var_index})
        setattr(model, f"y{k}", y_var)
        setattr(
            model,
            f"y{k}_def",
            pe.Constraint(var_index, expr={i: y_var[i] == y[i] for i in var_index}),
        )
        unstable_vars = [i for i in var_index if state[i] == NeuronState.UNSTABLE]
        s_var = pe.Var(
            unstable_vars,
            bounds={i: (min(float(ly[i]), 0.0), max(float(uy[i]), 0.0)) for i in unstable_vars},
        )
        setattr(model, f"s{k}", s_var)
        cons = pe.ConstraintList()
        setattr(model, f"switch{k}", cons)
        s: list[Term] = []
        for i in range(len(y)):
            if state[i] == NeuronState.INACTIVE:
                s.append(0.0)
            elif state[i] == NeuronState.ACTIVE:
                s.append(y[i] if is_constant(y[i]) else y_var[i])
            elif is_constant(y[i]):
                s.append(float(y[i]) * activations[k - 1][i])
            else:
                add_switch(cons, s_var[i], y_var[i], activations[k - 1][i], ly[i], uy[i])
                s.append(s_var[i])
        affine = affines[k - 1]
        y = linear_map(affine.weight.T, s, np.zeros(affine.in_features))
    return y
