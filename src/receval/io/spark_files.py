"""Files read by Spark (the command line's ``--engine spark``): the Spark
side of receval's one table of readers (:data:`receval.io.files.READERS`).

Each format of that table has its Spark reader here, keyed by the same name,
so a format is added in one place for both engines (docs/contributing.md).
Spark is imported only when a reader runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from receval.errors import InputError

__all__ = ["format_of", "read"]


#: the columns of TREC files (whitespace-separated, no header), by role
_TREC = {
    "recommendations": ("user", "q0", "item", "rank", "score", "tag"),
    "truth": ("user", "iteration", "item", "relevance"),
}


#: compression suffixes Spark reads (skipped before a file's format suffix)
_COMPRESSIONS = (".gz", ".bz2", ".zst", ".zstd", ".snappy")


def format_of(path: str, fmt: str = "auto") -> str:
    """The format of a file or folder Spark reads: given, or told by its suffix
    through receval's one table of formats (:data:`receval.io.files.READERS`;
    a folder of part files: by the suffix of its name, else Parquet, what
    Spark writes by default)."""
    from receval.io.files import format_by_suffix

    if fmt != "auto":
        return fmt
    return format_by_suffix(path, _COMPRESSIONS) or "parquet"


def read(spark: Any, path: str, role: str, fmt: str = "auto", sep: str | None = None) -> Any:
    """A file (local, HDFS, S3, any path Spark understands) as a Spark
    DataFrame with the file's own column names (RecBole's without their
    types): each format of :data:`receval.io.files.READERS` by its reader in
    :data:`_READERS` (Parquet, CSV/TSV with a header line, JSON Lines, TREC
    run/qrels by ``role``, RecBole atomic files). A path Spark cannot read is
    an :class:`InputError` naming it."""
    kind = format_of(path, fmt)
    if kind not in _READERS:
        raise InputError(f"unknown format {kind!r}: expected {', '.join(_READERS)}", source=path)
    try:
        return _READERS[kind](spark, path, role, sep)
    except Exception as exc:  # Spark's AnalysisException: no such path, unreadable file
        if type(exc).__module__.startswith(("pyspark.", "py4j.")):
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"Spark cannot read it as {kind}: {reason}", source=path) from None
        raise


def _delimited(kind: str) -> Callable[[Any, str, str, str | None], Any]:
    """Spark's reader of a delimited format with a header line (CSV, TSV)."""

    def read_delimited(spark: Any, path: str, role: str, sep: str | None) -> Any:
        from receval.io.files import READERS

        delimiter = sep or READERS[kind].sep or ","
        return spark.read.csv(path, header=True, inferSchema=True, sep=delimiter)

    return read_delimited


def _recbole(spark: Any, path: str, role: str, sep: str | None) -> Any:
    """A RecBole atomic file: names without their ``:type``, ``float`` columns
    as doubles, ``token`` (ids) and sequence columns as text."""
    from pyspark.sql import functions as F

    from receval.io.files import READERS, recbole_header

    df = spark.read.csv(path, header=True, inferSchema=False, sep=sep or READERS["recbole"].sep)
    names, kinds = recbole_header(df.columns, path)
    columns = []
    for raw, name, kind in zip(df.columns, names, kinds, strict=True):
        column = F.col(f"`{raw}`")
        columns.append((column.cast("double") if kind == "float" else column).alias(name))
    return df.select(*columns)


def _trec(spark: Any, path: str, role: str, sep: str | None = None) -> Any:
    from pyspark.sql import functions as F

    names = _TREC["recommendations" if role == "recommendations" else "truth"]
    fields = F.split(F.trim(F.col("value")), r"\s+")
    lines = spark.read.text(path).where(F.length(F.trim(F.col("value"))) > 0)
    columns = [fields.getItem(i).alias(name) for i, name in enumerate(names)]
    df = lines.select(*columns)
    if role == "recommendations":
        return df.select("user", "item", F.col("rank").cast("long"), F.col("score").cast("double"))
    return df.select("user", "item", F.col("relevance").cast("double"))


#: Spark's reader of each format, keyed by the names of :data:`receval.io.files.READERS`
#: (spark, path, role, sep) -> a Spark DataFrame.
_READERS: dict[str, Callable[[Any, str, str, str | None], Any]] = {
    "parquet": lambda spark, path, role, sep: spark.read.parquet(path),
    "recbole": _recbole,
    "trec": _trec,
    "jsonl": lambda spark, path, role, sep: spark.read.json(path),
    "csv": _delimited("csv"),
    "tsv": _delimited("tsv"),
}
