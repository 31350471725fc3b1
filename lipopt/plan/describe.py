"""A plan as indented text: what will run, in order, before anything is solved."""

from __future__ import annotations

from lipopt.plan.nodes import (
    ActivationBab,
    BabAfter,
    DomainSplit,
    Mip,
    Node,
    Race,
    RegionSearch,
    UnionParts,
)


def describe(node: Node, indent: str = "") -> str:
    """One line per node, children indented under the node that runs them."""
    return "\n".join(_lines(node, indent))


def _lines(node: Node, indent: str) -> list[str]:
    if isinstance(node, Mip):
        return [indent + _mip(node)]
    if isinstance(node, RegionSearch):
        limit = node.options.node_limit
        lines = [f"{indent}region search ({limit} nodes, {node.bounds} bounds)"]
        if node.race_now is not None:
            lines += [f"{indent}  if it looks hard after bounds:"]
            lines += _lines(node.race_now, indent + "    ")
        if node.fallback is not None:
            lines += [f"{indent}  if unfinished:"]
            lines += _lines(node.fallback, indent + "    ")
        return lines
    if isinstance(node, BabAfter):
        lines = _lines(node.first, indent)
        lines += [f"{indent}if unfinished at {node.share:.0%} of the time limit, for the rest:"]
        return lines + _lines(node.bab, indent + "  ") + [f"{indent}  (better bounds of both)"]
    if isinstance(node, ActivationBab):
        mip_at = node.options.mip_at
        parts = f", the MIP ({node.solver}) on parts of <= {mip_at} unstable" if mip_at else ""
        rule = node.options.branching
        if rule == "auto":
            rule = (
                f"score branching from {node.options.score_from} unstable at the root, else layer"
            )
        else:
            rule = f"{rule} branching"
        return [f"{indent}activation branch and bound ({rule}, "
                f"Jacobian bounds, margin LPs at the leaves{parts})"]  # fmt: skip
    if isinstance(node, DomainSplit):
        lines = [f"{indent}domain split (leaves of {node.options.leaf_unstable} unstable, "
                 f"{node.options.workers} process(es)), each part:"]  # fmt: skip
        return lines + _lines(node.part, indent + "  ")
    if isinstance(node, UnionParts):
        return [f"{indent}each input set of the union planned on its own; the largest constant"]
    return _race(node, indent)


def _mip(node: Mip) -> str:
    config = node.config
    parts = [
        f"{node.formulation.value} {'MIP' if config.exact else 'LP relaxation'} on {node.solver}"
    ]
    extras = [
        (f"l2 {node.l2_objective}", node.l2_objective is not None),
        (f"l2 ball as {node.ball_encoding}", node.ball_encoding is not None),
        ("decomposed", node.decompose),
        ("gate products", node.decompose and node.products),
        ("sub-network tangents", node.subnets),
        ("attack first", node.attack),
        (f"{node.split} split", node.split is not None),
        ("start point", config.start_point is not None),
        (f"workers={config.workers}", config.workers is not None),
    ]
    parts += [label for label, on in extras if on]
    return ", ".join(parts)


def _race(node: Race, indent: str) -> list[str]:
    lines = []
    if node.probe:
        lines.append(f"{indent}probe: backward MIP alone for race_after seconds")
    if node.instead:
        racer = next(r for r in node.racers if r.formulation.value == "backward")
        lines.append(f"{indent}then: backward MIP on {racer.solver}, sign split (no race)")
        return lines
    racers = ", ".join(r.name + (" after region search" if r.regions else "") for r in node.racers)
    lines.append(f"{indent}race: {racers}")
    if node.split_leader:
        lines.append(f"{indent}  unfinished at the decision: the leader split in halves")
    if node.bab_racer is not None:
        rules = [] if node.bab_from_share is None else [f"{node.bab_from_share:.0%}"]
        rules += [] if node.bab_from_count is None else [str(node.bab_from_count)]
        lines.append(
            f"{indent}  from {' or '.join(rules)} unstable neurons: the {node.bab_racer.name} "
            + (
                "alone on every core instead"
                if node.bab_runs_alone
                else "in the forward model's place, no leader split"
            )
        )
    return lines
