"""Bounds on every pre-activation and every backward-pass variable, in numpy only."""

from lipopt.bounds.interval import NetworkBounds, Seed, interval_bounds

__all__ = ["NetworkBounds", "Seed", "interval_bounds", "propagate"]


def propagate(network, domain, seed: Seed, method: str = "interval") -> NetworkBounds:  # type: ignore[no-untyped-def]
    """Bounds by the named method (``interval``) for the objective seeded by ``c`` or a norm."""
    from lipopt.bounds.linear import linear_bounds
    from lipopt.bounds.lp import lp_bounds

    methods = {"interval": interval_bounds, "linear": linear_bounds, "lp": lp_bounds}
    if method not in methods:
        raise ValueError(f"unknown bound method {method!r}; choose one of: {sorted(methods)}")
    return methods[method](network, domain, seed)
