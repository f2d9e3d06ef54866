"""``python -m receval``: the command line."""

import sys

from receval.cli import command_line

sys.exit(command_line())
