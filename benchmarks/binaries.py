"""Binaries before and after the per-neuron activation IR (issue 46), and the solve times.

    PYTHONPATH=. python benchmarks/binaries.py --before ../before   # -> results/binaries.md

Builds small torch models whose ONNX graphs use LeakyReLU, PReLU, a skip from the input,
|z|, Clip, MaxMin / GroupSort and LeakyReLU -> MaxPool (seeded; TorchScript exporter, opset 17),
plus the bundled ReLU models, and solves each with ``lipopt solve FILE --json`` in a fresh
process, once with this checkout and once with ``--before`` (alternating, so both see the same
machine). Per row: status, value, binaries of the model as built, unstable neurons, wall
seconds; before a model the old importer refused, the refusal. Before the IR a LeakyReLU
neuron was two ReLU neurons (``relu(z) - α relu(-z)``) and a carried input ``x`` was
``relu(x) - relu(-x)``; after it, one neuron with slope ``α`` and one identity neuron.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_name  # noqa: E402
from lipopt.atomic import write_text_atomic  # noqa: E402


def _torch_models() -> dict[str, tuple[Any, tuple[int, ...]]]:
    """The measured modules (seeded) and their example input shapes."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Skip(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(6, width), nn.ReLU(), nn.Linear(width, 6))
            self.head = nn.Linear(6, 2)

        def forward(self, x: Any) -> Any:
            return self.head(torch.relu(x + self.inner(x)))

    class MaxMin(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.second = nn.Linear(4, 12), nn.Linear(12, 12)
            self.head = nn.Linear(12, 2)

        def forward(self, x: Any) -> Any:
            for layer in (self.first, self.second):
                z = layer(x)
                a, b = z[:, ::2], z[:, 1::2]
                x = torch.cat([torch.maximum(a, b), torch.minimum(a, b)], dim=1)
            return self.head(x)

    class LeakyPool(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.head = nn.Linear(2 * 2 * 2, 2)

        def forward(self, x: Any) -> Any:
            y = nn.functional.max_pool2d(nn.functional.leaky_relu(self.conv(x), 0.1), 2)
            return self.head(y.flatten(1))

    leaky = nn.Sequential(
        nn.Linear(4, 8), nn.LeakyReLU(0.1), nn.Linear(8, 8), nn.LeakyReLU(0.1), nn.Linear(8, 2)
    )
    prelu = nn.Sequential(nn.Linear(6, 12), nn.PReLU(12, 0.2), nn.Linear(12, 2))
    absolute = nn.Sequential(nn.Linear(4, 10), AbsLayer(), nn.Linear(10, 2))
    clip = nn.Sequential(nn.Linear(4, 10), nn.Hardtanh(), nn.Linear(10, 2))
    return {
        "LeakyReLU [4,8,8,2]": (leaky, (1, 4)),
        "PReLU [6,12,2]": (prelu, (1, 6)),
        "skip from input [6,12,6,2]": (Skip(12), (1, 6)),
        "|z| [4,10,2]": (absolute, (1, 4)),
        "Clip (hard-tanh) [4,10,2]": (clip, (1, 4)),
        "MaxMin [4,12,12,2]": (MaxMin(), (1, 4)),
        "conv-LeakyReLU-MaxPool 4x4": (LeakyPool(), (1, 1, 4, 4)),
    }


class AbsLayer:  # a torch module made on first use (torch is imported lazily)
    def __new__(cls) -> Any:
        import torch

        class _Abs(torch.nn.Module):
            def forward(self, x: Any) -> Any:
                return torch.abs(x)

        return _Abs()


def export_models(folder: Path) -> list[tuple[str, Path, list[str]]]:
    """The torch models as ONNX files in ``folder`` and the bundled ones: (name, file, the
    domain and objective arguments)."""
    import torch

    rows = []
    for index, (name, (module, shape)) in enumerate(_torch_models().items()):
        path = folder / f"model{index}.onnx"
        module.eval()
        torch.onnx.export(module, (torch.zeros(shape),), str(path), opset_version=17,
                          dynamo=False, input_names=["x"], output_names=["y"])  # fmt: skip
        rows.append((name, path, ["--box", "-1,1", "--c", "1,-1"]))
    models = ROOT / "models"
    rows.append(("bundled synthetic-2x20x40x20x2", models / "synthetic-2x20x40x20x2.onnx",
                 ["--box", "0,1", "--c", "1,-1"]))  # fmt: skip
    rows.append(("bundled digits-resmlp, box [0.45, 0.55]", models / "digits-resmlp.onnx",
                 ["--box", "0.45,0.55", "--c", "1,-1," + ",".join(["0"] * 8)]))  # fmt: skip
    return rows


def solve(tree: Path, model: Path, question: list[str], limit: float) -> dict[str, Any]:
    """One ``lipopt solve`` in a fresh process with ``tree`` first on the path."""
    command = [sys.executable, "-m", "lipopt.cli", "solve", str(model), *question,
               "--time-limit", str(limit), "--json", "--quiet"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd=tree)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 3):  # 3: answered with the bounds proven before a failure
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"refused": last, "seconds": seconds}
    answer = json.loads(done.stdout)
    answer["seconds"] = seconds
    return answer


def gate_binaries(tree: Path, model: Path, question: list[str]) -> str:
    """The activation binaries ``a{k}[i]`` of the whole-domain MIP that ``lipopt export``
    writes (default bounds), counted in its LP file; '' where the model is refused."""
    with tempfile.TemporaryDirectory() as tmp:
        written = Path(tmp) / "model.lp"
        command = [sys.executable, "-m", "lipopt.cli", "export", str(model), *question,
                   "-o", str(written)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run(command, capture_output=True, env=env, check=False, cwd=tree)
        if not written.exists():
            return ""
        text = written.read_text().split("\nbinary", 1)[-1].split("\nend", 1)[0]
        return str(sum(1 for name in text.split() if re.match(r"a\d+[\[(]", name)))


def _cell(answer: dict[str, Any]) -> list[str]:
    gates = answer.get("gates", "")
    if "refused" in answer:
        return ["refused", "", gates, "", "", f"{answer['seconds']:.1f}"]
    return [answer["status"], f"{answer['value']:.6g}", gates, str(answer["binaries"]),
            str(answer["unstable_neurons"]), f"{answer['seconds']:.1f}"]  # fmt: skip


def table(rows: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> str:
    head = ["model"] + [f"{when} {what}" for when in ("before", "after") for what in
                        ("status", "value", "MIP gates", "binaries", "unstable", "s")]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, before, after in rows:
        lines.append("| " + " | ".join([name, *_cell(before), *_cell(after)]) + " |")
    refusals = [f"- {name}: {before['refused']}" for name, before, _ in rows if "refused" in before]
    return "\n".join(lines) + ("\n\nRefused before:\n" + "\n".join(refusals) if refusals else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout before the IR")
    parser.add_argument("--time-limit", type=float, default=120.0, help="per solve (default 120)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "binaries.md")
    args = parser.parse_args()
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, question in export_models(Path(tmp)):
            before = solve(args.before.resolve(), path, question, args.time_limit)
            before["gates"] = gate_binaries(args.before.resolve(), path, question)
            after = solve(ROOT, path, question, args.time_limit)
            after["gates"] = gate_binaries(ROOT, path, question)
            rows.append((name, before, after))
            print(name, _cell(before), _cell(after), flush=True)
    header = (
        "# Binaries before and after the per-neuron activation IR (issue 46)\n\n"
        f"`python benchmarks/binaries.py --before {args.before}` on {cpu_name()} "
        f"({os.cpu_count()} cores), Python {platform.python_version()}, started {started}. "
        f"Each row: `lipopt solve FILE --json --time-limit {args.time_limit:g}` in a fresh "
        "process, before and after in turn; seconds are whole processes. *MIP gates*: the "
        "activation binaries `a{k}[i]` of the one MIP over the whole domain that `lipopt export` "
        "writes with the default bounds (the count the IR changes); *binaries* and *unstable*: "
        "what the solve reports, summed over the parts of a domain split or region search where "
        "the plan used one, so they depend on the plan as well.\n\n"
    )
    write_text_atomic(args.out, header + table(rows) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
