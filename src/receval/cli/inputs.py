"""Inputs handed down to the library (which opens them: issue #30, one way in),
outputs written atomically, and rendering."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from receval.analysis.formatting import visible
from receval.cli._base import Engine, Format, Output, err_console, note_line, stderr_is_terminal
from receval.errors import (
    InputError,
    OutputError,
    ReceValError,
    option,
)
from receval.evaluation.options import EvalOptions
from receval.io.write import PAGE_SUFFIXES, suffix_format

# -- helpers ----------------------------------------------------------------------------------


@contextlib.contextmanager
def status(message: str, quiet: bool) -> Iterator[None]:
    """A spinner on stderr while something runs; silent off a terminal or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    with err_console().status(visible(message)):
        yield


@contextlib.contextmanager
def progress_bar(reading: str, quiet: bool) -> Iterator[Any]:
    """On stderr, a spinner saying what the library is ``reading``, then how
    many recommendation rows it has evaluated (the inputs are read by the
    library: their rows are counted as they go). Silent off a terminal or
    with --quiet."""
    if quiet or not stderr_is_terminal():
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console(), transient=True) as bar:
        task = bar.add_task(visible(reading), total=None)
        yield lambda done: bar.update(task, description=f"evaluating: {done:,} rows")


#: ``--per-user``: the file's suffix -> the format written (with ``--engine spark``,
#: a folder of part files of that format)
PER_USER_FORMATS: Mapping[str, str] = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
#: ``report --out``: the suffixes of the HTML page it writes
REPORT_SUFFIXES = PAGE_SUFFIXES


def one_of(words: Any, last: str = "or") -> str:
    """``a, b or c`` (``last``: the last word's conjunction)."""
    words = list(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}" if len(words) > 1 else "".join(words)


def per_user_suffix_format(path: str, engine: Engine) -> str:
    """``--per-user``'s format (:data:`PER_USER_FORMATS`), checked before any
    evaluation; in this process, a folder there is refused at once."""
    if engine is Engine.numpy and Path(path).is_dir():
        raise OutputError(
            f"cannot write {option('per_user', path)}: it is a folder; give a file name "
            f"ending in {one_of(PER_USER_FORMATS)}",
            path=path,
        )
    what = "the per-user table is CSV or Parquet, as its suffix says"
    return suffix_format("per_user", path, PER_USER_FORMATS, what)


def write_result_per_user(result: Any, path: Path, fmt: str) -> None:
    """``--per-user`` of an in-process result: its CSV written from the NumPy
    values, without pandas, where pandas would write the same bytes
    (:func:`_csv_columns`); else its ``per_user`` frame by :func:`write_per_user`."""
    from receval.evaluation.result import pending_per_user

    values = pending_per_user(result) if fmt == "csv" else None
    columns = None if values is None else _csv_columns(values)
    if values is None or columns is None:
        write_per_user(result.per_user.reset_index(), path, fmt)
        return
    header = ["user", *values.names]
    _write_atomic(path, lambda p: _write_csv(p, header, columns))


def _csv_columns(values: Any) -> list[list[Any]] | None:
    """The cells of the per-user CSV, column by column, as
    ``frame.to_csv(index=False, na_rep="NaN")`` writes them (float64 values
    and integer ids as NumPy's text, NaN as ``NaN``); None where
    :func:`_per_user_csv` would write otherwise (text ids holding a carriage
    return, other dtypes): pandas writes those."""
    import numpy as np

    from receval.evaluation.result import float_cells

    ids, table = values.user_ids, values.values
    if ids.dtype.kind == "i":
        users = ids.astype(str).tolist()
    elif ids.dtype == object and all(type(u) is str and "\r" not in u for u in ids):
        users = list(ids)
    else:
        return None
    if table.dtype != np.float64:
        return None
    columns = [users]
    columns += [float_cells(row, na_rep="NaN") for row in table]
    return columns


def _write_csv(path: Path, header: list[str], columns: list[list[Any]]) -> None:
    """A CSV file as pandas' ``to_csv`` opens and writes it: UTF-8, ``\n``
    (the system's line separator) after each record, fields quoted as needed."""
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator=os.linesep)
        writer.writerow(header)
        writer.writerows(zip(*columns, strict=True))


def write_per_user(frame: Any, path: Path, fmt: str) -> None:
    """The per-user table written whole (:func:`_write_atomic`) as ``fmt``."""
    if fmt == "parquet":
        _write_atomic(path, lambda p: frame.to_parquet(p, index=False))
    else:
        _write_atomic(path, lambda p: _per_user_csv(frame, p))


def _write_atomic(path: Path, write: Any) -> None:
    """Write through receval.io.write.atomic_write: whole or not at all, links replaced."""
    from receval.io.write import atomic_write

    atomic_write(path, write)


def _input_label(key: str) -> str:
    """An input's name in an error: ``user_groups`` -> ``user groups file``; a
    key with a space is the label itself (``recommendations file 2``)."""
    return key if " " in key else key.replace("_", " ") + " file"


def refuse_input_targets(
    inputs: Mapping[str, str | Path | None],
    files: Mapping[str, str | Path | None] | None = None,
    folders: Mapping[str, str | Path | None] | None = None,
    writes: Iterable[str] = (),
) -> None:
    """No input is ever an output (issue #31): exit 2, before any work and any
    write, if an output of the command would write over one of its ``inputs``
    (keyword or label -> path; None, ``-`` and URLs are skipped: :func:`_local`).

    ``files``: the output files by their flag (``{"per_user": path}``): each is
    refused when it is an input, compared by file (``os.path.samefile``: a hard
    link, a symbolic link or another spelling of the path counts;
    :func:`receval.io.write.refuse_inputs`).

    ``folders``: the output folders by their flag (``split --out``, ``demo
    --out``, ``report --png``, ``--per-user`` with ``--engine spark``): each
    is refused when it is an input, when an input lies inside it (the input's
    real path, or where the link given as the input lies), or when an input is
    one of the files ``writes`` names (paths relative to the folder: the files
    the command writes there) through a hard link.

    Two output files naming one file are refused the same way (``--by-position
    x.csv would write over the output of --per-session x.csv``).

    The error is one line naming both: ``--per-user ug.csv would write over the
    user groups file ug.csv; choose another output file``."""
    from receval.io.write import refuse_inputs, refuse_inside

    named = [(_input_label(key), path) for key, path in inputs.items() if _local(path)]
    outputs: list[tuple[str, str | Path]] = []
    for flag, path in (files or {}).items():
        if _local(path):
            assert path is not None
            refuse_inputs((option(flag, Path(path)), path), named)
            # two output flags naming one file: the second would replace the first
            refuse_inputs((option(flag, Path(path)), path), outputs)
            outputs.append((f"output of {option(flag)}", path))
    for flag, path in (folders or {}).items():
        if _local(path):
            refuse_inside((option(flag, Path(path)), path), named, writes)


def _local(path: str | Path | None) -> bool:
    """Whether ``path`` names a local file: not None, not ``-`` (standard
    input or output), not a URL (``s3://...``, read and written by Spark)."""
    return path is not None and str(path) != "-" and "://" not in str(path)


def metric_strings(
    metric: list[str] | None, cutoffs: str | None, example: str = "ndcg@10"
) -> list[str]:
    """The ``-m`` metrics, each at every cut-off of ``-k`` when given (an
    error without any, naming ``example``, one the command computes)."""
    from receval.metrics.spec import parse_metrics

    if not metric:
        raise ReceValError(f"give at least one metric with -m, e.g. -m {example}")
    if cutoffs is None:
        return list(metric)
    ks = []
    for part in cutoffs.split(","):
        if not re.fullmatch(r"\s*[0-9]+\s*", part) or int(part) <= 0:
            raise ReceValError(f"-k takes positive integers like 5,10,20; got {part.strip()!r}")
        ks.append(int(part))
    out_metrics: list[str] = []
    for m in metric:
        specs = parse_metrics(m)
        if all(s.k is None for s in specs) and "@" not in m:
            out_metrics += [str(s.with_k(k)) for s in specs for k in ks]
        else:
            out_metrics.append(m)
    return out_metrics


# -- the inputs: handed down to the library, which opens them (receval.io.inputs) ------------

#: the beyond-accuracy inputs (keyword of the library -> its role when a file is opened)
ITEM_ROLES: Mapping[str, str] = {
    "train": "train",
    "catalog": "items",
    "item_features": "items",
    "popular": "items",
    "item_groups": "items",
    "user_groups": "user_groups",
}


def path_input(path: str | Path, fmt: Format = Format.auto, sep: str | None = None) -> Any:
    """A file as the library takes it: the path, or a
    :class:`~receval.io.inputs.FileInput` carrying ``--format`` and ``--sep``
    down to the one reader (:func:`receval.io.inputs.opened`)."""
    if fmt is Format.auto and sep is None:
        return path
    from receval.io.inputs import FileInput

    return FileInput(path, format=fmt.value, sep=sep)


def _is_file_of_groups(user_groups: str) -> bool:
    """Whether ``--user-groups`` names a file (else a built-in grouping)."""
    from receval.evaluation.groups import BUILT_IN

    return user_groups not in BUILT_IN or Path(user_groups).exists()


def input_files(items: Mapping[str, Path | None], user_groups: str | None) -> dict[str, Path]:
    """The files of the other inputs by their keyword (``train``,
    ``catalog``, ..., ``user_groups`` when it names a file): an input error
    about one of them names its file, as one about the lists does."""
    files = {name: Path(path) for name, path in items.items() if path is not None}
    if user_groups is not None and _is_file_of_groups(user_groups):
        files["user_groups"] = Path(user_groups)
    return files


def item_inputs(
    items: Mapping[str, Path | None], user_groups: str | None, sep: str | None
) -> dict[str, Any]:
    """``--train``, ``--catalog``, ..., ``--user-groups`` as the library's
    keywords: their files (any format, ``--sep`` their delimiter), or a
    built-in grouping's name."""
    extra = {name: path_input(path, Format.auto, sep) for name, path in items.items() if path}
    if user_groups is not None:
        grouped = _is_file_of_groups(user_groups)
        extra["user_groups"] = path_input(user_groups, Format.auto, sep) if grouped else user_groups
    return extra


class _FileNotes:
    """The notes of one command's input files, gathered in the order found,
    each line once (:func:`file_notes`)."""

    def __init__(self) -> None:
        self.lines: dict[str, None] = {}  # a dict: ordered, and each line once

    def file(self, info: Any) -> None:
        """What the reader noted about a file it read (its ``FileInfo``)."""
        for message in info.messages:
            self.add(f"{info.path}: {message}")

    def add(self, line: str) -> None:
        self.lines.setdefault(line)


#: the notes being gathered (:func:`file_notes`); None: a note is printed at once
_NOTES: ContextVar[_FileNotes | None] = ContextVar("receval_cli_notes", default=None)


@contextlib.contextmanager
def file_notes(quiet: bool) -> Iterator[None]:
    """Say what each input file of the command was read as, once the block
    has read them: the notes of every file the library opens in it
    (:func:`receval.io.inputs.files_read`: ``PATH: using column uid as
    user``, ``PATH: item lists expanded to one row per item, ...``), the
    recommendations, the truth, ``--train``, ``--catalog``,
    ``--item-features``, ``--popular``, ``--item-groups`` and
    ``--user-groups`` alike, with those of :func:`note_columns` and
    :func:`without_seen`, go to stderr at its end, each line once (a file
    opened twice is noted once). Nothing with ``--quiet``; nothing when the
    block fails (its error is what is said)."""
    if quiet:
        yield
        return
    from receval.io.inputs import files_read

    notes = _FileNotes()
    token = _NOTES.set(notes)
    try:
        with files_read(notes.file):
            yield
    finally:
        _NOTES.reset(token)
    for line in notes.lines:
        note_line(line)


def _say(line: str) -> None:
    """A note about the inputs: gathered by :func:`file_notes`, else printed now."""
    notes = _NOTES.get()
    if notes is None:
        note_line(line)
    else:
        notes.add(line)


def as_read(given: Any, role: str, cols: Any) -> Any:
    """``given`` opened by the one way in (:func:`receval.io.inputs.opened`),
    as a pandas DataFrame with the file's own column names: an input read
    once here and handed down twice (``--remove-seen``'s ``--train``: to
    :func:`receval.workflow.checks.remove_seen`, then as ``train=``), the
    column options applying to it as to the file."""
    from receval.io.inputs import opened

    table, _, info = opened(given, role, cols)
    frame = table.to_pandas() if hasattr(table, "to_pandas") else table
    if info is None:
        return frame
    return frame.rename(columns={r: c for r, c in info.columns.items() if r in frame})


def item_files(
    train: Path | None,
    catalog: Path | None,
    item_features: Path | None,
    popular: Path | None,
    item_groups: Path | None,
) -> dict[str, Path | None]:
    """The item-side input files by their keyword (``train=``, ``catalog=``, ...)."""
    return {
        "train": train,
        "catalog": catalog,
        "item_features": item_features,
        "popular": popular,
        "item_groups": item_groups,
    }


def located_error(
    exc: InputError, inputs: Mapping[str, tuple[Any, str | None]], cols: Any
) -> InputError:
    """An error of the library about one of the command's inputs (``inputs``:
    its name in errors -> (what was handed down, the role it is opened as))
    naming its file, and the file's line of the row when the library gave a
    row only: the file is opened again (:func:`receval.io.inputs.opened`),
    on this path only, for where its rows are. ``(path, None)``: the rows
    are no longer the file's (seen items removed): the file is named alone."""
    given, role = inputs.get(str(exc.source), (None, None))
    if given is None:
        return exc
    path = str(given)
    if role is None or exc.row is None or exc.line is not None or not Path(path).is_file():
        return exc.located(source=path)
    from receval.io.inputs import opened

    try:
        info = opened(given, role, cols)[2]
    except ReceValError:
        return exc.located(source=path)
    return info.locate(exc) if info is not None else exc.located(source=path)


def seen_in(train: Any, options: EvalOptions) -> Any:
    """``--remove-seen``'s training interactions, opened once (a table, the
    file's column names)."""
    if train is None:
        raise ReceValError("--remove-seen needs --train (the items each user has seen)")
    return as_read(train, "train", options.columns())


def without_seen(
    recs: Any, train: Any, name: str, options: EvalOptions, quiet: bool
) -> tuple[Any, int]:
    """``recs`` (a file: opened by :func:`receval.workflow.checks.remove_seen`,
    the table it holds under its own column names) without the items the user
    has in ``train``, and how many rows went."""
    from receval.workflow.checks import remove_seen

    kept = remove_seen(
        recs,
        train,
        user_col=options.user_col,
        item_col=options.item_col,
        rank_col=options.rank_col,
        score_col=options.score_col,
    )
    removed = int(kept.attrs["removed"])
    if not quiet:
        _say(f"{name}: {removed} recommendation rows seen in --train removed")
    return kept, removed


def note_columns(result: Any, paths: Mapping[str, Any], quiet: bool) -> None:
    """Say which column of each file (``paths``: role -> file) the library
    read for a role under another name (``Result.parameters["columns"]``):
    a file the library streamed (Parquet) is not opened by
    :func:`receval.io.inputs.opened`, so :func:`file_notes` has no note of it;
    one it read whole has the same line, said once."""
    if quiet:
        return
    found = result.parameters.get("columns", {})
    for role, path in paths.items():
        for read_as, column in found.get(role, {}).items():
            if column != read_as:
                _say(f"{path}: using column {column} as {read_as}")


def _format_of(path: str | Path, fmt: Format) -> str:
    """The format a file was read in: ``--format``, else the one its name
    tells (``auto``: told by its content)."""
    from receval.io.files import format_by_suffix

    if fmt is not Format.auto:
        return fmt.value
    return format_by_suffix(path) or "auto"


def inputs_record(result: Any, paths: Mapping[str, Any], fmt: Format) -> dict[str, Any]:
    """``Result.parameters["inputs"]``: each file's path, format and columns read."""
    found = result.parameters.get("columns", {})
    return {
        role: {"path": str(path), "format": _format_of(path, fmt), "columns": found.get(role, {})}
        for role, path in paths.items()
    }


def render(result: Any, output: Output) -> str:
    if output is Output.json:
        return result.to_json() if hasattr(result, "to_json") else json.dumps(result, indent=2)
    if output is Output.markdown:
        return result.to_markdown()
    if output is Output.latex:
        return result.to_latex()
    if output is Output.csv:
        from receval.evaluation.result import Result, means_csv

        return means_csv(result) if isinstance(result, Result) else result.to_frame().to_csv()
    return str(result)


def _per_user_csv(frame: Any, path: Path) -> None:
    """The per-user table as CSV, ids exact: a text field holding a line break
    of any kind (a lone carriage return too, which Python's csv module does not
    quote by itself) is quoted, so the file reads back to the same ids."""
    import csv

    import pandas as pd

    texts = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    breaks = any(frame[c].astype(str).str.contains("\r", regex=False).any() for c in texts)
    quoting = csv.QUOTE_NONNUMERIC if breaks else csv.QUOTE_MINIMAL
    frame.to_csv(path, index=False, na_rep="NaN", quoting=quoting)
