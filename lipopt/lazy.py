"""Heavy third-party modules loaded on first use, so that ``import lipopt`` does no work.

``pe = lazy_module("pyomo.environ")`` gives a stand-in at once; the first attribute read imports
the module and copies its names into the stand-in, so later reads cost what a module's do.
Nothing is imported before that, not even the parent package: importing ``pyomo`` installs
Pyomo's import hooks, after which the first import of SciPy also imports ``scipy.stats``
(~0.4 s, Pyomo's ``pyomo.common.dependencies``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    """A module imported on the first read of one of its attributes."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # copy, pickle and inspect probe these: no import
            raise AttributeError(attribute)
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))
        return getattr(module, attribute)


def lazy_module(name: str) -> ModuleType:
    """A stand-in for the module ``name`` that imports it on first use."""
    return _Deferred(name)


#: what a solve uses: loaded before its clock starts, so that time limits and the reported
#: stages count the solve, not the loading (``import lipopt`` loaded them before issue 26)
SOLVE_MODULES = ("pyomo.environ", "scipy.optimize", "scipy.sparse", "highspy")


def load_for_solving() -> None:
    """Import :data:`SOLVE_MODULES` (at once if they are loaded already)."""
    for name in SOLVE_MODULES:
        importlib.import_module(name)
