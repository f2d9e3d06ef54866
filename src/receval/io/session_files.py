"""Files of next-item lists and test sessions (``receval next-items``), read
under receval's id rule and located row by row as every file receval reads."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from receval.errors import InputError, OptionError


class SessionFile:
    """What :func:`_read` found in a file: the session and item columns, the
    format, and where each row is in the file (:meth:`locate`)."""

    def __init__(self, session: str, item: str, info: Any) -> None:
        self.session, self.item, self.info = session, item, info
        self.format = info.format

    def locate(self, exc: InputError) -> InputError:
        return self.info.locate(exc)


def read_session_file(
    path: str,
    fmt: str,
    sep: str | None,
    cols: Mapping[str, str | None],
    spellings: Mapping[str, Sequence[str]],
) -> tuple[Any, SessionFile]:
    """A file of next-item lists or test sessions (``receval next-items``) as a
    pandas table: every column under its own name, the session and item
    columns' ids under receval's id rule (as every file receval reads), the
    others as the reader types them. ``fmt``: auto, csv, tsv, parquet or
    jsonl; ``cols``: the session and item columns given (None: the first of
    ``spellings[role]`` found, case-insensitive)."""
    import pandas as pd

    from receval.ids import canonical
    from receval.io.files import READERS, check_sep, checked_path, open_source, read_source
    from receval.records import Columns

    check_sep(sep)
    p, name = checked_path(path)
    source = open_source(p, name, fmt)
    header = _header(p, name, source, fmt, sep)
    session = _column(header, "session", cols["session"], name, spellings)
    item = _column(header, "item", cols["item"], name, spellings)
    columns = Columns(user=session, item=item)
    table, info = read_source(p, name, source, role="log", fmt=fmt, sep=sep, cols=columns)
    typed = READERS[info.format].ids != "text"  # typed ids (text ones are read so already)
    roles = {session: "session", item: "item"}
    back = dict(info.columns)
    data: dict[str, Any] = {}
    for column in table.column_names:
        own = back.get(column, column)
        if typed and own in roles:
            data[own] = canonical(table.column(column), roles[own], name)
        else:
            data[own] = table.column(column).to_pandas()
    return pd.DataFrame(data, copy=False), SessionFile(session, item, info)


def _header(p: Path, name: str, source: Any, fmt: str, sep: str | None) -> list[str]:
    """The column names of a file, from its schema or its first line."""
    if source is None:  # Parquet, read from its path
        import pyarrow.parquet as pq

        return list(pq.read_schema(p).names)
    head = source.head
    try:
        first = head.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=name, line=1) from None
    if fmt == "jsonl" or (fmt == "auto" and head.lstrip()[:1] == b"{"):
        try:
            return [str(c) for c in json.loads(first)]
        except (ValueError, TypeError):
            raise InputError("the first line is not a JSON object", source=name, line=1) from None
    if fmt not in ("auto", "csv", "tsv"):
        raise OptionError("format", fmt, allowed=("auto", "csv", "tsv", "parquet", "jsonl"))
    from receval.io.files import header_fields, sniff_sep

    if sep is None:
        sep = "\t" if fmt == "tsv" else sniff_sep(first)
    return header_fields(first, sep)


def _column(
    header: list[str],
    role: str,
    given: str | None,
    name: str,
    spellings: Mapping[str, Sequence[str]],
) -> str:
    """The column of ``role``: the one given (it must exist), else the first of
    its usual spellings (``spellings[role]``, case-insensitive)."""
    if given is not None:
        if given not in header:
            raise InputError(
                f"no {role} column {given!r} (--{role}-col); columns found: {', '.join(header)}",
                source=name,
            )
        return given
    lower = {c.lower(): c for c in reversed(header)}
    for spelling in spellings[role]:
        if spelling in lower:
            return lower[spelling]
    raise InputError(
        f"no {role} column: expected one named {' or '.join(spellings[role][:3])} "
        f"(or --{role}-col NAME); columns found: {', '.join(header)}",
        source=name,
    )
