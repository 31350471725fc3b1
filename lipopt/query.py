"""The question asked: a network, a domain, an input norm and what the backward pass starts from.

``Query.seed`` is a vector ``c`` (the constant of ``c^T f``) or an output norm β (the (α, β)
constant of f, paper app. E): ``max_{x ∈ X} max_{w ∈ B_β*} ||J(x)^T w||_{α*}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.bounds.interval import Seed
from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.progress import example_c

FloatArray = NDArray[np.float64]


class LipschitzError(ValueError):
    """A request that cannot be answered as asked (bad ``c``, wrong mode, ...)."""


@dataclass(frozen=True)
class Query:
    """One local Lipschitz question (checked when made by :func:`lipopt.config.configure`)."""

    network: Network
    domain: Domain
    norm: InputNorm
    seed: Seed

    @property
    def fixed_c(self) -> bool:
        """The objective is ``c^T f`` for a vector c (not an output norm)."""
        return not isinstance(self.seed, OutputNorm)

    @property
    def c(self) -> FloatArray | None:
        return np.asarray(self.seed) if self.fixed_c else None

    @property
    def output_norm(self) -> str | None:
        return None if self.fixed_c else self.seed.value  # type: ignore[union-attr]


def resolve_seed(
    network: Network, c: ArrayLike | None, output_norm: OutputNorm | str | None
) -> FloatArray | OutputNorm:
    """What the backward pass starts from: a vector c, or an output norm's dual ball."""
    if output_norm is not None:
        if c is not None:
            raise LipschitzError("give either c or an output norm, not both")
        try:
            norm = OutputNorm.parse(output_norm)
            norm.check_outputs(network.output_dim)
        except ValueError as exc:
            raise LipschitzError(str(exc)) from None
        return norm
    return resolve_c(network, c)


def resolve_c(network: Network, c: ArrayLike | None) -> FloatArray:
    """The output weighting: ``c`` as given, or ``[1]`` for a one-output network."""
    m = network.output_dim
    if c is None:
        if m != 1:
            raise LipschitzError(
                f"the network has {m} outputs; pass c (a vector of {m} numbers, e.g. "
                f"--c {example_c(m)}) "
                "to take the constant of c^T f, or an output norm (--output-norm l1|linf|cross)"
            )
        return np.ones(1)
    try:
        vec = np.asarray(c, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise LipschitzError(f"c must be a list of numbers, got {c!r}") from None
    if vec.size != m:
        raise LipschitzError(f"c has {vec.size} entries but the network has {m} outputs")
    if not np.all(np.isfinite(vec)):
        raise LipschitzError("c contains NaN or infinite values")
    return vec
