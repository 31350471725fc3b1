"""Write the bundled batch example: VNN-LIB properties (input boxes) for the bundled synthetic
networks and the VNN-COMP style instances.csv that lists them. Deterministic; run from anywhere:
``python models/batch/make_instances.py``."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (property file, lower bounds, upper bounds, network, timeout in seconds)
PROPERTIES = [
    ("unit-square.vnnlib", [0.0, 0.0], [1.0, 1.0], "synthetic-2x20x40x20x2.onnx", 60),
    ("corner-a.vnnlib", [0.2, 0.5], [0.4, 0.7], "synthetic-2x20x40x20x2.onnx", 60),
    ("corner-b.vnnlib", [0.6, 0.1], [0.8, 0.3], "synthetic-2x20x40x20x2.onnx", 60),
    ("ten-centre.vnnlib", [0.45] * 10, [0.55] * 10, "synthetic-10x20x30x20x2.onnx", 60),
    ("ten-side.vnnlib", [0.0] * 5 + [0.9] * 5, [0.1] * 5 + [1.0] * 5,
     "synthetic-10x20x30x20x2.onnx", 60),
]  # fmt: skip


def vnnlib_text(lower: list[float], upper: list[float], outputs: int = 2) -> str:
    """A VNN-COMP style property: the input box, one bound per assert, and an output
    assertion (class 0 wins), which lipopt ignores."""
    lines = [f"; input box of {len(lower)} inputs; output: class 0 wins"]
    lines += [f"(declare-const X_{i} Real)" for i in range(len(lower))]
    lines += [f"(declare-const Y_{j} Real)" for j in range(outputs)]
    for i, (lo, hi) in enumerate(zip(lower, upper)):
        lines += [f"(assert (>= X_{i} {lo!r}))", f"(assert (<= X_{i} {hi!r}))"]
    lines.append("(assert (or (and (>= Y_0 Y_1))))")
    return "\n".join(lines) + "\n"


def main() -> None:
    rows = []
    for name, lower, upper, network, timeout in PROPERTIES:
        (HERE / name).write_text(vnnlib_text([float(v) for v in lower], [float(v) for v in upper]))
        rows.append(f"../{network},{name},{timeout}")
    (HERE / "instances.csv").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
