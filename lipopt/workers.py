"""Old import path of :mod:`lipopt.parallel.workers` (kept working): this name is that module, so
imports and patches of either reach the same object."""

import sys

from lipopt.parallel import workers as _moved

sys.modules[__name__] = _moved
