"""Batches for the tests: small random networks saved as ONNX, VNN-LIB boxes, an instances CSV
with per-row overrides, and running ``lipopt`` in-process or as a subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from lipopt.cli import main
from tests.helpers import children, command_line, random_network, save_onnx

#: (widths, objectives): each objective is (norm, c, output_norm) as a CSV row gives them
NETWORKS = [
    ([2, 8, 8, 1], [("linf", "", ""), ("l1", "", "")]),
    ([2, 10, 10, 2], [("linf", "1,-1", ""), ("l1", "", "cross"), ("linf", "", "l1")]),
    ([3, 8, 8, 3], [("linf", "", "linf"), ("l1", "0.5,2,-1", ""), ("linf", "", "cross")]),
    ([4, 12, 1], [("linf", "", ""), ("l1", "", "abs")]),
    ([5, 6, 6, 2], [("linf", "", "linf"), ("l1", "1,1", "")]),
]


def vnnlib_text(lower: np.ndarray, upper: np.ndarray, outputs: int) -> str:
    """A VNN-COMP style property of the box, one bound per assert, with an output assertion."""
    lines = [f"(declare-const X_{i} Real)" for i in range(lower.size)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(outputs)]
    for i, (lo, hi) in enumerate(zip(lower, upper)):
        lines += [f"(assert (<= X_{i} {float(hi)!r}))", f"(assert (>= X_{i} {float(lo)!r}))"]
    lines.append("(assert (or (and (<= Y_0 -1000000.0))))")
    return "\n".join(lines) + "\n"


def write_batch(root: Path, count: int = 30, seed: int = 0, widths_scale: int = 1) -> list[dict]:
    """``root/instances.csv`` (with a header) of ``count`` rows over the NETWORKS, boxes of
    several sizes; returns each row's onnx, box file (JSON, for ``solve --box``) and options."""
    rng = np.random.default_rng(seed)
    (root / "nets").mkdir(parents=True, exist_ok=True)
    (root / "props").mkdir(exist_ok=True)
    paths = []
    for k, (widths, _objectives) in enumerate(NETWORKS):
        sized = [widths[0], *(w * widths_scale for w in widths[1:-1]), widths[-1]]
        paths.append(save_onnx(random_network(rng, sized), root / "nets" / f"net{k}.onnx"))
    rows, csv_lines = [], ["onnx,vnnlib,timeout,norm,c,output_norm"]
    for i in range(count):
        k = i % len(NETWORKS)
        widths, objectives = NETWORKS[k]
        norm, c, output_norm = objectives[(i // len(NETWORKS)) % len(objectives)]
        centre = rng.uniform(-1, 1, widths[0])
        radius = float(rng.choice([0.05, 0.3, 1.0]))
        lower, upper = centre - radius, centre + radius
        (root / "props" / f"p{i}.vnnlib").write_text(vnnlib_text(lower, upper, widths[-1]))
        box = root / "props" / f"p{i}.json"
        box.write_text(json.dumps({"lower": lower.tolist(), "upper": upper.tolist()}))
        csv_lines.append(f'nets/net{k}.onnx,props/p{i}.vnnlib,60,{norm},"{c}",{output_norm}')
        rows.append({"id": f"row {i + 2}", "onnx": str(paths[k]), "box": str(box),
                     "norm": norm, "c": c, "output_norm": output_norm})  # fmt: skip
    (root / "instances.csv").write_text("\n".join(csv_lines) + "\n")
    return rows


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``lipopt ARGV`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def solve_alone(row: dict) -> dict:
    """What ``lipopt solve --json`` gives for one row's instance on its own."""
    argv = ["solve", row["onnx"], "--box", row["box"], "--norm", row["norm"], "--json", "--quiet"]
    if row["c"]:
        argv += ["--c", row["c"]]
    if row["output_norm"]:
        argv += ["--output-norm", row["output_norm"]]
    code, out, err = run_cli(*argv, "--time-limit", "60")
    assert code == 0, err
    return json.loads(out)


def read_lines(path: Path) -> list[dict]:
    """The complete JSON lines of a results file."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip() and text.endswith("\n")]


def start_lipopt(*argv: str, cwd: Path) -> subprocess.Popen:
    """``lipopt ARGV`` as a subprocess of this Python (stdout and stderr piped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lipopt.cli", *argv],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_lines(path: Path, count: int, process: subprocess.Popen, timeout: float = 120) -> int:
    """Wait until ``path`` holds at least ``count`` lines (or the process ends); the count."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        lines = path.read_bytes().count(b"\n") if path.exists() else 0
        if lines >= count or process.poll() is not None:
            return lines
        time.sleep(0.02)
    raise TimeoutError(f"{path} did not reach {count} lines in {timeout} s")


def reference_batch(root: Path, count: int, seed: int) -> dict[str, dict]:
    """Write a batch of ``count`` instances (hidden layers twice the NETWORKS' widths, a few
    seconds on two workers) into ``root`` and run it uninterrupted into ``ref.jsonl``: its
    lines by id."""
    write_batch(root, count=count, seed=seed, widths_scale=2)
    process = start_lipopt("batch", "instances.csv", "--out", "ref.jsonl", "--quiet", cwd=root)
    _out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return {line["id"]: line for line in read_lines(root / "ref.jsonl")}


def pool_workers(pid: int) -> list[int]:
    """The children of a ``lipopt batch`` process that are its pool's workers (spawned
    Pythons), not multiprocessing's resource tracker."""
    return [
        child
        for child in children(pid)
        if b"spawn_main" in command_line(child) and b"resource_tracker" not in command_line(child)
    ]


def save_external(network, path: Path) -> Path:
    """``network`` as ``path`` with every tensor in the external data file ``path.data`` beside
    it (as torch's exporter writes a model): the ``.onnx`` file holds only where the data is."""
    save_onnx(network, path)
    model = onnx.load(str(path))
    onnx.save_model(
        model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
        location=f"{path.name}.data", size_threshold=0,
    )  # fmt: skip
    return path


def scale_external_data(path: Path, factor: float) -> None:
    """Multiply every tensor of ``path``'s external data file by ``factor`` in place, changing
    only that file (the ``.onnx`` file's bytes stay as they are)."""
    model = onnx.load(str(path), load_external_data=False)
    data = bytearray((path.parent / f"{path.name}.data").read_bytes())
    for tensor in model.graph.initializer:
        info = {entry.key: entry.value for entry in tensor.external_data}
        start, length = int(info.get("offset", 0)), int(info["length"])
        dtype = numpy_helper.helper.tensor_dtype_to_np_dtype(tensor.data_type)
        values = np.frombuffer(bytes(data[start : start + length]), dtype=dtype) * factor
        data[start : start + length] = values.astype(dtype).tobytes()
    (path.parent / f"{path.name}.data").write_bytes(bytes(data))
