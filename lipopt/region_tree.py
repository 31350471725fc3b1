"""Old import path of :mod:`lipopt.search.region_tree` (kept working): this name is that module, so
imports and patches of either reach the same object."""

import sys

from lipopt.search import region_tree as _moved

sys.modules[__name__] = _moved
