"""Bounds on every pre-activation and every backward-pass variable, in numpy only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lipopt.bounds.interval import NetworkBounds, Seed, interval_bounds

if TYPE_CHECKING:
    from lipopt.domain import Domain
    from lipopt.network import Network

__all__ = ["NetworkBounds", "Seed", "interval_bounds", "propagate"]


def propagate(
    network: Network, domain: Domain, seed: Seed, method: str = "interval"
) -> NetworkBounds:
    """Bounds by the named method (``interval``) for the objective seeded by ``c`` or a norm."""
    from lipopt.bounds.linear import linear_bounds
    from lipopt.bounds.lp import lp_bounds

    methods = {"interval": interval_bounds, "linear": linear_bounds, "lp": lp_bounds}
    if method not in methods:
        raise ValueError(f"unknown bound method {method!r}; choose one of: {sorted(methods)}")
    return methods[method](network, domain, seed)
