"""Test helpers: random networks in the benchmark recipe, and writing a Network as ONNX."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lipopt.domain import Box, L1Ball, LinfBall
from lipopt.network import Affine, Network, ReLU


def random_network(
    rng: np.random.Generator, widths: Sequence[int], bias_std: float = 0.5
) -> Network:
    """He-normal weights, N(0, bias_std²) biases; widths [d, n_1, ..., m]."""
    layers: list[Affine | ReLU] = []
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        weight = rng.normal(size=(fan_out, fan_in)) * np.sqrt(2.0 / fan_in)
        layers.append(Affine(weight, rng.normal(size=fan_out) * bias_std))
        if i < len(widths) - 2:
            layers.append(ReLU())
    return Network.from_layers(layers)


def network_from_weights(weights: Sequence[tuple[np.ndarray, np.ndarray]]) -> Network:
    """The network of plain ``[(W_1, b_1), ...]`` weights (as :mod:`tests.oracle` takes them)."""
    return Network.from_affines([Affine(w, b) for w, b in weights])


def domain_from_spec(spec: tuple):
    """The lipopt domain of an oracle domain spec ``(kind, p, q)``."""
    kind, p, q = spec
    return {"box": Box, "linf": LinfBall, "l1": L1Ball}[kind](p, q)


def save_onnx(network: Network, path: Path, opset: int = 17) -> Path:
    """Write ``network`` as a chain of Gemm/Relu nodes (float64 weights, input 'x')."""
    nodes, inits = [], []
    current = "x"
    affines = network.affine_layers
    for k, affine in enumerate(affines):
        w, b = f"W{k}", f"b{k}"
        inits.append(numpy_helper.from_array(affine.weight.astype(np.float64), w))
        inits.append(numpy_helper.from_array(affine.bias.astype(np.float64), b))
        out = f"z{k}"
        nodes.append(helper.make_node("Gemm", [current, w, b], [out], transB=1, name=f"gemm{k}"))
        current = out
        if k < len(affines) - 1:
            nodes.append(helper.make_node("Relu", [out], [f"h{k}"], name=f"relu{k}"))
            current = f"h{k}"
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, network.input_dim])],
        [helper.make_tensor_value_info(current, TensorProto.DOUBLE, [1, network.output_dim])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, str(path))
    return path


def children(pid: int) -> list[int]:
    """The pids of a process's children, forked from any of its threads (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (one no one has reaped is not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def command_line(pid: int) -> bytes:
    """A process's command line (NUL-separated), or b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def require_module(name: str) -> None:
    """Import ``name`` or skip the test; under CI (env ``CI`` set) a missing module fails
    instead, because CI installs every extra and a skip there would hide an untested path."""
    import importlib
    import os

    import pytest

    try:
        importlib.import_module(name)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed, but CI must test this path")
        pytest.skip(f"{name} is not installed", allow_module_level=True)


def assert_feasible_moments(compiled: Any, v: np.ndarray, objective: float) -> None:
    """The moment vector of the point ``v`` (``y_α = Π v^α``) meets every constraint of a
    compiled moment relaxation (:mod:`lipopt.estimators.moments`): each block PSD, each
    equality 0, each inequality >= 0, and its objective equals ``objective``."""
    y = np.array([np.prod(v[list(m)]) for m in compiled.monomials])
    assert compiled.objective @ y == pytest.approx(objective, rel=1e-12)
    assert np.all(compiled.inequalities @ y >= -1e-12)
    assert np.all(np.abs(compiled.equalities @ y) <= 1e-12)
    for block, side in zip(compiled.blocks, compiled.sides):
        matrix = (block @ y).reshape(side, side)
        assert np.linalg.eigvalsh((matrix + matrix.T) / 2).min() >= -1e-10


def box_or_ball(kind: str, dim: int) -> Box | LinfBall:
    """The unit box (``kind == "box"``), or the ℓ∞ ball of radius 0.3 around its centre."""
    if kind == "box":
        return Box(np.zeros(dim), np.ones(dim))
    return LinfBall(np.full(dim, 0.5), 0.3)


def planned_bab(inputs: int = 3) -> Any:
    """The node the planner makes for ``bab=True`` on a seeded [inputs, 8, 8, 1] network over
    the box [-1, 1]^inputs (ℓ∞, c = 1, two cores, HiGHS), under the policy's constants as they
    are now."""
    from lipopt.config import LEVER_DEFAULTS
    from lipopt.configure import configure
    from lipopt.plan import Facts, plan
    from lipopt.policy import Policy

    net = random_network(np.random.default_rng(0), [inputs, 8, 8, 1])
    box = Box(-np.ones(inputs), np.ones(inputs))
    policy = Policy.current()
    levers = {**LEVER_DEFAULTS, "bab": True}
    query, config = configure(net, box, "linf", (np.array([1.0]), None), levers, policy)
    return plan(query, config, Facts(2, True, frozenset({"highs"})), policy)


def fast_first(values: Sequence[Any], fast: int = 1) -> list[Any]:
    """``values`` for a parametrized sweep: the first ``fast`` run with the README's test
    command, the rest are marked ``slow`` (``.ci/run`` runs them as its second command)."""
    slow = pytest.mark.slow
    return [v if i < fast else pytest.param(v, marks=slow) for i, v in enumerate(values)]
