"""Heavy third-party modules loaded on first use, so that ``import lipopt`` does no work.

``pe = lazy_module(PYOMO)`` gives a stand-in at once; the first attribute read imports
the module and copies its names into the stand-in, so later reads cost what a module's do.
Nothing is imported before that, not even the parent package.

Pyomo's ``pyomo.common.dependencies`` imports ``scipy.stats``, ``scipy.integrate`` and
``scipy.spatial`` as soon as SciPy is loaded (its ``_finalize_scipy``: 0.3-2 s, none of them used
by a solve). Before Pyomo is first imported, :func:`defer_scipy_extras` puts a stand-in for each
in ``sys.modules`` that imports the real module on the first read of one of its names, so
Pyomo's ``import scipy.stats`` costs nothing and CLEVER's ``from scipy import stats`` still gets
the whole module.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    """A module imported on the first read of one of its attributes."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # copy, pickle and inspect probe these: no import
            raise AttributeError(attribute)
        if self.__name__.startswith("pyomo"):
            defer_scipy_extras()
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))
        return getattr(module, attribute)


class _Unloaded(ModuleType):
    """A stand-in in ``sys.modules`` for a module not yet imported: the first read of a name
    removes it, imports the module and copies its names in. Of the dunders only ``__path__``
    does (the import of a submodule reads it); the import system reads ``__spec__``, set."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute != "__path__":
            raise AttributeError(attribute)
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))
        return getattr(module, attribute)


#: SciPy's subpackages that Pyomo imports when SciPy is loaded and that no solve uses
SCIPY_EXTRAS = ("scipy.stats", "scipy.integrate", "scipy.spatial")


def defer_scipy_extras() -> None:
    """Stand-ins for :data:`SCIPY_EXTRAS` that are not imported yet (before Pyomo is first
    imported: afterwards there is nothing to save)."""
    if "pyomo.common.dependencies" in sys.modules:
        return
    for name in SCIPY_EXTRAS:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        stand_in = _Unloaded(name)
        stand_in.__spec__ = spec
        sys.modules[name] = stand_in


#: the Pyomo a model is built and compiled with: its modelling layer. ``pyomo.environ`` adds the
#: solver, writer and transformation plugins on top (0.14-0.16 s more at start-up, issue 45 item
#: 6), which only CBC, Gurobi and the exports use; they import it themselves
PYOMO = "pyomo.core"


def lazy_module(name: str) -> ModuleType:
    """A stand-in for the module ``name`` that imports it on first use."""
    return _Deferred(name)


#: what a solve uses: loaded before its clock starts, so that time limits and the reported
#: stages count the solve, not the loading (``import lipopt`` loaded them before issue 26)
SOLVE_MODULES = (PYOMO, "pyomo.repn.plugins.standard_form", "scipy.sparse", "highspy")
#: what a plan that starts with the region search uses before any model (its LPs go to highspy
#: directly): the above but Pyomo (0.13 s of a 0.75 s small solve here, issue 45 item 6), which
#: the first model built imports, if the search leaves one to build
SEARCH_MODULES = tuple(name for name in SOLVE_MODULES if name.split(".")[0] != "pyomo")
#: what a solve over an ℓ2 ball uses too: ``scipy.optimize`` (~0.3 s), for the margin's
#: least-norm points (``nnls``); the other margin LPs go to ``highspy`` directly
BALL_MODULES = ("scipy.optimize",)


def load_for_solving(l2_ball: bool = False, models: bool = True) -> None:
    """Import :data:`SOLVE_MODULES` (:data:`SEARCH_MODULES` without ``models``), and
    :data:`BALL_MODULES` for a domain with an ℓ2 ball (at once if they are loaded already).
    SciPy's extras are deferred either way, so that a Pyomo imported later skips them too."""
    defer_scipy_extras()
    for name in (SOLVE_MODULES if models else SEARCH_MODULES) + (BALL_MODULES if l2_ball else ()):
        importlib.import_module(name)
