"""``lipopt solvers``: which solver adapters are usable here."""

from __future__ import annotations

import argparse

from lipopt.solvers import registry


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``solvers`` subcommand (no options)."""
    sub.add_parser(
        "solvers",
        help="list the solver adapters and whether each is usable here",
        description="List every solver adapter, whether it is installed and usable, and how to "
        "install the missing ones.",
    )


def run_solvers(args: argparse.Namespace) -> int:
    """One line per adapter: usable with its version, or missing with how to install it."""
    usable = set(registry.available())
    for name in registry.ADAPTERS:
        if name in usable:
            print(f"{name:10s} usable   {registry.get(name).version()}")
        else:
            hint = getattr(registry, "INSTALL_HINTS", {}).get(name, "")
            print(f"{name:10s} missing  {hint}")
    print("default: auto = highs, with scip on the backward model where the two formulations race")
    return 0
