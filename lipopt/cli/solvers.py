"""``lipopt solvers``: which solver adapters are usable here; and the words every command uses
for its ``--solver`` choices, read off the adapters' declarations and the policy's picks."""

from __future__ import annotations

import argparse

from lipopt.policy import Policy
from lipopt.solvers import registry


def solver_list() -> str:
    """The registered adapters' names as a list in words: ``"highs, scip, cbc or gurobi"``."""
    names = list(registry.ADAPTERS)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def auto_means(labels: bool) -> str:
    """What ``auto`` picks: :data:`~lipopt.solvers.registry.AUTO_ADAPTER`, with each raced
    model's own pick where the policy's differs (the adapters' labels, or with ``labels``
    False their names)."""
    default = registry.AUTO_ADAPTER
    spell = (lambda name: registry.capabilities(name).label) if labels else str
    text = spell(default)
    for form, pick in Policy.current().auto_race_solvers.items():
        if pick == default:
            continue
        if labels:
            text += f", with {spell(pick)} solving the {form} model where the two formulations "
            text += "are raced"
        else:
            text += f", with {spell(pick)} on the {form} model where the two formulations race"
    return text


def solver_help() -> str:
    """The ``--solver`` help of solve and certify: ``auto`` and every registered adapter."""
    return f"solver adapter: auto (the default: {auto_means(True)}), {solver_list()}"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``solvers`` subcommand (no options)."""
    sub.add_parser(
        "solvers",
        help="list the solver adapters and whether each is usable here",
        description="List every solver adapter, whether it is installed and usable, and how to "
        "install the missing ones.",
    )


def run_solvers(args: argparse.Namespace) -> int:
    """One line per adapter: usable with its version, or missing with why (where it says) and
    how to install it."""
    for name, make in registry.ADAPTERS.items():
        adapter = make()
        if adapter.available():
            print(f"{name:10s} usable   {adapter.version()}")
            continue
        hint = registry.capabilities(name).install_hint
        why = str(getattr(adapter, "why_unavailable", str)())
        print(f"{name:10s} missing  {f'{why}; to install it: ' if why else ''}{hint}")
    print(f"default: auto = {auto_means(False)}")
    return 0
