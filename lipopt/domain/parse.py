"""Domains from command-line text and files: ``--box``, ``--center``/``--radius``/``--ball``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lipopt.domain.polytope import Polytope
from lipopt.domain.shapes import (
    BALLS,
    Box,
    DomainError,
    FloatArray,
    L1Ball,
    L2Ball,
    LinfBall,
    _vector,
)


def load_vector(text: str, what: str) -> FloatArray:
    """A vector from a comma list (``-0.5,0.2``) or a file (.npy, .json, .txt, .csv)."""
    path = Path(text)
    if path.suffix.lower() in {".npy", ".json", ".txt", ".csv"}:
        if not path.is_file():
            raise DomainError(f"{what}: file not found: {text}")
        try:
            if path.suffix.lower() == ".npy":
                data: object = np.load(path, allow_pickle=False)
            elif path.suffix.lower() == ".json":
                data = json.loads(path.read_text())
            else:
                data = np.loadtxt(path, delimiter="," if path.suffix.lower() == ".csv" else None)
        except (OSError, ValueError) as exc:
            raise DomainError(f"{what}: cannot read {text}: {exc}") from None
        return _vector(data, what)  # type: ignore[arg-type]
    try:
        values = [float(part) for part in text.split(",") if part.strip() != ""]
    except ValueError:
        raise DomainError(
            f"{what} must be comma-separated numbers or a .npy/.json/.txt file, got {text!r}"
        ) from None
    return _vector(values, what)


def _broadcast(vec: FloatArray, dim: int, what: str) -> FloatArray:
    if vec.size == 1:
        return np.full(dim, float(vec[0]))
    if vec.size != dim:
        raise DomainError(f"{what} has {vec.size} entries but the network takes {dim} inputs")
    return vec


def parse_box(text: str, dim: int) -> Box:
    """``LO,HI`` for every input, or a file: JSON ``{"lower": [...], "upper": [...]}``
    or a ``.npy`` array of shape (2, d)."""
    path = Path(text)
    suffix = path.suffix.lower()
    if suffix in {".json", ".npy"}:
        if not path.is_file():
            raise DomainError(f"--box: file not found: {text}")
        try:
            if suffix == ".json":
                data = json.loads(path.read_text())
                if not isinstance(data, dict) or not {"lower", "upper"} <= set(data):
                    raise DomainError(f'--box: {text} must hold {{"lower": [...], "upper": [...]}}')
                lower, upper = data["lower"], data["upper"]
            else:
                arr = np.load(path, allow_pickle=False)
                if arr.ndim != 2 or arr.shape[0] != 2:
                    raise DomainError(
                        f"--box: {text} must hold an array of shape (2, d), got {arr.shape}"
                    )
                lower, upper = arr[0], arr[1]
        except (OSError, ValueError) as exc:
            if isinstance(exc, DomainError):
                raise
            raise DomainError(f"--box: cannot read {text}: {exc}") from None
        lo = _broadcast(_vector(lower, "box lower bound"), dim, "box lower bound")
        hi = _broadcast(_vector(upper, "box upper bound"), dim, "box upper bound")
        return Box(lo, hi)
    vec = load_vector(text, "--box")
    if vec.size != 2:
        raise DomainError(
            f"--box takes LO,HI (two numbers) or a .json/.npy file, got {vec.size} numbers"
        )
    return Box(np.full(dim, vec[0]), np.full(dim, vec[1]))


def parse_ball(center_text: str, radius: float, kind: str, dim: int) -> LinfBall | L1Ball | L2Ball:
    """A ball of the given kind (``linf``, ``l1`` or ``l2``) from ``--center`` and
    ``--radius``."""
    center = _broadcast(load_vector(center_text, "--center"), dim, "--center")
    if kind not in BALLS:
        raise DomainError(f"--ball must be one of {sorted(BALLS)}, got {kind!r}")
    return BALLS[kind](center, radius)


def parse_clip(text: str) -> tuple[float, float]:
    """``--clip LO,HI``: the valid range of every input (e.g. pixels in ``0,1``)."""
    vec = load_vector(text, "--clip")
    if vec.size != 2 or not vec[0] < vec[1]:
        raise DomainError(f"--clip takes LO,HI with LO < HI, got {text!r}")
    return float(vec[0]), float(vec[1])


def _polytope_arrays(path: Path) -> dict[str, object]:
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise DomainError(
                f'--polytope: {path} must hold {{"A": ..., "b": ..., "lower": ..., "upper": ...}}'
            )
        return data
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    raise DomainError(f"--polytope takes a .json or .npz file, got {path.name}")


def parse_polytope(text: str, dim: int) -> Polytope:
    """``--polytope FILE``: ``{x : lower <= x <= upper, A x <= b}`` from a JSON object or an
    ``.npz`` archive with the keys ``A`` (m × d), ``b`` (m), ``lower`` and ``upper`` (d, or one
    number for every input)."""
    path = Path(text)
    if not path.is_file():
        raise DomainError(f"--polytope: file not found: {text}")
    try:
        data = _polytope_arrays(path)
    except (OSError, ValueError) as exc:
        if isinstance(exc, DomainError):
            raise
        raise DomainError(f"--polytope: cannot read {text}: {exc}") from None
    missing = [key for key in ("A", "b", "lower", "upper") if key not in data]
    if missing:
        raise DomainError(
            f"--polytope: {text} lacks {', '.join(missing)} (it needs A, b, lower, upper)"
        )
    lower = _broadcast(_vector(data["lower"], "polytope lower"), dim, "polytope lower")  # type: ignore[arg-type]
    upper = _broadcast(_vector(data["upper"], "polytope upper"), dim, "polytope upper")  # type: ignore[arg-type]
    return Polytope(data["A"], data["b"], lower, upper)  # type: ignore[arg-type]
