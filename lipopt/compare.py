"""Every estimator side by side on one network and domain (what ``lipopt compare`` prints).

>>> results = compare(net, Box([0, 0], [1, 1]), c=[1, -1])           # doctest: +SKIP
>>> print(format_table(results))                                      # doctest: +SKIP

A method that cannot run here (a missing optional dependency, an unavailable solver) is listed
as :class:`Unavailable` with the reason, never silently dropped. Relative errors are taken
against LipMIP's value when it ran to optimality.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from numpy.typing import ArrayLike

from lipopt import estimators
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
from lipopt.solvers import SolverError

#: what can stop a method without being a bug: a missing extra, an unusable solver, or a
#: method that ran and failed (an SDP solver's failure status)
SKIPPABLE = (EstimatorUnavailable, EstimatorOutOfScope, EstimatorFailed, SolverError)


@dataclass(frozen=True)
class Unavailable:
    """A method that could not run here, and why."""

    name: str
    kind: Kind
    reason: str


Result = Union[Estimate, Unavailable]


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
        options: per-method keyword options, e.g. ``{"lipmip": {"time_limit": 60}}``.
    """
    names = parse_methods(methods)
    problem(network, domain, norm, c, norms=EVERY_NORM)  # fail early on a bad request
    say = progress or (lambda _message: None)
    extra = options or {}
    unknown = sorted(set(extra) - set(estimators.ESTIMATORS))
    if unknown:
        raise ValueError(f"options given for unknown method(s): {', '.join(unknown)}")
    results: list[Result] = []
    for name in names:
        say(f"{name}: running")
        try:
            estimate = estimators.get(name)(network, domain, norm, c, **extra.get(name, {}))
        except SKIPPABLE as exc:
            results.append(Unavailable(name, estimators.KINDS[name], str(exc)))
            say(f"{name}: unavailable ({exc})")
            continue
        say(f"{name}: {estimate.value:.6g} ({estimate.seconds:.2f} s)")
        results.append(estimate)
    return results


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
        if isinstance(result, Unavailable):
            rows.append((result.name, "-", result.kind.value, "-", "-"))
            notes.append(f"{result.name}: not run: {result.reason}")
            continue
        err = relative_error(result.value, exact)
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
    method that did not run has ``value``/``seconds`` None and a ``reason``.
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
                    "seconds": None,
                    "relative_error": None,
                    "reason": result.reason,
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
        entries.append(entry)
    return {"methods": entries, "exact": exact}
