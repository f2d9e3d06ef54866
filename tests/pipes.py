"""Named pipes in tests: the writing end, once the command reading it has opened it."""

from __future__ import annotations

import os
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
