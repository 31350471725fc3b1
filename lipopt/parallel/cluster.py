"""The connection to a Dask distributed cluster, shared by ``lipopt batch --scheduler`` (whole
queries: :mod:`lipopt.batch.cluster`) and ``lipopt solve --bab --scheduler`` (the branch and
bound's part MIPs: :mod:`lipopt.strategies.bab_pool`). Dask is the ``cluster`` extra:
``pip install 'lipopt[cluster]'``."""

from __future__ import annotations

from typing import Any, TypeVar

from lipopt import policy

T = TypeVar("T")


class ClusterError(ValueError):
    """Dask missing, or its scheduler unreachable (one line)."""


def connect(address: str) -> Any:
    """A client of the scheduler at ``address``, or a one-line :class:`ClusterError`."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError(
            "--scheduler needs Dask distributed: pip install 'lipopt[cluster]'"
        ) from None
    try:
        return Client(address, timeout=policy.CLUSTER_CONNECT_SECONDS)
    except Exception as exc:  # noqa: BLE001 - distributed raises many kinds; each is one line
        hint = " (tls:// needs Dask's TLS settings)" if address.startswith("tls://") else ""
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {why}{hint}") from None


def held(value: T) -> T:
    """A Dask task whose result is ``value`` (a network, a query): the scheduler keeps the value
    in the task, so it computes it again when the worker holding it dies (scattered data would
    be lost)."""
    return value


__all__ = ["ClusterError", "connect", "held"]
