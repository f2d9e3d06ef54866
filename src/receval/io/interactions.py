"""Interaction logs from files: CSV, Parquet and the MovieLens formats.

:func:`read_interactions` recognises the file by its content and returns a
pandas DataFrame with the columns ``user``, ``item`` and, when the file has
them, ``rating`` and ``timestamp``:

- ``*.parquet`` / ``*.pq``: read as is;
- MovieLens 1M/10M ``ratings.dat``: ``user::item::rating::timestamp``, no header;
- MovieLens 100k ``u.data``: tab-separated ``user item rating timestamp``, no header;
- MovieLens ``ratings.csv`` (20M, 25M, latest): ``userId,movieId,rating,timestamp``;
- any other CSV/TSV with a header naming the user and item columns (default
  ``user`` and ``item``; ``rating`` and ``timestamp`` are kept when present).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd

from receval.errors import InputError, option

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


def _first_line(path: Path) -> str:
    with path.open("rb") as fh:
        raw = fh.readline(65536)
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def detect_format(path: str | Path) -> str:
    """The format of an interactions file: ``parquet``, ``movielens-dat``
    (``ratings.dat``), ``movielens-udata`` (``u.data``), ``movielens-csv``
    (``ratings.csv``), ``csv`` or ``tsv`` (a header line).

    The content decides, not the name (except for Parquet's magic bytes).
    """
    path = Path(path)
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1":
        return "parquet"
    line = _first_line(path)
    if "::" in line:
        return "movielens-dat"
    if "\t" in line:
        fields = line.split("\t")
        if len(fields) in (3, 4) and all(_is_number(f) for f in fields):
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
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    timestamp_col: str = "timestamp",
) -> pd.DataFrame:
    """Read an interaction log into a DataFrame (``user``, ``item``, [``rating``], [``timestamp``]).

    Args:
        path: the file.
        format: ``auto`` (see :func:`detect_format`) or one of its names.
        user_col, item_col, rating_col, timestamp_col: the column names of a
            generic CSV/TSV/Parquet file; they are renamed to ``user``,
            ``item``, ``rating`` and ``timestamp``.

    Raises:
        InputError: the file lacks a user or an item column, or a MovieLens
            line does not have 3–4 fields.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d, "u.data")
        ...     _ = p.write_text("196\\t242\\t3\\t881250949\\n186\\t302\\t3\\t891717742\\n")
        ...     log = read_interactions(p)
        >>> list(log.columns), log["item"].tolist()
        (['user', 'item', 'rating', 'timestamp'], [242, 302])
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such file: {p}")
    fmt = detect_format(p) if format == "auto" else format
    if fmt == "movielens-dat":
        text = p.read_bytes().replace(b"::", b"\t")
        frame = pd.read_csv(io.BytesIO(text), sep="\t", header=None)
        return _name_ml(frame, p, fmt)
    if fmt == "movielens-udata":
        frame = pd.read_csv(p, sep="\t", header=None)
        return _name_ml(frame, p, fmt)
    if fmt == "movielens-csv":
        frame = pd.read_csv(p).rename(columns=_ML_CSV)
        return frame[[c for c in _ML_CSV.values() if c in frame.columns]]
    if fmt == "parquet":
        frame = pd.read_parquet(p)
    elif fmt in ("csv", "tsv"):
        frame = pd.read_csv(p, sep="\t" if fmt == "tsv" else ",")
    else:
        raise InputError(
            f"unknown interactions format {fmt!r} (choose from auto, parquet, csv, tsv, "
            "movielens-dat, movielens-udata, movielens-csv)",
            source=str(p),
        )
    names = {user_col: "user", item_col: "item", rating_col: "rating", timestamp_col: "timestamp"}
    for col, role in ((user_col, "user"), (item_col, "item")):
        if col not in frame.columns:
            found = ", ".join(map(str, frame.columns))
            raise InputError(
                f"no {role} column {col!r} (columns found: {found}); name it with "
                + option(role + "_col"),
                source=str(p),
            )
    keep = [c for c in names if c in frame.columns]
    return frame[keep].rename(columns=names)


def _name_ml(frame: pd.DataFrame, path: Path, fmt: str) -> pd.DataFrame:
    if frame.shape[1] not in (3, 4):
        raise InputError(
            f"a {fmt} file has 3 or 4 fields per line (user, item, rating, timestamp); "
            f"found {frame.shape[1]}",
            source=str(path),
        )
    frame.columns = _ML_COLUMNS[: frame.shape[1]]
    return frame
