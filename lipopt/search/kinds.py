"""What the pattern searches read of the activation kinds (:mod:`lipopt.activation`).

A hidden neuron ``h = α z + (1 - α) relu(z)`` has one kink, at ``z = 0``, unless it is the
identity (``α = 1``): then its gate ``σ = [z > 0]`` changes nothing, so the searches keep it
ACTIVE (``D = 1``), never split it and never give it a row. Every other neuron, stable or not,
has ``h = D z`` on a fixed pattern, ``D = α + (1 - α) σ``: ``z`` active, ``α z`` inactive.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from lipopt.bounds.interval import NeuronState
from lipopt.network import Network

FloatArray = NDArray[np.float64]


def identity_active(network: Network, states: Sequence[NDArray[np.int8]]) -> list[NDArray[np.int8]]:
    """``states`` with every identity neuron ACTIVE (whatever bounds gave the states); the
    states themselves on a ReLU network."""
    if network.is_relu:
        return list(states)
    return [
        np.where(alpha == 1.0, NeuronState.ACTIVE, state).astype(np.int8)
        for state, alpha in zip(states, network.slopes)
    ]


def unstable_count(network: Network, states: Sequence[NDArray[np.int8]]) -> int:
    """The unstable neurons with a kink (``α != 1``): each a split, or one binary."""
    return int(
        sum(
            np.count_nonzero((state == NeuronState.UNSTABLE) & (alpha != 1.0))
            for state, alpha in zip(states, network.slopes)
        )
    )


__all__ = ["identity_active", "unstable_count"]
