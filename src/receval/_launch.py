"""The ``receval`` command's entry point (the console script and ``python -m receval``).

It imports the command line only once it holds the signals, so that Ctrl-C or
SIGTERM while the command is still starting (loading NumPy, pandas, Arrow,
typer) exits as it does later: 130 or 143, one line on stderr, no traceback.
``import receval`` loads almost nothing (its public names load on first use),
so the window before this runs is Python's own start-up.
"""

from __future__ import annotations

import os
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
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        signal.signal(signal.SIGTERM, _on_term)  # the command's own process; main() re-installs
    code: int | None = None
    try:
        from receval import cli

        code = cli.command_line()  # main() holds the signals itself while it runs
    except KeyboardInterrupt as exc:  # while loading, or after main() gave them back
        if code is None:
            code = 143 if isinstance(exc, _Terminated) else 130
            sys.stderr.write(SIGNAL_MESSAGES[code] + "\n")
    finally:
        if main_thread:
            # The process is about to exit with its code: a signal still pending (a
            # library may re-deliver one it intercepted, as Arrow's readers do) must not
            # turn that exit into a kill by the signal (exit -2) after the message.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if code in (130, 143):
        # Stopped by a signal, message written, outputs cleaned up: exit with the code
        # now. Going through the interpreter's shutdown instead let a signal received
        # during start-up end the process as killed by SIGINT (exit -2) in about 1 of 30
        # runs (benchmarks/interrupts.py), after the message.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
