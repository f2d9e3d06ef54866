"""Files: CSV/TSV, Parquet, JSON Lines (plain, gzip or zstd), TREC runs and qrels.

Every reader returns a :class:`pyarrow.Table` with receval's column names
(user, item, score or rank, relevance) and a :class:`FileInfo` saying what was
detected, so that an error about a table row can name the file and its line.
"""

from __future__ import annotations

import difflib
import gzip
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from receval.errors import InputError, option
from receval.records import Columns

__all__ = ["FileInfo", "read_file"]

#: Spellings of each role found in the wild, tried in order when the
#: expected name is absent.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "user": ("user", "user_id", "userid", "userId", "uid", "qid", "query_id", "query", "session"),
    "item": ("item", "item_id", "itemid", "itemId", "iid", "docno", "doc_id", "docid", "movieId"),
    "score": ("score", "prediction", "predicted", "pred"),
    "rank": ("rank", "position", "pos"),
    "relevance": ("relevance", "rating", "rel", "grade", "label", "target", "weight"),
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


def _fail(path: str, message: str, line: int | None = None) -> InputError:
    return InputError(message, source=path, line=line)


def _open_text(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz" or data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif path.suffix == ".zst" or data[:4] == b"\x28\xb5\x2f\xfd":
        with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
            data = stream.read()
    return data


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
    if not fmt:
        raise _fail(
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
        return len(parts) == 4 and _is_number(parts[3]) and "," not in line
    return False


def _is_number(text: str) -> bool:
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


def _checked_path(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """The path of an existing, non-empty file, and its name for messages."""
    p, name = Path(path), str(path)
    if not p.exists():
        raise _fail(name, "no such file")
    if p.is_dir():
        raise _fail(name, "is a directory, not a file")
    if p.stat().st_size == 0:
        raise _fail(name, "the file is empty")
    return p, name


def read_file(
    path: str | Path,
    *,
    role: str,
    fmt: str = "auto",
    sep: str | None = None,
    cols: Columns = Columns(),
) -> tuple[pa.Table, FileInfo]:
    """Read recommendations (``role="recommendations"``), truth (``"truth"``),
    ratings (``"ratings"``) or a list of items (``"items"``: catalog, popular
    items, item features) from a file into a table with receval's column names."""
    p, name = _checked_path(path)
    parquet = is_parquet(p, fmt)
    data = None if parquet else _open_text(p)
    if fmt == "auto":
        fmt = "parquet" if parquet else _format_of(p, data)
    info = FileInfo(name, fmt)
    if fmt == "parquet":
        table = _read_parquet(p)
    elif fmt == "trec":
        assert data is not None
        table = _read_trec(data, name, role, info)
    elif fmt in ("csv", "tsv"):
        assert data is not None
        table = _read_csv(data, name, "\t" if fmt == "tsv" and sep is None else sep, info)
    elif fmt == "jsonl":
        assert data is not None
        table = _read_jsonl(data, name)
        info.line_of_row = lambda r: r + 1
    else:
        raise _fail(name, f"unknown format {fmt!r}: expected csv, tsv, parquet, jsonl or trec")
    if table.num_rows == 0:
        raise _fail(name, "no data rows (only a header?)")
    if fmt != "trec":
        table = _map_columns(table, cols, role, info)
        table = _explode_lists(table, info)
    info.rows = table.num_rows
    return table, info


def _read_parquet(p: Path) -> pa.Table:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise _fail(str(p), f"not a readable Parquet file ({exc})") from None


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _fail(name, f"not UTF-8 text (byte {data[exc.start]:#04x})", line) from None


def _read_csv(data: bytes, name: str, sep: str | None, info: FileInfo) -> pa.Table:
    import pyarrow.csv as pcsv

    text = _decode(data, name)
    first = text.split("\n", 1)[0]
    if sep is None:
        counts = {c: first.count(c) for c in (",", "\t", ";", "|")}
        sep = max(counts, key=lambda c: counts[c]) if max(counts.values()) else ","
    try:
        table = pcsv.read_csv(
            io.BytesIO(data),
            parse_options=pcsv.ParseOptions(delimiter=sep),
            read_options=pcsv.ReadOptions(use_threads=True),
        )
    except pa.ArrowInvalid as exc:
        raise _csv_error(text, sep, name, exc) from None
    # header on line 1; blank lines are skipped by the reader
    blank = [i + 1 for i, line in enumerate(text.split("\n")[1:], 1) if not line.strip()]
    if not blank:
        info.line_of_row = lambda r: r + 2
    else:
        data_lines = np.setdiff1d(np.arange(2, text.count("\n") + 3), np.array(blank) + 1)
        info.line_of_row = lambda r: int(data_lines[r]) if r < len(data_lines) else r + 2
    return table


def _csv_error(text: str, sep: str, name: str, exc: Exception) -> InputError:
    """Locate the first line with the wrong number of fields (pyarrow does not say)."""
    import csv

    rows = csv.reader(io.StringIO(text), delimiter=sep)
    header = next(rows, [])
    for number, row in enumerate(rows, 2):
        if row and len(row) != len(header):
            return _fail(
                name,
                f"expected {len(header)} fields ({sep.join(header)}), found {len(row)}",
                number,
            )
    return _fail(name, f"cannot read as CSV: {str(exc).splitlines()[0]}")


def _read_jsonl(data: bytes, name: str) -> pa.Table:
    import pyarrow.json as pjson

    _decode(data, name)
    try:
        return pjson.read_json(io.BytesIO(data))
    except pa.ArrowInvalid as exc:
        raise _fail(name, f"cannot read as JSON Lines: {str(exc).splitlines()[0]}") from None


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
            raise _fail(
                name, f"malformed TREC line: expected '{what}', found {line[:80]!r}", number
            )
        value = parts[4] if run else parts[3]
        try:
            number_value = float(value)
        except ValueError:
            what = "score" if run else "relevance"
            raise _fail(name, f"{what} must be a number; found {value!r}", number) from None
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
    if not run and (grades < 0).any():
        info.messages.append(
            f"{int((grades < 0).sum())} negative TREC grades read as 0 (judged non-relevant)"
        )
        grades = np.maximum(grades, 0.0)
    column = "score" if run else "relevance"
    return pa.table({"user": users, "item": items, column: grades})


def _map_columns(table: pa.Table, cols: Columns, role: str, info: FileInfo) -> pa.Table:
    """Rename the columns receval needs to their canonical names."""
    names = table.column_names
    wanted = {
        "user": cols.user,
        "item": cols.item,
        "score": cols.score,
        "rank": cols.rank,
        "relevance": cols.relevance,
    }
    if role in ("ratings", "items"):  # their other columns keep their names
        wanted = {"user": cols.user, "item": cols.item}
    rename: dict[str, str] = {}
    for canonical, given in wanted.items():
        found = None
        if given in names:
            found = given
        else:  # try the usual spellings (an option may name the column of the other file)
            lower = {n.lower(): n for n in names}
            for synonym in SYNONYMS[canonical]:
                if synonym in names or synonym.lower() in lower:
                    found = synonym if synonym in names else lower[synonym.lower()]
                    break
        if found is not None and found not in rename:
            rename[found] = canonical
            info.columns[canonical] = found
            if found != canonical:
                info.messages.append(f"using column {found} as {canonical}")
    for canonical in ("item",) if role == "items" else ("user", "item"):
        if canonical not in info.columns:
            close = difflib.get_close_matches(wanted[canonical], names, n=1, cutoff=0.4)
            hint = (
                f" — did you mean {close[0]!r}? ({option(canonical + '_col')})"
                if close
                else f" (name it with {option(canonical + '_col')})"
            )
            raise _fail(
                info.path,
                f"no {canonical} column {wanted[canonical]!r} (columns found: "
                f"{', '.join(names)}){hint}",
            )
    if role in ("truth", "items"):
        rename.pop(info.columns.pop("score", ""), None)
        rename.pop(info.columns.pop("rank", ""), None)
    else:
        rename.pop(info.columns.pop("relevance", ""), None)
    return table.rename_columns([rename.get(n, n) for n in names])


def _explode_lists(table: pa.Table, info: FileInfo) -> pa.Table:
    """One row per user with a list of items (best first) -> long format."""
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
