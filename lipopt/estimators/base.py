"""What every estimator returns, and the pieces they share.

An estimator answers "how large is the local Lipschitz constant of ``c^T f`` over the domain X
w.r.t. the input norm α", i.e. an estimate of

    L^α(c^T f, X) = sup_{x ∈ int X} ||∇(c^T f)(x)||_{α*}     (paper Theorem 1),

and says what kind of answer it is: a certified ``upper`` bound, an attained ``lower`` bound, a
``heuristic`` (no guarantee either way) or the ``exact`` value.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt import policy
from lipopt.domain import Domain
from lipopt.heuristics import target
from lipopt.heuristics.target import Problem, as_rng
from lipopt.network import Network
from lipopt.norms import POLYHEDRAL, InputNorm

__all__ = ["Problem", "as_rng", "problem"]  # re-exported: the estimators' shared request

FloatArray = NDArray[np.float64]


class Kind(str, Enum):
    """The guarantee an estimate carries (the value is the string used in tables and JSON)."""

    UPPER = "upper"
    LOWER = "lower"
    HEURISTIC = "heuristic"
    EXACT = "exact"


class EstimatorUnavailable(RuntimeError):
    """The estimator cannot run here (a missing optional dependency); the message says why."""


class EstimatorOutOfScope(RuntimeError):
    """The method is not built for this request (e.g. SHOR on two hidden layers); the message
    says why. ``compare`` lists it as not run, with the reason."""


class EstimatorFailed(RuntimeError):
    """The estimator ran but produced no number it can stand behind (e.g. the SDP solver
    failed); the message says why."""


@dataclass(frozen=True)
class Estimate:
    """One estimator's answer.

    Attributes:
        name: the estimator (``naive``, ``random``, ..., ``lipmip``).
        value: the estimate of the local Lipschitz constant.
        kind: ``upper``, ``lower``, ``heuristic`` or ``exact`` (a :class:`Kind`, which is a str).
        seconds: wall-clock time spent.
        detail: method-specific facts (the witness point of a lower bound, a solver status, ...).
    """

    name: str
    value: float
    kind: Kind
    seconds: float
    detail: dict[str, Any] = field(default_factory=dict, compare=False)

    def is_sound_against(self, exact: float, rel: float = 1e-6) -> bool:
        """True when the guarantee holds against a known exact value (to ``rel`` relative)."""
        slack = rel * max(abs(exact), 1e-12)
        if self.kind is Kind.UPPER:
            return self.value >= exact - slack
        if self.kind is Kind.LOWER:
            return self.value <= exact + slack
        if self.kind is Kind.EXACT:
            return abs(self.value - exact) <= slack
        return True


class Estimator(Protocol):
    """``estimate(network, domain, norm, c, **options) -> Estimate``, one per module."""

    def __call__(
        self,
        network: Network,
        domain: Domain,
        norm: InputNorm | str = ...,
        c: ArrayLike | None = ...,
        **options: Any,
    ) -> Estimate: ...


EstimateFunction = TypeVar("EstimateFunction", bound=Callable[..., Estimate])


def runs_lowered(estimate: EstimateFunction) -> EstimateFunction:
    """Mark an estimator whose math reads ReLU networks only (slopes in [0, 1], derivatives
    0/1): on a network with other activations (issue 46: identity, leaky, ``|z|``, any α) it
    runs on :meth:`Network.lowered() <lipopt.network.Network.lowered>`, the same function
    with ReLUs only (each non-ReLU neuron as ``relu(z) - α relu(-z)``, two neurons). The same
    function has the same local constant on every domain, so an upper bound stays an upper
    bound, a value attained stays attained and a heuristic stays a heuristic; the answer's
    ``detail["lowered"]`` says how many neurons the lowering added. A ReLU network is passed
    through untouched. The one place this happens: each such module decorates its public
    ``estimate`` with it, so a direct call cannot take the wrong path either."""

    @functools.wraps(estimate)
    def on_relus(network: Network, *args: Any, **kwargs: Any) -> Estimate:
        if network.is_relu:
            return estimate(network, *args, **kwargs)
        relus = network.lowered()
        result = estimate(relus, *args, **kwargs)
        added = sum(relus.hidden_widths) - sum(network.hidden_widths)
        note = f"run on the ReLU lowering of the activations ({added} neurons added)"
        return dataclasses.replace(result, detail={**result.detail, "lowered": note})

    return cast(EstimateFunction, on_relus)


#: Clarabel's tolerances for the moment relaxations (its defaults are 1e-8; the HR-2 blocks
#: left dual values up to 2e-5 above SHOR's at those, and the proof's correction grew alike)
CLARABEL_TOLERANCES = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def problem(
    network: Network,
    domain: Domain,
    norm: InputNorm | str,
    c: ArrayLike | None,
    *,
    norms: tuple[InputNorm, ...] = POLYHEDRAL,
    method: str | None = None,
) -> Problem:
    """The checked request (:func:`lipopt.heuristics.target.problem`); an estimator that does
    not take the input norm (not in ``norms``: by default ℓ2 is not) is out of scope, with
    the norms it takes when it gives its ``method`` name."""
    prob = target.problem(network, domain, norm, c)
    if prob.norm in norms:
        return prob
    if method is None:
        raise EstimatorOutOfScope(f"not built for the {prob.norm.value} input norm yet")
    names = " and ".join(n.value for n in norms) + " input norm" + "s" * (len(norms) > 1)
    raise EstimatorOutOfScope(f"{method} is built for the {names}")


def solve_sdp(
    sdp: Any,
    solver: str | None,
    options: dict[str, Any],
    what: str,
    *,
    tight: bool = False,
    largest_side: int = 0,
) -> str:
    """Solve a cvxpy problem with ``solver`` (default: Clarabel if installed, else SCS;
    ``tight``: :data:`CLARABEL_TOLERANCES` unless ``options`` say otherwise); the solver
    used. A PSD block larger than :data:`lipopt.policy.CLARABEL_MAX_SIDE` (``largest_side``)
    is not given to Clarabel: :class:`EstimatorOutOfScope`, pointing to SCS. "May be
    inaccurate" warnings are silenced (every caller re-proves its number); a solver error, a
    status other than optimal, or a variable left without a value is :class:`EstimatorFailed`,
    its message starting with ``what``."""
    import cvxpy as cp

    chosen = solver or ("CLARABEL" if "CLARABEL" in cp.installed_solvers() else "SCS")
    most = policy.CLARABEL_MAX_SIDE
    if chosen.upper() == "CLARABEL" and largest_side > most:
        raise EstimatorOutOfScope(
            f"{what}a PSD block of side {largest_side} is too large for Clarabel here (at most "
            f"{most}: it factors a dense matrix of about side^4/4 entries); use SCS "
            "(--sdp-solver scs)"
        )
    if tight and chosen == "CLARABEL":
        options = {**CLARABEL_TOLERANCES, **options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            sdp.solve(solver=chosen, **options)
        except cp.error.SolverError as exc:
            raise EstimatorFailed(f"{what}the SDP solver {chosen} failed: {exc}") from None
    unsolved = any(v.value is None for v in sdp.variables())
    if sdp.status not in ("optimal", "optimal_inaccurate") or unsolved:
        raise EstimatorFailed(f"{what}the SDP solver {chosen} ended with status {sdp.status}")
    return chosen


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as t: ...`` then ``t[0]`` holds the elapsed seconds."""
    out = [0.0]
    start = time.perf_counter()
    try:
        yield out
    finally:
        out[0] = time.perf_counter() - start
