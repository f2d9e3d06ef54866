"""Interaction logs from files: every format of :mod:`receval.io.files` and the MovieLens logs.

:func:`read_interactions` recognises the file by its content (and RecBole's
by its suffix too) and returns a pandas DataFrame with the columns ``user``,
``item`` and, when the file has them, ``rating`` and ``timestamp``;
:func:`read_log` returns the log as the file holds it (every column, under
its own name: what ``receval split`` writes back):

- MovieLens 1M/10M ``ratings.dat``: ``user::item::rating::timestamp``, no header;
- MovieLens 100k ``u.data``: tab-separated ``user item rating timestamp``, no header;
- MovieLens ``ratings.csv`` (20M, 25M, latest): ``userId,movieId,rating,timestamp``;
- any other file :func:`receval.io.files.read_file` reads (CSV/TSV with a
  header, Parquet, JSON Lines, RecBole ``.inter``, TREC qrels, compressed or
  not), through its table of readers, :data:`receval.io.files.READERS`.

Columns (:func:`log_columns`): the user and item columns are found as for
every input (:func:`receval.io.columns.resolve`: ``user``, ``user_id``,
``userId``, ...); the rating and timestamp columns by :data:`LOG_ALIASES`
(``rating``, ``stars``; ``timestamp``, ``time``, ``date``, ...), names
compared without case, ``_``, ``-`` or spaces. RecBole's typed names
(``rating:float``) are their names without the type.

Ids follow the id rule (:mod:`receval.ids`): text files are read as text
(``1`` and ``1.0`` are the integer 1, ``007`` stays ``"007"``), Parquet is typed.
A leading UTF-8 byte-order mark is skipped (:class:`receval.io.files.Source`).
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.errors import InputError, option, shown
from receval.ids import canonical, from_text
from receval.io.columns import TRAIN, resolve
from receval.io.files import (
    READERS,
    RECBOLE_TYPES,
    Source,
    checked_path,
    format_by_suffix,
    format_of,
    is_number,
    open_source,
    read_source,
)
from receval.records import Columns

__all__ = [
    "LOG_ALIASES",
    "as_frame",
    "as_log",
    "detect_format",
    "log_columns",
    "read_interactions",
    "read_log",
    "read_log_located",
    "time_key",
]

#: Spellings of a log's rating and timestamp columns, in order of preference
#: (user and item: :data:`receval.io.columns.ALIASES`).
LOG_ALIASES: Mapping[str, tuple[str, ...]] = {
    "rating": ("rating", "ratings", "stars"),
    "timestamp": ("timestamp", "time", "ts", "datetime", "date", "event_time"),
}

_ML_COLUMNS = ["user", "item", "rating", "timestamp"]
_MOVIELENS = ("movielens-dat", "movielens-udata", "movielens-csv")


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


# -- columns ----------------------------------------------------------------------------------


def _key(name: str) -> str:
    """A name as compared with aliases (as :mod:`receval.io.columns` compares them)."""
    return "".join(c for c in name.lower() if c not in "_- ")


def _untyped(name: str) -> str:
    """A RecBole field name without its type: ``rating:float`` -> ``rating``."""
    head, colon, kind = name.rpartition(":")
    return head if colon and head and kind in RECBOLE_TYPES else name


def _named(given: str, names: Sequence[str]) -> str | None:
    """The column ``given`` names: itself, or the same name with or without a
    RecBole type (``rating:float`` names a column ``rating`` and the reverse)."""
    if given in names:
        return given
    plain = _untyped(given)
    return next((n for n in names if _untyped(n) == plain), None)


def _no_column(role: str, given: str, names: Sequence[str], source: str) -> InputError:
    close = difflib.get_close_matches(given, list(names), n=1, cutoff=0.5)
    hint = f" — did you mean {close[0]!r}?" if close else ""
    return InputError(
        f"no {role} column {given!r} (columns found: {', '.join(names) or 'none'}){hint}; "
        f"name it with {option(f'{role}_col')}",
        source=source,
        column=given,
    )


def log_columns(
    names: Sequence[str],
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
    source: str = "interactions",
    strict: bool = True,
) -> dict[str, str]:
    """The column of each role of a log: ``user`` and ``item`` (required, found
    by :func:`receval.io.columns.resolve`), ``rating`` and ``timestamp`` (when
    found, by :data:`LOG_ALIASES`). A name given must exist (``strict=False``:
    a rating or timestamp column given and absent is left out); RecBole's
    typed names match their plain names.

    >>> found = log_columns(["user_id:token", "item_id:token", "rating:float", "time"])
    >>> found["user"], found["rating"], found["timestamp"]
    ('user_id:token', 'rating:float', 'time')
    """
    names = [str(n) for n in names]
    plain = [_untyped(n) for n in names]
    back = dict(zip(plain, names, strict=True))
    wanted = {"user": user_col, "item": item_col}
    given = {r: _untyped(_named(c, names) or c) for r, c in wanted.items() if c}
    found = resolve(plain, Columns(**given), TRAIN, source)
    out = {role: back[column] for role, column in found.items()}
    for role, col in (("rating", rating_col), ("timestamp", timestamp_col)):
        if col is not None:
            hit = _named(col, names)
            if hit is None and strict:
                raise _no_column(role, col, names, source)
        else:
            aliases = [_key(a) for a in LOG_ALIASES[role]]
            hits = [n for a in aliases for n in names if _key(_untyped(n)) == a]
            hit = next((n for n in hits if n not in out.values()), None)
        if hit is not None and hit not in out.values():
            out[role] = hit
    return out


def as_log(
    frame: pd.DataFrame,
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
    source: str = "interactions",
    strict: bool = True,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """A log's columns of each role (:func:`log_columns`) under the roles'
    names ``user``, ``item``, ``rating``, ``timestamp`` (only those), and
    role -> the column read.

    >>> log, found = as_log(pd.DataFrame({"userId": [1], "movieId": [2], "stars": [5]}))
    >>> list(log.columns), found["rating"]
    (['user', 'item', 'rating'], 'stars')
    """
    labels = {str(c): c for c in frame.columns}
    found = log_columns(
        list(labels),
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        timestamp_col=timestamp_col,
        source=source,
        strict=strict,
    )
    out = frame[[labels[c] for c in found.values()]].copy()
    out.columns = list(found)
    return out, found


# -- formats ----------------------------------------------------------------------------------


def _first_line(head: bytes) -> str:
    raw = head.split(b"\n", 1)[0]
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def detect_format(path: str | Path) -> str:
    """The format of an interactions file: ``movielens-dat`` (``ratings.dat``),
    ``movielens-udata`` (``u.data``), ``movielens-csv`` (``ratings.csv``), or
    a format of :data:`receval.io.files.READERS` (``parquet``, ``recbole``,
    ``csv``, ``tsv``, ``jsonl``, ``trec``).

    The content decides (the name too for RecBole's ``.inter``, ``.item``,
    ``.user`` and the formats it tells, when the content is no MovieLens log).
    """
    return _detect(Source(Path(path)), Path(path))


def _detect(source: Source, path: Path) -> str:
    head = source.head
    if head[:4] == b"PAR1":
        return "parquet"
    if format_by_suffix(path) == "recbole":
        return "recbole"
    line = _first_line(head)
    if "::" in line:
        return "movielens-dat"
    fields = line.split("\t")
    if len(fields) in (3, 4) and all(is_number(f) for f in fields):
        return "movielens-udata"
    if [f.strip().strip('"') for f in line.split(",")][:2] == ["userId", "movieId"]:
        return "movielens-csv"
    try:
        return format_of(path, head)
    except InputError:  # no suffix tells it: a delimited file
        return "tsv" if "\t" in line else "csv"


# -- reading ----------------------------------------------------------------------------------


def read_interactions(
    path: str | Path,
    *,
    format: str = "auto",
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
) -> pd.DataFrame:
    """Read an interaction log into a DataFrame (``user``, ``item``, [``rating``], [``timestamp``]).

    Args:
        path: the file.
        format: ``auto`` (see :func:`detect_format`) or one of its names.
        user_col, item_col: the user and item columns (None: detected,
            e.g. ``userId``, ``item_id``); an explicit name must exist.
        rating_col, timestamp_col: the rating and timestamp columns, kept when
            present (None: detected, :data:`LOG_ALIASES`). They are renamed to
            ``user``, ``item``, ``rating`` and ``timestamp``.

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
    frame, name = _read(path, format, None, user_col, item_col)
    log, _ = as_log(
        frame,
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        timestamp_col=timestamp_col,
        source=name,
        strict=False,
    )
    return log


def read_log(
    path: str | Path,
    *,
    format: str = "auto",
    sep: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
) -> pd.DataFrame:
    """An interaction log as the file holds it: every column, under its own
    name (RecBole's without their ``:type``; MovieLens ``u.data`` and
    ``ratings.dat``, which have no header: ``user``, ``item``, ``rating``,
    ``timestamp``), the user and item columns' ids under the id rule.

    Args:
        path: the file (``-``: the standard input).
        format: ``auto`` (:func:`detect_format`) or one of its names.
        sep: the delimiter of a CSV file (None: detected).
        user_col, item_col: the user and item columns (None: detected).

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d, "log.csv")
        ...     _ = p.write_text("user_id,item_id,when\\n1,007,3\\n")
        ...     log = read_log(p)
        >>> list(log.columns), log["item_id"].tolist()
        (['user_id', 'item_id', 'when'], ['007'])
    """
    return _read(path, format, sep, user_col, item_col)[0]


def read_log_located(
    path: str | Path,
    *,
    format: str = "auto",
    sep: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
) -> tuple[pd.DataFrame, Callable[[InputError], InputError]]:
    """:func:`read_log`, and a function that turns an error about a row of the
    log (read later: a timestamp a split cannot read) into one naming the file
    and its line (or its row, for a file of no lines)."""
    frame, name, info = _read_info(path, format, sep, user_col, item_col)

    def located(exc: InputError) -> InputError:
        if info is not None:
            return info.locate(exc)
        return exc.located(source=name)

    return frame, located


def _read(
    path: str | Path, fmt: str, sep: str | None, user_col: str | None, item_col: str | None
) -> tuple[pd.DataFrame, str]:
    frame, name, _ = _read_info(path, fmt, sep, user_col, item_col)
    return frame, name


def _read_info(
    path: str | Path, fmt: str, sep: str | None, user_col: str | None, item_col: str | None
) -> tuple[pd.DataFrame, str, Any]:
    """The whole log with the file's column names, the file's name, and the
    :class:`~receval.io.files.FileInfo` of its reading (None: MovieLens's files)."""
    p, name = checked_path(path)  # exists, is a file, is not empty
    if fmt != "auto" and fmt not in _MOVIELENS and fmt not in READERS:
        raise InputError(
            f"unknown interactions format {fmt!r} (choose from auto, "
            f"{', '.join([*READERS, *_MOVIELENS])})",
            source=name,
        )
    source = open_source(p, name, fmt)  # a pipe is read once, here (None: a Parquet file)
    if source is None:
        fmt = "parquet"
    elif fmt == "auto":
        fmt = _detect(source, p)
    if fmt not in _MOVIELENS:
        if fmt == "recbole":  # its names are read without their types
            user_col, item_col = (_untyped(c) if c else c for c in (user_col, item_col))
        cols = Columns(user=user_col, item=item_col)
        table, info = read_source(p, name, source, role="log", fmt=fmt, sep=sep, cols=cols)
        back = dict(info.columns)
        frame = table.to_pandas().rename(columns=back)
        if READERS[info.format].ids != "text":  # typed ids (text ones are read so already)
            for role in ("user", "item"):
                values = frame[back[role]].to_numpy()
                frame[back[role]] = canonical(values, role, name)
        return frame, name, info
    assert source is not None
    try:
        return _read_movielens(source, name, fmt), name, None
    except UnicodeDecodeError as exc:
        line = source.read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 text (byte {exc.object[exc.start]:#04x}): is it an interactions log?",
            source=name,
            line=line,
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError("no data (only blank lines?)", source=name) from None
    except pd.errors.ParserError as exc:
        raise InputError(f"cannot read as {fmt}: {str(exc).splitlines()[0]}", source=name) from None


def _read_movielens(src: Source, name: str, fmt: str) -> pd.DataFrame:
    """A MovieLens log: ``user``, ``item``, ``rating``, ``timestamp`` (ratings.csv:
    its own names, ``userId``, ``movieId``, ...), ids under the text rule."""
    text_ids = {0: str, 1: str}
    if fmt == "movielens-dat":
        data = src.read_bytes().replace(b"::", b"\t")
        frame = pd.read_csv(io.BytesIO(data), sep="\t", header=None, dtype=text_ids)
        return _ids(_name_ml(frame, name, fmt), name, {"user": "user", "item": "item"})
    if fmt == "movielens-udata":
        frame = pd.read_csv(src.reader(), sep="\t", header=None, dtype=text_ids)
        return _ids(_name_ml(frame, name, fmt), name, {"user": "user", "item": "item"})
    frame = pd.read_csv(src.reader(), dtype={"userId": str, "movieId": str})
    return _ids(frame, name, {"user": "userId", "item": "movieId"})


def _ids(frame: pd.DataFrame, source: str, columns: Mapping[str, str]) -> pd.DataFrame:
    """The user and item columns (role -> column) under the text rule."""
    for role, column in columns.items():
        if column not in frame.columns:
            found = ", ".join(map(str, frame.columns))
            raise InputError(f"no {role} column {column!r} (columns found: {found})", source=source)
        values = pa.array(frame[column].to_numpy(dtype=object), from_pandas=True)
        frame[column] = from_text(values, role, source)
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


#: text pandas counts as no value when it looks for a column's first date
_NO_DATE = frozenset({"", "NaT", "nat", "NAT", "nan", "NaN", "NAN"})


def time_key(values: pd.Series, what: str, source: str) -> np.ndarray:
    """A column of times as sortable numbers: numbers as they are (float64),
    dates as int64 nanoseconds; text of numbers only (``"9"``, as a JSON file
    or a string column holds them) as numbers, as a CSV file's column of the
    same characters is read, other text as dates (:func:`_as_dates`). So the
    order of events never depends on how the times were written. A missing,
    non-finite or unreadable time is an :class:`InputError` naming its row
    and the value (``what``: the column, as the error says it).

    Example:
        >>> time_key(pd.Series(["9", "10", "11"]), "time", "sessions").tolist()
        [9.0, 10.0, 11.0]
    """
    s = values
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        numbers = pd.to_numeric(s, errors="coerce")
        s = numbers if bool((numbers.notna() | s.isna()).all()) else _as_dates(s, what, source)
    if pd.api.types.is_datetime64_any_dtype(s):
        bad = s.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(f"missing value in {what}", source=source, row=row)
        return s.to_numpy().astype("datetime64[ns]").astype(np.int64)
    try:
        out = s.to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        raise InputError(f"{what} must hold numbers or dates", source=source) from None
    bad = ~np.isfinite(out)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"missing or non-finite value in {what}", source=source, row=row)
    return out


def _as_dates(s: pd.Series, what: str, source: str) -> pd.Series:
    """A text column of times read as dates, as ``pd.to_datetime`` reads it:
    in the format of its first value, else each value on its own (``format=
    "mixed"``, what pandas falls back to, said here so that pandas warns
    nothing: no warning filter is touched). A value that is no date is an
    :class:`InputError` naming its row and the value."""
    try:
        from pandas.tseries.api import guess_datetime_format
    except ImportError:  # pandas < 2.2: where it was before it was public
        from pandas._libs.tslibs.parsing import guess_datetime_format

    def missing(v: Any) -> bool:
        if isinstance(v, str):
            return v in _NO_DATE
        return bool(pd.api.types.is_scalar(v) and pd.isna(v))

    first = next((v for v in s.to_numpy(dtype=object) if not missing(v)), None)
    guessed = guess_datetime_format(first) if type(first) is str else None
    fmt = "mixed" if type(first) is str and guessed is None else None
    try:
        return pd.to_datetime(s, format=fmt)
    except (ValueError, TypeError, OverflowError):
        pass
    numbers = pd.to_numeric(s, errors="coerce")
    dates = pd.to_datetime(s, format=guessed or "mixed", errors="coerce")  # as read above
    as_numbers = int(numbers.notna().sum()) > int(dates.notna().sum())
    bad = (s.notna() & (numbers if as_numbers else dates).isna()).to_numpy()
    if not bad.any():  # pragma: no cover - each value read as pandas read it
        raise InputError(f"{what} holds values that are neither numbers nor dates", source=source)
    row = int(np.flatnonzero(bad)[0])
    if as_numbers:
        why = "neither a number nor a date (its other values are numbers)"
    elif guessed is not None:
        why = f"not a date in the format of its first value {shown(first)} ({guessed})"
    else:
        why = "neither a number nor a date"
    raise InputError(f"{what} holds {shown(s.iloc[row])}: {why}", source=source, row=row)
