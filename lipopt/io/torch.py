"""A PyTorch module as a :class:`~lipopt.network.Network`, without an ONNX file: the module is
exported in memory (``torch.onnx.export``, the TorchScript exporter, in eval mode) and read by
:func:`~lipopt.io.onnx.load_onnx`, so it supports exactly the ops the ONNX importer does and
refuses the others with the same one-line error naming the op and the node."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from typing import Any

from lipopt.io.onnx import OnnxImportError, load_onnx
from lipopt.network import Network

#: the opset of the in-memory export (one the importer has reviewed, torch's default range)
TORCH_OPSET = 17

TORCH_HINT = (
    "from_torch needs PyTorch: pip install torch==2.13.0 (the CPU build; an unpinned 'torch' "
    "pulls a multi-GB CUDA build)"
)


def from_torch(module: Any, example_input: Any) -> Network:
    """The network computed by ``module`` on inputs shaped like ``example_input`` (a tensor with
    a batch axis of one, e.g. ``torch.zeros(1, 1, 8, 8)``); the network's input is that tensor
    flattened in C order. The module is exported in eval mode (batch normalisation with its
    running statistics) and left in the mode it was in."""
    try:
        import torch
    except ImportError:
        raise ImportError(TORCH_HINT) from None
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch takes a torch.nn.Module, got {type(module).__name__}")
    example = example_input if isinstance(example_input, tuple) else (example_input,)
    if len(example) != 1 or not isinstance(example[0], torch.Tensor):
        raise TypeError("example_input must be one tensor, e.g. torch.zeros(1, 1, 8, 8)")
    buffer = io.BytesIO()
    was_training = module.training
    try:
        module.eval()
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            # torch types f as a path, but its TorchScript exporter (dynamo=False) takes a buffer
            torch.onnx.export(
                module, example, buffer,  # type: ignore[arg-type]
                opset_version=TORCH_OPSET, dynamo=False,
                input_names=["x"], output_names=["y"],
            )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - torch's own reason, in one line
        raise OnnxImportError(f"torch could not export the module: {exc}") from None
    finally:
        module.train(was_training)
    try:
        return load_onnx(buffer.getvalue())
    except OnnxImportError as exc:
        raise OnnxImportError(_name_module_class(str(exc), module)) from None


def _name_module_class(message: str, module: Any) -> str:
    """``message`` with the class of the torch module it names (``in torch module '1'`` ->
    ``in torch module '1' (GELU)``), so a refused activation is recognised at once."""
    found = re.search(r"in torch module '([^']+)'", message)
    if found is None:
        return message
    try:
        kind = type(module.get_submodule(found.group(1))).__name__
    except (AttributeError, TypeError):  # a name torch made up, not a submodule's path
        return message
    return message.replace(found.group(0), f"{found.group(0)} ({kind})", 1)
