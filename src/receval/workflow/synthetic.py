"""A realistic synthetic interaction log, generated at run time (no data file).

The model (every draw from one ``numpy.random.default_rng(seed)``, so the same
arguments always give the same log, on any machine):

1. **Items** belong to one of ``genres`` genres (equal shares) and have a
   Zipf-like popularity weight ``w_i = 1 / r_i^zipf``, ``r_i`` a random
   popularity rank 1..items.
2. **Users** have a taste: three genres with Dirichlet(0.6) weights, and a
   number of interactions ``5 + LogNormal`` (a long tail of heavy users) whose
   mean is ``interactions / users``.
3. **Each interaction** comes, with probability ``taste``, from one of the
   user's genres (chosen by the taste weights) and then an item of that genre
   by popularity; otherwise from the whole catalog by popularity. Repeated
   (user, item) pairs are dropped (first kept), so the log is slightly smaller
   than asked.
4. **Timestamps** (Unix seconds from ``start``): each user is active during a
   window of 2–20% of ``days`` starting at a uniform time; interactions are
   uniform within the window.
5. **Ratings** 1–5: in-taste interactions are rated higher (mean 3.9) than
   the others (mean 2.9).

Because tastes cluster items, item co-occurrence predicts a user's next items
(item-kNN beats most-popular), and because popularity is skewed, most-popular
beats random.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from receval.errors import ReceValError, check_seed

__all__ = ["synthetic_interactions", "synthetic_sessions"]


def synthetic_interactions(
    users: int = 10_000,
    items: int | None = None,
    *,
    interactions: int | None = None,
    genres: int = 20,
    taste: float = 0.8,
    zipf: float = 1.0,
    days: int = 730,
    start: str = "2021-01-01",
    seed: int = 0,
) -> pd.DataFrame:
    """A deterministic synthetic interaction log (see the module docstring for the model).

    Args:
        users: number of users.
        items: number of items (default ``max(100, users // 5)``).
        interactions: approximate number of rows before repeated pairs are
            dropped (default ``25 * users``).
        genres: number of item genres (taste clusters).
        taste: share of interactions drawn from the user's own genres.
        zipf: exponent of the item popularity law.
        days: length of the log in days.
        start: the first day (ISO date, UTC).
        seed: the random seed.

    Returns:
        A DataFrame ``user`` (int64, 0..users-1), ``item`` (int64), ``rating``
        (int64, 1–5), ``timestamp`` (int64 Unix seconds), ordered by timestamp
        then user then item.

    Example:
        >>> log = synthetic_interactions(50, 30, seed=1)
        >>> list(log.columns), log["user"].nunique() <= 50
        (['user', 'item', 'rating', 'timestamp'], True)
        >>> log.equals(synthetic_interactions(50, 30, seed=1))
        True
    """
    if users < 1:
        raise ReceValError(f"users must be >= 1; got {users}")
    n_items = max(100, users // 5) if items is None else int(items)
    if n_items < 2:
        raise ReceValError(f"items must be >= 2; got {items}")
    genres = max(1, min(int(genres), n_items))
    total = 25 * users if interactions is None else int(interactions)
    if total < users:
        raise ReceValError(f"interactions must be >= users ({users}); got {total}")
    if not 0 <= taste <= 1:
        raise ReceValError(f"taste must be in [0, 1]; got {taste}")
    check_seed(seed)
    rng = np.random.default_rng(seed)

    # Items: genre and popularity weight; cumulative weights laid out by genre.
    genre_of = rng.permutation(np.arange(n_items) % genres)
    weight = 1.0 / (rng.permutation(n_items) + 1.0) ** zipf
    by_genre = np.argsort(genre_of, kind="stable")
    g_sorted = genre_of[by_genre]
    w_sorted = weight[by_genre]
    g_total = np.bincount(g_sorted, weights=w_sorted, minlength=genres)
    # Within genre g the cumulative weight runs from g to g + 1.
    cdf = (
        g_sorted
        + (np.cumsum(w_sorted) - np.r_[0.0, np.cumsum(g_total)][g_sorted]) / g_total[g_sorted]
    )
    global_cdf = np.cumsum(weight) / weight.sum()

    # Users: tastes and activity.
    fav = rng.integers(0, genres, size=(users, 3))
    fav_w = np.cumsum(rng.dirichlet(np.full(3, 0.6), size=users), axis=1)
    mean_extra = max(total / users - 5.0, 0.5)
    sigma = 1.0
    extra = rng.lognormal(np.log(mean_extra) - sigma**2 / 2, sigma, size=users)
    counts = np.minimum(5 + np.floor(extra).astype(np.int64), max(n_items // 2, 1))

    # Draw more than needed, then keep each user's first `counts` distinct items.
    user = np.repeat(np.arange(users, dtype=np.int64), 2 * counts + 5)
    n = len(user)
    in_taste = rng.random(n) < taste
    pick = rng.random(n)
    slot = (pick > fav_w[user, 0]).astype(np.int64) + (pick > fav_w[user, 1])
    genre = fav[user, np.minimum(slot, 2)]
    u = rng.random(n)
    within = np.minimum(np.searchsorted(cdf, genre + u, side="right"), n_items - 1)
    anywhere = np.minimum(np.searchsorted(global_cdf, u, side="right"), n_items - 1)
    item = np.where(in_taste, by_genre[within], anywhere).astype(np.int64)

    span = days * 86_400
    window = (0.02 + 0.18 * rng.random(users)) * span
    begin = rng.random(users) * (span - window)
    base = int(pd.Timestamp(start, tz="UTC").timestamp())
    ts = base + (begin[user] + rng.random(n) * window[user]).astype(np.int64)
    mean_rating = np.where(in_taste, 3.9, 2.9)
    rating = np.clip(np.rint(rng.normal(mean_rating, 0.9)), 1, 5).astype(np.int64)

    frame = pd.DataFrame({"user": user, "item": item, "rating": rating, "timestamp": ts})
    frame = frame.drop_duplicates(["user", "item"], keep="first")
    frame = frame[frame.groupby("user").cumcount().to_numpy() < counts[frame["user"].to_numpy()]]
    frame = frame.sort_values(["timestamp", "user", "item"], kind="stable")
    return frame.reset_index(drop=True)


def synthetic_sessions(
    sessions: int = 5_000,
    items: int = 500,
    *,
    users: int | None = None,
    topics: int = 20,
    follow: float = 0.5,
    topic: float = 0.3,
    mean_length: float = 5.0,
    zipf: float = 1.0,
    days: int = 60,
    start: str = "2021-01-01",
    seed: int = 0,
) -> pd.DataFrame:
    """A deterministic synthetic session log (one ``numpy.random.default_rng(seed)``).

    The model:

    1. **Items** belong to one of ``topics`` topics and have a Zipf-like
       weight ``1 / r^zipf`` (``r`` a random rank) and a day of peak interest;
       an item's weight on day d is its weight times ``exp(−|d − peak| / τ)``,
       ``τ = days / 6`` (trends: recent popularity predicts).
       Each item has a fixed *successor* of its own topic (a random cycle
       through each topic's items).
    2. **Sessions** start at a uniform time over ``days``, belong to a user
       (uniform among ``users``, default ``sessions // 4``) and a topic
       (uniform), and have ``2 + Geometric`` events (mean ``mean_length``).
       The first item is drawn from the day's weights; each next item is,
       with probability ``follow``, the successor of the current item
       (the last-item transition a Markov model learns), else with
       probability ``topic`` an item of the session's topic by the day's
       weights (co-occurrence within sessions), else any item by the
       day's weights.
    3. **Times**: events 10 s to 5 min apart (uniform).

    Returns:
        A DataFrame ``session`` (int64, 0..sessions-1), ``user`` (int64),
        ``item`` (int64), ``timestamp`` (int64 Unix seconds), ordered by
        timestamp then session.

    Example:
        >>> log = synthetic_sessions(100, 50, seed=1)
        >>> list(log.columns), log["session"].nunique()
        (['session', 'user', 'item', 'timestamp'], 100)
        >>> log.equals(synthetic_sessions(100, 50, seed=1))
        True
    """
    if sessions < 1:
        raise ReceValError(f"sessions must be >= 1; got {sessions}")
    if items < 2:
        raise ReceValError(f"items must be >= 2; got {items}")
    n_users = max(1, sessions // 4) if users is None else int(users)
    if n_users < 1:
        raise ReceValError(f"users must be >= 1; got {users}")
    for name, p in (("follow", follow), ("topic", topic)):
        if not 0 <= p <= 1:
            raise ReceValError(f"{name} must be in [0, 1]; got {p}")
    if not mean_length >= 2:
        raise ReceValError(f"mean_length must be >= 2; got {mean_length}")
    if days < 1:
        raise ReceValError(f"days must be >= 1; got {days}")
    check_seed(seed)
    rng = np.random.default_rng(seed)
    topics = max(1, min(int(topics), items))

    by_topic, successor, all_cdf, within = _session_items(rng, items, topics, zipf, days)

    # Sessions.
    span = days * 86_400
    begin = np.sort(rng.random(sessions) * span)
    user = rng.integers(0, n_users, size=sessions)
    s_topic = rng.integers(0, topics, size=sessions)
    s_day = np.minimum((begin // 86_400).astype(np.int64), days - 1)
    length = 2 + rng.geometric(1.0 / (mean_length - 1.0), size=sessions) - 1
    length = np.minimum(length, 50)
    longest = int(length.max())
    item = np.zeros((sessions, longest), dtype=np.int64)
    for t in range(longest):  # positions (at most 50), every session at once
        u = rng.random(sessions)
        anywhere = _row_search(all_cdf, s_day, u)
        in_topic = by_topic[_row_search(within, s_day, s_topic + rng.random(sessions))]
        choice = rng.random(sessions)
        if t == 0:
            item[:, 0] = anywhere
            continue
        item[:, t] = np.where(
            choice < follow,
            successor[item[:, t - 1]],
            np.where(choice < follow + (1 - follow) * topic, in_topic, anywhere),
        )
    gaps = rng.uniform(10, 300, size=(sessions, longest))
    gaps[:, 0] = 0
    offset = np.cumsum(gaps, axis=1)
    base = int(pd.Timestamp(start, tz="UTC").timestamp())
    mask = np.arange(longest)[None, :] < length[:, None]
    rows, pos = np.nonzero(mask)
    frame = pd.DataFrame(
        {
            "session": rows.astype(np.int64),
            "user": user[rows].astype(np.int64),
            "item": item[rows, pos],
            "timestamp": (base + begin[rows] + offset[rows, pos]).astype(np.int64),
        }
    )
    frame = frame.sort_values(["timestamp", "session"], kind="stable")
    return frame.reset_index(drop=True)


def _session_items(
    rng: np.random.Generator, items: int, topics: int, zipf: float, days: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The items of :func:`synthetic_sessions`: the items in topic order, each
    item's successor, and per day the cumulative weights over all items
    (days × items, ending at 1) and within each topic (topic t runs from t to t + 1)."""
    # Items: topic, weight, peak day; the successor cycle within each topic.
    topic_of = rng.permutation(np.arange(items) % topics)
    weight = 1.0 / (rng.permutation(items) + 1.0) ** zipf
    peak = rng.random(items) * days
    by_topic = np.lexsort((rng.random(items), topic_of))  # a random order within each topic
    t_sorted = topic_of[by_topic]
    first = np.r_[True, t_sorted[1:] != t_sorted[:-1]]
    start_of = np.maximum.accumulate(np.where(first, np.arange(items), 0))
    nxt = np.r_[np.arange(1, items), items]
    end = np.r_[~first[1:], False]  # the next slot is in the same topic
    successor = np.empty(items, dtype=np.int64)
    successor[by_topic] = by_topic[np.where(end, nxt, start_of)]
    # Day-by-day weights: cumulative over all items, and within each topic.
    day = np.arange(days)[:, None]
    w = weight[None, :] * np.exp(-np.abs(day + 0.5 - peak[None, :]) / (days / 6.0))
    all_cdf = np.cumsum(w, axis=1)
    all_cdf /= all_cdf[:, -1:]
    wt = w[:, by_topic]
    t_total = np.zeros((days, topics))
    np.add.at(t_total.T, t_sorted, wt.T)
    within = np.cumsum(wt, axis=1) - np.c_[np.zeros(days), np.cumsum(t_total, axis=1)][:, t_sorted]
    within = within / t_total[:, t_sorted] + t_sorted[None, :]
    return by_topic, successor, all_cdf, within


def _row_search(cdf: np.ndarray, row: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``searchsorted(cdf[row[i]], x[i], "right")`` for every i, vectorised
    (each row of ``cdf`` ascending within [0, top]), clipped to the last column."""
    n = cdf.shape[1]
    top = float(np.nanmax(cdf)) + 1.0
    flat = (cdf + top * np.arange(cdf.shape[0])[:, None]).ravel()
    found = np.searchsorted(flat, x + top * row, side="right") - row * n
    return np.clip(found, 0, n - 1)
