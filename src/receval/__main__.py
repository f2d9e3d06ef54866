"""``python -m receval``: the command line."""

import sys

from receval._launch import command_line

sys.exit(command_line())
