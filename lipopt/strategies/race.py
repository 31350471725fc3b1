"""The race strategy (``formulation="auto"``): both formulations of one question, each on its own
process, the first exact answer taken (a *meet*: every answer along the way is certified, so
the result keeps the best upper and lower bounds of all of them).

First the backward model alone for ``race_after`` seconds (the probe; most problems finish
within it); if unfinished, the two racers (:func:`lipopt.parallel.race.race_answers`) for the time
left
— with ``split_leader`` until ``leader_after`` seconds, or earlier on a clear lead
(:func:`decisive`), then the leader solved again split in halves on both cores
(:func:`_split_leader`) — or, with ``sign_split``, the backward model split on a gradient sign
instead of the race (:func:`_split_instead`). Where the plan offers the activation branch and
bound and enough neurons are unstable (:func:`~lipopt.strategies.raced.bab_alone`), it runs
alone on every core instead of the race (:func:`_bab_instead`); on a Dask cluster it races the
backward model in the forward one's place (:func:`_with_bab`). Every sub-question goes to the
runner.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from lipopt.balance import balanced
from lipopt.bracket import Bracket, meet, noted
from lipopt.formulation.build import Formulation
from lipopt.parallel import race as racing
from lipopt.plan.nodes import Race, Racer
from lipopt.policy import Policy
from lipopt.progress import Say, heartbeat
from lipopt.query import Query
from lipopt.solvers import NoBoundError, SolverError
from lipopt.status import Status
from lipopt.strategies.context import Context, StopHook
from lipopt.strategies.floor import kept_after
from lipopt.strategies.raced import Entry, Raced, bab_alone, bab_takes, unstable_line


def run_race(node: Race, query: Query, limit: float | None, ctx: Context) -> Bracket:
    """Probe, then race, split instead, or split the leader (module docstring); without a
    probe (``node.probe`` False: a problem that looks hard) the race starts at once, and the
    backward racer runs the region search before its MIP."""
    start, policy = time.perf_counter(), ctx.policy
    network = balanced(query.network, policy.balance_ratio)
    # the query itself where balancing changed nothing (configure balanced it): the bounds it
    # keeps are the sub-questions' too
    asked = query if network is query.network else replace(query, network=network)
    problem = Raced(node, query, ctx, asked)
    probe_limit = policy.race_after if limit is None else min(policy.race_after, limit)
    probed: Bracket | None = None
    probe_error: NoBoundError | None = None
    if node.probe:
        try:
            probed = problem.solve(
                regions=False, split=False, time_limit=probe_limit,
                formulation=Formulation.BACKWARD, sign_split=False,
            )  # fmt: skip
        except NoBoundError as err:  # no proven bound yet: the racers start from scratch anyway
            probe_error = err
    probe_seconds = time.perf_counter() - start
    remaining = None if limit is None else limit - probe_seconds
    too_late = remaining is not None and remaining < policy.min_race_seconds
    if probed is not None and (probed.status != Status.TIME_LIMIT or too_late):
        return probed
    if probe_error is not None and too_late:
        raise probe_error
    if node.instead:
        return _split_instead(problem, remaining, probed, probe_seconds)
    if bab_alone(node, query):
        return _bab_instead(problem, remaining, probed, probe_seconds)
    problem = _with_bab(problem)
    return _race(problem, remaining, probed, probe_seconds, probe_limit)


def _with_bab(problem: Raced) -> Raced:
    """The race with the plan's branch and bound in the forward racer's place (and no leader
    split) where :func:`~lipopt.strategies.raced.bab_takes` on a Dask cluster (there the branch
    and bound's own search keeps one process); else as planned."""
    node = problem.node
    if node.bab_racer is None or not bab_takes(node, problem.query):
        return problem
    racers = tuple(
        node.bab_racer if racer.formulation is Formulation.FORWARD else racer
        for racer in node.racers
    )
    problem.ctx.say(
        f"{unstable_line(problem)}: the {node.bab_racer.name} races in the forward model's place"
    )
    return replace(problem, node=replace(node, racers=racers, split_leader=False))


def _entries(problem: Raced, race_limit: float | None) -> dict[str, Entry]:
    """Each racer's question."""
    query = problem.query
    return {
        racer.name: Entry(
            problem.config(
                regions=racer.regions,
                split=False,
                time_limit=race_limit,
                formulation=racer.formulation,
            ).but(
                solver=racer.solver,
                attack=problem.attack,
                sign_split=False,
                bab=True if racer.bab else problem.node.config.bab,
            ),
            query.norm,
            query.seed,
        )  # fmt: skip
        for racer in problem.node.racers
    }


def _race(
    problem: Raced,
    remaining: float | None,
    probed: Bracket | None,
    probe_seconds: float,
    probe_limit: float,
) -> Bracket:
    """The racers for the time left (or until the leader decision); the answer or the split."""
    node, policy, say = problem.node, problem.ctx.policy, problem.ctx.say
    # split_leader: the racers stop at the decision if enough time is left for the split after it
    decide = node.split_leader and (
        remaining is None or remaining >= policy.leader_after + policy.min_leader_split_seconds
    )
    entries = _entries(problem, policy.leader_after if decide else remaining)
    names = " and the ".join(entries)
    until = f" for {policy.leader_after:g} s" if decide else ""
    say(
        f"not finished in {probe_limit:g} s: racing the {names} model on two processes{until}..."
        if node.probe
        else f"racing the {names} model on two processes{until} (the backward one searches "
        "regions first)..."
    )
    race_start = time.perf_counter()
    try:
        winner, answers, decide = _run_racers(problem, entries, remaining, decide)
    except SolverError as err:  # every racer failed, or none answered in time
        return kept_after(probed, err, say, "the race")
    race_seconds = time.perf_counter() - race_start
    earlier = [] if probed is None else [probed]
    result = answers[winner] if winner is not None else meet(list(answers.values()))
    # the answering racer's own stages, the probe, and the race's overhead beyond those stages
    # (starting processes, waiting for the slower racer's verdict): together the wall time
    timings_before = {"probe": probe_seconds} if node.probe else {}
    timings = dict(result.timings, **timings_before)
    timings["race"] = max(race_seconds - sum(result.timings.values()), 0.0)
    if winner is None and decide:
        left = None if remaining is None else remaining - race_seconds
        leader = min(answers, key=lambda name: answers[name].upper)
        racer = next(r for r in node.racers if r.name == leader)
        return _split_leader(
            problem, answers, racer, left, earlier, dict(timings_before, race=race_seconds)
        )
    # timings["race"] is the race's time beyond the answering racer's own stages (so the
    # timings add up to the wall time); the note gives the race's whole wall time
    note = (
        f"the {winner} model finished first of the two raced"
        if winner is not None
        else "neither raced model finished; best bounds of both kept"
    ) + f" (the race ran {race_seconds:.1f} s)"
    return noted(meet([result, *earlier]), timings, note, say)


def _run_racers(
    problem: Raced,
    entries: dict[str, Entry],
    remaining: float | None,
    decide: bool,
) -> tuple[str | None, dict[str, Bracket], bool]:
    """The race itself: ``(winner or None, answers, whether the decision still stands)``."""
    say, policy = problem.ctx.say, problem.ctx.policy
    network, domain = problem.query.network, problem.query.domain
    run = _racer_runner(problem)
    race_limit = entries[next(iter(entries))]["time_limit"]
    race_start = time.perf_counter()
    try:
        with heartbeat(say, "racing", race_limit):
            # the racers stop themselves at race_limit; their preparation (bounds, build,
            # attack) may take longer, so wait for them as long as the caller's limit allows
            winner, answers = racing.race_answers(
                network, domain, entries, remaining,
                stop_when=decisive(say, policy) if decide else None, run=run,
                slack=policy.slack(remaining),
            )  # fmt: skip
    except NoBoundError:
        left = None if remaining is None else remaining - (time.perf_counter() - race_start)
        if not decide or (left is not None and left < policy.min_race_seconds):
            raise
        # no racer proved a bound by the decision (a large model): race for the time left
        say(
            f"no racer proved a bound in {policy.leader_after:g} s; "
            "racing them for the time left..."
        )
        entries = {name: entry.but(time_limit=left) for name, entry in entries.items()}
        with heartbeat(say, "racing", left):
            winner, answers = racing.race_answers(
                network, domain, entries, left, run=run, slack=policy.slack(left)
            )
        decide = False
    return winner, answers, decide


def _racer_runner(problem: Raced) -> Callable[[str, Entry, StopHook], Bracket]:
    """What a racer's process runs: its question, silently, its MIPs reporting to ``stop``."""
    ctx = problem.ctx

    def run(name: str, entry: Entry, stop: StopHook) -> Bracket:
        answer = ctx.runner.solve(problem.asked, entry.config, ctx.quiet().racing(stop))
        return replace(answer, model=None)

    return run


def decisive(say: Say, rule: Policy) -> Callable[[float, dict[str, float]], bool]:
    """``split_leader``'s early decision (:func:`~lipopt.parallel.race.race_answers`'
    ``stop_when``):
    from ``early_leader_after`` seconds into the race, stop the racers once one's proven bound
    is at least ``decisive_ratio`` times the other's."""

    def decide(seconds: float, bounds: dict[str, float]) -> bool:
        if seconds < rule.early_leader_after or len(bounds) < 2:
            return False
        (leader, low), (_, high) = sorted(bounds.items(), key=lambda item: item[1])
        if not (0.0 < low and np.isfinite(high) and high >= rule.decisive_ratio * low):
            return False
        say(
            f"after {seconds:.0f} s of the race the {leader} model's proven bound {low:.6g} is "
            f"{high / low:.2f} times below the other's ({high:.6g}): stopping the racers"
        )
        return True

    return decide


def _split_leader(
    problem: Raced,
    answers: dict[str, Bracket],
    racer: Racer,
    remaining: float | None,
    earlier: list[Bracket],
    timings: dict[str, float],
) -> Bracket:
    """Neither racer finished before the decision (at ``leader_after``, or earlier on a clear
    lead, :func:`decisive`; ``timings["race"]`` is how long the race ran): the leader (smaller
    proven upper bound) solved again from scratch, split in halves on both cores (the forward
    model on a first-layer gate; the backward one on a gradient sign), from the best point the
    racers attained, for the time left. The result keeps the best bounds of the racers, the
    split and ``earlier`` (the probe's); if the split fails or no time is left, the racers'
    stand."""
    say, form = problem.ctx.say, racer.formulation
    within = f"{timings['race']:.0f} s"  # the racers stopped at LEADER_AFTER or earlier
    raced = meet([*answers.values(), *earlier])
    gap = problem.node.config.gap
    within_gap = gap is not None and raced.gap is not None and raced.gap <= gap
    if raced.status == Status.OPTIMAL or within_gap:
        note = f"neither racer finished in {within}; together their bounds closed the gap"
        return noted(raced, timings, note, say)
    if remaining is not None and remaining < problem.ctx.policy.min_race_seconds:
        note = f"neither racer finished in {within} and no time is left to split"
        return noted(raced, timings, note, say)
    # the racers' best point, unless it sits a hair outside the domain (solver tolerance)
    point = raced.witness
    start = point if point is not None and problem.query.domain.contains(point) else None
    others = ", ".join(f"{answers[name].upper:.6g} for the {name}" for name in answers)
    how = "a first-layer gate" if form is Formulation.FORWARD else "a gradient sign"
    say(
        f"neither racer finished in {within} (proven bounds {others}); the {racer.name} "
        f"model again, split on {how} on two processes..."
    )
    note = f"neither racer finished in {within}; the {racer.name} model split in halves"
    split_start = time.perf_counter()
    try:
        result = problem.solve(
            regions=False, split=False, time_limit=remaining, formulation=form,
            solver=racer.solver, attack=problem.attack, start_point=start,
            sign_split=form is Formulation.BACKWARD, gate_split=form is Formulation.FORWARD,
        )  # fmt: skip
    except SolverError as err:
        timings["solve"] = time.perf_counter() - split_start
        return kept_after(replace(raced, timings=timings), err, say, "the leader's split")
    for key, value in result.timings.items():
        timings[key] = timings.get(key, 0.0) + value
    return noted(meet([result, raced]), timings, note, say)


def _split_instead(
    problem: Raced, remaining: float | None, probed: Bracket | None, probe_seconds: float
) -> Bracket:
    """Where the race would run: the backward model alone, its search split on a gradient sign
    (both cores), from the attack's cutoff and after the region search where no probe ran;
    met with the probe's certified answer, if any."""
    say, probe = problem.ctx.say, problem.node.probe
    solver = next(r.solver for r in problem.node.racers if r.formulation is Formulation.BACKWARD)
    say(
        f"not finished in the probe: the backward ({solver}) model, its search split on a "
        "gradient sign..."
        if probe
        else f"the backward ({solver}) model, its search split on a gradient sign (the "
        "regions searched first)..."
    )
    own = dict(
        regions=False if probe else "auto", split=False, time_limit=remaining,
        formulation=Formulation.BACKWARD, solver=solver, attack=problem.attack, sign_split=True,
    )  # fmt: skip
    return _alone(problem, own, (probed, probe_seconds), "the split solve")


def _bab_instead(
    problem: Raced, remaining: float | None, probed: Bracket | None, probe_seconds: float
) -> Bracket:
    """Where :func:`~lipopt.strategies.raced.bab_alone`: the branch and bound alone instead of
    the race, its search and part MIPs on every core (:mod:`lipopt.strategies.bab_pool`); met
    with the probe's certified answer, if any. Racing, its search had one process and the
    backward MIP the other, which on these networks explores few nodes."""
    assert problem.node.bab_racer is not None  # bab_alone holds
    problem.ctx.say(
        f"{unstable_line(problem)}: the {problem.node.bab_racer.name} alone on every core "
        "instead of the race..."
    )
    own = dict(
        regions=False, split=False, time_limit=remaining, formulation=Formulation.FORWARD,
        solver=problem.node.bab_racer.solver, attack=problem.attack, sign_split=False, bab=True,
    )  # fmt: skip
    return _alone(problem, own, (probed, probe_seconds), "the branch and bound")


def _alone(
    problem: Raced,
    own: dict[str, Any],
    probe: tuple[Bracket | None, float],
    what: str,
) -> Bracket:
    """One solve instead of the race (its configuration ``own``), met with the probe's
    certified answer, if any (``probe``: that answer and the probe's seconds)."""
    probed, probe_seconds = probe
    try:
        result = problem.solve(**own)
    except SolverError as err:
        return kept_after(probed, err, problem.ctx.say, what)
    if probed is None:
        return result
    met = meet([result, probed])
    return replace(met, timings=dict(result.timings, probe=probe_seconds), model=None)
