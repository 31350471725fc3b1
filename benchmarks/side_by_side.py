"""Two runs of ``benchmarks/speed.py`` side by side, against the committed rows (issue 26).

    python benchmarks/side_by_side.py --before a.jsonl --after b.jsonl \
        --committed benchmarks/results/speed.jsonl --out benchmarks/results/orchestration.md

For each row of ``--after`` (matched to ``--before`` and to the committed table by network,
domain, seed, norm and configuration): whether value, lower, status, unstable neurons and
binaries are identical (values to 1e-9 relative: a different optimal vertex may round
differently), and the seconds of both runs with their ratio. The two runs should have been made
in turn on the same machine (``speed.py`` one case at a time, alternating commits).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from lipopt.atomic import write_text_atomic

KEY = ("widths", "domain", "seed", "norm", "config")


def load(path: Path) -> dict[tuple, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {tuple(row[k] for k in KEY): row for row in rows}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The answer and the model size agree (values within 1e-9 relative)."""

    def close(x: float | None, y: float | None) -> bool:
        if x is None or y is None:
            return x is y
        return abs(x - y) <= 1e-9 * max(1.0, abs(y))

    return (
        close(a["value"], b["value"])
        and close(a["lower"], b["lower"])
        and a["status"] == b["status"]
        and a["unstable"] == b["unstable"]
        and a["binaries"] == b["binaries"]
    )


def agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Issue 43's test of two runs: rows that finish agree in value (1e-6 relative), status,
    unstable neurons and binaries; rows stopped at the time limit have the same status and
    overlapping brackets [lower, value]."""
    if a["status"] != b["status"]:
        return False
    if a["status"] == "optimal":
        value_close = abs(a["value"] - b["value"]) <= 1e-6 * max(1.0, abs(b["value"]))
        return value_close and a["unstable"] == b["unstable"] and a["binaries"] == b["binaries"]
    lows = [r["lower"] for r in (a, b) if r["lower"] is not None]
    return not lows or max(lows) <= min(a["value"], b["value"]) * (1 + 1e-9)


def rows(before: dict, after: dict, committed: dict) -> list[str]:
    lines = [
        "| network | domain | seed | norm | value | status | same as before | agrees | "
        "same as committed | before s | after s | after/before |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, row in after.items():
        old, ref = before.get(key), committed.get(key)
        ratio = row["total_s"] / old["total_s"] if old and old["total_s"] > 0 else None
        lines.append(
            f"| [{row['widths']}] | {row['domain']} | {row['seed']} | {row['norm']} "
            f"| {row['value']:.6g} | {row['status']} "
            f"| {'yes' if old and same(row, old) else 'NO'} "
            f"| {'yes' if old and agree(row, old) else 'NO'} "
            f"| {'yes' if ref and same(row, ref) else ('-' if ref is None else 'NO')} "
            f"| {old['total_s']:.1f} | {row['total_s']:.1f} "
            f"| {'' if ratio is None else f'{ratio:.2f}'} |"
            if old
            else f"| [{row['widths']}] | {row['domain']} | {row['seed']} | {row['norm']} "
            f"| {row['value']:.6g} | {row['status']} | - | - | - | - | {row['total_s']:.1f} | |"
        )
    return lines


def summary(before: dict, after: dict, committed: dict) -> list[str]:
    paired = [(before[k], row) for k, row in after.items() if k in before]
    ratios = [row["total_s"] / old["total_s"] for old, row in paired if old["total_s"] > 0]
    total_before = sum(old["total_s"] for old, _ in paired)
    total_after = sum(row["total_s"] for _, row in paired)
    identical = sum(same(row, old) for old, row in paired)
    agreeing = sum(agree(row, old) for old, row in paired)
    in_committed = [(committed[k], row) for k, row in after.items() if k in committed]
    return [
        f"- {identical} of {len(paired)} rows identical to the run before (value, lower, status, "
        "unstable, binaries); "
        f"{sum(same(row, ref) for ref, row in in_committed)} of {len(in_committed)} identical to "
        "the committed rows.",
        f"- {agreeing} of {len(paired)} rows agree with the run before (finished: value to 1e-6, "
        "status, unstable, binaries; stopped: status and overlapping brackets).",
        f"- Seconds in all: {total_before:.1f} before, {total_after:.1f} after "
        f"({total_after / total_before:.3f}); median ratio of the rows "
        f"{statistics.median(ratios):.3f} (min {min(ratios):.2f}, max {max(ratios):.2f}).",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--committed", type=Path, required=True)
    parser.add_argument("--title", default="Orchestration rebuilt (issue 26): speed side by side")
    parser.add_argument("--header", default="", help="a paragraph: command, machine, date")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    before, after, committed = load(args.before), load(args.after), load(args.committed)
    text = [f"# {args.title}", "", args.header, "", *summary(before, after, committed), ""]
    text += [*rows(before, after, committed), ""]
    write_text_atomic(args.out, "\n".join(text))
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
