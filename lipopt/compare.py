"""Every estimator side by side on one network and domain (what ``lipopt compare`` prints).

>>> results = compare(net, Box([0, 0], [1, 1]), c=[1, -1])           # doctest: +SKIP
>>> print(format_table(results))                                      # doctest: +SKIP

A method that cannot run here (a missing optional dependency, an unavailable solver) is listed
as :class:`Unavailable` with the reason, never silently dropped. Relative errors are taken
against LipMIP's value when it ran to optimality.

Each method runs in a forked child process (:mod:`lipopt.compare_run`) where the platform
allows, so that ``time_limit`` bounds the whole comparison and Ctrl-C/SIGTERM stop it at once:
a method stopped, or never started, for either is listed as :class:`Stopped`, with no value.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from numpy.typing import ArrayLike

from lipopt import estimators
from lipopt.compare_run import OutOfTime, can_isolate, run_killable
from lipopt.domain import Domain
from lipopt.estimators.base import (
    Estimate,
    EstimatorFailed,
    EstimatorOutOfScope,
    EstimatorUnavailable,
    Kind,
    problem,
)
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm
from lipopt.solvers import SolverError, registry
from lipopt.status import Status

#: what can stop a method without being a bug: a missing extra, an unusable solver, or a
#: method that ran and failed (an SDP solver's failure status)
SKIPPABLE = (EstimatorUnavailable, EstimatorOutOfScope, EstimatorFailed, SolverError)


@dataclass(frozen=True)
class Unavailable:
    """A method that could not run here, and why."""

    name: str
    kind: Kind
    reason: str


@dataclass(frozen=True)
class Stopped(Unavailable):
    """A method stopped, or never started, by the time limit or an interruption: no value (a
    method stopped early has proven nothing). ``status`` is ``time_limit`` or ``interrupted``;
    ``seconds`` how long it ran, None when it did not start."""

    status: Status = Status.TIME_LIMIT
    seconds: float | None = None


Result = Union[Estimate, Unavailable]


class CompareInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped :func:`compare`; ``results`` has one entry per method: the
    finished ones, then the running one and the rest as :class:`Stopped` (``interrupted``)."""

    def __init__(self, results: list[Result]) -> None:
        super().__init__("compare interrupted")
        self.results = results


#: methods that take a ``time_limit`` and, stopped by it, still report a proven bound: they
#: are given the time left as their own limit, and :func:`grace` more before they are killed
TIMED = frozenset({"lipmip"})

#: the methods that solve with cvxpy (Clarabel, SCS), whose thread pools a forked child cannot
#: use once they have run in this process (:func:`lipopt.compare_run.start_method`)
CONIC = frozenset({"lipsdp", "shor", "hr2", "eclipse", "eclipse-local"})


def grace(time_limit: float) -> float:
    """Seconds a :data:`TIMED` method may run past the comparison's deadline to finish its
    answer (a model built, a bound proven): the command ends within ``1.5 T + 5`` s."""
    return 0.25 * time_limit + 2.0


@dataclass(frozen=True)
class _Clock:
    """The comparison's deadline, if it has a time limit."""

    limit: float | None
    start: float = field(default_factory=time.monotonic)

    def left(self) -> float | None:
        """Seconds left (None: no limit)."""
        return None if self.limit is None else self.limit - (time.monotonic() - self.start)

    def kill_at(self, timed: bool) -> float | None:
        """When a method still running is killed: the deadline (plus the grace if ``timed``)."""
        if self.limit is None:
            return None
        return self.start + self.limit + (grace(self.limit) if timed else 0.0)


def parse_methods(methods: str | Sequence[str] | None) -> list[str]:
    """Method names from ``"fastlip,liplp"`` or a list; all of them (in order) for None."""
    if methods is None:
        return list(estimators.ESTIMATORS)
    names = methods.split(",") if isinstance(methods, str) else list(methods)
    out = [name.strip().lower() for name in names if name.strip()]
    if not out:
        raise ValueError("no methods given")
    unknown = [name for name in out if name not in estimators.ESTIMATORS]
    if unknown:
        raise ValueError(
            f"unknown method(s) {', '.join(unknown)}; choose from: "
            f"{', '.join(estimators.ESTIMATORS)}"
        )
    return list(dict.fromkeys(out))


def compare(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    methods: str | Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    time_limit: float | None = None,
) -> list[Result]:
    """Run the estimators in order; one result per method.

    Args:
        network: the network.
        domain: the region of inputs.
        norm: the input norm.
        c: the output weighting (default ``[1]`` for one output).
        methods: names (list or comma string); default every estimator, cheapest first.
        progress: called with ``"<name>: running"`` before and ``"<name>: <value> (<s> s)"``
            after each method (the CLI prints these while slow methods run).
        options: per-method keyword options, e.g. ``{"lipmip": {"gap": 0.01}}``.
        time_limit: seconds for the whole comparison. Each method gets what is left: LipMIP
            as its own ``time_limit`` (stopped by it, its value is a certified upper bound),
            the others until the deadline, when they are killed (:class:`Stopped`, no
            value); a method with no time left is not started (:class:`Stopped` too).

    Raises:
        CompareInterrupted: on Ctrl-C or SIGTERM, with the results so far.
    """
    names = check_compare(network, domain, norm, c, methods, options, time_limit)
    say = progress or (lambda _message: None)
    extra = options or {}
    clock = _Clock(time_limit)
    results: list[Result] = []
    for index, name in enumerate(names):
        began = time.monotonic()
        try:
            results.append(_run(name, (network, domain, norm, c), extra.get(name, {}), clock, say))
        except KeyboardInterrupt as exc:
            ran = time.monotonic() - began
            say(f"{name}: stopped (interrupted)")
            stopped = Stopped(name, estimators.KINDS[name], "stopped by an interruption after "
                              f"{ran:.1f} s: no value", Status.INTERRUPTED, ran)  # fmt: skip
            rest = [Stopped(n, estimators.KINDS[n], "not run: interrupted before it started",
                            Status.INTERRUPTED) for n in names[index + 1 :]]  # fmt: skip
            raise CompareInterrupted([*results, stopped, *rest]) from exc
    return results


def check_compare(
    network: Network,
    domain: Domain,
    norm: InputNorm | str,
    c: ArrayLike | None,
    methods: str | Sequence[str] | None,
    options: Mapping[str, Mapping[str, Any]] | None,
    time_limit: float | None,
) -> list[str]:
    """Refuse a bad request before any method runs (what :func:`compare` raises, with nothing
    run or printed); the method names in order."""
    names = parse_methods(methods)
    problem(network, domain, norm, c, norms=EVERY_NORM)
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    extra = options or {}
    unknown = sorted(set(extra) - set(estimators.ESTIMATORS))
    if unknown:
        raise ValueError(f"options given for unknown method(s): {', '.join(unknown)}")
    for name in names:  # the MIP methods' solver: an unknown or missing one is refused now
        solver = extra.get(name, {}).get("solver")
        if name in ("liplp", "lipmip") and solver is not None:
            registry.get(str(solver))
    return names


def _run(
    name: str,
    request: tuple[Network, Domain, InputNorm | str, ArrayLike | None],
    options: Mapping[str, Any],
    clock: _Clock,
    say: Callable[[str], None],
) -> Result:
    """One method within what is left of the time limit (in a child process where it can)."""
    kind = estimators.KINDS[name]
    left = clock.left()
    if left is not None and left <= 0:
        say(f"{name}: not run (time limit reached)")
        return Stopped(name, kind, "not run: no time was left of the time limit", Status.TIME_LIMIT)
    opts = dict(options)
    if left is not None and name in TIMED:
        opts["time_limit"] = min(float(opts.get("time_limit", math.inf)), left)
    call = functools.partial(estimators.get(name), *request, **opts)
    say(f"{name}: running")
    began = time.monotonic()
    try:
        estimate = (
            run_killable(call, clock.kill_at(name in TIMED), conic=name in CONIC)
            if can_isolate()
            else call()
        )
    except OutOfTime:
        ran = time.monotonic() - began
        say(f"{name}: stopped at the time limit ({ran:.2f} s)")
        reason = f"stopped at the time limit after {ran:.1f} s: no value"
        return Stopped(name, kind, reason, Status.TIME_LIMIT, ran)
    except SKIPPABLE as exc:
        say(f"{name}: unavailable ({exc})")
        return Unavailable(name, kind, str(exc))
    say(f"{name}: {estimate.value:.6g} ({estimate.seconds:.2f} s)")
    return estimate


def exact_value(results: Sequence[Result]) -> float | None:
    """LipMIP's value if it ran to optimality (kind ``exact``), else None."""
    for result in results:
        if isinstance(result, Estimate) and result.kind is Kind.EXACT:
            return result.value
    return None


def relative_error(value: float, exact: float | None) -> float | None:
    """``(value - exact) / exact``; None without an exact value (or when it is 0)."""
    if exact is None or exact == 0:
        return None
    return (value - exact) / abs(exact)


def _guarantee(result: Estimate) -> str:
    if result.name == "lipmip" and result.kind is Kind.UPPER:
        return f"upper ({result.detail.get('status', 'stopped')})"
    return result.kind.value


def format_table(results: Sequence[Result]) -> str:
    """A plain-text table: method, value, guarantee, relative error to the exact, seconds."""
    exact = exact_value(results)
    header = ("method", "value", "guarantee", "rel. error", "seconds")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for result in results:
        if isinstance(result, Stopped):
            started = result.seconds is not None
            how = f"{'stopped' if started else 'not run'} ({result.status})"
            seconds = f"{result.seconds:.3f}" if result.seconds is not None else "-"
            rows.append((result.name, "-", how, "-", seconds))
            notes.append(f"{result.name}: {result.reason}")
            continue
        if isinstance(result, Unavailable):
            rows.append((result.name, "-", result.kind.value, "-", "-"))
            notes.append(f"{result.name}: not run: {result.reason}")
            continue
        err = relative_error(result.value, exact)
        if "domain" in result.detail:  # an upper bound taken over a superset of the domain
            notes.append(f"{result.name}: over {result.detail['domain']}")
        if "lowered" in result.detail:  # a ReLU-only method on the network's ReLU lowering
            notes.append(f"{result.name}: {result.detail['lowered']}")
        rows.append(
            (
                result.name,
                f"{result.value:.6g}",
                _guarantee(result),
                "-" if err is None else f"{(err if abs(err) >= 5e-5 else 0.0):+.2%}",
                f"{result.seconds:.3f}",
            )
        )
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    align = ("<", ">", "<", ">", ">")

    def line(cells: Sequence[str]) -> str:
        return "  ".join(f"{cell:{a}{w}}" for cell, a, w in zip(cells, align, widths)).rstrip()

    out = [line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)]
    if exact is None:
        out.append("(relative errors need LipMIP's exact value: include lipmip)")
    return "\n".join(out + notes)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def to_json(results: Sequence[Result]) -> dict[str, Any]:
    """``{"methods": [{"name", "value", "kind", "seconds", ...}], "exact": ...}`` (JSON-ready).

    Each entry also has ``relative_error`` (None without an exact value); lipmip adds its
    ``status``; the methods whose value is a solver's certificate re-proven in numpy (shor,
    hr2, lipopt3/4) add ``proof_correction``, what the proof added to the solver's own value; a
    method that did not run has ``value``/``seconds`` None and a ``reason``; one stopped (or
    not started) by the time limit or an interruption adds ``status`` (``time_limit`` or
    ``interrupted``) and has the ``seconds`` it ran (None if it did not start); a method run on
    the network's ReLU lowering (non-ReLU activations) adds ``lowered``, the note saying so.
    """
    exact = exact_value(results)
    entries: list[dict[str, Any]] = []
    for result in results:
        if isinstance(result, Unavailable):
            entries.append(
                {
                    "name": result.name,
                    "value": None,
                    "kind": result.kind.value,
                    "seconds": result.seconds if isinstance(result, Stopped) else None,
                    "relative_error": None,
                    "reason": result.reason,
                    **({"status": result.status} if isinstance(result, Stopped) else {}),
                }
            )
            continue
        entry: dict[str, Any] = {
            "name": result.name,
            "value": _number(float(result.value)),
            "kind": result.kind.value,
            "seconds": float(result.seconds),
            "relative_error": relative_error(result.value, exact),
        }
        if "status" in result.detail and result.name == "lipmip":
            entry["status"] = result.detail["status"]
        if "correction" in result.detail:  # shor, hr2, lipopt3/4: re-proven, not the solver's
            entry["proof_correction"] = float(result.detail["correction"])
        if "domain" in result.detail:
            entry["domain"] = result.detail["domain"]
        if "lowered" in result.detail:
            entry["lowered"] = result.detail["lowered"]
        entries.append(entry)
    return {"methods": entries, "exact": exact}
