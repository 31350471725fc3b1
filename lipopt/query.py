"""The question asked: a network, a domain, an input norm and what the backward pass starts from.

``Query.seed`` is a vector ``c`` (the constant of ``c^T f``) or an output norm β (the (α, β)
constant of f, paper app. E): ``max_{x ∈ X} max_{w ∈ B_β*} ||J(x)^T w||_{α*}``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lipopt.bounds import propagate
from lipopt.bounds.constrained import split_bounds
from lipopt.bounds.interval import NetworkBounds, Seed
from lipopt.domain import Domain
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.progress import example_c

FloatArray = NDArray[np.float64]
T = TypeVar("T")


class LipschitzError(ValueError):
    """A request that cannot be answered as asked (bad ``c``, wrong mode, ...)."""


@dataclass(frozen=True)
class Query:
    """One local Lipschitz question (checked when made by :func:`lipopt.config.configure`).

    What is derived from the fields alone and asked in several places (the whole domain's
    bounds: :meth:`bounds`, :meth:`split_root`) is computed once and kept with the query
    (:meth:`once`), so it lives exactly as long as the query: processes forked after it was
    computed inherit it, a pickled query carries it, and a query with another field (a part's
    domain, a rebalanced network: ``dataclasses.replace``) is another query with its own.
    """

    network: Network
    domain: Domain
    norm: InputNorm
    seed: Seed
    _kept: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def once(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked of this query, the kept value after;
        only for values that follow from the query's fields (never a part's)."""
        if key not in self._kept:
            self._kept[key] = compute()
        value: T = self._kept[key]
        return value

    def key_of(self, value: object) -> Hashable | None:
        """The key this query keeps ``value`` under (the very object, from :meth:`once`), or
        None."""
        return next((key for key, kept in self._kept.items() if kept is value), None)

    def bounds(self, method: str = "linear") -> NetworkBounds:
        """Bounds over the whole domain by ``method``
        (:func:`~lipopt.bounds.propagate`), computed once per query."""
        return self.once(
            ("bounds", method),
            lambda: propagate(self.network, self.domain, self.seed, method=method),
        )

    def split_root(self) -> NetworkBounds | None:
        """:func:`~lipopt.bounds.constrained.split_bounds` with no split: the activation branch
        and bound's root, which its search and its part MIPs' sign rows read (split_bounds' own
        numbers, not :meth:`bounds`'); computed once per query."""
        return self.once(
            "split root", lambda: split_bounds(self.network, self.domain, self.seed, {})
        )

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
