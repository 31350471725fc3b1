"""Tangent bounds tightened by the Lipschitz constants of sub-networks (forward formulation).

The forward model (:mod:`lipopt.formulation.tangent`) switches each hidden layer's tangent
``t_k = J_k(x) v`` by the activation binaries, with big-M constants from bounds on ``t_k``.
For neuron ``i`` of hidden layer ``k``, over ``x`` in the domain and ``v`` in the unit ball ``V``
of the input norm α,

    max t_k[i] = max_x max_{v ∈ V} ∇z_k[i](x) · v = max_x ||∇z_k[i](x)||_{α*} =: L_ki,

the local Lipschitz constant of the scalar sub-network ``x ↦ z_k[i](x)`` (affine layers
``0 .. k``), and ``min t_k[i] = -L_ki`` because ``V = -V``. The CROWN bounds of
:mod:`lipopt.bounds.tangent` relax every earlier switch on its own; ``L_ki`` counts only the
activation patterns that inputs of the domain reach. On the speed benchmark's [16,16,16,2]
unit box it was 50–63% of the CROWN bound at the second hidden layer.

Each ``L_ki`` is the forward model of the sub-network with ``c = e_i``: a smaller MIP, solved
with a time limit. Its *proven* bound is used (never the incumbent), widened by
:data:`WIDEN`, so a stop at the time limit only leaves a looser bound, never an unsound one;
without a proven bound the neuron keeps CROWN's. Where the sub-network has one hidden layer
(``k = 1``) and the domain is a box, the linear-region search (:mod:`lipopt.search.regions`) tries
first, within :data:`SEARCH_NODES` nodes and the neuron's share of the time: its regions are
those of one hyperplane arrangement, and a finished search gives ``L_ki`` exactly, over the
full-dimensional regions. That can be below the sub-MIP's maximum, which may also pick gates
that only meet on a boundary between regions; it still bounds the tangent at every interior
point of a region, and the constant is attained at such points, so the forward model keeps the
constant and its proven bounds stay sound. Layer by layer: the sub-MIPs of layer ``k`` use the
tightened bounds of the layers before it, and CROWN bounds layer ``k + 1`` from them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import NetworkBounds, NeuronState, bounds_from_pre_activations
from lipopt.bounds.tangent import TangentBounds, tangent_bounds
from lipopt.domain import Box, Domain, LinfBall
from lipopt.network import Network
from lipopt.norms import InputNorm
from lipopt.search.regions import RegionOptions, search_regions
from lipopt.solvers import SolveOptions
from lipopt.solvers.base import Solver

FloatArray = NDArray[np.float64]

#: default seconds for all sub-MIPs of one call
TIME_BUDGET = 30.0
#: relative gap at which a sub-MIP stops: its bound is then within 0.1% of L_ki
SUB_GAP = 1e-3
#: node limit of a sub-network's region search (one hidden layer, box domains)
SEARCH_NODES = 2000
#: a sub-network's region search gives up when it projects more nodes than this
SEARCH_PROJECTED_LIMIT = 50_000
#: relative outward widening of a sub-MIP's proven bound (the solver's own tolerances)
WIDEN = 1e-6


def budget_for(time_limit: float | None) -> float:
    """Seconds for all sub-MIPs of one solve: :data:`TIME_BUDGET`, and at most a tenth of the
    time limit."""
    if time_limit is None:
        return TIME_BUDGET
    return min(TIME_BUDGET, 0.1 * time_limit)


def prefix_network(network: Network, k: int) -> Network:
    """The sub-network ``x ↦ z_k(x)``: affine layers ``0 .. k`` with the activations between
    them (their slopes ``α`` too)."""
    slopes = None if network.is_relu else network.slopes[:k]
    return Network.from_affines(network.affine_layers[: k + 1], slopes)


class _Refiner:
    """The ``refine`` hook of :func:`~lipopt.bounds.tangent.tangent_bounds`: each live neuron
    ``i`` of hidden layer ``k >= 1`` bounded by ``±L_ki`` (widened by :data:`WIDEN`), widest
    CROWN range first, each with an equal share of the budget left; ``stats`` counts the work."""

    def __init__(
        self,
        network: Network,
        domain: Domain,
        bounds: NetworkBounds,
        norm: InputNorm,
        adapter: Solver,
        deadline: float,
    ) -> None:
        self.network = network
        self.domain = domain
        self.bounds = bounds
        self.norm = norm
        self.adapter = adapter
        self.deadline = deadline
        self.stats = {
            "sub_mips": 0.0, "searches": 0.0, "searched": 0.0, "tightened": 0.0, "seconds": 0.0
        }  # fmt: skip
        self.box = domain if isinstance(domain, Box) else None
        if isinstance(domain, LinfBall):
            self.box = domain.as_box()  # the same set

    def __call__(
        self,
        k: int,
        lowers: Sequence[FloatArray],
        uppers: Sequence[FloatArray],
        lo: FloatArray,
        hi: FloatArray,
    ) -> tuple[FloatArray, FloatArray]:
        lo, hi = lo.copy(), hi.copy()
        bounds = self.bounds
        prefix = prefix_network(self.network, k)
        prefix_tangent = TangentBounds(tuple(lowers), tuple(uppers))
        live = np.flatnonzero(_live(bounds, k))
        order = live[np.argsort(-(hi[live] - lo[live]), kind="stable")]
        for position, i in enumerate(order):
            remaining = self.deadline - time.perf_counter()
            if remaining <= 0:
                break
            c = np.zeros(prefix.output_dim)
            c[i] = 1.0
            # the forward model reads only the pre-activation bounds of the prefix
            prefix_bounds = bounds_from_pre_activations(
                prefix, list(bounds.pre_lower[:k]), list(bounds.pre_upper[:k]), c
            )
            share = remaining / (len(order) - position)
            bound = None
            if self.box is not None and k == 1 and SEARCH_NODES > 0:
                bound = self._search(prefix, c, prefix_bounds, share)
                if bound is None:
                    remaining = self.deadline - time.perf_counter()
                    if remaining <= 0:
                        break
                    share = remaining / (len(order) - position)
            if bound is None:
                bound = self._sub_mip(prefix, c, prefix_bounds, prefix_tangent, share)
                if bound is None:
                    continue
            bound += WIDEN * max(1.0, abs(bound))
            if bound < hi[i] or -bound > lo[i]:
                self.stats["tightened"] += 1
            hi[i] = min(hi[i], bound)
            lo[i] = max(lo[i], -bound)
        return lo, hi

    def _search(
        self, prefix: Network, c: FloatArray, prefix_bounds: NetworkBounds, share: float
    ) -> float | None:
        """``L_ki`` by the region search on the box (one hidden layer), or None when it did not
        finish within :data:`SEARCH_NODES` nodes, its projection and ``share`` seconds."""
        assert self.box is not None
        options = RegionOptions(
            node_limit=SEARCH_NODES,
            time_limit=share,
            projected_limit=SEARCH_PROJECTED_LIMIT,
        )
        try:
            found = search_regions(prefix, self.box, c, self.norm, prefix_bounds, options)
        except RuntimeError:  # an LP it could not decide: the sub-MIP answers instead
            found = None
        self.stats["searches"] += 1
        if found is not None and found.complete and np.isfinite(found.upper):
            self.stats["searched"] += 1
            return float(found.upper)
        return None

    def _sub_mip(
        self,
        prefix: Network,
        c: FloatArray,
        prefix_bounds: NetworkBounds,
        prefix_tangent: TangentBounds,
        share: float,
    ) -> float | None:
        """The proven bound of the sub-network's forward MIP with ``c = e_i`` (relative gap
        :data:`SUB_GAP`, ``share`` seconds), or None without a finite one."""
        from lipopt.formulation.build import Formulation, ModelSpec, build  # pyomo: not at import

        lip = build(
            prefix, self.domain, c, self.norm, prefix_bounds,
            ModelSpec(formulation=Formulation.FORWARD, tangent=prefix_tangent),
        )  # fmt: skip
        result = self.adapter.solve(lip.model, SolveOptions(time_limit=share, rel_gap=SUB_GAP))
        self.stats["sub_mips"] += 1
        if result.bound is None or not np.isfinite(result.bound):
            return None
        return float(result.bound)


def _live(bounds: NetworkBounds, k: int) -> NDArray[np.bool_]:
    """The neurons of hidden layer ``k`` whose tangent reaches the next layer: all but the
    inactive ones of slope 0 (an inactive neuron of slope ``α`` passes ``α t``)."""
    live = bounds.states[k] != NeuronState.INACTIVE
    return live if bounds.slopes is None else live | (bounds.slopes[k] != 0.0)


def subnet_tangent_bounds(
    network: Network,
    domain: Domain,
    bounds: NetworkBounds,
    norm: InputNorm | str,
    adapter: Solver,
    time_budget: float = TIME_BUDGET,
    say: Callable[[str], None] | None = None,
) -> tuple[TangentBounds, dict[str, float]]:
    """The tangent bounds of :func:`~lipopt.bounds.tangent.tangent_bounds`, with every live
    neuron of hidden layers ``1 ..`` also bounded by ``±L_ki`` (widest CROWN range first, an
    equal share of the budget left each). ``adapter``: a solver adapter for the sub-MIPs.
    Stats: ``sub_mips``, ``searches`` (region searches tried), ``searched`` (of them finished,
    so no sub-MIP), ``tightened`` (neurons whose range shrank), ``seconds``."""
    input_norm = InputNorm.polyhedral(norm, "the forward formulation")
    start = time.perf_counter()
    refine = _Refiner(network, domain, bounds, input_norm, adapter, start + time_budget)
    tangent = tangent_bounds(network, bounds.states, input_norm, refine=refine)
    stats = refine.stats
    stats["seconds"] = time.perf_counter() - start
    if say is not None:
        say(
            f"tangent bounds: {int(stats['searched'])} sub-network region searches and "
            f"{int(stats['sub_mips'])} sub-network MIPs tightened "
            f"{int(stats['tightened'])} neurons in {stats['seconds']:.1f} s"
        )
    return tangent, stats


__all__ = [
    "SEARCH_NODES",
    "SEARCH_PROJECTED_LIMIT",
    "SUB_GAP",
    "TIME_BUDGET",
    "WIDEN",
    "budget_for",
    "prefix_network",
    "subnet_tangent_bounds",
]
