"""``receval compare`` and ``receval report``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from receval.cli._base import Format, Output, command, note_line, show_out
from receval.cli.flags import (
    COLUMN_FLAGS,
    POLICY_FLAGS,
    Alpha,
    Baseline,
    Catalog,
    Correction,
    Cutoffs,
    FormatOpt,
    ItemFeatures,
    ItemGroups,
    Metrics,
    MlflowExperiment,
    MlflowFlag,
    MlflowNoReport,
    MlflowRunName,
    Names,
    OutputOpt,
    Plugins,
    Popular,
    Quiet,
    RemoveSeen,
    Resamples,
    Seed,
    SepOpt,
    Test,
    Tracking,
    TrackingTimeout,
    Train,
    UserGroups,
    with_options,
)
from receval.cli.inputs import (
    ITEM_ROLES,
    REPORT_SUFFIXES,
    file_notes,
    input_files,
    item_files,
    item_inputs,
    located_error,
    metric_strings,
    note_columns,
    path_input,
    refuse_input_targets,
    render,
    seen_in,
    status,
    suffix_format,
    without_seen,
)
from receval.errors import (
    InputError,
    OptionError,
    ReceValError,
)
from receval.evaluation.options import EvalOptions


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
    an input error (:func:`located_error`)."""

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
    given = {name: path_input(path, fmt, sep) for name, path in files.items()}
    truth_in, extra = path_input(truth, fmt, sep), item_inputs(items, user_groups, sep)
    where: dict[str, tuple[Any, str | None]] = {"truth": (truth_in, "truth")}
    where |= {k: (extra[k], ITEM_ROLES[k]) for k in input_files(items, user_groups)}
    where |= {run_source(n): (g, "recommendations") for n, g in given.items()}
    lists = dict(given)
    if remove_seen:
        extra["train"] = seen_in(extra.get("train"), options)
        for name in lists:
            lists[name], removed = without_seen(lists[name], extra["train"], name, options, quiet)
            if removed:  # rows removed: rows are no longer the file's lines
                where[run_source(name)] = (given[name], None)
    cols = options.columns()
    return _Runs(truth_in, lists, extra, files, lambda exc: located_error(exc, where, cols))


def _note_runs(cmp: Any, files: Mapping[str, Path], truth: Path, quiet: bool) -> None:
    """The columns of each run's file (and the truth's) read under another
    name (:func:`note_columns`)."""
    for i, (name, res) in enumerate(cmp.results.items()):
        if name in files:
            paths = {"recommendations": files[name], **({"truth": truth} if i == 0 else {})}
            note_columns(res, paths, quiet)


def _say_notes(notes: list[str], quiet: bool) -> None:
    """Each note as a ``note: ...`` line on stderr (nothing with ``--quiet``)."""
    if not quiet:
        for note in notes:
            note_line(f"note: {note}")


def _png_folder(png: Path | None) -> None:
    """``report --png``: a folder (or nothing yet), not a file."""
    if png is not None and png.exists() and not png.is_dir():
        from receval.errors import OutputError

        raise OutputError(
            f"cannot write charts into --png {png}: it is a file, not a folder; give a folder",
            path=str(png),
        )


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
@with_options(POLICY_FLAGS, COLUMN_FLAGS)
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
    tracking_timeout: TrackingTimeout = None,
    quiet: Quiet = False,
    plugin: Plugins = None,
) -> None:
    """Compare systems on the same truth with paired significance tests."""
    from receval.analysis.compare import compare as run

    metrics = metric_strings(metric, k)
    tracking = Tracking(
        mlflow, mlflow_experiment, mlflow_run_name, no_mlflow_report, tracking_timeout
    )
    tracking.ready()
    items = item_files(train, catalog, item_features, popular, item_groups)
    with file_notes(quiet):  # what each file was read as, once it is all read
        given = _runs_and_items(
            truth, runs, names, fmt, sep, options, items, user_groups, remove_seen, quiet
        )
        settings = _tests(baseline, test, correction, alpha, n_resamples, seed, options)
        with status("reading and comparing", quiet):
            result = _located(
                given.locate, run, given.runs, given.truth, metrics, **settings, **given.extra
            )
        _note_runs(result, given.files, truth, quiet)
    if output is Output.csv:  # one flat table: means, then each comparison with its p-values
        show_out(result.to_csv(), output)
    elif output is Output.table:  # its notes go to stderr, below
        from receval.analysis.comparison_render import text

        show_out(text(result, notes=False), output)
    else:
        show_out(render(result, output), output)
    _say_notes(result.notes, quiet)
    page = None
    if mlflow and not no_mlflow_report:  # the report of this comparison: curves added
        from receval.analysis.report import report as make_report

        inputs = {k: v for k, v in given.extra.items() if k != "user_groups"}
        with status("computing the report", quiet):
            page = make_report(
                given.runs, given.truth, comparison=result, options=options, **inputs
            )
    tracking.log(result, quiet, page)  # the numbers are printed: a failure leaves them


@command()
@with_options(POLICY_FLAGS, COLUMN_FLAGS)
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
    plugin: Plugins = None,
    off_policy: Annotated[
        list[str] | None,
        typer.Option(
            "--off-policy",
            metavar="[NAME=]FILE",
            help="add a section of counterfactual estimates: a JSON file written by "
            "'receval off-policy --json' (NAME: its title, default the file's stem); "
            "repeat the flag for several policies",
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report of one or more systems."""
    from receval.analysis.report import report as run

    metrics = metric_strings(metric or ["ndcg@10", "recall@10", "precision@10", "ap@10"], k)
    items = item_files(train, catalog, item_features, popular, item_groups)
    refuse_input_targets(
        {
            "truth": truth,
            **{f"recommendations file {i}": r for i, r in enumerate(runs, 1)},
            **input_files(items, user_groups),
            **{f"off-policy file {n}": f for n, f in _off_policy_files(off_policy).items()},
        },
        files={"out": out_path},
        folders={"png": png},
    )
    counterfactual = _off_policy_results(_off_policy_files(off_policy))
    html = dict.fromkeys(REPORT_SUFFIXES, "html")
    suffix_format("out", out_path, html, "the report is an HTML page")
    with file_notes(quiet):  # what each file was read as, once it is all read
        given = _runs_and_items(
            truth, runs, names, fmt, sep, options, items, user_groups, remove_seen, quiet
        )
        _png_folder(png)
        # everything is computed first; the files are written only at the end, each whole
        settings = _tests(baseline, test, correction, alpha, n_resamples, seed, options)
        with status("reading and computing the report", quiet):
            rep = _located(
                given.locate,
                run,
                given.runs,
                given.truth,
                metrics,
                **settings,
                **given.extra,
                **({"off_policy": counterfactual} if counterfactual else {}),
            )
        _note_runs(rep.comparison, given.files, truth, quiet)
    with status("writing the report", quiet):
        if png is not None:
            rep.save_images(png)
        rep.save(out_path)
    if not quiet:
        note_line(f"report written to {out_path}")
    # the comparison's (too few resamples, the evaluations' notes), then the report's
    # (e.g. PNGs asked for without matplotlib)
    _say_notes([*rep.comparison.notes, *rep.notes], quiet)


def _off_policy_files(given: list[str] | None) -> dict[str, Path]:
    """``--off-policy [NAME=]FILE`` values as name → path (an existing file
    whose name holds "=" is a path)."""
    out: dict[str, Path] = {}
    for value in given or []:
        name, sep, rest = value.partition("=")
        if sep and name and not Path(value).exists():
            key, path = name, Path(rest)
        else:
            key, path = Path(value).stem, Path(value)
        if key in out:
            raise OptionError(
                "off_policy", value, expected="a name given once (NAME=FILE names each file)"
            )
        out[key] = path
    return out


def _off_policy_results(files: Mapping[str, Path]) -> dict[str, Any]:
    """The results in the files of ``--off-policy``, read and checked."""
    import json

    from receval.analysis.off_policy import OffPolicyResult

    out = {}
    for name, path in files.items():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read the file ({exc.strerror})", source=str(path)) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(
                f"expected the JSON of 'receval off-policy --json'; not JSON ({exc})",
                source=str(path),
            ) from None
        try:
            out[name] = OffPolicyResult.from_dict(data)
        except InputError as exc:
            raise InputError(exc.reason, source=str(path)) from None
    return out
