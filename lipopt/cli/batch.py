"""``lipopt batch``: many queries from a VNN-COMP instances CSV, resumable, on this machine's
cores or a Dask cluster; also what ``lipopt certify --points`` runs its queries with."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lipopt.cli.common import add_config_arguments, config_options
from lipopt.cli.exits import exit_status
from lipopt.domain import load_vector
from lipopt.norms import InputNorm, OutputNorm
from lipopt.parallel.workers import available_cores

if TYPE_CHECKING:  # lipopt.batch (and lipopt.io.vnnlib under it) is imported when a batch runs
    from lipopt.batch import SolveOptions, Task

BATCH_EPILOG = """\
examples:
  lipopt batch models/batch/instances.csv --out results.jsonl --c 1,-1   # every core here
  lipopt batch instances.csv --out results.jsonl --jobs 1 --norm l1
  lipopt batch instances.csv --out results.jsonl --scheduler tcp://scheduler.example:8786
  lipopt report results.jsonl                                           # the summary table

instances.csv: one instance per row, onnx,vnnlib,timeout (VNN-COMP's layout, paths relative to
the CSV); the VNN-LIB file's input set (1.0 or 2.0: a box, a polytope, or a union of them) is
the domain, its output assertions are ignored. A header row
onnx,vnnlib,timeout[,norm,c,output_norm] adds per-row overrides of --norm, --c and
--output-norm ("1,-1" quoted). --time-limit replaces every row's timeout.

results: one JSON line per finished query, written as it finishes: the fields of 'lipopt solve
--json' plus id, kind, fingerprint, scheme, inputs and attempts (docs/batch.md). Rerunning the same
command skips the queries already there and runs the rest; a query whose files or options
changed since is refused. Exit status: 0 when every query has its line; 3 when any query
ended in a solver error or failed; 2 bad input; 130/143 interrupted (finished lines are kept).
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``batch`` subcommand and its options."""
    parser = sub.add_parser(
        "batch",
        help="many queries from an instances CSV, resumable, in parallel or on a Dask cluster",
        description="Solve every instance of a VNN-COMP style CSV (onnx,vnnlib,timeout per "
        "row) and write one JSON line per query as it finishes; rerun to resume.",
        epilog=BATCH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("instances", help="instances CSV: onnx,vnnlib,timeout per row")
    prob = parser.add_argument_group("problem (every row without an override)")
    prob.add_argument(
        "--norm",
        choices=InputNorm.choices(),
        default="linf",
        help="input norm (l2: the exact l2 constant, as 'lipopt solve --norm l2')",
    )
    prob.add_argument("--c", metavar="C|FILE", help="output weighting c: the constant of c^T f")
    prob.add_argument(
        "--output-norm",
        choices=OutputNorm.choices(),
        help="instead of --c: the output norm of the whole output vector; l2 needs SCIP",
    )
    add_solving_arguments(parser)
    add_running_arguments(parser)


def add_solving_arguments(parser: argparse.ArgumentParser) -> None:
    """The solver options every query of a batch shares."""
    sol = parser.add_argument_group("solving (every query)")
    add_config_arguments(sol, config_options(batch=True), helps=BATCH_HELPS)


#: the help of the options a batch shares, where it differs from ``lipopt solve``'s
BATCH_HELPS = {
    "solver": "solver adapter (default: auto)",
    "mode": "exact MIP or its LP relaxation",
    "time_limit": "per query (replaces the timeouts)",
    "gap": "stop at this relative gap",
    "bounds": "bound propagation (default: linear)",
}
#: the defaults the docs show for them, where they differ from ``lipopt solve``'s
BATCH_SHOWN = {"time_limit": "the rows' timeouts", "gap": "none"}


def add_running_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the queries run and where their lines go."""
    run = parser.add_argument_group("running")
    run.add_argument("--out", required=True, metavar="FILE", help="results file (JSON lines)")
    run.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="queries side by side on this machine, each on one core (default: one per core)",
    )
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster of this scheduler (tcp://host:8786) instead; needs the "
        "cluster extra",
    )
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")


def solve_options(args: argparse.Namespace) -> SolveOptions:
    """The command line's Lipschitz options."""
    from lipopt.batch import SolveOptions

    c = None if args.c is None else tuple(float(v) for v in load_vector(args.c, "--c"))
    options = {name: getattr(args, name) for name in config_options(batch=True)}
    return SolveOptions(norm=args.norm, c=c, output_norm=args.output_norm, **options)


def run_tasks(tasks: Sequence[Task], args: argparse.Namespace, command: str) -> int:
    """Run ``tasks`` into ``--out`` on the pool or cluster the options name; print the
    summary; 0 when every query is answered, 3 when one failed or its solver did."""
    from lipopt.batch import run_batch
    from lipopt.batch.local import LocalPool

    if args.scheduler is not None:
        if args.jobs is not None:
            raise ValueError("--jobs is for this machine; the cluster's workers set its size")
        from lipopt.batch.cluster import DaskCluster

        cluster = DaskCluster(args.scheduler)
        executor: LocalPool | DaskCluster = cluster
        note = cluster.note()  # the cluster's own: a local pool has none
        if note and not args.quiet:
            print(f"lipopt {command}: {note}", file=sys.stderr)
    else:
        executor = LocalPool(args.jobs if args.jobs is not None else available_cores())
    summary = run_batch(tasks, args.out, executor, quiet=args.quiet, command=command)
    print(summary.text(args.out))
    return exit_status([s for s, n in summary.statuses.items() if n])  # failed, solver_error: 3


def run_batch_command(args: argparse.Namespace) -> int:
    """``lipopt batch``: read and check every instance, then run those not yet answered."""
    from lipopt.batch import read_instances
    from lipopt.batch.instances import ignored_note

    tasks = read_instances(args.instances, solve_options(args))
    note = ignored_note(tasks)
    if note and not args.quiet:
        print(f"lipopt batch: {note}", file=sys.stderr)
    return run_tasks(tasks, args, "batch")
