"""One built model maximised: solve, and while the optimum sits on a lower-dimensional region,
exclude its activation pattern by a no-good cut and solve again (paper Theorem 2 needs general
position; the margin LP tells us when it fails). Over an ℓ2 ball taken by its bounding box, a
region that misses the ball is such a region too, and a tangent cut at the solver's point goes
with its no-good cut (:func:`exclude_region`).

:class:`ModelProblem` is a built model with everything its solves need; :func:`solve_refined`
maximises it once, with its refinements.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import NetworkBounds, NeuronState
from lipopt.config import Mode
from lipopt.formulation import LipschitzModel
from lipopt.formulation.forward import add_tangent_cut
from lipopt.heuristics.attack import project
from lipopt.heuristics.witness import Witness, best_witness, value_at
from lipopt.lazy import PYOMO, lazy_module
from lipopt.progress import Say, heartbeat
from lipopt.query import Query
from lipopt.solvers import SolveOptions, SolverError, SolveResult, SolverFailure, Termination
from lipopt.status import Status
from lipopt.verify import Dimension, Neuron, RegionCheck, check_region

pe = lazy_module(PYOMO)

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ModelProblem:
    """One built model and everything its solves need (its pieces fix something in it: the ℓ1
    decomposition's candidates, the halves of the sign and gate splits)."""

    query: Query
    lip: LipschitzModel
    net_bounds: NetworkBounds
    adapter: Any
    options: SolveOptions
    deadline: float | None
    max_refinements: int | None
    gap: float | None
    rng: np.random.Generator
    say: Say
    workers: int | None

    network = property(lambda self: self.query.network)
    domain = property(lambda self: self.query.domain)
    seed = property(lambda self: self.query.seed)
    norm = property(lambda self: self.query.norm)

    def remaining(self) -> float | None:
        """Seconds to the deadline (None without one)."""
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def witness_of(self, points: list[FloatArray]) -> Witness | None:
        """The best verified point among the solver's points (no random fallback)."""
        q = self.query
        return best_witness(q.network, q.domain, q.seed, q.norm, points, self.rng, fallback=False)


@dataclass
class Solved:
    """One maximisation of ``model.objective`` with its no-good-cut refinements.

    Attributes:
        first, last: the first and the last solver answer.
        upper: proven upper bound on the objective's maximum over full-dimensional regions
            (None when the solver proved none).
        witness: a point whose (full-dimensional) activation region the solver's optimum lies
            in, with the dual norm attained there; None if no pattern could be certified.
        points: the solver's first input point (clipped to the domain), to try as a witness.
        cut_off: the model was infeasible under the cutoff ``objective >= cutoff``: the
            maximum is below the cutoff.
    """

    first: SolveResult
    last: SolveResult
    upper: float | None
    witness: Witness | None
    points: list[FloatArray]
    refinements: int = 0
    nodes: int = 0
    solve_seconds: float = 0.0
    cut_off: bool = False


def solve_refined(
    problem: ModelProblem,
    options: SolveOptions,
    relax: bool,
    say: Say,
    cutoff: float | None = None,
) -> Solved:
    """Solve; while the optimum's activation region is lower-dimensional (so the optimum is
    not attained by any gradient), exclude its pattern by a no-good cut and re-solve. A racer's
    solves report their bounds through ``options.stop``."""
    start = time.perf_counter()
    with heartbeat(say, "solving", options.time_limit):
        first = solve_once(problem.adapter, problem.lip.model, options)
    solved = Solved(first, first, None, None, [], nodes=first.nodes or 0)
    solved.solve_seconds = time.perf_counter() - start
    if cutoff is not None and first.termination is Termination.INFEASIBLE:
        return replace(solved, upper=cutoff, cut_off=True)
    raise_on_failure(first)
    solved.upper = None if first.bound is None else float(first.bound)
    if not relax:
        _refine(problem, options, say, cutoff, solved)
    if first.values is not None:
        solved.points.append(solver_point(problem, first.values))
    return solved


def _refine(
    problem: ModelProblem, options: SolveOptions, say: Say, cutoff: float | None, solved: Solved
) -> None:
    """The refinement loop of :func:`solve_refined`, updating ``solved``."""
    lip, query = problem.lip, problem.query
    while solved.last.values is not None:
        values = solved.last.values
        pattern = full_pattern(lip, problem.net_bounds, values)
        left = problem.remaining()  # the check of a finished solve gets at least a second
        check = check_region(
            query.network, pattern, query.domain, None if left is None else max(left, 1.0)
        )
        if check.dimension is Dimension.FULL and check.point is not None:
            hint = w_values(lip, values)
            value = value_at(query.network, check.point, query.seed, query.norm, hint)
            solved.witness = Witness(check.point, value, True)
            return
        remaining = problem.remaining()
        if (
            check.dimension is not Dimension.LOWER
            or solved.last.termination is not Termination.OPTIMAL
            or (
                problem.max_refinements is not None
                and solved.refinements >= problem.max_refinements
            )
            or (remaining is not None and remaining <= 0)
            or not exclude_region(problem, values, check)
        ):
            return
        solved.refinements += 1
        say(f"optimum on a region that is lower-dimensional or misses the domain; excluding it "
            f"and re-solving ({solved.refinements})")  # fmt: skip
        if _resolve(problem, options, remaining, cutoff, solved):
            return


def _resolve(
    problem: ModelProblem,
    options: SolveOptions,
    remaining: float | None,
    cutoff: float | None,
    solved: Solved,
) -> bool:
    """Solve again after a no-good cut; True when the cutoff closed the search."""
    solve_start = time.perf_counter()
    result = solve_once(problem.adapter, problem.lip.model, replace(options, time_limit=remaining))
    solved.solve_seconds += time.perf_counter() - solve_start
    solved.nodes += result.nodes or 0
    solved.last = result
    if cutoff is not None and result.termination is Termination.INFEASIBLE:
        # every pattern left is below the cutoff; the excluded ones cannot attain L
        solved.upper = cutoff if solved.upper is None else min(solved.upper, cutoff)
        solved.cut_off = True
        return True
    raise_on_failure(result)
    if result.termination is Termination.OPTIMAL and result.bound is not None:
        # the excluded patterns cannot attain L
        bound = float(result.bound)
        solved.upper = bound if solved.upper is None else min(solved.upper, bound)
    return False


def solve_once(adapter: Any, model: Any, options: SolveOptions) -> SolveResult:
    """One call of the adapter; an error of the solver that the adapter let through (not a
    :class:`~lipopt.solvers.SolverError`) is a :class:`~lipopt.solvers.SolverFailure` naming
    it, so the answer says ``solver_error`` instead of ending in a traceback."""
    try:
        return adapter.solve(model, options)
    except SolverError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported as the solver's failure, in one line
        raise SolverFailure(f"{adapter.name} failed: {type(exc).__name__}: {exc}") from exc


def solver_point(problem: ModelProblem, values: Any) -> FloatArray:
    """The solver's input point projected onto the domain (a point outside it, as the ℓ2 ball's
    bounding box allows, is no witness; an input no constraint uses, as in a network without
    hidden layers, has no solver value: the domain's centre)."""
    return project(problem.query.domain, _raw_point(problem, values))


def _raw_point(problem: ModelProblem, values: Any) -> FloatArray:
    """The solver's input point, clipped to the domain's bounding box."""
    low, high = problem.query.domain.bounding_box()
    x0 = np.array([values.get(v, np.nan) for v in problem.lip.x], dtype=np.float64)
    x0 = np.where(np.isnan(x0), (low + high) / 2.0, x0)
    return np.clip(x0, low, high)


def full_pattern(lip: LipschitzModel, bounds: NetworkBounds, values: Any) -> list[FloatArray]:
    """The full 0/1 activation pattern: known states, and rounded binaries for unstable neurons
    (a binary that no constraint uses, e.g. of a neuron that is 0 on the whole domain, is left
    out by the solver and taken as 0); an identity neuron (``α = 1``, ACTIVE, no binary) whose
    sign is open: ``[h > 0]`` at the solver's point (``h = z`` there)."""
    pattern = []
    for k, (state, layer_bins) in enumerate(zip(bounds.states, lip.activations)):
        mask = (state == NeuronState.ACTIVE).astype(np.float64)
        for i, var in layer_bins.items():
            mask[i] = 1.0 if values.get(var, 0.0) > 0.5 else 0.0
        if bounds.slopes is not None:
            open_sign = (bounds.slopes[k] == 1.0) & (bounds.pre_lower[k] < 0.0)
            h = lip.model.component(f"h{k + 1}")
            for neuron in np.flatnonzero(open_sign).tolist():
                mask[neuron] = 1.0 if values.get(h[neuron], 0.0) > 0.0 else 0.0
        pattern.append(mask)
    return pattern


def exclude_pattern(
    lip: LipschitzModel, values: Any, support: tuple[Neuron, ...] | None = None
) -> bool:
    """Add a no-good cut removing the incumbent's activation pattern; False if nothing to cut.

    With the ``support`` of a lower-dimensional verdict (:class:`~lipopt.verify.RegionCheck`)
    the cut names only the binaries of those neurons and of every layer below the deepest of
    them: it removes every pattern that agrees there, all lower-dimensional too (a network
    whose biases are zero has up to 2^n such patterns at the origin, one cut each without it).
    """
    binaries = [v for layer in _cut_layers(lip, support) for v in layer.values()]
    if not binaries:
        return False
    model = lip.model
    if model.component("excluded_patterns") is None:
        model.excluded_patterns = pe.ConstraintList()
    model.excluded_patterns.add(
        pe.quicksum((1 - v) if values.get(v, 0.0) > 0.5 else v for v in binaries) >= 1
    )
    return True


def exclude_region(problem: ModelProblem, values: Any, check: RegionCheck) -> bool:
    """The solver's optimum lies on a pattern whose region meets the domain in a
    lower-dimensional set (``check``: a ``LOWER`` verdict), which includes missing it: exclude
    the pattern (:func:`exclude_pattern`), and where the model takes an ℓ2 ball by tangent cuts
    and the solver's point lies outside the ball, cut it off there too
    (:func:`~lipopt.formulation.forward.add_tangent_cut`). False where nothing was cut."""
    point = _raw_point(problem, values)
    tangent = add_tangent_cut(problem.lip.model, problem.query.domain, point)
    return exclude_pattern(problem.lip, values, check.support) or tangent


def _cut_layers(lip: LipschitzModel, support: tuple[Neuron, ...] | None) -> list[dict]:
    """Per hidden layer, the binaries a no-good cut must name (see :func:`exclude_pattern`)."""
    if support is None:
        return list(lip.activations)
    deepest = max(layer for layer, _ in support)
    named = set(support)
    return [
        bins if k < deepest else {i: v for i, v in bins.items() if (k, i) in named}
        for k, bins in enumerate(lip.activations[: deepest + 1])
    ]


def w_values(lip: LipschitzModel, values: Any) -> FloatArray | None:
    """The solver's point ``w`` of the dual ball (None for a fixed c)."""
    model = lip.model
    if model.component("w") is not None:
        return np.array([values[v] for v in model.w.values()])
    if model.component("w_pos") is not None:
        return np.array(
            [values[p] - values[n] for p, n in zip(model.w_pos.values(), model.w_neg.values())]
        )
    return None


def raise_on_failure(result: SolveResult) -> None:
    """A solver answer that carries no bound: a clear error."""
    if result.termination is Termination.INFEASIBLE:
        raise SolverFailure(
            "the solver reported the Lipschitz model infeasible, which a sound model never is: "
            "numerical trouble in the solver (try another solver or rescale the network)"
        )
    if result.termination is Termination.ERROR:
        raise SolverFailure(
            f"{result.solver or 'the solver'} stopped with an error; no answer is reported "
            "(rerun with --verbose for its log)"
        )


def model_stats(lip: LipschitzModel) -> dict[str, int]:
    """Model sizes; in the LP relaxation the would-be binaries are continuous."""
    stats = dict(lip.stats)
    if lip.relaxed:
        stats["relaxed_binaries"] = stats["binaries"]
        stats["binaries"] = 0
    return stats


def solve_status(mode: Mode, gap: float | None, last: SolveResult) -> Status:
    """``relaxation`` for LipLP; ``gap_limit`` only where a requested gap was left open."""
    if mode is Mode.LP:
        return Status.RELAXATION
    if last.termination in (Termination.OPTIMAL, Termination.GAP_LIMIT):
        closed = last.gap is not None and last.gap <= SolveOptions.rel_gap
        return Status.OPTIMAL if closed or not gap else Status.GAP_LIMIT
    return last.termination.status


def refinement_message(refinements: int) -> str:
    """What the user should know about refinements (an optimum that is not proven attained is
    said where the result is built, :func:`lipopt.driver.honest`)."""
    if not refinements:
        return ""
    return (
        f"{refinements} optimal activation pattern(s) had lower-dimensional regions "
        "(network not in general position) and were excluded"
    )
