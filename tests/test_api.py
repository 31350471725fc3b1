"""The public API is pinned: a change to it must be deliberate (and change this test)."""

import dataclasses

import lipopt

PUBLIC = {
    "Affine",
    "Box",
    "DomainError",
    "InputNorm",
    "L1Ball",
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
