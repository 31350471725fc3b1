"""Degenerate networks in few dimensions (issue 45, item 5): the default plan before and after
the region search took them.

    python benchmarks/degenerate_regions.py                 # seeds 0-3, 30 s each
    python benchmarks/degenerate_regions.py --seeds 2 --time-limit 60 --out /tmp/d.md

[3, 24, 24, 1] networks with every bias 0 and integer weights in [-3, 3] over [-1, 1]^3 (the
example of docs/getting-started.md), ℓ∞ input norm, each solved with ``split=True`` (what the
defaults did before: the domain split, a MIP on each part) and with the defaults (now the region
search alone, ``AUTO_REGIONS_ZERO_BIAS_SHARE``), one after the other. Writes the table to
``benchmarks/results/degenerate_regions.md`` with the machine and date.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def network(seed: int) -> Any:
    """A [3, 24, 24, 1] network with zero biases and integer weights in [-3, 3]."""
    from lipopt.network import Affine, Network, ReLU

    rng = np.random.default_rng(seed)
    widths = [3, 24, 24, 1]
    layers: list[Any] = []
    for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        weight = rng.integers(-3, 4, size=(fan_out, fan_in)).astype(float)
        layers.append(Affine(weight, np.zeros(fan_out)))
        if i < len(widths) - 2:
            layers.append(ReLU())
    return Network.from_layers(layers)


def solve(seed: int, limit: float, levers: dict[str, Any]) -> str:
    """One solve as a table's cells: bracket, ratio, status, seconds."""
    import lipopt

    box = lipopt.Box(-np.ones(3), np.ones(3))
    start = time.perf_counter()
    res = lipopt.lipschitz(network(seed), box, time_limit=limit, **levers)
    seconds = time.perf_counter() - start
    ratio = "–" if not res.lower else f"{res.value / res.lower:.3f}"
    return f"[{res.lower:.6g}, {res.value:.6g}] | {ratio} | {res.status} | {seconds:.1f}"


def main(argv: list[str] | None = None) -> int:
    from machine import run_stamp

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/degenerate_regions.md"
    )
    args = parser.parse_args(argv)
    rows = []
    for seed in range(args.seeds):
        before = solve(seed, args.time_limit, {"split": True})
        after = solve(seed, args.time_limit, {})
        print(f"seed {seed}: before {before}; after {after}", flush=True)
        rows.append(f"| {seed} | {before} | {after} |")
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    text = [
        "# Degenerate networks in few dimensions: the domain split against the region search",
        "",
        f"Measured {run_stamp()}. Command: "
        f"`{('python benchmarks/degenerate_regions.py ' + shown).strip()}`.",
        "",
        f"[3, 24, 24, 1], zero biases, integer weights in [-3, 3], box [-1, 1]^3, ℓ∞ input norm, "
        f"{args.time_limit:g} s. *split* = `split=True` (the defaults' plan before: the domain "
        "split, a MIP on each part); *default* = the defaults now (the region search alone). "
        "Each: bracket [lower, upper], upper/lower, status, wall seconds.",
        "",
        "| seed | split bracket | split ratio | split status | split s "
        "| default bracket | default ratio | default status | default s |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    args.out.write_text("\n".join(text) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
