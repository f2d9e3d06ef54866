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

__all__ = ["synthetic_interactions"]


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
