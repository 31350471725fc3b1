"""The public API is pinned: a change to it must be deliberate (and change this test)."""

import dataclasses

import numpy as np
import pytest

import lipopt

PUBLIC = {
    "Activation",
    "Affine",
    "Box",
    "Disjunction",
    "DomainError",
    "Intersection",
    "Polytope",
    "intersect",
    "InputNorm",
    "L1Ball",
    "L2Ball",
    "LinfBall",
    "LipschitzError",
    "LipschitzResult",
    "Network",
    "NetworkError",
    "OnnxImportError",
    "ReLU",
    "SolverError",
    "build_model",
    "lipschitz",
    "load_onnx",
    "certify",
    "from_torch",
    "CertifyResult",
    "OutputNorm",
}

RESULT_FIELDS = {
    "value",
    "lower",
    "upper",
    "status",
    "witness",
    "exact_certified",
    "model_stats",
    "timings",
    "solver",
    "norm",
    "c",
    "output_norm",
    "nodes",
    "refinements",
    "message",
    "model",
}


def test_public_names_are_exported():
    assert set(lipopt.__all__) == PUBLIC
    for name in PUBLIC:
        assert hasattr(lipopt, name)


def test_result_fields_are_pinned():
    assert {f.name for f in dataclasses.fields(lipopt.LipschitzResult)} == RESULT_FIELDS


def test_import_does_no_solver_work(monkeypatch):
    """Importing lipopt must not probe solvers (availability is checked when asked)."""
    import importlib

    from lipopt.solvers import registry

    calls = []
    monkeypatch.setattr(registry, "available", lambda: calls.append(1) or [])
    importlib.reload(lipopt)
    assert calls == []


def test_decompose_auto_follows_the_input_dimension():
    """``decompose="auto"`` decomposes the ℓ1 objective from AUTO_DECOMPOSE_MIN_DIM inputs up."""
    from lipopt.lipschitz import LipschitzError
    from lipopt.policy import AUTO_DECOMPOSE_MIN_DIM
    from tests.helpers import random_network

    rng = np.random.default_rng(4)
    for d in (AUTO_DECOMPOSE_MIN_DIM - 1, AUTO_DECOMPOSE_MIN_DIM):
        net = random_network(rng, [d, 6, 1])
        res = lipopt.lipschitz(
            net, lipopt.Box(np.zeros(d), np.ones(d)), "l1", split=False, regions=False
        )
        assert ("candidates" in res.model_stats) == (d >= AUTO_DECOMPOSE_MIN_DIM)
    with pytest.raises(LipschitzError, match="decompose must be"):
        lipopt.lipschitz(net, lipopt.Box(np.zeros(d), np.ones(d)), "l1", decompose="yes")
