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
With slopes ``α`` (:mod:`lipopt.activation`) each gate ``a`` becomes ``D = α + (1 - α) a``
(1 on an active neuron, ``α`` on an inactive one): writing ``D = p + q a``, each product
``D_1i D_2b`` expands into a constant, two gates and ``q_1i q_2b a_1i a_2b``, whose coefficient's
sign picks its linearisation as above. A ReLU network gives the terms above exactly.

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
from lipopt.lazy import PYOMO, lazy_module
from lipopt.network import Network

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)

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
    slopes: tuple[FloatArray, FloatArray] | None = None

    def gate_forms(self) -> tuple[tuple[list[float], list[float]], ...]:
        """Per hidden layer, ``(p, q)`` with each neuron's ``D = p + q·a``: ``(1, 0)`` active,
        ``(α, 0)`` inactive, ``(α, 1 - α)`` unstable (``α = 0`` without slopes)."""
        forms = []
        for layer, states in enumerate(self.states):
            alpha = np.zeros(states.size) if self.slopes is None else self.slopes[layer]
            active, unstable = states == NeuronState.ACTIVE, states == NeuronState.UNSTABLE
            p = np.where(active, 1.0, alpha)
            q = np.where(unstable, 1.0 - alpha, 0.0)
            forms.append((p.tolist(), q.tolist()))
        return tuple(forms)

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
    slopes = None if network.is_relu else (network.slopes[0], network.slopes[1])
    return GateProducts(
        np.asarray(affines[0].weight, dtype=np.float64),
        np.asarray(coupling, dtype=np.float64),
        (np.asarray(states[0]), np.asarray(states[1])),
        slopes,
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
    (first_p, first_q), (second_p, second_q) = products.gate_forms()
    first, second = activations[0], activations[1]  # the unstable neurons' binaries
    terms: list[Any] = []
    constant = 0.0
    both: list[tuple[int, int, float]] = []  # products of two unstable gates, coefficients
    for i in range(len(first_p)):
        for b in range(len(second_p)):
            coefficient = float(q[i, b])
            if coefficient == 0.0:
                continue
            # coefficient · (p_i + q_i a_i)(p_b + q_b a_b), expanded; zero parts left out
            constant += coefficient * first_p[i] * second_p[b]
            if (weight := coefficient * first_p[i] * second_q[b]) != 0.0:
                terms.append(weight * second[b])
            if (weight := coefficient * first_q[i] * second_p[b]) != 0.0:
                terms.append(weight * first[i])
            if (weight := coefficient * first_q[i] * second_q[b]) != 0.0:
                both.append((i, b, weight))
    model.prod_y = pe.Var(range(len(both)), bounds=(0.0, 1.0))
    model.prod_links = pe.ConstraintList()
    for n, (i, b, coefficient) in enumerate(both):
        y = model.prod_y[n]
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
