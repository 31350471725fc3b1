"""A refused smooth activation says what it is and where it came from (issue 44, item 10): torch
exports ``nn.GELU`` through ``Erf``, which meant nothing to a user who never wrote an Erf."""

from __future__ import annotations

import io

import pytest

from lipopt.io.onnx import OnnxImportError, load_onnx
from tests.helpers import require_module


def _sequential(activation_name: str):
    torch = pytest.importorskip("torch")
    activation = getattr(torch.nn, activation_name)()
    layers = [torch.nn.Linear(2, 4), activation, torch.nn.Linear(4, 1)]
    return torch, torch.nn.Sequential(*layers).eval()


def test_from_torch_names_the_gelu_module_behind_an_erf():
    require_module("torch")
    from lipopt import from_torch

    torch, module = _sequential("GELU")
    with pytest.raises(OnnxImportError) as refused:
        from_torch(module, torch.zeros(1, 2))
    message = str(refused.value)
    assert "'Erf'" in message and "\n" not in message
    assert "in torch module '1' (GELU)" in message
    assert "GELU activation" in message and "piecewise-linear" in message


@pytest.mark.parametrize("name, says", [("Tanh", "tanh is a smooth"), ("Sigmoid", "sigmoid")])
def test_an_onnx_file_with_a_smooth_activation_names_it_and_the_module(name, says):
    require_module("torch")
    torch, module = _sequential(name)
    buffer = io.BytesIO()
    torch.onnx.export(module, torch.zeros(1, 2), buffer, dynamo=False, opset_version=17)
    with pytest.raises(OnnxImportError) as refused:
        load_onnx(buffer.getvalue())
    message = str(refused.value)
    assert f"unsupported ONNX op '{name}'" in message and "in torch module '1'" in message
    assert says in message
