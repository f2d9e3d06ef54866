"""``receval next-items``: the lists a sequential model gives after each prefix of
the test sessions, evaluated against the next item or the remaining ones
(:func:`receval.evaluate_next_items`, docs/next-items.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Format, Output, command, note_line, show_out
from receval.cli.flags import (
    POLICY_FLAGS,
    Catalog,
    Cutoffs,
    FormatOpt,
    JsonFlag,
    Metrics,
    OutputOpt,
    Quiet,
    Resamples,
    Seed,
    SepOpt,
    Train,
    with_options,
)
from receval.cli.inputs import (
    PER_USER_FORMATS,
    REPORT_SUFFIXES,
    metric_strings,
    refuse_input_targets,
    render,
    status,
    suffix_format,
    write_per_user,
)
from receval.errors import InputError, OptionError
from receval.evaluation.options import EvalOptions


class Target(StrEnum):
    next = "next"
    remaining = "remaining"


class Average(StrEnum):
    steps = "steps"
    sessions = "sessions"
    users = "users"


class Steps(StrEnum):
    all = "all"
    last = "last"


_COLUMNS = "Columns (default: detected: session, session_id, item, item_id, ...)"


def _col(flag: str, text: str) -> Any:
    return typer.Option(flag, metavar="NAME", help=text, rich_help_panel=_COLUMNS)


def _table_out(flag: str, text: str) -> Any:
    return typer.Option(flag, metavar="PATH", help=text)


@command("next-items")
@with_options(POLICY_FLAGS)
def next_items(
    lists_path: Annotated[
        str,
        typer.Argument(
            metavar="LISTS",
            help="the lists: CSV/TSV/JSONL/Parquet with session, step (t: the list after the "
            "session's first t items), item and rank or score (neither: the rows' order)",
        ),
    ],
    sessions_path: Annotated[
        str,
        typer.Argument(
            metavar="SESSIONS",
            help="the test sessions: CSV/TSV/JSONL/Parquet with session, item and, optionally, "
            "time (their order; else the rows') and user",
        ),
    ],
    options: EvalOptions,
    metric: Metrics = None,
    k: Cutoffs = None,
    target: Annotated[
        Target,
        typer.Option(
            "--target",
            help="next: the next item of the session; remaining: the distinct items left in it",
        ),
    ] = Target.next,
    average: Annotated[
        Average,
        typer.Option(
            "--average",
            help="steps: the mean over all steps; sessions: per session, then over sessions; "
            "users: per user over their sessions' steps, then over users (needs a user column)",
        ),
    ] = Average.steps,
    steps: Annotated[
        Steps,
        typer.Option(
            "--steps", help="all: every step t = 1..n-1; last: only step n-1 (leave last out)"
        ),
    ] = Steps.all,
    per_session: Annotated[
        str | None,
        _table_out(
            "--per-session",
            "write each session's steps and mean of each metric to a .csv or .parquet (.pq) "
            "file, as the suffix says",
        ),
    ] = None,
    by_position: Annotated[
        str | None,
        _table_out(
            "--by-position",
            "write each metric's mean at each step position t (and the sessions with that "
            "step) to a .csv or .parquet (.pq) file",
        ),
    ] = None,
    report_path: Annotated[
        str | None,
        _table_out(
            "--report", "also write an HTML page: the metric by position in session (.html)"
        ),
    ] = None,
    train: Train = None,
    catalog: Catalog = None,
    session_col: Annotated[str | None, _col("--session-col", "the session column")] = None,
    item_col: Annotated[str | None, _col("--item-col", "the item column")] = None,
    time_col: Annotated[
        str | None, _col("--time-col", "the sessions' time (or step) column")
    ] = None,
    user_col: Annotated[str | None, _col("--user-col", "the sessions' user column")] = None,
    step_col: Annotated[str | None, _col("--step-col", "the lists' step column")] = None,
    rank_col: Annotated[str | None, _col("--rank-col", "the lists' rank column")] = None,
    score_col: Annotated[str | None, _col("--score-col", "the lists' score column")] = None,
    n_resamples: Resamples = 1000,
    seed: Seed = 0,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Evaluate the lists a sequential model gave after each prefix of the test
    sessions (step t: the list after the first t items) against the next item
    or the remaining ones, e.g. -m mrr@20 -m recall@20 --target next.

    Exit codes: 0 done; 2 bad input (the error names the file, its line or the
    flag); 130 on Ctrl-C. Each file written is whole or absent."""
    from receval.evaluation.next_items import evaluate_next_items

    metrics = metric_strings(metric, k)
    written = {"per_session": per_session, "by_position": by_position, "report": report_path}
    formats = {
        flag: suffix_format(flag, path, PER_USER_FORMATS, "the table is CSV or Parquet")
        for flag, path in written.items()
        if path is not None and flag != "report"
    }
    if report_path is not None:
        suffix_format("report", report_path, dict.fromkeys(REPORT_SUFFIXES, "html"), _PAGE)
    read = {"lists": lists_path, "sessions": sessions_path, "train": train, "catalog": catalog}
    refuse_input_targets(read, files=written)
    cols = {"session": session_col, "item": item_col}
    with status(f"reading {lists_path} and {sessions_path}", quiet):
        lists, lists_info = _read(lists_path, "lists", fmt, sep, cols)
        sessions, sessions_info = _read(sessions_path, "sessions", fmt, sep, cols)
    extra: dict[str, Any] = {}
    if train is not None:
        extra["train"] = str(train)
    if catalog is not None:
        extra["catalog"] = str(catalog)
    try:
        with status("evaluating the steps", quiet):
            result = evaluate_next_items(
                lists,
                sessions,
                metrics,
                target=target.value,
                average=average.value,
                steps=steps.value,
                session_col=lists_info.session,
                item_col=lists_info.item,
                time_col=time_col,
                user_col=user_col,
                step_col=step_col,
                rank_col=rank_col,
                score_col=score_col,
                options=options,
                **extra,
            )
    except InputError as exc:
        found = {"lists": lists_info, "sessions": sessions_info}.get(str(exc.source))
        raise (exc if found is None else found.locate(exc)) from None
    result.parameters["inputs"] = {
        "lists": {"path": lists_path, "format": lists_info.format},
        "sessions": {"path": sessions_path, "format": sessions_info.format},
    }
    for flag, frame in (("per_session", result.per_session), ("by_position", result.by_position)):
        path = written[flag]
        if path is not None and frame is not None:
            write_per_user(frame.reset_index(), Path(path), formats[flag])
            if not quiet:
                note_line(f"{flag.replace('_', '-')}: {path}")
    if report_path is not None:
        from receval.analysis.report import report

        name = Path(lists_path).stem or "model"
        with status("writing the report", quiet):
            report(
                None,
                None,
                next_items={name: result},
                out=report_path,
                n_resamples=n_resamples,
                seed=seed,
                title=f"receval next-items {Path(lists_path).name}",
                provenance={"lists": lists_path, "sessions": sessions_path},
            )
        if not quiet:
            note_line(f"report: {report_path}")
    shown_as = Output.json if as_json else output
    show_out(_rendered(result, shown_as), shown_as)


_PAGE = "the report is an HTML page"


def _rendered(result: Any, output: Output) -> str:
    """The result as ``output`` says; JSON holds the metric by position too."""
    if output is Output.json:
        return json.dumps(result.to_dict(), indent=2, allow_nan=False, default=str)
    return render(result, output)


class _Read:
    """What :func:`_read` found in a file: the session and item columns, the
    format, and where each row is in the file (:meth:`locate`)."""

    def __init__(self, session: str, item: str, info: Any) -> None:
        self.session, self.item, self.info = session, item, info
        self.format = info.format

    def locate(self, exc: InputError) -> InputError:
        return self.info.locate(exc)


def _read(
    path: str, what: str, fmt: Format, sep: str | None, cols: Mapping[str, str | None]
) -> tuple[Any, _Read]:
    """A file of lists or sessions as a pandas table: every column under its
    own name, the session and item columns' ids under receval's id rule (as
    every file receval reads), the others as the reader types them."""
    import pandas as pd

    from receval.ids import canonical
    from receval.io.files import READERS, check_sep, checked_path, open_source, read_source
    from receval.records import Columns

    check_sep(sep)
    p, name = checked_path(path)
    source = open_source(p, name, fmt.value)
    header = _header(p, name, source, fmt, sep)
    session = _column(header, "session", cols["session"], name)
    item = _column(header, "item", cols["item"], name)
    columns = Columns(user=session, item=item)
    table, info = read_source(p, name, source, role="log", fmt=fmt.value, sep=sep, cols=columns)
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
    return pd.DataFrame(data, copy=False), _Read(session, item, info)


def _header(p: Path, name: str, source: Any, fmt: Format, sep: str | None) -> list[str]:
    """The column names of a file, from its schema or its first line."""
    if source is None:  # Parquet, read from its path
        import pyarrow.parquet as pq

        return list(pq.read_schema(p).names)
    head = source.head
    try:
        first = head.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=name, line=1) from None
    if fmt is Format.jsonl or (fmt is Format.auto and head.lstrip()[:1] == b"{"):
        try:
            return [str(c) for c in json.loads(first)]
        except (ValueError, TypeError):
            raise InputError("the first line is not a JSON object", source=name, line=1) from None
    if fmt not in (Format.auto, Format.csv, Format.tsv):
        raise OptionError("format", fmt.value, allowed=("auto", "csv", "tsv", "parquet", "jsonl"))
    import csv
    import io

    if sep is None:
        counts = {c: first.count(c) for c in (",", "\t", ";", "|")}
        sep = max(counts, key=lambda c: counts[c]) if max(counts.values()) else ","
        if fmt is Format.tsv:
            sep = "\t"
    return next(csv.reader(io.StringIO(first), delimiter=sep), [])


def _column(header: list[str], role: str, given: str | None, name: str) -> str:
    """The column of ``role``: the one given (it must exist), else the first of
    its usual spellings (:data:`receval.evaluation.next_items.SPELLINGS`,
    case-insensitive)."""
    from receval.evaluation.next_items import SPELLINGS

    if given is not None:
        if given not in header:
            raise InputError(
                f"no {role} column {given!r} (--{role}-col); columns found: {', '.join(header)}",
                source=name,
            )
        return given
    lower = {c.lower(): c for c in reversed(header)}
    for spelling in SPELLINGS[role]:
        if spelling in lower:
            return lower[spelling]
    raise InputError(
        f"no {role} column: expected one named {' or '.join(SPELLINGS[role][:3])} "
        f"(or --{role}-col NAME); columns found: {', '.join(header)}",
        source=name,
    )
