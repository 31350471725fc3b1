"""lipopt: exact local Lipschitz constants of piecewise-linear networks by mixed-integer
programming.

>>> import lipopt
>>> net = lipopt.load_onnx("models/synthetic-2x20x40x20x2.onnx")          # doctest: +SKIP
>>> res = lipopt.lipschitz(net, lipopt.Box([0, 0], [1, 1]), c=[1, -1])    # doctest: +SKIP
>>> res.value, res.lower, res.status, res.exact_certified                 # doctest: +SKIP

The names below are imported on first use (PEP 562), so that ``import lipopt`` loads none of
numpy, SciPy, Pyomo or ONNX, and ``lipopt solve`` loads only what it runs (issue 45, item 6).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lipopt.certify import CertifyResult, certify
    from lipopt.domain import (
        Box,
        Disjunction,
        DomainError,
        Intersection,
        L1Ball,
        L2Ball,
        LinfBall,
        Polytope,
        intersect,
    )
    from lipopt.io.onnx import OnnxImportError, load_onnx
    from lipopt.io.torch import from_torch
    from lipopt.lipschitz import LipschitzError, LipschitzResult, build_model, lipschitz
    from lipopt.network import Activation, Affine, Network, NetworkError, ReLU
    from lipopt.norms import InputNorm, OutputNorm
    from lipopt.solvers import SolverError

__version__ = "0.1.0"

#: the module each public name comes from
_SOURCES = {
    "lipopt.certify": ("CertifyResult", "certify"),
    "lipopt.domain": (
        "Box", "Disjunction", "DomainError", "Intersection", "L1Ball", "L2Ball", "LinfBall",
        "Polytope", "intersect",
    ),
    "lipopt.io.onnx": ("OnnxImportError", "load_onnx"),
    "lipopt.io.torch": ("from_torch",),
    "lipopt.lipschitz": ("LipschitzError", "LipschitzResult", "build_model", "lipschitz"),
    "lipopt.network": ("Activation", "Affine", "Network", "NetworkError", "ReLU"),
    "lipopt.norms": ("InputNorm", "OutputNorm"),
    "lipopt.solvers": ("SolverError",),
}  # fmt: skip
_SOURCE = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = [
    "Activation",
    "Affine",
    "Box",
    "CertifyResult",
    "Disjunction",
    "DomainError",
    "InputNorm",
    "Intersection",
    "L1Ball",
    "L2Ball",
    "LinfBall",
    "LipschitzError",
    "LipschitzResult",
    "Network",
    "NetworkError",
    "OutputNorm",
    "OnnxImportError",
    "Polytope",
    "ReLU",
    "SolverError",
    "build_model",
    "certify",
    "from_torch",
    "intersect",
    "lipschitz",
    "load_onnx",
]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use and kept."""
    module = _SOURCE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names and the public ones not imported yet."""
    return sorted({*globals(), *__all__})


class _Package(ModuleType):
    """``lipopt`` itself: importing the submodule ``lipopt.certify`` (or ``lipopt.lipschitz``)
    sets the package's attribute of that name to the module, which would hide the function of
    the same name; the function stays (as when ``__init__`` imported it eagerly)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _SOURCE.get(name) == f"{__name__}.{name}":
            return  # unset, the next read asks __getattr__: the function
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
