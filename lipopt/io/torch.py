"""A PyTorch module as a :class:`~lipopt.network.Network`, without an ONNX file: the module is
exported in memory (``torch.onnx.export`` in eval mode: the TorchScript exporter at opset 17 by
default, or ``dynamo=True`` for torch's newer exporter, opset 18 and up) and read by
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

#: the oldest opset torch's dynamo exporter writes
DYNAMO_MIN_OPSET = 18

TORCH_HINT = (
    "from_torch needs PyTorch: pip install torch==2.13.0 (the CPU build; an unpinned 'torch' "
    "pulls a multi-GB CUDA build)"
)


def from_torch(
    module: Any, example_input: Any, *, opset: int | None = None, dynamo: bool = False
) -> Network:
    """The network computed by ``module`` on inputs shaped like ``example_input`` (a tensor with
    a batch axis of one, e.g. ``torch.zeros(1, 1, 8, 8)``); the network's input is that tensor
    flattened in C order. The module is exported in eval mode (batch normalisation with its
    running statistics) and left in the mode it was in.

    Args:
        module: a ``torch.nn.Module``.
        example_input: one tensor with a batch axis of one.
        opset: the ONNX opset of the export; default :data:`TORCH_OPSET` (17) for the
            TorchScript exporter, :data:`DYNAMO_MIN_OPSET` (18) with ``dynamo``.
        dynamo: export with torch's dynamo-based exporter (needs ``onnxscript``) instead of
            the TorchScript one.
    """
    try:
        import torch
    except ImportError:
        raise ImportError(TORCH_HINT) from None
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch takes a torch.nn.Module, got {type(module).__name__}")
    example = example_input if isinstance(example_input, tuple) else (example_input,)
    if len(example) != 1 or not isinstance(example[0], torch.Tensor):
        raise TypeError("example_input must be one tensor, e.g. torch.zeros(1, 1, 8, 8)")
    version = opset if opset is not None else (DYNAMO_MIN_OPSET if dynamo else TORCH_OPSET)
    if dynamo and version < DYNAMO_MIN_OPSET:
        raise ValueError(f"the dynamo exporter writes opset {DYNAMO_MIN_OPSET} or newer")
    try:
        exported = _export(torch, module, example, version, dynamo)
    except Exception as exc:  # noqa: BLE001 - torch's own reason, in one line
        reason = " ".join(str(exc).split())
        raise OnnxImportError(f"torch could not export the module: {reason}") from None
    try:
        return load_onnx(exported)
    except OnnxImportError as exc:
        raise OnnxImportError(_name_module_class(str(exc), module)) from None


def _export(torch: Any, module: Any, example: tuple, opset: int, dynamo: bool) -> bytes:
    """The serialised ONNX model of ``module`` in eval mode (left in the mode it was in)."""
    buffer = io.BytesIO()
    was_training = module.training
    try:
        module.eval()
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            # torch types f as a path, but both exporters take a buffer
            torch.onnx.export(
                module, example, buffer,  # type: ignore[arg-type]
                opset_version=opset, dynamo=dynamo,
                input_names=["x"], output_names=["y"],
            )  # fmt: skip
    finally:
        module.train(was_training)
    return buffer.getvalue()


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
