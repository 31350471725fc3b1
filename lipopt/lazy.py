"""Heavy third-party modules loaded on first use, so that ``import lipopt`` does no work.

``lazy_module("pyomo.environ")`` returns the module object at once and runs its code when an
attribute is first read (the standard library's :class:`importlib.util.LazyLoader`). Pyomo's
``environ`` (~0.2 s) and SciPy's ``optimize`` (~0.3-0.5 s: it imports ``scipy.stats``) are then
paid only by the calls that build or solve a model.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, its code run on first attribute access (at once if already loaded)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
