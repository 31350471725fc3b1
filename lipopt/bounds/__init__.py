"""Bounds on every pre-activation and every backward-pass variable, in numpy only."""

from lipopt.bounds.interval import NetworkBounds, interval_bounds

__all__ = ["NetworkBounds", "interval_bounds", "propagate"]


def propagate(network, domain, c, method: str = "interval") -> NetworkBounds:  # type: ignore[no-untyped-def]
    """Bounds by the named method (``interval``)."""
    methods = {"interval": interval_bounds}
    if method not in methods:
        raise ValueError(f"unknown bound method {method!r}; choose one of: {sorted(methods)}")
    return methods[method](network, domain, c)
