"""Which door is running: the metrics only one entry point may run.

A metric declared with ``MetricDef.door`` (:data:`receval.metrics.registry.DOORS`)
reads an input that only that entry point builds: the agreement metrics
(:mod:`receval.metrics.kernels.agreement`) read the truth's grades as the ranks of
a reference run, which only :func:`receval.agreement` encodes; the intent-aware
ones (:mod:`receval.metrics.intent`) read one subtopic's judgments at a time,
which only :func:`receval.intent_aware` splits and adds up. The door marks its
own evaluation with :func:`through_door`;
:func:`~receval.evaluation.api.check_inputs` refuses those metrics anywhere else
and names the door, so that no one computes the rank-biased overlap of a qrels
file by accident.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["door_open", "reference_given", "reference_truth", "through_door"]

_OPEN: ContextVar[frozenset[str]] = ContextVar("receval_open_doors", default=frozenset())


def door_open(door: str) -> bool:
    """True inside :func:`through_door` ``(door)`` (the caller's context only)."""
    return door in _OPEN.get()


@contextmanager
def through_door(door: str) -> Iterator[None]:
    """Mark the evaluations run inside as those of ``door`` (a key of
    :data:`receval.metrics.registry.DOORS`): its metrics may run there."""
    token = _OPEN.set(_OPEN.get() | {door})
    try:
        yield
    finally:
        _OPEN.reset(token)


def reference_given() -> bool:
    """True inside :func:`reference_truth` (``door_open("agreement")``)."""
    return door_open("agreement")


@contextmanager
def reference_truth() -> Iterator[None]:
    """Mark the evaluations run inside as reading a reference run as the truth
    (``through_door("agreement")``)."""
    with through_door("agreement"):
        yield
