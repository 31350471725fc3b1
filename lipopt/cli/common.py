"""What several commands share: the problem options, on/off switches, the domain, progress."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

from lipopt import config
from lipopt.cli.solvers import solver_help
from lipopt.domain import (
    Box,
    Domain,
    DomainError,
    L1Ball,
    L2Ball,
    LinfBall,
    intersect,
    parse_ball,
    parse_box,
    parse_clip,
    parse_polytope,
)
from lipopt.network import Network
from lipopt.norms import InputNorm, OutputNorm
from lipopt.options import Group, Kind, Option, declarations

#: when this module was imported: the start of the clock where the kernel's is not readable
_IMPORTED = time.monotonic()


def _add_problem_arguments(
    parser: argparse.ArgumentParser, output_norm: bool = True, l2: str | None = None
) -> None:
    """The network, domain and norms: shared by solve, export and compare (without
    ``--output-norm``: the estimators take a weighting c; with ``l2`` (a note for the help,
    possibly empty): the ℓ2 input norm, which export does not take)."""
    parser.add_argument("model", help="ONNX file of a feed-forward piecewise-linear network")
    dom = parser.add_argument_group("domain (one of; --polytope and --clip may cut the others)")
    dom.add_argument(
        "--box",
        metavar="LO,HI|FILE",
        help="box: LO,HI for every input, or a .json/.npy file",
    )
    dom.add_argument(
        "--center", metavar="X|FILE", help="ball centre: comma list or .npy/.json/.txt"
    )
    dom.add_argument("--radius", type=float, help="ball radius (with --center)")
    dom.add_argument(
        "--ball",
        choices=InputNorm.choices(),
        help="ball type for --center/--radius (default: linf)",
    )
    dom.add_argument("--polytope", metavar="FILE", help="rows A x <= b in a box: a .json/.npz file")
    add_clip_argument(dom)
    prob = parser.add_argument_group("problem")
    prob.add_argument(
        "--norm",
        choices=InputNorm.choices(polyhedral=l2 is None),
        default="linf",
        help="input norm: linf (max ||grad||_1, default) or l1 (max ||grad||_inf)"
        + (f", or l2 (max ||grad||_2{l2})" if l2 is not None else ""),
    )
    prob.add_argument("--c", metavar="C|FILE", help="output weighting c: the constant of c^T f")
    if not output_norm:
        return
    prob.add_argument(
        "--output-norm",
        choices=OutputNorm.choices(polyhedral=l2 is None),
        help="instead of --c: the norm of the whole output vector (cross: multi-class "
        "robustness" + ("; l2 needs SCIP)" if l2 is not None else ")"),
    )


def _add_switch(group: Any, name: str, on: str, off: str) -> None:
    """``--name`` / ``--no-name``: True / False, and "auto" when neither is given."""
    pair = group.add_mutually_exclusive_group()
    dest = name.replace("-", "_")
    pair.add_argument(
        f"--{name}", dest=dest, action="store_const", const=True, default="auto", help=on
    )
    pair.add_argument(f"--no-{name}", dest=dest, action="store_const", const=False, help=off)


def config_options(
    group: Group | None = None, batch: bool = False, declaration: type | None = None
) -> tuple[str, ...]:
    """The options of ``declaration`` (:class:`~lipopt.config.SolveConfig`) that have a flag,
    in declaration order: those ``lipopt solve --help`` lists in ``group``, or (``batch``)
    those every query of a batch takes."""
    return tuple(
        name
        for name, (spec, _) in _declared(declaration).items()
        if spec.flag and (group is None or spec.group is group) and (spec.batch or not batch)
    )


def add_config_arguments(
    parser: Any,
    names: Sequence[str],
    helps: dict[str, str] | None = None,
    declaration: type | None = None,
) -> None:
    """The flags of the options ``names`` as ``declaration`` (:class:`~lipopt.config.SolveConfig`)
    declares them (:mod:`lipopt.options`); ``helps`` replaces the help of a command whose
    option means something of its own."""
    declared = _declared(declaration)
    generated = {"solver": solver_help()}  # what the registered adapters declare
    for name in names:
        spec, default = declared[name]
        text = (helps or {}).get(name, generated.get(name, spec.help))
        ADDERS[spec.kind](parser, name, replace(spec, help=text), default)


def _declared(declaration: type | None) -> dict[str, tuple[Option, Any]]:
    """The declared options (read when a parser is made: a new field is a new flag)."""
    return declarations(declaration or config.SolveConfig)


def _add_value(parser: Any, name: str, spec: Option, default: Any) -> None:
    extra = {} if default is None else {"default": default}
    extra |= {} if spec.type is None else {"type": spec.type}
    extra |= {} if spec.metavar is None else {"metavar": spec.metavar}
    parser.add_argument(_flag(name), help=spec.help, **extra)


def _add_choice(parser: Any, name: str, spec: Option, default: Any) -> None:
    default = default.value if isinstance(default, Enum) else default
    parser.add_argument(_flag(name), choices=list(spec.choices), default=default, help=spec.help)


def _add_declared_switch(parser: Any, name: str, spec: Option, default: Any) -> None:
    _add_switch(parser, name.replace("_", "-"), on=spec.help, off=spec.off)


def _add_flag(parser: Any, name: str, spec: Option, default: Any) -> None:
    parser.add_argument(_flag(name), action="store_true", help=spec.help)


def _add_negated(parser: Any, name: str, spec: Option, default: Any) -> None:
    flag = "--no-" + name.replace("_", "-")
    parser.add_argument(flag, dest=name, action="store_false", help=spec.help)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


#: how each kind of option is added to a parser
ADDERS: dict[Kind, Callable[[Any, str, Option, Any], None]] = {
    Kind.VALUE: _add_value,
    Kind.CHOICE: _add_choice,
    Kind.SWITCH: _add_declared_switch,
    Kind.FLAG: _add_flag,
    Kind.NEGATED: _add_negated,
}


def add_clip_argument(group: Any) -> None:
    """``--clip LO,HI``: the valid range of every input, cutting the domain."""
    group.add_argument(
        "--clip",
        metavar="LO,HI",
        help="keep every input in [LO, HI] (e.g. 0,1 for pixels)",
    )


def domain_from_args(args: argparse.Namespace, network: Network) -> Domain:
    """The domain the options describe: --box, --center/--radius or --polytope alone, then cut
    by --polytope and --clip where given (:func:`lipopt.domain.intersect`)."""
    d = network.input_dim
    polytope = getattr(args, "polytope", None)
    clip = getattr(args, "clip", None)
    cut = parse_polytope(polytope, d) if polytope is not None else None
    bounds = parse_clip(clip) if clip is not None else None
    if cut is not None and args.box is None and args.center is None and args.radius is None:
        return intersect(cut, bounds)
    return intersect(_base_domain(args, d), bounds, cut)


def _base_domain(args: argparse.Namespace, d: int) -> Box | LinfBall | L1Ball | L2Ball:
    """The box or ball of --box or --center/--radius (exactly one)."""
    if args.box is not None and (args.center is not None or args.radius is not None):
        raise DomainError("give either --box or --center/--radius, not both")
    if args.box is not None:
        if args.ball is not None:
            raise DomainError("--ball goes with --center/--radius, not with --box")
        return parse_box(args.box, d)
    if args.center is None and args.radius is None:
        raise DomainError(
            "no domain given: use --box LO,HI, --center X --radius R or --polytope FILE"
        )
    if args.center is None or args.radius is None:
        raise DomainError("a ball needs both --center and --radius")
    return parse_ball(args.center, args.radius, args.ball or "linf", d)


def _progress(quiet: bool) -> Callable[[str], None]:
    """A progress callback: ``lipopt: message`` on stderr unless ``quiet``."""

    def say(message: str) -> None:
        if not quiet:
            print(f"lipopt: {message}", file=sys.stderr, flush=True)

    return say


def process_seconds() -> float:
    """Seconds since this process started (Python's start-up and imports included), from the
    kernel's record of the process (Linux), else since :mod:`lipopt.cli` was imported."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as uptime:
            now = float(uptime.read().split()[0])
        return max(now - int(fields[19]) / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic() - _IMPORTED


def limit_left(time_limit: float | None) -> float | None:
    """What is left of a command's ``--time-limit`` for :func:`lipopt.lipschitz`: the limit
    bounds the whole command, start-up included (never less than a hundredth of it)."""
    if time_limit is None or time_limit <= 0:
        return time_limit  # no limit, or one the checks refuse as it was given
    return max(time_limit - process_seconds(), 0.01 * time_limit)
