"""The certified-accuracy plot of a results file (``lipopt report --plot``).

Certified accuracy against the ball radius, in the ball's norm, with the clean accuracy dashed
when the points have labels. A radius where some point's solves did not all finish (or failed)
has a hollow marker: its certified accuracy is a lower bound (radii from proven upper bounds,
failed points counted as not certified). No marker is clipped at the axes' edge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lipopt.atomic import atomic_path
from lipopt.batch.report import Results, certify_rows, clean_accuracy

PLOT_MESSAGE = "--plot needs matplotlib: pip install 'lipopt[plot]'"
#: the radius axis's norm, in matplotlib's mathtext
NORM_LABELS = {"linf": r"$\ell_\infty$", "l1": r"$\ell_1$", "l2": r"$\ell_2$"}
TITLE = "Certified accuracy by radius"
UNFINISHED_LABEL = "unfinished or failed points (a lower bound)"


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend; ``ValueError`` when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError(PLOT_MESSAGE) from None
    return plt


def _common(records: list[dict[str, Any]], key: str) -> str | None:
    """The one value of ``inputs[key]`` (else the line's own ``key``) the lines share, or None."""
    values = {(r.get("inputs") or {}).get(key, r.get(key)) for r in records} - {None}
    return str(values.pop()) if len(values) == 1 else None


def certified_figure(results: Results) -> Any:
    """The figure of certified accuracy against radius (a matplotlib ``Figure``; the caller
    closes it); ``ValueError`` without certify lines or matplotlib."""
    certifies = results.of_kind("certify")
    if not certifies:
        raise ValueError("no certification lines to plot")
    rows = certify_rows(certifies)
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6, 4))
    radii = [row.radius for row in rows]
    accuracy = [100 * row.certified_accuracy for row in rows]
    exact = [i for i, row in enumerate(rows) if not (row.unfinished or row.failed)]
    (line,) = axes.plot(radii, accuracy, marker="o", markevery=exact, clip_on=False,
                        label="certified accuracy", zorder=3)  # fmt: skip
    unfinished = [i for i in range(len(rows)) if i not in exact]
    if unfinished:
        axes.plot([radii[i] for i in unfinished], [accuracy[i] for i in unfinished],
                  linestyle="none", marker="o", markerfacecolor="white",
                  markeredgecolor=line.get_color(), clip_on=False, zorder=4,
                  label=UNFINISHED_LABEL)  # fmt: skip
    clean = clean_accuracy(certifies)
    if clean is not None:
        axes.axhline(100 * clean[0] / clean[1], linestyle="--", color="grey",
                     label="clean accuracy", clip_on=False)  # fmt: skip
    norm = _common(certifies, "ball") or _common(certifies, "norm")
    axes.set_xlabel(f"radius ({NORM_LABELS[norm]} norm)" if norm in NORM_LABELS else "radius")
    axes.set_ylabel("accuracy (%)")
    axes.set_ylim(-3, 103)
    axes.set_yticks(range(0, 101, 20))
    axes.margins(x=0.05)
    method = _common(certifies, "method")
    axes.set_title(TITLE if method is None else f"{TITLE} (method {method})")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    return figure


def plot_certified(results: Results, out: str | Path) -> Path:
    """Plot certified accuracy against radius (:func:`certified_figure`) to ``out``, an image
    whose format its suffix names; returns ``Path(out)``."""
    if not Path(out).suffix:
        raise ValueError(f"--plot {out}: name the image format by a suffix, e.g. {out}.png")
    figure = certified_figure(results)
    try:
        with atomic_path(out) as temp:  # the format from out's suffix, not the temporary name
            figure.savefig(temp, dpi=120, bbox_inches="tight", format=Path(out).suffix[1:])
    except OSError as exc:
        raise ValueError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        _pyplot().close(figure)
    return Path(out)
