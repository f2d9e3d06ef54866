"""``receval next-items``: the lists a sequential model gives after each prefix of
the test sessions, evaluated against the next item or the remaining ones
(:func:`receval.evaluate_next_items`, docs/next-items.md)."""

from __future__ import annotations

import json
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
from receval.errors import InputError
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
        list[str] | None,
        _table_out(
            "--per-session",
            "write each session's steps and mean of each metric to a .csv or .parquet (.pq) "
            "file, as the suffix says",
        ),
    ] = None,
    by_position: Annotated[
        list[str] | None,
        _table_out(
            "--by-position",
            "write each metric's mean at each step position t (and the sessions with that "
            "step) to a .csv or .parquet (.pq) file",
        ),
    ] = None,
    report_paths: Annotated[
        list[str] | None,
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
    from receval.evaluation.next_items import SPELLINGS, evaluate_next_items
    from receval.io.session_files import read_session_file

    metrics = metric_strings(metric, k)
    given = {"per_session": per_session, "by_position": by_position, "report": report_paths}
    read = {"lists": lists_path, "sessions": sessions_path, "train": train, "catalog": catalog}
    written, formats = _targets(given, read)
    report_path = written["report"]
    cols = {"session": session_col, "item": item_col}
    with status(f"reading {lists_path} and {sessions_path}", quiet):
        lists, lists_info = read_session_file(lists_path, fmt.value, sep, cols, SPELLINGS)
        sessions, sessions_info = read_session_file(sessions_path, fmt.value, sep, cols, SPELLINGS)
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


def _targets(
    given: dict[str, list[str] | None], read: dict[str, Any]
) -> tuple[dict[str, str | None], dict[str, str]]:
    """The output files by flag, each given once, and the tables' formats,
    all checked before any input is read: as receval evaluate, an output
    naming an input is refused first (the error the user needs: ``--report
    lists.csv`` would overwrite the lists), then the outputs' suffixes, then
    each target (a folder in the way, its folder missing: ``--report`` makes
    it): no output is written when another would fail."""
    from receval.io.write import check_target, given_once

    written: dict[str, str | None] = {flag: given_once(flag, v) for flag, v in given.items()}
    refuse_input_targets(read, files=written)
    formats = {
        flag: suffix_format(flag, path, PER_USER_FORMATS, "the table is CSV or Parquet")
        for flag, path in written.items()
        if path is not None and flag != "report"
    }
    if written["report"] is not None:
        suffix_format("report", written["report"], dict.fromkeys(REPORT_SUFFIXES, "html"), _PAGE)
    for flag, path in written.items():
        if path is not None:
            check_target(path, flag, folder_made=flag == "report")
    return written, formats


def _rendered(result: Any, output: Output) -> str:
    """The result as ``output`` says; JSON holds the metric by position too."""
    if output is Output.json:
        return json.dumps(result.to_dict(), indent=2, allow_nan=False, default=str)
    return render(result, output)
