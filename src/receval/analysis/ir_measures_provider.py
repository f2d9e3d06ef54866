"""receval as an ir_measures provider: ``ir_measures.iter_calc`` / ``calc_aggregate``
computed by receval.

ir_measures (0.4.3) names its measures ``nDCG@10``, ``P@5``, ``AP``,
``R@100``, ``RR``, ``Judged@10``, ``NumRet(rel=1)``, ... and sends each to the
first *provider* of its ``DefaultPipeline`` that supports it (pytrec_eval for
most). Its ``iter_calc``/``calc_aggregate`` take no ``provider=`` argument, so
:func:`register` puts receval first in that pipeline; :func:`provider` gives
the provider itself, with ir_measures' own interface
(``provider().calc_aggregate(measures, qrels, run)``, ``.evaluator(...)``).

Each measure is computed as the provider it replaces computes it, to 1e-12 per
query (``tests/conformance/test_ir_measures_provider.py`` checks it against
ir_measures' own providers):

- ``P@k``, ``P(rel=r)@k``: ``precision@k`` with threshold r (as pytrec_eval);
- ``R@k``: ``recall@k``; ``AP``, ``AP@k``: ``ap``, ``ap@k``; ``nDCG``,
  ``nDCG@k``: ``ndcg``, ``ndcg@k``; ``RR``: ``rr`` over the whole list;
  ``Rprec``: ``r_precision``; ``Success@k``: ``hit_rate@k`` (pytrec_eval);
- ``RR@k``: ``rr@k`` (as msmarco);
- ``NumRet``: ``n_retrieved``; ``NumRet(rel=r)``: ``hits``; ``NumRel``:
  ``n_relevant``; ``NumQ``: 1 per query evaluated (pytrec_eval; summed);
- ``Judged@k``: ``judged@k``, negative grades counted as judged (as judged);
- ``Bpref``: ``bpref``; ``SetP``: ``precision[denominator=retrieved]``;
  ``SetR``: ``recall``; ``SetAP``: ``set_ap``; ``infAP``: ``infap`` (pytrec_eval).

Everything is evaluated with ``convention="trec_eval"`` (ties by docid
descending as text, negative grades unjudged, queries without a relevant
document kept); the measures of ``judged`` and ``msmarco`` order equal scores
by docid ascending as text, as those providers do. Queries of the qrels that
the run lacks get the measure's default (0), by ir_measures itself. Ids are
read by receval's id rule: two docids that it reads as the same number
(``1`` and ``1.0``) are one document.

ir_measures is imported only when these functions are called; ``import
receval`` never imports it.

Example (with ir_measures installed)::

    import ir_measures
    from receval.analysis.ir_measures_provider import register

    register()  # receval first in ir_measures.DefaultPipeline
    qrels = {"q1": {"d1": 1, "d2": 0}}
    run = {"q1": {"d1": 1.2, "d2": 3.4}}
    ir_measures.calc_aggregate([ir_measures.parse_measure("nDCG@10")], qrels, run)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

__all__ = ["NAME", "provider", "register", "supported", "unregister"]

#: The provider's name in ``ir_measures.providers.registry``.
NAME = "receval"

_TREC = "item_str_desc"  # trec_eval's order of equal scores
_ASC = "item_str"  # judged's and msmarco's: sorted by (-score, docid)


def _ir() -> Any:
    try:
        import ir_measures
    except ImportError:
        raise ImportError(
            "receval's ir_measures provider needs ir_measures: pip install ir-measures"
        ) from None
    return ir_measures


def _translate(measure: Any) -> tuple[str, float, str]:
    """(receval metric, threshold, ties) of one supported ir_measures measure."""
    from ir_measures.providers.base import NOT_PROVIDED

    name = measure.NAME
    params = measure.SUPPORTED_PARAMS

    def get(key: str) -> Any:
        return measure[key] if key in params else NOT_PROVIDED

    cutoff = get("cutoff")
    at = "" if cutoff is NOT_PROVIDED else f"@{int(cutoff)}"
    rel = get("rel")
    threshold = 1.0 if rel is NOT_PROVIDED else float(rel)
    if name == "P":
        return f"precision{at}", threshold, _TREC
    if name == "R":
        return f"recall{at}", threshold, _TREC
    if name == "AP":
        return f"ap{at}", threshold, _TREC
    if name == "nDCG":
        return f"ndcg{at}", 1.0, _TREC
    if name == "RR":
        return (f"rr{at}", threshold, _ASC) if at else ("rr", threshold, _TREC)
    if name == "Rprec":
        return "r_precision", threshold, _TREC
    if name == "Success":
        return f"hit_rate{at}", threshold, _TREC
    if name == "NumRet":
        return ("n_retrieved", 1.0, _TREC) if rel is NOT_PROVIDED else ("hits", threshold, _TREC)
    if name == "NumRel":
        return "n_relevant", threshold, _TREC
    if name == "NumQ":
        return "n_retrieved", 1.0, _TREC  # a value per query evaluated; 1 is yielded
    if name == "Judged":
        return f"judged{at}", 1.0, "judged"
    if name == "Bpref":
        return "bpref", threshold, _TREC
    if name == "SetP":
        return "precision[denominator=retrieved]", threshold, _TREC
    if name == "SetR":
        return "recall", threshold, _TREC
    if name == "SetAP":
        return "set_ap", threshold, _TREC
    if name == "infAP":
        return "infap", threshold, _TREC
    raise ValueError(f"receval's ir_measures provider does not support {measure}")


def _supported_measures() -> list[Any]:
    """The measures the provider supports, as ir_measures declares them."""
    from ir_measures import measures as M
    from ir_measures.providers.base import NOT_PROVIDED, Choices
    from ir_measures.providers.base import Any as AnyValue

    no = Choices(False)
    return [
        M._P(cutoff=AnyValue(required=True), rel=AnyValue(), judged_only=no),
        M._R(cutoff=AnyValue(required=True), judged_only=no),
        M._AP(cutoff=AnyValue(), rel=AnyValue(), judged_only=no),
        M._nDCG(
            cutoff=AnyValue(),
            dcg=Choices("log2"),
            gains=Choices(NOT_PROVIDED),
            judged_only=no,
        ),
        M._RR(cutoff=AnyValue(), rel=AnyValue(), judged_only=no),
        M._Rprec(rel=AnyValue(), judged_only=no),
        M._Success(cutoff=AnyValue(required=True), rel=AnyValue(), judged_only=no),
        M._NumRet(rel=AnyValue()),
        M._NumRel(rel=Choices(1)),
        M._NumQ(),
        M._Judged(cutoff=AnyValue()),
        M._Bpref(rel=AnyValue()),
        M._SetP(rel=AnyValue(), relative=Choices(False), judged_only=no),
        M._SetR(rel=AnyValue()),
        M._SetAP(rel=AnyValue(), judged_only=no),
        M._infAP(rel=AnyValue()),
    ]


@functools.cache
def _classes() -> tuple[type, type]:
    """The provider and evaluator classes (built on first use: they subclass
    ir_measures' own, which is imported only then)."""
    ir = _ir()

    class ReceValEvaluator(ir.providers.Evaluator):  # type: ignore[misc,name-defined]
        """Scores runs against one qrels with receval."""

        def __init__(self, measures: Iterable[Any], qrels: Any) -> None:
            self.qrels = ir.util.QrelsConverter(qrels).as_dict_of_dict()
            measures = list(measures)
            super().__init__(measures, set(self.qrels))
            plan: dict[tuple[float, str], list[tuple[Any, str]]] = {}
            for m in measures:
                spec, threshold, ties = _translate(m)
                plan.setdefault((threshold, ties), []).append((m, spec))
            self.plan = plan

        def _iter_calc(self, run: Any) -> Iterator[Any]:
            from receval.evaluation.api import evaluate

            run = ir.util.RunConverter(run).as_dict_of_dict()
            run = {q: docs for q, docs in run.items() if docs and self.qrels.get(q)}
            if not run:
                return
            for (threshold, ties), pairs in self.plan.items():
                specs = list(dict.fromkeys(spec for _, spec in pairs))
                qrels = self.qrels
                if ties == "judged":
                    # the judged provider counts every document of the qrels,
                    # negative grades too (trec_eval's reading: unjudged)
                    qrels = {
                        q: {d: max(g, 0) for d, g in docs.items()} for q, docs in qrels.items()
                    }
                res = evaluate(
                    run,
                    qrels,
                    specs,
                    convention="trec_eval",
                    threshold=threshold,
                    ties=_ASC if ties == "judged" else ties,
                )
                table = res.per_user
                column = dict(zip(specs, table.columns, strict=True))
                for m, spec in pairs:
                    values = table[column[spec]]
                    for user, value in zip(table.index.tolist(), values.tolist(), strict=True):
                        if math.isnan(value):
                            continue
                        v = 1.0 if m.NAME == "NumQ" else float(value)
                        yield ir.Metric(query_id=str(user), measure=m, value=v)

    class ReceValProvider(ir.providers.Provider):  # type: ignore[misc,name-defined]
        """receval, as an ir_measures provider."""

        NAME = NAME
        SUPPORTED_MEASURES: ClassVar[list[Any]] = _supported_measures()

        def _evaluator(self, measures: Iterable[Any], qrels: Any) -> Any:
            return ReceValEvaluator(measures, qrels)

    return ReceValProvider, ReceValEvaluator


@functools.cache
def provider() -> Any:
    """The receval provider (one instance): an ``ir_measures.providers.Provider``
    with ir_measures' interface — ``iter_calc(measures, qrels, run)``,
    ``calc_aggregate(...)``, ``calc(...)``, ``evaluator(measures, qrels)``,
    ``supports(measure)``.

    Example (with ir_measures installed)::

        from ir_measures import parse_measure
        provider().calc_aggregate([parse_measure("P@5")], qrels, run)
    """
    cls, _ = _classes()
    return cls()


def supported(measure: str | Any) -> bool:
    """Whether receval's provider computes ``measure`` (an ir_measures
    measure or its name, e.g. ``"nDCG@10"``, ``"NumRet(rel=1)"``)."""
    ir = _ir()
    if isinstance(measure, str):
        measure = ir.parse_measure(measure)
    return bool(provider().supports(measure))


def register(default: bool = True) -> Any:
    """Register receval with ir_measures: as ``ir_measures.providers.registry
    ["receval"]`` and, with ``default``, first in ``ir_measures.DefaultPipeline``
    (which ``ir_measures.iter_calc``, ``calc_aggregate``, ``calc`` and
    ``evaluator`` use), so that every measure receval supports is computed by
    receval and the others by the providers after it. Calling it again changes
    nothing. Returns the provider.

    Example (with ir_measures installed)::

        import ir_measures
        register()
        ir_measures.calc_aggregate([ir_measures.AP, ir_measures.P @ 5], qrels, run)
    """
    ir = _ir()
    p = provider()
    ir.providers.registry[NAME] = p
    chain = ir.DefaultPipeline.providers
    if default and p not in chain:
        chain.insert(0, p)
    return p


def unregister() -> None:
    """Take receval out of ``ir_measures.DefaultPipeline`` and the registry
    (what :func:`register` did)."""
    ir = _ir()
    p = provider()
    chain = ir.DefaultPipeline.providers
    while p in chain:
        chain.remove(p)
    if ir.providers.registry.get(NAME) is p:
        del ir.providers.registry[NAME]
