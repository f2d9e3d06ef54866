"""Files: CSV/TSV, Parquet, JSON Lines (plain, gzip or zstd), TREC runs and qrels.

Every reader returns a :class:`pyarrow.Table` whose columns of the file's
role are renamed to the role (user, item, score or rank, relevance; actual
and predicted for ratings), detected by :func:`receval.io.columns.resolve`
as for in-memory tables, and a :class:`FileInfo` saying what was found, so
that an error about a table row can name the file and its line.

Ids: text formats (CSV/TSV) have no types, so their user and item columns
are read as text and put under the text rule (:func:`receval.ids.from_text`:
``1`` and ``1.0`` are the integer 1, ``007`` and ``11.5`` stay text); JSON
Lines and Parquet are typed (:func:`receval.ids.canonical`); TREC qids and
docnos are strings, compared as written (as trec_eval compares them).
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.errors import InputError, OptionError
from receval.ids import canonical, from_text
from receval.io.columns import (
    ITEMS,
    RATINGS,
    RECS,
    TRAIN,
    TRUTH,
    USER_GROUPS,
    renamed,
    resolve,
)
from receval.records import Columns

__all__ = ["FileInfo", "is_number", "read_file"]

#: The roles a file of each kind reads (:func:`receval.io.columns.resolve`).
ROLES = {
    "recommendations": RECS,
    "truth": TRUTH,
    "ratings": RATINGS,
    "items": ITEMS,
    "train": TRAIN,
    "user_groups": USER_GROUPS,
}

_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".trec": "trec",
    ".run": "trec",
    ".qrels": "trec",
}


@dataclass
class FileInfo:
    """What receval found in a file."""

    path: str
    format: str
    columns: dict[str, str] = field(default_factory=dict)  # role -> column read
    messages: list[str] = field(default_factory=list)
    line_of_row: Callable[[int], int] | None = None
    rows: int = 0

    def locate(self, err: InputError) -> InputError:
        """The error naming this file, and the lines of its rows when known."""
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
    is buffered (its bytes are held once, not decoded into text)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: bytes | None = None
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
                self.head = stream.read(_HEAD)
        else:
            self.data = _open_text(path)
            self.compression = None
            self.head = self.data[:_HEAD]

    def open(self) -> Any:
        """A binary stream of the (decompressed) content, from the start."""
        if self.data is not None:
            return pa.BufferReader(self.data)
        return pa.input_stream(str(self.path), compression=self.compression)

    def reader(self) -> Any:
        """What a pandas or pyarrow reader opens itself: a regular file's path, or
        a pipe's bytes as a fresh stream from their start (as often as asked)."""
        return self.path if self.data is None else io.BytesIO(self.data)

    def read_bytes(self) -> bytes:
        """The whole content: a regular file's bytes as stored, a pipe's as held."""
        return self.path.read_bytes() if self.data is None else self.data

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
        """The 1-based line of the byte at ``offset``."""
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
        """Every byte (for the formats read whole: JSON Lines, TREC)."""
        if self.data is None:
            with self.open() as stream:
                self.data = stream.read()
        return self.data


def _format_of(path: Path, data: bytes | None) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in (".gz", ".zst", ".zstd"):
        suffixes.pop()
    if suffixes and suffixes[-1] in _FORMATS:
        fmt = _FORMATS[suffixes[-1]]
    elif data is not None and data[:4] == b"PAR1":
        fmt = "parquet"
    else:
        fmt = ""
    if fmt in ("csv", "") and data is not None and _looks_trec(data):
        return "trec"
    if not fmt and not suffixes and data is not None:  # no extension (a pipe, stdin): sniff
        head = data[:65536].lstrip()
        first = head.split(b"\n", 1)[0]
        if head[:1] == b"{":
            fmt = "jsonl"
        elif any(c in first for c in (b",", b"\t", b";", b"|")):
            fmt = "csv"
    if not fmt:
        raise fail(
            str(path),
            f"unknown file type {''.join(path.suffixes) or '(no extension)'!r}: expected "
            ".csv, .tsv, .parquet, .jsonl (optionally .gz or .zst) or a TREC run/qrels; "
            "or give --format",
        )
    return fmt


def _looks_trec(data: bytes) -> bool:
    for raw in data[:20000].splitlines()[:20]:
        line = raw.decode("utf-8", "replace").strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "Q0":
            return True
        return len(parts) == 4 and is_number(parts[3]) and "," not in line
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


def is_parquet(path: str | os.PathLike[str], fmt: str = "auto") -> bool:
    """Whether a path is read as Parquet (by ``--format`` or its extension)."""
    if fmt != "auto":
        return fmt == "parquet"
    return Path(path).suffix.lower() in (".parquet", ".pq")


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
    (``"train"``) or items (``"items"``: catalog, popular items, item
    features) into a table whose columns are named by their roles."""
    check_sep(sep)
    p, name = checked_path(path)
    parquet = is_parquet(p, fmt) and p.is_file()
    source = None if parquet else Source(p)
    if source is not None and not source.head:  # a pipe or stdin that held nothing
        raise fail(name, "the file is empty (nothing came through the pipe)")
    if fmt == "auto":
        fmt = "parquet" if parquet else _format_of(p, source.head if source else None)
    info = FileInfo(name, fmt)
    roles = ROLES[role]
    if fmt == "parquet":
        table = _read_parquet(p if source is None else pa.BufferReader(source.all()), name)
    elif fmt == "trec":
        assert source is not None
        table = _read_trec(source.all(), name, role, info)
    elif fmt in ("csv", "tsv"):
        assert source is not None
        table = _read_csv(
            source, name, "\t" if fmt == "tsv" and sep is None else sep, info, cols, roles
        )
    elif fmt == "jsonl":
        assert source is not None
        table = _read_jsonl(source.all(), name, cols, roles)
        info.line_of_row = lambda r: r + 1
    else:
        raise fail(name, f"unknown format {fmt!r}: expected csv, tsv, parquet, jsonl or trec")
    if table.num_rows == 0:
        raise fail(name, "no data rows (only a header?)")
    if fmt != "trec":
        table = _map_columns(table, cols, roles, info)
        table = _explode_lists(table, info)
    info.rows = table.num_rows
    return table, info


def _read_parquet(p: Path | pa.BufferReader, name: str) -> pa.Table:
    """A Parquet file (or the bytes of one that came through a pipe)."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise fail(name, f"not a readable Parquet file ({exc})") from None


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fail(name, f"not UTF-8 text (byte {data[exc.start]:#04x})", line) from None


def _read_csv(
    source: Source,
    name: str,
    sep: str | None,
    info: FileInfo,
    cols: Columns,
    roles: tuple[tuple[str, ...], tuple[str, ...]],
) -> pa.Table:
    """A CSV/TSV file; its user and item columns read as text, then under
    the text rule of :func:`receval.ids.from_text`.

    Arrow parses the file as it streams, block by block on several threads;
    the raw bytes, the decoded text and a list of its lines are never held
    (memory: the columns kept plus a few blocks; ``benchmarks/csv_memory.py``).
    Row-to-line numbers are found only when an error needs one, by a second
    streaming pass (:func:`_line_of_row`), so quoted fields that span lines
    and blank lines are counted right."""
    import csv

    import pyarrow.csv as pcsv

    head = source.head
    try:
        first = head.split(b"\n", 1)[0].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(name, f"not UTF-8 text (byte {head[exc.start]:#04x})", 1) from None
    if sep is None:
        counts = {c: first.count(c) for c in (",", "\t", ";", "|")}
        sep = max(counts, key=lambda c: counts[c]) if max(counts.values()) else ","
    header = next(csv.reader(io.StringIO(first.rstrip("\r")), delimiter=sep), [])
    found = resolve(header, cols, roles, name)
    ids = {found[r]: r for r in ("user", "item") if r in found}
    info.line_of_row = _line_of_row(source, sep)
    table = None
    # A value holding a line break, or longer than a block, can fail a fast
    # parse: the file is read again allowing both before an error is reported.
    # Only the columns of the file's roles are read (a list of items keeps all: features).
    keep = None if roles in (ITEMS, USER_GROUPS) else list(dict.fromkeys(found.values()))
    for multiline, block in ((False, 1 << 22), (True, 1 << 26)):
        try:
            with source.open() as stream:
                # batch by batch (half the peak of read_csv, which holds every parsed block)
                reader = pcsv.open_csv(
                    stream,
                    parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=multiline),
                    read_options=pcsv.ReadOptions(use_threads=True, block_size=block),
                    convert_options=pcsv.ConvertOptions(
                        column_types={c: pa.string() for c in ids},
                        strings_can_be_null=False,
                        include_columns=keep,
                    ),
                )
                table = reader.read_all()
            break
        except pa.ArrowInvalid as exc:
            error = exc
    if table is None:
        raise _csv_error(source, sep, name, error) from None
    for column, role in ids.items():
        j = table.column_names.index(column)
        values = table.column(j)
        empty = pc.equal(values, "")
        try:
            if pc.any(empty).as_py():
                row = int(np.flatnonzero(empty.to_numpy(zero_copy_only=False))[0])
                raise InputError(f"missing {role} id (an empty field)", source=name, row=row)
            out = from_text(values, role, name)
        except InputError as exc:
            raise info.locate(exc) from None
        array = pa.array(out, type=pa.large_string() if out.dtype == object else pa.int64())
        table = table.set_column(j, table.schema.field(j).with_type(array.type), [array])
    return table


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


def _csv_error(source: Source, sep: str, name: str, exc: Exception) -> InputError:
    """Locate what Arrow could not read: text that is not UTF-8, or the first
    line with the wrong number of fields (pyarrow says neither where)."""
    import csv

    try:
        reader = csv.reader(source.lines(), delimiter=sep)
        header = next(reader, [])
        before = reader.line_num
        for row in reader:
            start, before = before + 1, reader.line_num
            if row and len(row) != len(header):
                return fail(
                    name,
                    f"expected {len(header)} fields ({sep.join(header)}), found {len(row)}",
                    start,
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
    an id column mixes numbers and strings, or holds non-integers (Arrow
    reads JSON integers beyond int64 as lossy floats), the file is read
    again with Python's json, whose integers are exact."""
    import pyarrow.json as pjson

    text = _decode(data, name)
    try:
        table = pjson.read_json(io.BytesIO(data))
    except pa.ArrowInvalid:
        table = None
    if table is not None:
        found = resolve(table.column_names, cols, roles, name)
        if not any(
            pa.types.is_floating(table.schema.field(found[r]).type)
            for r in ("user", "item")
            if r in found
        ):
            return table
    return _read_jsonl_exact(text, name, cols, roles)


def _read_jsonl_exact(
    text: str, name: str, cols: Columns, roles: tuple[tuple[str, ...], tuple[str, ...]]
) -> pa.Table:
    rows = []
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
    names = list(dict.fromkeys(k for row in rows for k in row))
    found = resolve(names, cols, roles, name)
    ids = {found[r]: r for r in ("user", "item") if r in found}
    arrays = {}
    for column in names:
        values = [row.get(column) for row in rows]
        if column in ids and not any(isinstance(v, list) for v in values):
            out = canonical(values, ids[column], name)
            arrays[column] = pa.array(
                out, type=pa.large_string() if out.dtype == object else pa.int64()
            )
            continue
        try:
            arrays[column] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays[column] = pa.array([None if v is None else str(v) for v in values])
    return pa.table(arrays)


def _read_trec(data: bytes, name: str, role: str, info: FileInfo) -> pa.Table:
    """TREC runs (qid Q0 docno rank score tag) and qrels (qid iter docno rel).

    Lines starting with ``#`` are comments. A run is ordered by score (its
    rank column is ignored, as trec_eval does); grades <= 0 in qrels mean
    judged non-relevant.
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
            number_value = float(value)
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
    grades = np.asarray(values, dtype=np.float64)
    column = "score" if run else "relevance"
    return pa.table({"user": users, "item": items, column: grades})


def _map_columns(
    table: pa.Table,
    cols: Columns,
    roles: tuple[tuple[str, ...], tuple[str, ...]],
    info: FileInfo,
) -> pa.Table:
    """The columns of the file's roles renamed to the roles (found as for
    tables: :func:`receval.io.columns.resolve`); a list of items keeps its
    other columns (features), other files only their roles' columns."""
    found = resolve(table.column_names, cols, roles, info.path)
    info.columns.update(found)
    for role, column in found.items():
        if column != role:
            info.messages.append(f"using column {column} as {role}")
    keep = list(found.values())
    if roles is ITEMS or roles is USER_GROUPS:  # their other columns are data
        taken = set(found) | set(found.values())
        keep += [n for n in table.column_names if n not in taken]
    return renamed(table.select(keep), found)


def _explode_lists(table: pa.Table, info: FileInfo) -> pa.Table:
    """One row per user with a list of items (best first) -> long format."""
    if "item" not in table.column_names:
        return table
    typ = table.schema.field("item").type
    if not (pa.types.is_list(typ) or pa.types.is_large_list(typ)):
        return table
    import pyarrow.compute as pc

    items = table.column("item").combine_chunks()
    lengths = pc.list_value_length(items).fill_null(0).to_numpy(zero_copy_only=False)
    users = np.repeat(np.arange(table.num_rows), lengths)
    rank = np.concatenate([np.arange(1, n + 1) for n in lengths]) if len(lengths) else []
    out = {
        "user": table.column("user").take(pa.array(users)),
        "item": pc.list_flatten(items),
        "rank": pa.array(rank, type=pa.int64()),
    }
    info.messages.append("item lists expanded to one row per item, rank = position in the list")
    row_line = info.line_of_row
    info.line_of_row = (lambda r: row_line(int(users[r]))) if row_line else None
    return pa.table(out)
