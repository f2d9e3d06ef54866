"""Child processes in tests: the writing end of a named pipe, once the command reading
it has opened it; and the signal dispositions of a child that a test sends signals to."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any


def open_for_writing(fifo: Path, proc: subprocess.Popen[Any]) -> int:
    """The blocking writing end of ``fifo``, once ``proc`` has opened it for reading
    (it opens the pipe after its start-up); fails instead of hanging when the
    process ends first or never opens it."""
    for _ in range(1200):
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        return fd
    raise AssertionError(f"the command never opened {fifo}")


#: the signals tests send to the command (Ctrl-C, kill, a closed terminal)
SENT = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def default_signals() -> None:
    """``preexec_fn`` of every child a test sends a signal to: SIGINT, SIGTERM and
    SIGHUP at their default dispositions, whatever pytest itself was started with.

    An ignored signal stays ignored through ``exec``, and Python then leaves Ctrl-C
    ignored (as receval does, rightly, in a background job or under ``nohup``). So a
    pytest started with SIGINT ignored (``python -m pytest &`` in a script) would pass
    that on and every Ctrl-C test would fail on unchanged code. A test of an ignored
    signal ignores it in the child itself, after this.
    """
    for signum in SENT:
        signal.signal(signum, signal.SIG_DFL)
