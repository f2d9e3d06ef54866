"""Reading the files of off-policy evaluation (:mod:`receval.analysis.off_policy`):
logs of bandit feedback, evaluation policies and reward models, every column kept."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from receval.errors import InputError
from receval.io.files import read_file
from receval.records import Columns

__all__ = ["iter_bandit_batches", "read_bandit_table"]


def read_bandit_table(path: str | os.PathLike[str], action: str = "action") -> pa.Table:
    """A file receval reads (Parquet, CSV/TSV, JSONL) as an Arrow table with
    every column under its own name; ``action`` is the column it must have.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d) / "logs.csv"
        ...     _ = p.write_text("user,action,reward,propensity\\n1,a,1,0.5\\n")
        ...     read_bandit_table(p).column_names
        ['action', 'user', 'reward', 'propensity']
    """
    return read_bandit_file(path, action)[0]


def read_bandit_file(path: str | os.PathLike[str], action: str = "action") -> tuple[pa.Table, Any]:
    """:func:`read_bandit_table`, and the file's :class:`~receval.io.files.FileInfo`
    (whose ``locate`` names the file and the line of a row)."""
    try:
        table, info = read_file(path, role="items", cols=Columns(item=action))
    except InputError as exc:  # the reader's "item" is the log's action
        reason = exc.reason.replace("no item column", "no action column")
        reason = reason.replace("item_col=", 'columns={"action": ...}')
        raise InputError(
            reason.replace("--item-col", "--action-col"), source=exc.source, line=exc.line
        ) from None
    names = [action if n == "item" else n for n in table.column_names]
    return table.rename_columns(names), info


def iter_bandit_batches(
    path: str | os.PathLike[str], batch_rows: int, action: str = "action"
) -> Iterator[pa.Table]:
    """A Parquet log ``batch_rows`` rows at a time (row groups streamed, never
    the whole file in memory), every column under its own name.

    Example:
        >>> import tempfile, pathlib, pyarrow.parquet as pq
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d) / "logs.parquet"
        ...     pq.write_table(pa.table({"action": [1, 2, 3], "reward": [0.0, 1.0, 0.0]}), p)
        ...     [b.num_rows for b in iter_bandit_batches(p, 2)]
        [2, 1]
    """
    import pyarrow.parquet as pq

    from receval.io.files import checked_path, fail, is_parquet

    p, name = checked_path(path)
    if not is_parquet(p):
        raise fail(name, "reading in batches needs a Parquet file")
    try:
        file = pq.ParquetFile(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise fail(name, f"not a readable Parquet file ({exc})") from None
    if action not in file.schema_arrow.names:
        raise InputError(
            f"no action column {action!r} (columns found: {', '.join(file.schema_arrow.names)})",
            source=name,
        )
    for batch in file.iter_batches(batch_size=batch_rows):
        yield pa.Table.from_batches([batch])
