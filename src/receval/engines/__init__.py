"""Engines turn opened inputs into per-user arrays and run the kernels on them.

:mod:`receval.engines.base` says what an engine is (prepare, evaluate each
part, combine); the engines are :class:`~receval.engines.local.InProcess`
(tables in memory, cut into chunks of users),
:class:`~receval.engines.local.Streamed` (files read chunk by chunk of users),
:class:`~receval.engines.spark.Spark` (partitions of users on a Spark
session) and :class:`~receval.engines.local.Batches` (the batches of an
:class:`~receval.Accumulator`). :func:`engine_for` chooses one by the form of
the inputs :mod:`receval.io` opened (:mod:`receval.records`).
"""

from __future__ import annotations

from typing import Any

from receval.engines import local, spark
from receval.engines.base import ENGINES, Engine

__all__ = ["ENGINES", "Engine", "engine_for", "local", "spark"]


def engine_for(inputs: Any) -> Engine:
    """The engine of these opened inputs: the first registered engine
    (:data:`~receval.engines.base.ENGINES`) that accepts their form.

    Example:
        >>> from receval.records import Tables
        >>> engine_for(Tables([], None)).name
        'in_process'
    """
    for engine in ENGINES:
        if engine.accepts(inputs):
            return engine(inputs)
    raise TypeError(f"no engine evaluates inputs of the form {type(inputs).__name__}")
