"""lipopt: exact local Lipschitz constants of piecewise-linear networks by mixed-integer
programming.

>>> import lipopt
>>> net = lipopt.load_onnx("models/synthetic-2x20x40x20x2.onnx")          # doctest: +SKIP
>>> res = lipopt.lipschitz(net, lipopt.Box([0, 0], [1, 1]), c=[1, -1])    # doctest: +SKIP
>>> res.value, res.lower, res.status, res.exact_certified                 # doctest: +SKIP
"""

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
