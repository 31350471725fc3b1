"""VNN-LIB 2.0 files, read with the official parser (the ``vnnlib`` package, PyPI, MIT).

A 2.0 file starts with its version and declares its network's tensors::

    (vnnlib-version <2.0>)
    (declare-network acas
        (declare-input X float32 [1, 5])
        (declare-output Y float32 [1, 5]))
    (assert (<= X[0,0] 0.679857769))
    (assert (>= X[0,0] 0.6))
    (assert (<= (+ X[0,1] (* -1.0 X[0,2])) 0.5))
    (assert (or (and (>= X[0,3] -0.5) (<= X[0,3] -0.45))
                (and (>= X[0,3] 0.45) (<= X[0,3] 0.5))))
    (assert (<= Y[0,0] Y[0,1]))

The official parser checks the syntax, the declarations, the indices and the element types;
lipopt then takes (grammar of the parts it reads)::

    file    := (vnnlib-version <2.x>) network assert+      ; one network
    network := (declare-network NAME input output+)        ; one input tensor, no hidden ones
    input   := (declare-input NAME TYPE [d1, ..., dk])     ; TYPE: Real or a float type
    element := NAME[i1,...,ik] | NAME                      ; NAME alone for shape []

The input tensor is flattened in C order (the order lipopt reads an ONNX input in): ``X[i,j]``
of shape ``[m, n]`` is input ``i*n + j``. Numbers are decimals or integers (2.0 writes no
exponent), read as the float64 they denote. ``==`` is equality; ``!=`` is refused where it
concerns inputs. What an assert may say of the inputs is in :mod:`lipopt.io.vnnlib.sets` and
:mod:`lipopt.io.vnnlib.linear`. Several networks, several input tensors, hidden tensors and
integer, boolean, complex or string inputs are refused in one line.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from lipopt.io.vnnlib.common import Node, Parsed, Refusal, one_line

#: the element types (the parser's DType names) whose values are real numbers
FLOAT_TYPES = frozenset(
    {"Real", "F16", "F32", "F64", "BF16", "F8E4M3FN", "F8E5M2", "F8E4M3FNUZ", "F8E5M2FNUZ",
     "F4E2M1"}
)  # fmt: skip
_COMPARISONS = {"LessEqual": "<=", "GreaterEqual": ">=", "LessThan": "<", "GreaterThan": ">",
                "Equal": "=", "NotEqual": "!="}  # fmt: skip
_OPERATORS = {"Plus": "+", "Minus": "-", "Multiply": "*", "Negate": "-", "And": "and",
              "Or": "or"}  # fmt: skip


def parse_v2(text: str, input_dim: int | None) -> Parsed:
    """The input and asserts of a 2.0 file's ``text``; ``input_dim``: the inputs it must have."""
    try:
        import vnnlib
    except ImportError:
        raise Refusal(
            "a VNN-LIB 2.0 file needs the vnnlib package: pip install 'lipopt[vnnlib]'"
        ) from None
    try:
        query = vnnlib.parse_query_string(text)
    except Exception as exc:  # noqa: BLE001 - VNNLibException, or the binding's own errors
        raise Refusal(f"the VNN-LIB 2.0 parser refused the file: {_official(exc)}") from None
    name, shape = _the_input(query)
    size = math.prod(shape)
    if input_dim is not None and input_dim != size:
        raise Refusal(
            f"the file declares {size} inputs ({name} of shape {list(shape)}) "
            f"but the network takes {input_dim}"
        )

    def input_name(index: int) -> str:
        if not shape:
            return name
        return f"{name}[{','.join(str(int(i)) for i in np.unravel_index(index, shape))}]"

    assertions = [_node(assertion.expr, shape) for assertion in query.assertions]
    return Parsed(size, input_name, assertions, "2.0")


def _the_input(query: Any) -> tuple[str, tuple[int, ...]]:
    """The name and shape of the query's one input tensor; refuses what lipopt cannot take."""
    networks = query.networks
    if len(networks) != 1:
        names = ", ".join(network.name for network in networks)
        raise Refusal(
            f"the file declares {len(networks)} networks ({names}); lipopt answers one network "
            "per query"
        )
    network = networks[0]
    if len(network.inputs) != 1:
        names = ", ".join(tensor.name for tensor in network.inputs)
        raise Refusal(
            f"network {network.name} declares {len(network.inputs)} input tensors ({names}); "
            "lipopt takes networks of one input"
        )
    if network.hidden:
        raise Refusal(
            f"network {network.name} declares hidden tensors "
            f"({', '.join(tensor.name for tensor in network.hidden)}); lipopt reads inputs and "
            "outputs only"
        )
    tensor = network.inputs[0]
    written = str(tensor).replace("(", " ").split()
    spelt = written[2] if len(written) > 2 else "?"
    kind = tensor.dtype.name
    if kind not in FLOAT_TYPES and not (kind == "Unknown" and spelt == "Real"):
        raise Refusal(
            f"input {tensor.name} has element type {spelt}; lipopt takes real-valued inputs "
            "(Real or a float type)"
        )
    return str(tensor.name), tuple(int(d) for d in tensor.shape)


def _node(expr: Any, shape: tuple[int, ...]) -> Node:
    """The official parser's term ``expr`` as a :class:`Node`."""
    kind = type(expr).__name__
    if kind == "Var":
        return _variable(expr, shape)
    if kind in ("Float", "Int"):
        lexeme = str(expr.lexeme)
        value: float | int = float(lexeme) if kind == "Float" else int(lexeme)
        return Node("num", value=value, source=expr)
    if kind in ("Plus", "Multiply", "And", "Or"):
        args = tuple(_node(arg, shape) for arg in expr.args)
    elif kind == "Minus":
        args = tuple(_node(arg, shape) for arg in (expr.head, *expr.rest))
    elif kind == "Negate":
        args = (_node(expr.expr, shape),)
    elif kind in _COMPARISONS:
        args = (_node(expr.lhs, shape), _node(expr.rhs, shape))
        return Node(_COMPARISONS[kind], args, source=expr)
    else:  # a term this version of the parser has and lipopt does not know
        args = tuple(_node(child, shape) for child in expr.children())
        return Node(kind, args, source=expr)
    return Node(_OPERATORS[kind], args, source=expr)


def _variable(var: Any, shape: tuple[int, ...]) -> Node:
    """An element of the input (its flat index, C order), or a variable that is no input."""
    if var.kind.name != "Input":
        return Node("output", source=var)
    indices = tuple(int(i) for i in var.indices)
    if len(indices) != len(shape):
        raise Refusal(f"{var.name} of shape {list(shape)} is used as {str(var).strip()}")
    index = int(np.ravel_multi_index(indices, shape)) if shape else 0
    return Node("input", index=index, source=var)


def _official(exc: Exception) -> str:
    """The official parser's error on one line (its JSON report summarised)."""
    text = str(exc)
    try:
        report = json.loads(text)
        errors = report["errors"]
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return one_line(
            Exception(
                f"{first.get('message', '')} ({first.get('errorCode', '')}) at line "
                f"{first.get('line', '?')}: {first.get('offendingSymbol', '')}; "
                f"{first.get('hint', '')}{more}"
            )
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return one_line(exc)
