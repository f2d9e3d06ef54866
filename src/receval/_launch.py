"""The ``receval`` command's entry point (the console script and ``python -m receval``).

It imports the command line only once it holds the signals, so that Ctrl-C or
SIGTERM while the command is still starting (loading NumPy, Arrow,
typer) exits as it does later: 130 or 143, one line on stderr, no traceback.
``import receval`` loads almost nothing (its public names load on first use),
so the window before this runs is Python's own start-up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any

from receval import _malloc
from receval.errors import SIGNAL_MESSAGES


class _Terminated(KeyboardInterrupt):
    """A signal during start-up; ``code`` is the command's exit code for it."""

    def __init__(self, code: int = 143) -> None:
        super().__init__(code)
        self.code = code


#: The exit code of each signal received while the command loads. A library may
#: clear the exception a signal raised while it loads (seen: SIGTERM inside
#: pandas' compiled start-up, in an ``abc`` subclass check whose error it drops):
#: the command then loads on as if nothing came, so the signal is noted here too.
_RECEIVED: list[int] = []


def _on_term(signum: int, frame: Any) -> None:
    code = 129 if signum == getattr(signal, "SIGHUP", None) else 143
    _RECEIVED.append(code)
    raise _Terminated(code)


def _on_int(signum: int, frame: Any) -> None:
    _RECEIVED.append(130)
    raise KeyboardInterrupt


def _hold_signals() -> None:
    """SIGTERM, and SIGHUP unless it is ignored (``nohup``), end the start-up as Ctrl-C
    does: the command's own process only; main() re-installs its handlers. Ctrl-C is
    noted too, unless it is ignored (``cmd &``)."""
    _RECEIVED.clear()
    signal.signal(signal.SIGTERM, _on_term)
    hup = getattr(signal, "SIGHUP", None)
    if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:
        signal.signal(hup, _on_term)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_int)


def _loaded() -> None:
    """End the start-up now if a signal came while loading, even one whose exception
    a library dropped; else give Ctrl-C back to Python's handler, which main()
    looks for (a Ctrl-C between here and main() is Python's KeyboardInterrupt)."""
    if _RECEIVED:
        raise _Terminated(_RECEIVED[0])
    if signal.getsignal(signal.SIGINT) is _on_int:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def command_line() -> int:
    """Start the command: :func:`receval.cli.command_line` once it is loaded."""
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        _hold_signals()
    code: int | None = None
    loaded = False
    try:
        _malloc.own_process()  # before NumPy and Arrow load: allocators, thread pools
        from receval import cli

        _malloc.settle()
        loaded = True
        if main_thread:
            _loaded()
        code = cli.command_line()  # main() holds the signals itself while it runs
    except KeyboardInterrupt as exc:  # while loading, or after main() gave them back
        if code is None:
            code = exc.code if isinstance(exc, _Terminated) else 130
            code = _RECEIVED[0] if _RECEIVED else code  # the first signal names the exit
            sys.stderr.write(SIGNAL_MESSAGES[code] + "\n")
    except Exception as exc:  # while loading: a library not mapped, no memory for a thread
        # (under a limit, a C extension left without memory as it loads may fail
        # as a SystemError, "error return without exception set")
        starved = not loaded and isinstance(exc, SystemError)
        if not (_malloc.is_out_of_memory(exc) or (starved and _malloc.limited())):
            raise
        _malloc.say_out_of_memory(exc)  # one line, even with no memory left to word it
        # at once: nothing is written yet, and a library left half-loaded, or the
        # interpreter itself without memory, fails on the way out (traceback, exit 139)
        os._exit(2)
    finally:
        if main_thread:
            # The process is about to exit with its code: a signal still pending (a
            # library may re-deliver one it intercepted, as Arrow's readers do) must not
            # turn that exit into a kill by the signal (exit -2) after the message.
            for signum in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
                if signum is not None:
                    signal.signal(signum, signal.SIG_IGN)
    if code in SIGNAL_MESSAGES or _malloc.exhausted():
        # Stopped by a signal, message written, outputs cleaned up: exit with the code
        # now. Going through the interpreter's shutdown instead let a signal received
        # during start-up end the process as killed by SIGINT (exit -2) in about 1 of 30
        # runs (benchmarks/interrupts.py), after the message. Out of memory, a library
        # left half-loaded crashed there (exit 139) after the message.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
                stream.flush()
        os._exit(code)
    return code
