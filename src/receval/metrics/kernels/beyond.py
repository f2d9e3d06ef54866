"""Beyond-accuracy kernels (SPEC §6).

Per-user kernels read item-side arrays of an
:class:`~receval.metrics.context.ItemContext` through the batch's ``item_index``
matrix (context indexes, never ids). Aggregate kernels take an
:class:`Exposure`: how often each recommended item appears in the top-k lists
of the users evaluated — small statistics that add up across chunks of users
and across Spark partitions (map: count per chunk; combine: sum; finish: the
kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.metrics.kernels.batch import Batch

__all__ = [
    "Exposure",
    "arp",
    "coverage",
    "entropy",
    "gini",
    "ild",
    "long_tail",
    "novelty",
    "personalization",
    "prediction_coverage",
    "serendipity",
    "top_of",
    "user_coverage",
]


def top_of(b: Batch, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Context index matrix cut at k, the mask of the positions holding an
    item, their count."""
    assert b.item_index is not None and b.items is not None
    cols = b.col(k) + 1
    filled = b.filled()
    if filled is not None:  # rank="position": gaps hold no item
        return b.item_index[:, :cols], filled[:, :cols], b.retrieved(k)
    c = b.n if k is None else np.minimum(k, b.n)
    valid = b.positions()[:cols][None, :] <= c[:, None]
    return b.item_index[:, :cols], valid, c


def _mean_over_list(values: np.ndarray, valid: np.ndarray, count: np.ndarray) -> np.ndarray:
    total = np.cumsum(np.where(valid, values, 0.0), axis=1)[:, -1]
    out = np.full(len(count), np.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out


def novelty(b: Batch, k: int | None) -> np.ndarray:
    """Mean over the top-k items of −log2(pop(i) / |training users|); NaN for an empty list.

    pop(i) is the number of distinct training users with item i (1 if never seen).
    """
    idx, valid, c = top_of(b, k)
    ctx = b.items
    assert ctx is not None
    # + 0.0 turns the -0.0 of an item every training user has into 0.0 (same other bits)
    info = -np.log2(ctx.pop / max(ctx.n_train_users, 1)) + 0.0
    return _mean_over_list(info[idx], valid, c)


def arp(b: Batch, k: int | None, *, unseen: float = 1.0, count: str = "pairs") -> np.ndarray:
    """Average recommendation popularity: mean pop(i) over the top-k items; NaN if empty.

    pop(i) counts the item's training interactions: distinct (user, item)
    pairs (``count="pairs"``, the default) or every training row, repeated
    pairs included (``count="rows"``, RecBole's ``data.count_items``). An item
    never seen in training counts as ``unseen`` (1 by default; RecBole's
    AveragePopularity: 0).
    """
    idx, valid, c = top_of(b, k)
    ctx = b.items
    assert ctx is not None
    pop = ctx.pop if count == "pairs" else ctx.counts(count)
    if unseen != 1.0 or count != "pairs":
        pop = np.where(ctx.seen, pop, unseen)
    return _mean_over_list(pop[idx], valid, c)


def long_tail(
    b: Batch,
    k: int | None,
    *,
    head: float = 0.8,
    rule: str = "head",
    ratio: float = 0.1,
    count: str = "pairs",
) -> np.ndarray:
    """Share of the top-k items in the long tail; NaN for an empty list.

    ``rule="head"``: the tail is every item outside the short head, the most
    popular training items that together hold ``head`` (80%) of the training
    interactions. ``rule="ratio"`` (RecBole's TailPercentage): of the items
    seen in training sorted by (interactions, id) ascending, the first
    ``max(int(n × ratio), 1)`` when ``ratio`` <= 1, else those with at most
    ``ratio`` interactions; items never seen in training are not in it.
    Interactions are distinct (user, item) pairs (``count="pairs"``) or
    training rows (``count="rows"``). The share divides by the list's length
    within k (RecBole's lists are always k long).
    """
    idx, valid, c = top_of(b, k)
    ctx = b.items
    assert ctx is not None
    tail = ctx.least_popular(ratio, count) if rule == "ratio" else ~ctx.short_head(head, count)
    return _mean_over_list(tail[idx].astype(np.float64), valid, c)


def serendipity(b: Batch, k: int | None, *, top: float = 0.1) -> np.ndarray:
    """|top-k ∩ (relevant \\ popular)| / k; popular = the given set, or the ``top``
    share of catalog items by popularity. Without k, divides by the list length."""
    idx, valid, _ = top_of(b, k)
    assert b.items is not None
    unexpected = ~b.items.popular(top)[idx]
    hits = np.cumsum(valid & unexpected & b.relevant()[:, : idx.shape[1]], axis=1)[:, -1]
    den = b.n if k is None else np.full(b.size, k)
    out = np.zeros(b.size)
    np.divide(hits, den, out=out, where=den > 0)
    return out


def ild(b: Batch, k: int | None) -> np.ndarray:
    """Intra-list diversity: 1 − mean pairwise similarity of the top-k items;
    cosine of feature vectors (dense features) or Jaccard of category sets.
    Items without features are left out; NaN with fewer than 2 items left.

    Cosine uses Σ_{i≠j} v_i·v_j = |Σ v_i|² − Σ |v_i|² for unit vectors, so it
    costs O(k·d) per user, not O(k²·d).
    """
    idx, valid, _ = top_of(b, k)
    ctx = b.items
    assert ctx is not None
    out = np.full(b.size, np.nan)
    if ctx.features is not None:
        feats = ctx.features
        step = max(1, (1 << 21) // max(idx.shape[1] * feats.shape[1], 1))
        for r0 in range(0, b.size, step):
            sl = slice(r0, r0 + step)
            vec = feats[idx[sl]] * valid[sl][:, :, None]  # (s, k, d)
            n = (np.abs(vec).sum(axis=2) > 0).sum(axis=1).astype(np.float64)
            total = vec.sum(axis=1)
            pair_sum = (total * total).sum(axis=1) - n
            pairs = n * (n - 1)
            res = np.full(len(n), np.nan)
            np.divide(pair_sum, pairs, out=res, where=pairs > 0)
            out[sl] = np.where(pairs > 0, 1.0 - res, np.nan)
        return out
    if ctx.categories is None:  # pragma: no cover - checked before any work
        raise ValueError("ild needs item features")
    cats = ctx.categories
    size = cats.sum(axis=1)
    width = idx.shape[1]
    step = max(1, (1 << 21) // max(width * width, 1))
    for r0 in range(0, b.size, step):
        sl = slice(r0, r0 + step)
        ok = valid[sl] & (size[idx[sl]] > 0)
        m = cats[idx[sl]] * ok[:, :, None]  # (s, k, c)
        inter = np.einsum("skc,sjc->skj", m, m)
        sz = size[idx[sl]] * ok
        union = sz[:, :, None] + sz[:, None, :] - inter
        sim = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        n = ok.sum(axis=1).astype(np.float64)
        # a running sum over the flattened (k, k) pairs: its order, unlike a pairwise
        # sum's, does not change with the zero padding of a block's width
        total = np.cumsum(sim.reshape(len(sim), -1), axis=1)[:, -1]
        pair_sum = total - (ok * 1.0).sum(axis=1)  # drop self-similarity 1
        pairs = n * (n - 1)
        res = np.full(len(n), np.nan)
        np.divide(pair_sum, pairs, out=res, where=pairs > 0)
        out[sl] = np.where(pairs > 0, 1.0 - res, np.nan)
    return out


def user_coverage(b: Batch, k: int | None, *, min_items: int | None = None) -> np.ndarray:
    """1 if the user's list has at least ``min_items`` items (default: k; 1 without k)."""
    need = min_items if min_items is not None else (k if k is not None else 1)
    return (b.n >= need).astype(np.float64)


@dataclass(frozen=True)
class Exposure:
    """How often each recommended item appears in the top-k lists of the users
    evaluated: the sufficient statistics of aggregate metrics.

    Attributes:
        counts: per distinct recommended item, its number of lists (> 0).
        in_catalog: per distinct recommended item, is it in the catalog.
        n_catalog: the catalog's size.
        n_users: users whose lists were counted.
        k: the cut-off (None: whole lists).
        ids: the items of ``counts``, or None.
    """

    counts: np.ndarray
    in_catalog: np.ndarray
    n_catalog: int
    n_users: int
    k: int | None
    ids: np.ndarray | None = None


def coverage(e: Exposure) -> float:
    """Share of the catalog appearing in at least one top-k list."""
    return float(e.in_catalog.sum() / e.n_catalog) if e.n_catalog else float("nan")


def prediction_coverage(e: Exposure) -> float:
    """(user, item) pairs recommended, items of the catalog only / (users × catalog items)."""
    den = e.n_users * e.n_catalog
    return float(e.counts[e.in_catalog].sum() / den) if den else float("nan")


def gini(e: Exposure) -> float:
    """Gini index of the exposure of catalog items (never shown: 0):
    G = Σ_i (2i − n − 1) x_(i) / (n Σ x), x sorted ascending; 0 equal, → 1 concentrated."""
    shown = np.sort(e.counts[e.in_catalog].astype(np.float64))
    n = e.n_catalog
    total = shown.sum()
    if n == 0 or total == 0:
        return float("nan")
    x = np.concatenate((np.zeros(n - len(shown)), shown))
    i = np.arange(1, n + 1, dtype=np.float64)
    return float(((2 * i - n - 1) * x).sum() / (n * total))


def entropy(e: Exposure, *, base: str = "2", divide: str = "none") -> float:
    """Shannon entropy of the exposure shares of the recommended items:
    −Σ p log p, p = an item's share of the filled top-k slots (users × k when
    every list is k long).

    ``base``: ``"2"`` (bits) or ``"e"`` (nats). ``divide="items"`` divides by
    the number of distinct recommended items (RecBole's ShannonEntropy:
    ``base="e", divide="items"``).

    >>> e = Exposure(np.array([2, 1, 1]), np.ones(3, bool), 3, 2, 2)
    >>> entropy(e)  # p = 1/2, 1/4, 1/4
    1.5
    >>> round(entropy(e, base="e", divide="items"), 12)  # 1.5 ln 2 / 3
    0.34657359028
    """
    total = e.counts.sum()
    if total == 0:
        return float("nan")
    p = np.sort(e.counts / total)
    log = np.log(p) if base == "e" else np.log2(p)
    value = -(p * log).sum()
    if divide == "items":
        value = value / len(p)
    return float(value)


def personalization(e: Exposure) -> float:
    """1 − mean over pairs of users of |L_u ∩ L_v| / k, from item counts:
    Σ_pairs |L_u ∩ L_v| = Σ_i c_i (c_i − 1) / 2 — no pair of users is enumerated."""
    u = e.n_users
    if u < 2 or e.k is None:
        return float("nan")
    c = e.counts.astype(np.float64)
    overlap = (c * (c - 1) / 2).sum()
    return float(1.0 - overlap / (u * (u - 1) / 2) / e.k)
