"""The ℓ1 input norm's objective as a union: ``max_x ||g(x)||_∞ = max_{(j, ±)} max_x ±g_j(x)``,
one small MIP per candidate ``±g_j`` instead of one MIP with a selection binary per candidate."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from lipopt.bracket import Bracket
from lipopt.formulation.objective import set_candidate
from lipopt.formulation.products import GateProducts, remove_products, set_products
from lipopt.heuristics.starts import sampled_witness
from lipopt.heuristics.witness import Witness, best_witness
from lipopt.policy import Policy
from lipopt.strategies.pieces import Piece, Pieces, Union, solve_pieces
from lipopt.strategies.refine import ModelProblem


def decomposed(
    problem: ModelProblem,
    timings: dict[str, float],
    start_witness: Witness | None,
    products: GateProducts | None,
    policy: Policy,
) -> Bracket:
    """One MIP per candidate ``±g_j``, best static upper bound first.

    A candidate is skipped when its upper bound is at most a value already known to be reached
    (the best verified witness, or the largest candidate lower bound, which ``||g||_∞`` reaches
    everywhere). Every solve requires ``±g_j >= cutoff`` with the cutoff just below the best
    verified value, so an infeasible verdict proves the candidate cannot beat it. The upper
    bound is the largest of the candidates' proven bounds (solved, cut off, skipped or left
    unsolved at the time limit). With several workers, candidates are solved side by side on
    forked copies of the model, each with the cutoff known when it starts; answers are taken as
    they finish, so where several points attain the best value the witness returned may differ
    from run to run (the value does not), and ``model`` is the parent's copy (without the
    candidates' objectives, cutoffs or no-good cuts). ``start_witness``: a verified point found
    before (the attack's), the first best; with a fixed c the best of the sampled points and
    their wide pattern climb may replace it. ``products`` (two hidden layers, fixed c): each
    candidate is maximised as a sum of gate products (:func:`set_products`) instead.
    """
    lip, query = problem.lip, problem.query
    candidates = lip.candidates
    known = max(c.lower for c in candidates)  # ||g||_∞ >= known at every point
    if query.fixed_c:
        start = time.perf_counter()
        sampled = sampled_witness(query, problem.rng, problem.deadline, policy)
        timings["sampling"] = time.perf_counter() - start
        if sampled is not None and (
            start_witness is None or sampled.norm_value > start_witness.norm_value
        ):
            start_witness = sampled
            problem.say(f"sampling: {sampled.norm_value:.6g} attained; the candidates must beat it")
    pieces = Pieces(start_witness)
    union = Union(
        [Piece(n, cand.upper, _describe(problem, n)) for n, cand in enumerate(candidates)],
        _arranger(problem, products),
        known,
        lambda count: f"solving the candidates on {count} processes" if count > 1 else "",
    )
    solve_pieces(problem, union, pieces, timings, policy)
    if pieces.best is None:  # nothing solved: a few random points, each region checked
        pieces.best = best_witness(
            query.network, query.domain, query.seed, query.norm,
            list(query.domain.sample(8, problem.rng)), problem.rng,
        )  # fmt: skip
    stats = dict(
        candidates=len(candidates),
        candidates_solved=pieces.solved,
        candidates_cut_off=pieces.cut_off,
        gate_products=int(products is not None),
    )
    return pieces.bracket(problem, known, timings, stats, "none (bounds sufficed)")


def _describe(problem: ModelProblem, n: int) -> Callable[[float], str]:
    candidates = problem.lip.candidates
    cand = candidates[n]
    sign = "+" if cand.sign > 0 else "-"
    return lambda reached: (
        f"candidate {n + 1}/{len(candidates)}: max {sign}g[{cand.index}] "
        f"(bound {cand.upper:.6g}, best {reached:.6g})"
    )


def _arranger(
    problem: ModelProblem, products: GateProducts | None
) -> Callable[[int, float | None], contextlib.AbstractContextManager[None]]:
    """Sets the model up as candidate ``n`` under ``cutoff``: its objective (through the
    backward pass, or as gate products) replaces the previous candidate's."""
    lip = problem.lip

    @contextlib.contextmanager
    def arrange(n: int, cutoff: float | None) -> Iterator[None]:
        candidate = lip.candidates[n]
        if products is None:
            set_candidate(lip.model, lip.gradient, candidate, cutoff)  # replaced by the next
            yield
            return
        set_products(lip.model, lip.activations, products, candidate, cutoff)
        try:
            yield
        finally:  # the backward model of the candidate again
            remove_products(lip.model)
            set_candidate(lip.model, lip.gradient, candidate, cutoff)

    return arrange
