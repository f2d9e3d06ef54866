"""glibc's allocator, asked to keep freed memory while a large input is evaluated.

An evaluation allocates and frees arrays of a few MB for every chunk of
users, on several threads. By default glibc hands such blocks back to the
system when they are freed (``mmap``/``munmap``, and heaps trimmed down past
128 KB of free space), and every new block is then faulted in again, page
by page. On the project's 2-core machine that was half of the wall time of a
100,000-user evaluation (0.6 s of system time for 0.45 s of user time; 0.07 s
with the settings below).

So, on Linux with glibc, in a process that opted in, the first evaluation of
at least :data:`MIN_ROWS` recommendation rows sets two process-wide options,
``M_MMAP_THRESHOLD`` = 32 MiB (blocks below that come from the heap and are
reused) and ``M_TRIM_THRESHOLD`` = 512 MiB (free heap kept for the next
chunk), and each such evaluation ends with ``malloc_trim(0)``, which returns
the free memory to the system. glibc has no way to read the options back (and
setting them ends its own dynamic thresholds), so they stay set for the rest
of the process.

That is why a library call never does it: the allocator belongs to the host.
Only a process that owns itself opts in: the ``receval`` command calls
:func:`allow` (one line in ``cli.main``), and ``RECEVAL_MALLOC=1`` opts any
process in. ``RECEVAL_MALLOC=0`` leaves the allocator alone even in the
command. Numbers never depend on any of this.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
from typing import Any

__all__ = ["MIN_ROWS", "allow", "allowed", "release", "tune"]

#: Evaluations of fewer recommendation rows leave the allocator alone.
MIN_ROWS = 200_000

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_lock = threading.Lock()
_libc: Any = None
_tuned = False
_allowed = False


def allow() -> None:
    """Let this process's large evaluations tune the allocator: for a process
    that owns itself (the ``receval`` command), never for a library call."""
    global _allowed
    _allowed = True


def allowed() -> bool:
    """Whether large evaluations may tune the allocator in this process:
    :func:`allow` was called or ``RECEVAL_MALLOC=1``; never with ``RECEVAL_MALLOC=0``."""
    env = os.environ.get("RECEVAL_MALLOC", "")
    return env != "0" and (_allowed or env == "1")


def _glibc() -> Any:
    if os.environ.get("RECEVAL_MALLOC", "1") == "0":
        return None
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def tune(rows: int) -> bool:
    """Keep freed memory for reuse (once per process) when ``rows`` is large
    and the process :func:`allowed` it; whether the allocator is tuned."""
    global _libc, _tuned
    if rows < MIN_ROWS or not allowed():
        return False
    with _lock:
        if not _tuned:
            _libc = _glibc()
            if _libc is not None:
                _libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
                _libc.mallopt(_M_TRIM_THRESHOLD, 512 << 20)
            _tuned = True
    return _libc is not None


def release() -> None:
    """Give the free heap back to the system (after a tuned evaluation)."""
    if _libc is not None:
        _libc.malloc_trim(0)
