"""The flags every evaluating command shares, made from the one table of options
(:data:`receval.evaluation.options.OPTIONS`)."""

from __future__ import annotations

import functools
import inspect as _inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from receval.cli._base import Engine, EvaluateOutput, Format, Output, note_line
from receval.errors import ReceValError
from receval.evaluation.conventions import CONVENTIONS
from receval.evaluation.options import OPTIONS, EvalOptions, Option

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


def with_options(*groups: Mapping[str, Any]) -> Callable[[Callable[..., Any]], Any]:
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


def _load_plugins(value: list[str] | None) -> list[str] | None:
    """``--plugin``'s callback: import each module (or .py file), whose metrics are
    registered before any ``-m`` is read (the option is eager)."""
    from receval.metrics.plugins import import_plugin

    for name in value or ():
        import_plugin(name, flag="--plugin")
    return value


Plugins = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        metavar="MODULE|FILE.py",
        help="import this module (or Python file) first: the metrics it registers "
        "(receval.register_metric, @receval.metric) can be named by -m (repeatable)",
        callback=_load_plugins,
        is_eager=True,
    ),
]
Cutoffs = Annotated[
    str | None,
    typer.Option("-k", metavar="K,K,...", help="cut-offs for the metrics given without @k"),
]
OutputOpt = Annotated[
    Output,
    typer.Option("--output", "-o", help="how to print the results on stdout"),
]
EvaluateOutputOpt = Annotated[
    EvaluateOutput,
    typer.Option(
        "--output",
        "-o",
        help="how to print the results on stdout (trec_eval: trec_eval's own text, "
        "under --convention trec_eval)",
    ),
]
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
TrackingTimeout = Annotated[
    float | None,
    typer.Option(
        "--tracking-timeout",
        metavar="SECONDS",
        help="with --mlflow: give up on a tracking server that does not answer within SECONDS "
        "per request, retries included (default 30; 0: MLflow's own retries, minutes)",
        rich_help_panel=_TRACKING,
        show_default=False,
    ),
]


class Tracking(NamedTuple):
    """What a command's Tracking flags ask: ``--mlflow`` and its options
    (``timeout``: ``--tracking-timeout``, None when not given: receval's 30 s)."""

    on: bool
    experiment: str | None = None
    run_name: str | None = None
    no_report: bool = False
    timeout: float | None = None

    def ready(self) -> None:
        """Exit 2 before any work if ``--mlflow`` cannot log (mlflow not
        installed, a ``--tracking-timeout`` that is no number of seconds) or
        one of its options comes without it."""
        if not self.on:
            given = {
                "--mlflow-experiment": self.experiment is not None,
                "--mlflow-run-name": self.run_name is not None,
                "--no-mlflow-report": self.no_report,
                "--tracking-timeout": self.timeout is not None,
            }
            for flag, is_given in given.items():
                if is_given:
                    raise ReceValError(f"{flag} goes with --mlflow")
            return
        from receval.evaluation.tracking import check_tracking_timeout

        check_tracking_timeout(self.timeout)
        try:
            import mlflow  # noqa: F401
        except ImportError:
            raise ReceValError('--mlflow needs mlflow: pip install "receval[mlflow]"') from None

    def log(self, obj: Any, quiet: bool, page: Any = None) -> None:
        """``--mlflow``: log ``obj`` (:func:`receval.analysis.tracking.log_mlflow`),
        with the HTML report ``page`` when there is one, and say where. Called
        once the numbers are printed: a failure is one line, ``error: could not
        log to MLflow at <uri>: <reason>``, and exit 2 (docs/tracking.md)."""
        if not self.on:
            return
        from receval.analysis.tracking import log_mlflow
        from receval.evaluation.tracking import TRACKING_TIMEOUT

        run_id = log_mlflow(
            obj,
            experiment=self.experiment,
            run_name=self.run_name,
            report=page if page is not None else True,
            tracking_timeout=TRACKING_TIMEOUT if self.timeout is None else self.timeout,
        )
        if not quiet:
            note_line(f"logged to MLflow run {run_id}")
