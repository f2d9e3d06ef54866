"""The ``receval`` command's entry point (the console script and ``python -m receval``).

It imports the command line only once it holds the signals, so that Ctrl-C or
SIGTERM while the command is still starting (loading NumPy, pandas, Arrow,
typer) exits as it does later: 130 or 143, one line on stderr, no traceback.
``import receval`` loads almost nothing (its public names load on first use),
so the window before this runs is Python's own start-up.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

from receval.errors import SIGNAL_MESSAGES


class _Terminated(KeyboardInterrupt):
    """SIGTERM during start-up."""


def _on_term(signum: int, frame: Any) -> None:
    raise _Terminated


def command_line() -> int:
    """Start the command: :func:`receval.cli.command_line` once it is loaded."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_term)  # the command's own process; main() re-installs
    try:
        from receval import cli

        return cli.command_line()  # main() holds the signals itself while it runs
    except KeyboardInterrupt as exc:  # while loading, or after main() gave them back
        code = 143 if isinstance(exc, _Terminated) else 130
        sys.stderr.write(SIGNAL_MESSAGES[code] + "\n")
        return code
