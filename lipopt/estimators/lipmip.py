"""LipMIP: the exact local Lipschitz constant by mixed-integer programming (paper §5).

``lipopt.lipschitz`` solves the MIP and verifies its witness. With status ``optimal`` the value
is the exact constant (kind ``exact``); stopped early by ``time_limit`` or ``gap`` it is the
solver's proven bound, a certified upper bound (kind ``upper``), and ``detail["lower"]`` is a
value attained at the witness. Cost: exponential in the number of unstable neurons in the worst
case — seconds to hours.
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.driver import answer
from lipopt.estimators.base import Estimate, Kind, problem, stopwatch
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm
from lipopt.status import Status

NAME = "lipmip"
KIND = Kind.EXACT


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    solver: str = "auto",
    **options: Any,
) -> Estimate:
    """The exact MIP (what :func:`lipopt.lipschitz` answers); ``options`` (``time_limit``,
    ``gap``, ``threads``, ``progress``, ...) pass through."""
    progress = options.pop("progress", None)
    output_norm = options.pop("output_norm", None)  # refused beside c, as lipschitz() does
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)  # l2: the chords or SCIP
        levers = {"solver": solver, **options}
        result = answer(network, domain, prob.norm, (prob.c, output_norm), levers, progress)
    kind = KIND if result.status == Status.OPTIMAL else Kind.UPPER
    return Estimate(
        NAME,
        float(result.value),
        kind,
        elapsed[0],
        {
            "status": result.status,
            "lower": result.lower,
            "witness": result.witness,
            "exact_certified": result.exact_certified,
            "solver": result.solver,
            **result.model_stats,
        },
    )
