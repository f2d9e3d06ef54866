"""The ``receval`` command line: parsing and rendering only; the work is in the library.

Every command that evaluates takes the same policy and column flags, declared
once (:data:`POLICY_FLAGS`, :data:`COLUMN_FLAGS`) and turned into one
:class:`~receval.EvalOptions` (:func:`_with_options`); a flag left unset is
None, so the convention's preset applies.

Exit codes: 0 success; 2 a usage or input error (one or two lines on stderr
naming the file, line, user and item, no traceback); 1 an internal error.
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
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

from receval import __version__, _malloc
from receval.errors import (
    SIGNAL_MESSAGES,
    InputError,
    NoSharedUser,
    OptionError,
    ReceValError,
    for_cli,
    option,
)
from receval.evaluation.conventions import CONVENTIONS
from receval.evaluation.options import CHOICES, EvalOptions
from receval.evaluation.result import markdown_escape


def _flags_as_flags(params: list[Any]) -> list[Any]:
    """Boolean flags shown in ``--help`` as flags, with no ``<bool>`` value."""
    for p in params:
        if getattr(p, "is_flag", False) and not getattr(p, "count", False):
            p.metavar = ""
    return params


class _Command(TyperCommand):
    """A command whose ``--help`` shows boolean flags as flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_as_flags(super().get_params(ctx))


class _Group(TyperGroup):
    """The ``receval`` group, whose ``--help`` shows boolean flags as flags."""

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
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
command = functools.partial(app.command, cls=_Command)


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


# -- the flags every evaluating command shares, declared once ---------------------------------

_POLICIES = "Evaluation policies (unset: the convention's value)"
_COLUMNS = "Columns (unset: detected)"
_DEFAULT = EvalOptions()  # receval's own value of every policy


def _choice(name: str, what: str) -> Any:
    """A policy flag taking one of :data:`~receval.evaluation.options.CHOICES`."""
    default = getattr(_DEFAULT, name) if name != "no_truth" else "as --empty-truth"
    return Annotated[
        str | None,
        typer.Option(
            "--" + name.replace("_", "-"),
            metavar="|".join(CHOICES[name]),
            help=f"{what} (receval's default: {default})",
            rich_help_panel=_POLICIES,
        ),
    ]


def _column(name: str, what: str, panel: str = _COLUMNS) -> Any:
    return Annotated[
        str | None,
        typer.Option(
            "--" + name.replace("_", "-"), metavar="NAME", help=what, rich_help_panel=panel
        ),
    ]


#: flag name (a field of :class:`~receval.EvalOptions`) -> its declaration
POLICY_FLAGS: Mapping[str, Any] = {
    "convention": Annotated[
        str | None,
        typer.Option(
            "--convention",
            metavar="NAME",
            help="reproduce a tool's numbers; sets the default of every policy below: "
            + ", ".join(sorted(CONVENTIONS))
            + " (docs/conventions.md; receval's default: receval)",
            rich_help_panel=_POLICIES,
        ),
    ],
    "threshold": Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="GRADE",
            help="an item is relevant when its grade is ≥ GRADE and > 0 "
            f"(receval's default: {_DEFAULT.threshold:g})",
            rich_help_panel=_POLICIES,
        ),
    ],
    "empty_truth": _choice("empty_truth", "users in the truth without a relevant item"),
    "missing_recs": _choice("missing_recs", "users with relevant items but no list"),
    "no_truth": _choice("no_truth", "users with a list who are not in the truth"),
    "ties": _choice("ties", "the order of equal scores"),
    "relevant_from": _choice(
        "relevant_from", "R and the ideal from the user's relevant items, or the list's only"
    ),
    "duplicates": _choice(
        "duplicates", "an item twice in a list, a (user, item) pair twice in the truth"
    ),
    "rank": _choice("rank", "what a rank column means: an order (gaps close up) or positions"),
    "depth": Annotated[
        int | None,
        typer.Option(
            "--depth",
            metavar="M",
            help="read only the first M items of each list (trec_eval's -M; "
            "receval's default: whole lists)",
            rich_help_panel=_POLICIES,
        ),
    ],
    "unjudged": _choice(
        "unjudged", "items not in the user's truth: keep them, or condense the lists (-J)"
    ),
    "negative_grades": _choice(
        "negative_grades", "a negative grade: an error, or a pooled but unjudged item (trec_eval)"
    ),
    "catalog_size": Annotated[
        int | None,
        typer.Option(
            "--catalog-size",
            metavar="N",
            help="the lists rank sampled candidates; N items a full ranking would rank "
            "(for metrics with correction=, docs/sampled.md)",
            rich_help_panel=_POLICIES,
        ),
    ],
}

#: the column flags of recommendation and truth files
COLUMN_FLAGS: Mapping[str, Any] = {
    "user_col": _column("user_col", "user column"),
    "item_col": _column("item_col", "item column"),
    "score_col": _column("score_col", "score column (higher = better)"),
    "rank_col": _column("rank_col", "rank column (1 = best)"),
    "relevance_col": _column("relevance_col", "grade column of the truth (relevance, rating...)"),
}

#: the columns of an interactions log (split, check, demo)
LOG_FLAGS: Mapping[str, Any] = {
    "user_col": COLUMN_FLAGS["user_col"],
    "item_col": COLUMN_FLAGS["item_col"],
}

#: the columns of a ratings file (evaluate-ratings)
RATING_FLAGS: Mapping[str, Any] = {
    **LOG_FLAGS,
    "actual_col": _column("actual_col", "actual rating column (actual, rating, ...)"),
    "predicted_col": _column("predicted_col", "predicted rating column (predicted, score, ...)"),
}

_COLUMN_NAMES = ("user_col", "item_col", "score_col", "rank_col", "relevance_col")


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
    with err.status(message):
        yield


@contextlib.contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Any]:
    """A progress bar of recommendation rows on stderr; silent off a terminal or with --quiet."""
    if quiet or not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("evaluating"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} rows"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("evaluating", total=total)
        yield lambda done: bar.update(task, completed=done)


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
        err.print(f"logged to MLflow run {run_id}", markup=False)


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


def _cols(options: EvalOptions) -> Any:
    """The column names of the files (the options' names, or their defaults)."""
    return options.columns()


def _read(
    path: Path, role: str, fmt: Format, sep: str | None, cols: Any, quiet: bool
) -> tuple[Any, Any]:
    from receval.io.files import read_file

    with _status(f"reading {path}", quiet):
        table, info = read_file(path, role=role, fmt=fmt.value, sep=sep, cols=cols)
    if not quiet:
        for message in info.messages:
            err.print(f"{path}: {message}")
    return table, info


def _read_log(
    path: Path, role: str, fmt: Format, sep: str | None, cols: Any, quiet: bool = True
) -> tuple[Any, str, dict[str, str], list[str]]:
    """Any file ``demo`` or ``evaluate`` reads, as a DataFrame with receval's
    column names: MovieLens logs (``u.data``, ``ratings.dat``, ``ratings.csv``)
    through :func:`receval.io.interactions.read_interactions`, every other
    format (CSV/TSV, Parquet, JSON Lines, TREC, compressed) through
    :func:`receval.io.files.read_file`. Returns (frame, format, role -> column
    read, messages)."""
    return _read_log_info(path, role, fmt, sep, cols, quiet)[:4]


def _read_log_info(
    path: Path, role: str, fmt: Format, sep: str | None, cols: Any, quiet: bool = True
) -> tuple[Any, str, dict[str, str], list[str], Any]:
    """:func:`_read_log`, and the file's FileInfo (None for MovieLens logs),
    which turns a row into the file's line."""
    from receval.io.interactions import detect_format, read_interactions

    if fmt is Format.auto and Path(path).is_file():
        kind = detect_format(path)
        if kind.startswith("movielens"):
            frame = read_interactions(path, format=kind)
            return frame, kind, {"user": "user", "item": "item"}, [], None
    table, info = _read(path, role, fmt, sep, cols, quiet)
    return table.to_pandas(), info.format, dict(info.columns), list(info.messages), info


def _open_streams(recs: Path, truth: Path, fmt: Format, cols: Any, quiet: bool) -> Any:
    """Both inputs as Parquet streams ((stream, info) each), or None when
    either is another format or must be read whole."""
    from receval.io.stream import is_parquet, open_parquet

    if not (is_parquet(recs, fmt.value) and is_parquet(truth, fmt.value)):
        return None
    opened = []
    for path, role in ((recs, "recommendations"), (truth, "truth")):
        src = open_parquet(path, role, cols)
        if src is None:
            return None
        opened.append((src, src.info))
    if not quiet:
        for src, info in opened:
            for message in info.messages:
                err.print(f"{src.path}: {message}")
    return opened


def _items(
    train: Path | None,
    catalog: Path | None,
    item_features: Path | None,
    popular: Path | None,
    sep: str | None,
    cols: Any,
    quiet: bool,
) -> dict[str, Any]:
    """The beyond-accuracy inputs read from their files (``train=``, ``catalog=``, ...)."""
    extra: dict[str, Any] = {}
    if train is not None:
        extra["train"] = _read(train, "truth", Format.auto, sep, cols, quiet)[0]
    if catalog is not None:
        cat = _read(catalog, "items", Format.auto, sep, cols, quiet)[0]
        extra["catalog"] = cat.column("item").to_pylist()
    if popular is not None:
        pop = _read(popular, "items", Format.auto, sep, cols, quiet)[0]
        extra["popular"] = pop.column("item").to_pylist()
    if item_features is not None:
        feats = _read(item_features, "items", Format.auto, sep, cols, quiet)[0].to_pandas()
        # numeric columns: vectors (cosine); text columns: categories (Jaccard)
        extra["item_features"] = feats.drop(
            columns=[c for c in ("user", "relevance") if c in feats]
        )
    return extra


def _groups_of(
    extra: dict[str, Any],
    user_groups: str | None,
    item_groups: Path | None,
    sep: str | None,
    cols: Any,
    quiet: bool,
) -> None:
    """--user-groups and --item-groups into the evaluation's keywords."""
    if user_groups is not None:
        extra["user_groups"] = _user_groups(user_groups, sep, cols, quiet)
    if item_groups is not None:
        extra["item_groups"] = _read(item_groups, "items", Format.auto, sep, cols, quiet)[0]


def _user_groups(value: str, sep: str | None, cols: Any, quiet: bool) -> Any:
    """--user-groups: a built-in grouping's name, or its file read as a table."""
    from receval.evaluation.groups import BUILT_IN
    from receval.io.files import read_file

    if value in BUILT_IN and not Path(value).exists():
        return value
    with _status(f"reading {value}", quiet):
        table, _ = read_file(value, role="user_groups", sep=sep, cols=cols)
    return table


def _remove_seen(recs: Any, train: Any, name: str, quiet: bool) -> tuple[Any, int]:
    """``recs`` without the items the user has in ``train``
    (:func:`receval.workflow.checks.remove_seen`), and how many rows went."""
    from receval.workflow.checks import remove_seen

    if train is None:
        raise ReceValError("--remove-seen needs --train (the items each user has seen)")
    kept = remove_seen(recs.to_pandas(), train.to_pandas())
    removed = int(kept.attrs["removed"])
    if not quiet:
        err.print(f"{name}: {removed} recommendation rows seen in --train removed")
    return kept, removed


def _without_columns(options: EvalOptions) -> EvalOptions:
    """The options for tables the CLI has read: their columns already carry
    receval's names, so the column options are not applied again."""
    return options.replace(**dict.fromkeys(_COLUMN_NAMES))


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
            help="write per-user values (.csv or .parquet; with --engine spark: a folder "
            "written by Spark)",
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
    from receval.evaluation.api import evaluate as run

    metrics = _metrics(metric, k)
    _mlflow_ready(mlflow, mlflow_experiment, mlflow_run_name, no_mlflow_report)
    if engine is Engine.spark:
        _evaluate_spark(
            recs_path,
            truth_path,
            metrics,
            options,
            master=master,
            per_user=per_user_path,
            output=Output.json if as_json else output,
            fmt=fmt,
            sep=sep,
            items={
                "train": train,
                "catalog": catalog,
                "item_features": item_features,
                "popular": popular,
                "item_groups": item_groups,
            },
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
    if per_user is not None:
        _refuse_inputs(
            "per_user",
            per_user,
            recommendations=recs,
            truth=truth,
            train=train,
            catalog=catalog,
            item_features=item_features,
            popular=popular,
            item_groups=item_groups,
        )
    cols = _cols(options)
    streams = None if remove_seen else _open_streams(recs, truth, fmt, cols, quiet)
    if streams is not None:  # two Parquet files: read chunk by chunk of users
        (recs_table, recs_info), (truth_table, truth_info) = streams
    else:
        recs_table, recs_info = _read(recs, "recommendations", fmt, sep, cols, quiet)
        truth_table, truth_info = _read(truth, "truth", fmt, sep, cols, quiet)
    extra = _items(train, catalog, item_features, popular, sep, cols, quiet)
    _groups_of(extra, user_groups, item_groups, sep, cols, quiet)
    removed = None
    if remove_seen:
        recs_table, removed = _remove_seen(recs_table, extra.get("train"), str(recs), quiet)
    try:
        rows = recs_table.num_rows if streams is not None else len(recs_table)
        with _progress(rows, quiet) as bar:
            result = run(
                recs_table,
                truth_table,
                metrics,
                options=_without_columns(options),
                progress=bar,
                **extra,
            )
    except NoSharedUser:
        raise  # about both inputs, not one file's row
    except InputError as exc:
        if streams is not None and exc.source in (recs_info.path, truth_info.path):
            raise  # already names the file and its row
        if exc.source not in ("recommendations", "truth"):  # train=, item_features= ...
            path = {
                "train": train,
                "catalog": catalog,
                "item_features": item_features,
                "popular": popular,
                "item_groups": item_groups,
            }.get(str(exc.source))
            raise exc.located(source=str(path)) if path is not None else exc from None
        info = recs_info if exc.source == "recommendations" else truth_info
        if removed and info is recs_info:  # rows removed: rows are no longer the file's lines
            raise exc.located(source=recs_info.path) from None
        raise info.locate(exc) from None
    page = None
    if mlflow and not no_mlflow_report:  # before the CLI's own parameters are added
        page = _result_report(result, recs, truth, recs_table, truth_table, options, extra, quiet)
    result.parameters.update({c: getattr(options, c) for c in _COLUMN_NAMES})
    if removed is not None:
        result.parameters["remove_seen"] = True
        result.counts["recommendation_rows_seen_in_train_removed"] = removed
    result.parameters["inputs"] = {
        "recommendations": {
            "path": str(recs),
            "format": recs_info.format,
            "columns": recs_info.columns,
        },
        "truth": {"path": str(truth), "format": truth_info.format, "columns": truth_info.columns},
    }
    if per_user is not None:
        frame = result.per_user.reset_index()
        if per_user.suffix.lower() in (".parquet", ".pq"):
            _write_atomic(per_user, lambda p: frame.to_parquet(p, index=False))
        else:
            _write_atomic(per_user, lambda p: _per_user_csv(frame, p))
    out.print(_render(result, Output.json if as_json else output), markup=False)
    _log_mlflow(result, mlflow, mlflow_experiment, mlflow_run_name, quiet, page)


def _result_report(
    result: Any,
    recs: Path,
    truth: Path,
    recs_table: Any,
    truth_table: Any,
    options: EvalOptions,
    extra: Mapping[str, Any],
    quiet: bool,
) -> Any:
    """``evaluate --mlflow``: the HTML report of the one system evaluated
    (:func:`receval.report`), its leaderboard drawn from ``result`` (means
    without bootstrap intervals: those are ``receval report``'s, with
    ``--n-resamples``); its curves evaluate the lists once more."""
    from receval.analysis.compare import compare as compare_runs
    from receval.analysis.report import report as make_report

    name = recs.stem or "recommendations"
    inputs = {k: v for k, v in extra.items() if k != "user_groups"}
    opts = _without_columns(options)
    with _status("computing the report", quiet):
        cmp = compare_runs(
            {name: result}, truth_table, result.metrics, ci="none", options=opts, **inputs
        )
        return make_report(
            {name: recs_table},
            truth_table,
            comparison=cmp,
            title=f"receval evaluate {recs.name}",
            provenance={"recommendations": str(recs), "truth": str(truth)},
            options=opts,
            **inputs,
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
    cols = _cols(options)
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
        if "item_groups" in paths:  # O(items): read here, as in-process
            extra["item_groups"] = _read(
                Path(paths["item_groups"]), "items", Format.auto, sep, cols, True
            )[0]
        if user_groups is not None:  # a file read here, or a grouping counted by Spark
            extra["user_groups"] = _user_groups(user_groups, sep, cols, True)
    try:
        with _status("evaluating on Spark", quiet):
            result = run(recs_df, truth_df, metrics, options=options, **extra)
    except NoSharedUser:
        raise
    except InputError as exc:
        where = {"recommendations": recs, "truth": truth, **paths}.get(str(exc.source))
        raise exc.located(source=where) if where is not None else exc from None
    result.parameters["inputs"] = {
        "recommendations": {"path": recs, "format": engine.format_of(recs, fmt.value)},
        "truth": {"path": truth, "format": engine.format_of(truth, fmt.value)},
    }
    if per_user is not None:  # written by Spark: a folder of part files, _SUCCESS last
        with _status(f"writing {per_user} with Spark", quiet):
            engine.write_per_user(result.per_user_spark, per_user)
    out.print(_render(result, output), markup=False)
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
    from receval.io.files import read_file

    table, info = read_file(ratings, role="ratings", fmt=fmt.value, sep=sep, cols=_cols(options))
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
    out.print(_render(result, Output.json if as_json else output), markup=False)


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
        out.print(f"{line} — {kinds[d.kind]}: {d.description}", markup=False)


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
        cols = _cols(options)
        recs_table, recs_info = _read(recs, "recommendations", fmt, sep, cols, True)
        truth_table, truth_info = _read(truth, "truth", fmt, sep, cols, True)
        try:
            table = compare_conventions(recs_table, truth_table, metric, names=convention)
        except InputError as exc:
            info = recs_info if exc.source == "recommendations" else truth_info
            raise info.locate(exc) from None
        out.print(_render_compare(table, spec.name, output), markup=False)
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
    out.print("\n".join(lines), markup=False)


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
    frame, kind, columns, messages, info = _read_log_info(path, role, fmt, sep, _cols(options))
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
                f"{grades} must be a number; found {frame[grades].iloc[row]!r}",
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
    out.print("\n".join(lines), markup=False)


def _read_runs(
    truth: Path,
    runs: list[Path],
    names: str | None,
    fmt: Format,
    sep: str | None,
    cols: Any,
    quiet: bool,
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The truth and each named run, read; and what was found in each file
    (role -> FileInfo: ``truth`` and each run's name), to name the file and
    line of an error."""
    systems = _systems(runs, names)
    truth_table, truth_info = _read(truth, "truth", fmt, sep, cols, quiet)
    infos = {"truth": truth_info}
    tables = {}
    for name, p in systems.items():
        tables[name], infos[name] = _read(p, "recommendations", fmt, sep, cols, quiet)
    return truth_table, tables, infos


def _systems(runs: list[Path], names: str | None) -> dict[str, Path]:
    labels = [n.strip() for n in names.split(",")] if names else [p.stem for p in runs]
    if len(labels) != len(runs):
        raise ReceValError(f"--names gives {len(labels)} names for {len(runs)} runs")
    if len(set(labels)) != len(labels):
        raise ReceValError("two runs have the same name: give --names a,b,c")
    return dict(zip(labels, runs, strict=True))


def _runs_and_items(
    truth: Path,
    runs: list[Path],
    names: str | None,
    fmt: Format,
    sep: str | None,
    options: EvalOptions,
    items: tuple[Path | None, Path | None, Path | None, Path | None],
    remove_seen: bool,
    quiet: bool,
) -> tuple[Any, dict[str, Any], dict[str, Any], Callable[[InputError], InputError]]:
    """compare's and report's inputs: the truth, the runs (seen items removed
    with ``remove_seen``) and the beyond-accuracy inputs; and a function that
    puts the file and line of a run or of the truth in an error about them,
    as ``evaluate``'s errors have."""
    from receval.analysis.compare import run_source

    cols = _cols(options)
    truth_table, tables, infos = _read_runs(truth, runs, names, fmt, sep, cols, quiet)
    extra = _items(*items, sep, cols, quiet)
    removed: dict[str, int] = {}
    for name in tables:
        if remove_seen:
            tables[name], removed[name] = _remove_seen(
                tables[name], extra.get("train"), name, quiet
            )
    sources = {run_source(name): name for name in tables}

    def locate(exc: InputError) -> InputError:
        if exc.source == "truth":
            return infos["truth"].locate(exc)
        name = sources.get(str(exc.source))
        if name is None:
            return exc
        if removed.get(name):  # rows removed: rows are no longer the file's lines
            return exc.located(source=infos[name].path)
        return infos[name].locate(exc)

    return truth_table, tables, extra, locate


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
        "options": _without_columns(options),
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
    truth_table, tables, extra, locate = _runs_and_items(
        truth,
        runs,
        names,
        fmt,
        sep,
        options,
        (train, catalog, item_features, popular),
        remove_seen,
        quiet,
    )
    settings = _tests(baseline, test, correction, alpha, n_resamples, seed, options)
    _groups_of(extra, user_groups, item_groups, sep, _cols(options), quiet)
    with _status("comparing", quiet):
        result = _located(locate, run, tables, truth_table, metrics, **settings, **extra)
    if output is Output.csv:  # one flat table: means, then each comparison with its p-values
        out.print(result.to_csv(), markup=False)
    else:
        out.print(_render(result, output), markup=False)
    page = None
    if mlflow and not no_mlflow_report:  # the report of this comparison: curves added
        from receval.analysis.report import report as make_report

        inputs = {k: v for k, v in extra.items() if k != "user_groups"}
        with _status("computing the report", quiet):
            page = make_report(
                tables, truth_table, comparison=result, options=settings["options"], **inputs
            )
    _log_mlflow(result, mlflow, mlflow_experiment, mlflow_run_name, quiet, page)


@command()
@_with_options(POLICY_FLAGS, COLUMN_FLAGS)
def report(
    truth: Annotated[Path, typer.Argument(help="the truth file")],
    runs: Annotated[list[Path], typer.Argument(help="one or more recommendation files")],
    options: EvalOptions,
    out_path: Annotated[Path, typer.Option("--out", help="the HTML file to write")] = Path(
        "report.html"
    ),
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
    truth_table, tables, extra, locate = _runs_and_items(
        truth,
        runs,
        names,
        fmt,
        sep,
        options,
        (train, catalog, item_features, popular),
        remove_seen,
        quiet,
    )
    if png is not None and png.exists() and not png.is_dir():
        from receval.errors import OutputError

        raise OutputError(
            f"cannot write charts into --png {png}: it is a file, not a folder; give a folder",
            path=str(png),
        )
    # everything is computed first; the files are written only at the end, each whole
    settings = _tests(baseline, test, correction, alpha, n_resamples, seed, options)
    _groups_of(extra, user_groups, item_groups, sep, _cols(options), quiet)
    with _status("computing the report", quiet):
        rep = _located(locate, run, tables, truth_table, metrics, **settings, **extra)
    with _status("writing the report", quiet):
        if png is not None:
            rep.save_images(png)
        rep.save(out_path)
    if not quiet:
        err.print(f"report written to {out_path}", markup=False)
        for note in rep.notes:  # e.g. PNGs asked for without matplotlib
            err.print(f"note: {note}", markup=False)


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
    seed: Seed = 0,
    quiet: Quiet = False,
) -> None:
    """The whole protocol on built-in data: split, three baselines, metrics, tests, report."""
    from receval.workflow.demo import run_demo

    if users <= 0:
        raise OptionError("users", users, expected="a positive number of users")
    log: Any = interactions
    if interactions is not None and (user_col or item_col):
        from receval.io.interactions import read_interactions

        named = {"user_col": user_col, "item_col": item_col}
        log = read_interactions(interactions, **{c: v for c, v in named.items() if v})
    elif user_col or item_col:
        raise ReceValError("--user-col and --item-col name the columns of --interactions")
    kwargs: dict[str, Any] = {}
    if threshold is not None:  # validated as every threshold is; unset: the demo's own
        kwargs["threshold"] = EvalOptions(threshold=threshold).threshold
    run_demo(
        out_dir,
        users=users,
        interactions=log,
        seed=seed,
        quiet=quiet,
        console=lambda line: print(for_cli(line)),
        progress=lambda what: _status(what, quiet),  # a spinner naming the step
        **kwargs,
    )


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
        str, typer.Option("--timestamp-col", metavar="NAME", help="timestamp column")
    ] = "timestamp",
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Split an interactions log into train and test, and say what was dropped."""
    from receval.io.write import refuse_inputs
    from receval.workflow.split import split as run

    for name in ("train.parquet", "test.parquet", "validation.parquet", "split.json"):
        what = f"{option('out', out_dir)} ({name})"  # the files save() writes
        refuse_inputs((what, out_dir / name), [("interactions file", interactions)])
    with _status(f"reading {interactions}", quiet):
        log = _read_interactions(interactions, fmt, sep, options, timestamp_col)
    with _status(f"splitting {len(log)} interactions ({method})", quiet):
        result = run(
            log,
            method,  # type: ignore[arg-type]
            test_size=_size("test_size", test_size),  # type: ignore[arg-type]
            validation_size=_size("validation_size", validation_size),
            seed=seed,
            min_user_interactions=min_user_interactions,
            min_item_interactions=min_item_interactions,
            drop_unseen_users=drop_unseen,
            drop_unseen_items=drop_unseen,
        )
    back = log.attrs["names"]  # the file's own column names
    for part in ("train", "test", "validation"):
        if getattr(result, part) is not None:
            setattr(result, part, getattr(result, part).rename(columns=back))
    out.print(str(result), markup=False)
    with _status(f"writing {out_dir}", quiet):
        saved = result.save(out_dir)
    for name, path in saved.items():
        if not quiet:
            err.print(f"{name}: {path}", markup=False)


def _read_interactions(
    path: Path, fmt: Format, sep: str | None, options: EvalOptions, timestamp_col: str
) -> Any:
    """An interactions log with the columns ``user``, ``item`` and, when the
    file has them, ``rating``, ``timestamp`` (from ``timestamp_col``) and its
    other columns; ``attrs["names"]`` maps each renamed column to the file's
    own name (what ``split`` writes back).

    :func:`receval.io.interactions.read_interactions` reads it (CSV/TSV,
    Parquet, MovieLens); a file it cannot read (JSON Lines, TREC qrels,
    compressed, ...) is read by :func:`receval.io.files.read_file`, whose
    error is shown when neither can."""
    from receval.io.interactions import read_interactions

    named = {c: getattr(options, c) for c in ("user_col", "item_col")}
    frame = None
    if fmt in (Format.auto, Format.csv, Format.tsv, Format.parquet) and sep is None:
        try:
            frame = read_interactions(
                path,
                format="auto" if fmt is Format.auto else fmt.value,
                timestamp_col=timestamp_col,
                **{c: v for c, v in named.items() if v is not None},
            )
        except ValueError:  # not a log it reads: read_file says why, or reads it
            frame = None
        else:
            names = {"user": options.user_col, "item": options.item_col}
            names["timestamp"] = timestamp_col
    if frame is None:
        frame, _, columns, _ = _read_log(path, "truth", fmt, sep, _cols(options))
        grade = columns.get("relevance")
        if grade and grade != "relevance" and grade not in frame:  # a log keeps its name
            frame = frame.rename(columns={"relevance": grade})
        names = {r: c for r, c in columns.items() if r in ("user", "item")}
        if timestamp_col != "timestamp" and timestamp_col in frame:
            frame = frame.rename(columns={timestamp_col: "timestamp"})
            names["timestamp"] = timestamp_col
    frame.attrs["names"] = {r: c for r, c in names.items() if c and c != r}
    return frame


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
    with _status("reading and checking", quiet):
        report_ = run(
            train=None
            if train is None
            else _read_interactions(train, fmt, sep, options, timestamp_col),
            test=None
            if test is None
            else _read_interactions(test, fmt, sep, options, timestamp_col),
            recs=None
            if recs is None
            else _read_log(recs, "recommendations", fmt, sep, _cols(options))[0],
            k=k,
            chronological=chronological,
        )
    out.print(report_.render(cli=True), markup=False)


@app.callback(invoke_without_command=True)
def _main(
    version: Annotated[bool, typer.Option("--version", help="print the version")] = False,
) -> None:
    if version:
        out.print(f"receval {__version__}")
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
    err.print(SIGNAL_MESSAGES[code], markup=False)
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
    err.print(
        f"internal error: {type(exc).__name__}: {exc}\n"
        "please report it with the command you ran (receval " + __version__ + ")",
        markup=False,
    )
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
        err.print(f"error: {exc.cli_message()}", markup=False)
        return 2
    except MemoryError as exc:
        err.print(f"error: {_out_of_memory(exc)}", markup=False)
        return 2
    except OSError as exc:  # reading: no such file, permission, I/O error, ...
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}", markup=False)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except ImportError as exc:
        text = str(exc).lower()
        if "failed to map segment" in text or "cannot allocate memory" in text:
            err.print(f"error: {_out_of_memory(MemoryError())}", markup=False)
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
