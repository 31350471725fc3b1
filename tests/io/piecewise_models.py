"""Small torch models with sorting, max/min, |z|, leaky and pooling blocks (issue 46), shared by
``test_piecewise_ops`` (import against torch and onnxruntime) and ``test_piecewise_exact``
(exact constants against the oracle). Each comes with its input shape and the number of kinked
neurons (``α != 1``) per hidden layer that its encoding promises."""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


class MaxMinSlices(nn.Module):
    """``Linear -> [max(z[::2], z[1::2]), min(z[::2], z[1::2])] -> Linear`` (MaxMin)."""

    def __init__(self, d: int, width: int, out: int = 2) -> None:
        super().__init__()
        self.a, self.o = nn.Linear(d, width), nn.Linear(width, out)

    def forward(self, x: Any) -> Any:
        z = self.a(x)
        odd, even = z[:, ::2], z[:, 1::2]
        return self.o(torch.cat([torch.maximum(odd, even), torch.minimum(odd, even)], 1))


class GroupSortReduce(nn.Module):
    """GroupSort-2 by reshape + amax/amin: ``[max, min]`` of each pair."""

    def __init__(self, d: int, width: int, out: int = 2) -> None:
        super().__init__()
        self.a, self.o = nn.Linear(d, width), nn.Linear(width, out)

    def forward(self, x: Any) -> Any:
        g = self.a(x).view(1, -1, 2)
        pairs = torch.cat([g.amax(-1, keepdim=True), g.amin(-1, keepdim=True)], -1)
        return self.o(pairs.view(1, -1))


class GroupSort(nn.Module):
    """GroupSort-``group`` by ``torch.sort`` of each group (ascending or descending)."""

    def __init__(self, d: int, width: int, group: int, descending: bool = False) -> None:
        super().__init__()
        self.a, self.o = nn.Linear(d, width), nn.Linear(width, 2)
        self.group, self.descending = group, descending

    def forward(self, x: Any) -> Any:
        g = self.a(x).view(1, -1, self.group)
        return self.o(torch.sort(g, dim=-1, descending=self.descending)[0].view(1, -1))


class Absolute(nn.Module):
    """``Linear -> |z| -> Linear``."""

    def __init__(self, d: int, width: int) -> None:
        super().__init__()
        self.a, self.o = nn.Linear(d, width), nn.Linear(width, 2)

    def forward(self, x: Any) -> Any:
        return self.o(torch.abs(self.a(x)))


class SkipFromInput(nn.Module):
    """``y = O (x + B relu(A x))``: a residual skip from the raw input."""

    def __init__(self, d: int, width: int) -> None:
        super().__init__()
        self.a, self.b, self.o = nn.Linear(d, width), nn.Linear(width, d), nn.Linear(d, 2)

    def forward(self, x: Any) -> Any:
        return self.o(x + self.b(torch.relu(self.a(x))))


class SkipMaxMin(nn.Module):
    """``y = O (x + P maxmin(A x))``: a MaxMin block with a skip from the raw input."""

    def __init__(self, d: int, width: int) -> None:
        super().__init__()
        self.a, self.p, self.o = nn.Linear(d, width), nn.Linear(width, d), nn.Linear(d, 2)

    def forward(self, x: Any) -> Any:
        z = self.a(x)
        odd, even = z[:, ::2], z[:, 1::2]
        block = torch.cat([torch.maximum(odd, even), torch.minimum(odd, even)], 1)
        return self.o(x + self.p(block))


def leaky_pool(stride: int, image: tuple[int, int], channels: int = 1, kernel: int = 2) -> Any:
    """``Conv2d(1, channels, kernel) -> LeakyReLU(1/8) -> MaxPool2d(2, stride) -> Linear`` on
    an image of size ``image`` (slope 1/8: exact in float32, as ONNX stores it)."""
    rows, cols = (side - kernel + 1 for side in image)
    cells = channels * ((rows - 2) // stride + 1) * ((cols - 2) // stride + 1)
    return nn.Sequential(nn.Conv2d(1, channels, kernel), nn.LeakyReLU(0.125),
                         nn.MaxPool2d(2, stride=stride), nn.Flatten(),
                         nn.Linear(cells, 2))  # fmt: skip


@dataclass(frozen=True)
class Case:
    """A model, its input shape and the kinked neurons per hidden layer it promises."""

    module: Any
    shape: tuple[int, ...]
    kinked: tuple[int, ...]


def case(kind: str) -> Case:
    """The seeded model of ``kind`` (eval mode)."""
    torch.manual_seed(sum(map(ord, kind)))
    cases = {
        # MaxMin on 6 entries: 3 comparisons, max and min share each relu(a - b)
        "maxmin-slices": lambda: Case(MaxMinSlices(3, 6), (1, 3), (3,)),
        "groupsort2-reduce": lambda: Case(GroupSortReduce(3, 6), (1, 3), (3,)),
        "groupsort2-sort": lambda: Case(GroupSort(3, 6, 2), (1, 3), (3,)),
        "groupsort2-descending": lambda: Case(GroupSort(2, 4, 2, True), (1, 2), (2,)),
        # GroupSort-4 on 4 entries: merge exchange, passes of 2, 2, 1 comparators
        "groupsort4-sort": lambda: Case(GroupSort(2, 4, 4), (1, 2), (2, 2, 1)),
        "abs": lambda: Case(Absolute(3, 4), (1, 3), (4,)),
        # 4x4 conv output, leaky; 4 disjoint 2x2 windows: 2 + 1 comparisons each
        "leaky-maxpool-disjoint": lambda: Case(leaky_pool(2, (5, 5)), (1, 1, 5, 5), (16, 8, 4)),
        # 3x3 overlapping 2x2 windows: 12 distinct row pairs, then 9 window maxima
        "leaky-maxpool-overlap": lambda: Case(leaky_pool(1, (5, 5)), (1, 1, 5, 5), (16, 12, 9)),
        # small ones for the oracle: a 1x1 conv on 2x2, one window, and on 2x3, two
        # overlapping windows (4 row pairs, no two alike)
        "leaky-maxpool-disjoint-small": lambda: Case(
            leaky_pool(2, (2, 2), 1, 1), (1, 1, 2, 2), (4, 2, 1)
        ),
        "leaky-maxpool-overlap-small": lambda: Case(
            leaky_pool(1, (2, 3), 1, 1), (1, 1, 2, 3), (6, 4, 2)
        ),
        "prelu": lambda: Case(
            nn.Sequential(nn.Linear(3, 4), nn.PReLU(4, init=0.25), nn.Linear(4, 2)), (1, 3), (4,)
        ),
        "leaky": lambda: Case(
            nn.Sequential(nn.Linear(2, 5), nn.LeakyReLU(0.125), nn.Linear(5, 2)), (1, 2), (5,)
        ),
        # the input carried by identities: only the ReLUs are kinked
        "skip-from-input": lambda: Case(SkipFromInput(3, 4), (1, 3), (4,)),
        "skip-maxmin": lambda: Case(SkipMaxMin(3, 4), (1, 3), (2,)),
    }
    found = cases[kind]()
    for parameter in found.module.parameters():  # PReLU slopes of both signs, distinct
        if parameter.ndim == 1 and parameter.numel() == 4 and kind == "prelu":
            with torch.no_grad():
                parameter.copy_(torch.tensor([0.25, -0.5, 0.125, 0.0]))
    return Case(found.module.eval(), found.shape, found.kinked)


KINDS = (
    "maxmin-slices",
    "groupsort2-reduce",
    "groupsort2-sort",
    "groupsort2-descending",
    "groupsort4-sort",
    "abs",
    "leaky-maxpool-disjoint",
    "leaky-maxpool-overlap",
    "leaky-maxpool-disjoint-small",
    "leaky-maxpool-overlap-small",
    "prelu",
    "leaky",
    "skip-from-input",
    "skip-maxmin",
)


def export(module: Any, shape: tuple[int, ...], opset: int, dynamo: bool) -> bytes:
    """The module exported to ONNX in memory (both exporters; torch's chatter silenced)."""
    buffer = io.BytesIO()
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.randn(*shape),), buffer, opset_version=opset,
                          dynamo=dynamo)  # fmt: skip
    return buffer.getvalue()


def torch_forward(module: Any, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The module in float64 on a batch ``x`` of flat inputs, outputs flattened per sample."""
    with torch.no_grad():
        batch = torch.from_numpy(x.reshape(-1, *shape))  # each sample with its batch axis of 1
        out = torch.func.vmap(module.double())(batch).numpy()
    module.float()
    return out.reshape(x.shape[0], -1)


def kinked(network: Any) -> tuple[int, ...]:
    """The neurons with ``α != 1`` (those that may cost a binary) per hidden layer."""
    return tuple(int(np.count_nonzero(alpha != 1.0)) for alpha in network.slopes)
