"""Where the Jacobian bound of the activation branch and bound loses: the ``|g_j|`` chords.

    python benchmarks/bab_objective_loss.py                      # 20 s a search, every case
    python benchmarks/bab_objective_loss.py --seconds 10 --cases scale-cnn-0.1-0

With the ℓ∞ input norm the bound of :mod:`lipopt.bounds.jacobian` relaxes the objective
``||g||_1 = Σ_j |g_j|`` by the chord of ``|·|`` over each entry's range ``[l_j, u_j]``: where
``l_j < 0 < u_j`` that line lies up to ``κ_j = -2 l_j u_j / (u_j - l_j)`` above ``|g_j|`` (at
``g_j = 0``), and the bound is a linear objective plus ``Σ_j κ_j``. The other way to write the
objective is ``||g||_1 = max_σ σᵀg`` over the sign vectors ``σ ∈ {±1}^d``. With the
entry's range clipped to the sign of ``σ_j`` (``[max(l_j, 0), u_j]`` for ``+1``), the same
back-substitution gives ``B(σ)``, a sound bound on ``max_x σᵀg(x)`` over the bounds' domain:
``σ_j g_j`` is its own line, no constant. So ``max_σ B(σ)`` is what the relaxation of the
switches allows without the chords; the ``2^d`` sign vectors make it no cheaper to compute.

Per case (``suite-net-radius-image`` as in ``bab_prefix_share.py``, the bundled digits CNN as
``bundled-cnn-...``; c = the top-2 margin), in a fresh process on one BLAS thread:

* at the root (the linear bounds the search starts from): the chord bound, ``Σ κ_j`` and its
  share of that bound, ``B(σ)`` at the sign of the gradient at the attack's point (16
  searches of 100 moves), and the largest ``B(σ)`` that single sign flips reach from there and
  from three random sign vectors (a local maximum: a lower estimate of ``max_σ B(σ)``, not a
  bound);
* the search alone (score branching, no start attack, no part MIPs) for the seconds given:
  its upper bound and nodes, and at its top open node the entries still open in sign, the
  share of ``Σ κ_j`` in that node's bound and the local maximum of ``B(σ)`` there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bab_prefix_share import make  # noqa: E402
from machine import in_fresh_process, run_stamp, stream_table  # noqa: E402

CASES = [
    "scale-cnn-0.1-0", "scale-cnn-0.05-0", "scale-mlp-0.1-0", "scale-mlp-0.1-1",
    "bundled-cnn-0.05-1",
]  # fmt: skip


def chord_constants(bounds: Any) -> np.ndarray:
    """``κ_j = -2 l_j u_j / (u_j - l_j)`` where the entry's sign is open, else 0."""
    lo = np.asarray(bounds.input_grad_lower, dtype=float)
    hi = np.asarray(bounds.input_grad_upper, dtype=float)
    open_ = (lo < 0.0) & (hi > 0.0)
    width = np.where(open_, hi - lo, 1.0)
    return np.where(open_, -2.0 * lo * hi / width, 0.0)


def signed(bounds: Any, sigma: np.ndarray) -> Any:
    """The bounds with each input-gradient range clipped to the sign of ``σ_j``."""
    lo = np.asarray(bounds.input_grad_lower, dtype=float)
    hi = np.asarray(bounds.input_grad_upper, dtype=float)
    return replace(
        bounds,
        input_grad_lower=np.where(sigma > 0, np.maximum(lo, 0.0), lo),
        input_grad_upper=np.where(sigma < 0, np.minimum(hi, 0.0), hi),
    )


def local_max(value: Any, start: np.ndarray, passes: int = 4) -> float:
    """The largest ``value(σ)`` that single sign flips reach from ``start`` (first-improvement
    sweeps over the entries, at most ``passes`` of them)."""
    sigma = np.where(start >= 0, 1.0, -1.0)
    best = value(sigma)
    for _ in range(passes):
        improved = False
        for j in range(sigma.size):
            sigma[j] = -sigma[j]
            trial = value(sigma)
            if trial > best + 1e-9:
                best, improved = trial, True
            else:
                sigma[j] = -sigma[j]
        if not improved:
            break
    return float(best)


def sign_bounds(query: Any, bounds: Any, start: np.ndarray) -> tuple[float, float]:
    """``B(σ)`` at ``start``'s signs and the local maximum over it and three random sign
    vectors (seeded)."""
    from lipopt.bounds.jacobian import jacobian_norm_bound

    def value(sigma: np.ndarray) -> float:
        clipped = signed(bounds, sigma)
        found = jacobian_norm_bound(
            query.network, query.domain, query.seed, query.norm, bounds=clipped
        )
        return float(found.value)

    rng = np.random.default_rng(0)
    starts = [start] + [rng.choice([-1.0, 1.0], start.size) for _ in range(3)]
    at_start = value(np.where(start >= 0, 1.0, -1.0))
    return at_start, max(local_max(value, s) for s in starts)


def top_node(query: Any, seconds: float) -> tuple[float, int, Any]:
    """The search alone for ``seconds``: its upper bound, nodes and top open node's bounds."""
    from lipopt.search import activation_bab as search_module
    from lipopt.search.bab_node import ActivationBabOptions

    kept: dict[str, Any] = {}
    running = search_module._Search.run

    def run(search: Any, solve_part: Any) -> str:
        kept["search"] = search
        return running(search, solve_part)

    search_module._Search.run = run  # type: ignore[method-assign]
    options = ActivationBabOptions(branching="score", attack_restarts=0)
    found = search_module.activation_bab_on(
        query, options=options, deadline=time.perf_counter() + seconds
    )
    heap = kept["search"].heap  # no cap: every open node holds its bounds
    return found.upper, found.nodes, (heap.top().bounds if heap else None)


def _job(args: tuple[str, float], queue: Any) -> None:
    """One case, in this (fresh) process on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from lipopt.bounds.jacobian import jacobian_norm_bound
    from lipopt.heuristics.attack import gradient_attack
    from lipopt.norms import InputNorm
    from lipopt.query import Query

    case, seconds = args
    threadpool_limits(1)
    with tempfile.TemporaryDirectory() as folder:
        net, domain, c = make(case, Path(folder))
    query = Query(net, domain, InputNorm.LINF, c)
    root = query.split_root()
    chord = jacobian_norm_bound(net, domain, c, InputNorm.LINF, bounds=root).value
    point, attained = gradient_attack(net, domain, c, InputNorm.LINF, 16, 100, 0)
    gradient = net.gradients(np.asarray(point)[None], c)[0]
    at_attack, root_max = sign_bounds(query, root, gradient)
    upper, nodes, top = top_node(query, seconds)
    row: dict[str, Any] = {
        "case": case, "chord": chord, "constants": float(chord_constants(root).sum()),
        "attained": attained, "at_attack": at_attack, "root_max": root_max,
        "upper": upper, "nodes": nodes,
    }  # fmt: skip
    if top is not None:
        top_chord = jacobian_norm_bound(net, domain, c, InputNorm.LINF, bounds=top).value
        middle = (np.asarray(top.input_grad_lower) + np.asarray(top.input_grad_upper)) / 2.0
        row |= {
            "top_open": int((chord_constants(top) > 0).sum()), "dim": net.input_dim,
            "top_share": float(chord_constants(top).sum()) / top_chord,
            "top_max": sign_bounds(query, top, middle)[1],
        }  # fmt: skip
    queue.put(row)


def _row(case: str, seconds: float) -> str:
    r = in_fresh_process(_job, (case, seconds))
    top = (
        f"{r['top_open']} / {r['dim']} | {r['top_share']:.0%} | {r['top_max']:.1f}"
        if "top_max" in r
        else "– | – | –"
    )
    return (
        f"| {case} | {r['chord']:.1f} | {r['constants']:.1f} ({r['constants'] / r['chord']:.0%}) "
        f"| {r['at_attack']:.1f} | {r['root_max']:.1f} | {r['attained']:.1f} | "
        f"{r['upper']:.1f} | {r['nodes']} | {top} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/bab_objective_loss.md"
    )
    args = parser.parse_args(argv)
    head = [
        "# Where the Jacobian bound loses: the chords of |g_j|",
        "",
        f"Measured {run_stamp()}. Command: `python benchmarks/bab_objective_loss.py "
        f"--seconds {args.seconds:g}`.",
        "",
        "Root: chord = the Jacobian bound on the root's linear bounds; Σκ = the chord constants "
        "of the sign-open entries (share of the bound); B(σ_x) = the bound with every entry's "
        "sign fixed to that of the gradient at the attack's point; local max B(σ) = the largest "
        "B(σ) sign flips reach from there and from three random σ (an estimate of max_σ B(σ), "
        "not a bound); attained = the attack's value. Search: the search alone for the seconds "
        "given (upper bound, nodes); top node: its entries open in sign, Σκ's share of its bound "
        "and the local max of B(σ) there (from the signs of its ranges' midpoints).",
        "",
        "| case | chord | Σκ (share) | B(σ_x) | local max B(σ) | attained | search upper | "
        "nodes | top: open | top: Σκ share | top: local max B(σ) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = (_row(case, args.seconds) for case in args.cases.split(","))
    stream_table(args.out, head, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
