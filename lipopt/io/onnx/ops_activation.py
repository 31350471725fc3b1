"""Activations: ``Relu`` (``Y = max(X, 0)``), where a hidden layer of the network ends."""

from __future__ import annotations

import numpy as np

from lipopt.io.onnx.context import NodeContext, require
from lipopt.io.onnx.symbolic import Symbolic, Value


def handle_relu(ctx: NodeContext, inputs: list[Value | None]) -> list[Value]:
    """``Y = max(X, 0)``: closes the pending affine map with a ReLU layer."""
    x = require(ctx, inputs, 0, "X")
    if isinstance(x, Symbolic):
        return [x.relu()]
    return [np.maximum(x, 0)]
