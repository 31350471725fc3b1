"""Old import path of :mod:`lipopt.parallel.race` (kept working): this name is that module, so
imports and patches of either reach the same object."""

import sys

from lipopt.parallel import race as _moved

sys.modules[__name__] = _moved
