"""``receval metrics``, ``explain`` and ``inspect``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Format, Output, command, show_out
from receval.cli.flags import COLUMN_FLAGS, FormatOpt, OutputOpt, Plugins, SepOpt, with_options
from receval.cli.inputs import located_error, path_input
from receval.errors import (
    InputError,
    ReceValError,
    shown,
)
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import markdown_escape


@command("metrics")
def list_metrics(plugin: Plugins = None) -> None:
    """List every metric with its aliases, parameters and definition."""
    from receval.metrics.registry import DOORS
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
        door = "" if d.door is None else f" [only through `{DOORS[d.door].command}`]"
        show_out(f"{line} — {kinds[d.kind]}: {d.description}{door}")


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
@with_options(COLUMN_FLAGS)
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
    plugin: Plugins = None,
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
        inputs = {
            "recommendations": path_input(recs, fmt, sep),
            "truth": path_input(truth, fmt, sep),
        }
        named = {c: getattr(options, c) for c in COLUMN_FLAGS if getattr(options, c) is not None}
        try:
            table = compare_conventions(
                inputs["recommendations"], inputs["truth"], metric, names=convention, **named
            )
        except InputError as exc:
            where: dict[str, tuple[Any, str | None]] = {r: (g, r) for r, g in inputs.items()}
            raise located_error(exc, where, options.columns()) from None
        show_out(_render_compare(table, spec.name, output), output)
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
    show_out("\n".join(lines))


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
    table, _, info = opened(path_input(path, fmt, sep), role, cols)
    return table.to_pandas(), info.format, dict(info.columns), list(info.messages), info


def _check_numbers(frame: Any, name: str, columns: dict, path: Path, info: Any) -> None:
    """The first row whose score or rank is no finite number (a rank: no whole
    number >= 1), named as the evaluation names it."""
    import numpy as np
    import pandas as pd

    numbers = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(numbers)
    if name == "rank":
        bad |= (numbers < 1) | (numbers != np.floor(numbers))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        expected = "a positive integer" if name == "rank" else "a finite number"
        exc = InputError(
            f"{name} must be {expected}; found {shown(frame[name].iloc[row])}",
            source=str(path),
            row=row,
            user=frame["user"].iloc[row],
            item=frame["item"].iloc[row],
            column=columns.get(name, name),
        )
        raise exc if info is None else info.locate(exc)


@command()
@with_options(COLUMN_FLAGS)
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
    try:
        frame, kind, columns, messages, info = _inspected(path, role, fmt, sep, options.columns())
    except InputError as exc:  # a truth read as recommendations: one file, so --truth
        if truth or "as a truth has" not in exc.reason:
            raise
        raise InputError(
            exc.reason.split("; this input has")[0]
            + "; it looks like a truth (a grade column): inspect it as one with --truth",
            source=exc.source,
        ) from None
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
    for name in ("score", "rank"):  # as the evaluation reads them: numbers, finite
        if name in frame:
            _check_numbers(frame, name, columns, path, info)
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
    show_out("\n".join(lines))
