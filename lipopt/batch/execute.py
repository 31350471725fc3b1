"""Run one task where a worker is — a pool process, a Dask worker, or this process — and
return its result line: the same fields as ``lipopt solve --json`` (or ``certify --json``)
plus the task's id, kind, fingerprint and inputs."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from lipopt.batch.tasks import FAILED, FINGERPRINT_SCHEME, Task, model_digest
from lipopt.certify import certify
from lipopt.io.onnx import load_onnx
from lipopt.lipschitz import lipschitz
from lipopt.network import Network
from lipopt.status import Status


class ChangedInput(ValueError):
    """A task's file changed after the batch was checked."""


def network_of(task: Task) -> Network:
    """The task's network, loaded once per worker process and model version; refused when the
    model (its ``.onnx`` file or an external data file it names) is no longer the one the
    batch fingerprinted, before the load or after it (a file changed while it was read)."""
    digest = model_digest(task.model)
    if task.model_digest and digest != task.model_digest:
        raise ChangedInput(f"{task.model} changed after the batch started; rerun the batch")
    network = _network(task.model, digest)
    if model_digest(task.model) != digest:
        _network.cache_clear()
        raise ChangedInput(f"{task.model} changed while it was read; rerun the batch")
    return network


@lru_cache(maxsize=8)
def _network(path: str, digest: str) -> Network:
    return load_onnx(path)


def header(task: Task, attempts: int = 1) -> dict[str, Any]:
    """The fields every line of a task starts with."""
    return {
        "id": task.id,
        "kind": task.kind,
        "fingerprint": task.fingerprint,
        "scheme": FINGERPRINT_SCHEME,
        "inputs": task.inputs,
        "attempts": attempts,
    }


def failed_line(task: Task, error: str, attempts: int) -> dict[str, Any]:
    """The line of a query that could not be answered (its worker died, or it raised)."""
    return {**header(task, attempts), "status": FAILED, "error": error}


def run_task(task: Task, network: Network | None = None, attempts: int = 1) -> dict[str, Any]:
    """Answer one task; ``network``: the task's network when the caller has it already (a
    Dask worker receives it scattered), else it is loaded from ``task.model``."""
    net = network if network is not None else network_of(task)
    if task.kind == "solve":
        # a union (Disjunction) of a VNN-LIB or is passed as read: the max over its parts
        result = lipschitz(net, task.domain, **task.options)
        return {**header(task, attempts), **result.to_dict(), "model": task.inputs["onnx"]}
    answer = certify(net, task.domain, **task.options).to_dict()  # type: ignore[arg-type]
    statuses = list(answer["statuses"].values())
    correct = None if task.label is None else answer["predicted"] == task.label
    return {
        **header(task, attempts),
        "status": _overall(statuses),
        "label": task.label,
        "correct": correct,
        "certified": bool(answer["certified_ball"] and correct is not False),
        **answer,
        "model": task.inputs["onnx"],
    }


def _overall(statuses: list[str]) -> str:
    """One status for a certificate built from several constants: the first that is not
    ``optimal`` (a solver error before all), or ``optimal``."""
    if Status.SOLVER_ERROR in statuses:
        return Status.SOLVER_ERROR
    return next((s for s in statuses if s != Status.OPTIMAL), Status.OPTIMAL)


def run_safely(task: Task, network: Network | None = None, attempts: int = 1) -> dict[str, Any]:
    """:func:`run_task`, with an error raised by the query (not by an interrupt) turned into a
    ``failed`` line that names it, so that one bad query never stops the others."""
    try:
        return run_task(task, network, attempts)
    except Exception as exc:  # noqa: BLE001 - recorded on the query's line, not swallowed
        return failed_line(task, f"{type(exc).__name__}: {exc}", attempts)
