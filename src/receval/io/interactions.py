"""Interaction logs from files: CSV, Parquet and the MovieLens formats.

:func:`read_interactions` recognises the file by its content and returns a
pandas DataFrame with the columns ``user``, ``item`` and, when the file has
them, ``rating`` and ``timestamp``:

- ``*.parquet`` / ``*.pq``: read as is;
- MovieLens 1M/10M ``ratings.dat``: ``user::item::rating::timestamp``, no header;
- MovieLens 100k ``u.data``: tab-separated ``user item rating timestamp``, no header;
- MovieLens ``ratings.csv`` (20M, 25M, latest): ``userId,movieId,rating,timestamp``;
- any other CSV/TSV with a header naming the user and item columns (detected
  as for every input, :mod:`receval.io.columns`: ``user``, ``user_id``,
  ``userId``, ...; ``rating`` and ``timestamp`` are kept when present).

Ids follow the id rule (:mod:`receval.ids`): text files are read as text
(``1`` and ``1.0`` are the integer 1, ``007`` stays ``"007"``), Parquet is typed.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from receval.errors import InputError
from receval.ids import canonical, from_text
from receval.io.columns import TRAIN, resolve
from receval.io.files import Source, is_number
from receval.records import Columns

__all__ = ["as_frame", "detect_format", "read_interactions"]

_ML_COLUMNS = ["user", "item", "rating", "timestamp"]
_ML_CSV = {"userId": "user", "movieId": "item", "rating": "rating", "timestamp": "timestamp"}


def as_frame(obj: Any, what: str) -> pd.DataFrame:
    """A pandas DataFrame from a pandas, polars or pyarrow table (not copied when pandas).

    >>> as_frame(pd.DataFrame({"user": [1]}), "train").shape
    (1, 1)
    """
    if isinstance(obj, pd.DataFrame):
        return obj
    to_pandas = getattr(obj, "to_pandas", None)
    if callable(to_pandas):
        frame = to_pandas()
        if isinstance(frame, pd.DataFrame):
            return frame
    raise InputError(f"{what} must be a pandas, polars or pyarrow table; got {type(obj).__name__}")


def _first_line(head: bytes) -> str:
    raw = head.split(b"\n", 1)[0]
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def detect_format(path: str | Path) -> str:
    """The format of an interactions file: ``parquet``, ``movielens-dat``
    (``ratings.dat``), ``movielens-udata`` (``u.data``), ``movielens-csv``
    (``ratings.csv``), ``csv`` or ``tsv`` (a header line).

    The content decides, not the name (except for Parquet's magic bytes).
    """
    return _detect(Source(Path(path)))


def _detect(source: Source) -> str:
    head = source.head
    if head[:4] == b"PAR1":
        return "parquet"
    line = _first_line(head)
    if "::" in line:
        return "movielens-dat"
    if "\t" in line:
        fields = line.split("\t")
        if len(fields) in (3, 4) and all(is_number(f) for f in fields):
            return "movielens-udata"
        return "tsv"
    fields = [f.strip().strip('"') for f in line.split(",")]
    if fields[:2] == ["userId", "movieId"]:
        return "movielens-csv"
    return "csv"


def read_interactions(
    path: str | Path,
    *,
    format: str = "auto",
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str = "rating",
    timestamp_col: str = "timestamp",
) -> pd.DataFrame:
    """Read an interaction log into a DataFrame (``user``, ``item``, [``rating``], [``timestamp``]).

    Args:
        path: the file.
        format: ``auto`` (see :func:`detect_format`) or one of its names.
        user_col, item_col: the user and item columns of a generic
            CSV/TSV/Parquet file (None: detected, e.g. ``userId``, ``item_id``);
            rating_col, timestamp_col: its rating and timestamp columns, kept
            when present. They are renamed to ``user``, ``item``, ``rating``
            and ``timestamp``.

    Returns:
        The log; ``user`` and ``item`` hold ids under the id rule (int64, or
        strings when any id of the column is not an integer).

    Raises:
        InputError: the file lacks a user or an item column, an id is
            missing, or a MovieLens line does not have 3–4 fields.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d, "u.data")
        ...     _ = p.write_text("196\\t242\\t3\\t881250949\\n186\\t302\\t3\\t891717742\\n")
        ...     log = read_interactions(p)
        >>> list(log.columns), log["item"].tolist()
        (['user', 'item', 'rating', 'timestamp'], [242, 302])
    """
    from receval.io.files import checked_path

    p, name = checked_path(path)  # exists, is a file, is not empty
    source = Source(p)  # a pipe is read once, here
    if source.data is not None and not source.head:
        raise InputError("the file is empty (nothing came through the pipe)", source=name)
    fmt = _detect(source) if format == "auto" else format
    try:
        return _read_log(source, name, fmt, user_col, item_col, rating_col, timestamp_col)
    except UnicodeDecodeError as exc:
        line = source.read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 text (byte {exc.object[exc.start]:#04x}): is it an interactions log?",
            source=name,
            line=line,
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError("no data (only blank lines?)", source=name) from None
    except pa.ArrowInvalid as exc:
        raise InputError(f"not a readable Parquet file ({exc})", source=name) from None
    except pd.errors.ParserError as exc:
        raise InputError(f"cannot read as {fmt}: {str(exc).splitlines()[0]}", source=name) from None


def _read_log(
    src: Source,
    name: str,
    fmt: str,
    user_col: str | None,
    item_col: str | None,
    rating_col: str,
    timestamp_col: str,
) -> pd.DataFrame:
    text_ids = {0: str, 1: str}
    if fmt == "movielens-dat":
        data = src.read_bytes().replace(b"::", b"\t")
        frame = pd.read_csv(io.BytesIO(data), sep="\t", header=None, dtype=text_ids)
        return _ids(_name_ml(frame, name, fmt), name, text=True)
    if fmt == "movielens-udata":
        frame = pd.read_csv(src.reader(), sep="\t", header=None, dtype=text_ids)
        return _ids(_name_ml(frame, name, fmt), name, text=True)
    if fmt == "movielens-csv":
        frame = pd.read_csv(src.reader(), dtype={"userId": str, "movieId": str}).rename(
            columns=_ML_CSV
        )
        frame = frame[[c for c in _ML_CSV.values() if c in frame.columns]]
        return _ids(frame, name, text=True)
    cols = Columns(user=user_col, item=item_col)
    if fmt == "parquet":
        frame = pd.read_parquet(src.reader())
        found = resolve([str(c) for c in frame.columns], cols, TRAIN, name)
    elif fmt in ("csv", "tsv"):
        sep = "\t" if fmt == "tsv" else ","
        header = pd.read_csv(src.reader(), sep=sep, nrows=0).columns
        found = resolve([str(c) for c in header], cols, TRAIN, name)
        frame = pd.read_csv(src.reader(), sep=sep, dtype={found["user"]: str, found["item"]: str})
    else:
        raise InputError(
            f"unknown interactions format {fmt!r} (choose from auto, parquet, csv, tsv, "
            "movielens-dat, movielens-udata, movielens-csv)",
            source=name,
        )
    names = {
        found["user"]: "user",
        found["item"]: "item",
        rating_col: "rating",
        timestamp_col: "timestamp",
    }
    keep = [c for c in names if c in frame.columns]
    return _ids(frame[keep].rename(columns=names), name, text=fmt != "parquet")


def _ids(frame: pd.DataFrame, source: str, text: bool) -> pd.DataFrame:
    """The user and item columns under the id rule (text files: the text rule)."""
    for role in ("user", "item"):
        values = frame[role]
        if text:
            ids = from_text(pa.array(values.to_numpy(dtype=object), from_pandas=True), role, source)
        else:
            ids = canonical(values.to_numpy(), role, source)
        frame[role] = ids
    return frame


def _name_ml(frame: pd.DataFrame, name: str, fmt: str) -> pd.DataFrame:
    if frame.shape[1] not in (3, 4):
        raise InputError(
            f"a {fmt} file has 3 or 4 fields per line (user, item, rating, timestamp); "
            f"found {frame.shape[1]}",
            source=name,
        )
    frame.columns = _ML_COLUMNS[: frame.shape[1]]
    return frame
