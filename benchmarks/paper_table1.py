"""Table 1 and Figure 1 of Jordan & Dimakis (NeurIPS 2020), with lipopt's estimators.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/paper_table1.py            # full: table + figures
    PYTHONPATH=. python benchmarks/paper_table1.py --quick    # CI size: a few minutes
    PYTHONPATH=. python benchmarks/paper_table1.py --no-figures --seeds 3

Table 1 ("accuracy vs. efficiency"): every estimator of :mod:`lipopt.estimators` on

* **synthetic**: ``[10, 20, 30, 20, 2]`` networks trained on the paper's synthetic "leaders"
  dataset (``models/synthetic.py``: 2000 points in ``[0, 1]^10``, 20 leaders, 2 classes), 500
  epochs of full-batch Adam (lr 1e-3) on cross-entropy, one network per seed; the constant of
  ``f_1 - f_2`` (``c = (1, -1)``) over the unit hypercube, ℓ∞ input norm (max ``||∇||_1``);
* **digits**: ``[64, 20, 20, 20, 2]`` networks trained to tell 1s from 7s in scikit-learn's 8x8
  digits (standing in for MNIST, which cannot be downloaded here; pixels scaled to [0, 1]),
  Adam (lr 1e-3, minibatches of 32) on cross-entropy plus ``1e-5 Σ|W|``; ℓ∞ balls of radius 0.1
  around random test points, ``c = (1, -1)``, ℓ∞ input norm.

Per method: mean ± std of the wall-clock seconds and of the relative error
``(estimate - exact) / exact`` against LipMIP's value, over the instances LipMIP solved to
optimality (a time-limited LipMIP is an upper bound only; the table says how many were solved).
LipSDP is the sound LipSDP-Neuron variant (the paper ran LipSDP-Network, whose coupled
multipliers are not valid for ReLU; see docs/estimators.md).

Figure 1: (left) the estimators on a ``[2, 20, 40, 20, 2]`` network during 1000 epochs of
training on a 2-D synthetic dataset (256 points, 20 leaders), snapshots every 25 epochs, over
``[0, 1]^2``; (right) LipMIP's exact constant during training with no regularisation, ``1e-4``
ℓ1 and ``1e-3`` ℓ2 weight penalties, and FGSM training (clean examples replaced by FGSM
examples with step 0.1).

Writes ``benchmarks/results/paper_table1.md`` (``paper_table1_quick.md`` with ``--quick``) and
``paper_table1_fig1.png`` (``paper_table1_quick_fig1.png``); the markdown records the command,
date, machine and versions. Needs torch, scikit-learn and matplotlib (cvxpy for LipSDP; without
it LipSDP is listed as not run). LipMIP uses Gurobi when it is usable, else HiGHS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "models"))
from machine import cpu_name  # noqa: E402
from synthetic import make_dataset  # noqa: E402

import lipopt  # noqa: E402
from lipopt import Affine, Box, LinfBall, Network, ReLU  # noqa: E402
from lipopt.atomic import atomic_path, write_text_atomic  # noqa: E402
from lipopt.compare import Unavailable, compare  # noqa: E402
from lipopt.domain import Domain  # noqa: E402
from lipopt.estimators import KINDS, Estimate, Kind  # noqa: E402
from lipopt.solvers import registry  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
C = np.array([1.0, -1.0])

#: rows of the table, in the paper's order (with the attack next to RandomLB)
ROWS: tuple[tuple[str, str], ...] = (
    ("random", "RandomLB"),
    ("attack", "Attack"),
    ("clever", "CLEVER"),
    ("lipmip", "LipMIP"),
    ("liplp", "LipLP"),
    ("fastlip", "FastLip"),
    ("lipsdp", "LipSDP"),
    ("seqlip", "SeqLip"),
    ("naive", "NaiveUB"),
)

#: the paper's Table 1 (Gurobi, i7-9700K), for reference: (time, relative error)
PAPER = {
    "digits": {
        "random": ("0.334 ± 0.019", "-41.96%"),
        "clever": ("20.574 ± 4.320", "-36.97%"),
        "lipmip": ("69.187 ± 70.114", "0.00%"),
        "liplp": ("0.226 ± 0.023", "+39.39%"),
        "fastlip": ("0.002 ± 0.000", "+63.41%"),
        "lipsdp": ("20.570 ± 2.753", "+113.92%"),
        "seqlip": ("0.022 ± 0.005", "+119.53%"),
        "naive": ("0.000 ± 0.000", "+212.68%"),
    },
    "synthetic": {
        "random": ("0.297 ± 0.004", "-32.68%"),
        "clever": ("1.849 ± 0.054", "+28.45%"),
        "lipmip": ("38.844 ± 34.906", "0.00%"),
        "liplp": ("0.030 ± 0.002", "+362.43%"),
        "fastlip": ("0.001 ± 0.000", "+388.14%"),
        "lipsdp": ("2.704 ± 0.019", "+39.07%"),
        "seqlip": ("0.016 ± 0.002", "+98.98%"),
        "naive": ("0.000 ± 0.000", "+996.96%"),
    },
}


@dataclass(frozen=True)
class Config:
    """Sizes of one run (full or quick)."""

    seeds: int = 5
    balls: int = 3  # digits: test balls per network
    synthetic_epochs: int = 500
    digits_epochs: int = 100
    time_limit: float = 600.0  # LipMIP seconds per instance
    clever_batches: int = 500
    clever_batch_size: int = 1024
    figure_epochs: int = 1000
    figure_every: int = 25
    figure_time_limit: float = 120.0
    quick: bool = False


FULL = Config()
QUICK = Config(
    seeds=2,
    balls=1,
    synthetic_epochs=500,
    digits_epochs=60,
    time_limit=60.0,
    clever_batches=50,
    clever_batch_size=256,
    figure_epochs=1000,
    figure_every=200,
    figure_time_limit=30.0,
    quick=True,
)


@dataclass
class Instance:
    """One (network, domain) of an experiment."""

    experiment: str
    label: str
    network: Network
    domain: Domain
    results: list[Estimate | Unavailable] = field(default_factory=list)


# ----------------------------------------------------------------------------- training
def build_mlp(widths: Sequence[int]) -> nn.Sequential:
    """``Linear, ReLU, ..., Linear`` with PyTorch's default initialisation (float64)."""
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers).double()


def to_network(model: nn.Sequential) -> Network:
    """The lipopt network of a ``Linear/ReLU`` stack."""
    layers: list[Affine | ReLU] = []
    for module in model:
        if isinstance(module, nn.Linear):
            weight = module.weight.detach().cpu().numpy().astype(np.float64)
            bias = module.bias.detach().cpu().numpy().astype(np.float64)
            layers.append(Affine(weight, bias))
        elif isinstance(module, nn.ReLU):
            layers.append(ReLU())
    return Network.from_layers(layers)


def _weights(model: nn.Sequential) -> list[torch.Tensor]:
    return [m.weight for m in model if isinstance(m, nn.Linear)]


@dataclass(frozen=True)
class Training:
    """A training recipe: Adam, cross-entropy, optional penalty / FGSM / minibatches."""

    epochs: int
    lr: float = 1e-3
    batch: int | None = None  # None: full batch
    l1: float = 0.0
    l2: float = 0.0
    fgsm: float = 0.0  # step of the FGSM examples that replace the clean ones


def train(
    model: nn.Sequential,
    x: np.ndarray,
    y: np.ndarray,
    recipe: Training,
    seed: int,
    snapshot: Callable[[int, nn.Sequential], None] | None = None,
    every: int = 0,
) -> float:
    """Train in place; call ``snapshot(epoch, model)`` at epoch 0 and every ``every`` epochs.
    Returns the final training accuracy."""
    gen = torch.Generator().manual_seed(seed)
    xt, yt = torch.from_numpy(np.asarray(x, dtype=np.float64)), torch.from_numpy(y)
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    loss_fn = nn.CrossEntropyLoss()
    n = xt.shape[0]
    if snapshot is not None:
        snapshot(0, model)
    for epoch in range(1, recipe.epochs + 1):
        order = torch.randperm(n, generator=gen) if recipe.batch else torch.arange(n)
        step = recipe.batch or n
        for start in range(0, n, step):
            idx = order[start : start + step]
            xb, yb = xt[idx], yt[idx]
            if recipe.fgsm:
                xb = xb.clone().requires_grad_(True)
                grad = torch.autograd.grad(loss_fn(model(xb), yb), xb)[0]
                xb = (xb + recipe.fgsm * grad.sign()).detach()
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            if recipe.l1:
                loss = loss + recipe.l1 * sum(w.abs().sum() for w in _weights(model))
            if recipe.l2:
                loss = loss + recipe.l2 * sum((w**2).sum() for w in _weights(model))
            loss.backward()
            optimizer.step()
        if snapshot is not None and every and epoch % every == 0:
            snapshot(epoch, model)
    with torch.no_grad():
        return float((model(xt).argmax(dim=1) == yt).double().mean())


# ----------------------------------------------------------------------------- instances
def synthetic_instances(cfg: Config, say: Callable[[str], None]) -> list[Instance]:
    """``[10, 20, 30, 20, 2]`` networks on the 10-D leaders dataset; the unit hypercube."""
    x, y = make_dataset(
        dim=10, num_points=2000, min_separation=0.05, num_classes=2, num_leaders=20, seed=1
    )
    out = []
    for seed in range(cfg.seeds):
        torch.manual_seed(seed)
        model = build_mlp((10, 20, 30, 20, 2))
        acc = train(model, x, y, Training(cfg.synthetic_epochs), seed)
        say(f"synthetic seed {seed}: train accuracy {acc:.3f}")
        out.append(
            Instance("synthetic", f"seed {seed}", to_network(model), Box(np.zeros(10), np.ones(10)))
        )
    return out


def digits_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """1s (label 0) vs 7s (label 1) of sklearn's 8x8 digits in [0, 1]; a fixed 70/30 split."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    keep = np.isin(digits.target, (1, 7))
    x = digits.data[keep] / 16.0
    y = (digits.target[keep] == 7).astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    cut = int(0.7 * len(y))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def digits_instances(cfg: Config, say: Callable[[str], None]) -> list[Instance]:
    """``[64, 20, 20, 20, 2]`` networks on digits 1 vs 7; ℓ∞ balls of radius 0.1."""
    x_train, y_train, x_test, y_test = digits_data()
    out = []
    recipe = Training(cfg.digits_epochs, batch=32, l1=1e-5)
    for seed in range(cfg.seeds):
        torch.manual_seed(seed)
        model = build_mlp((64, 20, 20, 20, 2))
        acc = train(model, x_train, y_train, recipe, seed)
        with torch.no_grad():
            test_acc = float(
                (model(torch.from_numpy(x_test)).argmax(dim=1).numpy() == y_test).mean()
            )
        say(f"digits seed {seed}: train accuracy {acc:.3f}, test accuracy {test_acc:.3f}")
        net = to_network(model)
        picks = np.random.default_rng(1000 + seed).choice(len(x_test), cfg.balls, replace=False)
        for k in picks:
            out.append(Instance("digits", f"seed {seed}, test #{k}", net, LinfBall(x_test[k], 0.1)))
    return out


# ----------------------------------------------------------------------------- running
def method_options(cfg: Config, solver: str, time_limit: float) -> dict[str, dict[str, Any]]:
    return {
        "lipmip": {"solver": solver, "time_limit": time_limit, "threads": 2},
        "clever": {"batches": cfg.clever_batches, "batch_size": cfg.clever_batch_size},
    }


def run(instances: list[Instance], cfg: Config, solver: str, say: Callable[[str], None]) -> None:
    options = method_options(cfg, solver, cfg.time_limit)
    for i, inst in enumerate(instances, 1):
        say(f"[{inst.experiment} {i}/{len(instances)}] {inst.label}")
        inst.results = compare(
            inst.network,
            inst.domain,
            "linf",
            C,
            [name for name, _ in ROWS],
            lambda m: say(f"    {m}"),
            options=options,
        )


def _exact(inst: Instance) -> float | None:
    for r in inst.results:
        if isinstance(r, Estimate) and r.name == "lipmip" and r.kind is Kind.EXACT:
            return r.value
    return None


def _pm(values: Sequence[float], fmt: str, suffix: str = "", signed: bool = False) -> str:
    """``mean ± std``; ``signed`` puts a sign on the mean (relative errors)."""
    if not values:
        return "-"
    arr = np.asarray(values, dtype=float)
    mean, std = float(arr.mean()), float(arr.std())
    if abs(mean) < 0.5 * 10.0 ** -int(fmt.strip(".f")):
        mean = 0.0  # no "-0.00"
    head = format(mean, ("+" if signed and mean else "") + fmt)
    return f"{head}{suffix} ± {format(std, fmt)}{suffix}"


def summarize(instances: list[Instance]) -> dict[str, dict[str, Any]]:
    """Per method: seconds, relative errors (vs. exact instances), and reasons if not run."""
    out: dict[str, dict[str, Any]] = {}
    for name, _ in ROWS:
        seconds, errors, reasons, kinds = [], [], set(), set()
        for inst in instances:
            result = next(r for r in inst.results if r.name == name)
            if isinstance(result, Unavailable):
                reasons.add(result.reason)
                continue
            seconds.append(result.seconds)
            kinds.add(result.kind.value)
            exact = _exact(inst)
            if exact:
                errors.append((result.value - exact) / exact)
        out[name] = {"seconds": seconds, "errors": errors, "reasons": reasons, "kinds": kinds}
    return out


def _lipmip_status(instances: list[Instance]) -> str:
    statuses = []
    for inst in instances:
        r = next(r for r in inst.results if r.name == "lipmip")
        statuses.append(r.detail.get("status", "?") if isinstance(r, Estimate) else "not run")
    solved = statuses.count("optimal")
    return f"{solved}/{len(statuses)} solved to optimality"


def table_markdown(by_experiment: dict[str, list[Instance]]) -> str:
    names = list(by_experiment)
    stats = {e: summarize(by_experiment[e]) for e in names}
    title = {"digits": "Binary digits (1 vs 7)", "synthetic": "Synthetic dataset"}
    head = "| Method | Guarantee | " + " | ".join(
        f"{title[e]}: time (s) | rel. err. (mean ± std)" for e in names
    )
    lines = [head + " |", "|---|---|" + "---:|---:|" * len(names)]
    for name, label in ROWS:
        guarantee = KINDS[name].value.capitalize()
        cells = []
        for e in names:
            s = stats[e][name]
            if s["reasons"] and not s["seconds"]:
                cells += ["not run", "not run"]
                continue
            cells.append(_pm(s["seconds"], ".3f"))
            cells.append(_pm([100 * v for v in s["errors"]], ".2f", "%", signed=True))
        lines.append(f"| {label} | {guarantee} | " + " | ".join(cells) + " |")
    notes = []
    for e in names:
        notes.append(
            f"- {title[e]}: {len(by_experiment[e])} instances; LipMIP "
            f"{_lipmip_status(by_experiment[e])}; relative errors over those."
        )
        for name, _ in ROWS:
            for reason in sorted(stats[e][name]["reasons"]):
                notes.append(f"- {title[e]}: {name} not run: {reason}")
    return "\n".join(lines + [""] + notes)


def paper_markdown() -> str:
    lines = [
        "| Method | Binary MNIST: time (s) | rel. err. | Synthetic: time (s) | rel. err. |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, label in ROWS:
        d, s = PAPER["digits"].get(name), PAPER["synthetic"].get(name)
        if d is None:
            continue
        lines.append(f"| {label} | {d[0]} | {d[1]} | {s[0]} | {s[1]} |")
    return "\n".join(lines)


def instances_markdown(by_experiment: dict[str, list[Instance]]) -> str:
    lines = [
        "| experiment | instance | LipMIP status | exact / upper | "
        + " | ".join(label for name, label in ROWS if name != "lipmip")
        + " |",
        "|---|---|---|---:|" + "---:|" * (len(ROWS) - 1),
    ]
    for e, instances in by_experiment.items():
        for inst in instances:
            mip = next(r for r in inst.results if r.name == "lipmip")
            status = mip.detail.get("status", "?") if isinstance(mip, Estimate) else "not run"
            mip_value = f"{mip.value:.4g}" if isinstance(mip, Estimate) else "-"
            cells = []
            for name, _ in ROWS:
                if name == "lipmip":
                    continue
                r = next(r for r in inst.results if r.name == name)
                cells.append(f"{r.value:.4g}" if isinstance(r, Estimate) else "-")
            lines.append(
                f"| {e} | {inst.label} | {status} | {mip_value} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- figure 1
FIGURE_METHODS = (
    "naive",
    "lipsdp",
    "seqlip",
    "fastlip",
    "liplp",
    "clever",
    "random",
    "attack",
    "lipmip",
)


def figure1(cfg: Config, solver: str, path: Path, say: Callable[[str], None]) -> str:
    """Both panels of Figure 1; returns a markdown summary of the plotted series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, y = make_dataset(
        dim=2, num_points=256, min_separation=0.01, num_classes=2, num_leaders=20, seed=0
    )
    domain = Box(np.zeros(2), np.ones(2))
    options = method_options(cfg, solver, cfg.figure_time_limit)
    options["clever"] = {"batches": 50, "batch_size": 256}

    # left: estimators during plain training
    left: dict[str, list[tuple[int, float]]] = {m: [] for m in FIGURE_METHODS}
    statuses: list[str] = []

    def estimators_at(epoch: int, model: nn.Sequential) -> None:
        say(f"figure 1 left: epoch {epoch}")
        results = compare(to_network(model), domain, "linf", C, FIGURE_METHODS, options=options)
        for r in results:
            if isinstance(r, Estimate):
                left[r.name].append((epoch, r.value))
                if r.name == "lipmip":
                    statuses.append(r.detail.get("status", "?"))

    torch.manual_seed(0)
    train(
        build_mlp((2, 20, 40, 20, 2)),
        x,
        y,
        Training(cfg.figure_epochs),
        0,
        estimators_at,
        cfg.figure_every,
    )

    # right: LipMIP under regularisers
    schemes = {
        "no regularisation": Training(cfg.figure_epochs),
        "ℓ1 weights 1e-4": Training(cfg.figure_epochs, l1=1e-4),
        "ℓ2 weights 1e-3": Training(cfg.figure_epochs, l2=1e-3),
        "FGSM (step 0.1)": Training(cfg.figure_epochs, fgsm=0.1),
    }
    right: dict[str, list[tuple[int, float]]] = {}
    for label, recipe in schemes.items():
        series: list[tuple[int, float]] = []

        def exact_at(epoch: int, model: nn.Sequential, series: list = series, label: str = label):
            say(f"figure 1 right ({label}): epoch {epoch}")
            r = compare(to_network(model), domain, "linf", C, ["lipmip"], options=options)[0]
            if isinstance(r, Estimate):
                series.append((epoch, r.value))
                statuses.append(r.detail.get("status", "?"))

        torch.manual_seed(0)
        train(build_mlp((2, 20, 40, 20, 2)), x, y, recipe, 0, exact_at, cfg.figure_every)
        right[label] = series

    fig, (ax_l, ax_r) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = dict(ROWS)
    for m in FIGURE_METHODS:
        if left[m]:
            e, v = zip(*left[m])
            style = {"marker": "o", "color": "black", "ms": 4, "zorder": 3} if m == "lipmip" else {}
            ax_l.plot(e, v, label=names[m], **style)
    ax_l.set_yscale("log")
    ax_l.set_xlabel("training epoch")
    ax_l.set_ylabel("estimate of $L^\\infty(f_1 - f_2, [0,1]^2)$")
    ax_l.set_title("Estimators during training")
    ax_l.legend(fontsize=8, ncol=2)
    for label, series in right.items():
        if series:
            e, v = zip(*series)
            ax_r.plot(e, v, marker="o", ms=3, label=label)
    ax_r.set_xlabel("training epoch")
    ax_r.set_ylabel("LipMIP (exact)")
    ax_r.set_title("Exact constant under regularisation")
    ax_r.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as temp:
        fig.savefig(temp, dpi=120)
    plt.close(fig)

    solved = statuses.count("optimal")
    lines = [
        f"![Figure 1]({path.name})",
        "",
        f"LipMIP solved {solved}/{len(statuses)} snapshots to optimality "
        f"(time limit {cfg.figure_time_limit:g} s each).",
        "",
        "| epoch | "
        + " | ".join(names[m] for m in FIGURE_METHODS)
        + " | "
        + " | ".join(right)
        + " |",
        "|---:|" + "---:|" * (len(FIGURE_METHODS) + len(right)),
    ]
    epochs = sorted({e for s in left.values() for e, _ in s})
    for epoch in epochs:
        row = [dict(left[m]).get(epoch) for m in FIGURE_METHODS]
        row += [dict(s).get(epoch) for s in right.values()]
        lines.append(
            f"| {epoch} | " + " | ".join("-" if v is None else f"{v:.4g}" for v in row) + " |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- report
def _versions(solver: str) -> str:
    import scipy

    parts = [
        f"lipopt {lipopt.__version__}",
        f"numpy {np.__version__}",
        f"scipy {scipy.__version__}",
        f"torch {torch.__version__}",
    ]
    try:
        import cvxpy

        parts.append(f"cvxpy {cvxpy.__version__}")
    except ImportError:
        parts.append("cvxpy not installed")
    parts.append(f"LipMIP solver: {solver} {registry.get(solver).version()}")
    return ", ".join(parts)


def header(cfg: Config, solver: str, argv: Sequence[str], load: float, seconds: float) -> str:
    cmd = " ".join(["python", "benchmarks/paper_table1.py", *argv])
    return "\n".join(
        [
            f"# Table 1{' (quick)' if cfg.quick else ''}: Lipschitz estimators against LipMIP",
            "",
            "Generated by `benchmarks/paper_table1.py` (see `benchmarks/README.md`).",
            "",
            f"- command: `{cmd}`",
            f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"total run time {seconds / 60:.1f} min",
            f"- machine: {platform.platform()}, {cpu_name()}, {os.cpu_count()} logical CPUs; "
            f"Python {platform.python_version()}; load average at the start {load:.2f}",
            f"- {_versions(solver)}",
            f"- settings: {cfg.seeds} networks per experiment, {cfg.balls} digit balls per "
            "network; "
            f"LipMIP time limit {cfg.time_limit:g} s, 2 threads; CLEVER {cfg.clever_batches} × "
            f"{cfg.clever_batch_size}; RandomLB 1000 points; Attack 1000 gradient evaluations; "
            "LipSDP-Neuron (Clarabel); SeqLip local greedy; input norm ℓ∞, c = (1, -1)",
            "- relative error: (estimate - exact) / exact, over instances LipMIP solved to "
            "optimality; time: wall clock of each estimator call (seconds vary by tens of percent "
            "on a loaded machine)",
        ]
    )


def parse(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI size: 2 seeds, short limits")
    p.add_argument("--seeds", type=int, help="networks per experiment")
    p.add_argument("--balls", type=int, help="digit test balls per network")
    p.add_argument("--time-limit", type=float, help="LipMIP seconds per instance")
    p.add_argument("--solver", help="LipMIP solver (default: gurobi if usable, else highs)")
    p.add_argument("--experiments", default="digits,synthetic", help="digits,synthetic")
    p.add_argument("--no-figures", action="store_true", help="skip Figure 1")
    p.add_argument("--out", type=Path, help="markdown path (default under benchmarks/results)")
    return p.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    cfg = QUICK if args.quick else FULL
    for key in ("seeds", "balls", "time_limit"):
        if getattr(args, key) is not None:
            cfg = replace(cfg, **{key: getattr(args, key)})
    solver = args.solver or ("gurobi" if "gurobi" in registry.available() else "highs")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f}s] {message}", file=sys.stderr, flush=True)

    builders = {"digits": digits_instances, "synthetic": synthetic_instances}
    experiments = [e.strip() for e in args.experiments.split(",") if e.strip()]
    unknown = sorted(set(experiments) - set(builders))
    if unknown:
        raise SystemExit(f"unknown experiment(s): {', '.join(unknown)}")
    by_experiment: dict[str, list[Instance]] = {}
    for e in experiments:
        by_experiment[e] = builders[e](cfg, say)
        run(by_experiment[e], cfg, solver, say)

    stem = "paper_table1_quick" if cfg.quick else "paper_table1"
    out = args.out or RESULTS / f"{stem}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    figure = ""
    if not args.no_figures:
        figure = figure1(cfg, solver, out.with_name(f"{stem}_fig1.png"), say)
    text = [
        header(cfg, solver, argv, load, time.perf_counter() - start),
        "",
        "## Table 1",
        "",
        table_markdown(by_experiment),
        "",
        "### The paper's Table 1 (MNIST 1 vs 7 with 784 inputs; Gurobi; LipSDP-Network)",
        "",
        paper_markdown(),
        "",
        "### Every instance (values; ℓ∞ input norm, c = (1, -1))",
        "",
        instances_markdown(by_experiment),
    ]
    if figure:
        text += ["", "## Figure 1", "", figure]
    write_text_atomic(out, "\n".join(text) + "\n")
    say(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
