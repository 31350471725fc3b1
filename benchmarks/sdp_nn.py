"""The seed's MNIST network SDP-NN (784 inputs, 500 hidden; ``../shared/data/sdp-nn.npz``) with
SHOR and HR-2 through SCS, LBS and lipopt's MIP bracket, beside the seed's numbers (issue 27,
``../shared/semialgebraic.md`` §6).

    PYTHONPATH=. python benchmarks/sdp_nn.py --write                 # everything, hours
    PYTHONPATH=. python benchmarks/sdp_nn.py --methods mip --time-limit 60 --boxes 0.1
    PYTHONPATH=. python benchmarks/sdp_nn.py --methods hr2 --write --merge   # add to the table

The network is ``c·ReLU(A x + b)`` from the npz, the boxes ``center ± 0.1`` and ``center ± 10``
(ℓ∞ input norm). Cheap numbers run here: the sanity sums ``‖Aᵀc‖₁`` and ``Σ|c_j A_ji|`` and
LBS (the best gradient norm of 10 000 uniform samples). Every heavy attempt runs as its own
process with an address-space cap (``--memory-gb``, default 14) and a wall limit (``--wall``):

- ``mip``: ``lipopt.lipschitz(net, box, time_limit=T, workers=1)``, its certified bracket;
- ``shor``: ``lipopt.estimators.shor`` on SCS (its records here are of the old quadratic-form
  version, dense forms of side 2069; shor is now the moment path, as ``shor-moments``);
- ``shor-moments``: ``hr2.estimate(level=1)``, SHOR through the sparse moment machinery, SCS;
- ``hr2``: ``hr2.estimate(level=2)``, HR-2, SCS.

SCS gets ``time_limit_secs`` (``--scs-limit``): stopped there it still returns multipliers, and
lipopt's proof turns them into a valid, looser bound. The parent reads the child's log line by
line (cvxpy and SCS verbose) with timestamps and its peak resident memory from /proc, so an
attempt that does not finish is reported with how far it got and why (memory, wall). Written
to ``benchmarks/results/sdp_nn.md``; the records are kept in the file, so ``--merge`` adds new
attempts to those of an earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "sdp-nn.npz"
RESULTS = ROOT / "benchmarks" / "results" / "sdp_nn.md"
sys.path.insert(0, str(ROOT))

from benchmarks.machine import run_stamp  # noqa: E402

METHODS = ("mip", "shor", "shor-moments", "hr2")
LABELS = {"mip": "lipopt MIP", "shor": "SHOR (old quadratic forms)",
          "shor-moments": "SHOR (moments)", "hr2": "HR-2", "lbs": "LBS"}  # fmt: skip
#: the seed's numbers (spec §6): bound (seconds), MOSEK on a 4-core laptop
SEED = {
    0.1: {"hr2": (12.70, 20596), "shor": (16.07, 4217), "lipopt3": "out of memory", "lbs": 8.20},
    10.0: {"hr2": (14.56, 12246), "shor": (17.85, 2869), "lipopt3": "out of memory", "lbs": 9.69},
}
SANITY = {"‖Aᵀc‖₁": 10.31, "Σ|c_j A_ji|": 175.1}
RESULT_TAG = "RESULT "
DATA_TAG = "<!-- records: "
FRAME = re.compile(r'File ".*/(lipopt/[\w/]+\.py)", line \d+, in (\w+)')
SCS_ROW = re.compile(r"^\s*(\d+)\|.*\s([0-9.]+e[+-]\d+)\s*$")


def load(path: Path = DATA) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
    """The network ``c·ReLU(A x + b)``, the centre, and the raw arrays."""
    from lipopt import Affine, Network

    raw = dict(np.load(path))
    layers = [Affine(raw["A"], raw["b"]), Affine(raw["c"][None, :], np.zeros(1))]
    return Network.from_affines(layers), raw["center"], raw


def sanity(raw: dict[str, np.ndarray]) -> dict[str, float]:
    """``‖Aᵀc‖₁`` (the gradient with every neuron active) and ``Σ|c_j A_ji|`` (a bound SHOR
    must stay below)."""
    a, c = raw["A"], raw["c"]
    entrywise = float(np.abs(c[:, None] * a).sum())
    return {"‖Aᵀc‖₁": float(np.abs(a.T @ c).sum()), "Σ|c_j A_ji|": entrywise}


def child(method: str, eps: float, args: argparse.Namespace) -> None:
    """One attempt, in this process: prints ``RESULT {json}`` when it finishes."""
    from lipopt import Box, lipschitz
    from lipopt.estimators import hr2, shor

    net, centre, _ = load()
    box = Box(centre - eps, centre + eps)
    print(f"[attempt] {method} ±{eps:g}: network loaded", flush=True)
    start = time.perf_counter()
    if method == "mip":
        res = lipschitz(net, box, time_limit=args.time_limit, workers=1)
        out = {"value": res.upper, "lower": res.lower, "status": res.status, "nodes": res.nodes,
               "timings": res.timings}  # fmt: skip
    else:
        scs = {"solver": "SCS", "verbose": True, "time_limit_secs": args.scs_limit}
        if method == "shor":
            est = shor.estimate(net, box, **scs)
        else:
            est = hr2.estimate(net, box, level=1 if method == "shor-moments" else 2, **scs)
        detail = {k: v for k, v in est.detail.items() if isinstance(v, (int, float, str))}
        out = {"value": est.value, "solver_value": est.value - float(est.detail["correction"]),
               "status": str(est.detail.get("status")), "detail": detail}  # fmt: skip
    out["seconds"] = time.perf_counter() - start
    print(RESULT_TAG + json.dumps(out, default=float), flush=True)


def _peak_kb(pid: int) -> int:
    """The process's peak resident memory (VmHWM) in kB, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reader(stream: Any, lines: list[tuple[float, str]], start: float) -> None:
    """Collect a stream's lines with their time since ``start``."""
    for line in stream:
        lines.append((time.perf_counter() - start, line.rstrip("\n")))


def launch(method: str, eps: float, args: argparse.Namespace) -> dict[str, Any]:
    """Run one attempt as a capped child process; its outcome, log and peak memory."""
    cap = int(args.memory_gb * 1e9)
    command = ["stdbuf", "-oL", sys.executable, __file__, "--attempt", method, "--eps",
               str(eps), "--time-limit", str(args.time_limit), "--scs-limit",
               str(args.scs_limit)]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)),
    )  # fmt: skip
    lines: list[tuple[float, str]] = []
    thread = threading.Thread(target=_reader, args=(proc.stdout, lines, start), daemon=True)
    thread.start()
    peak, killed = 0, False
    while proc.poll() is None:
        peak = max(peak, _peak_kb(proc.pid))
        if time.perf_counter() - start > args.wall:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            proc.wait()
            break
        time.sleep(0.5)
    thread.join(timeout=10)
    record = {"method": method, "eps": eps, "wall": time.perf_counter() - start,
              "peak_gb": peak / 1e6, "returncode": proc.returncode, "killed_at_wall": killed,
              "cap_gb": args.memory_gb, "wall_limit": args.wall}  # fmt: skip
    record.update(summarise(lines))
    return record


def summarise(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """What the log says: the result, when cvxpy started and finished compiling, SCS's last
    iteration, and the last lines (the error, if any)."""
    out: dict[str, Any] = {"tail": [text for _, text in lines[-6:]]}
    for at, text in lines:
        if text.startswith(RESULT_TAG):
            out["result"] = json.loads(text[len(RESULT_TAG) :])
        elif "CVXPY" in text and "cvxpy_start" not in out:
            out["cvxpy_start"] = at
        elif "Finished problem compilation" in text:
            out["compiled"] = at
        elif "SCS v" in text:
            out["scs_start"] = at
        elif (row := SCS_ROW.match(text)) and "compiled" in out:
            out["scs_iter"], out["scs_seconds"] = int(row.group(1)), float(row.group(2))
        elif frame := FRAME.search(text):
            out.setdefault("frames", []).append(f"{frame.group(1)}: {frame.group(2)}")
    if "frames" in out:  # the last traceback's lipopt frames, innermost last
        out["where"] = " → ".join(dict.fromkeys(out.pop("frames")[-4:]))
    if any("MemoryError" in text or "memory allocation" in text or "bad_alloc" in text
           for _, text in lines):  # fmt: skip
        out["memory_error"] = True
    return out


def outcome(rec: dict[str, Any]) -> str:
    """One line: the value, or how far the attempt got and why it stopped."""
    got = []
    if "cvxpy_start" in rec:
        got.append(f"relaxation built in {rec['cvxpy_start']:.0f} s")
    if "compiled" in rec:
        got.append(f"cvxpy compiled it by {rec['compiled']:.0f} s")
    if "scs_iter" in rec:
        rate = rec["scs_seconds"] / max(rec["scs_iter"], 1)
        got.append(f"SCS at iteration {rec['scs_iter']} after {rec['scs_seconds']:.0f} s "
                   f"({rate:.2f} s per iteration)")  # fmt: skip
    if "result" in rec:
        why = f"finished: {_value(rec)}"
    elif rec["killed_at_wall"]:
        why = f"stopped at the {rec['wall_limit']:.0f} s wall limit"
    elif rec.get("memory_error"):
        why = f"out of memory under the {rec['cap_gb']:g} GB cap after {rec['wall']:.0f} s"
        why += f" in {rec['where']}" if "where" in rec else ""
    else:
        why = f"failed after {rec['wall']:.0f} s (exit {rec['returncode']}): {rec['tail'][-1:]}"
    return "; ".join([why, *got, f"peak {rec['peak_gb']:.2f} GB resident"])


def _value(rec: dict[str, Any] | None) -> str:
    """The bound column: a value, the MIP's bracket, or –."""
    if rec is None:
        return "not run"
    res = rec.get("result")
    if res is None and rec.get("memory_error"):
        return f"out of memory ({rec['cap_gb']:g} GB cap) after {rec['wall']:.0f} s"
    if res is None:
        return "stopped at the wall limit" if rec["killed_at_wall"] else "failed (see below)"
    if rec["method"] == "mip":
        lower = res["lower"] if res["lower"] is not None else float("nan")
        return f"[{lower:.2f}, {res['value']:.2f}] ({res['status']}, {res['seconds']:.0f} s)"
    return f"{res['value']:.2f} (SCS's own {res['solver_value']:.2f}; {res['seconds']:.0f} s)"


def _seed(eps: float, name: str) -> str:
    """The seed's number for one method and box."""
    got = SEED[eps][name]
    return got if isinstance(got, str) else (f"{got:.2f}" if isinstance(got, float)
                                            else f"{got[0]:.2f} ({got[1]} s)")  # fmt: skip


def report(facts: dict[str, Any], records: list[dict[str, Any]], command: str) -> str:
    """The markdown: the side-by-side table, every attempt's outcome, the records."""
    latest = {(r["method"], r["eps"]): r for r in records}
    rows = []
    for eps in (0.1, 10.0):
        ours = [_value(latest.get((m, eps))) for m in ("hr2", "shor", "shor-moments", "mip")]
        lbs = facts["lbs"].get(str(eps))
        rows.append(f"| ±{eps:g} | " + " | ".join(ours) + f" | {_fmt(lbs)} | "
                    f"{_seed(eps, 'hr2')} | {_seed(eps, 'shor')} | {_seed(eps, 'lipopt3')} | "
                    f"{_seed(eps, 'lbs')} |")  # fmt: skip
    sums = "; ".join(f"{k} = {v:.2f} (spec: {SANITY[k]})" for k, v in facts["sanity"].items())
    attempts = [f"| {LABELS[r['method']]} | ±{r['eps']:g} | {outcome(r)} |" for r in records]
    return "\n".join([
        "# SDP-NN: the seed's MNIST network (issue 27)",
        "",
        f"`{command}` on {run_stamp()}. Network `../shared/data/sdp-nn.npz` (784 inputs, 500 "
        f"hidden), ℓ∞ input norm, boxes `center ± ε`. Sanity: {sums}.",
        "",
        "Ours (SCS bounds are proven: the proof adds SCS's residuals to SCS's own value; the "
        "MIP gives its attained lower and certified upper bound) beside the seed's (MOSEK on a "
        "4-core laptop, seconds in brackets):",
        "",
        "| box | HR-2 | SHOR (old quadratic forms) | SHOR (moments) | lipopt MIP bracket | LBS | "
        "seed HR-2 | seed SHOR | seed LiPopt-3 | seed LBS |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Attempts",
        "",
        "Each heavy attempt ran alone as its own process under an address-space cap and a wall "
        "limit; how far it got is read from its log (timestamps from its start) and its peak "
        "resident memory from /proc.",
        "",
        "| method | box | outcome |",
        "|---|---|---|",
        *attempts,
        "",
        *notes(facts),
        DATA_TAG + json.dumps({"facts": facts, "records": records}, default=float) + " -->",
        "",
    ])  # fmt: skip


def notes(facts: dict[str, Any]) -> list[str]:
    """Why the SDPs do not fit, from the measured build cost, and what the MIP's bracket is."""
    cost = facts.get("build")
    if not cost:
        return []
    return [
        "## Notes",
        "",
        "- the old `shor.py` (quadratic forms; shor is now the moment path) held one dense "
        f"{cost['side']}² quadratic form per constraint: "
        f"{cost['forms']} forms of {cost['form_bytes'] / 1e6:.0f} MB, "
        f"{cost['forms'] * cost['form_bytes'] / 1e9:.0f} GB in all.",
        f"- The moment path (SHOR at level 1, HR-2 at level 2) expands the redundant "
        f"constraint `−(z_j − l_j)(z_j − h_j) >= 0` of each neuron, dense in x: measured on "
        f"one neuron, {cost['terms']:,} terms and {cost['bytes'] / 1e6:.0f} MB as a "
        f"polynomial; {cost['neurons']} neurons need about "
        f"{cost['neurons'] * cost['bytes'] / 1e9:.0f} GB before the relaxation is compiled "
        "or cvxpy sees it.",
        "- The MIP's lower bound is attained (the gradient norm at a point it found), its "
        "upper bound certified; a stopped MIP gives both.",
        "",
    ]  # fmt: skip


def _fmt(value: float | None) -> str:
    """A number, or – for none."""
    return "–" if value is None else f"{value:.2f}"


def cheap_facts(boxes: list[float]) -> dict[str, Any]:
    """The sanity sums and LBS per box (seconds, in this process)."""
    from lipopt import Box
    from lipopt.estimators import random

    net, centre, raw = load()
    lbs = {}
    for eps in boxes:
        est = random.estimate(net, Box(centre - eps, centre + eps), samples=10_000, seed=0)
        lbs[str(eps)] = est.value
        print(f"LBS ±{eps:g}: {est.value:.4f} ({est.seconds:.1f} s)", flush=True)
    return {"sanity": sanity(raw), "lbs": lbs, "build": build_cost(raw)}


def build_cost(raw: dict[str, np.ndarray]) -> dict[str, float]:
    """What the relaxations' builders need, measured on one neuron: the terms, bytes and
    seconds of ``−(z_j − l)(z_j − h)`` as a moment polynomial (lipopt's dict form), and the
    size of ``shor.py``'s dense quadratic forms (one ``side²`` matrix per constraint)."""
    import tracemalloc

    from lipopt.estimators.moments import add, const, mul, scale, var

    a = raw["A"]
    n, d = a.shape
    tracemalloc.start()
    start = time.perf_counter()
    z = add(const(float(raw["b"][0])), *[scale(var(i), float(a[0, i])) for i in range(d)])
    poly = scale(mul(add(z, const(-1.0)), add(z, const(1.0))), -1.0)
    seconds = time.perf_counter() - start
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    side = 1 + 2 * d + n
    return {"terms": len(poly), "bytes": size, "seconds": seconds, "neurons": n, "side": side,
            "forms": 2 * d + 6 * n, "form_bytes": side * side * 8}  # fmt: skip


def previous() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The facts and records kept in the results file, if any."""
    if not RESULTS.exists():
        return {"sanity": {}, "lbs": {}}, []
    for line in RESULTS.read_text().splitlines():
        if line.startswith(DATA_TAG):
            data = json.loads(line[len(DATA_TAG) :].removesuffix(" -->"))
            return data["facts"], data["records"]
    return {"sanity": {}, "lbs": {}}, []


def main(argv: list[str]) -> None:
    """The cheap numbers here, then each attempt as its own process, one at a time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated")
    parser.add_argument("--boxes", default="0.1,10", help="comma-separated ε")
    parser.add_argument("--time-limit", type=float, default=600.0, help="MIP seconds")
    parser.add_argument("--scs-limit", type=float, default=1500.0, help="SCS's time_limit_secs")
    parser.add_argument("--wall", type=float, default=1800.0, help="seconds per attempt")
    parser.add_argument("--memory-gb", type=float, default=14.0, help="address-space cap")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--merge", action="store_true", help="keep the file's other records")
    parser.add_argument("--attempt", help=argparse.SUPPRESS)
    parser.add_argument("--eps", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.attempt:
        child(args.attempt, args.eps, args)
        return
    boxes = [float(e) for e in args.boxes.split(",")]
    facts, records = previous() if args.merge else ({"sanity": {}, "lbs": {}}, [])
    new = cheap_facts(boxes)
    facts = {**new, "lbs": {**facts["lbs"], **new["lbs"]}}
    command = "PYTHONPATH=. python benchmarks/sdp_nn.py " + " ".join(argv)
    for method in filter(None, args.methods.split(",")):
        for eps in boxes:
            record = launch(method, eps, args)
            print(f"{LABELS[method]} ±{eps:g}: {outcome(record)}", flush=True)
            records = [r for r in records if (r["method"], r["eps"]) != (method, eps)] + [record]
            if args.write:
                RESULTS.write_text(report(facts, records, command.strip()))
    if args.write:
        RESULTS.write_text(report(facts, records, command.strip()))
    print(report(facts, records, command.strip()))


if __name__ == "__main__":
    main(sys.argv[1:])
