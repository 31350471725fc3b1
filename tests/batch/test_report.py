"""``lipopt report``: results files written by hand, with numbers worked out by hand here."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lipopt.batch.report import (
    certify_rows,
    clean_accuracy,
    format_summary,
    quantiles,
    read_results,
    relative_gap,
    write_csv,
)
from lipopt.cli import main, report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def solve_line(i: int, status: str, value: float, lower: float, upper: float, seconds: float):
    """A solve line as ``lipopt batch`` writes it (model statistics left out)."""
    return {
        "id": f"row {i}", "kind": "solve", "fingerprint": f"f{i}",
        "inputs": {"onnx": "net.onnx", "vnnlib": f"prop{i}.vnnlib", "timeout": 60.0,
                   "norm": "linf", "c": None, "output_norm": None},
        "attempts": 1, "value": value, "lower": lower, "upper": upper, "status": status,
        "witness": [0.0, 1.0], "exact_certified": status == "optimal", "timings": {"bounds": 0.01},
        "solver": "HiGHS", "norm": "linf", "c": [1.0, -1.0], "output_norm": None, "message": "",
        "gap": 0.0, "tolerance": 1e-6, "seconds": seconds, "model": "net.onnx",
    }  # fmt: skip


def certify_line(index: int, radius: float, correct: bool | None, certified: bool,
                 status: str = "optimal", seconds: float = 1.0) -> dict[str, Any]:  # fmt: skip
    """A certify line; ``correct`` None: no labels were given."""
    label = None if correct is None else 1
    predicted = 1 if correct in (True, None) else 0
    return {
        "id": f"point {index} radius {radius}", "kind": "certify", "fingerprint": "f",
        "inputs": {"onnx": "net.onnx", "points": "x.npy", "index": index, "radius": radius,
                   "ball": "linf", "method": "cross"},
        "attempts": 1, "status": status, "predicted": predicted, "label": label,
        "correct": correct, "certified": certified, "margins": {"1-0": 0.5},
        "lipschitz": {"cross": 10.0}, "radius": radius / 2 if not certified else radius,
        "uncapped_radius": radius, "ball_radius": radius, "certified_ball": certified,
        "capped": False, "method": "cross", "norm": "linf", "statuses": {"cross": status},
        "seconds": seconds,
    }  # fmt: skip


def failed_line(i: int, kind: str = "solve", radius: float = 0.01) -> dict[str, Any]:
    """A query that could not be run at all."""
    inputs = {"onnx": "net.onnx", "points": "x.npy", "index": i, "radius": radius}
    if kind == "solve":
        inputs = {"onnx": "net.onnx", "vnnlib": f"prop{i}.vnnlib"}
    return {"id": f"{kind} {i}", "kind": kind, "fingerprint": "f", "inputs": inputs,
            "attempts": 2, "status": "failed", "error": f"cannot read net{i}.onnx"}  # fmt: skip


def write_lines(path: Path, lines: list[dict[str, Any]], tail: str = "") -> Path:
    """The lines as JSON lines, then ``tail`` (an incomplete line) verbatim."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail)
    return path


#: points 0..4 at radii 0.01 and 0.02: point 4 is misclassified (clean accuracy 4/5 = 80%);
#: at 0.01 points 0, 1, 2 are certified (3/5 = 60%), at 0.02 only point 0 (1/5 = 20%), and
#: point 1's solve at 0.02 hit its time limit (1 unfinished)
CORRECT = [True, True, True, True, False]
CERTIFIED = {0.01: [True, True, True, False, False], 0.02: [True, False, False, False, False]}


def certify_file(path: Path, labels: bool = True) -> Path:
    lines = []
    for radius, flags in CERTIFIED.items():
        for i, certified in enumerate(flags):
            status = "time_limit" if (radius, i) == (0.02, 1) else "optimal"
            correct = CORRECT[i] if labels else None
            lines.append(certify_line(i, radius, correct, certified, status, seconds=i + 1))
    return write_lines(path, lines)


def solve_file(path: Path) -> Path:
    """Two exact, a time limit (gap (40-30)/40 = 0.25), an upper bound (gap (50-40)/50 = 0.2)
    and a failure; seconds 1, 2, 4, 3 over the four that ran."""
    return write_lines(
        path,
        [
            solve_line(0, "optimal", 10.0, 10.0, 10.0, 1.0),
            solve_line(1, "optimal", 20.0, 20.0, 20.0, 2.0),
            solve_line(2, "time_limit", 30.0, 30.0, 40.0, 4.0),
            solve_line(3, "upper_bound", 50.0, 40.0, 50.0, 3.0),
            failed_line(4),
        ],
    )


def table_row(summary: str, radius: str) -> list[str]:
    """The cells of one row of the summary's certification table."""
    rows = [line.split() for line in summary.splitlines() if line.startswith("  ")]
    return next(cells for cells in rows if cells[0] == radius)


def test_certify_table_counts(tmp_path: Path) -> None:
    summary = format_summary(read_results(certify_file(tmp_path / "c.jsonl")))
    assert "queries    10 (10 certify)" in summary
    assert "statuses   optimal 9, time_limit 1" in summary
    # radius, points, clean acc, certified, cert acc, unfinished, failed
    assert table_row(summary, "0.01") == ["0.01", "5", "80.0%", "3", "60.0%", "0", "0"]
    assert table_row(summary, "0.02") == ["0.02", "5", "80.0%", "1", "20.0%", "1", "0"]
    # seconds 1..5 at each radius: sorted 1,1,2,2,...,5,5; median 3, p90 at 8.1 -> 5
    assert "seconds    min 1.00  median 3.00  p90 5.00  max 5.00" in summary
    assert "\nfailed " not in summary


def test_certify_rows_and_clean_accuracy(tmp_path: Path) -> None:
    results = read_results(certify_file(tmp_path / "c.jsonl"))
    rows = certify_rows(results.of_kind("certify"))
    assert [row.radius for row in rows] == [0.01, 0.02]
    assert [row.certified_accuracy for row in rows] == [0.6, 0.2]
    assert [row.clean_accuracy for row in rows] == [0.8, 0.8]
    assert clean_accuracy(results.records) == (4, 5)  # five distinct points


def test_certify_without_labels(tmp_path: Path) -> None:
    results = read_results(certify_file(tmp_path / "c.jsonl", labels=False))
    summary = format_summary(results)
    assert table_row(summary, "0.01") == ["0.01", "5", "-", "3", "60.0%", "0", "0"]
    assert clean_accuracy(results.records) is None


def test_failed_certify_line_is_neither_correct_nor_certified(tmp_path: Path) -> None:
    lines = [certify_line(0, 0.1, True, True), certify_line(1, 0.1, True, False),
             failed_line(2, "certify", 0.1)]  # fmt: skip
    summary = format_summary(read_results(write_lines(tmp_path / "c.jsonl", lines)))
    # 3 points: 2 correct (66.7%), 1 certified (33.3%), the failed one in its column
    assert table_row(summary, "0.1") == ["0.1", "3", "66.7%", "1", "33.3%", "0", "1"]
    assert "  certify 2: cannot read net2.onnx" in summary


def test_solve_summary(tmp_path: Path) -> None:
    summary = format_summary(read_results(solve_file(tmp_path / "s.jsonl")))
    assert "queries    5 (5 solve)" in summary
    assert "statuses   optimal 2, upper_bound 1, time_limit 1, failed 1" in summary
    # over 1, 2, 3, 4: median 2.5, p90 at position 2.7 -> 3 + 0.7 = 3.7
    assert "seconds    min 1.00  median 2.50  p90 3.70  max 4.00  (over 4 lines" in summary
    assert "solve      5 queries, 2 exact (status optimal)" in summary
    assert "  value    10 .. 50  (4 with a value)" in summary
    assert "  gap      0 .. 0.25  (" in summary
    assert "failed     1\n  solve 4: cannot read net4.onnx" in summary


def test_failed_lines_listed_at_most_ten(tmp_path: Path) -> None:
    lines = [failed_line(i) for i in range(13)]
    summary = format_summary(read_results(write_lines(tmp_path / "f.jsonl", lines)))
    listed = [line for line in summary.splitlines() if line.startswith("  solve ")]
    assert len(listed) == 10
    assert summary.endswith("  ... and 3 more")
    assert "seconds" not in summary  # nothing ran


def test_quantiles_and_gap() -> None:
    stats = quantiles(float(x) for x in range(1, 11))
    assert stats == {"min": 1.0, "median": 5.5, "p90": pytest.approx(9.1), "max": 10.0}
    assert quantiles([]) is None
    assert relative_gap(30.0, 40.0) == 0.25
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(None, 40.0) is None


def test_csv_rows(tmp_path: Path) -> None:
    lines = [solve_line(0, "optimal", 10.0, 10.0, 10.0, 1.5), certify_line(3, 0.02, False, False),
             failed_line(5)]  # fmt: skip
    results = read_results(write_lines(tmp_path / "m.jsonl", lines))
    out = tmp_path / "out.csv"
    assert write_csv(results, out) == 3
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:4] == ["id", "kind", "status", "seconds"]
    assert [r["id"] for r in rows] == ["row 0", "point 3 radius 0.02", "solve 5"]
    solve, cert, failed = rows
    assert (solve["value"], solve["lower"], solve["upper"], solve["seconds"]) == (
        "10.0", "10.0", "10.0", "1.5")  # fmt: skip
    assert (solve["onnx"], solve["input"], solve["radius"]) == ("net.onnx", "prop0.vnnlib", "")
    assert (cert["radius"], cert["certified_radius"], cert["predicted"], cert["label"]) == (
        "0.02", "0.01", "0", "1")  # fmt: skip
    assert (cert["correct"], cert["certified"], cert["input"], cert["value"]) == (
        "False", "False", "x.npy", "")  # fmt: skip
    assert (failed["status"], failed["error"], failed["seconds"]) == (
        "failed", "cannot read net5.onnx", "")  # fmt: skip


def test_plot_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from lipopt.batch.plot import plot_certified

    results = read_results(certify_file(tmp_path / "c.jsonl"))
    out = plot_certified(results, tmp_path / "curve.png")
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_plot_refused_without_certify_lines(tmp_path: Path) -> None:
    from lipopt.batch.plot import plot_certified

    results = read_results(solve_file(tmp_path / "s.jsonl"))
    with pytest.raises(ValueError, match="^no certification lines to plot$"):
        plot_certified(results, tmp_path / "curve.png")
    assert not (tmp_path / "curve.png").exists()


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lipopt.batch.plot import plot_certified

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # "import matplotlib" raises
    results = read_results(certify_file(tmp_path / "c.jsonl"))
    with pytest.raises(ValueError) as info:
        plot_certified(results, tmp_path / "curve.png")
    assert str(info.value) == "--plot needs matplotlib: pip install 'lipopt[plot]'"


def test_incomplete_last_line_skipped(tmp_path: Path) -> None:
    path = certify_file(tmp_path / "c.jsonl")
    with open(path, "a") as handle:
        handle.write('{"id": "point 0 radius 0.03", "kind": "certify", "sta')
    results = read_results(path)
    assert len(results.records) == 10 and results.incomplete == 1
    summary = format_summary(results)
    assert "note       1 incomplete last line skipped" in summary
    assert "0.03" not in summary


@pytest.mark.parametrize(
    "bad, why",
    [
        ("not json at all", "not a JSON line"),
        ("[1, 2]", "not a JSON object"),
        ('{"id": "x", "kind": "solve"}', "no status"),
        ('{"id": "x", "kind": "other", "status": "optimal"}', "unknown kind 'other'"),
    ],
)
def test_malformed_middle_line_refused(tmp_path: Path, bad: str, why: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = [json.dumps(solve_line(i, "optimal", 1.0, 1.0, 1.0, 1.0)) for i in range(3)]
    path.write_text("\n".join([good[0], "", good[1], bad, good[2]]) + "\n")  # bad is line 4
    with pytest.raises(ValueError) as info:
        read_results(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 4: ") and why in message
    assert "\n" not in message


def test_empty_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    results = read_results(empty)
    assert results.records == [] and results.incomplete == 0
    assert "queries    0 (no result lines: empty file)" in format_summary(results)
    with pytest.raises(ValueError, match="^cannot read .*missing.jsonl: No such file"):
        read_results(tmp_path / "missing.jsonl")


def run_cli(argv: list[str]) -> int:
    """Parse ``argv`` with a parser holding only the ``report`` subcommand, then run it."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    report.add_parser(sub)
    args = parser.parse_args(argv)
    assert args.command == "report"
    return report.run_report(args)


def test_cli_summary_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    path = certify_file(tmp_path / "c.jsonl")
    csv_out, png_out = tmp_path / "t.csv", tmp_path / "p.png"
    argv = ["report", str(path), "--csv", str(csv_out), "--plot", str(png_out)]
    assert run_cli(argv) == 0
    out = capsys.readouterr().out
    assert table_row(out, "0.02") == ["0.02", "5", "80.0%", "1", "20.0%", "1", "0"]
    assert f"wrote {csv_out}: 10 rows" in out
    assert f"wrote {png_out}: certified accuracy by radius" in out
    assert len(csv_out.read_text().splitlines()) == 11  # the header and 10 rows
    assert png_out.read_bytes()[:8] == PNG_MAGIC


def test_cli_plot_without_a_suffix_refused_before_output(tmp_path: Path, capsys) -> None:
    path = certify_file(tmp_path / "c.jsonl")
    csv_out = tmp_path / "t.csv"
    argv = ["report", str(path), "--csv", str(csv_out), "--plot", str(tmp_path / "p")]
    with pytest.raises(ValueError, match="name the image format by a suffix"):
        run_cli(argv)
    assert capsys.readouterr().out == "" and not csv_out.exists()


def test_cli_plot_without_certify_lines_prints_the_summary_then_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 44 item 4: the summary, then one line on stderr, exit 2."""
    path = solve_file(tmp_path / "s.jsonl")
    csv_out, png_out = tmp_path / "t.csv", tmp_path / "p.png"
    code = main(["report", str(path), "--csv", str(csv_out), "--plot", str(png_out)])
    captured = capsys.readouterr()
    assert code == 2
    assert "solve      5 queries, 2 exact (status optimal)" in captured.out
    assert captured.out.rstrip().endswith(f"wrote {csv_out}: 5 rows")
    assert captured.err == "lipopt report: error: no certification lines to plot\n"
    assert csv_out.exists() and not png_out.exists()


def test_cli_plot_without_matplotlib_prints_the_summary_then_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # "import matplotlib" raises
    path = certify_file(tmp_path / "c.jsonl")
    code = main(["report", str(path), "--plot", str(tmp_path / "p.png")])
    captured = capsys.readouterr()
    assert code == 2
    assert table_row(captured.out, "0.02") == ["0.02", "5", "80.0%", "1", "20.0%", "1", "0"]
    assert captured.err == (
        "lipopt report: error: --plot needs matplotlib: pip install 'lipopt[plot]'\n"
    )


def test_plot_is_paper_ready(tmp_path: Path) -> None:
    """Issue 44 item 10: a title that says what it is, the norm on the radius axis, radii with
    unfinished points marked hollow (and in the legend), no marker clipped."""
    plt = pytest.importorskip("matplotlib.pyplot")
    from lipopt.batch.plot import UNFINISHED_LABEL, certified_figure

    path = certify_file(tmp_path / "c.jsonl")  # 0.02 has a time_limit line; 0.01 none
    figure = certified_figure(read_results(path))
    try:
        axes = figure.axes[0]
        assert axes.get_title() == "Certified accuracy by radius (method cross)"
        assert axes.get_xlabel() == r"radius ($\ell_\infty$ norm)"
        legend = [text.get_text() for text in axes.get_legend().get_texts()]
        assert legend == ["certified accuracy", UNFINISHED_LABEL, "clean accuracy"]
        curve, hollow, clean = axes.get_lines()
        assert list(curve.get_xdata()) == [0.01, 0.02] and curve.get_markevery() == [0]
        assert list(hollow.get_xdata()) == [0.02] and list(hollow.get_ydata()) == [20.0]
        assert hollow.get_marker() == "o" and hollow.get_markerfacecolor() == "white"
        assert hollow.get_markeredgecolor() == curve.get_color()
        assert not any(line.get_clip_on() for line in (curve, hollow, clean))
        low, high = axes.get_ylim()
        assert low < 0 and high > 100  # 0 % and 100 % markers clear of the frame
        x_low, x_high = axes.get_xlim()
        assert x_low < 0.01 and x_high > 0.02
    finally:
        plt.close(figure)


def test_plot_axis_names_each_norm(tmp_path: Path) -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    from lipopt.batch.plot import certified_figure

    for ball, label in (("l1", r"$\ell_1$"), ("l2", r"$\ell_2$")):
        lines = [certify_line(0, 0.1, True, True), certify_line(1, 0.1, True, False)]
        for line in lines:
            line["inputs"]["ball"] = line["norm"] = ball
        figure = certified_figure(read_results(write_lines(tmp_path / f"{ball}.jsonl", lines)))
        try:
            axes = figure.axes[0]
            assert axes.get_xlabel() == f"radius ({label} norm)"
            assert [t.get_text() for t in axes.get_legend().get_texts()] == [
                "certified accuracy", "clean accuracy"]  # fmt: skip
        finally:
            plt.close(figure)


def test_cli_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_cli(["report", "--help"])
    out = capsys.readouterr().out
    assert "lipopt report results.jsonl --csv results.csv" in out
    assert "--plot OUT.png" in out
