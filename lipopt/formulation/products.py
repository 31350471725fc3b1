"""A candidate ``±g_j`` of a two-hidden-layer network as a sum of products of its gates.

For ``f(x) = W_3 relu(W_2 relu(W_1 x + b_1) + b_2) + b_3`` and a fixed output weighting c, with
the activation gates ``a_1`` (first hidden layer) and ``a_2`` (second) of the point x,

    g(x)^T = c^T W_3 diag(a_2) W_2 diag(a_1) W_1,
    g_j(x) = Σ_{i, b} q_ib a_1i a_2b,   q_ib = W_1[i, j] · W_2[b, i] · (W_3^T c)_b,

a quadratic form in the gates. A stable neuron's gate is a number (1 active, 0 inactive); each
product of two unstable gates becomes a variable ``y_ib ∈ [0, 1]`` with only the side of its
linearisation that maximising ``Σ q_ib y_ib`` needs:

- ``q_ib > 0``: ``y_ib <= a_1i`` and ``y_ib <= a_2b`` (so ``q y <= q a_1i a_2b``);
- ``q_ib < 0``: ``y_ib >= a_1i + a_2b - 1`` (so again ``q y <= q a_1i a_2b``).

For every 0/1 gates, ``Σ q y <= g_j`` with equality at the best ``y``: the maximum, and any
cutoff ``Σ q y >= L``, are exactly those of ``g_j`` over the gates the forward pass allows. The
backward pass's switches are not needed for it and are switched off while the products stand.
Its LP relaxation is much tighter than the backward model's (the switches bound each
``W_2^T s_2`` entry as a whole; here every product keeps its own hull): on [16,16,16,2] over
the unit box, 2.74 against 3.58 for the first candidate (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import NeuronState
from lipopt.formulation.backward import backward_constraints
from lipopt.formulation.objective import Candidate, set_cutoff
from lipopt.lazy import lazy_module
from lipopt.network import Network

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module("pyomo.environ")

FloatArray = NDArray[np.float64]

#: the model components the products add (removed again by :func:`remove_products`)
PRODUCT_COMPONENTS = ("prod_y", "prod_links")


@dataclass(frozen=True)
class GateProducts:
    """``g_j = Σ_{i,b} W_1[i, j] · coupling[b, i] · a_1i a_2b`` for every input j.

    Attributes:
        first: ``W_1``, shape (n1, d).
        coupling: ``W_2[b, i] · (W_3^T c)_b``, shape (n2, n1).
        states: the states of the two hidden layers (active, inactive, unstable).
    """

    first: FloatArray
    coupling: FloatArray
    states: tuple[NDArray[np.int8], NDArray[np.int8]]

    def coefficients(self, candidate: Candidate) -> FloatArray:
        """``q_ib = sign · W_1[i, j] · coupling[b, i]`` of the candidate ``sign · g_j``, shape
        (n1, n2)."""
        column = self.first[:, candidate.index]
        return candidate.sign * (column[:, None] * self.coupling.T)


def gate_products(
    network: Network, c: Sequence[float] | FloatArray, states: Sequence[NDArray[np.int8]]
) -> GateProducts | None:
    """The product form of ``network`` with output weighting ``c``; None unless the network
    has exactly two hidden layers."""
    affines = network.affine_layers
    if len(affines) != 3:
        return None
    w = affines[2].weight.T @ np.asarray(c, dtype=np.float64)
    coupling = affines[1].weight * w[:, None]
    return GateProducts(
        np.asarray(affines[0].weight, dtype=np.float64),
        np.asarray(coupling, dtype=np.float64),
        (np.asarray(states[0]), np.asarray(states[1])),
    )


def set_products(
    model: pe.ConcreteModel,
    activations: Sequence[dict[int, Any]],
    products: GateProducts,
    candidate: Candidate,
    cutoff: float | None = None,
) -> None:
    """Maximise ``candidate`` as the sum of gate products (module docstring), replacing any
    earlier products; the backward pass's constraints are switched off. With ``cutoff``, also
    require the sum ``>= cutoff``."""
    remove_products(model, reactivate=False)
    q = products.coefficients(candidate)
    first_states, second_states = (states.tolist() for states in products.states)
    first, second = activations[0], activations[1]  # the unstable neurons' binaries
    active, inactive = int(NeuronState.ACTIVE), int(NeuronState.INACTIVE)  # plain ints: fast
    terms: list[Any] = []
    constant = 0.0
    both: list[tuple[int, int]] = []  # products of two unstable gates
    for i, first_state in enumerate(first_states):
        for b, second_state in enumerate(second_states):
            coefficient = float(q[i, b])
            if coefficient == 0.0 or inactive in (first_state, second_state):
                continue
            if first_state == active and second_state == active:
                constant += coefficient
            elif first_state == active:
                terms.append(coefficient * second[b])
            elif second_state == active:
                terms.append(coefficient * first[i])
            else:
                both.append((i, b))
    model.prod_y = pe.Var(range(len(both)), bounds=(0.0, 1.0))
    model.prod_links = pe.ConstraintList()
    for n, (i, b) in enumerate(both):
        y, coefficient = model.prod_y[n], float(q[i, b])
        if coefficient > 0:
            model.prod_links.add(y <= first[i])
            model.prod_links.add(y <= second[b])
        else:
            model.prod_links.add(y >= first[i] + second[b] - 1)
        terms.append(coefficient * y)
    for constraint in backward_constraints(model, 2):
        constraint.deactivate()
    model.objective.set_value(pe.quicksum(terms) + constant)
    set_cutoff(model, cutoff)


def remove_products(model: pe.ConcreteModel, reactivate: bool = True) -> None:
    """Remove the products of :func:`set_products`; with ``reactivate``, switch the backward
    pass back on (the objective is the caller's to reset)."""
    for name in PRODUCT_COMPONENTS:
        if model.component(name) is not None:
            model.del_component(name)
    if reactivate:
        for constraint in backward_constraints(model, 2):
            constraint.activate()


__all__ = ["GateProducts", "gate_products", "remove_products", "set_products"]
