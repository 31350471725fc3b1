"""The markdown table, the summaries against issue 45's targets and the plot of ``scale.py``."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

#: the sides in the order the table lists them
SIDES = ("this", "before")
#: the networks of the targets' suite, and the targets: median ratio, largest ratio, exact share
TARGET_NETWORKS = ("scale-mlp", "scale-cnn")
TARGETS = {"median": 1.10, "max": 1.5, "exact": 0.5}
#: the bundled CNN's target: at this radius, every ratio at most this
BUNDLED_CNN = ("digits-cnn", 0.05, 1.2)

LEGEND = (
    "c = e_top − e_second at the image (top-2 margin); ℓ∞ balls; lipopt's defaults, each "
    "solve a fresh process importing the side's checkout. *this* = this checkout, *before* = "
    "`--vs`'s, the two in turn per case (alternating which goes first), same machine, same "
    "run. Bracket = [lower, upper] (the value alone where exact); ratio = upper/lower (∞: no "
    "lower bound); exact = status `optimal`. Unstable = `model_stats['unstable_neurons']`; "
    "sub-domains = the activation branch and bound's nodes (`bab_nodes`, marked b), else the "
    "domain split's parts (`parts`, marked s), else the linear-region search's nodes where it "
    "answered alone (`region_nodes`, marked r), else the MIP solver's branch-and-bound nodes "
    "(`nodes`, marked m); – where none was reported. Binaries = the MIP's binaries (0 where "
    "no model was built). Seconds = wall time of `lipopt.lipschitz`; peak MB = the largest "
    "resident set of the solving process or of any process it waited for."
)


def _number(value: float | None, digits: int = 6) -> str:
    if value is None:
        return "–"
    return "∞" if math.isinf(value) else f"{value:.{digits}g}"


def _bracket(r: dict[str, Any]) -> str:
    if r.get("upper") is None:
        return f"– ({r.get('message', '')})"
    if r["exact"]:
        return _number(r["upper"])
    return f"[{_number(r.get('lower'))}, {_number(r['upper'])}]"


def _sub_domains(r: dict[str, Any]) -> str:
    if r.get("sub_domains") is None:
        return "–"
    return f"{r['sub_domains']} {r['sub_domain_kind'][:1]}"


def _line(r: dict[str, Any]) -> str:
    seconds = "–" if r.get("seconds") is None else f"{r['seconds']:.1f}"
    peak = "–" if r.get("peak_mb") is None else f"{r['peak_mb']:.0f}"
    cells = [
        r["network"], f"{r['radius']:g}", r["image"], r["side"], r["status"], _bracket(r),
        _number(r["ratio"], 4), "yes" if r["exact"] else "no", _number(r.get("unstable")),
        _sub_domains(r), _number(r.get("binaries")), seconds, peak,
    ]  # fmt: skip
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _ratios(rows: list[dict[str, Any]]) -> list[float]:
    """Each row's ratio, a row without a bracket counted as ∞."""
    return [math.inf if r["ratio"] is None else r["ratio"] for r in rows]


def _stats(rows: list[dict[str, Any]]) -> str:
    ratios = _ratios(rows)
    exact = sum(r["exact"] for r in rows)
    return (
        f"median ratio {_number(statistics.median(ratios), 4)}, max "
        f"{_number(max(ratios), 4)}, {exact} of {len(rows)} exact"
    )


def groups(rows: list[dict[str, Any]]) -> list[str]:
    """Per (network, radius) and side: median and largest ratio, exact count."""
    lines = ["| network | radius | side | rows | median ratio | max ratio | exact |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    keys = dict.fromkeys((r["network"], r["radius"]) for r in rows)
    for network, radius in keys:
        for side in SIDES:
            mine = [r for r in rows if (r["network"], r["radius"], r["side"]) ==
                    (network, radius, side)]  # fmt: skip
            if not mine:
                continue
            ratios = _ratios(mine)
            exact = sum(r["exact"] for r in mine)
            lines.append(
                f"| {network} | {radius:g} | {side} | {len(mine)} | "
                f"{_number(statistics.median(ratios), 4)} | {_number(max(ratios), 4)} | "
                f"{exact} |"
            )
    return lines


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """Whether each of issue 45's targets is met, per side (for the rows present)."""
    lines = []
    for side in SIDES:
        mine = [r for r in rows if r["side"] == side]
        scale = [r for r in mine if r["network"] in TARGET_NETWORKS]
        if scale:
            ratios = _ratios(scale)
            exact = sum(r["exact"] for r in scale)
            median = statistics.median(ratios)
            lines += [
                f"- {side}, the MLP and CNN on the 8×8 digits ({_stats(scale)}): "
                f"median ≤ {TARGETS['median']}: {_met(median <= TARGETS['median'])}; "
                f"none above {TARGETS['max']}: {_met(max(ratios) <= TARGETS['max'])}; "
                f"at least half exact: {_met(exact >= TARGETS['exact'] * len(scale))}."
            ]
        network, radius, bound = BUNDLED_CNN
        cnn = [r for r in mine if r["network"] == network and r["radius"] == radius]
        if cnn:
            worst = max(_ratios(cnn))
            lines.append(
                f"- {side}, the bundled digits CNN at {radius:g} ({len(cnn)} images, largest "
                f"ratio {_number(worst, 4)}): ratio ≤ {bound} on every image: "
                f"{_met(worst <= bound)}."
            )
    return lines or ["- no rows of the targets' networks in this run."]


def _legend(argv: list[str]) -> str:
    """The legend, naming ``bab=True`` where ``--bab`` asked for it instead of the defaults."""
    return LEGEND.replace("lipopt's defaults", "`bab=True`") if "--bab" in argv else LEGEND


def table(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The whole markdown file: header, rows, the groups' summary and the targets."""
    commits = "; ".join(f"{side} at {where}" for side, where in meta["commits"].items())
    lines = [
        "# Brackets at scale (issue 45)", "",
        f"Command: `python benchmarks/scale.py {' '.join(meta['argv'])}`  ",
        f"Machine: {meta['stamp']}.  ", f"Code: {commits}.  ",
        f"Time limit {meta['limit']:g} s per solve.", "", _legend(meta["argv"]), "",
        "| network | radius | image | side | status | bracket | ratio | exact | unstable "
        "| sub-domains | binaries | seconds | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(_line(r) for r in rows), "", "## Per network and radius", "", *groups(rows), "",
        "## Issue 45's targets", "", *targets(rows),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Each row's final ratio upper/lower against its wall seconds, this and before in two
    colours (not the bracket over time: that would take a solve per time limit); rows without
    a lower bound at the top edge, as triangles."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finite = [r["ratio"] for r in rows if r["ratio"] is not None and math.isfinite(r["ratio"])]
    cap = max([2.0, *finite]) * 1.2
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for side, colour in zip(SIDES, ("tab:blue", "tab:orange")):
        mine = [r for r in rows if r["side"] == side and r.get("seconds") is not None]
        if not mine:
            continue
        done = [r for r in mine if r["ratio"] is not None and math.isfinite(r["ratio"])]
        ax.scatter([r["seconds"] for r in done], [r["ratio"] for r in done], c=colour,
                   s=18, alpha=0.7, label=f"{side}: final ratio")  # fmt: skip
        open_ = [r for r in mine if r not in done]
        if open_:
            ax.scatter([r["seconds"] for r in open_], [cap] * len(open_), c=colour, marker="^",
                       s=24, label=f"{side}: no lower bound")  # fmt: skip
    for level, style in ((TARGETS["median"], ":"), (TARGETS["max"], "--")):
        ax.axhline(level, color="grey", linestyle=style, linewidth=0.8)
    ax.set_yscale("log")
    ticks = [t for t in (1, 1.1, 1.5, 2, 3, 5, 10, 20, 50, 100, 1000) if t <= cap * 1.1]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylim(0.97, cap * 1.1)
    ax.set_xlim(left=0)
    ax.set_xlabel("wall seconds of the solve")
    ax.set_ylabel("bracket ratio upper / lower (end of solve)")
    ax.set_title("Each row's final bracket ratio against its time (lines: 1.1 and 1.5)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
