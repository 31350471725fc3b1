"""LipLP: the linear-programming relaxation of LipMIP (paper §5, "Extensions").

Every binary of the MIP (activation states of unstable neurons, signs of gradient coordinates) is
relaxed to ``[0, 1]``; the LP optimum is a certified upper bound on the local constant. As in
the paper, the model is built on interval bounds (``bounds="interval"``); every relaxed gradient
variable then stays within FastLip's box, so LipLP is never above FastLip. ``bounds="linear"``
(lipopt's default for the MIP) gives a tighter LP. Cost: one LP of the MIP's size (milliseconds
to a second).
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from lipopt.domain import Domain
from lipopt.driver import answer
from lipopt.estimators.base import Estimate, Kind, problem, stopwatch
from lipopt.network import Network
from lipopt.norms import EVERY_NORM, InputNorm

NAME = "liplp"
KIND = Kind.UPPER


def estimate(
    network: Network,
    domain: Domain,
    norm: InputNorm | str = InputNorm.LINF,
    c: ArrayLike | None = None,
    *,
    solver: str = "auto",
    bounds: str = "interval",
    **options: Any,
) -> Estimate:
    """``lipschitz(..., mode="lp").value``; ``options`` as :func:`lipopt.lipschitz`'s."""
    progress = options.pop("progress", None)
    output_norm = options.pop("output_norm", None)  # refused beside c, as lipschitz() does
    with stopwatch() as elapsed:
        prob = problem(network, domain, norm, c, norms=EVERY_NORM)  # l2: the first chords, relaxed
        levers = {"solver": solver, "mode": "lp", "bounds": bounds, **options}
        result = answer(network, domain, prob.norm, (prob.c, output_norm), levers, progress)
    return Estimate(
        NAME,
        float(result.value),
        KIND,
        elapsed[0],
        {"solver": result.solver, "bounds": bounds, **result.model_stats},
    )
