"""Progress on request: the library prints nothing unless asked.

``progress=True`` on :func:`receval.evaluate`, :func:`receval.compare`,
:func:`receval.analysis.report.report` and :func:`receval.run_demo` writes a
line on stderr as each long step starts and its time when it ends (and, for
an evaluation, the rows evaluated at most once a second). The command line
draws its own spinners instead.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Step", "rows_to_stderr", "silent", "steps_of"]

#: A step: called with what it does, a context manager around it.
Step = Callable[[str], contextlib.AbstractContextManager[Any]]


def silent(what: str) -> contextlib.AbstractContextManager[Any]:
    """No progress (the default everywhere)."""
    return contextlib.nullcontext()


def steps_of(progress: Any, name: str) -> Step:
    """The step function of ``progress``: False/None silent, True lines on stderr
    prefixed ``receval <name>:``, or a function of the step's description
    returning a context manager (used as is).

    >>> steps_of(False, "compare") is silent
    True
    """
    if progress is None or progress is False:
        return silent
    if progress is True:

        @contextlib.contextmanager
        def to_stderr(what: str) -> Iterator[None]:
            started = time.perf_counter()
            print(f"receval {name}: {what} ...", file=sys.stderr, flush=True)
            yield
            took = time.perf_counter() - started
            print(f"receval {name}: {what}: {took:.1f} s", file=sys.stderr, flush=True)

        return to_stderr
    if callable(progress):
        return progress  # type: ignore[no-any-return]
    raise TypeError(f"progress must be True, False or a function; got {type(progress).__name__}")


def rows_to_stderr(name: str, every: float = 1.0) -> Callable[[int], None]:
    """A rows callback (``evaluate(progress=...)``) writing the rows evaluated so
    far on stderr, at most once every ``every`` seconds."""
    started = last = time.perf_counter()

    def report(rows: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= every:
            last = now
            print(
                f"receval {name}: {rows} recommendation rows evaluated ({now - started:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

    return report
