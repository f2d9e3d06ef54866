"""``receval intent-aware``: α-nDCG@k and ERR-IA@k of a run over subtopic judgments."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from receval.cli._base import Format, Output, command, show_out
from receval.cli.flags import FormatOpt, JsonFlag, OutputOpt, Quiet, SepOpt
from receval.cli.inputs import file_notes, located_error, path_input, render
from receval.errors import InputError
from receval.records import Columns


class TieOrder(StrEnum):
    item = "item"
    item_desc = "item_desc"
    item_str = "item_str"
    item_str_desc = "item_str_desc"


def _column(flag: str, role: str) -> Any:
    return typer.Option(flag, help=f"the run's {role} column (default: detected)")


@command("intent-aware")
def intent_aware(
    run_path: Annotated[
        str, typer.Argument(metavar="RUN", help="the run: CSV/TSV/Parquet/JSONL/TREC run")
    ],
    qrels_path: Annotated[
        str,
        typer.Argument(
            metavar="QRELS", help="subtopic judgments, ndeval's: query subtopic doc judgment"
        ),
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "-m",
            "--metric",
            help="alpha_ndcg@k, alpha_dcg@k, err_ia@k or nerr_ia@k, each with an optional "
            "[alpha=x] (repeatable; none: alpha_ndcg@20 and err_ia@20)",
        ),
    ] = None,
    alpha: Annotated[
        float, typer.Option("--alpha", help="redundancy penalty in [0, 1] (ndeval -alpha)")
    ] = 0.5,
    all_queries: Annotated[
        bool,
        typer.Option(
            "--all-queries",
            "-c",
            help="average over every query of QRELS, 0 without a list (ndeval -c)",
        ),
    ] = False,
    ties: Annotated[
        TieOrder,
        typer.Option(
            "--ties",
            help="equal scores by item id; item_str_desc is ndeval -traditional's order",
        ),
    ] = TieOrder.item,
    depth: Annotated[
        int | None, typer.Option("--depth", help="read only the first N items of each list")
    ] = None,
    user_col: Annotated[str | None, _column("--user-col", "query")] = None,
    item_col: Annotated[str | None, _column("--item-col", "document")] = None,
    score_col: Annotated[str | None, _column("--score-col", "score")] = None,
    rank_col: Annotated[str | None, _column("--rank-col", "rank")] = None,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
    fmt: FormatOpt = Format.auto,
    sep: SepOpt = None,
    quiet: Quiet = False,
) -> None:
    """Intent-aware diversity as TREC's ndeval computes it: α-nDCG@k, α-DCG@k,
    ERR-IA@k and nERR-IA@k of RUN over the subtopic judgments QRELS, e.g.
    -m alpha_ndcg@5,10,20 -m err_ia@20."""
    from receval.analysis.intent_aware import intent_aware as run_intent_aware

    run_in = path_input(Path(run_path), fmt, sep)
    where = {"recommendations": (run_in, "recommendations")}
    try:
        with file_notes(quiet):
            result = run_intent_aware(
                run_in,
                Path(qrels_path),
                metric or ["alpha_ndcg@20", "err_ia@20"],
                alpha=alpha,
                all_queries=all_queries,
                ties=ties.value,
                depth=depth,
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
