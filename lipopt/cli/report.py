"""``lipopt report``: the summary of a batch results file, and its CSV table or plot."""

from __future__ import annotations

import argparse
from pathlib import Path

REPORT_EPILOG = """\
examples:
  # counts by status, time quantiles, value and gap ranges, the certification table
  lipopt report results.jsonl
  # the same, and one CSV row per query
  lipopt report results.jsonl --csv results.csv
  # certified accuracy against radius (needs matplotlib: pip install 'lipopt[plot]')
  lipopt report certify.jsonl --plot certified.png

FILE is the JSON-lines file written by 'lipopt batch' or 'lipopt certify --points'. A last line
without its newline (the run was killed while writing it) is skipped with a note; any other line
that is not a results line is an error naming its line number. An empty file is reported as
holding no result lines (exit status 0).

In the certification table every line at a radius is a point: a failed line counts as neither
correct nor certified, and 'unfinished' counts the points decided on solves that did not finish
(status other than optimal): their radii are certified from bounds, so they may be smaller.

The plot shows certified accuracy against the radius in the ball's norm; a radius with
unfinished or failed points has a hollow marker (its accuracy is a lower bound). When the plot
cannot be made (no certify lines, or matplotlib missing) the summary is still printed, then the
reason on stderr, and the exit status is 2.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``report`` subcommand and its options."""
    parser = sub.add_parser(
        "report",
        help="summarise a batch results file (counts, times, certified accuracy)",
        description="Summarise the results file of 'lipopt batch' or 'lipopt certify --points': "
        "the queries by status, their times, the range of the constants and of their gaps, and "
        "per radius the clean and certified accuracy; optionally a CSV table and a plot.",
        epilog=REPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="JSON-lines results file")
    parser.add_argument(
        "--csv", metavar="OUT.csv", help="also write one CSV row per query to this file"
    )
    parser.add_argument(
        "--plot",
        metavar="OUT.png",
        help="also plot certified accuracy against radius (certify lines only; needs matplotlib)",
    )


def run_report(args: argparse.Namespace) -> int:
    """Read the results file, write the CSV asked for, print the summary, then plot; a plot
    that cannot be made (no certify lines, no matplotlib) is a ``ValueError`` raised after the
    summary is printed (one line on stderr, exit 2)."""
    from lipopt.batch.plot import plot_certified  # lipopt.batch: not for the other commands
    from lipopt.batch.report import format_summary, read_results, write_csv

    for option, out in (("--csv", args.csv), ("--plot", args.plot)):
        if out and Path(out).resolve() == Path(args.file).resolve():
            raise ValueError(f"{option} would overwrite the results file {args.file}")
    if args.plot and not Path(args.plot).suffix:
        raise ValueError(f"--plot {args.plot}: name the image format by a suffix, e.g. "
                         f"{args.plot}.png")  # fmt: skip
    results = read_results(args.file)
    rows = write_csv(results, args.csv) if args.csv else None
    print(format_summary(results))
    written = []
    try:  # the summary is out: a plot that cannot be made ends the command after it
        if args.plot:
            plotted = plot_certified(results, args.plot)
            written.append(f"wrote {plotted}: certified accuracy by radius")
    finally:
        written += [] if rows is None else [f"wrote {args.csv}: {rows} rows"]
        if written:
            print("\n" + "\n".join(written))
    return 0
