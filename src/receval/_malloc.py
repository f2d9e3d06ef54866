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

The command's process is also set up before NumPy and Arrow load
(:func:`own_process`, :func:`settle`: Arrow's allocator, glibc's arenas, and
thread pools under an address-space limit), and a lack of memory anywhere,
from the imports on, is one line (:func:`is_out_of_memory`,
:func:`out_of_memory`).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import re
import threading
from typing import Any

__all__ = [
    "MIN_ROWS",
    "address_space_left",
    "allow",
    "allowed",
    "check_headroom",
    "exhausted",
    "is_out_of_memory",
    "limited",
    "out_of_memory",
    "own_process",
    "release",
    "say_out_of_memory",
    "settle",
    "tune",
]

#: Evaluations whose pairs of chunks hold fewer recommendation rows leave the
#: allocator alone (pairs of a large input: :data:`receval.io.stream.PAIR_PARTS`).
MIN_ROWS = 100_000

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

#: glibc's malloc arenas in the command's process (glibc's default: 8 per core).
ARENAS = 2

#: Threads of each pool (BLAS, Arrow's) under an address-space limit.
LIMITED_THREADS = 2

#: BLAS threads under an address-space limit (OpenBLAS sizes a buffer per thread,
#: and exits the process when it cannot get them).
LIMITED_BLAS = 1
_lock = threading.Lock()
_libc: Any = None
_tuned = False
_allowed = False
_exhausted = False


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


def _is_glibc() -> bool:
    try:  # at once (platform.libc_ver() reads the interpreter's binary: ~20 ms)
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return platform.libc_ver()[0] == "glibc"


def _glibc() -> Any:
    """The C library's allocator calls, or None (``RECEVAL_MALLOC=0``, not glibc)."""
    if os.environ.get("RECEVAL_MALLOC", "1") == "0":
        return None
    return _libc_handle()


@functools.cache
def _libc_handle() -> Any:
    """glibc, loaded once (:func:`trim` asks for it every few blocks of a read)."""
    if platform.system() != "Linux" or not _is_glibc():
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


def trim() -> None:
    """Give the free heap back to the system now, in a process that
    :func:`allowed` it (the command: every few blocks of a delimited file's
    parse, which frees most of what it allocates in holes of the heap)."""
    if allowed():
        libc = _glibc()
        if libc is not None:
            libc.malloc_trim(0)


def release() -> None:
    """Give the free heap back to the system (after a tuned evaluation)."""
    if _libc is not None:
        _libc.malloc_trim(0)


# -- the command's own process ---------------------------------------------------------------

_SET: list[str] = []  # environment variables own_process() set (settle() removes them)
_limited = False  # whether own_process() found an address-space limit


def limited() -> bool:
    """Whether the command started under an address-space limit (``ulimit -v``),
    as :func:`own_process` found (no work: it is asked when memory is gone)."""
    return _limited


def _address_space_limited() -> bool:
    """Whether the process runs under an address-space limit (``ulimit -v``)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return False
    return soft != resource.RLIM_INFINITY


def _set_default(name: str, value: str) -> None:
    if name not in os.environ:
        os.environ[name] = value
        _SET.append(name)


def own_process() -> None:
    """Set up the ``receval`` command's own process, at its start, before
    NumPy and Arrow load (:mod:`receval._launch`; never on ``import receval``,
    never in a library call).

    - Arrow allocates through the C library (its ``system`` memory pool)
      unless ``ARROW_DEFAULT_MEMORY_POOL`` says otherwise: Arrow's bundled
      allocators reserve address space in large blocks (an ``ulimit -v`` then
      ends the process with an abort, or a hang) and kept ~50 MB more at the
      peak of a large CSV's evaluation (``benchmarks/csv_memory.py``);
    - glibc keeps at most :data:`ARENAS` malloc arenas (one under an
      address-space limit): each thread's own arena reserves 64 MB of address
      space and holds its own free memory;
    - under an address-space limit, BLAS runs :data:`LIMITED_BLAS` thread
      (``OPENBLAS_NUM_THREADS``, unless set: OpenBLAS takes a buffer per
      thread as NumPy loads, and exits the process when it cannot), and
      Arrow's thread pools are capped by :func:`settle`.

    ``RECEVAL_MALLOC=0`` leaves both allocators alone. The variables set are
    removed again by :func:`settle`: child processes get the user's environment.
    """
    global _limited
    _limited = limited = _address_space_limited()
    if os.environ.get("RECEVAL_MALLOC", "") != "0":
        _set_default("ARROW_DEFAULT_MEMORY_POOL", "system")
        libc = _glibc()
        if libc is not None:
            libc.mallopt(_M_ARENA_MAX, 1 if limited else ARENAS)
    if limited:
        _set_default("OPENBLAS_NUM_THREADS", str(LIMITED_BLAS))


def settle() -> None:
    """Once the command's libraries are loaded: Arrow's memory pool chosen
    (it reads ``ARROW_DEFAULT_MEMORY_POOL`` once), Arrow's thread pools capped
    under an address-space limit, and the variables :func:`own_process` set
    removed from the environment."""
    import pyarrow as pa

    pa.default_memory_pool()
    if _address_space_limited():
        pa.set_cpu_count(min(pa.cpu_count(), LIMITED_THREADS))
        pa.set_io_thread_count(min(pa.io_thread_count(), LIMITED_THREADS))
    while _SET:
        os.environ.pop(_SET.pop(), None)


#: Address space that must be left under a limit before the next block of a
#: CSV file is parsed: the block (1 MiB of text, a few MB parsed) and the ~40
#: blocks Arrow's reader reads ahead.
HEADROOM = 64 << 20


def address_space_left() -> int | None:
    """Bytes of address space left under the process's limit (``ulimit -v``),
    or None without a limit (or where it cannot be read: Linux's /proc)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", "rb") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError, AttributeError, IndexError):
        return None
    return soft - used


def check_headroom(need: int = HEADROOM) -> None:
    """Raise MemoryError when the process runs under an address-space limit
    with less than ``need`` bytes of it left: called before each block of a
    large input is parsed or converted, because Arrow's CSV parser and its
    conversions to Python objects end the process (an abort) when one of
    their allocations fails, where NumPy and Arrow's other kernels raise.
    Without a limit (the usual case, or a container's memory limit, which
    ``ulimit -v`` is not) it does nothing."""
    left = address_space_left()
    if left is not None and left < need:
        raise MemoryError(f"less than {need >> 20} MiB of address space left under the limit")


_THREAD = "can't start new thread"
_THREAD_FAILURES = (_THREAD, "failed to launch worker thread", "thread creation failed")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether an exception says the process ran out of memory: a
    MemoryError (NumPy's, Arrow's ``ArrowMemoryError``), a library that could
    not be loaded or mapped, a thread that could not be started, ``ENOMEM``;
    or was raised while handling one (pandas' "Unable to import required
    dependency numpy" over NumPy's own failure to load)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if _lack_of_memory(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _lack_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    if any(failure in text for failure in _THREAD_FAILURES):  # Python's, Arrow's
        return True
    if isinstance(exc, ImportError):
        return "failed to map segment" in text or "cannot allocate memory" in text
    if isinstance(exc, OSError):
        return exc.errno == errno.ENOMEM or "cannot allocate memory" in text
    return False


def exhausted() -> bool:
    """Whether this process ran out of memory (:func:`out_of_memory` was
    said): the command then exits at once, as a library left half-loaded or
    a pool without its threads may crash or hang in the interpreter's shutdown."""
    return _exhausted


_HELP = (
    ". Ask for fewer metrics or cut-offs; give both inputs as Parquet files, which are read "
    "by chunks of users in bounded memory (files sorted by user need the least); or run on "
    "a machine with more memory"
)
_ASKED = re.compile(r"allocate ([0-9.]+ [KMGTP]?i?B)")
#: the line said when even the message cannot be made (made while memory was there)
_LINE = f"error: out of memory{_HELP}\n".encode()


def out_of_memory(exc: BaseException | None = None) -> str:
    """The message for a lack of memory: what ran out, how much was asked
    for when NumPy says, and what helps."""
    global _exhausted
    _exhausted = True
    text = str(exc or "")
    asked = _ASKED.search(text)
    if asked:
        what = f" (an array of {asked.group(1)} could not be allocated)"
    elif any(failure in text.lower() for failure in _THREAD_FAILURES):
        what = " (a new thread could not be started)"
    else:
        what = ""
    return f"out of memory{what}{_HELP}"


def say_out_of_memory(exc: BaseException | None = None) -> None:
    """``error: out of memory ...`` on stderr (file descriptor 2), in one
    line, even when there is no memory left to make the message."""
    global _exhausted
    _exhausted = True
    try:
        line = f"error: {out_of_memory(exc)}\n".encode()
    except Exception:  # MemoryError, or a SystemError from a C extension left without any
        line = _LINE
    try:  # noqa: SIM105 (no context manager to allocate on the way out)
        os.write(2, line)
    except OSError:  # stderr closed: nothing to say it on
        pass
