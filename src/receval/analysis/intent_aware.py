"""Intent-aware diversity: α-nDCG@k and ERR-IA@k over subtopic judgments.

The measures of TREC's ``ndeval`` (Web track 2009-2014), as it computes them:

* α-DCG (Clarke et al. 2008, "Novelty and diversity in information retrieval
  evaluation", SIGIR): the document at position i gains
  Σ_s J(d_i, s)(1 − α)^{r_{s,i−1}}, J(d, s) = 1 when d is relevant to subtopic
  s, r_{s,i−1} the documents relevant to s among the first i − 1; discounted by
  log2(1 + i) and summed over the first k positions.
* ERR-IA (Chapelle et al. 2009, "Expected reciprocal rank for graded
  relevance", CIKM, made intent-aware as in Agrawal et al. 2009): the same
  gains discounted by i. It is the mean over the query's subtopics of ERR_s,
  the ERR of the list for a user interested in s alone who stops at a relevant
  document with probability α: ERR_s@k = Σ_{i≤k} α(1 − α)^{r_{s,i−1}} J(d_i, s) / i.

Normalisations (ndeval's names):

* ``alpha_dcg@k`` and ``err_ia@k``: divided by the value of an "ideal ideal"
  list in which every document is relevant to every one of the query's |S|
  subtopics: |S| Σ_{i≤k} (1 − α)^{i−1} / disc(i). ndeval's ERR-IA@k is thus
  mean_s ERR_s@k / Σ_{i≤k} α(1 − α)^{i−1} / i.
* ``alpha_ndcg@k`` and ``nerr_ia@k``: divided by the value of the ideal list,
  built greedily from the judged documents (ndeval's own greedy: at each
  position the document of largest gain given the ones above it, ties to the
  document id greatest as a string).

Conventions of ndeval kept: subtopics that no document is relevant to are not
subtopics of the query (|S| counts those with a relevant document); judgments
are binary (> 0 relevant); a query is evaluated when it is in both the qrels
and the run (``all_queries=True``: every query of the qrels, 0 for those
without a list, ndeval's ``-c``), a query of the qrels without a relevant
document scores 0; α = 0.5. ndeval reports the cut-offs 5, 10 and 20.

Each measure decomposes by subtopic (:mod:`receval.metrics.intent`):
Σ_i Σ_s J(d_i, s)(1 − α)^{r_{s,i−1}} / disc(i) = Σ_s Σ_j (1 − α)^{j−1} / disc(pos_{s,j}).
So the run is evaluated by the ordinary :func:`receval.evaluate` (its readers,
id forms, tie and duplicate policies), once per subtopic slot, against each
subtopic's relevant documents; the shares are added per query and normalised.
The metrics are declared in the registry with ``door="intent_aware"``, whose
kernels are the shares: they run only inside this door
(:func:`~receval.evaluation.reference.through_door`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.errors import InputError, MetricError, NoSharedUser, ReceValError, option
from receval.evaluation.reference import through_door
from receval.io import spark_files
from receval.io.subtopics import SubtopicQrels, read_subtopic_qrels

__all__ = ["INTENT_METRICS", "IntentAwareResult", "intent_aware"]

#: the measures, by name: (discount, normalised by the greedy ideal)
INTENT_METRICS: Mapping[str, tuple[str, bool]] = {
    "alpha_ndcg": ("log2", True),
    "alpha_dcg": ("log2", False),
    "err_ia": ("rank", False),
    "nerr_ia": ("rank", True),
}

_METRIC = re.compile(
    r"^\s*([a-z_\-]+)\s*@\s*(\d+(?:\s*,\s*\d+)*)\s*(?:\[\s*alpha\s*=\s*([^\]]*)\])?\s*$",
    re.IGNORECASE,
)

#: evaluate's options that the door sets itself
_OWN = frozenset(
    {"truth_user_col", "truth_item_col", "relevance_col", "graded", "threshold"}
    | {"empty_truth", "missing_recs", "no_truth", "relevant_from", "unjudged", "user_groups"}
)


@dataclass
class IntentAwareResult:
    """What :func:`intent_aware` returns.

    Attributes:
        summary: metric → mean over the queries evaluated.
        per_query: one row per query evaluated (index: the qrels' query ids,
            sorted), one column per metric.
        counts: ``queries`` evaluated, ``queries_in_qrels``,
            ``queries_without_relevant`` (in the qrels, no relevant document:
            0), ``queries_without_list`` (in the qrels, not in the run: left
            out, or 0 with ``all_queries``), ``run_queries_not_in_qrels``
            (left out), ``subtopics`` (query-subtopic pairs with a relevant
            document).
        parameters: ``alpha``, ``all_queries``.
    """

    summary: dict[str, float]
    per_query: pd.DataFrame
    counts: dict[str, int]
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: its mean and the number of queries it averages."""
        return pd.DataFrame(
            {"mean": list(self.summary.values()), "queries": self.counts["queries"]},
            index=pd.Index(list(self.summary), name="metric"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The means (``metrics``, as every command's JSON names them), the
        counts and the parameters (what ``to_json`` writes). ``summary`` holds
        the means too: deprecated, it will be removed in a later version; read
        ``metrics``."""
        return {
            "metrics": dict(self.summary),
            "counts": self.counts,
            "parameters": self.parameters,
            "summary": dict(self.summary),  # deprecated: the key of 0.2.0, kept for its readers
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    def _rows(self, digits: int) -> list[tuple[str, str, str]]:
        n = str(self.counts["queries"])
        return [(m, f"{v:.{digits}f}", n) for m, v in self.summary.items()]

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table of the means."""
        lines = ["| metric | mean | queries |", "|---|---:|---:|"]
        lines += [f"| {m} | {v} | {n} |" for m, v, n in self._rows(digits)]
        return "\n".join(lines) + "\n"

    def to_latex(self, digits: int = 4) -> str:
        """A LaTeX ``tabular`` of the means (booktabs rules)."""
        lines = [r"\begin{tabular}{lrr}", r"\toprule", r"metric & mean & queries \\", r"\midrule"]
        from receval.evaluation.result import latex_escape

        lines += [f"{latex_escape(m)} & {v} & {n} \\\\" for m, v, n in self._rows(digits)]
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        rows = [("metric", "mean", "queries"), *self._rows(4)]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        out = [f"{m:<{widths[0]}}  {v:>{widths[1]}}  {n:>{widths[2]}}" for m, v, n in rows]
        out.insert(1, "-" * (sum(widths) + 4))
        c = self.counts
        out += [
            "",
            f"{c['queries']} queries evaluated of {c['queries_in_qrels']} in the qrels "
            f"({c['queries_without_relevant']} without a relevant document, "
            f"{c['queries_without_list']} without a list); {c['subtopics']} subtopics; "
            f"alpha {self.parameters.get('alpha', 0.5):g}",
        ]
        return "\n".join(out)


def intent_aware(
    recommendations: Any,
    subtopic_qrels: Any,
    metrics: str | Iterable[str] = ("alpha_ndcg@20", "err_ia@20"),
    *,
    alpha: float = 0.5,
    all_queries: bool = False,
    **options: Any,
) -> IntentAwareResult:
    """α-nDCG@k, α-DCG@k, ERR-IA@k and nERR-IA@k of a run over subtopic judgments.

    Formulas, sources and conventions: :mod:`receval.analysis.intent_aware`
    (TREC's ``ndeval``; Clarke et al. 2008; Chapelle et al. 2009).

    Args:
        recommendations: the run, in any form :func:`receval.evaluate` reads
            (a table of query, document, score or rank; a mapping
            ``query -> documents``; a CSV, Parquet or TREC run file).
        subtopic_qrels: the judgments ``query subtopic document judgment``: a
            file (ndeval's qrels), a table (a Spark DataFrame is collected) or
            a mapping (:func:`receval.io.subtopics.read_subtopic_qrels`).
        metrics: ``alpha_ndcg@k``, ``alpha_dcg@k``, ``err_ia@k``,
            ``nerr_ia@k`` (ndeval's spellings ``alpha-nDCG@20``, ``ERR-IA@20``
            too; several cut-offs as ``alpha_ndcg@5,10,20``). A cut-off is
            required. ``[alpha=x]`` sets one measure's α (its column is then
            named with it, ``alpha_ndcg@20[alpha=0.3]``).
        alpha: the redundancy penalty α in [0, 1] (ndeval's ``-alpha``) of the
            measures whose string gives none.
        all_queries: average over every query of the qrels, those without a
            list scoring 0 (ndeval's ``-c``); default: the queries in both.
        **options: options of :func:`receval.evaluate` about reading the run
            (``user_col``, ``item_col``, ``score_col``, ``rank_col``, ``ties``,
            ``duplicates``, ``depth``, ``rank``, ``convention``).

    Returns:
        An :class:`IntentAwareResult` (``summary``, ``per_query``, ``counts``).

    Raises:
        MetricError: an unknown measure or a measure without a cut-off.
        InputError: unreadable judgments, or no query in both inputs.

    Example:
        >>> run = {"q1": ["a", "b", "c"]}
        >>> qrels = {"q1": {1: ["a", "b"], 2: ["c"]}}
        >>> res = intent_aware(run, qrels, ["alpha_ndcg@3", "err_ia@3"])
        >>> {m: round(v, 4) for m, v in res.summary.items()}
        {'alpha_ndcg@3': 0.9652, 'err_ia@3': 0.5938}
    """
    if isinstance(alpha, bool) or not (
        isinstance(alpha, (int, float)) and 0.0 <= float(alpha) <= 1.0
    ):
        raise MetricError(f"{option('alpha', alpha)} is not allowed: expected a number in [0, 1]")
    alpha = float(alpha)
    asked = _parse(metrics)
    own = sorted(set(options) & _OWN)
    if own:
        raise ReceValError(
            f"intent_aware sets {', '.join(own)} itself (the judgments are the subtopic qrels)"
        )
    qrels = read_subtopic_qrels(spark_files.collected(subtopic_qrels))
    judged = _Judged.of(qrels)
    by_alpha: dict[float, list[tuple[str, int]]] = {}
    for name, k, own_alpha in asked:
        by_alpha.setdefault(alpha if own_alpha is None else own_alpha, []).append((name, k))
    values: dict[tuple[str, int, float], np.ndarray] = {}
    for a, wanted in by_alpha.items():  # one pass over the subtopics per α
        wanted = list(dict.fromkeys(wanted))
        raw = _run_shares(recommendations, judged, sorted({k for _, k in wanted}), a, options)
        in_run = raw.pop("in_run")
        run_only = raw.pop("run_only")
        greedy = [k for name, k in wanted if INTENT_METRICS[name][1]]
        ideal = _greedy_ideal(judged, max(greedy), a) if greedy else {}
        for (name, k), value in _normalised(wanted, raw, ideal, judged, a).items():
            values[(name, k, a)] = value
    keep = np.ones(judged.n_queries, dtype=bool) if all_queries else in_run
    columns = {}
    for name, k, own_alpha in asked:
        column = f"{name}@{k}" if own_alpha is None else f"{name}@{k}[alpha={own_alpha!r}]"
        columns[column] = values[(name, k, alpha if own_alpha is None else own_alpha)][keep]
    index = pd.Index(judged.query_ids[keep], name="query")
    per_query = pd.DataFrame(columns, index=index)
    if per_query.empty:
        raise InputError(
            "intent_aware: no query of the run is in the subtopic qrels "
            f"(qrels queries e.g. {list(judged.query_ids[:3])})"
        )
    summary = {c: float(per_query[c].mean()) for c in per_query.columns}
    counts = {
        "queries": int(keep.sum()),
        "queries_in_qrels": judged.n_queries,
        "queries_without_relevant": int((judged.n_subtopics == 0).sum()),
        "queries_without_list": int((~in_run).sum()),
        "run_queries_not_in_qrels": int(run_only),
        "subtopics": int(judged.n_subtopics.sum()),
    }
    return IntentAwareResult(
        summary, per_query, counts, {"alpha": alpha, "all_queries": all_queries}
    )


def _normalised(
    wanted: list[tuple[str, int]],
    raw: Mapping[Any, np.ndarray],
    ideal: Mapping[tuple[str, int], np.ndarray],
    judged: _Judged,
    alpha: float,
) -> dict[tuple[str, int], np.ndarray]:
    """Each measure per query: the run's sum over the greedy ideal's, or over
    the "ideal ideal" |S| Σ_{i≤k} (1 − α)^{i−1} / disc(i); 0 when the run's sum is 0
    (ndeval's ``if (rl->dcg[i])``), and for a query without a relevant document."""
    n_sub = judged.n_subtopics.astype(np.float64)
    out = {}
    for name, k in wanted:
        discount, greedy = INTENT_METRICS[name]
        value = raw[(discount, k)]
        if greedy:
            den = ideal[(discount, k)]
        else:
            i = np.arange(1, k + 1, dtype=np.float64)
            disc = np.log2(i + 1.0) if discount == "log2" else i
            den = n_sub * float(np.sum(np.power(1.0 - alpha, i - 1.0) / disc))
        result = np.zeros(judged.n_queries)
        np.divide(value, den, out=result, where=(den > 0) & (value > 0))
        out[(name, k)] = result
    return out


def _parse(metrics: str | Iterable[str]) -> list[tuple[str, int, float | None]]:
    """(name, cut-off, the string's α or None) of each measure asked, in order,
    repeats dropped."""
    items = [metrics] if isinstance(metrics, str) else list(metrics)
    if not items:
        raise MetricError("intent_aware: no metric given")
    out: list[tuple[str, int, float | None]] = []
    for item in items:
        m = _METRIC.match(str(item))
        name = m.group(1).lower().replace("-", "_") if m else ""
        if m is None or name not in INTENT_METRICS:
            bare = str(item).split("@")[0].strip().lower().replace("-", "_")
            why = "needs a cut-off, e.g. " + bare + "@20" if bare in INTENT_METRICS else "unknown"
            raise MetricError(
                f"intent_aware: {item!r}: {why} (measures: "
                + ", ".join(f"{n}@k" for n in INTENT_METRICS)
                + ", each with an optional [alpha=x])"
            )
        own_alpha = None
        if m.group(3) is not None:
            try:
                own_alpha = float(m.group(3))
            except ValueError:
                own_alpha = math.nan
            if not 0.0 <= own_alpha <= 1.0:
                raise MetricError(
                    f"intent_aware: {item!r}: alpha must be a number in [0, 1]; "
                    f"got {m.group(3).strip()!r}"
                )
        for k in (int(x) for x in m.group(2).split(",")):
            if k < 1:
                raise MetricError(f"intent_aware: {item!r}: a cut-off must be >= 1")
            out.append((name, k, own_alpha))
    return list(dict.fromkeys(out))


@dataclass
class _Judged:
    """The judgments by query: query ids (sorted), the relevant (query,
    subtopic, document) triples as codes, in (query, subtopic, document) order."""

    query_ids: np.ndarray  # (Q,) the qrels' ids
    n_subtopics: np.ndarray  # (Q,) subtopics with a relevant document
    q: np.ndarray  # (P,) query code of each relevant pair
    slot: np.ndarray  # (P,) the subtopic's rank among its query's (0-based)
    subtopic: np.ndarray  # (P,) global code of the (query, subtopic)
    doc: np.ndarray  # (P,) the document id, as given
    key: np.ndarray  # (P,) the document id as text (ndeval's tie-break)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @classmethod
    def of(cls, qrels: SubtopicQrels) -> _Judged:
        query_codes, query_ids = _factorize(qrels.query)
        rel = qrels.judgment > 0  # the others only make their query known
        frame = pd.DataFrame(
            {
                "q": query_codes[rel],
                "s": pd.Series(qrels.subtopic[rel], dtype=object).map(str),
                "key": pd.Series(qrels.doc[rel], dtype=object).map(str),
                "d": qrels.doc[rel],
            }
        )
        # a (query, subtopic, document) judged twice is relevant when any judgment is
        frame = frame.drop_duplicates(["q", "s", "key"]).sort_values(["q", "s", "key"])
        q = frame["q"].to_numpy(np.int64)
        s = frame["s"].to_numpy(dtype=object)
        new_pair = (
            np.r_[True, (q[1:] != q[:-1]) | (s[1:] != s[:-1])] if len(q) else np.zeros(0, bool)
        )
        pair = np.cumsum(new_pair) - 1
        n_sub = np.bincount(q[new_pair], minlength=len(query_ids)).astype(np.int64)
        first_pair = np.zeros(len(query_ids), dtype=np.int64)
        first_pair[q[new_pair][::-1]] = pair[new_pair][::-1]  # the smallest pair of each query
        return cls(
            np.asarray(query_ids, dtype=object),
            n_sub,
            q,
            pair - first_pair[q],
            pair.astype(np.int64),
            frame["d"].to_numpy(dtype=object),
            frame["key"].to_numpy(dtype=object),
        )


def _factorize(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the query ids in sorted order (numbers numerically, else as
    text), so that nothing depends on the order of the rows."""
    values = pd.Series(ids, dtype=object)
    try:
        return pd.factorize(values, sort=True)  # type: ignore[no-any-return]
    except TypeError:  # ids of several types: compared as text
        codes, _ = pd.factorize(values.map(str), sort=True)
        first = pd.Series(values.to_numpy(), index=codes).groupby(level=0).first()
        return codes, first.to_numpy(dtype=object)


#: the registry's metric whose kernel is a subtopic's share, by discount
_SHARE = {"log2": "alpha_dcg", "rank": "err_ia"}


def _run_shares(
    recommendations: Any,
    judged: _Judged,
    cutoffs: list[int],
    alpha: float,
    options: Mapping[str, Any],
) -> dict[Any, Any]:
    """Per query (qrels order), the sum over its subtopics of each subtopic's
    share at each cut-off and discount; ``in_run``: which queries have a list."""
    from receval.evaluation.api import evaluate

    specs = [f"{_SHARE[d]}@{k}[alpha={alpha!r}]" for d in ("log2", "rank") for k in cutoffs]
    keys = [(d, k) for d in ("log2", "rank") for k in cutoffs]
    total = {key: np.zeros(judged.n_queries) for key in keys}
    ids = pd.Index([str(x) for x in judged.query_ids])
    in_run = np.zeros(judged.n_queries, dtype=bool)
    run_only = 0
    slots = int(judged.n_subtopics.max(initial=0))
    bare = np.flatnonzero(judged.n_subtopics == 0)  # judged, nothing relevant: graded 0
    with through_door("intent_aware"):
        for t in range(max(slots, 1)):
            sel = judged.slot == t
            none = bare if t == 0 else bare[:0]  # seen once: their run lists count
            users = np.concatenate([judged.query_ids[judged.q[sel]], judged.query_ids[none]])
            items = np.concatenate([judged.doc[sel], np.full(len(none), _NOTHING, dtype=object)])
            grades = np.concatenate([np.ones(int(sel.sum())), np.zeros(len(none))])
            truth = pd.DataFrame({"user": users, "item": items, "relevance": grades})
            try:
                res = evaluate(
                    recommendations,
                    truth,
                    specs,
                    truth_user_col="user",
                    truth_item_col="item",
                    relevance_col="relevance",
                    graded=True,
                    threshold=1,
                    empty_truth="zero",
                    no_truth="zero",
                    missing_recs="skip",
                    relevant_from="truth",
                    unjudged="keep",
                    **options,
                )
            except NoSharedUser as e:
                if t > 0:  # this slot's subtopics are of queries without a list
                    continue
                raise InputError(
                    "intent_aware: no query of the run is in the subtopic qrels: "
                    + str(e).split(": ", 1)[-1]
                ) from None
            per_user = res.per_user
            assert per_user is not None
            got = per_user.set_axis([str(x) for x in per_user.index])
            got = got[~got.index.duplicated()]
            at = got.index.get_indexer(ids)
            found = at >= 0
            if t == 0:
                first = got.iloc[:, 0].to_numpy()
                in_run[found] = ~np.isnan(first[at[found]])
                run_only = int((~np.isnan(first)).sum() - in_run.sum())
            for key, spec in zip(keys, specs, strict=True):
                column = got[_column(spec)].to_numpy()
                value = np.zeros(judged.n_queries)
                value[found] = np.nan_to_num(column[at[found]])
                total[key] += value
    return {**total, "in_run": in_run, "run_only": run_only}


#: the document of the truth row of a query judged with nothing relevant (grade 0)
_NOTHING = "\x00receval:no-relevant-document"


def _column(spec: str) -> str:
    """The per-user column of ``spec`` (its canonical spelling)."""
    from receval.metrics.spec import parse_metric

    return str(parse_metric(spec))


def _greedy_ideal(judged: _Judged, depth: int, alpha: float) -> dict[tuple[str, int], np.ndarray]:
    """The greedy ideal list's α-DCG and ERR sums (unnormalised) per query at
    every cut-off 1..depth (keys ``("log2", k)``, ``("rank", k)``).

    ndeval's greedy, vectorised across queries: at each position, every
    query takes its not yet placed document of largest gain Σ_s w_s (w_s =
    (1 − α)^{documents of s placed}); ties go to the document id greatest as a
    string (ndeval's strcmp). Documents judged relevant to nothing gain 0 and
    change no sum, so only relevant ones are held.
    """
    frame = pd.DataFrame({"q": judged.q, "key": judged.key})
    docs = frame[["q", "key"]].drop_duplicates().sort_values(["q", "key"], ascending=[True, False])
    docs = docs.reset_index(drop=True)
    doc_code = pd.MultiIndex.from_frame(docs).get_indexer(
        pd.MultiIndex.from_frame(frame[["q", "key"]])
    )
    n_docs = len(docs)
    doc_query = docs["q"].to_numpy(np.int64)
    starts = (
        np.flatnonzero(np.r_[True, doc_query[1:] != doc_query[:-1]])
        if n_docs
        else np.zeros(0, np.int64)
    )
    owners = doc_query[starts]
    weight = np.ones(int(judged.subtopic.max(initial=-1)) + 1)
    taken = np.zeros(n_docs, dtype=bool)
    pair_sub = judged.subtopic
    dcg = np.zeros(judged.n_queries)
    err = np.zeros(judged.n_queries)
    out: dict[tuple[str, int], np.ndarray] = {}
    index = np.arange(n_docs)
    for rank in range(1, depth + 1):
        if n_docs:
            gain = np.bincount(doc_code, weights=weight[pair_sub], minlength=n_docs)
            gain[taken] = -1.0
            best = np.maximum.reduceat(gain, starts)
            chosen = np.minimum.reduceat(
                np.where(gain == best[_owner_pos(doc_query, owners)], index, n_docs), starts
            )
            ok = best >= 0
            step = np.zeros(judged.n_queries)
            step[owners[ok]] = best[ok]
            picked = np.zeros(n_docs, dtype=bool)
            picked[chosen[ok]] = True
            taken |= picked
            weight[pair_sub[picked[doc_code]]] *= 1.0 - alpha
            dcg = dcg + step / np.log2(rank + 1.0)
            err = err + step / rank
        out[("log2", rank)] = dcg
        out[("rank", rank)] = err
    return out


def _owner_pos(doc_query: np.ndarray, owners: np.ndarray) -> np.ndarray:
    """For each document, the position of its query among ``owners``."""
    return np.searchsorted(owners, doc_query)
