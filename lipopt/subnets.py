"""Old import path of :mod:`lipopt.search.subnets` (kept working): this name is that module, so
imports and patches of either reach the same object."""

import sys

from lipopt.search import subnets as _moved

sys.modules[__name__] = _moved
