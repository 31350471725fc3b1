"""Old import path of :mod:`lipopt.search.regions` (kept working): this name is that module, so
imports and patches of either reach the same object."""

import sys

from lipopt.search import regions as _moved

sys.modules[__name__] = _moved
