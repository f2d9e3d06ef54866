"""``receval evaluate`` (in-process and on Spark) and ``receval evaluate-ratings``."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Engine, EvaluateOutput, Format, Output, command, show_out
from receval.cli.flags import (
    COLUMN_FLAGS,
    POLICY_FLAGS,
    RATING_FLAGS,
    Catalog,
    Cutoffs,
    EngineOpt,
    EvaluateOutputOpt,
    FormatOpt,
    ItemFeatures,
    ItemGroups,
    JsonFlag,
    Master,
    Metrics,
    MlflowExperiment,
    MlflowFlag,
    MlflowNoReport,
    MlflowRunName,
    OutputOpt,
    Plugins,
    Popular,
    Quiet,
    RemoveSeen,
    SepOpt,
    Tracking,
    TrackingTimeout,
    Train,
    UserGroups,
    with_options,
)
from receval.cli.inputs import (
    ITEM_ROLES,
    file_notes,
    input_files,
    inputs_record,
    item_files,
    item_inputs,
    located_error,
    metric_strings,
    note_columns,
    path_input,
    per_user_suffix_format,
    progress_bar,
    refuse_input_targets,
    render,
    seen_in,
    status,
    without_seen,
    write_result_per_user,
)
from receval.errors import (
    InputError,
    NoSharedUser,
    OptionError,
    ReceValError,
)
from receval.evaluation.options import EvalOptions
from receval.io.propensities import DEFAULT_GAMMA, is_model

Propensities = Annotated[
    str | None,
    typer.Option(
        "--propensities",
        metavar="FILE|popularity",
        help="the propensity of each relevant pair, for the weighted metrics, e.g. "
        "recall[weighting=ips] : a file with user, item and propensity columns (or item "
        "and propensity), or popularity: Yang et al.'s model estimated from --train",
    ),
]
PropensityGamma = Annotated[
    float | None,
    typer.Option(
        "--propensity-gamma",
        help="gamma of --propensities popularity: p_i = (n_i / n_max)^((gamma + 1) / 2) "
        f"(default {DEFAULT_GAMMA:g})",
    ),
]

# -- commands ---------------------------------------------------------------------------------


@command()
@with_options(POLICY_FLAGS, COLUMN_FLAGS)
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
    per_user_paths: Annotated[
        list[str] | None,
        typer.Option(
            "--per-user",
            metavar="PATH",
            help="write per-user values to a .csv or .parquet (.pq) file, as the suffix says "
            "(with --engine spark: a folder of that format, written by Spark)",
        ),
    ] = None,
    output: EvaluateOutputOpt = EvaluateOutput.table,
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
    propensities: Propensities = None,
    propensity_gamma: PropensityGamma = None,
    engine: EngineOpt = Engine.numpy,
    master: Master = None,
    mlflow: MlflowFlag = False,
    mlflow_experiment: MlflowExperiment = None,
    mlflow_run_name: MlflowRunName = None,
    no_mlflow_report: MlflowNoReport = False,
    tracking_timeout: TrackingTimeout = None,
    quiet: Quiet = False,
    plugin: Plugins = None,
) -> None:
    """Evaluate a file of recommendations against a file of truth."""
    from receval.io.write import check_target, given_once

    per_user_path = given_once("per_user", per_user_paths)  # twice: the first was lost
    if output is EvaluateOutput.trec_eval and not as_json:  # trec_eval's text: receval.cli.trec
        from receval.cli.trec import evaluate_trec_eval

        others = (k, per_user_path, remove_seen, engine is Engine.spark, mlflow, user_groups)
        others += (train, catalog, item_features, popular, item_groups)
        return evaluate_trec_eval(recs_path, truth_path, metric, options, (fmt, sep), others)
    output = Output(output.value if output is not EvaluateOutput.trec_eval else "table")
    metrics = metric_strings(metric, k)
    tracking = Tracking(
        mlflow, mlflow_experiment, mlflow_run_name, no_mlflow_report, tracking_timeout
    )
    tracking.ready()
    items = item_files(train, catalog, item_features, popular, item_groups)
    read = {"recommendations": recs_path, "truth": truth_path, **input_files(items, user_groups)}
    if propensities is not None and not is_model(propensities):
        read["propensities"] = propensities  # a file (else the popularity model's name)
    written = {"per_user": per_user_path}  # with Spark, a folder of part files
    if engine is Engine.spark:
        refuse_input_targets(read, folders=written)
    else:
        refuse_input_targets(read, files=written)
    shown_as = Output.json if as_json else output
    gamma = DEFAULT_GAMMA if propensity_gamma is None else propensity_gamma
    weighting = {"propensities": propensities, "propensity_gamma": gamma}
    if engine is Engine.spark:
        if per_user_path is not None:
            per_user_suffix_format(per_user_path, engine)
        with file_notes(quiet):  # the files opened here (groups); Spark reads the rest
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
                mlflow=tracking if mlflow else None,
                weighting=weighting,
            )
        return
    if master is not None:
        raise ReceValError("--master chooses the Spark master: it needs --engine spark")
    recs, truth = Path(recs_path), Path(truth_path)
    per_user = None if per_user_path is None else Path(per_user_path)
    per_user_format = None
    if per_user is not None:
        per_user_format = per_user_suffix_format(str(per_user), engine)
        check_target(per_user, "per_user")  # its folder, before the evaluation
    with file_notes(quiet):  # what each file was read as, once it is all read
        result, inputs = _evaluate_files(
            (recs, truth),
            metrics,
            options,
            fmt,
            sep,
            items,
            user_groups,
            remove_seen,
            quiet,
            weighting,
        )
    page = None
    if mlflow and not no_mlflow_report:
        page = _result_report(result, (recs, truth), inputs, options, quiet)
    if per_user is not None and per_user_format is not None:
        write_result_per_user(result, per_user, per_user_format)
    show_out(render(result, shown_as), shown_as)  # printed before logging, which may fail
    tracking.log(result, quiet, page)


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
    weighting: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``evaluate`` in this process: the files handed down to
    :func:`receval.evaluate`, which opens them (two Parquet files stream by
    chunks of users); an input error names the file and its line. Returns
    the Result (with the files read and their columns in its parameters) and
    the inputs handed down (``recommendations``, ``truth``, ``train``, ...).
    ``weighting``: ``propensities`` (a file or a model's name) and
    ``propensity_gamma``, for the weighted metrics."""
    from receval.evaluation.api import evaluate as run

    recs, truth = files
    inputs = {"recommendations": path_input(recs, fmt, sep), "truth": path_input(truth, fmt, sep)}
    inputs |= item_inputs(items, user_groups, sep)
    where: dict[str, tuple[Any, str | None]] = {
        r: (inputs[r], r) for r in ("recommendations", "truth")
    }
    where |= {k: (inputs[k], ITEM_ROLES[k]) for k in input_files(items, user_groups)}
    weighting = dict(weighting or {})
    if weighting.get("propensities") is not None:
        where["propensities"] = (weighting["propensities"], "items")
    removed = None
    if remove_seen:
        inputs["train"] = seen_in(inputs.get("train"), options)
        inputs["recommendations"], removed = without_seen(
            inputs["recommendations"], inputs["train"], str(recs), options, quiet
        )
        where["recommendations"] = (where["recommendations"][0], None)  # rows are not lines
    try:
        with progress_bar(f"reading {recs} and {truth}", quiet) as bar:
            recs_in, truth_in = inputs["recommendations"], inputs["truth"]
            extra = {k: v for k, v in inputs.items() if k in ITEM_ROLES}
            extra |= {k: v for k, v in weighting.items() if v is not None}
            result = run(recs_in, truth_in, metrics, options=options, progress=bar, **extra)
    except NoSharedUser:
        raise  # about both inputs, not one file's row
    except InputError as exc:
        raise located_error(exc, where, options.columns()) from None
    paths = {"recommendations": recs, "truth": truth}
    note_columns(result, paths, quiet)
    if removed is not None:
        result.parameters["remove_seen"] = True
        result.counts["recommendation_rows_seen_in_train_removed"] = removed
    result.parameters["inputs"] = inputs_record(result, paths, fmt)
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
    items = {k: v for k, v in inputs.items() if k in ITEM_ROLES and k != "user_groups"}
    runs, truth_in = inputs["recommendations"], inputs["truth"]
    with status("computing the report", quiet):
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
    mlflow: Tracking | None = None,
    weighting: Mapping[str, Any] | None = None,
) -> None:
    """``evaluate --engine spark``: the files read by Spark, evaluated on its
    session (:mod:`receval.engines.spark`, the files read by
    :mod:`receval.io.spark_files`); errors name the file and the
    user (a Spark row has no line number). ``mlflow``: the flags of
    ``--mlflow`` (the result is logged without an HTML report: its curves
    read the lists in this process). ``weighting``: ``--propensities`` (a file,
    read in this process) and ``--propensity-gamma``."""
    if remove_seen:
        raise OptionError(
            "remove_seen",
            True,
            reason="--remove-seen runs in this process: remove seen items in Spark first "
            "(a left anti join of the recommendations with --train), or use --engine numpy",
        )
    from receval.io.spark_files import command_session, refuse_existing, write_per_user

    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ReceValError("--engine spark needs pyspark: pip install 'receval[spark]'") from None
    # this process is the command line's own: PySpark's warnings about the
    # pandas version it was built for are not the user's business here
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\.")
    # the session of this run: quiet, its jobs cancelled on Ctrl-C, stopped at the end if ours
    with contextlib.ExitStack() as on_spark:
        with status("starting Spark", quiet):
            spark = on_spark.enter_context(command_session(master))
        if per_user is not None:  # an existing folder: refused before any work
            refuse_existing(spark, per_user)
        files = (recs, truth)
        result = _spark_result(
            spark, files, metrics, options, fmt, sep, items, user_groups, quiet, weighting
        )
        if per_user is not None:  # written by Spark: a folder of part files, _SUCCESS last
            with status(f"writing {per_user} with Spark", quiet):
                write_per_user(result.per_user_spark, per_user)
        show_out(render(result, output), output)
        if mlflow is not None:
            mlflow.log(result, quiet)


def _spark_result(
    spark: Any,
    files: tuple[str, str],
    metrics: list[str],
    options: EvalOptions,
    fmt: Format,
    sep: str | None,
    items: Mapping[str, Path | None],
    user_groups: str | None,
    quiet: bool,
    weighting: Mapping[str, Any] | None = None,
) -> Any:
    """The files of ``evaluate --engine spark`` (recommendations, truth, the
    item inputs) read by Spark on ``spark``, and evaluated there; the
    propensities (``weighting``) read in this process."""
    from receval.evaluation.api import evaluate as run
    from receval.io.spark_files import format_of, items_of, read

    recs, truth = files
    cols = options.columns()
    with status("reading with Spark", quiet):
        recs_df = read(spark, recs, "recommendations", fmt.value, sep)
        truth_df = read(spark, truth, "truth", fmt.value, sep)
        extra: dict[str, Any] = {}
        paths = {name: str(path) for name, path in items.items() if path is not None}
        if "train" in paths:
            extra["train"] = read(spark, paths["train"], "truth", "auto", sep)
        for name in ("catalog", "popular"):
            if name in paths:
                df = read(spark, paths[name], "items", "auto", sep)
                extra[name] = items_of(df, cols, paths[name])
        if "item_features" in paths:
            feats = read(spark, paths["item_features"], "items", "auto", sep)
            frame = feats.toPandas()
            extra["item_features"] = frame.drop(
                columns=[c for c in ("user", "relevance") if c in frame]
            )
    # O(items) and O(users): opened by the library in this process, as in-process
    groups = {"item_groups": items.get("item_groups")}
    extra |= item_inputs(groups, user_groups, sep)
    extra |= {k: v for k, v in (weighting or {}).items() if v is not None}
    try:
        with status("evaluating on Spark", quiet):
            result = run(recs_df, truth_df, metrics, options=options, **extra)
    except NoSharedUser:
        raise
    except InputError as exc:
        files = {k: str(v) for k, v in input_files({}, user_groups).items()}
        props = {"propensities": str((weighting or {}).get("propensities"))}
        where = {"recommendations": recs, "truth": truth, **paths, **files, **props}.get(
            str(exc.source)
        )
        raise exc.located(source=where) if where is not None else exc from None
    result.parameters["inputs"] = {
        "recommendations": {"path": recs, "format": format_of(recs, fmt.value)},
        "truth": {"path": truth, "format": format_of(truth, fmt.value)},
    }
    return result


@command("evaluate-ratings")
@with_options(RATING_FLAGS)
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
    table, _, info = opened(path_input(ratings, fmt, sep), "ratings", options.columns())
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
    show_out(render(result, shown_as), shown_as)
