"""One solve of ``benchmarks/scale.py``, in a fresh process, with whichever lipopt is importable.

    echo '{"onnx": ..., "x": [...], "c": [...], "radius": 0.05, "limit": 60}' | \
        PYTHONPATH=CHECKOUT python benchmarks/scale_solve.py

``scale.py`` runs this file with ``PYTHONPATH`` (and the working directory) set to the checkout
being measured, this one or ``--vs``'s, so the lipopt imported is that checkout's: the case (the
network's ONNX path, the point, c, the radius and the limit) comes on stdin as JSON, and the
row goes to stdout as one JSON line. Peak memory is the largest resident set of this process
(``own_peak_kb``) and of any it waited for (a solve may race processes), in MB.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

# this file's folder is not to shadow anything: lipopt must come from PYTHONPATH's checkout
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def sub_domains(result: Any) -> tuple[int | None, str]:
    """The sub-domains a solve examined and what they were: the activation branch and bound's
    nodes (``bab``), else the domain split's parts (``split``), else the region search's nodes
    where it answered alone (``regions``), else the MIP solver's nodes (``mip``); ``(None, "")``
    where none was reported."""
    stats = result.model_stats
    if stats.get("bab_nodes") is not None:
        return int(stats["bab_nodes"]), "bab"
    if stats.get("parts"):
        return int(stats["parts"]), "split"
    if stats.get("region_nodes") is not None and not stats.get("binaries"):
        return int(stats["region_nodes"]), "regions"
    if getattr(result, "nodes", None) is not None:
        return int(result.nodes), "mip"
    return None, ""


def own_peak_kb() -> int:
    """This process's peak resident set in KB since it started this program: ``VmHWM`` of
    /proc/self/status (``RUSAGE_SELF``'s ``ru_maxrss`` keeps the peak of the parent's memory
    at the fork across the exec, so it would report scale.py's own, torch and all, for a small
    solve), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def solve(case: dict[str, Any]) -> dict[str, Any]:
    """The row of one case: status, bracket, model statistics, seconds and peak memory."""
    import numpy as np

    import lipopt

    net = lipopt.load_onnx(case["onnx"])
    x = np.asarray(case["x"], dtype=float)
    c = np.asarray(case["c"], dtype=float)
    start = time.perf_counter()
    result = lipopt.lipschitz(
        net,
        lipopt.LinfBall(x, case["radius"]),
        c=c,
        time_limit=case["limit"],
        bab=case.get("bab", "auto"),
    )
    seconds = time.perf_counter() - start
    peak = max(own_peak_kb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    stats = result.model_stats
    count, kind = sub_domains(result)
    return {
        "status": str(result.status), "lower": result.lower, "upper": result.upper,
        "unstable": stats.get("unstable_neurons"), "binaries": stats.get("binaries"),
        "sub_domains": count, "sub_domain_kind": kind, "seconds": seconds,
        "peak_mb": peak / 1024, "lipopt": str(Path(lipopt.__file__).resolve().parent),
        "nodes": result.nodes, "stats": dict(stats), "message": result.message,
    }  # fmt: skip


def main() -> int:
    print(json.dumps(solve(json.load(sys.stdin))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
