"""The summary of a batch results file (``lipopt report``): read, summarise, tabulate (the
plot is :mod:`lipopt.batch.plot`).

A results file is JSON lines, one object per query, written by ``lipopt batch`` or
``lipopt certify --points``; its ``"kind"`` tells a ``solve`` line (a Lipschitz constant) from a
``certify`` line (a point at a radius). Every line carries ``id``, ``kind`` and ``status``; a line
with status ``failed`` carries ``error`` instead of numbers.

Reading is strict except at the end: a last line without its newline (the writer was killed
mid-line; the batch's results store drops such a line as well) is skipped and counted; any other
unreadable line is a ``ValueError`` naming the file and line. An empty file is no error: its
summary says it holds no result lines.

Certification tables count every line at a radius as a point; a failed line is neither correct
nor certified (the accuracies are conservative), and a line whose solves did not all finish
(status other than ``optimal``) is counted as ``unfinished``. Nothing here prints: the functions
return strings, write files, or raise ``ValueError`` with a one-line message.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lipopt.atomic import atomic_path
from lipopt.batch.tasks import FAILED, KINDS
from lipopt.status import Status

#: the order statuses are listed in (a solve's, then a failed line's); others (a certify line's
#: ``total_time_limit``) follow alphabetically
STATUS_ORDER = (*Status, FAILED)
REQUIRED = ("id", "kind", "status")
#: failed lines listed in the summary before "... and N more"
MAX_FAILED_LISTED = 10
CSV_COLUMNS = (
    "id", "kind", "status", "seconds",
    "value", "lower", "upper",
    "radius", "predicted", "label", "correct", "certified", "certified_radius",
    "onnx", "input", "error",
)  # fmt: skip


@dataclass
class Results:
    """The lines of one results file, in file order, and how many cut-off last lines were
    skipped (0 or 1)."""

    path: str
    records: list[dict[str, Any]] = field(default_factory=list)
    incomplete: int = 0

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """The lines of one kind (``solve`` or ``certify``)."""
        return [r for r in self.records if r["kind"] == kind]


@dataclass
class RadiusRow:
    """One row of the certification table: the lines at one ball radius."""

    radius: float
    points: int = 0
    correct: int | None = None  # None: no line at this radius has a label
    certified: int = 0
    unfinished: int = 0
    failed: int = 0

    @property
    def clean_accuracy(self) -> float | None:
        """correct / points, or None without labels."""
        return None if self.correct is None else self.correct / self.points

    @property
    def certified_accuracy(self) -> float:
        """certified / points."""
        return self.certified / self.points


def _parse_line(raw: bytes, path: str, lineno: int) -> dict[str, Any]:
    """One line as a result object; ``ValueError`` naming ``path:lineno`` when it is not one."""
    where = f"{path}, line {lineno}"
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where}: not a JSON line ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: not a JSON object")
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise ValueError(f"{where}: no {', '.join(missing)} (not a lipopt results line)")
    if record["kind"] not in KINDS:
        raise ValueError(f"{where}: unknown kind {record['kind']!r} (expected solve or certify)")
    return record


def read_results(path: str | Path) -> Results:
    """Read a JSON-lines results file. Blank lines are ignored; what follows the last newline
    (a line cut off mid-write: the results store drops it too) is skipped and counted in
    ``Results.incomplete``; any other line that is not a results line raises ``ValueError``."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    end = data.rfind(b"\n") + 1
    results = Results(str(path), incomplete=int(bool(data[end:].strip())))
    for lineno, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):
        if raw.strip():
            results.records.append(_parse_line(raw, str(path), lineno))
    return results


def _number(x: Any) -> float | None:
    """``x`` as a float when it is a number (not a bool, not NaN), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        return None
    return float(x)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (numpy's default)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def quantiles(values: Iterable[float]) -> dict[str, float] | None:
    """min, median, p90 and max of ``values``; None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    return {
        "min": ordered[0],
        "median": _quantile(ordered, 0.5),
        "p90": _quantile(ordered, 0.9),
        "max": ordered[-1],
    }


def status_counts(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Lines per status, known statuses first in :data:`STATUS_ORDER`."""
    counts = Counter(str(r["status"]) for r in records)
    known = [s for s in STATUS_ORDER if s in counts]
    others = sorted(s for s in counts if s not in STATUS_ORDER)
    return {s: counts[s] for s in known + others}


def relative_gap(lower: Any, upper: Any) -> float | None:
    """``(upper - lower) / |upper|``; 0 when the bounds meet, inf when only upper is 0."""
    lo, up = _number(lower), _number(upper)
    if lo is None or up is None:
        return None
    if up == lo:
        return 0.0
    return math.inf if up == 0 else (up - lo) / abs(up)


def _ball_radius(record: dict[str, Any]) -> float | None:
    """The radius of the ball a certify line was asked about."""
    inputs = record.get("inputs") or {}
    radius = _number(inputs.get("radius"))
    return radius if radius is not None else _number(record.get("ball_radius"))


def certify_rows(records: Iterable[dict[str, Any]]) -> list[RadiusRow]:
    """The certification table: one row per distinct ball radius, sorted. With labels on any
    line, every row has a clean-accuracy count (failed lines counting as wrong)."""
    records = list(records)
    labelled = any(r.get("label") is not None for r in records)
    rows: dict[float, RadiusRow] = {}
    for record in records:
        radius = _ball_radius(record)
        if radius is None:
            raise ValueError(f"certify line {record['id']!r} has no inputs.radius")
        row = rows.setdefault(radius, RadiusRow(radius, correct=0 if labelled else None))
        row.points += 1
        if record["status"] == FAILED:
            row.failed += 1
            continue
        if row.correct is not None:
            row.correct += record.get("correct") is True
        row.certified += record.get("certified") is True
        row.unfinished += record["status"] != Status.OPTIMAL
    return [rows[r] for r in sorted(rows)]


def clean_accuracy(records: Iterable[dict[str, Any]]) -> tuple[int, int] | None:
    """(correct, points) over the distinct points (model, points file, index) of certify
    lines; a point whose lines all failed counts as wrong. None when no line has a label."""
    verdicts: dict[tuple[Any, ...], bool] = {}
    labelled = False
    for record in records:
        inputs = record.get("inputs") or {}
        key = (inputs.get("onnx"), inputs.get("points"), inputs.get("index", record["id"]))
        correct = record["status"] != FAILED and record.get("correct") is True
        labelled = labelled or record.get("label") is not None
        verdicts[key] = verdicts.get(key, False) or correct
    if not labelled:
        return None
    return sum(verdicts.values()), len(verdicts)


def _percent(fraction: float | None) -> str:
    """``80.0%``, or ``-`` for None."""
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def _range(values: Sequence[float]) -> str:
    """``lo .. hi`` of the values (at least one)."""
    return f"{min(values):.6g} .. {max(values):.6g}"


def _overview_lines(results: Results) -> list[str]:
    """File, number of queries by kind, statuses and seconds quantiles."""
    records = results.records
    kinds = Counter(r["kind"] for r in records)
    by_kind = ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k])
    lines = [f"file       {results.path}", f"queries    {len(records)} ({by_kind})"]
    if results.incomplete:
        lines.append(f"note       {results.incomplete} incomplete last line skipped")
    counts = status_counts(records)
    lines.append("statuses   " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    ran = [r for r in records if r["status"] != FAILED]
    seconds = [s for s in (_number(r.get("seconds")) for r in ran) if s is not None]
    stats = quantiles(seconds)
    if stats is not None:
        shown = "  ".join(f"{k} {v:.2f}" for k, v in stats.items())
        lines.append(f"seconds    {shown}  (over {len(seconds)} lines that ran)")
    return lines


def _solve_lines(solves: list[dict[str, Any]]) -> list[str]:
    """Exact count, value range and relative-gap range of the solve lines."""
    exact = sum(r["status"] == Status.OPTIMAL for r in solves)
    lines = [f"solve      {len(solves)} queries, {exact} exact (status optimal)"]
    ran = [r for r in solves if r["status"] != FAILED]
    values = [v for v in (_number(r.get("value")) for r in ran) if v is not None]
    if values:
        lines.append(f"  value    {_range(values)}  ({len(values)} with a value)")
    gaps = [g for g in (relative_gap(r.get("lower"), r.get("upper")) for r in ran) if g is not None]
    if gaps:
        lines.append(
            f"  gap      {_range(gaps)}  ((upper-lower)/|upper|, {len(gaps)} with both bounds)"
        )
    return lines


def _certify_lines(certifies: list[dict[str, Any]]) -> list[str]:
    """The per-radius certification table."""
    rows = certify_rows(certifies)
    lines = [
        f"certify    {len(certifies)} queries at {len(rows)} radii",
        "  radius      points  clean acc  certified  cert acc  unfinished  failed",
    ]
    for row in rows:
        lines.append(
            f"  {row.radius:<10.6g}  {row.points:>6}  {_percent(row.clean_accuracy):>9}  "
            f"{row.certified:>9}  {_percent(row.certified_accuracy):>8}  "
            f"{row.unfinished:>10}  {row.failed:>6}"
        )
    return lines


def _failed_lines(records: list[dict[str, Any]]) -> list[str]:
    """The failed lines, id and error, at most :data:`MAX_FAILED_LISTED`."""
    failed = [r for r in records if r["status"] == FAILED]
    if not failed:
        return []
    lines = [f"failed     {len(failed)}"]
    for record in failed[:MAX_FAILED_LISTED]:
        error = " ".join(str(record.get("error") or "(no message)").split())
        lines.append(f"  {record['id']}: {error[:200]}")
    if len(failed) > MAX_FAILED_LISTED:
        lines.append(f"  ... and {len(failed) - MAX_FAILED_LISTED} more")
    return lines


def format_summary(results: Results) -> str:
    """The plain-text summary of a results file (no trailing newline)."""
    if not results.records:
        why = "only an incomplete last line" if results.incomplete else "empty file"
        return f"file       {results.path}\nqueries    0 (no result lines: {why})"
    sections = [_overview_lines(results)]
    solves, certifies = results.of_kind("solve"), results.of_kind("certify")
    if solves:
        sections.append(_solve_lines(solves))
    if certifies:
        sections.append(_certify_lines(certifies))
    sections.append(_failed_lines(results.records))
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


def csv_row(record: dict[str, Any]) -> dict[str, Any]:
    """One results line as a flat CSV row (:data:`CSV_COLUMNS`; None for what it lacks)."""
    inputs = record.get("inputs") or {}
    row: dict[str, Any] = {
        "id": record["id"],
        "kind": record["kind"],
        "status": record["status"],
        "seconds": record.get("seconds"),
        "onnx": inputs.get("onnx", record.get("model")),
        "error": record.get("error"),
    }
    if record["kind"] == "solve":
        row.update({k: record.get(k) for k in ("value", "lower", "upper")})
        row["input"] = inputs.get("vnnlib")
    else:
        row.update({k: record.get(k) for k in ("predicted", "label", "correct", "certified")})
        row["radius"] = _ball_radius(record)
        row["certified_radius"] = record.get("radius")
        row["input"] = inputs.get("points")
    return row


def write_csv(results: Results, out: str | Path) -> int:
    """Write one CSV row per results line to ``out`` (atomically); the number of rows."""
    try:
        with atomic_path(out) as temp, open(temp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS, restval="")
            writer.writeheader()
            for record in results.records:
                writer.writerow({k: ("" if v is None else v) for k, v in csv_row(record).items()})
    except OSError as exc:
        raise ValueError(f"cannot write {out}: {exc.strerror or exc}") from None
    return len(results.records)
