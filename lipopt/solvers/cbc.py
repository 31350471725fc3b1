"""CBC (COIN-OR Branch and Cut) through Pyomo's classic shell interface.

The binary is a ``cbc`` on ``PATH``: on Debian/Ubuntu ``apt-get install coinor-cbc`` (CBC 2.10;
``.ci/run`` installs it). The first ``cbc`` on ``PATH`` that runs as CBC and is not a build known
to return wrong optima (:data:`DEFECTIVE_BUILDS`) is used; the ``cbcbox`` wheel's CBC
``devel git:146ce89`` is one (docs/solvers.md, "Why Debian's CBC"). Pyomo writes the model as an
LP file with symbolic names, runs ``cbc`` and reads its solution file. Pyomo's parsing of CBC's
*log* is not relied on (it misreads the sense of some builds and drops the bound), so why CBC
stopped, its best bound and its node count are read here from the ``Result - ...`` summary that
CBC prints at the end of every MIP run.

Facts the adapter relies on:

- ``ratioGap``/``allowableGap`` only *stop* the search (``Result - Optimal solution found (within
  gap tolerance)``), when ``bound - incumbent <= allowableGap`` or
  ``(bound - incumbent) / max(|bound|, |incumbent|) <= ratioGap``; then
  ``bound <= max(incumbent + allowableGap, incumbent / (1 - ratioGap))`` (positive incumbent).
  They do not prune nodes (a ``--gap 0.05`` run that ends "Optimal solution found" explores the
  very nodes of the exact run), so "Optimal solution found" is a full proof, to ``increment``.
- The summary prints the bound with 6 significant digits (``%g``); it is rounded *up* here by
  half a unit in the last place (``5e-6`` relative) so the reported bound stays a proven bound.
- CBC 2.10 writes the solution file with 8 significant digits, so the objective evaluated at the
  loaded point can sit ~1e-8 (relative) below CBC's own incumbent. The bounds that rest on the
  incumbent (gap stop, exhausted tree, an LP's optimum) therefore start from the objective CBC
  *prints* (``Objective value:``; Clp's ``Optimal objective`` for an LP), raised by half a unit
  in its last printed digit (:func:`printed_upper`).
- CBC prunes nodes that cannot improve the incumbent by more than ``increment`` (absolute;
  default 1e-5 in 2.10, 1e-4 in cbcbox's devel build); it is set to the requested absolute gap
  (1e-9 by default).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lipopt.solvers.adapter import Adapter
from lipopt.solvers.base import (
    EXACT_GAP,
    SolveOptions,
    SolverError,
    SolveResult,
    SolverFailure,
    Termination,
)
from lipopt.solvers.cbc_log import (
    _LP_OBJECTIVE,
    NO_SOLUTION,
    PRINT_ROUNDING,
    STATUS_MAP,
    Summary,
    _classic_status_map,
    _optimal_or_gap,
    gap_stop_bound,
    parse_summary,
    printed_upper,
)

if TYPE_CHECKING:
    import pyomo.environ as pe

#: solver options always set (the caller's ``options.options`` override them)
DEFAULT_OPTIONS: dict[str, Any] = {"integerTolerance": 1e-9, "primalTolerance": 1e-9}

#: an option CBC does not know: the devel build exits; 2.10 says "No match" and goes on without it
_REJECTED = re.compile(r"^(?:Unrecognized parameter - \S+|No match for \S+)(?= |,|$)", re.MULTILINE)
#: the version line of ``cbc -stop``: ``Version: 2.10.8`` (releases), ``CBC devel (git:146ce89)``
_VERSION = re.compile(
    r"^(?:CBC\s+(?:version\s+)?|Version:\s*)([^\s(]+)(?:\s+\((\S+?)\))?", re.MULTILINE
)

#: CBC builds (a word of their version) that are never run: they claim wrong optima
DEFECTIVE_BUILDS: dict[str, str] = {
    "git:146ce89": "claims 'Optimal solution found' 1.9 % below the true maximum when its cutoff "
    "increment is 1e-6 or less (tests/solvers/data/cbc_wrong_optimum.lp)",
}


def on_path() -> list[str]:
    """Every executable ``cbc`` on ``PATH``, in ``PATH`` order."""
    found: list[str] = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = shutil.which("cbc", path=folder) if folder else None
        if path is not None and path not in found:
            found.append(path)
    return found


def executable() -> str | None:
    """The first ``cbc`` on ``PATH`` that runs as CBC and is not a defective build, else None."""
    for path in on_path():
        banner = _banner(path)
        if banner is not None and defect(banner) is None:
            return path
    return None


def defect(banner: str) -> str | None:
    """Why the CBC build that printed ``banner`` must not be used, or None if it may be."""
    version = _version(banner)
    for build, reason in DEFECTIVE_BUILDS.items():
        if build in version.split():
            return f"CBC {version} {reason}"
    return None


def _version(banner: str) -> str:
    match = _VERSION.search(banner)
    if match is None:
        return "unknown"
    return " ".join(part for part in match.groups() if part)


@functools.lru_cache(maxsize=8)
def _banner(path: str) -> str | None:
    """What ``cbc -stop`` prints, or None if it does not run as CBC (no version line)."""
    try:
        run = subprocess.run(
            [path, "-stop"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = run.stdout + run.stderr
    if run.returncode != 0 or _VERSION.search(text) is None:
        return None
    return text


class CbcSolver(Adapter):
    """CBC: open source MIP, run as a subprocess on an LP file (so never in a forked worker: a
    terminated worker would orphan it)."""

    name = "cbc"
    label = "CBC"
    install_hint = (
        "apt-get install coinor-cbc  (Debian/Ubuntu's CBC 2.10, used from PATH; "
        "the cbcbox wheel's CBC build is refused: docs/solvers.md)"
    )

    def __init__(self, path: str | None = None) -> None:
        self._path = path

    def executable(self) -> str | None:
        """The binary this adapter runs (found when first asked)."""
        if self._path is None:
            self._path = executable()
        return self._path

    def why_unavailable(self) -> str:
        """Why there is no binary that runs as CBC and is not a defective build (even one given
        by path); "" when there is."""
        path = self.executable()
        if path is None:
            return "CBC is not installed (no cbc on PATH that runs as a sound CBC build)"
        banner = _banner(path)
        if banner is None:
            return f"CBC is not installed ({path} does not run as CBC)"
        reason = defect(banner)
        return "" if reason is None else f"refusing {path}: {reason}"

    def version(self) -> str:
        path = self.executable()
        banner = None if path is None else _banner(path)
        return "unknown" if banner is None else _version(banner)

    def _solve(self, model: pe.ConcreteModel, options: SolveOptions) -> SolveResult:
        path = self.executable()
        if path is None:  # Adapter.solve checked that it is usable: only if told it is
            raise SolverError(f"CBC is not installed: {self.install_hint}")
        import pyomo.environ as pe

        solver = pe.SolverFactory("cbc", executable=path)
        solver_options: dict[str, Any] = {
            **DEFAULT_OPTIONS,
            "ratioGap": options.rel_gap,
            "allowableGap": options.abs_gap,
            "increment": options.abs_gap,
        }
        if options.threads is not None:
            solver_options["threads"] = int(options.threads)
        solver_options.update(options.options)
        for key, value in solver_options.items():
            solver.options[key] = value
        kwargs: dict[str, Any] = {
            "tee": options.verbose,
            "load_solutions": False,
            "symbolic_solver_labels": True,
        }
        if options.time_limit is not None:
            kwargs["timelimit"] = float(options.time_limit)  # -sec, wall clock (-timeMode elapsed)
        with tempfile.TemporaryDirectory(prefix="lipopt-cbc-") as tmp:
            logfile = Path(tmp) / "cbc.log"
            start = time.perf_counter()
            # the log streams to stderr when verbose: stdout is for results (--json)
            quiet = contextlib.nullcontext()
            stream = contextlib.redirect_stdout(sys.stderr) if options.verbose else quiet
            try:
                with stream:
                    results = solver.solve(model, logfile=str(logfile), **kwargs)
            except Exception as exc:  # the solver's own failure, reported as ours
                raise SolverFailure(f"CBC failed: {_one_line(exc)}") from exc
            seconds = time.perf_counter() - start
            log = logfile.read_text(errors="replace") if logfile.exists() else ""
        rejected = _REJECTED.search(log)
        if rejected is not None:  # an option CBC does not know: refused, never silently ignored
            raise SolverError(f"CBC rejected an option: {rejected.group(0).strip()}")
        return self._result(model, results, log, seconds, options)

    def _result(
        self,
        model: pe.ConcreteModel,
        results: Any,
        log: str,
        seconds: float,
        options: SolveOptions,
    ) -> SolveResult:
        """Why CBC stopped and what came back.

        A MIP run is read from CBC's summary. Without one, an LP is read from Pyomo's reading of
        the solution file; a MIP was stopped (by the time limit) before branch and bound and has
        no incumbent and no bound (the point in the file is the fractional root LP's).
        """
        summary = parse_summary(log)
        mip = _has_integers(model)
        condition = results.solver.termination_condition
        classic = _classic_status_map().get(condition, Termination.ERROR)
        if summary.result is not None:
            termination = STATUS_MAP.get(summary.result, Termination.ERROR)
            has_solution = summary.has_solution
        elif not mip:
            termination = classic
            has_solution = termination is Termination.OPTIMAL and len(results.solution) > 0
        else:  # stopped before branch and bound: at most the root LP was solved
            has_solution = False
            stopped_early = options.time_limit is not None and classic in (
                Termination.OPTIMAL,
                Termination.TIME_LIMIT,
            )
            termination = Termination.TIME_LIMIT if stopped_early else classic
            if termination is Termination.OPTIMAL:
                termination = Termination.ERROR  # "optimal" without a summary is no MIP answer
        values, incumbent = self._load(model, results) if has_solution else (None, None)
        if mip:
            own = summary.objective_upper
        else:
            lp_objective = _LP_OBJECTIVE.findall(log)
            own = printed_upper(lp_objective[-1]) if lp_objective else None
        bound = self._bound(termination, incumbent, summary.upper, options, mip, own)
        termination = _optimal_or_gap(termination, options)
        return SolveResult(
            termination=termination,
            incumbent=incumbent,
            bound=bound,
            values=values,
            seconds=seconds,
            nodes=summary.nodes,
            solver=f"cbc {self.version()}",
            log=log,
        )

    @staticmethod
    def _load(model: pe.ConcreteModel, results: Any) -> tuple[pe.ComponentMap, float]:
        """Load CBC's incumbent into the model; its values by variable and its objective."""
        import pyomo.environ as pe
        from pyomo.opt import SolverStatus

        results.solver.status = SolverStatus.ok  # the summary says this point is feasible
        model.solutions.load_from(results)
        values = pe.ComponentMap(
            (var, var.value) for var in model.component_data_objects(pe.Var, descend_into=True)
        )
        return values, float(pe.value(model.objective))

    @staticmethod
    def _bound(
        termination: Termination,
        incumbent: float | None,
        printed: float | None,
        options: SolveOptions,
        mip: bool,
        own: float | None = None,
    ) -> float | None:
        """The proven upper bound on the maximum, or None if CBC proved none.

        ``own`` is the largest value CBC's own incumbent objective may have (its printed
        objective rounded up, :func:`printed_upper`); the proofs rest on it, not on the
        objective at the loaded point, which CBC wrote with fewer digits. Without it an LP has
        no proven bound; a MIP falls back to the loaded incumbent (as for a CBC that writes
        full precision).
        """
        rounded = None if printed is None else printed + PRINT_ROUNDING * abs(printed)
        if termination in (Termination.OPTIMAL, Termination.GAP_LIMIT):
            if incumbent is None:
                return None
            top = incumbent if own is None else max(incumbent, own)
            if not mip:  # an LP solved to optimality: its optimum as CBC printed it
                return None if own is None else top
            if termination is Termination.OPTIMAL:  # the tree is exhausted, pruned by increment
                exact_rel = min(options.rel_gap, EXACT_GAP)
                options = SolveOptions(rel_gap=exact_rel, abs_gap=options.abs_gap)
            stop = gap_stop_bound(top, options)
            return stop if rounded is None else max(incumbent, min(stop, rounded))
        if termination in (Termination.TIME_LIMIT, Termination.INTERRUPTED) and rounded is not None:
            return rounded if incumbent is None else max(rounded, incumbent)
        return None


#: install hint (the adapter's declaration)
INSTALL_HINT = CbcSolver.install_hint


def _has_integers(model: pe.ConcreteModel) -> bool:
    import pyomo.environ as pe

    return any(
        not var.is_continuous() and not var.fixed
        for var in model.component_data_objects(pe.Var, descend_into=True)
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


__all__ = [
    "DEFAULT_OPTIONS",
    "DEFECTIVE_BUILDS",
    "INSTALL_HINT",
    "NO_SOLUTION",
    "PRINT_ROUNDING",
    "STATUS_MAP",
    "CbcSolver",
    "Summary",
    "defect",
    "executable",
    "gap_stop_bound",
    "on_path",
    "parse_summary",
    "printed_upper",
]
