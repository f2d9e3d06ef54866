"""Buffers one thread reuses from one pair of users to the next.

The in-process engine evaluates a large input pair by pair of complete users
(:mod:`receval.engines.driver`); the largest arrays of a pair (its columns
joined out of Arrow's chunks, the list rows' codes and gains, the relevant
cells) are the same sizes from one pair to the next. Allocated afresh, each is
new memory that the system faults in and clears page by page. A thread's
:class:`Workspace` keeps them instead. It lives on the thread (nothing
process-wide changes) and is claimed for one pair at a time (:func:`reusing`),
so an array taken from it (:func:`take`) lives until that thread's next pair:
only arrays that no result keeps come from it.

Base layer: the readers (:mod:`receval.io`) and the engine both take from it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["Workspace", "install", "reusing", "take", "uninstall"]


class Workspace:
    """One thread's buffers, by name and dtype.

    Installed on a thread by :func:`install` (the driver does it on its pool's
    threads, which end with the evaluation: the buffers go with them) and
    claimed for one pair by :func:`reusing`; an array taken from it lives
    until the next pair of that thread.
    """

    def __init__(self) -> None:
        self.buffers: dict[tuple[str, str], np.ndarray] = {}
        self.busy = False

    def take(self, name: str, n: int, dtype: Any) -> np.ndarray:
        """An uninitialised array of ``n`` items, the buffer ``name`` reused
        (grown by a quarter when it is too small)."""
        key = (name, np.dtype(dtype).str)
        buf = self.buffers.get(key)
        if buf is None or len(buf) < n:
            size = n if buf is None else max(n, len(buf) + len(buf) // 4)
            buf = self.buffers[key] = np.empty(size, dtype)
        return buf[:n]


_THREAD = threading.local()  # .space: the thread's Workspace; .active: while claimed


def install() -> None:
    """Give the calling thread a :class:`Workspace`, unless it has one. It
    goes with the thread (or :func:`uninstall`)."""
    if getattr(_THREAD, "space", None) is None:
        _THREAD.space = Workspace()


def uninstall() -> None:
    """Take the calling thread's :class:`Workspace` away (its buffers freed)."""
    _THREAD.space = None


@contextmanager
def reusing() -> Iterator[None]:
    """Claim the calling thread's :class:`Workspace`, if it has one, for the
    evaluation of one pair: its reading (:func:`receval.ids.one_chunk`) and
    the engine's ``prepare`` and ``compute`` then take their largest arrays
    from it. A nested claim (or a thread without one) allocates as usual."""
    space: Workspace | None = getattr(_THREAD, "space", None)
    outer = getattr(_THREAD, "active", None)
    if space is None or space.busy:
        _THREAD.active = None
        try:
            yield
        finally:
            _THREAD.active = outer
        return
    space.busy, _THREAD.active = True, space
    try:
        yield
    finally:
        space.busy, _THREAD.active = False, outer


def take(name: str, n: int, dtype: Any) -> np.ndarray:
    """An uninitialised array: from the claimed :class:`Workspace`, or new."""
    space: Workspace | None = getattr(_THREAD, "active", None)
    if space is None:
        return np.empty(n, dtype)
    return space.take(name, n, dtype)
