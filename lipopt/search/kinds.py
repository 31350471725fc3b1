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

from lipopt.bounds.interval import NeuronState, classify
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


def activation_lines(
    alpha: FloatArray, lower: FloatArray, upper: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Lines ``s_lo z + t_lo <= h <= s_up z + t_up`` of ``h = α z + (1 - α) relu(z)`` valid on
    ``[l, u]``; returns ``(s_up, t_up, s_lo, t_lo)``. ``l >= 0`` or ``α = 1``: ``h = z``;
    ``u <= 0``: ``h = α z``; else the chord ``λ = (u - α l) / (u - l)``, ``μ = (α - λ) l``
    (above for ``α <= 1``, where ``h`` is convex; below for ``α > 1``, concave) and the line
    ``s z`` through the kink on the other side, ``s = 1`` if ``u >= -l`` else ``α`` (any
    ``s`` between ``α`` and 1 lies on that side; ``α = 0`` is CROWN's ReLU choice)."""
    state = classify(lower, upper, alpha)
    unstable = state == NeuronState.UNSTABLE
    fixed = np.where(state == NeuronState.ACTIVE, 1.0, alpha)
    width = np.where(unstable, upper - lower, 1.0)
    chord = np.where(unstable, (upper - alpha * lower) / width, fixed)
    shift = np.where(unstable, (alpha - chord) * lower, 0.0)
    tangent = np.where(unstable, np.where(upper >= -lower, 1.0, alpha), fixed)
    convex = alpha <= 1.0
    zero = np.zeros_like(shift)
    return (
        np.where(convex, chord, tangent), np.where(convex, shift, zero),
        np.where(convex, tangent, chord), np.where(convex, zero, shift),
    )  # fmt: skip


__all__ = ["activation_lines", "identity_active", "unstable_count"]
