"""The top-2 margin that the benchmarks and the tests on the digits networks ask about.

At an image ``x`` a classifier's two largest logits are classes ``top`` and ``second``; the
query is the Lipschitz constant of ``c^T f`` with ``c = e_top - e_second`` (the margin between
the predicted class and its closest rival) over a ball around ``x``. Here, not in lipopt (which
never asks it itself), and numpy only: the scripts import it as ``margins`` (they put
``benchmarks/`` on the path), the tests as ``benchmarks.margins``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def top_two(network: Any, x: np.ndarray) -> tuple[int, int]:
    """The classes of the two largest logits at ``x``, the largest first (ties as
    ``np.argsort`` orders them)."""
    order = np.argsort(network.forward(x))[::-1]
    return int(order[0]), int(order[1])


def top_two_margin(network: Any, x: np.ndarray) -> np.ndarray:
    """``c = e_top - e_second`` at ``x`` (:func:`top_two`), of the network's output length."""
    top, second = top_two(network, x)
    eye = np.eye(network.output_dim)
    return eye[top] - eye[second]
