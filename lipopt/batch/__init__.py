"""Many queries: batches of instances and datasets of points, resumable, in parallel.

- :mod:`~lipopt.batch.instances` reads a VNN-COMP style instances CSV, :mod:`~lipopt.batch.points`
  a dataset of points to certify; each gives :class:`~lipopt.batch.tasks.Task` s.
- :mod:`~lipopt.batch.store` is the JSON-lines results file (resume, refusal of changed inputs).
- :mod:`~lipopt.batch.local` runs queries on this machine's cores, :mod:`~lipopt.batch.cluster`
  on a Dask cluster; :mod:`~lipopt.batch.run` drives either; :mod:`~lipopt.batch.report`
  summarises a results file.
"""

from lipopt.batch.instances import InstanceError, SolveOptions, read_instances
from lipopt.batch.points import PointSet, point_tasks
from lipopt.batch.run import BatchSummary, run_batch
from lipopt.batch.store import ResultStore, StoreError
from lipopt.batch.tasks import Task

__all__ = [
    "BatchSummary",
    "InstanceError",
    "PointSet",
    "ResultStore",
    "SolveOptions",
    "StoreError",
    "Task",
    "point_tasks",
    "read_instances",
    "run_batch",
]
