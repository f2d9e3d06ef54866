"""``receval agreement``: a run's agreement with a reference run (rbo, jaccard, ...)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Format, Output, command, show_out
from receval.cli.flags import Cutoffs, FormatOpt, JsonFlag, Metrics, OutputOpt, Quiet, SepOpt
from receval.cli.inputs import file_notes, located_error, metric_strings, path_input, render
from receval.errors import InputError
from receval.records import Columns


class OnlyIn(StrEnum):
    skip = "skip"
    empty = "empty"
    error = "error"


class Duplicates(StrEnum):
    error = "error"
    keep = "keep"


def _column(flag: str, role: str) -> Any:
    return typer.Option(flag, help=f"the {role} column of both runs (default: detected)")


@command("agreement")
def agreement(
    run_path: Annotated[
        str, typer.Argument(metavar="RUN", help="the run: CSV/TSV/Parquet/JSONL/TREC run")
    ],
    reference_path: Annotated[
        str,
        typer.Argument(metavar="REFERENCE", help="the reference run, in the same formats"),
    ],
    metric: Metrics = None,
    k: Cutoffs = None,
    only_in_run: Annotated[
        OnlyIn,
        typer.Option(
            "--only-in-run",
            help="users with a list in RUN only: skip (counted), compare with an empty "
            "list, or error",
        ),
    ] = OnlyIn.skip,
    only_in_reference: Annotated[
        OnlyIn,
        typer.Option("--only-in-reference", help="users with a list in REFERENCE only: the same"),
    ] = OnlyIn.skip,
    duplicates: Annotated[
        Duplicates,
        typer.Option(
            "--duplicates", help="an item listed twice for a user: error, or keep its best rank"
        ),
    ] = Duplicates.error,
    user_col: Annotated[str | None, _column("--user-col", "user")] = None,
    item_col: Annotated[str | None, _column("--item-col", "item")] = None,
    score_col: Annotated[str | None, _column("--score-col", "score")] = None,
    rank_col: Annotated[str | None, _column("--rank-col", "rank")] = None,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """How far each user's list in RUN agrees with the user's list in REFERENCE:
    rbo (extrapolated), rbo_min, rbo_res, intersection and jaccard, e.g.
    -m rbo@10 -m jaccard@10."""
    from receval.analysis.agreement import agreement as run_agreement

    metrics = metric_strings(metric, k, example="rbo@10")
    run_in = path_input(Path(run_path), fmt, sep)
    reference_in = path_input(Path(reference_path), fmt, sep)
    where = {
        "recommendations": (run_in, "recommendations"),
        "reference": (reference_in, "recommendations"),
    }
    try:
        with file_notes(quiet):
            result = run_agreement(
                run_in,
                reference_in,
                metrics,
                only_in_run=only_in_run.value,  # type: ignore[arg-type]
                only_in_reference=only_in_reference.value,  # type: ignore[arg-type]
                duplicates=duplicates.value,  # type: ignore[arg-type]
                user_col=user_col,
                item_col=item_col,
                score_col=score_col,
                rank_col=rank_col,
            )
    except InputError as exc:
        raise located_error(
            exc, where, Columns(user=user_col, item=item_col, score=score_col, rank=rank_col)
        ) from None
    shown_as = Output.json if as_json else output
    show_out(render(result, shown_as), shown_as)
