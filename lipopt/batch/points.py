"""Certification queries for a dataset: one task per (point, radius).

``points`` is a ``.npy`` array of shape ``(n, d)`` (or ``(n, ...)``, flattened in C order as the
network's input is); ``labels`` an optional ``.npy`` of n integer classes. For each point x and
radius r the task certifies the ball of radius r around x (:func:`lipopt.certify`): the point
counts as *certified at r* when the whole ball keeps the predicted class and, with labels, that
class is the true one — the certified accuracy of robustness papers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lipopt.batch.tasks import Task, fingerprint, model_digest
from lipopt.certify import check_certify
from lipopt.domain import BALLS, DomainError
from lipopt.io.onnx import load_onnx, sample_shape


@dataclass(frozen=True)
class PointSet:
    """What ``lipopt certify --points`` asks: the model, the points, radii and how to certify."""

    model: str
    points: str
    labels: str | None
    radii: tuple[float, ...]
    ball: str = "linf"
    method: str = "cross"
    solve_options: tuple[tuple[str, Any], ...] = ()
    #: ``--clip LO,HI``: the constants over each ball ∩ ``[LO, HI]^d``
    clip: tuple[float, float] | None = None


def _load_array(path: str, what: str, kinds: str) -> np.ndarray:
    """A ``.npy`` array whose dtype kind is one of ``kinds`` (numpy's letters), or a one-line
    error."""
    if not Path(path).is_file():
        raise DomainError(f"{what}: file not found: {path}")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DomainError(f"{what}: cannot read {path} as .npy: {exc}") from None
    if not isinstance(data, np.ndarray):
        raise DomainError(f"{what}: {path} is not a single .npy array (an .npz archive?)")
    if data.dtype.kind not in kinds:
        raise DomainError(f"{what}: {path} holds {data.dtype} values, expected numbers")
    return data


def _points(spec: PointSet, input_dim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The points as rows of ``input_dim`` numbers, and the labels (checked). Points of rank
    > 2 must have the graph input's sample shape (so they flatten as the network does)."""
    raw = _load_array(spec.points, "--points", "biuf")
    sample = sample_shape(spec.model)
    if raw.ndim > 2 and raw.shape[1:] != sample:
        raise DomainError(
            f"--points: {spec.points} has shape {raw.shape}; the network's input is one sample "
            f"of shape {sample} (or flat: (n, {input_dim}))"
        )
    if raw.ndim < 2 or raw.size == 0 or raw.shape[0] * input_dim != raw.size:
        raise DomainError(
            f"--points: {spec.points} has shape {raw.shape}; expected (n, {input_dim}) or "
            f"(n, *{sample})"
        )
    points = raw.reshape(raw.shape[0], input_dim).astype(np.float64)
    if not np.all(np.isfinite(points)):
        raise DomainError(f"--points: {spec.points} holds NaN or infinite values")
    if spec.labels is None:
        return points, None
    labels = _load_array(spec.labels, "--labels", "biuf").reshape(-1)
    if labels.size != points.shape[0]:
        raise DomainError(
            f"--labels: {labels.size} labels for {points.shape[0]} points in {spec.points}"
        )
    if not np.all(np.isfinite(labels)) or not np.all(np.equal(np.mod(labels, 1), 0)):
        raise DomainError("--labels must be integer classes")
    return points, labels.astype(np.int64)


def point_tasks(spec: PointSet) -> list[Task]:
    """One certify task per point and radius, every input checked first."""
    network = load_onnx(spec.model)
    points, labels = _points(spec, network.input_dim)
    classes = max(network.output_dim, 2)
    if labels is not None and (labels.min() < 0 or labels.max() >= classes):
        raise DomainError(f"--labels must lie in 0..{classes - 1} (the network's classes)")
    if not spec.radii or any(not np.isfinite(r) or r <= 0 for r in spec.radii):
        raise DomainError("--radius must be positive numbers, e.g. 0.01,0.02,0.05")
    kind = BALLS[spec.ball]
    solve_options = {**dict(spec.solve_options), "workers": 1, "threads": 1}
    check_certify(network, kind(points[0], float(spec.radii[0])), spec.method, clip=spec.clip,
                  **solve_options)  # fmt: skip
    outside = np.flatnonzero(np.any((points < spec.clip[0]) | (points > spec.clip[1]), axis=1)) \
        if spec.clip is not None else np.zeros(0)  # fmt: skip
    if outside.size:
        raise DomainError(f"--points: point {int(outside[0])} lies outside --clip {spec.clip}")
    clip = {} if spec.clip is None else {"clip": spec.clip}
    options = {"method": spec.method, **solve_options, **clip}
    model = str(Path(spec.model).resolve())
    digest = model_digest(model)  # the .onnx file and the external data files it names
    tasks = []
    for index, x in enumerate(points):
        label = None if labels is None else int(labels[index])
        for radius in sorted(set(spec.radii)):
            inputs = {
                "onnx": spec.model, "points": spec.points, "index": index,
                "radius": float(radius), "ball": spec.ball, "method": spec.method, **clip,
            }  # fmt: skip
            what = {"kind": "certify", "onnx": digest, "x": x, "label": label,
                    "radius": float(radius), "ball": spec.ball, "options": options}  # fmt: skip
            tasks.append(
                Task(
                    id=f"point {index} radius {float(radius)!r}",
                    kind="certify",
                    model=model,
                    domain=kind(x, float(radius)),
                    options=options,
                    inputs=inputs,
                    fingerprint=fingerprint(what),  # contents, not paths as typed
                    label=label,
                    model_digest=digest,
                )
            )
    return tasks
