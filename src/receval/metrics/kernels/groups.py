"""Item-group kernels (``item_groups=``): exposure, parity and calibration.

Aggregate kernels take a :class:`GroupCounts`: integer tallies per (item
group, rank) of the top-k slots of the users evaluated, which add up across
chunks of users and Spark partitions exactly (map: tally per chunk; combine:
add; finish: the kernel), so no value depends on how users were cut. The
per-user kernel :func:`miscalibration` reads each user's training history
from the batch.

Sources: Zhu, Wang & Caverlee, "Measuring and Mitigating Item
Under-Recommendation Bias in Personalized Ranking Systems", SIGIR 2020 (RSP,
REO); Sapiezynski, Zeng, Robertson, Mislove & Wilson, "Quantifying the Impact
of User Attention on Fair Group Representation in Ranked Lists", WWW 2019
companion (attention-weighted rank fairness); Singh & Joachims, "Fairness of
Exposure in Rankings", KDD 2018 (position-discounted exposure); Steck,
"Calibrated Recommendations", RecSys 2018 (miscalibration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from receval.metrics.kernels.batch import Batch
from receval.metrics.kernels.beyond import top_of

__all__ = [
    "GroupCounts",
    "GroupTally",
    "attention",
    "awrf",
    "exposure",
    "exposure_shares",
    "miscalibration",
    "reo",
    "rsp",
]


@dataclass
class GroupTally:
    """What one chunk of users gives item-group metrics at cut-off k.

    Attributes:
        slots: ``(G, k)`` int64: top-k slots at each rank (0-based) holding an
            item of each group (an item in two groups counts in both).
        hits: ``(G, k)`` int64: of those, the slots whose item is relevant to the user.
        all_slots: ``(k,)`` int64: top-k slots at each rank holding any item.
        relevant: ``(G,)`` int64: (user, relevant item of the group) pairs.
        seen: ``(G,)`` int64: (user, training item of the group) pairs.
        users: users counted.
    """

    slots: np.ndarray
    hits: np.ndarray
    all_slots: np.ndarray
    relevant: np.ndarray
    seen: np.ndarray
    users: int

    @classmethod
    def zeros(cls, groups: int, k: int) -> GroupTally:
        z = np.zeros((groups, k), dtype=np.int64)
        return cls(z, z.copy(), np.zeros(k, dtype=np.int64), z[:, 0].copy(), z[:, 0].copy(), 0)

    def __add__(self, other: GroupTally) -> GroupTally:
        return GroupTally(
            self.slots + other.slots,
            self.hits + other.hits,
            self.all_slots + other.all_slots,
            self.relevant + other.relevant,
            self.seen + other.seen,
            self.users + other.users,
        )


@dataclass(frozen=True)
class GroupCounts:
    """A combined :class:`GroupTally` with what the item groups say.

    Attributes:
        tally: the tallies of the users evaluated.
        labels: the groups.
        sizes: ``(G,)`` items of each group (the ``item_groups`` table).
        catalog: ``(G,)`` catalog items of each group; ``n_catalog`` the
            catalog's size (0: no catalog).
        k: the cut-off.
    """

    tally: GroupTally
    labels: np.ndarray
    sizes: np.ndarray
    catalog: np.ndarray
    n_catalog: int
    k: int


def attention(k: int, discount: str = "log", patience: float = 0.5) -> np.ndarray:
    """The attention a user gives ranks 1..k: ``log`` 1/log2(rank + 1) (DCG's
    discount), ``trec`` 1/log2(max(rank, 2)) (TREC Fair Ranking's: ranks 1
    and 2 alike), ``geometric`` patience^(rank − 1) (RBP's browsing model) or
    ``none`` 1.

    >>> attention(3).round(4).tolist(), attention(3, "geometric").tolist()
    ([1.0, 0.6309, 0.5], [1.0, 0.5, 0.25])
    """
    rank = np.arange(1, k + 1, dtype=np.float64)
    if discount == "log":
        return 1.0 / np.log2(rank + 1.0)
    if discount == "trec":
        return 1.0 / np.log2(np.maximum(rank, 2.0))
    if discount == "geometric":
        return patience ** (rank - 1.0)
    return np.ones(k)


def _weighted(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ over ranks of counts × weights, per row, in rank order (a fixed order
    of additions: the same bits whatever the tallies came from)."""
    total = np.zeros(counts.shape[:-1])
    for r in range(counts.shape[-1]):
        total = total + counts[..., r] * weights[r]
    return total


def _disparity(p: np.ndarray) -> float:
    """Population standard deviation / mean of the defined values of ``p``."""
    p = p[~np.isnan(p)]
    if not len(p):
        return math.nan
    mean = math.fsum(p) / len(p)
    if mean == 0:
        return math.nan
    var = math.fsum((x - mean) ** 2 for x in p.tolist()) / len(p)
    return math.sqrt(var) / mean


def rsp(c: GroupCounts, *, exclude_train: bool = True) -> float:
    """Ranking-based statistical parity (Zhu, Wang & Caverlee 2020).

    P(g) = top-k slots holding an item of g / Σ over the users evaluated of
    the items of g not in that user's training data; RSP = std / mean of P
    over the groups (population std; groups with a zero denominator left out).
    0: every group is recommended in proportion to the items it could get.
    """
    t = c.tally
    den = t.users * c.sizes - (t.seen if exclude_train else 0)
    num = t.slots.sum(axis=1)
    p = np.full(len(den), np.nan)
    np.divide(num, den, out=p, where=den > 0)
    return _disparity(p)


def reo(c: GroupCounts) -> float:
    """Ranking-based equal opportunity (Zhu, Wang & Caverlee 2020).

    P(g) = top-k slots holding an item of g relevant to the user / (user,
    relevant item of g) pairs over the users evaluated; REO = std / mean of P
    over the groups (population std; groups without relevant pairs left out).
    """
    t = c.tally
    num = t.hits.sum(axis=1)
    p = np.full(len(t.relevant), np.nan)
    np.divide(num, t.relevant, out=p, where=t.relevant > 0)
    return _disparity(p)


def exposure_shares(c: GroupCounts, discount: str = "log", patience: float = 0.5) -> np.ndarray:
    """Per group: its share of the attention of all top-k slots,
    Σ_slots of g a(rank) / Σ_all slots a(rank) (an item in two groups gives
    its slot's attention to both; items in no group to none)."""
    w = attention(c.k, discount, patience)
    total = float(_weighted(c.tally.all_slots, w))
    if total == 0:
        return np.full(len(c.labels), np.nan)
    return _weighted(c.tally.slots, w) / total


def exposure(
    c: GroupCounts, *, group: str | None = None, discount: str = "log", patience: float = 0.5
) -> float:
    """The share of position-discounted attention (Singh & Joachims 2018) that
    the items of one group get: see :func:`exposure_shares`."""
    shares = exposure_shares(c, discount, patience)
    at = [i for i, label in enumerate(c.labels) if str(label) == group]
    return float(shares[at[0]]) if at else math.nan


def awrf(
    b: Batch,
    k: int | None,
    *,
    discount: str = "log",
    patience: float = 0.5,
    target: str = "uniform",
    base: str = "2",
) -> np.ndarray:
    """Attention-weighted rank fairness of each list (Sapiezynski et al. 2019;
    TREC Fair Ranking 2021-22): 1 − JSD(ε, t).

    ε: the list's distribution of attention over the item groups,
    ε_g ∝ Σ over the top-k positions r of a(r) · m(i_r, g), with fractional
    membership m(i, g) = 1 / (number of groups of i) for the groups of i;
    items in no group are left out. t: the target, ``uniform`` (1/G) or
    ``catalog`` (t_g ∝ Σ over the catalog's items of m(i, g)). JSD: the
    Jensen–Shannon divergence ½ KL(ε‖μ) + ½ KL(t‖μ), μ = (ε + t) / 2, in bits
    (``base="2"``: AWRF in [0, 1]) or nats (``base="e"``: TREC's numbers, in
    [1 − ln 2, 1]). NaN for a list without a grouped item.
    """
    ctx = b.items
    assert ctx is not None and ctx.groups is not None
    groups = ctx.groups
    width = max(groups.n_groups, 1)
    share = _membership(groups.count)
    want = _target(ctx, target)
    log = np.log2 if base == "2" else np.log
    half_log2 = 0.5 * float(log(2.0))

    r_user, r_item, r_col = _list_rows(b, k)
    a = attention(b.col(k) + 1, discount, patience)
    keys, got = _group_mass(groups, r_user, r_item, share, a[r_col])
    out = np.full(b.size, np.nan)
    if not len(keys):
        return out
    owner = keys // width
    starts = _starts(owner)
    total = np.add.reduceat(got, starts)
    eps = got / np.repeat(total, np.diff(np.append(starts, len(keys))))
    t = want[keys % width]
    mid = (eps + t) / 2
    terms = 0.5 * eps * log(eps / mid)
    on = t > 0
    terms[on] += 0.5 * t[on] * log(t[on] / mid[on])
    # groups of the target the list misses: ½ t log(t / (t / 2)) each
    covered = np.add.reduceat(t, starts)
    jsd = np.add.reduceat(terms, starts) + half_log2 * np.maximum(1.0 - covered, 0.0)
    out[owner[starts]] = 1.0 - np.maximum(jsd, 0.0)
    return out


def _list_rows(b: Batch, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (user, context index, 0-based position) of every top-k position
    holding an item, user by user in list order."""
    idx, valid, _ = top_of(b, k)
    users = np.repeat(np.arange(b.size, dtype=np.int64), idx.shape[1]).reshape(idx.shape)
    cols = np.broadcast_to(np.arange(idx.shape[1], dtype=np.int64), idx.shape)
    return users[valid], idx[valid], cols[valid]


def _group_mass(
    groups: Any,
    user: np.ndarray,
    item: np.ndarray,
    share: np.ndarray,
    weight: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Σ over rows (user, item) of ``weight × share[item]`` per (user, group of
    the item): the keys ``user × G + group`` (sorted) and the sums, each added
    in row order (the same bits whatever the block)."""
    at, g = groups.expand(item)
    mass = share[item[at]] if weight is None else weight[at] * share[item[at]]
    return _segment_sums(user[at] * max(groups.n_groups, 1) + g, mass)


def _starts(owner: np.ndarray) -> np.ndarray:
    """Where each user's run of (sorted) keys starts."""
    return np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))


def _membership(count: np.ndarray) -> np.ndarray:
    """Per context index: 1 / its number of groups (0 for an item in none)."""
    out = np.zeros(len(count))
    np.divide(1.0, count, out=out, where=count > 0)
    return out


def _target(ctx: Any, target: str) -> np.ndarray:
    """The target distribution over the groups (see :func:`awrf`)."""
    groups = ctx.groups
    if target == "catalog":
        cat = np.flatnonzero(ctx.in_catalog)
        at, g = groups.expand(cat)
        mass = np.bincount(g, weights=_membership(groups.count)[cat][at], minlength=groups.n_groups)
    else:
        mass = np.ones(groups.n_groups)
    total = math.fsum(mass.tolist())
    return mass / total if total > 0 else np.full(groups.n_groups, np.nan)


def _segment_sums(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sorted keys and the sum of values of each, added in input order."""
    if not len(keys):
        return keys, values
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    return k[starts], np.add.reduceat(values[order], starts)


def miscalibration(b: Batch, k: int | None, *, alpha: float = 0.01, base: str = "e") -> np.ndarray:
    """Steck's (2018) miscalibration C_KL of the top-k list against the user's history.

    p(g|u) = mean over the user's training items i of p(g|i); q(g|u) = mean
    over the top-k items of p(g|i); p(g|i) = 1 / (number of groups of i), 0
    for other groups. C = Σ_g p(g|u) ln(p(g|u) / ((1 − α) q(g|u) + α p(g|u))).
    Items in no group are left out of both means; a list with none gives q = 0.
    NaN for a user whose history has no item in a group. ``base``: the
    logarithm's, e (nats) or 2 (bits).
    """
    ctx = b.items
    assert ctx is not None and ctx.groups is not None and b.history is not None
    groups = ctx.groups
    width = max(groups.n_groups, 1)
    share = _membership(groups.count)
    has = groups.count > 0

    h_off, h_items = b.history
    h_user = np.repeat(np.arange(b.size, dtype=np.int64), np.diff(h_off))
    n_hist = np.bincount(h_user[has[h_items]], minlength=b.size).astype(np.float64)
    p_keys, p_sum = _group_mass(groups, h_user, h_items, share)

    r_user, r_item, _ = _list_rows(b, k)
    n_list = np.bincount(r_user[has[r_item]], minlength=b.size).astype(np.float64)
    q_keys, q_sum = _group_mass(groups, r_user, r_item, share)

    owner = p_keys // width
    p = p_sum / n_hist[owner]
    q = np.zeros(len(p_keys))
    if len(q_keys):
        pos = np.minimum(np.searchsorted(q_keys, p_keys), len(q_keys) - 1)
        found = q_keys[pos] == p_keys
        q[found] = q_sum[pos[found]] / n_list[owner[found]]
    log = np.log2 if base == "2" else np.log
    terms = p * log(p / ((1.0 - alpha) * q + alpha * p))
    out = np.full(b.size, np.nan)
    if len(terms):
        starts = _starts(owner)
        out[owner[starts]] = np.add.reduceat(terms, starts)
    return out
