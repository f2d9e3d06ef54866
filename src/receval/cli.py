"""The ``receval`` command line: parsing and rendering only; the work is in the library.

Exit codes: 0 success; 2 a usage or input error (one or two lines on stderr
naming the file, line, user and item, no traceback); 1 an internal error.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from receval import __version__
from receval.errors import InputError, OptionError, ReceValError

app = typer.Typer(
    name="receval",
    help="Offline evaluation of recommender systems, every definition explicit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


class Output(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"


class Format(StrEnum):
    auto = "auto"
    csv = "csv"
    tsv = "tsv"
    parquet = "parquet"
    jsonl = "jsonl"
    trec = "trec"


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
    """Write through a temporary file renamed into place: no partial file on error."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _metrics(metric: list[str] | None, cutoffs: str | None) -> list[str]:
    from receval.metrics.spec import parse_metrics

    if not metric:
        raise ReceValError("give at least one metric with -m, e.g. -m ndcg@10")
    if cutoffs is None:
        return list(metric)
    ks = []
    for part in cutoffs.split(","):
        try:
            k = int(part)
        except ValueError:
            raise ReceValError(f"-k takes positive integers like 5,10,20; got {part!r}") from None
        if k <= 0:
            raise ReceValError(f"-k takes positive integers like 5,10,20; got {k}")
        ks.append(k)
    out_metrics: list[str] = []
    for m in metric:
        specs = parse_metrics(m)
        if all(s.k is None for s in specs) and "@" not in m:
            out_metrics += [str(s.with_k(k)) for s in specs for k in ks]
        else:
            out_metrics.append(m)
    return out_metrics


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


UserCol = Annotated[str | None, typer.Option("--user-col", help="user column (default: detected)")]
ItemCol = Annotated[str | None, typer.Option("--item-col", help="item column (default: detected)")]
ScoreCol = Annotated[
    str | None, typer.Option("--score-col", help="score column (default: detected)")
]
RankCol = Annotated[
    str | None, typer.Option("--rank-col", help="rank column, 1 = best (default: detected)")
]
RelCol = Annotated[
    str | None,
    typer.Option(
        "--relevance-col",
        help="grade column of the truth (default: detected: relevance, rating, ...)",
    ),
]
Metrics = Annotated[
    list[str] | None,
    typer.Option("-m", "--metric", help="metric, e.g. ndcg@10 or map@5,10 (repeatable)"),
]


@app.command()
def evaluate(
    recs: Annotated[Path, typer.Argument(help="recommendations: CSV/TSV/Parquet/JSONL/TREC run")],
    truth: Annotated[Path, typer.Argument(help="truth: CSV/TSV/Parquet/JSONL/TREC qrels")],
    metric: Metrics = None,
    k: Annotated[
        str | None, typer.Option("-k", help="cut-offs for metrics given without @k")
    ] = None,
    convention: Annotated[
        str | None,
        typer.Option(help="reproduce a tool's numbers: trec_eval, ranx, rectools, ... (see docs)"),
    ] = None,
    threshold: Annotated[
        float | None, typer.Option(help="grade from which an item is relevant [default: 1]")
    ] = None,
    empty_truth: Annotated[
        str | None,
        typer.Option(help="users in the truth without relevant items: skip | zero | error"),
    ] = None,
    missing_recs: Annotated[
        str | None, typer.Option(help="users with relevant items but no list: zero | skip | error")
    ] = None,
    no_truth: Annotated[
        str | None,
        typer.Option(help="users with a list, not in the truth: skip | zero | error"),
    ] = None,
    ties: Annotated[
        str | None,
        typer.Option(help="equal scores: item | item_desc | item_str | item_str_desc | input"),
    ] = None,
    duplicates: Annotated[str, typer.Option(help="error | keep")] = "error",
    per_user: Annotated[
        Path | None, typer.Option(help="write per-user values (.csv or .parquet)")
    ] = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.table,
    as_json: Annotated[bool, typer.Option("--json", help="same as --output json")] = False,
    fmt: Annotated[Format, typer.Option("--format", help="input format")] = Format.auto,
    sep: Annotated[str | None, typer.Option(help="CSV delimiter (default: detected)")] = None,
    train: Annotated[Path | None, typer.Option(help="training interactions")] = None,
    catalog: Annotated[Path | None, typer.Option(help="file of catalog items")] = None,
    item_features: Annotated[
        Path | None,
        typer.Option(help="item features for ild: an item column and numeric feature columns"),
    ] = None,
    popular: Annotated[
        Path | None, typer.Option(help="file of the items serendipity treats as popular")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    user_col: UserCol = None,
    item_col: ItemCol = None,
    score_col: ScoreCol = None,
    rank_col: RankCol = None,
    relevance_col: RelCol = None,
) -> None:
    """Evaluate a file of recommendations against a file of truth."""
    from receval.evaluation.api import evaluate as run
    from receval.records import Columns

    metrics = _metrics(metric, k)
    cols = Columns(user_col, item_col, score_col, rank_col, relevance_col)
    streams = _open_streams(recs, truth, fmt, cols, quiet)
    if streams is not None:  # two Parquet files: read chunk by chunk of users
        (recs_table, recs_info), (truth_table, truth_info) = streams
    else:
        recs_table, recs_info = _read(recs, "recommendations", fmt, sep, cols, quiet)
        truth_table, truth_info = _read(truth, "truth", fmt, sep, cols, quiet)
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
        values = feats.drop(columns=[c for c in ("user", "relevance") if c in feats])
        extra["item_features"] = values.set_index("item").astype(float)
    try:
        with _progress(recs_table.num_rows, quiet) as advance:
            result = run(
                recs_table,
                truth_table,
                metrics,
                convention=convention,
                threshold=threshold,
                empty_truth=empty_truth,
                missing_recs=missing_recs,
                no_truth=no_truth,
                ties=ties,
                duplicates=duplicates,
                progress=advance,
                **extra,  # type: ignore[arg-type]
            )
    except InputError as exc:
        if streams is not None and exc.source in (recs_info.path, truth_info.path):
            raise  # already names the file and its row
        info = recs_info if exc.source == "recommendations" else truth_info
        raise info.locate(exc) from None
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
            _write_atomic(per_user, lambda p: frame.to_csv(p, index=False, na_rep="NaN"))
    out.print(_render(result, Output.json if as_json else output), markup=False)


@app.command("evaluate-ratings")
def evaluate_ratings(
    ratings: Annotated[Path, typer.Argument(help="(user, item, actual, predicted) rows")],
    metric: Metrics = None,
    actual_col: Annotated[
        str | None, typer.Option(help="actual rating column (default: detected)")
    ] = None,
    predicted_col: Annotated[
        str | None, typer.Option(help="predicted rating column (default: detected)")
    ] = None,
    dropna: Annotated[bool, typer.Option(help="drop rows with a missing rating")] = False,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.table,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    user_col: UserCol = None,
    item_col: ItemCol = None,
) -> None:
    """Rating-prediction metrics (mae, rmse, r2, pearson, ...) of a ratings file."""
    from receval.evaluation.ratings import evaluate_ratings as run
    from receval.io.files import read_file
    from receval.records import Columns

    cols = Columns(user=user_col, item=item_col, actual=actual_col, predicted=predicted_col)
    table, info = read_file(ratings, role="ratings", cols=cols)
    try:
        result = run(table, list(metric or []) or ["rmse"], dropna=dropna)
    except InputError as exc:
        raise info.locate(exc) from None
    out.print(_render(result, Output.json if as_json else output), markup=False)


@app.command("metrics")
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
            [str(i), *(f"{v:.4f}" if isinstance(v, float) else str(v) for v in r)]
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


@app.command()
def explain(
    metric: Annotated[str, typer.Argument(help="a metric name, e.g. map@10")],
    recs: Annotated[
        Path | None, typer.Argument(help="with --compare: a recommendations file")
    ] = None,
    truth: Annotated[Path | None, typer.Argument(help="with --compare: a truth file")] = None,
    compare: Annotated[
        bool,
        typer.Option("--compare", help="compute METRIC on RECS/TRUTH under every convention"),
    ] = False,
    convention: Annotated[
        list[str] | None, typer.Option(help="with --compare: only these conventions")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="input format")] = Format.auto,
    sep: Annotated[str | None, typer.Option(help="CSV delimiter (default: detected)")] = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.table,
    user_col: UserCol = None,
    item_col: ItemCol = None,
    score_col: ScoreCol = None,
    rank_col: RankCol = None,
    relevance_col: RelCol = None,
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
        from receval.records import Columns

        cols = Columns(user_col, item_col, score_col, rank_col, relevance_col)
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


@app.command()
def inspect(
    path: Annotated[Path, typer.Argument(help="a recommendations or truth file")],
    truth: Annotated[bool, typer.Option("--truth", help="read it as truth")] = False,
    fmt: Annotated[Format, typer.Option("--format")] = Format.auto,
    sep: Annotated[str | None, typer.Option()] = None,
    user_col: UserCol = None,
    item_col: ItemCol = None,
    score_col: ScoreCol = None,
    rank_col: RankCol = None,
    relevance_col: RelCol = None,
) -> None:
    """Summarise a file as receval reads it: columns, users, items, lists, ties, grades."""
    import numpy as np
    import pandas as pd

    from receval.records import Columns

    cols = Columns(user_col, item_col, score_col, rank_col, relevance_col)
    role = "truth" if truth else "recommendations"
    table, info = _read(path, role, fmt, sep, cols, quiet=True)
    frame = table.to_pandas()
    lines = [f"{path}: {info.format}, {len(frame)} rows"]
    lines += [f"column {c} read as {role_}" for role_, c in info.columns.items()]
    lines += info.messages
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
    if "relevance" in frame:
        counts = pd.Series(frame["relevance"]).value_counts().sort_index()
        lines.append("grades: " + ", ".join(f"{g:g}: {n}" for g, n in counts.items()))
    out.print("\n".join(lines), markup=False)


@app.command()
def compare(
    truth: Annotated[Path, typer.Argument(help="the truth file")],
    runs: Annotated[list[Path], typer.Argument(help="two or more recommendation files")],
    metric: Metrics = None,
    names: Annotated[str | None, typer.Option(help="system names, comma-separated")] = None,
    baseline: Annotated[str | None, typer.Option(help="compare every run with this one")] = None,
    test: Annotated[str, typer.Option(help="t | wilcoxon | randomization")] = "t",
    correction: Annotated[str, typer.Option(help="holm | bonferroni | bh | none")] = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.table,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Compare systems on the same truth with paired significance tests."""
    from receval.analysis.compare import compare as run

    truth_table, tables = _read_runs(truth, runs, names, quiet)
    with _status("comparing", quiet):
        result = run(
            tables,
            truth_table,
            _metrics(metric, None),
            baseline=baseline,
            test=test,
            correction=correction,
            alpha=alpha,
            n_resamples=n_resamples,
            seed=seed,
        )
    if output is Output.csv:
        out.print(result.table.to_csv(), markup=False)
    else:
        out.print(_render(result, output), markup=False)


def _read_runs(
    truth: Path, runs: list[Path], names: str | None, quiet: bool
) -> tuple[Any, dict[str, Any]]:
    """The truth and each named run, read."""
    from receval.records import Columns

    systems = _systems(runs, names)
    truth_table = _read(truth, "truth", Format.auto, None, Columns(), quiet)[0]
    tables = {
        name: _read(p, "recommendations", Format.auto, None, Columns(), quiet)[0]
        for name, p in systems.items()
    }
    return truth_table, tables


def _systems(runs: list[Path], names: str | None) -> dict[str, Path]:
    labels = [n.strip() for n in names.split(",")] if names else [p.stem for p in runs]
    if len(labels) != len(runs):
        raise ReceValError(f"--names gives {len(labels)} names for {len(runs)} runs")
    if len(set(labels)) != len(labels):
        raise ReceValError("two runs have the same name: give --names a,b,c")
    return dict(zip(labels, runs, strict=True))


@app.command()
def report(
    truth: Annotated[Path, typer.Argument(help="the truth file")],
    runs: Annotated[list[Path], typer.Argument(help="one or more recommendation files")],
    out_path: Annotated[Path, typer.Option("--out", help="the HTML file to write")] = Path(
        "report.html"
    ),
    metric: Metrics = None,
    names: Annotated[str | None, typer.Option(help="system names, comma-separated")] = None,
    png: Annotated[Path | None, typer.Option("--png", help="also write PNG charts here")] = None,
    train: Annotated[Path | None, typer.Option(help="training interactions")] = None,
    seed: int = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Write a self-contained HTML report comparing systems."""
    from receval.analysis.report import report as run
    from receval.records import Columns

    truth_table, tables = _read_runs(truth, runs, names, quiet)
    extra: dict[str, Any] = {}
    if train is not None:
        extra["train"] = _read(train, "truth", Format.auto, None, Columns(), quiet)[0]
    metrics = _metrics(metric or ["ndcg@10", "recall@10", "precision@10", "ap@10"], None)
    with _status("writing the report", quiet):
        _write_atomic(
            out_path,
            lambda p: run(tables, truth_table, metrics, out=p, png_dir=png, seed=seed, **extra),
        )
    err.print(f"report written to {out_path}")


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="where the demo writes its files")] = Path(
        "receval-demo"
    ),
    users: Annotated[int, typer.Option(help="users of the synthetic log")] = 10_000,
    interactions: Annotated[
        Path | None, typer.Option(help="your own log (CSV/Parquet or MovieLens ratings)")
    ] = None,
    seed: int = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """The whole protocol on built-in data: split, three baselines, metrics, tests, report."""
    from receval.workflow.demo import run_demo

    if users <= 0:
        raise ReceValError(f"--users must be positive; got {users}")
    run_demo(out_dir, users=users, interactions=interactions, seed=seed, quiet=quiet)


@app.command()
def split(
    interactions: Annotated[Path, typer.Argument(help="an interactions file")],
    out_dir: Annotated[Path, typer.Option("--out", help="where train/test go")] = Path("split"),
    method: Annotated[
        str, typer.Option(help="random | user_random | time | user_time | leave_one_out")
    ] = "user_time",
    test_size: float = 0.2,
    seed: int = 0,
    min_user_interactions: int = 0,
    min_item_interactions: int = 0,
    drop_unseen: Annotated[bool, typer.Option(help="drop unseen users/items from test")] = False,
) -> None:
    """Split an interactions log into train and test, and say what was dropped."""
    from receval.io.interactions import read_interactions
    from receval.workflow.split import split as run

    log = read_interactions(interactions)
    result = run(
        log,
        method,
        test_size=test_size,
        seed=seed,  # type: ignore[arg-type]
        min_user_interactions=min_user_interactions,
        min_item_interactions=min_item_interactions,
        drop_unseen_users=drop_unseen,
        drop_unseen_items=drop_unseen,
    )
    out.print(str(result), markup=False)
    for name, path in result.save(out_dir).items():
        err.print(f"{name}: {path}")


@app.command()
def check(
    recs: Annotated[Path | None, typer.Option(help="recommendations file")] = None,
    train: Annotated[Path | None, typer.Option(help="training interactions")] = None,
    test: Annotated[Path | None, typer.Option(help="test interactions")] = None,
    k: Annotated[int | None, typer.Option("-k", help="the largest cut-off you will use")] = None,
    chronological: bool = False,
) -> None:
    """Look for leakage and oddities: seen items recommended, time travel, ties, duplicates."""
    from receval.io.interactions import read_interactions
    from receval.workflow.checks import check as run

    def load(p: Path | None) -> Any:
        return None if p is None else read_interactions(p)

    report_ = run(
        train=load(train), test=load(test), recs=load(recs), k=k, chronological=chronological
    )
    out.print(str(report_), markup=False)


@app.callback(invoke_without_command=True)
def _main(
    version: Annotated[bool, typer.Option("--version", help="print the version")] = False,
) -> None:
    if version:
        out.print(f"receval {__version__}")
        raise typer.Exit()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        app(args=argv, standalone_mode=False)
    except OptionError as exc:  # the shell's syntax: --empty-truth zero, not empty_truth="zero"
        err.print(f"error: {exc.cli_message()}", markup=False)
        return 2
    except ReceValError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        err.print(f"error: {exc.filename}: {exc.strerror}", markup=False)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except Exception as exc:  # usage errors of the parser, and everything unexpected
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()  # a usage error: "Missing parameter", "No such option" (exit 2)
            return int(exc.exit_code)
        err.print(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "please report it with the command you ran (receval " + __version__ + ")",
            markup=False,
        )
        return 1
    return 0
