"""``python -m receval``: the command line."""

import sys

from receval.cli import main

sys.exit(main())
