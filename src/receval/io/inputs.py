"""One way in: every input of every door is opened here.

A path (any format :mod:`receval.io.files` reads) becomes a table whose
columns are named by their roles, read with ``Columns()`` from then on
(the names asked for were used to find them); a table, a mapping or an
iterable passes as it is, with the columns asked for. Readers of tables
(:func:`receval.io.tables.read_recs`, ``read_truth``, the item and group
readers, the sampled evaluation) call :func:`opened` first, so a path works
wherever a table does, with the same columns, ids and errors (naming the
file and its line).

The library says nothing about the files it reads (no line on stderr); what
the reader noted about each (:attr:`~receval.io.files.FileInfo.messages`:
``using column uid as user``, ``item lists expanded ...``) goes to whoever
asks, with :func:`files_read`: the command line prints those notes.

Example:
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"uid": [1], "item": [2]})
    >>> opened(frame, "train", Columns(user="uid"))[1].user
    'uid'
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from receval.errors import InputError
from receval.records import Columns

__all__ = ["FileInput", "files_read", "is_path", "opened", "read_located"]

T = TypeVar("T")

#: who is told of each file :func:`opened` reads (:func:`files_read`); None: nobody
_WATCHER: ContextVar[Callable[[Any], None] | None] = ContextVar("receval_files_read", default=None)


@dataclass(frozen=True)
class FileInput:
    """A path with how to read it: what the command line's ``--format`` and
    ``--sep`` say, carried down to the one reader instead of the command
    reading the file itself. A path-like object, so it goes wherever a path
    does (``os.fspath`` gives the path).

    Example:
        >>> os.fspath(FileInput("runs/pop.txt", format="tsv"))
        'runs/pop.txt'
    """

    path: str | os.PathLike[str]
    format: str = "auto"
    sep: str | None = None

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return os.fspath(self.path)


def is_path(obj: Any) -> bool:
    """Whether ``obj`` names a file (a string or a path-like object)."""
    return isinstance(obj, (str, os.PathLike))


def opened(obj: Any, role: str, cols: Columns) -> tuple[Any, Columns, Any]:
    """``obj`` ready for a table reader: ``(table or obj, columns, info)``;
    ``info`` is the :class:`~receval.io.files.FileInfo` of a file read (None
    for anything else), whose ``locate`` turns a row into the file's line."""
    if not is_path(obj):
        return obj, cols, None
    from receval.io.files import read_file
    from receval.io.manifest import notes_for

    if isinstance(obj, FileInput):
        table, info = read_file(obj.path, role=role, fmt=obj.format, sep=obj.sep, cols=cols)
    else:
        table, info = read_file(obj, role=role, cols=cols)
    info.messages.extend(notes_for(obj))  # checked against its set's manifest, if any
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher(info)
    return table, Columns(), info


@contextlib.contextmanager
def files_read(note: Callable[[Any], None]) -> Iterator[None]:
    """Within the block, ``note(info)`` is called with the
    :class:`~receval.io.files.FileInfo` of each file :func:`opened` reads, in
    the order read (a file opened twice, twice): its path, format, the columns
    read for each role and the reader's notes (``info.messages``). How the
    command line says, once per file, what each of its input files was read
    as; the library itself prints nothing.

    Example:
        >>> import tempfile, pathlib
        >>> seen = []
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = pathlib.Path(d, "train.csv")
        ...     _ = path.write_text("uid,item\\n1,2\\n")
        ...     with files_read(seen.append):
        ...         _ = opened(path, "train", Columns())
        >>> seen[0].messages
        ['using column uid as user']
    """
    token = _WATCHER.set(note)
    try:
        yield
    finally:
        _WATCHER.reset(token)


def read_located(obj: Any, role: str, cols: Columns, read: Callable[[Any, Columns, str], T]) -> T:
    """``read(table, columns, source)`` of ``obj`` opened by :func:`opened`;
    an error about a row of a file names the file and its line."""
    table, columns, info = opened(obj, role, cols)
    if info is None:
        return read(table, columns, role)
    try:
        return read(table, columns, info.path)
    except InputError as exc:
        raise info.locate(exc) from None
