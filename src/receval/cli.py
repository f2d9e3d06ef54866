"""The ``receval`` command line: parsing and rendering only; the work is in the library.

Every command that evaluates takes the same policy and column flags, made
from the one table of options (:data:`receval.evaluation.options.OPTIONS`:
:data:`POLICY_FLAGS`, :data:`COLUMN_FLAGS`) and turned into one
:class:`~receval.EvalOptions` (:func:`_with_options`); a flag left unset is
None, so the convention's preset applies.

The commands read no file themselves (issue #30, "one way in"): they hand
the paths, ``--format`` and ``--sep`` riding along as a
:class:`~receval.io.inputs.FileInput`, and the options unchanged down to the
library, whose one reader opens every input. Where a library function takes
tables only (``--remove-seen``, ``check``, ``inspect``, ``evaluate-ratings``)
the file is opened by :func:`receval.io.inputs.opened` or an interactions
reader of :mod:`receval.io.interactions`, never here.

Exit codes: 0 success; 2 a usage or input error (one or two lines on stderr
naming the file, line, user and item, no traceback); 1 an internal error.

Everything the commands print goes through one boundary (:func:`_note`,
:func:`_fail`, :func:`_show`): no rich markup is read in it (a ``[/]`` in a
file name is text), the terminal's text has its control characters written as
escapes (:func:`~receval.analysis.formatting.visible`), and JSON, CSV,
Markdown and LaTeX go to stdout as they are (data, ids exact).
"""

from __future__ import annotations

import contextlib
import functools
import inspect as _inspect
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from receval import __version__, _malloc
from receval.analysis.formatting import visible
from receval.errors import (
    SIGNAL_MESSAGES,
    InputError,
    NoSharedUser,
    OptionError,
    OutputError,
    ReceValError,
    for_cli,
    option,
    shown,
)
from receval.evaluation.conventions import CONVENTIONS
from receval.evaluation.options import OPTIONS, EvalOptions, Option
from receval.evaluation.result import markdown_escape


def _flags_as_flags(params: list[Any]) -> list[Any]:
    """Boolean flags shown in ``--help`` as flags, with no ``<bool>`` value."""
    for p in params:
        if getattr(p, "is_flag", False) and not getattr(p, "count", False):
            p.metavar = ""
    return params


def _help_as_written(command: Any) -> None:
    """``--help`` shows every help text as written: typer reads them as rich
    markup, where ``pip install 'receval[spark]'`` would lose ``[spark]``;
    escaped once here, when the command is built, none can."""
    for name in ("help", "short_help"):
        if getattr(command, name, None):
            setattr(command, name, escape(getattr(command, name)))
    for param in getattr(command, "params", []):
        if getattr(param, "help", None):
            param.help = escape(param.help)


class _Command(TyperCommand):
    """A command whose ``--help`` shows boolean flags as flags, and its help
    texts as written (:func:`_help_as_written`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _help_as_written(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_as_flags(super().get_params(ctx))


class _Group(TyperGroup):
    """The ``receval`` group, whose ``--help`` shows boolean flags as flags,
    and its help texts as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _help_as_written(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_as_flags(super().get_params(ctx))


app = typer.Typer(
    name="receval",
    help="Offline evaluation of recommender systems, every definition explicit.",
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# no markup, emoji codes or highlighting: what they print is text, never read as markup
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
command = functools.partial(app.command, cls=_Command)


# -- the one printing boundary: every line the commands print goes through these ------------


def _note(text: str) -> None:
    """One line on stderr (a note, a file read or written): never read as
    markup, its control characters written as escapes."""
    err.print(visible(text), markup=False, emoji=False)


def _fail(text: str) -> None:
    """The one line of an error on stderr, as :func:`_note` prints it."""
    _note(f"error: {text}")


def _show(text: str, output: Output | None = None) -> None:
    """A command's result on stdout. For the terminal (a table, a summary:
    ``output`` None or table) never read as markup, its control characters
    escaped (lines kept); JSON, CSV, Markdown and LaTeX as they are, byte for
    byte: data whose ids stay exact when redirected to a file."""
    if output is None or output is Output.table:
        out.print(visible(text, lines=True), markup=False, emoji=False)
        return
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Output(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"


class Engine(StrEnum):
    numpy = "numpy"
    spark = "spark"


class Format(StrEnum):
    auto = "auto"
    csv = "csv"
    tsv = "tsv"
    parquet = "parquet"
    jsonl = "jsonl"
    trec = "trec"


# -- the flags every evaluating command shares, made from the one table of options -----------

_POLICIES = "Evaluation policies (unset: the convention's value)"
_COLUMNS = "Columns (unset: detected)"

#: the Python type of each kind of option's flag (unset: None, the convention decides)
_FLAG_TYPES: Mapping[str, Any] = {
    "convention": str | None,
    "number": float | None,
    "count": int | None,
    "flag": bool | None,
    "choice": str | None,
    "column": str | None,
}


def _default_text(o: Option) -> str:
    """`` (receval's default: …)`` of an option's help; nothing where unset
    means something its help line says (``--no-truth``, ``--depth``, columns)."""
    if o.kind == "convention":
        conventions = ", ".join(sorted(CONVENTIONS))
        return f": {conventions} (docs/conventions.md; receval's default: {o.default})"
    if o.default is None:
        return ""
    if o.kind == "flag":
        return f" (receval's default: {o.flag.split('/')[0 if o.default else 1]})"
    shown_ = f"{o.default:g}" if o.kind == "number" else str(o.default)
    return f" (receval's default: {shown_})"


def _flag(o: Option) -> Any:
    """The command line's flag of option ``o`` (:data:`~receval.evaluation.options.OPTIONS`):
    its spelling, value's name, help line and panel, and its Python type."""
    settings: dict[str, Any] = {
        "help": o.help + _default_text(o),
        "rich_help_panel": _COLUMNS if o.kind == "column" else _POLICIES,
    }
    if o.kind == "flag":
        settings["show_default"] = False
    else:
        settings["metavar"] = "|".join(o.choices) if o.kind == "choice" else o.metavar or None
    return Annotated[_FLAG_TYPES[o.kind], typer.Option(o.flag, **settings)]


def _flags(names: Any) -> dict[str, Any]:
    """name -> flag of the options ``names``, in the table's order."""
    wanted = set(names)
    return {o.name: _flag(o) for o in OPTIONS if o.name in wanted}


#: the policy flags (a field of :class:`~receval.EvalOptions` each) -> their declaration
POLICY_FLAGS: Mapping[str, Any] = _flags(o.name for o in OPTIONS if o.kind != "column")

#: the column flags of recommendation and truth files
COLUMN_FLAGS: Mapping[str, Any] = _flags(
    o.name for o in OPTIONS if o.kind == "column" and not o.ratings
)

#: the columns of an interactions log (split, check)
LOG_FLAGS: Mapping[str, Any] = _flags(("user_col", "item_col"))

#: the columns of a ratings file (evaluate-ratings)
RATING_FLAGS: Mapping[str, Any] = _flags(
    ("user_col", "item_col", *(o.name for o in OPTIONS if o.ratings))
)


def _with_options(*groups: Mapping[str, Any]) -> Callable[[Callable[..., Any]], Any]:
    """Add the flags of ``groups`` to a command and give it one ``options``
    (an :class:`~receval.EvalOptions` built from them) instead.

    The flags are declared once here, so they have the same name, help and
    meaning on every command; unset flags are None (the convention decides).
    """
    flags = {name: ann for group in groups for name, ann in group.items()}

    def wrap(func: Callable[..., Any]) -> Any:
        sig = _inspect.signature(func, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "options"]
        added = [
            _inspect.Parameter(name, _inspect.Parameter.KEYWORD_ONLY, default=None, annotation=a)
            for name, a in flags.items()
        ]

        @functools.wraps(func)
        def run(**kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in flags}
            return func(**kwargs, options=EvalOptions.build(None, **given))

        params = own + added
        run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap


Metrics = Annotated[
    list[str] | None,
    typer.Option("-m", "--metric", help="metric, e.g. ndcg@10 or map@5,10 (repeatable)"),
]
Cutoffs = Annotated[
    str | None,
    typer.Option("-k", metavar="K,K,...", help="cut-offs for the metrics given without @k"),
]
OutputOpt = Annotated[Output, typer.Option("--output", "-o")]
JsonFlag = Annotated[bool, typer.Option("--json", help="same as --output json")]
FormatOpt = Annotated[Format, typer.Option("--format", help="input format")]


def _sep(value: str | None) -> str | None:
    """``--sep '\\t'`` (a backslash and a t, as shells pass it) is a tab."""
    return "\t" if value == "\\t" else value


SepOpt = Annotated[
    str | None,
    typer.Option(
        "--sep",
        help="CSV delimiter: one character; \\t is a tab (default: detected)",
        show_default=False,
        callback=_sep,
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="print nothing on stderr")]
Names = Annotated[str | None, typer.Option("--names", help="system names, comma-separated")]
Seed = Annotated[int, typer.Option("--seed", help="the random seed")]

_ITEMS = "Beyond-accuracy inputs"
Train = Annotated[
    Path | None,
    typer.Option(
        "--train", help="training interactions (novelty, arp, ...)", rich_help_panel=_ITEMS
    ),
]
UserGroups = Annotated[
    str | None,
    typer.Option(
        "--user-groups",
        metavar="FILE|activity|cold_start",
        help="also evaluate groups of users: a file with a user column and one column per "
        "grouping, or activity / cold_start (from --train)",
    ),
]
ItemGroups = Annotated[
    Path | None,
    typer.Option(
        "--item-groups",
        help="groups of items (rsp, reo, exposure, awrf, miscalibration): an item column "
        "and a group column, one row per (item, group)",
        rich_help_panel=_ITEMS,
    ),
]
Catalog = Annotated[
    Path | None,
    typer.Option("--catalog", help="file of catalog items (coverage)", rich_help_panel=_ITEMS),
]
ItemFeatures = Annotated[
    Path | None,
    typer.Option(
        "--item-features",
        help="item features for ild: an item column and numeric feature columns",
        rich_help_panel=_ITEMS,
    ),
]
Popular = Annotated[
    Path | None,
    typer.Option(
        "--popular", help="file of the items serendipity treats as popular", rich_help_panel=_ITEMS
    ),
]
RemoveSeen = Annotated[
    bool,
    typer.Option(
        "--remove-seen",
        help="drop recommended items the user has in --train before evaluating "
        "(ranks renumbered; counted)",
        rich_help_panel=_ITEMS,
    ),
]

_SPARK = "Engine"
EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="numpy: in this process; spark: on a Spark session, files read by Spark "
        "(local, HDFS, S3 paths; pip install 'receval[spark]')",
        rich_help_panel=_SPARK,
    ),
]
Master = Annotated[
    str | None,
    typer.Option(
        "--master",
        metavar="URL",
        help="with --engine spark: the Spark master, e.g. local[4], yarn, spark://host:7077 "
        "(default: the active session's, under spark-submit, else local[*])",
        rich_help_panel=_SPARK,
    ),
]

_TESTS = "Significance"
Baseline = Annotated[
    str | None,
    typer.Option("--baseline", help="compare every run with this one", rich_help_panel=_TESTS),
]
Test = Annotated[
    str,
    typer.Option(
        "--test",
        metavar="t|wilcoxon|randomization|tukey",
        help="paired test, or tukey: the randomised Tukey HSD test of all pairs",
        rich_help_panel=_TESTS,
    ),
]
Correction = Annotated[
    str | None,
    typer.Option(
        "--correction",
        metavar="holm|bonferroni|bh|none",
        help="multiple-comparison correction (default holm; none with --test tukey)",
        rich_help_panel=_TESTS,
        show_default=False,
    ),
]
Alpha = Annotated[float, typer.Option("--alpha", help="significance level", rich_help_panel=_TESTS)]
Resamples = Annotated[
    int,
    typer.Option(
        "--n-resamples",
        help="resamples of the bootstrap and randomization test",
        rich_help_panel=_TESTS,
    ),
]
_TRACKING = "Tracking"
MlflowFlag = Annotated[
    bool,
    typer.Option(
        "--mlflow",
        help="log the numbers, options, counts and tables to MLflow (MLFLOW_TRACKING_URI; "
        'needs pip install "receval[mlflow]")',
        rich_help_panel=_TRACKING,
    ),
]
MlflowExperiment = Annotated[
    str | None,
    typer.Option(
        "--mlflow-experiment",
        metavar="NAME",
        help="with --mlflow: the experiment (created if need be)",
        rich_help_panel=_TRACKING,
    ),
]
MlflowRunName = Annotated[
    str | None,
    typer.Option(
        "--mlflow-run-name",
        metavar="NAME",
        help="with --mlflow: the name of the run",
        rich_help_panel=_TRACKING,
    ),
]
MlflowNoReport = Annotated[
    bool,
    typer.Option(
        "--no-mlflow-report",
        help="with --mlflow: leave out the HTML report (its curves read the lists once more)",
        rich_help_panel=_TRACKING,
    ),
]


# -- helpers ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _status(message: str, quiet: bool) -> Iterator[None]:
    """A spinner on stderr while something runs; silent off a terminal or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    with err.status(visible(message)):
        yield


@contextlib.contextmanager
def _progress(reading: str, quiet: bool) -> Iterator[Any]:
    """On stderr, a spinner saying what the library is ``reading``, then how
    many recommendation rows it has evaluated (the inputs are read by the
    library: their rows are counted as they go). Silent off a terminal or
    with --quiet."""
    if quiet or not err.is_terminal:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(visible(reading), total=None)
        yield lambda done: bar.update(task, description=f"evaluating: {done:,} rows")


#: ``--per-user``: the file's suffix -> the format written (with ``--engine spark``,
#: a folder of part files of that format)
PER_USER_FORMATS: Mapping[str, str] = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
#: ``report --out``: the suffixes of the HTML page it writes
REPORT_SUFFIXES = (".html", ".htm")


def _one_of(words: Any, last: str = "or") -> str:
    """``a, b or c`` (``last``: the last word's conjunction)."""
    words = list(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}" if len(words) > 1 else "".join(words)


def _suffix_format(flag: str, path: str | Path, formats: Mapping[str, str], what: str) -> str:
    """The format the suffix of the output ``--flag path`` chooses; any other
    suffix is a :class:`~receval.errors.ReceValError` (exit 2, before any
    work) naming the flag, the file, the suffix found and ``what`` is written
    (e.g. "the report is an HTML page"): a file is never
    written in a format its name does not say."""
    suffix = Path(str(path).rstrip("/")).suffix.lower()
    if suffix in formats:
        return formats[suffix]
    found = f"receval writes no {suffix} file" if suffix else "the name has no suffix"
    raise ReceValError(
        f"{option(flag, path)}: {found}; {what}: give a name ending in {_one_of(formats)}"
    )


def _per_user_format(path: str, engine: Engine) -> str:
    """``--per-user``'s format (:data:`PER_USER_FORMATS`), checked before any
    evaluation; in this process, a folder there is refused at once."""
    if engine is Engine.numpy and Path(path).is_dir():
        raise OutputError(
            f"cannot write {option('per_user', path)}: it is a folder; give a file name "
            f"ending in {_one_of(PER_USER_FORMATS)}",
            path=path,
        )
    what = "the per-user table is CSV or Parquet, as its suffix says"
    return _suffix_format("per_user", path, PER_USER_FORMATS, what)


def _write_per_user(frame: Any, path: Path, fmt: str) -> None:
    """The per-user table written whole (:func:`_write_atomic`) as ``fmt``."""
    if fmt == "parquet":
        _write_atomic(path, lambda p: frame.to_parquet(p, index=False))
    else:
        _write_atomic(path, lambda p: _per_user_csv(frame, p))


def _write_atomic(path: Path, write: Any) -> None:
    """Write through receval.io.write.atomic_write: whole or not at all, links replaced."""
    from receval.io.write import atomic_write

    atomic_write(path, write)


def _mlflow_ready(
    on: bool, experiment: str | None, run_name: str | None, no_report: bool = False
) -> None:
    """Exit 2 before any work if --mlflow cannot log (mlflow not installed) or an
    --mlflow-* flag comes without --mlflow."""
    if not on:
        given = {
            "--mlflow-experiment": experiment is not None,
            "--mlflow-run-name": run_name is not None,
            "--no-mlflow-report": no_report,
        }
        for flag, is_given in given.items():
            if is_given:
                raise ReceValError(f"{flag} goes with --mlflow")
        return
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise ReceValError('--mlflow needs mlflow: pip install "receval[mlflow]"') from None


def _log_mlflow(
    obj: Any,
    on: bool,
    experiment: str | None,
    run_name: str | None,
    quiet: bool,
    page: Any = None,
) -> None:
    """--mlflow: log ``obj`` (receval.analysis.tracking.log_mlflow), with the
    HTML report ``page`` when there is one, and say where."""
    if not on:
        return
    from mlflow.exceptions import MlflowException

    from receval.analysis.tracking import log_mlflow

    try:
        report = page if page is not None else True
        run_id = log_mlflow(obj, experiment=experiment, run_name=run_name, report=report)
    except MlflowException as exc:  # e.g. a tracking server that cannot be reached
        raise ReceValError(f"--mlflow: MLflow refused: {exc.message}") from None
    if not quiet:
        _note(f"logged to MLflow run {run_id}")


def _refuse_inputs(flag: str, path: Path, **inputs: Path | None) -> None:
    """Exit 2 before any work if the output ``--flag path`` is one of the command's inputs."""
    from receval.io.write import refuse_inputs

    named = [(k if " " in k else k.replace("_", " ") + " file", p) for k, p in inputs.items()]
    refuse_inputs((option(flag, path), path), named)


def _metrics(metric: list[str] | None, cutoffs: str | None) -> list[str]:
    from receval.metrics.spec import parse_metrics

    if not metric:
        raise ReceValError("give at least one metric with -m, e.g. -m ndcg@10")
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
_ITEM_ROLES: Mapping[str, str] = {
    "train": "train",
    "catalog": "items",
    "item_features": "items",
    "popular": "items",
    "item_groups": "items",
    "user_groups": "user_groups",
}


def _input(path: str | Path, fmt: Format = Format.auto, sep: str | None = None) -> Any:
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


def _input_files(items: Mapping[str, Path | None], user_groups: str | None) -> dict[str, Path]:
    """The files of the other inputs by their keyword (``train``,
    ``catalog``, ..., ``user_groups`` when it names a file): an input error
    about one of them names its file, as one about the lists does."""
    files = {name: Path(path) for name, path in items.items() if path is not None}
    if user_groups is not None and _is_file_of_groups(user_groups):
        files["user_groups"] = Path(user_groups)
    return files


def _item_inputs(
    items: Mapping[str, Path | None], user_groups: str | None, sep: str | None
) -> dict[str, Any]:
    """``--train``, ``--catalog``, ..., ``--user-groups`` as the library's
    keywords: their files (any format, ``--sep`` their delimiter), or a
    built-in grouping's name."""
    extra = {name: _input(path, Format.auto, sep) for name, path in items.items() if path}
    if user_groups is not None:
        grouped = _is_file_of_groups(user_groups)
        extra["user_groups"] = _input(user_groups, Format.auto, sep) if grouped else user_groups
    return extra


def _as_read(given: Any, role: str, cols: Any) -> Any:
    """``given`` opened by the one way in (:func:`receval.io.inputs.opened`),
    as a pandas DataFrame with the file's own column names: what a function
    that takes tables only (``remove_seen``, ``check``) reads as the library
    would, the column options applying to it as to the file."""
    from receval.io.inputs import opened

    table, _, info = opened(given, role, cols)
    frame = table.to_pandas() if hasattr(table, "to_pandas") else table
    if info is None:
        return frame
    return frame.rename(columns={r: c for r, c in info.columns.items() if r in frame})


def _item_files(
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


def _locate(exc: InputError, inputs: Mapping[str, tuple[Any, str | None]], cols: Any) -> InputError:
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


def _seen_in(train: Any, options: EvalOptions) -> Any:
    """``--remove-seen``'s training interactions, opened once (a table, the
    file's column names)."""
    if train is None:
        raise ReceValError("--remove-seen needs --train (the items each user has seen)")
    return _as_read(train, "train", options.columns())


def _remove_seen(
    recs: Any, train: Any, name: str, options: EvalOptions, quiet: bool
) -> tuple[Any, int]:
    """``recs`` (opened: :func:`_as_read`) without the items the user has in
    ``train`` (:func:`receval.workflow.checks.remove_seen`), and how many rows went."""
    from receval.workflow.checks import remove_seen

    kept = remove_seen(
        _as_read(recs, "recommendations", options.columns()),
        train,
        user_col=options.user_col,
        item_col=options.item_col,
        rank_col=options.rank_col,
    )
    removed = int(kept.attrs["removed"])
    if not quiet:
        _note(f"{name}: {removed} recommendation rows seen in --train removed")
    return kept, removed


def _note_columns(result: Any, paths: Mapping[str, Any], quiet: bool) -> None:
    """Say which column of each file (``paths``: role -> file) the library
    read for a role under another name (``Result.parameters["columns"]``)."""
    if quiet:
        return
    found = result.parameters.get("columns", {})
    for role, path in paths.items():
        for read_as, column in found.get(role, {}).items():
            if column != read_as:
                _note(f"{path}: using column {column} as {read_as}")


def _format_of(path: str | Path, fmt: Format) -> str:
    """The format a file was read in: ``--format``, else the one its name
    tells (``auto``: told by its content)."""
    from receval.io.files import format_by_suffix

    if fmt is not Format.auto:
        return fmt.value
    return format_by_suffix(path) or "auto"


def _inputs_record(result: Any, paths: Mapping[str, Any], fmt: Format) -> dict[str, Any]:
    """``Result.parameters["inputs"]``: each file's path, format and columns read."""
    found = result.parameters.get("columns", {})
    return {
        role: {"path": str(path), "format": _format_of(path, fmt), "columns": found.get(role, {})}
        for role, path in paths.items()
    }


def _render(result: Any, output: Output) -> str:
    if output is Output.json:
        return result.to_json() if hasattr(result, "to_json") else json.dumps(result, indent=2)
    if output is Output.markdown:
        return result.to_markdown()
    if output is Output.latex:
        return result.to_latex()
    if output is Output.csv:
        return result.to_frame().to_csv()
    return str(result)


# -- commands ---------------------------------------------------------------------------------


@command()
@_with_options(POLICY_FLAGS, COLUMN_FLAGS)
def evaluate(
    recs_path: Annotated[
        str,
        typer.Argument(metavar="RECS", help="recommendations: CSV/TSV/Parquet/JSONL/TREC run"),
    ],
    truth_path: Annotated[
        str, typer.Argument(metavar="TRUTH", help="truth: CSV/TSV/Parquet/JSONL/TREC qrels")
    ],
    options: EvalOptions,
    metric: Metrics = None,
    k: Cutoffs = None,
    per_user_path: Annotated[
        str | None,
        typer.Option(
            "--per-user",
            metavar="PATH",
            help="write per-user values to a .csv or .parquet (.pq) file, as the suffix says "
            "(with --engine spark: a folder of that format, written by Spark)",
        ),
    ] = None,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    train: Train = None,
    catalog: Catalog = None,
    item_features: ItemFeatures = None,
    popular: Popular = None,
    remove_seen: RemoveSeen = False,
    user_groups: UserGroups = None,
    item_groups: ItemGroups = None,
    engine: EngineOpt = Engine.numpy,
    master: Master = None,
    mlflow: MlflowFlag = False,
    mlflow_experiment: MlflowExperiment = None,
    mlflow_run_name: MlflowRunName = None,
    no_mlflow_report: MlflowNoReport = False,
    quiet: Quiet = False,
) -> None:
    """Evaluate a file of recommendations against a file of truth."""
    metrics = _metrics(metric, k)
    _mlflow_ready(mlflow, mlflow_experiment, mlflow_run_name, no_mlflow_report)
    items = _item_files(train, catalog, item_features, popular, item_groups)
    shown_as = Output.json if as_json else output
    if engine is Engine.spark:
        if per_user_path is not None:
            _per_user_format(per_user_path, engine)
        _evaluate_spark(
            recs_path,
            truth_path,
            metrics,
            options,
            master=master,
            per_user=per_user_path,
            output=shown_as,
            fmt=fmt,
            sep=sep,
            items=items,
            user_groups=user_groups,
            remove_seen=remove_seen,
            quiet=quiet,
            mlflow=(mlflow_experiment, mlflow_run_name) if mlflow else None,
        )
        return
    if master is not None:
        raise ReceValError("--master chooses the Spark master: it needs --engine spark")
    recs, truth = Path(recs_path), Path(truth_path)
    per_user = None if per_user_path is None else Path(per_user_path)
    per_user_format = None
    if per_user is not None:
        _refuse_inputs("per_user", per_user, recommendations=recs, truth=truth, **items)
        per_user_format = _per_user_format(str(per_user), engine)
    result, inputs = _evaluate_files(
        (recs, truth), metrics, options, fmt, sep, items, user_groups, remove_seen, quiet
    )
    page = None
    if mlflow and not no_mlflow_report:
        page = _result_report(result, (recs, truth), inputs, options, quiet)
    if per_user is not None and per_user_format is not None:
        _write_per_user(result.per_user.reset_index(), per_user, per_user_format)
    _show(_render(result, shown_as), shown_as)
    _log_mlflow(result, mlflow, mlflow_experiment, mlflow_run_name, quiet, page)


def _evaluate_files(
    files: tuple[Path, Path],
    metrics: list[str],
    options: EvalOptions,
    fmt: Format,
    sep: str | None,
    items: Mapping[str, Path | None],
    user_groups: str | None,
    remove_seen: bool,
    quiet: bool,
) -> tuple[Any, dict[str, Any]]:
    """``evaluate`` in this process: the files handed down to
    :func:`receval.evaluate`, which opens them (two Parquet files stream by
    chunks of users); an input error names the file and its line. Returns
    the Result (with the files read and their columns in its parameters) and
    the inputs handed down (``recommendations``, ``truth``, ``train``, ...)."""
    from receval.evaluation.api import evaluate as run

    recs, truth = files
    inputs = {"recommendations": _input(recs, fmt, sep), "truth": _input(truth, fmt, sep)}
    inputs |= _item_inputs(items, user_groups, sep)
    where: dict[str, tuple[Any, str | None]] = {
        r: (inputs[r], r) for r in ("recommendations", "truth")
    }
    where |= {k: (inputs[k], _ITEM_ROLES[k]) for k in _input_files(items, user_groups)}
    removed = None
    if remove_seen:
        inputs["train"] = _seen_in(inputs.get("train"), options)
        inputs["recommendations"], removed = _remove_seen(
            inputs["recommendations"], inputs["train"], str(recs), options, quiet
        )
        where["recommendations"] = (where["recommendations"][0], None)  # rows are not lines
    try:
        with _progress(f"reading {recs} and {truth}", quiet) as bar:
            recs_in, truth_in = inputs["recommendations"], inputs["truth"]
            extra = {k: v for k, v in inputs.items() if k in _ITEM_ROLES}
            result = run(recs_in, truth_in, metrics, options=options, progress=bar, **extra)
    except NoSharedUser:
        raise  # about both inputs, not one file's row
    except InputError as exc:
        raise _locate(exc, where, options.columns()) from None
    paths = {"recommendations": recs, "truth": truth}
    _note_columns(result, paths, quiet)
    if removed is not None:
        result.parameters["remove_seen"] = True
        result.counts["recommendation_rows_seen_in_train_removed"] = removed
    result.parameters["inputs"] = _inputs_record(result, paths, fmt)
    return result, inputs


def _result_report(
    result: Any,
    files: tuple[Path, Path],
    inputs: Mapping[str, Any],
    options: EvalOptions,
    quiet: bool,
) -> Any:
    """``evaluate --mlflow``: the HTML report of the one system evaluated
    (:func:`receval.report`), its leaderboard drawn from ``result`` (means
    without bootstrap intervals: those are ``receval report``'s, with
    ``--n-resamples``); its curves evaluate the lists once more (``inputs``:
    what :func:`_evaluate_files` handed down)."""
    from receval.analysis.compare import compare as compare_runs
    from receval.analysis.report import report as make_report

    recs, truth = files
    name = recs.stem or "recommendations"
    items = {k: v for k, v in inputs.items() if k in _ITEM_ROLES and k != "user_groups"}
    runs, truth_in = inputs["recommendations"], inputs["truth"]
    with _status("computing the report", quiet):
        cmp = compare_runs(
            {name: result}, truth_in, result.metrics, ci="none", options=options, **items
        )
        return make_report(
            {name: runs},
            truth_in,
            comparison=cmp,
            title=f"receval evaluate {recs.name}",
            provenance={"recommendations": str(recs), "truth": str(truth)},
            options=options,
            **items,
        )


def _evaluate_spark(
    recs: str,
    truth: str,
    metrics: list[str],
    options: EvalOptions,
    *,
    master: str | None,
    per_user: str | None,
    output: Output,
    fmt: Format,
    sep: str | None,
    items: Mapping[str, Path | None],
    remove_seen: bool,
    quiet: bool,
    user_groups: str | None = None,
    mlflow: tuple[str | None, str | None] | None = None,
) -> None:
    """``evaluate --engine spark``: the files read by Spark, evaluated on its
    session (:mod:`receval.evaluation.spark`); errors name the file and the
    user (a Spark row has no line number). ``mlflow``: (experiment, run name)
    of ``--mlflow`` (the result is logged without an HTML report: its curves
    read the lists in this process)."""
    from receval.evaluation.api import evaluate as run

    if remove_seen:
        raise OptionError(
            "remove_seen",
            True,
            reason="--remove-seen runs in this process: remove seen items in Spark first "
            "(a left anti join of the recommendations with --train), or use --engine numpy",
        )
    from receval.evaluation import spark as engine

    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ReceValError("--engine spark needs pyspark: pip install 'receval[spark]'") from None
    # this process is the command line's own: PySpark's warnings about the
    # pandas version it was built for are not the user's business here
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\.")
    with _status("starting Spark", quiet):
        session = engine.session(master, quiet_log=True)
    cols = options.columns()
    with _status("reading with Spark", quiet):
        recs_df = engine.read(session, recs, "recommendations", fmt.value, sep)
        truth_df = engine.read(session, truth, "truth", fmt.value, sep)
        extra: dict[str, Any] = {}
        paths = {name: str(path) for name, path in items.items() if path is not None}
        if "train" in paths:
            extra["train"] = engine.read(session, paths["train"], "truth", "auto", sep)
        for name in ("catalog", "popular"):
            if name in paths:
                df = engine.read(session, paths[name], "items", "auto", sep)
                extra[name] = engine.items_of(df, cols, paths[name])
        if "item_features" in paths:
            feats = engine.read(session, paths["item_features"], "items", "auto", sep)
            frame = feats.toPandas()
            extra["item_features"] = frame.drop(
                columns=[c for c in ("user", "relevance") if c in frame]
            )
    # O(items) and O(users): opened by the library in this process, as in-process
    groups = {"item_groups": items.get("item_groups")}
    extra |= _item_inputs(groups, user_groups, sep)
    try:
        with _status("evaluating on Spark", quiet):
            result = run(recs_df, truth_df, metrics, options=options, **extra)
    except NoSharedUser:
        raise
    except InputError as exc:
        files = {k: str(v) for k, v in _input_files({}, user_groups).items()}
        where = {"recommendations": recs, "truth": truth, **paths, **files}.get(str(exc.source))
        raise exc.located(source=where) if where is not None else exc from None
    result.parameters["inputs"] = {
        "recommendations": {"path": recs, "format": engine.format_of(recs, fmt.value)},
        "truth": {"path": truth, "format": engine.format_of(truth, fmt.value)},
    }
    if per_user is not None:  # written by Spark: a folder of part files, _SUCCESS last
        with _status(f"writing {per_user} with Spark", quiet):
            engine.write_per_user(result.per_user_spark, per_user)
    _show(_render(result, output), output)
    if mlflow is not None:
        _log_mlflow(result, True, *mlflow, quiet)


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


@command("evaluate-ratings")
@_with_options(RATING_FLAGS)
def evaluate_ratings(
    ratings: Annotated[Path, typer.Argument(help="(user, item, actual, predicted) rows")],
    options: EvalOptions,
    metric: Metrics = None,
    dropna: Annotated[
        bool, typer.Option("--dropna", help="drop rows with a missing rating (counted)")
    ] = False,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
) -> None:
    """Rating-prediction metrics (mae, rmse, r2, pearson, ...) of a ratings file."""
    from receval.evaluation.ratings import evaluate_ratings as run
    from receval.io.inputs import opened

    # evaluate_ratings takes tables only: the file is opened by the one way in
    table, _, info = opened(_input(ratings, fmt, sep), "ratings", options.columns())
    # the rating columns the reader did not rename already; unset: detected
    named = {
        f"{role}_col": getattr(options, f"{role}_col")
        for role in ("actual", "predicted")
        if getattr(options, f"{role}_col") is not None and role not in info.columns
    }
    try:
        result = run(table, list(metric or []) or ["rmse"], dropna=dropna, **named)
    except InputError as exc:
        raise info.locate(exc) from None
    shown_as = Output.json if as_json else output
    _show(_render(result, shown_as), shown_as)


@command("metrics")
def list_metrics() -> None:
    """List every metric with its aliases, parameters and definition."""
    from receval.metrics.registry import metrics as registry

    kinds = {"ranking": "per user", "aggregate": "aggregate", "rating": "rating prediction"}
    for d in registry().values():
        params = ", ".join(
            f"{p.name}={p.default}" + (f" ({'|'.join(p.choices)})" if p.choices else "")
            for p in d.params
        )
        line = d.name
        if d.aliases:
            line += f" (also {', '.join(d.aliases)})"
        if params:
            line += f" [{params}]"
        _show(f"{line} — {kinds[d.kind]}: {d.description}")


def _render_compare(table: Any, name: str, output: Output) -> str:
    """explain --compare's table: values, then each decision that differs."""
    if output is Output.json:
        return str(table.reset_index().to_json(orient="records", indent=2))
    if output is Output.csv:
        return str(table.to_csv())
    if output is Output.markdown:
        cols = ["convention", *table.columns]
        rows = [
            [
                markdown_escape(i),
                *(f"{v:.4f}" if isinstance(v, float) else markdown_escape(v) for v in r),
            ]
            for i, r in zip(table.index, table.itertuples(index=False), strict=True)
        ]
        lines = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    width = max(len(str(i)) for i in table.index)
    lines = [f"{'convention':<{width}}  {'value':>8}  {'users':>7}  metric"]
    for conv, row in table.iterrows():
        lines.append(f"{conv:<{width}}  {row['value']:>8.4f}  {row['users']:>7}  {row['metric']}")
    decided = list(table.columns[3:])
    if decided:
        lines.append("")
        lines.append(f"decisions that differ ({name}):")
        for key in decided:
            lines.append(f"  {key}:")
            lines += [f"    {conv:<{width}}  {text}" for conv, text in table[key].items()]
    else:
        lines.append("every convention compared decides alike here")
    return "\n".join(lines)


@command()
@_with_options(COLUMN_FLAGS)
def explain(
    metric: Annotated[str, typer.Argument(help="a metric name, e.g. map@10")],
    options: EvalOptions,
    recs: Annotated[
        Path | None, typer.Argument(help="with --compare: a recommendations file")
    ] = None,
    truth: Annotated[Path | None, typer.Argument(help="with --compare: a truth file")] = None,
    compare: Annotated[
        bool,
        typer.Option("--compare", help="compute METRIC on RECS/TRUTH under every convention"),
    ] = False,
    convention: Annotated[
        list[str] | None,
        typer.Option("--convention", metavar="NAME", help="with --compare: only these conventions"),
    ] = None,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Explain a metric: formula, parameters, edge cases, other tools' variants.

    With --compare RECS TRUTH: the metric under every convention on that data,
    and the decisions that make the numbers differ.
    """
    from receval.analysis.explain import compare_conventions
    from receval.evaluation.conventions import variants
    from receval.metrics.spec import parse_metric

    spec = parse_metric(metric)
    if compare:
        if recs is None or truth is None:
            raise ReceValError("explain --compare needs METRIC RECS TRUTH")
        inputs = {"recommendations": _input(recs, fmt, sep), "truth": _input(truth, fmt, sep)}
        named = {c: getattr(options, c) for c in COLUMN_FLAGS if getattr(options, c) is not None}
        try:
            table = compare_conventions(
                inputs["recommendations"], inputs["truth"], metric, names=convention, **named
            )
        except InputError as exc:
            where: dict[str, tuple[Any, str | None]] = {r: (g, r) for r, g in inputs.items()}
            raise _locate(exc, where, options.columns()) from None
        _show(_render_compare(table, spec.name, output), output)
        return
    if recs is not None or truth is not None:
        raise ReceValError(
            "files are only read with --compare (explain --compare METRIC RECS TRUTH)"
        )
    d = spec.definition
    lines = [f"{spec}  ({d.name}: {d.description})", "", f"formula: {d.formula}"]
    if d.aliases:
        lines.append(f"aliases: {', '.join(d.aliases)}")
    for p in d.params:
        choices = f" — one of {', '.join(p.choices)}" if p.choices else ""
        value = dict(spec.params).get(p.name, p.default)
        lines.append(
            f"parameter {p.name} = {value} (default {p.default}){choices}: {p.description}"
        )
    lines.append(
        f"bounds: [{d.bounds[0]:g}, {d.bounds[1]:g}], "
        f"{'higher' if d.higher_is_better else 'lower'} is better"
    )
    lines.append(f"undefined for: {d.undefined}")
    if d.needs:
        lines.append(f"needs: {', '.join(d.needs)}")
    if d.notes:
        lines.append(f"notes: {d.notes}")
    others = {c: v for c, v in variants(metric).items() if c != "receval"}
    if others:
        lines.append("under other tools' conventions (docs/conventions.md):")
        lines += [f"  {c}: {v}" for c, v in others.items()]
    _show("\n".join(lines))


def _inspected(
    path: Path, role: str, fmt: Format, sep: str | None, cols: Any
) -> tuple[Any, str, dict[str, str], list[str], Any]:
    """The file ``inspect`` summarises, as receval reads it: a DataFrame with
    receval's column names, its format, role -> column read, the reader's
    messages and its FileInfo (None for a MovieLens log), which turns a row
    into the file's line. MovieLens logs (``u.data``, ``ratings.dat``,
    ``ratings.csv``) are read by :func:`receval.io.interactions.read_interactions`,
    every other file opened by the one way in (:func:`receval.io.inputs.opened`)."""
    from receval.io.inputs import opened
    from receval.io.interactions import detect_format, read_interactions

    if fmt is Format.auto and Path(path).is_file():
        kind = detect_format(path)
        if kind.startswith("movielens"):
            frame = read_interactions(path, format=kind)
            return frame, kind, {"user": "user", "item": "item"}, [], None
    table, _, info = opened(_input(path, fmt, sep), role, cols)
    return table.to_pandas(), info.format, dict(info.columns), list(info.messages), info


@command()
@_with_options(COLUMN_FLAGS)
def inspect(
    path: Annotated[Path, typer.Argument(help="a recommendations, truth or interactions file")],
    options: EvalOptions,
    truth: Annotated[bool, typer.Option("--truth", help="read it as truth")] = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
) -> None:
    """Summarise a file as receval reads it: columns, users, items, lists, ties, grades."""
    import numpy as np
    import pandas as pd

    role = "truth" if truth else "recommendations"
    frame, kind, columns, messages, info = _inspected(path, role, fmt, sep, options.columns())
    lines = [f"{path}: {kind}, {len(frame)} rows"]
    lines += [f"column {c} read as {role_}" for role_, c in columns.items()]
    lines += messages
    sizes = frame.groupby("user").size()
    lines.append(f"users: {len(sizes)}; items: {frame['item'].nunique()}")
    lines.append(
        f"rows per user: min {sizes.min()}, median {float(np.median(sizes)):g}, max {sizes.max()}"
    )
    dup = int(frame.duplicated(["user", "item"]).sum())
    lines.append(f"duplicate (user, item) rows: {dup}")
    if "score" in frame:
        ties = int(frame.duplicated(["user", "score"]).sum())
        lines.append(f"rows tied in score with another row of their user: {ties}")
    grades = "relevance" if "relevance" in frame else "rating" if "rating" in frame else None
    if grades is not None:
        numbers = pd.to_numeric(frame[grades], errors="coerce")
        bad = np.flatnonzero(numbers.isna().to_numpy() & frame[grades].notna().to_numpy())
        if len(bad):
            row = int(bad[0])
            exc = InputError(
                f"{grades} must be a number; found {shown(frame[grades].iloc[row])}",
                source=str(path),
                row=row,
                user=frame["user"].iloc[row],
                column=columns.get(grades, grades),
            )
            raise exc if info is None else info.locate(exc)
        counts = pd.Series(numbers).value_counts().sort_index()
        lines.append(
            ("grades: " if grades == "relevance" else "ratings: ")
            + ", ".join(f"{g:g}: {n}" for g, n in counts.items())
        )
    _show("\n".join(lines))


def _systems(runs: list[Path], names: str | None) -> dict[str, Path]:
    labels = [n.strip() for n in names.split(",")] if names else [p.stem for p in runs]
    if len(labels) != len(runs):
        raise ReceValError(f"--names gives {len(labels)} names for {len(runs)} runs")
    if len(set(labels)) != len(labels):
        raise ReceValError("two runs have the same name: give --names a,b,c")
    return dict(zip(labels, runs, strict=True))


class _Runs(NamedTuple):
    """compare's and report's inputs as handed down to the library: the
    truth, each run by its name, the beyond-accuracy inputs; each run's
    file (its name -> path) and a function that names the file and line of
    an input error (:func:`_locate`)."""

    truth: Any
    runs: dict[str, Any]
    extra: dict[str, Any]
    files: dict[str, Path]
    locate: Callable[[InputError], InputError]


def _runs_and_items(
    truth: Path,
    runs: list[Path],
    names: str | None,
    fmt: Format,
    sep: str | None,
    options: EvalOptions,
    items: Mapping[str, Path | None],
    user_groups: str | None,
    remove_seen: bool,
    quiet: bool,
) -> _Runs:
    """compare's and report's inputs (:class:`_Runs`): files handed down,
    the runs opened only to remove seen items (``remove_seen``); an error
    about a run, the truth or another input names its file (and line)."""
    from receval.analysis.compare import run_source

    files = _systems(runs, names)
    given = {name: _input(path, fmt, sep) for name, path in files.items()}
    truth_in, extra = _input(truth, fmt, sep), _item_inputs(items, user_groups, sep)
    where: dict[str, tuple[Any, str | None]] = {"truth": (truth_in, "truth")}
    where |= {k: (extra[k], _ITEM_ROLES[k]) for k in _input_files(items, user_groups)}
    where |= {run_source(n): (g, "recommendations") for n, g in given.items()}
    lists = dict(given)
    if remove_seen:
        extra["train"] = _seen_in(extra.get("train"), options)
        for name in lists:
            lists[name], removed = _remove_seen(lists[name], extra["train"], name, options, quiet)
            if removed:  # rows removed: rows are no longer the file's lines
                where[run_source(name)] = (given[name], None)
    cols = options.columns()
    return _Runs(truth_in, lists, extra, files, lambda exc: _locate(exc, where, cols))


def _note_runs(cmp: Any, files: Mapping[str, Path], truth: Path, quiet: bool) -> None:
    """The columns of each run's file (and the truth's) read under another
    name (:func:`_note_columns`)."""
    for i, (name, res) in enumerate(cmp.results.items()):
        if name in files:
            paths = {"recommendations": files[name], **({"truth": truth} if i == 0 else {})}
            _note_columns(res, paths, quiet)


def _tests(
    baseline: str | None,
    test: str,
    correction: str | None,
    alpha: float,
    n_resamples: int,
    seed: int,
    options: EvalOptions,
) -> dict[str, Any]:
    """compare's and report's significance settings, as keywords."""
    return {
        "baseline": baseline,
        "test": test,
        "correction": correction,
        "alpha": alpha,
        "n_resamples": n_resamples,
        "seed": seed,
        "options": options,
    }


def _located(
    locate: Callable[[InputError], InputError], run: Callable[..., Any], *args: Any, **kw: Any
) -> Any:
    """``run(*args, **kw)``, an input error in it naming the file and line (``locate``)."""
    try:
        return run(*args, **kw)
    except InputError as exc:
        raise locate(exc) from None


@command()
@_with_options(POLICY_FLAGS, COLUMN_FLAGS)
def compare(
    truth: Annotated[Path, typer.Argument(help="the truth file")],
    runs: Annotated[list[Path], typer.Argument(help="one or more recommendation files")],
    options: EvalOptions,
    metric: Metrics = None,
    k: Cutoffs = None,
    names: Names = None,
    baseline: Baseline = None,
    test: Test = "t",
    correction: Correction = None,
    alpha: Alpha = 0.05,
    n_resamples: Resamples = 10_000,
    seed: Seed = 0,
    output: OutputOpt = Output.table,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    train: Train = None,
    catalog: Catalog = None,
    item_features: ItemFeatures = None,
    popular: Popular = None,
    remove_seen: RemoveSeen = False,
    user_groups: UserGroups = None,
    item_groups: ItemGroups = None,
    mlflow: MlflowFlag = False,
    mlflow_experiment: MlflowExperiment = None,
    mlflow_run_name: MlflowRunName = None,
    no_mlflow_report: MlflowNoReport = False,
    quiet: Quiet = False,
) -> None:
    """Compare systems on the same truth with paired significance tests."""
    from receval.analysis.compare import compare as run

    metrics = _metrics(metric, k)
    _mlflow_ready(mlflow, mlflow_experiment, mlflow_run_name, no_mlflow_report)
    items = _item_files(train, catalog, item_features, popular, item_groups)
    given = _runs_and_items(
        truth, runs, names, fmt, sep, options, items, user_groups, remove_seen, quiet
    )
    settings = _tests(baseline, test, correction, alpha, n_resamples, seed, options)
    with _status("reading and comparing", quiet):
        result = _located(
            given.locate, run, given.runs, given.truth, metrics, **settings, **given.extra
        )
    _note_runs(result, given.files, truth, quiet)
    if output is Output.csv:  # one flat table: means, then each comparison with its p-values
        _show(result.to_csv(), output)
    else:
        _show(_render(result, output), output)
    page = None
    if mlflow and not no_mlflow_report:  # the report of this comparison: curves added
        from receval.analysis.report import report as make_report

        inputs = {k: v for k, v in given.extra.items() if k != "user_groups"}
        with _status("computing the report", quiet):
            page = make_report(
                given.runs, given.truth, comparison=result, options=options, **inputs
            )
    _log_mlflow(result, mlflow, mlflow_experiment, mlflow_run_name, quiet, page)


@command()
@_with_options(POLICY_FLAGS, COLUMN_FLAGS)
def report(
    truth: Annotated[Path, typer.Argument(help="the truth file")],
    runs: Annotated[list[Path], typer.Argument(help="one or more recommendation files")],
    options: EvalOptions,
    out_path: Annotated[
        Path, typer.Option("--out", help="the HTML file to write (.html or .htm)")
    ] = Path("report.html"),
    metric: Metrics = None,
    k: Cutoffs = None,
    names: Names = None,
    png: Annotated[
        Path | None,
        typer.Option(
            "--png", help='also write PNG charts here (needs pip install "receval[plot]")'
        ),
    ] = None,
    baseline: Baseline = None,
    test: Test = "t",
    correction: Correction = None,
    alpha: Alpha = 0.05,
    n_resamples: Resamples = 10_000,
    seed: Seed = 0,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    train: Train = None,
    catalog: Catalog = None,
    item_features: ItemFeatures = None,
    popular: Popular = None,
    remove_seen: RemoveSeen = False,
    user_groups: UserGroups = None,
    item_groups: ItemGroups = None,
    quiet: Quiet = False,
) -> None:
    """Write a self-contained HTML report of one or more systems."""
    from receval.analysis.report import report as run

    metrics = _metrics(metric or ["ndcg@10", "recall@10", "precision@10", "ap@10"], k)
    _refuse_inputs(
        "out",
        out_path,
        truth=truth,
        **{f"recommendations file {i}": r for i, r in enumerate(runs, 1)},
        train=train,
        catalog=catalog,
        item_features=item_features,
        popular=popular,
        item_groups=item_groups,
    )
    html = dict.fromkeys(REPORT_SUFFIXES, "html")
    _suffix_format("out", out_path, html, "the report is an HTML page")
    items = _item_files(train, catalog, item_features, popular, item_groups)
    given = _runs_and_items(
        truth, runs, names, fmt, sep, options, items, user_groups, remove_seen, quiet
    )
    if png is not None and png.exists() and not png.is_dir():
        from receval.errors import OutputError

        raise OutputError(
            f"cannot write charts into --png {png}: it is a file, not a folder; give a folder",
            path=str(png),
        )
    # everything is computed first; the files are written only at the end, each whole
    settings = _tests(baseline, test, correction, alpha, n_resamples, seed, options)
    with _status("reading and computing the report", quiet):
        rep = _located(
            given.locate, run, given.runs, given.truth, metrics, **settings, **given.extra
        )
    _note_runs(rep.comparison, given.files, truth, quiet)
    with _status("writing the report", quiet):
        if png is not None:
            rep.save_images(png)
        rep.save(out_path)
    if not quiet:
        _note(f"report written to {out_path}")
        for note in rep.notes:  # e.g. PNGs asked for without matplotlib
            _note(f"note: {note}")


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
) -> None:
    """The whole protocol on built-in data: split, three baselines, metrics, tests, report."""
    from receval.workflow.demo import run_demo

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
        console=lambda line: _show(for_cli(line)),
        progress=lambda what: _status(what, quiet),  # a spinner naming the step
        **kwargs,
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
            flags = _one_of((option(c) for c in given), "and")
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
@_with_options(LOG_FLAGS)
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
            metavar="random|user_random|time|user_time|leave_one_out",
            help="how to split",
        ),
    ] = "user_time",
    test_size: Annotated[
        str,
        typer.Option(
            "--test-size",
            metavar="N|SHARE",
            help="an integer: rows (per user for user_*), e.g. 2; a number below 1: a share",
        ),
    ] = "0.2",
    validation_size: Annotated[
        str | None,
        typer.Option(
            "--validation-size", metavar="N|SHARE", help="also a validation part, as --test-size"
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
    from receval.io.write import refuse_inputs
    from receval.workflow.split import split_file

    for name in ("train.parquet", "test.parquet", "validation.parquet", "split.json"):
        what = f"{option('out', out_dir)} ({name})"  # the files save() writes
        refuse_inputs((what, out_dir / name), [("interactions file", interactions)])
    # read whole by receval.io.interactions.read_log: every part keeps the file's columns
    reading = _status(f"reading and splitting {interactions} ({method})", quiet)
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
        )
    _show(str(result))
    with _status(f"writing {out_dir}", quiet):
        saved = result.save(out_dir)
    for name, path in saved.items():
        if not quiet:
            _note(f"{name}: {path}")


def _log(path: Path | None, fmt: Format, sep: str | None, options: EvalOptions) -> Any:
    """An interactions log ``check`` reads, as the file holds it (every
    column under its own name: :func:`receval.io.interactions.read_log`), or None."""
    from receval.io.interactions import read_log

    if path is None:
        return None
    named = {"user_col": options.user_col, "item_col": options.item_col}
    return read_log(path, format=fmt.value, sep=sep, **named)


@command()
@_with_options(LOG_FLAGS)
def check(
    options: EvalOptions,
    recs: Annotated[Path | None, typer.Option("--recs", help="recommendations file")] = None,
    train: Annotated[Path | None, typer.Option("--train", help="training interactions")] = None,
    test: Annotated[Path | None, typer.Option("--test", help="test interactions")] = None,
    k: Annotated[int | None, typer.Option("-k", help="the largest cut-off you will use")] = None,
    chronological: Annotated[
        bool,
        typer.Option("--chronological", help="test rows must not precede the user's train rows"),
    ] = False,
    timestamp_col: Annotated[
        str, typer.Option("--timestamp-col", metavar="NAME", help="timestamp column")
    ] = "timestamp",
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Look for leakage and oddities: seen items recommended, time travel, ties, duplicates.

    The findings go to stdout; ``-q`` is accepted for symmetry (nothing else is printed)."""
    from receval.workflow.checks import check as run

    if recs is None and train is None and test is None:
        raise ReceValError("check needs at least one of --recs, --train, --test")
    files = {"train": train, "test": test, "recommendations": recs}
    lists = None if recs is None else _input(recs, fmt, sep)
    with _status("reading and checking", quiet), _naming(files):
        report_ = run(  # it takes tables: the files are opened by receval.io
            train=_log(train, fmt, sep, options),
            test=_log(test, fmt, sep, options),
            recs=None if lists is None else _as_read(lists, "recommendations", options.columns()),
            k=k,
            chronological=chronological,
            options=options,
            timestamp_col=timestamp_col,
        )
    _show(report_.render(cli=True))


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


@app.callback(invoke_without_command=True)
def _main(
    version: Annotated[bool, typer.Option("--version", help="print the version")] = False,
) -> None:
    if version:
        _show(f"receval {__version__}")
        raise typer.Exit()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so the same cleanup runs."""


_SIGNALLED: list[int] = []  # the exit code of each signal received during main()


def _on_signal(signum: int, frame: Any) -> None:
    import signal

    if signum == signal.SIGTERM:
        _SIGNALLED.append(143)
        raise Terminated
    _SIGNALLED.append(130)
    raise KeyboardInterrupt


def _interrupted(code: int) -> int:
    """One line on stderr; the shell's code for the signal (130 SIGINT, 143 SIGTERM)."""
    _note(SIGNAL_MESSAGES[code])
    return code


def command_line() -> int:
    """The ``receval`` command (and ``python -m receval``): :func:`main` in a
    process the command owns, so it may tune the allocator (freed memory kept
    for reuse during large runs; ``RECEVAL_MALLOC=0`` turns it off). A host
    that calls :func:`main` keeps its allocator as it is."""
    _malloc.allow()
    return main()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Ctrl-C returns 130 and SIGTERM 143, each with one line on stderr and no traceback; the
    handlers are installed here, in the command's own process, never on import, and put
    back on return. (Typer turns KeyboardInterrupt into a plain return value of 130, so
    the handlers note which signal came.)
    """
    import signal
    import threading

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _on_signal)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not if ignored
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_signal)
    _SIGNALLED.clear()
    try:
        code = _main_unguarded(argv)
    except KeyboardInterrupt as exc:  # Terminated too
        code = 143 if isinstance(exc, Terminated) else 130
        return _interrupted(_SIGNALLED[0] if _SIGNALLED else code)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if _SIGNALLED or code == 130:
        return _interrupted(_SIGNALLED[0] if _SIGNALLED else 130)
    return code


def _internal_error(exc: BaseException) -> int:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # Ctrl-C wrapped by Python, e.g.
        seen.add(id(cause))  # in a RuntimeError from __set_name__ during an import
        if isinstance(cause, KeyboardInterrupt):
            raise cause
        cause = cause.__cause__ or cause.__context__
    _note(f"internal error: {type(exc).__name__}: {exc}")
    _note("please report it with the command you ran (receval " + __version__ + ")")
    return 1


def _out_of_memory(exc: MemoryError) -> str:
    """What ran out, how much was asked for when NumPy says, and what helps."""
    import re

    asked = re.search(r"allocate ([0-9.]+ [KMGTP]?i?B)", str(exc))
    size = f" (an array of {asked.group(1)} could not be allocated)" if asked else ""
    return (
        f"out of memory{size}. Ask for fewer metrics or cut-offs; give both inputs as Parquet "
        "files, which are read by chunks of users in bounded memory (files sorted by user "
        "need the least); or run on a machine with more memory"
    )


def _main_unguarded(argv: list[str] | None) -> int:
    try:
        returned = app(args=argv, standalone_mode=False)
    except ReceValError as exc:  # the shell's syntax: --empty-truth zero, not empty_truth="zero"
        _fail(exc.cli_message())
        return 2
    except MemoryError as exc:
        _fail(_out_of_memory(exc))
        return 2
    except OSError as exc:  # reading: no such file, permission, I/O error, ...
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}")
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except ImportError as exc:
        text = str(exc).lower()
        if "failed to map segment" in text or "cannot allocate memory" in text:
            _fail(_out_of_memory(MemoryError()))
            return 2  # a library could not be loaded for lack of memory
        return _internal_error(exc)
    except Exception as exc:  # usage errors of the parser, and everything unexpected
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()  # a usage error: "Missing parameter", "No such option" (exit 2)
            return int(exc.exit_code)
        return _internal_error(exc)
    if returned == 130:  # a KeyboardInterrupt that typer caught and returned as 130
        return 130  # main() says which signal it was
    return 0
