"""Forward-mode (tangent) encoding of the objective: the directional derivative, maximised.

For a fixed output weighting c and input norm α with unit ball ``V``,

    max_x ||∇(c^T f)(x)||_{α*} = max_x max_{v ∈ V} v^T ∇(c^T f)(x) = max_{x, v ∈ V} c^T J(x) v,

and ``J(x) v`` is computed forward with the same activation binaries ``a`` as the forward pass:
``t_1 = W_1 v``; for each hidden layer ``d_k = a_k ⊙ t_k`` (switch constraints as in the backward
pass, with the tangent bounds of :mod:`lipopt.bounds.tangent`), ``t_{k+1} = W_{k+1} d_k``; the
objective is ``c^T W_L d_{L-1}``. With the binaries fixed, the rest is a linear program in
``(v, t, d)`` whose maximum over the polytope ``V`` sits at a vertex, so the relaxation of ``v``
to the whole ball costs nothing: the model is exact with binaries for the unstable neurons
only — no sign binaries for ``||∇||_1`` and no selection binaries for ``||∇||_∞``.

A network with slopes ``α`` (:mod:`lipopt.activation`) switches by ``D = α + (1 - α) a``:
``d_k = α t_k + (1 - α) a_k ⊙ t_k`` (:func:`~lipopt.formulation.backward.add_switched_layer`);
the tangent bounds must then hold for that ``D`` (:func:`~lipopt.bounds.tangent.tangent_bounds`).

``V``: ℓ∞ input norm ``v ∈ [-1, 1]^d``; ℓ1 input norm ``v = v⁺ - v⁻``, ``Σ (v⁺ + v⁻) <= 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from lipopt.bounds.tangent import TangentBounds
from lipopt.formulation.backward import add_switched_layer
from lipopt.formulation.objective import box_ball, l1_ball
from lipopt.formulation.terms import Term, linear_map
from lipopt.lazy import PYOMO, lazy_module
from lipopt.network import Network
from lipopt.norms import InputNorm

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)

#: the unit ball of each input norm, as variables ``v`` (ℓ∞) or ``v_pos - v_neg`` (ℓ1)
DIRECTION_BALLS: dict[InputNorm, Callable[[pe.ConcreteModel, int], list[Term]]] = {
    InputNorm.LINF: partial(box_ball, name="v"),
    InputNorm.L1: partial(l1_ball, name="v"),
}


def add_tangent(
    model: pe.ConcreteModel,
    network: Network,
    states: Sequence[np.ndarray],
    tangent: TangentBounds,
    activations: list[dict[int, pe.Var]],
    norm: InputNorm,
    c: Sequence[float],
) -> Term:
    """Encode ``c^T J(x) v`` forward; returns it (a linear expression or a number).

    Components per hidden layer k (1-based): ``t{k}[i]`` the tangent of the pre-activation,
    ``d{k}[i]`` the switched tangent ``a·t`` of an unstable neuron, constraints ``tswitch{k}``.
    """
    affines = network.affine_layers
    slopes = None if network.is_relu else network.slopes
    current: list[Term] = DIRECTION_BALLS[norm](model, network.input_dim)
    for k, (affine, state) in enumerate(zip(affines[:-1], states), start=1):
        lower, upper = tangent.lower[k - 1], tangent.upper[k - 1]
        t = linear_map(affine.matrix, current, np.zeros(affine.out_features))
        names = (f"t{k}", f"d{k}", f"tswitch{k}")
        alpha = None if slopes is None else slopes[k - 1]
        current = add_switched_layer(
            model, t, (lower, upper), state, activations[k - 1], names, alpha
        )
    weights = affines[-1].weight.T @ np.asarray(c, dtype=np.float64)
    return linear_map(weights[None, :], current, np.zeros(1))[0]
