"""``receval trec_eval``: trec_eval's command line and its text, byte for byte."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from receval.cli._base import EvaluateOutput, command, show_out
from receval.errors import InputError, OptionError, ReceValError

_HIDDEN = "trec_eval's own spelling"


@command("trec_eval")
def trec_eval(
    qrels: Annotated[str, typer.Argument(metavar="QRELS", help="TREC qrels: qid iter docno rel")],
    run: Annotated[
        str, typer.Argument(metavar="RUN", help="TREC run: qid Q0 docno rank score tag")
    ],
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "--measure",
            "-m",
            help="a trec_eval measure, parameters after a dot (P.5,10), or official, "
            "all_trec, set; repeatable (none: official)",
        ),
    ] = None,
    per_query: Annotated[
        bool, typer.Option("--per-query", "-q", help="each query's values too (trec_eval -q)")
    ] = False,
    complete: Annotated[
        bool,
        typer.Option(
            "--complete",
            "-c",
            help="queries of the qrels missing from the run score 0 and count (trec_eval -c)",
        ),
    ] = False,
    level: Annotated[
        int | None,
        typer.Option("--level-for-rel", "-l", help="relevant from this grade (trec_eval -l)"),
    ] = None,
    no_summary: Annotated[
        bool, typer.Option("--no-summary", "-n", help="no 'all' lines (trec_eval -n)")
    ] = False,
    max_docs: Annotated[
        int | None,
        typer.Option(
            "--max-retrieved-per-topic",
            help="only the first N documents of each query (trec_eval -M N)",
        ),
    ] = None,
    max_docs_short: Annotated[int | None, typer.Option("-M", hidden=True, help=_HIDDEN)] = None,
    judged_only: Annotated[
        bool,
        typer.Option(
            "--judged-docs-only",
            help="drop the documents not judged, closing up the ranks (trec_eval -J)",
        ),
    ] = False,
    judged_only_short: Annotated[bool, typer.Option("-J", hidden=True, help=_HIDDEN)] = False,
) -> None:
    """trec_eval 10.0's output, line for line: QRELS first, then RUN, as trec_eval."""
    from receval.evaluation.options import EvalOptions
    from receval.evaluation.trec_text import trec_eval_text
    from receval.io.inputs import FileInput

    depth = max_docs if max_docs is not None else max_docs_short
    try:
        options = EvalOptions(
            convention="trec_eval",
            missing_recs="zero" if complete else None,
            threshold=level if level is not None and level != 1 else None,
            depth=depth,
            unjudged="condense" if judged_only or judged_only_short else None,
        )
    except OptionError as exc:  # in trec_eval's flags: -M, --level-for-rel
        exc.flag = {"depth": "-M" if max_docs is None else "--max-retrieved-per-topic"}.get(
            exc.option, "--level-for-rel" if exc.option == "threshold" else None
        )
        raise
    files = {"recommendations": FileInput(run, "trec"), "truth": FileInput(qrels, "trec")}
    text = _located(
        trec_eval_text,
        files,
        measure or (),
        per_query=per_query,
        summary=not no_summary,
        options=options,
    )
    show_out(text.removesuffix("\n"), EvaluateOutput.trec_eval)


def _located(fn: Any, files: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(run, qrels, ...)``, an input error naming its file and line."""
    from receval.cli.inputs import located_error

    try:
        return fn(files["recommendations"], files["truth"], *args, **kwargs)
    except InputError as exc:
        where = {role: (given, role) for role, given in files.items()}
        raise located_error(exc, where, kwargs["options"].columns()) from None


#: the flags of ``evaluate`` that trec_eval's text has no place for, in the order
#: :func:`evaluate_trec_eval` is given their values
_NO_PLACE = (
    "-k",
    "--per-user",
    "--remove-seen",
    "--engine spark",
    "--mlflow",
    "--user-groups",
    "--train",
    "--catalog",
    "--item-features",
    "--popular",
    "--item-groups",
)


def evaluate_trec_eval(
    recs: str,
    truth: str,
    measures: list[str] | None,
    options: Any,
    read_as: tuple[Any, str | None],
    others: tuple[Any, ...],
) -> None:
    """``receval evaluate RUN QRELS --convention trec_eval -o trec_eval``: what
    ``trec_eval -m ... QRELS RUN`` prints (its ``all`` lines), ``-m`` taking
    trec_eval's measures (none: official) and the policy flags its options
    (``--missing-recs zero``: -c, ``--threshold``: -l, ``--depth``: -M,
    ``--unjudged condense``: -J). ``read_as``: ``--format`` and ``--sep``;
    ``others``: the values of the flags of :data:`_NO_PLACE`, refused when given."""
    from receval.cli.inputs import path_input
    from receval.evaluation.trec_text import trec_eval_text

    if options.convention != "trec_eval":
        raise ReceValError(
            "--output trec_eval prints trec_eval's measures: give --convention trec_eval"
        )
    given = [
        flag for flag, value in zip(_NO_PLACE, others, strict=True) if value not in (None, False)
    ]
    if given:
        raise ReceValError(
            f"--output trec_eval prints trec_eval's lines only: {given[0]} has no place in "
            "them (receval trec_eval -q gives the per-query lines)"
        )
    files = {"recommendations": path_input(recs, *read_as), "truth": path_input(truth, *read_as)}
    text = _located(trec_eval_text, files, measures or (), options=options)
    show_out(text.removesuffix("\n"), EvaluateOutput.trec_eval)
