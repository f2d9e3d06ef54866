"""``receval backtest``: a command retrained and scored over successive time windows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Format, Output, command, note_line, show_out
from receval.cli.flags import (
    LOG_FLAGS,
    POLICY_FLAGS,
    FormatOpt,
    JsonFlag,
    Metrics,
    Names,
    OutputOpt,
    Quiet,
    Resamples,
    Seed,
    SepOpt,
    with_options,
)
from receval.cli.inputs import (
    REPORT_SUFFIXES,
    metric_strings,
    refuse_input_targets,
    render,
    status,
    suffix_format,
)
from receval.errors import InputError, OptionError, ReceValError
from receval.evaluation.options import EvalOptions

_WINDOWS = "Time windows (as receval split --method time_windows)"


def _window(flag: str, metavar: str, text: str) -> Any:
    return typer.Option(flag, metavar=metavar, help=text, rich_help_panel=_WINDOWS)


@command()
@with_options(POLICY_FLAGS, LOG_FLAGS)
def backtest(
    interactions: Annotated[
        Path,
        typer.Argument(
            metavar="LOG",
            help="the interaction log (CSV/TSV/Parquet/JSONL, MovieLens u.data, ratings.dat, "
            "ratings.csv) with a timestamp column",
        ),
    ],
    options: EvalOptions,
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--command",
            metavar="TEMPLATE",
            help="the model, run once per fold by the shell: {train} (the fold's train, "
            "Parquet), {users} (its test users, Parquet), {out} (where it writes its "
            "recommendations), {k} (the list length), {fold} (the fold's number), "
            "{validation} (its validation part, Parquet: with --validation-length), e.g. "
            "'python model.py {train} {users} {out} {k}'; repeat it for several systems, "
            "compared paired by (fold, user)",
        ),
    ] = None,
    names: Names = None,
    metric: Metrics = None,
    k: Annotated[
        int | None,
        typer.Option(
            "-k",
            "--list-length",
            help="the list length asked of the command ({k}); default: the largest cut-off of "
            "the metrics (10 when none has one)",
        ),
    ] = None,
    recs_format: Annotated[
        str,
        typer.Option(
            "--recs-format",
            metavar="csv|tsv|parquet|jsonl",
            help="the format the command writes {out} in (its suffix)",
        ),
    ] = "csv",
    test_length: Annotated[
        str | None, _window("--test-length", "DURATION", "each test window (7D, 4h, or a number)")
    ] = None,
    train_length: Annotated[
        str | None,
        _window("--train-length", "DURATION", "each train window (default: all before the test)"),
    ] = None,
    step: Annotated[
        str | None,
        _window("--step", "DURATION", "between two folds' test windows (default: --test-length)"),
    ] = None,
    validation_length: Annotated[
        str | None,
        _window(
            "--validation-length",
            "DURATION",
            "the end of each train window held out as the fold's validation ({validation})",
        ),
    ] = None,
    n_folds: Annotated[
        int,
        typer.Option("--n-folds", help="the number of folds", rich_help_panel=_WINDOWS),
    ] = 1,
    start: Annotated[
        str | None, _window("--start", "TIME", "the first test window's start")
    ] = None,
    end: Annotated[
        str | None,
        _window("--end", "TIME", "the last test window's end (default: just after the last row)"),
    ] = None,
    timestamp_col: Annotated[
        str | None,
        typer.Option(
            "--timestamp-col",
            metavar="NAME",
            help="timestamp column (default: detected: timestamp, time, ts, datetime, ...)",
        ),
    ] = None,
    report_paths: Annotated[
        list[Path] | None,
        typer.Option(
            "--report",
            metavar="PATH",
            help="also write an HTML page: the metrics over time, per fold and across folds",
        ),
    ] = None,
    n_resamples: Resamples = 10_000,
    seed: Seed = 0,
    confidence: Annotated[
        float,
        typer.Option("--confidence", help="the confidence of the t interval across folds"),
    ] = 0.95,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Backtest a model over successive time windows: for each fold, write its train
    and test users, run --command, evaluate what it wrote; print each fold's values
    (the metric over time) and their mean with a t interval across folds.

    Exit codes: 0 done; 2 bad input, or the command failed in a fold (the error
    names the fold, the command and the end of its stderr); 130 on Ctrl-C. Nothing
    is written but stdout: each fold's files live in a temporary folder, removed."""
    from receval.io.interactions import read_log
    from receval.workflow.backtest import RECS_FORMATS, ShellModel, compare_backtests
    from receval.workflow.backtest import backtest as run_backtest

    if not run:
        raise ReceValError(
            "give the model as --command TEMPLATE, e.g. --command "
            "'python model.py {train} {users} {out} {k}'"
        )
    metrics = metric_strings(metric, None)
    if k is not None and k < 1:
        raise OptionError("k", k, expected="a positive list length", flag="-k")
    if recs_format not in RECS_FORMATS:
        raise OptionError("recs_format", recs_format, allowed=RECS_FORMATS)
    if test_length is None:
        raise ReceValError(
            "give --test-length DURATION: the length of each test window (7D, 4h, or a number "
            "in the timestamps' unit)"
        )
    systems = _system_names(names, len(run))
    models = {
        name: ShellModel(t, recs_format=recs_format) for name, t in zip(systems, run, strict=True)
    }
    report_path = _report_target(report_paths, interactions)
    named = {"user_col": options.user_col, "item_col": options.item_col}
    with status(f"reading {interactions}", quiet):
        try:
            log = read_log(interactions, format=fmt.value, sep=sep, **named)
        except InputError as exc:
            raise exc.located(source=str(interactions)) from None
    given = {
        "test_length": test_length,
        "train_length": train_length,
        "step": step,
        "validation_length": validation_length,
        "start": start,
        "end": end,
    }
    windows = {name: _number_or_text(v) for name, v in given.items() if v is not None}
    windows |= {"n_folds": n_folds, "timestamp_col": timestamp_col, **named}
    # the policies given; the log's columns are not those of the command's output
    policies = {n: getattr(options, n) for n in options.given if n not in named}
    folds: Any = windows
    results = {}
    for name, model in models.items():
        results[name] = run_backtest(
            log,
            folds,
            _announced(model, name if len(models) > 1 else None, quiet),
            metrics,
            k=k,
            confidence=confidence,
            options=EvalOptions(**policies),
        )
        folds = results[name].folds  # split once: every system on the same folds
    cmp = None
    if len(results) > 1:
        with status("comparing the systems", quiet):
            cmp = compare_backtests(results, n_resamples=n_resamples, seed=seed)
    if report_path is not None:
        from receval.workflow.backtest_report import backtest_report

        one = next(iter(results.values()))
        backtest_report(one if cmp is None else results, out=report_path, comparison=cmp)
        if not quiet:
            note_line(f"report: {report_path}")
    shown_as = Output.json if as_json else output
    if shown_as is not Output.table and not quiet:  # the table ends with them
        for line in dict.fromkeys(n for r in results.values() for n in r.notes):
            note_line(f"note: {line}")
    if cmp is None:
        show_out(render(next(iter(results.values())), shown_as), shown_as)
    else:
        show_out(_rendered(results, cmp, shown_as), shown_as)


def _report_target(given: list[Path] | None, interactions: Path) -> Path | None:
    """``--report``, checked before any fold runs, as ``report --out`` checks
    its page: given once, a name ending in .html or .htm, not the log (by
    file), not a folder, in a folder that is or can be made."""
    from receval.io.write import check_target, given_once

    path = given_once("report", given)
    if path is None:
        return None
    refuse_input_targets({"interactions": interactions}, files={"report": path})
    page = dict.fromkeys(REPORT_SUFFIXES, "html")
    suffix_format("report", path, page, "the report is an HTML page")
    check_target(path, "report", folder_made=True)
    return Path(path)


def _system_names(names: str | None, n: int) -> list[str]:
    """The systems' names: ``--names`` (one per --command), else 1, 2, ..."""
    if names is None:
        return [str(i + 1) for i in range(n)] if n > 1 else ["model"]
    given = [x.strip() for x in names.split(",")]
    if len(given) != n or len(set(given)) != n or not all(given):
        raise OptionError(
            "names",
            names,
            expected=f"{n} distinct names, comma-separated (one per --command)",
        )
    return given


def _rendered(results: dict[str, Any], cmp: Any, output: Output) -> str:
    """Several systems: each one's per-fold table, then their paired comparison."""
    import json

    import pandas as pd

    if output is Output.json:
        payload = {
            "systems": {name: r.to_dict() for name, r in results.items()},
            "comparison": cmp.to_dict(),
        }
        return json.dumps(payload, indent=2, allow_nan=False, default=str)
    if output is Output.csv:
        frames = {name: r.to_frame() for name, r in results.items()}
        return pd.concat(frames, names=["system", "fold"]).to_csv()
    if output is Output.markdown:
        parts = [f"### {name}\n\n{r.to_markdown()}" for name, r in results.items()]
        return "\n\n".join([*parts, "### paired by (fold, user)\n\n" + cmp.to_markdown()])
    if output is Output.latex:
        return "\n\n".join([*(r.to_latex() for r in results.values()), cmp.to_latex()])
    parts = [f"system {name}\n{r}" for name, r in results.items()]
    return "\n\n".join([*parts, f"paired by (fold, user):\n{cmp}"])


def _number_or_text(text: str) -> Any:
    """A flag's value as a number when it reads as one (``3600``, ``0.5``),
    else the text (a date, a duration like ``7D``)."""
    if re.fullmatch(r"\s*-?[0-9]+\s*", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def _announced(model: Any, name: str | None, quiet: bool) -> Any:
    """``model``, saying on stderr which fold it runs (unless ``quiet``)."""
    who = "" if name is None else f"{name}, "

    def fit_predict(train: Any, users: Any, fold: Any) -> Any:
        if not quiet:
            note_line(f"{who}fold {fold.number}: {len(train)} train rows, {len(users)} test users")
        return model(train, users, fold)

    fit_predict.close = model.close  # type: ignore[attr-defined]
    return fit_predict
