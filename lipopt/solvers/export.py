"""Write the Lipschitz model as ``.lp`` (CPLEX LP) or ``.mps`` (free MPS) for external solvers.

Names are the model's own components, so a person can map them back to the network (LP and MPS
do not allow brackets, so Pyomo writes ``x[0]`` as ``x(0)``):

==================  =========================================================================
``x(j)``            input coordinate j
``x_dev(j)``        ``|x_j - x0_j|`` (l1-ball domains)
``x_in_ball``       the ball: ``Σ dev <= ρ`` (l1), ``Σ ((x_j - x0_j)/ρ)^2 <= 1`` (l2, quadratic)
``x_cut(k)``        row k of a polytope's ``A x <= b`` (``--polytope``; ``--clip`` is in the bounds)
``h{k}(i)``         post-activation of neuron i of hidden layer k (1-based, as in the paper)
``a{k}(i)``         activation binary of unstable neuron i of hidden layer k (1 = on)
``y{k}(i)``         gradient of ``c^T f`` w.r.t. ``h_k[i]``
``s{k}(i)``         gradient w.r.t. the pre-activation ``z_k[i]`` (unstable neurons)
``g_abs(j)``        ``|g_j|`` of the input gradient (l-inf input norm), ``g_sign(j)`` its sign
``g_max``           ``||g||_inf`` (l1 input norm), ``g_pick(n)`` its selection binaries
``relu{k}_*``,      constraints of the forward pass, the backward switches and the objective
``switch{k}(n)``
==================  =========================================================================

The objective ``objective`` is *maximised*. MPS keeps the sense in an ``OBJSENSE MAX`` section;
readers that ignore it (old fixed-format MPS tools) would minimise instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyomo.environ as pe
from pyomo.opt import ProblemFormat

from lipopt.atomic import atomic_path

#: file suffix -> Pyomo writer format
FORMATS: dict[str, ProblemFormat] = {".lp": ProblemFormat.cpxlp, ".mps": ProblemFormat.mps}


class ExportError(ValueError):
    """The model cannot be written where or how it was asked (one-line message)."""


def write_model(model: pe.ConcreteModel, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` to ``path`` in the format its suffix names (``.lp`` or ``.mps``).

    The file is written to a temporary file beside ``path`` and renamed into place, so a reader
    sees the old file or the whole new one, and an interrupted write leaves no partial file.

    Returns:
        The path written.

    Raises:
        ExportError: the suffix is not ``.lp``/``.mps``, or the path cannot be written.
    """
    target = Path(path)
    fmt = FORMATS.get(target.suffix.lower())
    if fmt is None:
        known = ", ".join(FORMATS)
        raise ExportError(
            f"cannot export to {str(target)!r}: unknown file type {target.suffix or '(none)'!r}; "
            f"use one of {known}"
        )
    if target.is_dir():
        raise ExportError(f"cannot write {str(target)!r}: it is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise ExportError(f"cannot write {str(target)!r}: {str(parent)!r} {problem}")
    try:
        with atomic_path(target) as temp:  # a reader never sees half a file (issue #32)
            model.write(str(temp), format=fmt, io_options={"symbolic_solver_labels": True})
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ExportError(f"cannot write {str(target)!r}: {reason}") from None
    return target
