"""The data behind the report's charts: curves over k and popularity deciles.

Curves are data first (DataFrames), pictures second (:mod:`.svg`, :mod:`.png`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from receval.errors import ReceValError
from receval.metrics.spec import MetricSpec

__all__ = ["curve_specs", "curves_frame", "popularity_deciles", "top_k_items"]


def curve_specs(
    specs: Sequence[MetricSpec], max_k: int, with_coverage: bool
) -> tuple[list[MetricSpec], list[MetricSpec]]:
    """The metrics evaluated once per system for the curves: every per-user
    metric asked (parameters kept, cut-off dropped) plus precision and recall,
    at k = 1..max_k; and coverage at 1..max_k when a catalog is known.

    Returns ``(bases, specs)``: the base metrics (``k=None``) and every spec.

    Example:
        >>> from receval.metrics.spec import parse_metrics
        >>> bases, specs = curve_specs(parse_metrics(["ndcg@10", "p@5"]), 3, False)
        >>> [str(b) for b in bases], len(specs)
        (['ndcg', 'precision', 'recall'], 9)
    """
    bases: list[MetricSpec] = []
    for s in specs:
        if s.definition.kind != "ranking":
            continue
        base = s.with_k(None)
        if base not in bases:
            bases.append(base)
    for name in ("precision", "recall"):
        base = MetricSpec(name)
        if base not in bases:
            bases.append(base)
    if with_coverage:
        bases.append(MetricSpec("coverage"))
    out = [b.with_k(k) for b in bases for k in range(1, max_k + 1)]
    return bases, out


def curves_frame(
    summaries: Mapping[str, Mapping[str, float]], bases: Sequence[MetricSpec], max_k: int
) -> pd.DataFrame:
    """Long table of curve values: columns ``system, metric, k, value``.

    Example:
        >>> f = curves_frame({"a": {"precision@1": 1.0, "precision@2": 0.5}},
        ...                  [MetricSpec("precision")], 2)
        >>> f["value"].tolist()
        [1.0, 0.5]
    """
    rows = [
        {"system": system, "metric": str(b), "k": k, "value": float(s[str(b.with_k(k))])}
        for system, s in summaries.items()
        for b in bases
        for k in range(1, max_k + 1)
    ]
    return pd.DataFrame(rows, columns=["system", "metric", "k", "value"])


def top_k_items(
    run: Any,
    k: int,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
) -> pd.DataFrame:
    """The first ``k`` items of every list of a run as a (user, item, position) table.

    Lists are ordered as :func:`receval.evaluate` orders them: by rank, or by
    score descending with ties by item id ascending.

    Example:
        >>> top_k_items({"u": [3, 1, 2]}, 2)["item"].tolist()
        [3, 1]
    """
    from receval.io.tables import read_recs
    from receval.records import Columns

    recs = read_recs(run, Columns(user_col, item_col, score_col, rank_col))
    frame = pd.DataFrame({"user": recs.users, "item": recs.items})
    if recs.rank is not None:
        frame["rank"] = recs.rank
        frame = frame.sort_values(["user", "rank"], kind="stable")
    elif recs.score is not None:
        frame["score"] = recs.score
        frame = frame.sort_values(
            ["user", "score", "item"], ascending=[True, False, True], kind="stable"
        )
    else:  # pragma: no cover - read_recs always gives one of them
        raise ReceValError("recommendations need a rank or a score")
    frame["position"] = frame.groupby("user", sort=False).cumcount() + 1
    return frame[frame["position"] <= k][["user", "item", "position"]].reset_index(drop=True)


def popularity_deciles(
    tops: Mapping[str, pd.DataFrame],
    *,
    train: Any,
    catalog: Any = None,
    user_col: str | None = None,
    item_col: str | None = None,
) -> pd.DataFrame:
    """Share of recommendation slots per item-popularity decile, per system.

    Catalog items (``catalog``, else the items of ``train``) are sorted by
    training popularity (distinct users, SPEC §6) descending, ties by item id,
    and cut into ten groups of equal size: decile 1 holds the most popular 10%
    of items. Each system's row gives the share of its top-k slots in each
    decile, plus ``outside`` (items not in the catalog); the row
    ``training data`` gives each decile's share of training interactions, the
    reference a popularity-neutral system would follow.

    Example:
        >>> train = {u: [1] for u in range(9)} | {9: list(range(1, 11))}
        >>> f = popularity_deciles({"pop": top_k_items({"x": [1]}, 1)}, train=train)
        >>> float(f.loc["pop", "1"]), float(f.loc["training data", "1"])
        (1.0, 0.5263157894736842)
    """
    from receval.io.items import build_context
    from receval.records import Columns

    ctx = build_context(train=train, catalog=catalog, cols=Columns(user_col, item_col))
    n = len(ctx.item_ids)
    pop = np.asarray(ctx.pop[:n], dtype=np.float64)
    in_cat = np.asarray(ctx.in_catalog[:n], dtype=bool)
    seen = np.asarray(ctx.seen[:n], dtype=bool) if len(ctx.seen) >= n else np.ones(n, bool)
    cat_idx = np.flatnonzero(in_cat)
    order = cat_idx[np.argsort(-pop[cat_idx], kind="stable")]  # item ids are sorted already
    decile = np.zeros(n + 1, dtype=np.int64)  # 0 = outside the catalog
    m = len(order)
    if m:
        decile[order] = np.arange(m) * 10 // m + 1
    labels = [str(d) for d in range(1, 11)] + ["outside"]
    rows: dict[str, list[float]] = {}
    for system, top in tops.items():
        idx = ctx.index_of(np.asarray(top["item"].to_numpy()))
        d = decile[idx]
        counts = np.bincount(d, minlength=11).astype(float)
        total = counts.sum()
        shares = counts / total if total else counts
        rows[system] = [*shares[1:], shares[0]]
    inter = np.bincount(decile[:n], weights=pop * seen, minlength=11)
    total = inter[1:].sum()
    rows["training data"] = [*(inter[1:] / total if total else inter[1:]), 0.0]
    return pd.DataFrame.from_dict(rows, orient="index", columns=labels)
