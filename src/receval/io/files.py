"""Files: CSV/TSV, Parquet, JSON Lines, RecBole atomic files (plain, gzip or zstd), TREC.

Every format is one row of :data:`READERS`: its name, its reader function,
the suffixes that tell it, how its content is recognised when no suffix
does, and its options (default delimiter, how its ids are read). Telling
the format of a file (:func:`format_of`, also used by Spark's reader) and
reading it (:func:`read_file`) go through that table only: adding a format
is adding a row and a reader (docs/contributing.md).

Every reader returns a :class:`pyarrow.Table` whose columns of the file's
role are renamed to the role (user, item, score or rank, relevance; actual
and predicted for ratings), detected by :func:`receval.io.columns.resolve`
as for in-memory tables, and a :class:`FileInfo` saying what was found, so
that an error about a table row can name the file and its line.

Ids: text formats (CSV/TSV, RecBole) have no types, so their user and item
columns (and RecBole's ``token`` columns) are read as text and put under the
text rule (:func:`receval.ids.from_text`: ``1`` and ``1.0`` are the integer
1, ``007`` and ``11.5`` stay text); JSON Lines and Parquet are typed
(:func:`receval.ids.canonical`); TREC qids and docnos are strings, compared
as written (as trec_eval compares them).

Text is UTF-8; a leading byte-order mark (Excel's "CSV UTF-8") is skipped,
in plain and compressed files and in pipes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import pyarrow as pa

from receval import _malloc
from receval._lazy import pc
from receval._malloc import check_headroom
from receval.errors import InputError, OptionError, said
from receval.ids import (
    arrow_floats,
    arrow_ints,
    arrow_strings,
    as_str,
    canonical,
    first_true,
    from_text,
)
from receval.io.columns import (
    FILE_COLUMNS,
    ITEMS,
    RATINGS,
    RECS,
    TRAIN,
    TRUTH,
    USER_GROUPS,
    id_lists,
    item_lists,
    read_number,
    renamed,
    resolve,
)
from receval.records import Columns

__all__ = [
    "READERS",
    "RECBOLE_TYPES",
    "FileInfo",
    "Reader",
    "compact_ids",
    "format_by_suffix",
    "format_of",
    "is_number",
    "read_file",
    "recbole_header",
]

Roles = tuple[tuple[str, ...], tuple[str, ...]]

#: The roles a file of each kind reads (:func:`receval.io.columns.resolve`);
#: ``log``: an interaction log read whole (user and item found, every column kept).
ROLES: Mapping[str, Roles] = {
    "recommendations": RECS,
    "truth": TRUTH,
    "ratings": RATINGS,
    "items": ITEMS,
    "train": TRAIN,
    "user_groups": USER_GROUPS,
    "log": TRAIN,
}

#: The kinds of file whose other columns are data (features, groups, a log's
#: own columns) and are kept; other files keep only their roles' columns.
KEEPS_EVERY_COLUMN = frozenset({"items", "user_groups", "log"})

#: Compression suffixes skipped before a file's format suffix (the readers
#: decompress gzip and zstd; Spark also reads bzip2 and snappy).
COMPRESSIONS = (".gz", ".zst", ".zstd")

_BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark

#: Whether the text ids of delimited files come back dictionary-encoded (:func:`compact_ids`).
_compact: ContextVar[bool] = ContextVar("receval_compact_ids", default=False)


@contextlib.contextmanager
def compact_ids() -> Iterator[None]:
    """Within the block, a CSV/TSV or RecBole file's id columns that hold
    text come back dictionary-encoded (int32 codes into the distinct
    canonical strings: ~4 bytes a row instead of ~16) rather than as large
    strings: for a reader that puts them under the id rule itself
    (:func:`receval.ids.canonical` and the table readers of
    :mod:`receval.io.tables` read both alike), as an evaluation does. The
    values are the same; a table handed to pandas would turn such columns
    into categoricals, so files are read plain everywhere else.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = pathlib.Path(d, "recs.csv")
        ...     _ = path.write_text("user,item,score\\nu1,a,1\\nu1,b,0.5\\n")
        ...     with compact_ids():
        ...         table, _ = read_file(path, role="recommendations")
        >>> str(table.schema.field("item").type)
        'dictionary<values=large_string, indices=int32, ordered=0>'
    """
    token = _compact.set(True)
    try:
        yield
    finally:
        _compact.reset(token)


@dataclass
class FileInfo:
    """What receval found in a file."""

    path: str
    format: str
    columns: dict[str, str] = field(default_factory=dict)  # role -> column read
    header: list[str] | None = None  # every column of a text file (only its roles' are read)
    messages: list[str] = field(default_factory=list)
    line_of_row: Callable[[int], int] | None = None
    #: the file's row of each row read, where rows are no lines but the rows
    #: read are not the file's (a Parquet file's item lists expanded)
    row_of_row: Callable[[int], int] | None = None
    rows: int = 0

    def locate(self, err: InputError) -> InputError:
        """The error naming this file, and the lines of its rows when known."""
        if err.row is not None and self.line_of_row is None and self.row_of_row is not None:
            return err.remap(self.row_of_row).located(source=self.path)
        if err.row is None or self.line_of_row is None:
            return err.located(source=self.path)
        lines = err.remap(self.line_of_row)
        return InputError(
            err.reason.replace("{rows}", "{lines}"),
            source=self.path,
            line=lines.row,
            other_row=lines.other_row,
            user=err.user,
            item=err.item,
            column=err.column,
        )


def fail(path: str, message: str, line: int | None = None) -> InputError:
    """An :class:`InputError` naming the file (and its line when known)."""
    return InputError(message, source=path, line=line)


def _open_text(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz" or data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif path.suffix == ".zst" or data[:4] == b"\x28\xb5\x2f\xfd":
        with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
            data = stream.read()
    return data


_HEAD = 1 << 16  # bytes read to tell the format, the delimiter and the header


class _NotUtf8(Exception):
    """A byte that is not UTF-8 text, at ``offset`` of the (decompressed) content."""

    def __init__(self, offset: int, byte: int) -> None:
        super().__init__(offset, byte)
        self.offset, self.byte = offset, byte


class Source:
    """A text file to read as a stream, plain or compressed (gzip, zstd):
    ``head`` holds its first (decompressed) bytes, :meth:`open` gives a fresh
    binary stream of the whole content. A regular file is never read whole
    into memory; a pipe or the standard input, which can be read only once,
    is buffered (its bytes are held once, not decoded into text).

    A leading UTF-8 byte-order mark is not content: ``head``, :meth:`open`,
    :meth:`reader`, :meth:`read_bytes` and :meth:`lines` all start after it
    (``bom`` is its length, 0 or 3)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: bytes | None = None
        self.bom = 0
        if path.is_file():
            with open(path, "rb") as f:
                magic = f.read(4)
            suffix = path.suffix.lower()
            if suffix == ".gz" or magic[:2] == b"\x1f\x8b":
                self.compression: str | None = "gzip"
            elif suffix in (".zst", ".zstd") or magic == b"\x28\xb5\x2f\xfd":
                self.compression = "zstd"
            else:
                self.compression = None
            with self.open() as stream:
                head = stream.read(_HEAD)
            self.bom = len(_BOM) if head.startswith(_BOM) else 0
            self.head = head[self.bom :]
        else:
            data = _open_text(path)
            self.data = data[len(_BOM) :] if data.startswith(_BOM) else data
            self.compression = None
            self.head = self.data[:_HEAD]

    def open(self) -> Any:
        """A binary stream of the (decompressed) content, from the start (after a BOM)."""
        if self.data is not None:
            return pa.BufferReader(self.data)
        stream = pa.input_stream(str(self.path), compression=self.compression)
        if self.bom:
            stream.read(self.bom)
        return stream

    def reader(self) -> Any:
        """What a pandas or pyarrow reader opens itself: a plain regular file's
        path, or the content as a fresh stream from its start (as often as
        asked): a pipe's bytes, a compressed file's, a file's after its BOM."""
        if self.data is None and self.compression is None and not self.bom:
            return self.path
        return io.BytesIO(self.read_bytes())

    def read_bytes(self) -> bytes:
        """The whole (decompressed) content, after a BOM; a pipe's as held."""
        if self.data is not None:
            return self.data
        with self.open() as stream:
            return stream.read()

    def lines(self) -> Iterator[str]:
        """The content as text lines (line ends kept), decoded as it streams;
        :class:`_NotUtf8` gives the offset and value of a byte that is not UTF-8."""
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")()
        done = 0  # bytes decoded before this chunk
        rest = ""
        with self.open() as stream:
            while True:
                chunk = stream.read(1 << 20)
                try:
                    text = decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as exc:  # offsets in the chunk (+ the decoder's tail)
                    at = max(0, exc.start - (len(exc.object) - len(chunk)))
                    byte = chunk[at] if at < len(chunk) else exc.object[exc.start]
                    raise _NotUtf8(done + at, byte) from None
                done += len(chunk)
                text = rest + text
                parts = text.splitlines(keepends=True)
                rest = parts.pop() if parts and not parts[-1].endswith(("\n", "\r")) else ""
                yield from parts
                if not chunk:
                    break
        if rest:
            yield rest

    def byte_line(self, offset: int) -> int:
        """The 1-based line of the byte at ``offset`` (of the content after a BOM)."""
        line = 1
        with self.open() as stream:
            while offset > 0:
                chunk = stream.read(min(1 << 20, offset))
                if not chunk:
                    break
                line += chunk.count(b"\n")
                offset -= len(chunk)
        return line

    def all(self) -> bytes:
        """Every byte (for the formats read whole: JSON Lines, TREC), kept."""
        if self.data is None:
            self.data = self.read_bytes()
        return self.data

    def first_line(self, name: str) -> str:
        """The first line of the content (the header of a delimited file)."""
        head = self.head
        try:
            first = head.split(b"\n", 1)[0].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(name, f"not UTF-8 text (byte {head[exc.start]:#04x})", 1) from None
        return first.rstrip("\r")


# -- the table of readers ---------------------------------------------------------------------


@dataclass
class Job:
    """What a reader is given: one file to read for one kind of input."""

    path: Path  #: the file (a Parquet reader may read it itself)
    name: str  #: its name in messages
    source: Source | None  #: its content (None: a Parquet file read from its path)
    role: str  #: a key of :data:`ROLES`: what the file holds
    cols: Columns  #: the column names asked for (None: detected)
    sep: str | None  #: the delimiter given (None: the format's, or sniffed)
    info: FileInfo  #: filled in by the reader: line_of_row, columns (TREC)
    reader: Reader  #: the row of :data:`READERS` being run

    @property
    def roles(self) -> Roles:
        """The roles to find (:func:`receval.io.columns.resolve`)."""
        return ROLES[self.role]

    @property
    def text(self) -> Source:
        """The content of a text format (always opened for one)."""
        assert self.source is not None, f"{self.reader.name} is a text format"
        return self.source


@dataclass(frozen=True)
class Reader:
    """One format of :data:`READERS`.

    Attributes:
        name: the format's name (``--format``, ``FileInfo.format``, Spark's
            readers in :mod:`receval.io.spark_files` are keyed by it).
        read: the reader: a :class:`Job` -> a :class:`pyarrow.Table` (with the
            file's column names when ``named``, else the roles' names).
        suffixes: the suffixes that tell the format (after a compression
            suffix, :data:`COMPRESSIONS`).
        label: how a message listing the formats names it.
        ids: how its ids are read: ``text`` (untyped text, the text rule of
            :func:`receval.ids.from_text`), ``typed`` (the file's own types,
            :func:`receval.ids.canonical`) or ``as written`` (strings, TREC).
        sep: the default delimiter of a delimited text format (None: sniffed
            from the header line).
        named: whether the columns are found by their names
            (:func:`receval.io.columns.resolve`); False when the reader names
            the roles itself (TREC: columns by position).
        sniff: a test of the content's first bytes, for files no suffix tells.
        overrides: the formats told by a suffix that ``sniff`` may still
            override (a TREC run saved as ``.csv``, a RecBole file as ``.tsv``).
        bare_only: ``sniff`` is tried only on files with no suffix at all
            (pipes, the standard input), not on unknown suffixes.
    """

    name: str
    read: Callable[[Job], pa.Table]
    suffixes: tuple[str, ...]
    label: str
    ids: str = "text"
    sep: str | None = None
    named: bool = True
    sniff: Callable[[bytes], bool] | None = None
    overrides: tuple[str, ...] = ()
    bare_only: bool = False


def _first_text_line(head: bytes) -> str | None:
    """The first line of ``head`` as text, or None when it is not UTF-8."""
    try:
        return head.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        return None


def _looks_parquet(head: bytes) -> bool:
    return head[:4] == b"PAR1"


def _looks_jsonl(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{"


def _looks_delimited(head: bytes) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    return any(c in first for c in (b",", b"\t", b";", b"|"))


#: RecBole's field types (``name:type`` in an atomic file's header).
RECBOLE_TYPES = ("token", "token_seq", "float", "float_seq")
_RECBOLE_FIELD = re.compile(r"^(.+):(" + "|".join(RECBOLE_TYPES) + r")$")


def _looks_recbole(head: bytes) -> bool:
    """A header line whose every field is ``name:type`` with a RecBole type."""
    first = _first_text_line(head)
    if not first:
        return False
    sep = sniff_sep(first, "\t")
    fields = first.split(sep)
    return all(_RECBOLE_FIELD.match(f.strip()) for f in fields)


def recbole_header(fields: Sequence[str], name: str) -> tuple[list[str], list[str]]:
    """The names (stripped of ``:type``) and RecBole types of a header's fields.

    >>> recbole_header(["user_id:token", "rating:float"], "x.inter")
    (['user_id', 'rating'], ['token', 'float'])
    """
    names: list[str] = []
    kinds: list[str] = []
    for number, raw in enumerate(fields, 1):
        match = _RECBOLE_FIELD.match(raw.strip())
        if match is None:
            raise fail(
                name,
                f"RecBole header field {number}: expected name:type with a type among "
                f"{', '.join(RECBOLE_TYPES)}; found {raw!r}",
                1,
            )
        if match.group(1) in names:
            raise fail(name, f"RecBole header: the field name {match.group(1)!r} is repeated", 1)
        names.append(match.group(1))
        kinds.append(match.group(2))
    return names, kinds


def _looks_trec(data: bytes) -> bool:
    """A TREC run (``qid Q0 docno rank score tag``) or qrels (``qid iter docno rel``)."""
    for raw in data[:20000].splitlines()[:20]:
        line = raw.decode("utf-8", "replace").strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if "," in line:
            return False
        if len(parts) >= 6:  # a run: Q0, or a rank and a score where they go (trec_eval
            # reads neither the second column nor the tag: some tools write 0 there)
            return parts[1] == "Q0" or (parts[3].isdigit() and is_number(parts[4]))
        # qrels: a grade, or an iteration (an integer, 0 as a rule) where it goes, so
        # that a bad grade on the first line is an error of the qrels' line
        return len(parts) == 4 and (is_number(parts[3]) or parts[1].isdigit())
    return False


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a Python float (format sniffing).

    >>> is_number("4.5"), is_number("u1")
    (True, False)
    """
    try:
        float(text)
    except ValueError:
        return False
    return True


def sniff_sep(line: str, prefer: str | None = None) -> str:
    """The delimiter of a header line: ``prefer`` when the line holds it, else
    the most frequent of ``,`` tab ``;`` ``|`` (``,`` when none)."""
    if prefer is not None and prefer in line:
        return prefer
    counts = {c: line.count(c) for c in (",", "\t", ";", "|")}
    return max(counts, key=lambda c: counts[c]) if max(counts.values()) else ","


def header_fields(line: str, sep: str) -> list[str]:
    """The column names of a delimited header line (CSV quoting rules)."""
    import csv

    # newline="": a line ending in "\r" alone (old Mac files) ends the header,
    # as Arrow's reader ends its rows there, instead of a csv.Error
    return next(csv.reader(io.StringIO(line, newline=""), delimiter=sep), [])


# -- the readers (a Job -> a table) -------------------------------------------------------------


def _read_parquet(job: Job) -> pa.Table:
    """A Parquet file (or the bytes of one that came through a pipe or is compressed)."""
    import pyarrow.parquet as pq

    src = job.source
    plain = src is None or (src.data is None and not src.compression)
    where: Any = job.path if plain else None
    try:
        return pq.read_table(where if where is not None else pa.BufferReader(job.text.all()))
    except (pa.ArrowInvalid, OSError) as exc:
        raise fail(job.name, f"not a readable Parquet file ({exc})") from None


def _read_csv(job: Job) -> pa.Table:
    """A CSV/TSV file with a header line: the delimiter given, the format's
    (TSV: a tab) or the most frequent of ``,`` tab ``;`` ``|`` in the header."""
    first = job.text.first_line(job.name)
    sep = job.sep or job.reader.sep or sniff_sep(first)
    return _read_delimited(job, sep, header_fields(first, sep))


def _read_recbole(job: Job) -> pa.Table:
    """A RecBole atomic file (``.inter``, ``.item``, ``.user``): tab-separated,
    a header of ``name:type`` fields. Names lose their type (``user_id:token``
    is ``user_id``, found as the user); ``token`` columns are ids under the text
    rule, ``float`` columns numbers, ``token_seq``/``float_seq`` text."""
    first = job.text.first_line(job.name)
    sep = job.sep or sniff_sep(first, job.reader.sep)
    names, kinds = recbole_header(header_fields(first, sep), job.name)
    fields = list(zip(names, kinds, strict=True))
    types = {n: pa.float64() if k == "float" else pa.string() for n, k in fields}
    tokens = [n for n, k in fields if k == "token"]
    return _read_delimited(job, sep, names, types=types, tokens=tokens, named_by_header=False)


def _read_jsonl_job(job: Job) -> pa.Table:
    """JSON Lines (see :func:`_read_jsonl`); row r is on line r + 1."""
    job.info.line_of_row = lambda r: r + 1
    return _read_jsonl(job.text.all(), job.name, job.cols, job.roles)


def _read_trec_job(job: Job) -> pa.Table:
    """A TREC run or qrels (see :func:`_read_trec`), by the file's role."""
    return _read_trec(job.text.all(), job.name, job.role, job.info)


#: Every format receval reads, in the order their contents are tested
#: (:func:`format_of`). Adding a format: a row here and its reader
#: (docs/contributing.md); Spark's readers are keyed by the same names.
READERS: Mapping[str, Reader] = {
    r.name: r
    for r in (
        Reader(
            "parquet",
            _read_parquet,
            (".parquet", ".pq"),
            ".parquet",
            ids="typed",
            sniff=_looks_parquet,
        ),
        Reader(
            "recbole",
            _read_recbole,
            (".inter", ".item", ".user"),
            "RecBole .inter/.item/.user",
            sep="\t",
            sniff=_looks_recbole,
            overrides=("csv", "tsv"),
        ),
        Reader(
            "trec",
            _read_trec_job,
            (".trec", ".run", ".qrels"),
            "a TREC run/qrels",
            ids="as written",
            named=False,
            sniff=_looks_trec,
            overrides=("csv",),
        ),
        Reader(
            "jsonl",
            _read_jsonl_job,
            (".jsonl", ".ndjson", ".json"),
            ".jsonl",
            ids="typed",
            sniff=_looks_jsonl,
            bare_only=True,
        ),
        Reader("csv", _read_csv, (".csv", ".txt"), ".csv", sniff=_looks_delimited, bare_only=True),
        Reader("tsv", _read_csv, (".tsv", ".tab"), ".tsv", sep="\t"),
    )
}

_BY_SUFFIX = {suffix: r.name for r in READERS.values() for suffix in r.suffixes}


def _suffixes(path: str | os.PathLike[str], compressions: Sequence[str]) -> list[str]:
    """The suffixes of a path's last part, lower case, compression suffixes dropped."""
    suffixes = [s.lower() for s in PurePath(os.fspath(path).rstrip("/")).suffixes]
    while suffixes and suffixes[-1] in compressions:
        suffixes.pop()
    return suffixes


def format_by_suffix(
    path: str | os.PathLike[str], compressions: Sequence[str] = COMPRESSIONS
) -> str | None:
    """The format a path's suffix tells (:data:`READERS`), or None.

    >>> format_by_suffix("ml-100k.inter"), format_by_suffix("run.csv.gz"), format_by_suffix("x")
    ('recbole', 'csv', None)
    """
    suffixes = _suffixes(path, compressions)
    return _BY_SUFFIX.get(suffixes[-1]) if suffixes else None


def format_of(path: str | os.PathLike[str], head: bytes | None, name: str | None = None) -> str:
    """The format of a file: told by its suffix, or by its first bytes ``head``
    for the readers whose content test applies (:class:`Reader`: ``sniff``,
    ``overrides``, ``bare_only``); an :class:`InputError` when neither tells."""
    told = format_by_suffix(path)
    bare = not _suffixes(path, COMPRESSIONS)
    if head is not None:
        for reader in READERS.values():
            if reader.sniff is None:
                continue
            applies = told in reader.overrides if told else bare or not reader.bare_only
            if applies and reader.sniff(head):
                return reader.name
    if told is not None:
        return told
    suffix = "".join(PurePath(os.fspath(path)).suffixes) or "(no extension)"
    labels = [r.label for r in READERS.values()]
    raise fail(
        name or str(path),
        f"unknown file type {suffix!r}: expected {', '.join(labels[:-1])} or {labels[-1]} "
        f"(text formats optionally {' or '.join(COMPRESSIONS[:2])}); or give its format: "
        + said("receval.io.inputs.FileInput(path, format='csv')", "--format csv"),
    )


def reader_of(fmt: str, path: str | os.PathLike[str], head: bytes | None, name: str) -> Reader:
    """The row of :data:`READERS` for ``fmt`` (``auto``: :func:`format_of`)."""
    if fmt == "auto":
        return READERS[format_of(path, head, name)]
    if fmt not in READERS:
        raise fail(name, f"unknown format {fmt!r}: expected {', '.join(READERS)}")
    return READERS[fmt]


def is_parquet(path: str | os.PathLike[str], fmt: str = "auto") -> bool:
    """Whether a path is read as Parquet (by ``--format`` or its extension)."""
    if fmt != "auto":
        return fmt == "parquet"
    return Path(path).suffix.lower() in READERS["parquet"].suffixes


def checked_path(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """The path of an existing, non-empty file, and its name for messages.

    ``-`` is the standard input. Pipes (``<(cat recs.csv)``, ``/dev/stdin``,
    named FIFOs) are read once, as they come: their size is known only once
    read (:func:`read_file` says when one held nothing)."""
    name = str(path)
    p = Path("/dev/stdin") if name == "-" else Path(path)
    if not p.exists():
        raise fail(name, "no such file")
    if p.is_dir():
        raise fail(name, "is a directory, not a file")
    if p.is_file() and p.stat().st_size == 0:
        raise fail(name, "the file is empty")
    return p, name


def check_sep(sep: str | None) -> None:
    """A CSV delimiter is one character, not a quote or a line break
    (``\\t`` written as two characters is taken as a tab by the command line)."""
    if sep is None:
        return
    if len(sep) != 1 or sep in '"\r\n':
        raise OptionError(
            "sep",
            sep,
            expected="one character other than a quote or a line break, e.g. ',' ';' '|' or a tab",
        )


def open_source(p: Path, name: str, fmt: str = "auto") -> Source | None:
    """The content of a checked path (:func:`checked_path`), or None for a
    Parquet file read from its path; an error when nothing is in it."""
    if is_parquet(p, fmt) and p.is_file():
        return None
    source = Source(p)
    if not source.head:
        if source.data is not None and not source.bom:
            raise fail(name, "the file is empty (nothing came through the pipe)")
        raise fail(
            name, "the file holds no data (only a byte-order mark, or nothing once decompressed)"
        )
    return source


def read_file(
    path: str | Path,
    *,
    role: str,
    fmt: str = "auto",
    sep: str | None = None,
    cols: Columns = Columns(),
) -> tuple[pa.Table, FileInfo]:
    """Read a file of recommendations (``role="recommendations"``), truth
    (``"truth"``), ratings (``"ratings"``), training interactions
    (``"train"``), items (``"items"``: catalog, popular items, item
    features), user groups (``"user_groups"``) or a whole interaction log
    (``"log"``) into a table whose columns are named by their roles."""
    check_sep(sep)
    p, name = checked_path(path)
    source = open_source(p, name, fmt)
    return read_source(p, name, source, role=role, fmt=fmt, sep=sep, cols=cols)


def read_source(
    p: Path,
    name: str,
    source: Source | None,
    *,
    role: str,
    fmt: str = "auto",
    sep: str | None = None,
    cols: Columns = Columns(),
) -> tuple[pa.Table, FileInfo]:
    """:func:`read_file` of a file already opened (:func:`open_source`: a pipe
    can be read once only), through its row of :data:`READERS`."""
    check_sep(sep)
    reader = READERS["parquet"] if source is None else reader_of(fmt, p, source.head, name)
    info = FileInfo(name, reader.name)
    table = reader.read(Job(p, name, source, role, cols, sep, info, reader))
    if table.num_rows == 0:
        raise fail(name, "no data rows (only a header?)")
    if reader.named:
        table = _map_columns(table, cols, ROLES[role], info, role in KEEPS_EVERY_COLUMN)
        table = _explode_lists(table, info, role)
    if info.header is not None:  # what an error about a missing column names as found
        table = table.replace_schema_metadata({FILE_COLUMNS: "\t".join(info.header)})
    info.rows = table.num_rows
    return table, info


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fail(name, f"not UTF-8 text (byte {data[exc.start]:#04x})", line) from None


def _read_delimited(
    job: Job,
    sep: str,
    header: list[str],
    *,
    types: Mapping[str, pa.DataType] | None = None,
    tokens: Sequence[str] = (),
    named_by_header: bool = True,
) -> pa.Table:
    """A delimited text file with a header line, whose columns are ``header``
    (the file's own names, or, ``named_by_header=False``, names given in their
    place); ``types``: column -> type; the user and item columns (and the
    ``tokens`` columns) read as text, then under the text rule of
    :func:`receval.ids.from_text`.

    Arrow parses the file as it streams, block by block on several threads,
    and each block's ids are put under the text rule as it comes
    (:class:`_TextIds`): the raw bytes, the decoded text, a list of its lines
    and the text of the id columns are never held whole (memory: the columns
    kept plus a few blocks; ``benchmarks/csv_memory.py``). Row-to-line
    numbers are found only when an error needs one, by a second streaming
    pass (:func:`_line_of_row`), so quoted fields that span lines and blank
    lines are counted right."""
    found = resolve(header, job.cols, job.roles, job.name)
    job.info.header = list(header)  # every column of the file, though only these are read
    text = job.reader.ids == "text"
    ids = {found[r]: r for r in ("user", "item") if r in found and text}
    job.info.line_of_row = _line_of_row(job.text, sep)
    # Only the columns of the file's roles are read (a list of items keeps all: features).
    keep = None if job.role in KEEPS_EVERY_COLUMN else list(dict.fromkeys(found.values()))
    names = header if keep is None else keep
    ids |= {c: "token" for c in tokens if c not in ids and c in names}
    column_types = {**(types or {}), **{c: pa.string() for c in ids}}
    return _arrow_csv(job, sep, None if named_by_header else header, column_types, keep, ids)


#: Bytes of text Arrow parses at a time. Its streaming reader reads a few
#: dozen blocks ahead of the batch handed out: 1 MiB blocks keep that to
#: ~40 MB (4 MiB blocks held ~150 MB more at the peak, for the same speed).
_BLOCK = 1 << 20

#: Blocks parsed between two returns of the free heap to the system (in the
#: command, :func:`receval._malloc.trim`): a parse frees most of what it
#: allocates, in holes between the columns kept; at 5M rows the read's peak
#: went from ~190 MB to ~150 MB above the start (text ids), at no cost in time.
_TRIM_EVERY = 8

#: Rows per chunk of a column read (its batches are joined up to this).
_JOINED = 1 << 20


def _arrow_csv(
    job: Job,
    sep: str,
    names: list[str] | None,
    column_types: Mapping[str, pa.DataType],
    keep: list[str] | None,
    ids: Mapping[str, str],
) -> pa.Table:
    """The file parsed by Arrow (``names``: in place of the header line's),
    batch by batch; the ``ids`` columns (column -> role) put under the text
    rule as they come (:class:`_TextIds`). An empty user or item id is
    reported (naming its line) once the whole file is known to parse, as when
    the file was read whole."""
    import pyarrow.csv as pcsv

    error: Exception | None = None
    # A value holding a line break, or longer than a block, can fail a fast
    # parse: the file is read again allowing both before an error is reported.
    for multiline, block in ((False, _BLOCK), (True, 1 << 26)):
        try:
            with job.text.open() as stream:
                reader = pcsv.open_csv(
                    stream,
                    parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=multiline),
                    read_options=pcsv.ReadOptions(
                        use_threads=False,
                        block_size=block,
                        column_names=names,
                        skip_rows=0 if names is None else 1,
                    ),
                    convert_options=pcsv.ConvertOptions(
                        column_types=dict(column_types),
                        strings_can_be_null=False,
                        include_columns=keep,
                    ),
                )
                columns = _batches(reader, ids, job.name)
            break
        except pa.ArrowInvalid as exc:
            error = exc
    else:
        assert error is not None
        raise _csv_error(job.text, sep, job.name, error, names) from None
    empty = [
        (c.empty, c.role)
        for c in columns.values()
        if isinstance(c, _TextIds) and c.empty is not None
    ]
    if empty:  # the first line with an empty id, whichever its column
        row, role = min(empty)
        what = f"missing {role} id (an empty field)"
        users = [c for c in columns.values() if isinstance(c, _TextIds) and c.role == "user"]
        user = None
        if role == "item" and len(users) == 1:  # the line's user, read: named too
            user = users[0].column(False)[row].as_py()
        raise job.info.locate(InputError(what, source=job.name, row=row, user=user))
    compact = _compact.get()
    names_read = list(columns)
    arrays = [columns.pop(name).column(compact) for name in names_read]
    return pa.Table.from_arrays(arrays, names=names_read)


def _batches(reader: Any, ids: Mapping[str, str], name: str) -> dict[str, _Chunks | _TextIds]:
    """Every batch of a CSV reader, column by column: the ``ids`` columns put
    under the text rule as they come, the others kept as parsed."""
    columns: dict[str, _Chunks | _TextIds] = {
        f.name: _TextIds(ids[f.name], name) if f.name in ids else _Chunks(f.type)
        for f in reader.schema
    }
    for n, batch in enumerate(reader, 1):
        check_headroom()  # Arrow's parser aborts the process when it runs out
        if n % _TRIM_EVERY == 0:  # the parse's free blocks given back (the command)
            _malloc.trim()
        for column, values in zip(columns.values(), batch.columns, strict=True):
            column.add(values)
    return columns


def _no_text() -> pa.Array:
    """An empty string array, made without ``pa.array`` (:func:`receval.ids.arrow_ints`)."""
    return pa.nulls(0, pa.string())


class _Chunks:
    """The arrays of a column, batch by batch, joined into chunks of about
    :data:`_JOINED` rows (a file's batches are small)."""

    def __init__(self, typ: pa.DataType) -> None:
        self.type = typ
        self.done: list[pa.Array] = []
        self.pending: list[pa.Array] = []
        self.rows = 0

    def add(self, values: pa.Array) -> None:
        """The next batch of the column."""
        self.pending.append(values)
        self.rows += len(values)
        if self.rows >= _JOINED:
            self._join()

    def _join(self) -> None:
        if self.pending:
            pending, self.pending, self.rows = self.pending, [], 0
            self.done.append(pending[0] if len(pending) == 1 else pa.concat_arrays(pending))

    def column(self, compact: bool = False) -> pa.ChunkedArray:
        """The whole column (``compact``: as for :meth:`_TextIds.column`)."""
        self._join()
        done, self.done = self.done, []
        return pa.chunked_array(done, type=self.type)


class _TextIds:
    """A column of ids read as text, put under the text rule
    (:func:`receval.ids.from_text`) batch by batch, so that its text is never
    held whole: int64 while every value so far is an integer; from the first
    batch holding text on, int32 codes into one growing dictionary of the
    distinct values read, which are put under the rule once, at the end (a
    value's canonical form depends on the value alone).

    Memory: 8 bytes a row (integers) or 4 (text) plus the distinct values.
    Each batch is dictionary-encoded by Arrow on its own; batches are merged
    into the shared dictionary (:meth:`_merge`) once their own dictionaries
    hold as many values as it does, so the work and the memory of merging
    stay proportional to the rows read, whatever the number of distinct ids."""

    def __init__(self, role: str, name: str) -> None:
        self.role, self.name = role, name
        self.rows = 0
        self.empty: int | None = None  # the first row whose user or item id is empty
        self.ints: _Chunks | None = _Chunks(pa.int64())
        self.codes = _Chunks(pa.int32())  # once text came: codes into values
        self.values = _no_text()  # the distinct values read (a code's value)
        self.pending: list[pa.Array] = []  # batches encoded alone, not yet merged
        self.waiting = 0  # the values of their dictionaries

    def add(self, values: pa.Array) -> None:
        """The next batch of the column (strings, no nulls)."""
        at = self.rows
        self.rows += len(values)
        if self.ints is not None:
            out = from_text(values, self.role, self.name)
            if out.dtype != object:  # integers (an empty field is text)
                self.ints.add(arrow_ints(out))
                return
            # the first text: the integers so far become their decimal strings
            for ints in self.ints.column().chunks:
                self._encoded(pc.dictionary_encode(ints.cast(pa.string())))
            self.ints = None
        encoded = pc.dictionary_encode(values.cast(pa.string()))
        self._encoded(encoded)
        if self.empty is None and self.role in ("user", "item"):
            code = pc.index(encoded.dictionary, "").as_py()
            if code >= 0:
                first = pc.equal(encoded.indices, code).to_numpy(zero_copy_only=False)
                self.empty = at + first_true(first)

    def _encoded(self, encoded: pa.Array) -> None:
        self.pending.append(encoded)
        self.waiting += len(encoded.dictionary)
        if self.waiting > max(len(self.values), 1 << 16):
            self._merge()

    def _merge(self) -> None:
        """The pending batches' codes into the shared dictionary, which keeps
        its values where they are (Arrow's unification takes the first
        dictionary as it is), so the codes already held stay valid."""
        if not self.pending:
            return
        held = pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), self.values)
        merged = pa.chunked_array([held, *self.pending]).unify_dictionaries()
        self.pending, self.waiting = [], 0
        values = merged.chunk(0).dictionary
        if not values.slice(0, len(self.values)).equals(self.values):  # not seen so far
            moved = pc.cast(pc.index_in(self.values, value_set=values), pa.int32())
            held_codes, self.codes = self.codes.column().chunks, _Chunks(pa.int32())
            for codes in held_codes:
                self.codes.add(moved.take(codes))
        self.values = values
        for chunk in merged.chunks[1:]:
            self.codes.add(chunk.indices)

    def column(self, compact: bool) -> pa.ChunkedArray:
        """The whole column: int64, or (some value is text) the canonical
        strings: dictionary-encoded (one dictionary) with ``compact``, else
        large strings."""
        if self.ints is not None:
            return self.ints.column()
        self._merge()
        canon = pa.array(as_str(from_text(self.values, self.role, self.name)), pa.large_string())
        self.values = pa.array([], pa.string())
        remap = None
        distinct = pc.dictionary_encode(canon)  # "1" and "1.0" are one id: one entry
        if len(distinct.dictionary) < len(canon):
            remap, canon = distinct.indices, distinct.dictionary
        parts = []
        chunks = self.codes.column().chunks
        while chunks:
            codes = chunks.pop(0)
            codes = codes if remap is None else remap.take(codes)
            parts.append(
                pa.DictionaryArray.from_arrays(codes, canon) if compact else canon.take(codes)
            )
        out_type = pa.dictionary(pa.int32(), pa.large_string()) if compact else pa.large_string()
        return pa.chunked_array(parts, type=out_type)


def _line_of_row(source: Source, sep: str) -> Callable[[int], int]:
    """row (0-based, after the header) -> its first line (1-based), by one
    streaming pass over the file each time it is asked (errors only): Python's
    csv reader counts the physical lines of quoted values that span lines, and
    blank lines hold no row (as for Arrow)."""
    import csv

    def line_of(row: int) -> int:
        reader = csv.reader(source.lines(), delimiter=sep)
        before = 0  # physical lines read before the current record
        number = -1  # the header is record -1
        for record in reader:
            start = before + 1
            before = reader.line_num
            if not record:  # a blank line
                continue
            if number == row:
                return start
            number += 1
        return row + 2  # beyond the file (not expected): header + row

    return line_of


_CONVERSION = re.compile(r"CSV column #(\d+).*conversion error to (\w+): invalid value '(.*)'")


def _csv_error(
    source: Source, sep: str, name: str, exc: Exception, names: list[str] | None = None
) -> InputError:
    """Locate what Arrow could not read: text that is not UTF-8, the first
    line with the wrong number of fields, or the first value of a typed
    column that is not of its type (pyarrow says none of them where)."""
    import csv

    conversion = _CONVERSION.search(str(exc))
    try:
        reader = csv.reader(source.lines(), delimiter=sep)
        header = next(reader, [])
        columns = names or header
        before = reader.line_num
        for row in reader:
            start, before = before + 1, reader.line_num
            if row and len(row) != len(header):
                return fail(
                    name,
                    f"expected {len(header)} fields ({sep.join(header)}), found {len(row)}",
                    start,
                )
            if conversion and row:
                j, kind, value = int(conversion[1]), conversion[2], conversion[3]
                if j < len(row) and row[j] == value:
                    what = "a number" if kind in ("double", "float") else f"a {kind}"
                    return fail(
                        name, f"column {columns[j]}: expected {what}, found {value!r}", start
                    )
    except _NotUtf8 as err:
        return fail(name, f"not UTF-8 text (byte {err.byte:#04x})", source.byte_line(err.offset))
    except csv.Error as err:
        return fail(name, f"cannot read as CSV: {err}")
    return fail(name, f"cannot read as CSV: {str(exc).splitlines()[0]}")


def _read_jsonl(
    data: bytes, name: str, cols: Columns, roles: tuple[tuple[str, ...], tuple[str, ...]]
) -> pa.Table:
    """JSON Lines: typed ids (JSON numbers and strings). Arrow reads it; when
    an id column (or its lists) mixes numbers and strings, holds
    non-integers (Arrow reads JSON integers beyond int64 as lossy floats) or
    text Arrow takes for dates, the file is read again with Python's json,
    whose integers are exact and whose strings stay as written."""
    import pyarrow.json as pjson

    text = _decode(data, name)
    try:
        table = pjson.read_json(io.BytesIO(data))
    except pa.ArrowInvalid:
        table = None
    if table is not None:
        found = resolve(table.column_names, cols, roles, name)
        if not any(
            _floats(table.schema.field(found[r]).type) for r in ("user", "item") if r in found
        ):
            return table
    return _read_jsonl_exact(text, name, cols, roles)


def _floats(typ: pa.DataType) -> bool:
    """Whether an id column (or its lists' values) was not read as JSON wrote
    it: as floats (JSON integers beyond int64 and non-integers, which Arrow
    reads lossily) or as times (text that looks like a date, which Arrow's
    inference turns into a timestamp: ``"2024-01-01"`` written back as
    ``"2024-01-01 00:00:00"``)."""
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        typ = typ.value_type
    return pa.types.is_floating(typ) or pa.types.is_temporal(typ)


def _read_jsonl_exact(
    text: str, name: str, cols: Columns, roles: tuple[tuple[str, ...], tuple[str, ...]]
) -> pa.Table:
    rows, lines = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise fail(name, f"cannot read as JSON Lines: {exc.msg}", number) from None
        if not isinstance(row, dict):
            raise fail(name, "cannot read as JSON Lines: expected an object per line", number)
        rows.append(row)
        lines.append(number)
    names = list(dict.fromkeys(k for row in rows for k in row))
    found = resolve(names, cols, roles, name)
    ids = {found[r]: r for r in ("user", "item") if r in found}
    arrays = {}
    for column in names:
        values = [row.get(column) for row in rows]
        if column in ids:
            try:
                arrays[column] = _id_column(values, column, ids[column], name)
            except InputError as exc:  # its row: the line holding it
                raise fail(name, exc.reason, None if exc.row is None else lines[exc.row]) from None
            continue
        try:
            arrays[column] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays[column] = pa.array(  # as the file writes each value ("true", not "True")
                [v if v is None or isinstance(v, str) else json.dumps(v) for v in values]
            )
    return pa.table(arrays)


def _id_column(values: list[Any], column: str, role: str, name: str) -> pa.Array:
    """A JSON id column under the id rule: int64 or text, or, holding a list of
    ids a row, read as a table's lists are (:func:`receval.io.columns.id_lists`:
    numbers and text mixed read as text). Errors name the row."""
    if any(isinstance(v, list) for v in values):
        return id_lists(values, column, name, role)
    out = canonical(values, role, name)
    return pa.array(out, type=pa.large_string() if out.dtype == object else pa.int64())


def _read_trec(data: bytes, name: str, role: str, info: FileInfo) -> pa.Table:
    """TREC runs (qid Q0 docno rank score tag) and qrels (qid iter docno rel).

    Lines starting with ``#`` are comments. A run is ordered by score (its
    rank column is ignored, as trec_eval does); a qrels grade of 0 means
    judged non-relevant, and a negative one is read as ``negative_grades``
    says (an error unless given: ``unjudged`` is trec_eval's reading).
    """
    text = _decode(data, name)
    users: list[str] = []
    items: list[str] = []
    values: list[float] = []
    lines: list[int] = []
    run = role == "recommendations"
    width = 6 if run else 4
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) < width or (not run and len(parts) != 4):
            what = "qid Q0 docno rank score tag" if run else "qid iter docno rel"
            raise fail(name, f"malformed TREC line: expected '{what}', found {line[:80]!r}", number)
        value = parts[4] if run else parts[3]
        try:
            number_value = read_number(value)
        except ValueError:
            what = "score" if run else "relevance"
            raise fail(name, f"{what} must be a number; found {value!r}", number) from None
        users.append(parts[0])
        items.append(parts[2])
        values.append(number_value)
        lines.append(number)
    info.line_of_row = lambda r: lines[r]
    info.columns = {
        "user": "qid",
        "item": "docno",
        ("score" if run else "relevance"): ("score" if run else "rel"),
    }
    grades = arrow_floats(np.asarray(values, dtype=np.float64))
    column = "score" if run else "relevance"
    return pa.table({"user": arrow_strings(users), "item": arrow_strings(items), column: grades})


def _map_columns(
    table: pa.Table,
    cols: Columns,
    roles: Roles,
    info: FileInfo,
    keep_all: bool = False,
) -> pa.Table:
    """The columns of the file's roles renamed to the roles (found as for
    tables: :func:`receval.io.columns.resolve`); with ``keep_all`` (a list of
    items, user groups, a log) its other columns too (features, groups, a
    log's own columns), other files only their roles' columns."""
    found = resolve(table.column_names, cols, roles, info.path)
    info.columns.update(found)
    for role, column in found.items():
        if column != role:
            info.messages.append(f"using column {column} as {role}")
    keep = list(found.values())
    if keep_all:  # their other columns are data
        taken = set(found) | set(found.values())
        keep += [n for n in table.column_names if n not in taken]
    return renamed(table.select(keep), found)


def _explode_lists(table: pa.Table, info: FileInfo, role: str) -> pa.Table:
    """One row per user with a list of items (best first) -> long format
    (:func:`receval.io.columns.item_lists`, as for a table); an error names
    the file's line of the user's row."""
    try:
        lists = item_lists(table, role == "recommendations", info.path)
    except InputError as exc:
        raise info.locate(exc) from None
    if lists is None:
        return table
    table, users = lists
    info.messages.append("item lists expanded to one row per item, rank = position in the list")
    row_line = info.line_of_row
    if row_line is None:
        info.row_of_row = lambda r: int(users[r])
    else:
        info.line_of_row = lambda r: row_line(int(users[r]))
    return table
