"""Shared small cases for the solver tests: random networks, domains, norms, exact values."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

from lipopt import Box, L1Ball, LinfBall, Network
from lipopt.domain import Domain
from tests.helpers import random_network
from tests.oracle import brute_force_lipschitz, from_lipopt

#: every adapter; each test parameter is skipped where its solver is not usable
SOLVER_NAMES = ("highs", "scip", "cbc", "gurobi")
SOLVERS = [
    pytest.param(name, marks=pytest.mark.requires_solver(name), id=name) for name in SOLVER_NAMES
]


@dataclass(frozen=True)
class Case:
    """A small network, a domain and an input norm: small enough for the brute-force oracle."""

    seed: int
    widths: tuple[int, ...]
    domain: Domain
    norm: str

    @property
    def id(self) -> str:
        return f"{'x'.join(map(str, self.widths))}-{type(self.domain).__name__}-{self.norm}"

    def network(self) -> Network:
        return random_network(np.random.default_rng(self.seed), self.widths)

    def c(self) -> np.ndarray | None:
        """Output weighting: random for several outputs, None (= [1]) for one output."""
        if self.widths[-1] == 1:
            return None
        return np.random.default_rng(1000 + self.seed).normal(size=self.widths[-1])


#: input dim 2-3, 1-3 hidden layers, widths <= 8; boxes, l-inf and l1 balls; both input norms
CASES = [
    Case(1, (2, 8, 1), Box([0.0, 0.0], [1.0, 1.0]), "linf"),
    Case(2, (2, 6, 6, 2), LinfBall([0.2, -0.1], 0.5), "l1"),
    Case(3, (3, 8, 8, 1), L1Ball([0.1, 0.2, 0.3], 0.7), "linf"),
    Case(4, (3, 5, 5, 5, 2), Box([-1.0, 0.0, 0.5], [0.0, 1.0, 1.5]), "l1"),
    Case(5, (2, 8, 8, 8, 1), L1Ball([0.0, 0.0], 1.0), "l1"),
    Case(6, (3, 8, 6, 2), LinfBall([0.5, 0.5, 0.5], 0.4), "linf"),
    Case(7, (2, 8, 8, 8, 2), Box([0.0, 0.0], [1.0, 1.0]), "linf"),
]
CASE_PARAMS = [pytest.param(case, id=case.id) for case in CASES]


@functools.cache
def exact_value(case: Case) -> float:
    """The independent brute-force constant of ``c^T f`` (tests/oracle.py)."""
    c = case.c()
    weights, domain = from_lipopt(case.network(), case.domain)
    return brute_force_lipschitz(weights, domain, np.ones(1) if c is None else c, case.norm).value
