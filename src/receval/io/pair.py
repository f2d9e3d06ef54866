"""An evaluation's two inputs opened together, in the form of their engine.

:func:`open_pair` is the one way in of ``receval.evaluate`` (and of every
command built on it): the recommendations and the truth, whatever each is (a
path of any format, a table, a mapping, a Spark DataFrame), become one of the
forms of :mod:`receval.records`, from which :func:`receval.engines.engine_for`
chooses the engine:

- :class:`~receval.records.SparkRows` when either is a Spark DataFrame
  (:func:`receval.io.spark_files.opened`);
- :class:`~receval.io.stream.StreamedFiles` (a :class:`~receval.records.PairSource`)
  for two Parquet files, or two tables sorted by user: read chunk by chunk;
- :class:`~receval.records.Tables` otherwise: the truth read whole, the
  recommendations in chunks of complete users.

An error about a row of a file names the file and its line
(:meth:`OpenedPair.located`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from receval.errors import InputError
from receval.io import files, spark_files, stream
from receval.io.tables import iter_recs, read_truth
from receval.records import Columns, RecsData, Tables

__all__ = ["OpenedPair", "open_pair"]


@dataclass
class OpenedPair:
    """Both inputs opened.

    Attributes:
        inputs: the engine's form (:class:`~receval.records.Tables`,
            :class:`~receval.records.PairSource` or
            :class:`~receval.records.SparkRows`).
        sources: each input as opened (the table, or mapping, and the columns
            to read it with), to evaluate a subset of users again; None on Spark.
        infos: the :class:`~receval.io.files.FileInfo` of each input read from
            a file here (None: not a file read here).
    """

    inputs: Any = None
    sources: tuple[tuple[Any, Columns], tuple[Any, Columns]] | None = None
    infos: tuple[Any, Any] = (None, None)
    found: Callable[[], tuple[dict[str, str], dict[str, str]]] = field(default=lambda: ({}, {}))

    def columns(self) -> tuple[dict[str, str], dict[str, str]]:
        """The column read for each role of each input (role -> column),
        known once the inputs have been read."""
        return self.found()

    @contextmanager
    def located(self) -> Iterator[None]:
        """An :class:`InputError` about a row of an input file, raised inside,
        names the file and its line."""
        try:
            yield
        except InputError as exc:
            for role, info in zip(("recommendations", "truth"), self.infos, strict=True):
                if info is not None and exc.source in (info.path, role):
                    raise info.locate(exc) from None
            raise


class _Chunks:
    """The recommendation chunks, remembering the columns the first was read from."""

    def __init__(self, chunks: Iterable[tuple[RecsData, int]]) -> None:
        self._chunks = chunks
        self.columns: dict[str, str] = {}

    def __iter__(self) -> Iterator[tuple[RecsData, int]]:
        for recs, offset in self._chunks:
            self.columns = self.columns or dict(recs.columns)
            yield recs, offset


def open_pair(
    recommendations: Any,
    truth: Any,
    cols: Columns,
    *,
    graded: bool = True,
    grade_cut: float | None = None,
    negative_grades: str = "error",
    train: Any = None,
    partitions: int | None = None,
) -> OpenedPair:
    """The recommendations and the truth opened together (see the module's
    docstring). ``graded``/``grade_cut``: whether the truth's grades are read
    (:class:`~receval.EvalOptions`); ``train``: a Spark DataFrame of training
    pairs joined to each partition's users (Spark inputs only)."""
    if spark_files.is_spark(recommendations) or spark_files.is_spark(truth):
        rows, rfound, tfound = spark_files.opened(
            recommendations,
            truth,
            cols,
            graded=graded,
            grade_cut=grade_cut,
            negative_grades=negative_grades,
            train=train,
            partitions=partitions,
        )
        return OpenedPair(rows, found=lambda: (rfound, tfound))
    with files.compact_ids():  # text ids as codes: the engine reads them under the id rule
        (recs, rcols, rinfo), (tr_in, tcols, tinfo), streams = stream.opened_pair(
            recommendations, truth, cols
        )
    out = OpenedPair(sources=((recs, rcols), (tr_in, tcols)), infos=(rinfo, tinfo))
    with out.located():
        if streams is None:  # tables sorted by user merge like sorted files
            streams = stream.sorted_tables(recs, tr_in, rcols, tcols)
        if streams is not None:
            r, t = streams
            out.inputs = stream.StreamedFiles(r, t, graded=graded, negative_grades=negative_grades)
            out.found = lambda: (r.info.columns, t.info.columns)
            return out
        names = [
            info.path if info else role
            for role, info in zip(("recommendations", "truth"), (rinfo, tinfo), strict=True)
        ]
        t_data = read_truth(tr_in, tcols, names[1], negative_grades=negative_grades)
        chunks = _Chunks(iter_recs(recs, rcols, source=names[0]))
    out.inputs = Tables(chunks, t_data)
    out.found = lambda: (chunks.columns, t_data.columns)
    return out
