"""What every estimator returns, and the pieces they share.

An estimator answers "how large is the local Lipschitz constant of ``c^T f`` over the domain X
w.r.t. the input norm α", i.e. an estimate of

    L^α(c^T f, X) = sup_{x ∈ int X} ||∇(c^T f)(x)||_{α*}     (paper Theorem 1),

and says what kind of answer it is: a certified ``upper`` bound, an attained ``lower`` bound, a
``heuristic`` (no guarantee either way) or the ``exact`` value.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.domain import Domain, check_dimension
from lipopt.lipschitz import resolve_c
from lipopt.network import Network
from lipopt.norms import InputNorm

FloatArray = NDArray[np.float64]


class Kind(str, Enum):
    """The guarantee an estimate carries (the value is the string used in tables and JSON)."""

    UPPER = "upper"
    LOWER = "lower"
    HEURISTIC = "heuristic"
    EXACT = "exact"


class EstimatorUnavailable(RuntimeError):
    """The estimator cannot run here (a missing optional dependency); the message says why."""


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


@dataclass(frozen=True)
class Problem:
    """A checked request: the network, the domain, the input norm and the output weighting c."""

    network: Network
    domain: Domain
    norm: InputNorm
    c: FloatArray

    @property
    def dim(self) -> int:
        return self.network.input_dim

    def dual_norms(self, x: ArrayLike) -> FloatArray:
        """``||∇(c^T f)(x)||_{α*}`` for a batch of points (n, d) -> (n,)."""
        grads = self.network.gradients(np.atleast_2d(np.asarray(x, dtype=np.float64)), self.c)
        return np.asarray(np.linalg.norm(grads, ord=self.norm.dual_order, axis=-1))

    def scalar_weights(self) -> list[FloatArray]:
        """Weight matrices of the scalar network ``c^T f``: ``W_1, ..., W_{L-1}, c^T W_L``."""
        affines = self.network.affine_layers
        return [a.weight for a in affines[:-1]] + [(self.c @ affines[-1].weight)[None, :]]

    def l2_scale(self) -> float:
        """Norm-equivalence factor from an ℓ2 Lipschitz bound to this input norm.

        ℓ∞ input: ``||g||_1 <= sqrt(d) ||g||_2`` (Cauchy-Schwarz), factor ``sqrt(d)``;
        ℓ1 input: ``||g||_∞ <= ||g||_2``, factor 1.
        """
        return float(np.sqrt(self.dim)) if self.norm is InputNorm.LINF else 1.0


def problem(
    network: Network, domain: Domain, norm: InputNorm | str, c: ArrayLike | None
) -> Problem:
    """Validate the request once: dimensions, the input norm, and ``c`` (``[1]`` for one output)."""
    check_dimension(domain, network.input_dim)
    return Problem(network, domain, InputNorm.parse(norm), resolve_c(network, c))


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as t: ...`` then ``t[0]`` holds the elapsed seconds."""
    out = [0.0]
    start = time.perf_counter()
    try:
        yield out
    finally:
        out[0] = time.perf_counter() - start


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A generator from a seed, or the generator itself."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(0 if seed is None else seed)
