"""The intent-aware diversity metrics: their per-subtopic kernel and declarations.

α-DCG (Clarke et al. 2008) and ERR-IA (Chapelle et al. 2009, as TREC's
``ndeval`` computes it) decompose by subtopic. With J(d, s) = 1 when document d
is relevant to subtopic s and r_{s,i−1} the number of documents relevant to s
among the first i − 1:

    Σ_i Σ_s J(d_i, s) (1 − α)^{r_{s,i−1}} / disc(i)
        = Σ_s Σ_j (1 − α)^{j−1} / disc(pos_{s,j})

where pos_{s,j} is the position of the j-th document relevant to s, and
disc(i) = log2(1 + i) (α-DCG) or i (ERR-IA).
:func:`~receval.metrics.kernels.intent.subtopic_gain` is the inner
sum of one subtopic: evaluated with the subtopic's relevant documents as the
truth, its value for a query is that subtopic's share of the query's sum.
:func:`receval.intent_aware` adds the shares of a query's subtopics and
normalises them. The four metrics are declared with ``door="intent_aware"``
(:data:`receval.metrics.registry.DOORS`): their kernel is the share, which only
that door turns into the metric, so ``evaluate`` refuses them and names the door.

Registered with receval's own metrics by :mod:`receval.metrics.registry`, which
calls :func:`definitions` with its ``MetricDef`` and ``ParamDef`` classes: this
module never imports the registry (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from receval.metrics.kernels.intent import dcg_share, err_share, subtopic_gain

__all__ = ["definitions", "subtopic_gain"]


def _alpha_ok(x: float) -> bool:
    return 0.0 <= x <= 1.0


#: (name, description, share kernel, normalised by)
_MEASURES = (
    ("alpha_ndcg", "α-nDCG@k: novelty-biased nDCG over subtopics", dcg_share, "greedy ideal"),
    ("alpha_dcg", "α-DCG@k over subtopics, ndeval's normalisation", dcg_share, "ideal ideal"),
    ("err_ia", "intent-aware ERR@k, ndeval's normalisation", err_share, "ideal ideal"),
    ("nerr_ia", "intent-aware ERR@k over the ideal ranking's", err_share, "greedy ideal"),
)

_DISC = {dcg_share: "log2(1 + i)", err_share: "i"}
_BY = {
    "greedy ideal": "the same sum of ndeval's greedy ideal list of the judged documents",
    "ideal ideal": "|S| Σ_{i≤k} (1 − α)^{i−1} / disc(i) (every document relevant to every "
    "one of the query's |S| subtopics)",
}


def definitions(
    MetricDef: Callable[..., Any],
    ParamDef: Callable[..., Any],
) -> tuple[Any, ...]:
    """The ``MetricDef`` declarations of the intent-aware metrics (``door="intent_aware"``),
    made with the registry's ``MetricDef`` and ``ParamDef`` (registered with receval's own).

    Each kernel is one subtopic's share (:func:`dcg_share` or :func:`err_share`);
    :func:`receval.intent_aware` sums them per query and normalises the sum.
    """
    alpha = ParamDef(
        "alpha",
        float,
        0.5,
        "redundancy penalty: the j-th document of a subtopic gains (1 − α)^(j−1) "
        "(intent_aware's alpha=, --alpha)",
        check=_alpha_ok,
        check_text="a number in [0, 1]",
    )
    return tuple(
        MetricDef(
            name=name,
            description=f"{text} (receval.intent_aware, subtopic judgments)",
            formula=f"Σ_s Σ_{{j : pos_{{s,j}} ≤ k}} (1 − α)^{{j−1}} / disc(pos_{{s,j}}), "
            f"disc(i) = {_DISC[kernel]}, over {_BY[by]}",
            kernel=kernel,
            params=(alpha,),
            needs_cutoff=True,
            door="intent_aware",
            undefined="queries of the qrels without a relevant document (0, as ndeval)",
            notes="Through receval.intent_aware (subtopic judgments; door=intent_aware): "
            "the kernel is one subtopic's share of the sum, which that door adds over the "
            "query's subtopics and normalises; evaluate refuses these metrics. TREC's ndeval "
            "(Clarke et al. 2008; Chapelle et al. 2009).",
        )
        for name, text, kernel, by in _MEASURES
    )
