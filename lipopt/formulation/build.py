"""Assemble the Lipschitz MIP: domain, forward pass, backward pass, dual-norm objective."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from lipopt.activation import describe
from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.bounds.tangent import TangentBounds, tangent_bounds
from lipopt.domain import Domain, L2Ball, ball_part
from lipopt.formulation.backward import add_backward
from lipopt.formulation.forward import add_ball_row, add_forward, add_input
from lipopt.formulation.l2 import (
    chord_binaries,
    first_breakpoints,
    gradient_variables,
    set_quadratic_objective,
    set_squared_objective,
)
from lipopt.formulation.objective import Candidate, add_dual_ball, add_objective
from lipopt.formulation.tangent import add_tangent
from lipopt.formulation.terms import Term
from lipopt.lazy import PYOMO, lazy_module
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm, _parse

if TYPE_CHECKING:  # the module itself, so that annotations may name pe.ConcreteModel
    import pyomo.environ as pe
else:
    pe = lazy_module(PYOMO)


class Formulation(str, Enum):
    """How the model differentiates the network.

    BACKWARD: the paper's chain rule from the output seed back to the input gradient, then
    the dual norm of the gradient (sign or selection binaries where its entries' signs are
    open). FORWARD: the directional derivative ``c^T J(x) v`` pushed forward from a direction
    ``v`` in the input norm's unit ball (:mod:`lipopt.formulation.tangent`): no objective
    binaries; fixed ``c`` only.
    """

    BACKWARD = "backward"
    FORWARD = "forward"

    @classmethod
    def parse(cls, value: str | Formulation) -> Formulation:
        return _parse(cls, value, "formulation")


@dataclass(eq=False)
class LipschitzModel:
    """A built Pyomo model with handles to the parts a caller needs.

    Attributes:
        model: the ``pyomo.environ.ConcreteModel``; maximise ``model.objective``.
        x: the input variables, one per input coordinate.
        activations: per hidden layer, ``{neuron: binary}`` for the unstable neurons.
        gradient: the input-gradient entries (numbers or linear expressions); empty for the
            forward formulation, which has no gradient variables.
        norm: the input norm whose dual the objective measures.
        relaxed: whether binaries were relaxed to [0, 1] (the LP relaxation, LipLP).
        w: the output weighting: numbers (a fixed c) or expressions over the dual ball.
        candidates: for a decomposed ℓ∞-dual objective, the pieces ``±g_j`` (best upper bound
            first) whose maxima's largest is the constant; empty otherwise.
        quadratic: the ℓ2 objective is ``t <= ||g||_2^2`` itself (for SCIP) instead of chords.
    """

    model: pe.ConcreteModel
    x: list[Any]
    activations: list[dict[int, Any]]
    gradient: list[Term]
    norm: InputNorm
    relaxed: bool
    w: list[Term] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    formulation: Formulation = Formulation.BACKWARD
    quadratic: bool = False

    @property
    def squared(self) -> bool:
        """The objective over-estimates ``||g||_2^2`` (ℓ2 input norm, :mod:`lipopt.formulation.l2`):
        its bound's square root bounds the constant."""
        return not self.norm.is_polyhedral

    def binaries(self) -> list[Any]:
        """Every 0/1 variable: activations, gradient signs ``g_sign``, max selections ``g_pick``,
        the ℓ2 chords' segments."""
        out = [a for layer in self.activations for a in layer.values()]
        for name in ("g_sign", "g_pick"):
            component = self.model.component(name)
            if component is not None:
                out.extend(component.values())
        return out + chord_binaries(self.model)


def _count(model: pe.ConcreteModel, ctype: type) -> int:
    return sum(1 for _ in model.component_data_objects(ctype, active=True, descend_into=True))


@dataclass(frozen=True)
class ModelSpec:
    """Which model to build: its LP relaxation (``relax``) or the MIP, the ℓ1 decomposition's
    first candidate (``decompose``), the :class:`Formulation`, the forward model's tangent
    bounds (``tangent``; default :func:`~lipopt.bounds.tangent.tangent_bounds`), and for ℓ2 the
    exact quadratic objective (``quadratic``, SCIP) instead of the chords; ``quadratic`` is also
    what the ℓ2 output norm's ball needs in exact mode. ``ball_row``: an ℓ2-ball domain as its
    quadratic row (else the ball's bounding box and tangent cuts; never in the LP relaxation)."""

    relax: bool = False
    decompose: bool = False
    formulation: Formulation | str = Formulation.BACKWARD
    tangent: TangentBounds | None = None
    quadratic: bool = False
    ball_row: bool = False


def build(
    network: Network,
    domain: Domain,
    seed: Seed,
    norm: InputNorm | str,
    bounds: NetworkBounds,
    spec: ModelSpec = ModelSpec(),
) -> LipschitzModel:
    """Build ``max_{x ∈ domain} ||∇(w^T f)(x)||_{norm*}`` as a MIP (or its LP relaxation).

    ``seed`` is a fixed vector ``c`` (then ``w = c``) or an :class:`OutputNorm`, whose dual ball
    ``w`` ranges over jointly with x (paper appendix E.1). ``decompose`` (exact ℓ1 input norm,
    backward formulation only): no selection binaries; ``model.objective`` is the first of
    ``candidates``. ``formulation``: see :class:`Formulation`; forward needs a fixed ``c``, and
    takes ``tangent`` bounds (default: :func:`~lipopt.bounds.tangent.tangent_bounds`). For the
    ℓ2 input norm (backward only) the objective is the first over-estimate of ``||g||_2^2``
    (:mod:`lipopt.formulation.l2`; :attr:`LipschitzModel.squared`).
    """
    input_norm = InputNorm.parse(norm)
    relax, tangent = spec.relax, spec.tangent
    form = Formulation.parse(spec.formulation)
    if form is Formulation.FORWARD and not input_norm.is_polyhedral:
        raise ValueError(
            "the forward formulation takes the linf and l1 input norms; for l2 use 'backward'"
        )
    if form is Formulation.FORWARD and isinstance(seed, OutputNorm):
        raise ValueError(
            "the forward formulation needs a fixed output weighting c, not an output norm"
        )
    _check_slopes(network, bounds)
    model = pe.ConcreteModel(name="lipschitz")
    x = add_input(model, domain)
    ball = ball_part(domain)
    if isinstance(ball, L2Ball) and spec.ball_row and not relax:
        add_ball_row(model, ball)
    activations = add_forward(model, network, bounds, x, relax)
    if form is Formulation.FORWARD:
        if tangent is None:
            tangent = tangent_bounds(network, bounds.states, input_norm)
        c = [float(v) for v in np.asarray(seed, dtype=np.float64)]
        value = add_tangent(model, network, bounds.states, tangent, activations, input_norm, c)
        model.objective = pe.Objective(expr=value, sense=pe.maximize)
        lip = LipschitzModel(model, x, activations, [], input_norm, relax, c, formulation=form)
        lip.stats = _model_stats(lip, bounds)
        return lip
    if isinstance(seed, OutputNorm):
        if not seed.is_polyhedral and not relax and not spec.quadratic:
            raise ValueError(
                "the l2 output norm's ball is a quadratic constraint, which only SCIP takes in "
                "exact mode (--solver scip or auto); --mode lp bounds it with any solver"
            )
        w = add_dual_ball(model, seed, network.output_dim, relax)
    else:
        w = [float(v) for v in np.asarray(seed, dtype=np.float64)]
    gradient = add_backward(model, network, bounds, activations, w)
    lip = LipschitzModel(model, x, activations, gradient, input_norm, relax, w)
    return OBJECTIVE_BUILDERS[input_norm](lip, bounds, spec)


def _check_slopes(network: Network, bounds: NetworkBounds) -> None:
    """Refuse bounds computed as if a network with non-ReLU activations had ReLUs only
    (``bounds.slopes`` None): their states and ranges would make the model wrong."""
    if bounds.slopes is None and not network.is_relu:
        kinds = "; ".join(describe(alpha) for alpha in network.slopes)
        raise ValueError(
            f"the {bounds.method} bounds do not take the network's activations ({kinds}): "
            "its MIP needs bounds with slopes (bounds='interval')"
        )


def _dual_norm_model(lip: LipschitzModel, bounds: NetworkBounds, spec: ModelSpec) -> LipschitzModel:
    """A polyhedral norm's model: the dual norm of the gradient as a linear objective
    (:func:`~lipopt.formulation.objective.add_objective`), or the first of its candidates."""
    lip.candidates = add_objective(
        lip.model,
        lip.gradient,
        bounds.input_grad_lower,
        bounds.input_grad_upper,
        lip.norm,
        lip.relaxed,
        decompose=spec.decompose and not lip.relaxed,
    )
    lip.stats = _model_stats(lip, bounds)
    return lip


def _squared_model(lip: LipschitzModel, bounds: NetworkBounds, spec: ModelSpec) -> LipschitzModel:
    """The ℓ2 model: gradient variables, and ``t <= ||g||_2^2`` (``spec.quadratic``, not in
    the LP relaxation) or the first over-estimate of ``||g||_2^2`` (the chord over each entry's
    bounds), which the ℓ2 strategy refines."""
    quadratic = spec.quadratic and not lip.relaxed
    lower, upper = bounds.input_grad_lower, bounds.input_grad_upper
    g = gradient_variables(lip.model, lip.gradient, lower, upper)
    if quadratic:
        set_quadratic_objective(lip.model, g, lower, upper)
    else:
        set_squared_objective(lip.model, g, first_breakpoints(lower, upper), lip.relaxed)
    lip.gradient, lip.quadratic = g, quadratic
    lip.stats = _model_stats(lip, bounds)
    return lip


#: the objective each input norm's backward model gets
OBJECTIVE_BUILDERS: dict[
    InputNorm, Callable[[LipschitzModel, NetworkBounds, ModelSpec], LipschitzModel]
] = {
    InputNorm.LINF: _dual_norm_model,
    InputNorm.L1: _dual_norm_model,
    InputNorm.L2: _squared_model,
}


def _model_stats(lip: LipschitzModel, bounds: NetworkBounds) -> dict[str, int]:
    return {
        "variables": _count(lip.model, pe.Var),
        "constraints": _count(lip.model, pe.Constraint),
        "binaries": len(lip.binaries()),
        "unstable_neurons": bounds.unstable_count,
    }
