"""``receval demo``, ``split`` and ``check``."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Format, command, note_line, show_out
from receval.cli.flags import LOG_FLAGS, FormatOpt, Quiet, Seed, SepOpt, with_options
from receval.cli.inputs import one_of, path_input, refuse_input_targets, status
from receval.errors import (
    InputError,
    OptionError,
    ReceValError,
    for_cli,
    option,
)
from receval.evaluation.options import EvalOptions


@command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="where the demo writes its files")] = Path(
        "receval-demo"
    ),
    users: Annotated[int, typer.Option("--users", help="users of the synthetic log")] = 10_000,
    interactions: Annotated[
        Path | None,
        typer.Option(
            "--interactions",
            help="your own log (CSV/TSV/Parquet or MovieLens u.data, ratings.dat, ratings.csv)",
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="GRADE",
            help="a test item is relevant when its rating is ≥ GRADE (default: the demo's, 4)",
        ),
    ] = None,
    user_col: Annotated[
        str | None, typer.Option("--user-col", metavar="NAME", help="user column of --interactions")
    ] = None,
    item_col: Annotated[
        str | None, typer.Option("--item-col", metavar="NAME", help="item column of --interactions")
    ] = None,
    rating_col: Annotated[
        str | None,
        typer.Option("--rating-col", metavar="NAME", help="rating column of --interactions"),
    ] = None,
    timestamp_col: Annotated[
        str | None,
        typer.Option("--timestamp-col", metavar="NAME", help="timestamp column of --interactions"),
    ] = None,
    seed: Seed = 0,
    quiet: Quiet = False,
    sessions: Annotated[
        bool,
        typer.Option(
            "--sessions",
            help="the next-item protocol instead, on a built-in session log: session split, "
            "Markov, session item-kNN and popularity baselines, next-item metrics, a test "
            "(5000 sessions; console only: --out and --users are not used)",
        ),
    ] = False,
) -> None:
    """The whole protocol on built-in data: split, three baselines, metrics, tests, report."""
    if sessions:
        _session_demo(interactions, threshold, user_col, item_col, rating_col, timestamp_col)
        from receval.workflow.session_demo import run_session_demo

        run_session_demo(seed=seed, quiet=quiet, console=lambda line: show_out(for_cli(line)))
        return
    from receval.workflow.demo import FILES, run_demo

    refuse_input_targets({"interactions": interactions}, folders={"out": out_dir}, writes=FILES)
    if users <= 0:
        raise OptionError("users", users, expected="a positive number of users")
    kwargs = _demo_log(interactions, user_col, item_col, rating_col, timestamp_col)
    if threshold is not None:  # validated as every threshold is; unset: the demo's own
        kwargs["threshold"] = EvalOptions(threshold=threshold).threshold
    run_demo(
        out_dir,
        users=users,
        seed=seed,
        quiet=quiet,
        console=lambda line: show_out(for_cli(line)),
        progress=lambda what: status(what, quiet),  # a spinner naming the step
        **kwargs,
    )


def _session_demo(
    interactions: Path | None,
    threshold: float | None,
    *columns: str | None,
) -> None:
    """``demo --sessions`` runs on its built-in session log only: the flags of
    a log of one's own and of graded relevance are refused."""
    names = ("--user-col", "--item-col", "--rating-col", "--timestamp-col")
    given = [f for f, v in zip(names, columns, strict=True) if v]
    given = (["--interactions"] if interactions is not None else []) + given
    given += ["--threshold"] if threshold is not None else []
    if given:
        raise ReceValError(
            f"{one_of(given, 'and')}: not with --sessions (the session demo runs on its "
            "built-in session log, every next item relevant)"
        )


def _demo_log(
    interactions: Path | None,
    user_col: str | None,
    item_col: str | None,
    rating_col: str | None,
    timestamp_col: str | None,
) -> dict[str, Any]:
    """``demo``'s keywords for its log: ``interactions=`` and the columns
    named. With --user-col/--item-col the file is read here
    (:func:`receval.io.interactions.read_interactions`, every column named
    there); else ``rating_col=``/``timestamp_col=`` go to
    :func:`receval.workflow.demo.run_demo` with the path."""
    named = {"user_col": user_col, "item_col": item_col}
    columns = {"rating_col": rating_col, "timestamp_col": timestamp_col}
    given = {c: v for c, v in {**named, **columns}.items() if v}
    if interactions is None:
        if given:
            flags = one_of((option(c) for c in given), "and")
            raise ReceValError(f"{flags}: columns of --interactions, which is not given")
        return {"interactions": None}
    if user_col or item_col:
        from receval.io.interactions import read_interactions

        return {"interactions": read_interactions(interactions, **given)}
    return {"interactions": interactions, **{c: v for c, v in columns.items() if v}}


def _size(flag: str, text: str | None) -> int | float | None:
    """``--test-size 2`` is 2 rows (an int), ``--test-size 0.2`` a share (a float)."""
    if text is None:
        return None
    if re.fullmatch(r"\s*[0-9]+\s*", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        raise OptionError(
            flag, text, expected="a share like 0.2 or a number of rows like 2"
        ) from None


@command()
@with_options(LOG_FLAGS)
def split(
    interactions: Annotated[
        Path,
        typer.Argument(
            help="an interactions file (CSV/TSV/Parquet/JSONL/TREC qrels, MovieLens u.data, "
            "ratings.dat, ratings.csv)"
        ),
    ],
    options: EvalOptions,
    out_dir: Annotated[Path, typer.Option("--out", help="where train/test go")] = Path("split"),
    method: Annotated[
        str,
        typer.Option(
            "--method",
            metavar="random|user_random|time|user_time|leave_one_out|leave_last_out|session"
            "|time_windows",
            help="how to split",
        ),
    ] = "user_time",
    test_size: Annotated[
        str | None,
        typer.Option(
            "--test-size",
            metavar="N|SHARE",
            help="an integer: rows (per user for user_*; sessions for session), e.g. 2; a "
            "number below 1: a share (default 0.2; leave_last_out: n, default 1)",
        ),
    ] = None,
    validation_size: Annotated[
        str | None,
        typer.Option(
            "--validation-size",
            metavar="N|SHARE",
            help="also a validation part just before the test part, as --test-size (session: "
            "sessions)",
        ),
    ] = None,
    cutoff: Annotated[
        str | None,
        typer.Option(
            "--cutoff",
            metavar="TIME",
            help="time, session: the cut (a number or a date); overrides --test-size",
        ),
    ] = None,
    validation_cutoff: Annotated[
        str | None,
        typer.Option(
            "--validation-cutoff",
            metavar="TIME",
            help="time, session: rows (sessions, by the --straddle rule) from this time to "
            "--cutoff are validation; overrides --validation-size",
        ),
    ] = None,
    session_col: Annotated[
        str | None,
        typer.Option("--session-col", metavar="NAME", help="session: the session column"),
    ] = None,
    session_gap: Annotated[
        str | None,
        typer.Option(
            "--session-gap",
            metavar="DURATION",
            help="session: a new session after a longer inactivity (30min, 1h, or a number: "
            "seconds for dates, else the timestamps' unit)",
        ),
    ] = None,
    straddle: Annotated[
        str,
        typer.Option(
            "--straddle",
            metavar="test|train|drop",
            help="session: where a session across the cut goes",
        ),
    ] = "test",
    test_length: Annotated[
        str | None,
        typer.Option(
            "--test-length", metavar="DURATION", help="time_windows: each test window (7D, 4h, N)"
        ),
    ] = None,
    train_length: Annotated[
        str | None,
        typer.Option(
            "--train-length",
            metavar="DURATION",
            help="time_windows: each train window (default: all before the test window)",
        ),
    ] = None,
    step: Annotated[
        str | None,
        typer.Option(
            "--step",
            metavar="DURATION",
            help="time_windows: between two folds' test windows (default: --test-length)",
        ),
    ] = None,
    n_folds: Annotated[
        int, typer.Option("--n-folds", help="time_windows: the number of folds")
    ] = 1,
    start: Annotated[
        str | None,
        typer.Option("--start", metavar="TIME", help="time_windows: the first test window's start"),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--end",
            metavar="TIME",
            help="time_windows: the last test window's end (default: just after the last row)",
        ),
    ] = None,
    validation_length: Annotated[
        str | None,
        typer.Option(
            "--validation-length",
            metavar="DURATION",
            help="time_windows: each fold's last DURATION before its test window is its "
            "validation part (shorter than --train-length, which spans both)",
        ),
    ] = None,
    seed: Seed = 0,
    min_user_interactions: Annotated[
        int, typer.Option("--min-user-interactions", help="k-core filter on users")
    ] = 0,
    min_item_interactions: Annotated[
        int, typer.Option("--min-item-interactions", help="k-core filter on items")
    ] = 0,
    drop_unseen: Annotated[
        bool, typer.Option("--drop-unseen", help="drop test rows of users/items unseen in train")
    ] = False,
    drop_seen: Annotated[
        bool,
        typer.Option("--drop-seen", help="drop test rows whose (user, item) pair is in train"),
    ] = False,
    timestamp_col: Annotated[
        str | None,
        typer.Option(
            "--timestamp-col",
            metavar="NAME",
            help="timestamp column (default: detected: timestamp, time, ts, datetime, ...)",
        ),
    ] = None,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Split an interactions log into train and test, and say what was dropped."""
    from receval.workflow.split import FILES, split_file

    refuse_input_targets({"interactions": interactions}, folders={"out": out_dir}, writes=FILES)
    # read whole by receval.io.interactions.read_log: every part keeps the file's columns
    reading = status(f"reading and splitting {interactions} ({method})", quiet)
    with reading, _naming({"interactions": interactions}):
        result = split_file(
            interactions,
            method,  # type: ignore[arg-type]
            format=fmt.value,
            sep=sep,
            user_col=options.user_col,
            item_col=options.item_col,
            timestamp_col=timestamp_col,
            test_size=_size("test_size", test_size),
            validation_size=_size("validation_size", validation_size),
            seed=seed,
            min_user_interactions=min_user_interactions,
            min_item_interactions=min_item_interactions,
            drop_unseen_users=drop_unseen,
            drop_unseen_items=drop_unseen,
            drop_seen=drop_seen,
            **_sequential(
                method,
                cutoff=cutoff,
                validation_cutoff=validation_cutoff,
                session_col=session_col,
                session_gap=session_gap,
                straddle=straddle,
                test_length=test_length,
                train_length=train_length,
                step=step,
                n_folds=n_folds,
                start=start,
                end=end,
                validation_length=validation_length,
            ),
        )
    with status(f"writing {out_dir}", quiet):
        saved = result.save(out_dir)
    show_out(str(result))  # what was written, once it is: a failed write says only its error
    for name, path in saved.items():
        if not quiet:
            note_line(f"{name}: {path}")


def _number_or_text(text: str | None) -> Any:
    """A flag's value as a number when it reads as one (``1800``, ``0.5``),
    else the text (a date, a duration like ``30min``)."""
    if text is None:
        return None
    if re.fullmatch(r"\s*-?[0-9]+\s*", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def _sequential(method: str, **given: Any) -> dict[str, Any]:
    """The options of the session and time-window splits (and ``--cutoff``),
    numbers read as numbers; those left at their default are not passed, so
    another method's flag given to a method is refused by the library, naming it."""
    defaults = {"straddle": "test", "n_folds": 1}
    out = {}
    for name, value in given.items():
        if value is None or defaults.get(name, object()) == value:
            continue
        out[name] = (
            value if name in ("straddle", "n_folds", "session_col") else _number_or_text(value)
        )
    return out


def _log(path: Path | None, fmt: Format, sep: str | None, options: EvalOptions) -> Any:
    """An interactions log ``check`` reads, as the file holds it (every
    column under its own name: :func:`receval.io.interactions.read_log`), or None."""
    from receval.io.interactions import read_log

    if path is None:
        return None
    named = {"user_col": options.user_col, "item_col": options.item_col}
    return read_log(path, format=fmt.value, sep=sep, **named)


@command()
@with_options(LOG_FLAGS)
def check(
    options: EvalOptions,
    recs: Annotated[Path | None, typer.Option("--recs", help="recommendations file")] = None,
    train: Annotated[Path | None, typer.Option("--train", help="training interactions")] = None,
    test: Annotated[Path | None, typer.Option("--test", help="test interactions")] = None,
    validation: Annotated[
        Path | None,
        typer.Option(
            "--validation",
            help="validation interactions (a split's validation part): checked against train "
            "and test as test is against train",
        ),
    ] = None,
    k: Annotated[int | None, typer.Option("-k", help="the largest cut-off you will use")] = None,
    chronological: Annotated[
        bool,
        typer.Option(
            "--chronological",
            help="the split is chronological: timestamps are required (missing: exit 2)",
        ),
    ] = False,
    not_chronological: Annotated[
        bool,
        typer.Option(
            "--not-chronological",
            help="the split is random: test rows may precede train rows (time not checked)",
        ),
    ] = False,
    timestamp_col: Annotated[
        str, typer.Option("--timestamp-col", metavar="NAME", help="timestamp column")
    ] = "timestamp",
    session_col: Annotated[
        str | None,
        typer.Option(
            "--session-col",
            metavar="NAME",
            help="a session split: sessions (per user) in both train and test are leakage",
        ),
    ] = None,
    session_gap: Annotated[
        str | None,
        typer.Option(
            "--session-gap",
            metavar="DURATION",
            help="as --session-col, sessions cut by an inactivity gap (30min, or a number)",
        ),
    ] = None,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Look for leakage and oddities: train/test overlap, time travel, seen items
    recommended, cold start, ties, duplicates.

    With --train and --test: test rows also in train, and (when both have the
    timestamp column) test rows earlier than the user's latest train row, are
    leakage; with --validation, the same between train and validation and
    between validation and test. The findings go to stdout; exit code 1 when
    leakage is found, 0 otherwise (warnings included), 2 on bad input. ``-q`` is accepted for
    symmetry (nothing else is printed)."""
    from receval.workflow.checks import check as run

    if recs is None and train is None and test is None and validation is None:
        raise ReceValError("check needs at least one of --recs, --train, --test, --validation")
    if chronological and not_chronological:
        raise ReceValError("--chronological and --not-chronological exclude each other")
    files = {"train": train, "validation": validation, "test": test, "recommendations": recs}
    with status("reading and checking", quiet), _naming(files):
        report_ = run(  # the recommendations opened by the library, as evaluate opens them
            train=_log(train, fmt, sep, options),
            test=_log(test, fmt, sep, options),
            validation=_log(validation, fmt, sep, options),
            recs=None if recs is None else path_input(recs, fmt, sep),
            k=k,
            chronological=True if chronological else (False if not_chronological else None),
            options=options,
            timestamp_col=timestamp_col,
            session_col=session_col,
            session_gap=_number_or_text(session_gap),
        )
    show_out(report_.render(cli=True))
    if not quiet:  # each file against its set's manifest; parts of different splits
        from receval.io.manifest import set_notes

        for line in set_notes({f"--{role}": path for role, path in files.items()}):
            note_line(f"note: {line}")
    if report_.leakage:
        found = ", ".join(f"{f.code} ({f.count})" for f in report_.leakage)
        show_out(f"leakage found: {found}; exit code 1")
        raise typer.Exit(code=1)


@contextlib.contextmanager
def _naming(files: Mapping[str, Path | None]) -> Iterator[None]:
    """An input error about one of ``files`` (by its role: train, test, ...)
    names the file given for it."""
    try:
        yield
    except InputError as exc:
        path = files.get(str(exc.source))
        if path is None:
            raise
        raise exc.located(source=str(path)) from None
