"""Whether the truth being evaluated is a reference run (``receval.agreement``).

The agreement metrics (:mod:`receval.metrics.kernels.agreement`) read the truth's grades
as the ranks of a reference run, an encoding only :func:`receval.agreement`
builds. It marks its own evaluation with :func:`reference_truth`;
:func:`~receval.evaluation.api.check_inputs` refuses those metrics anywhere else,
so that no one computes the rank-biased overlap of a qrels file by accident.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["reference_given", "reference_truth"]

_GIVEN: ContextVar[bool] = ContextVar("receval_reference_truth", default=False)


def reference_given() -> bool:
    """True inside :func:`reference_truth` (the caller's context only)."""
    return _GIVEN.get()


@contextmanager
def reference_truth() -> Iterator[None]:
    """Mark the evaluations run inside as reading a reference run as the truth."""
    token = _GIVEN.set(True)
    try:
        yield
    finally:
        _GIVEN.reset(token)
