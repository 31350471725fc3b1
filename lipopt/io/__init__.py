"""Reading networks from files: :func:`load_onnx` turns an ONNX ReLU network into a Network."""

from lipopt.io.onnx import OnnxImportError, load_onnx

__all__ = ["OnnxImportError", "load_onnx"]
