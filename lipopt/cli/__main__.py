"""``python -m lipopt.cli``: the same as the ``lipopt`` command."""

import sys

from lipopt.cli import main

sys.exit(main())
