"""Candidate sets for sampled evaluation: each held-out item with sampled negatives.

Sampled evaluation ranks, for each user, the held-out (truth) items together
with ``n`` sampled *negatives* instead of the whole catalog. A model scores
the candidates; ``receval.evaluate(recs, truth, ["recall@10[correction=bv]"],
catalog_size=N)`` then estimates the full-catalog metric (docs/sampled.md).

:func:`sample_negatives` draws the negatives reproducibly:

- **candidates**: the items of the catalog (``catalog=``, else every item of
  ``train`` and ``truth``) that the user has not interacted with: not in the
  user's ``train`` rows, nor ``truth`` rows, nor ``exclude`` rows (e.g. a
  validation split). Held-out items are never negatives.
- **strategy** ``uniform``: every candidate equally likely; ``popularity``:
  proportional to ``count ** alpha``, the item's number of rows in ``train``,
  ``truth`` and ``exclude`` together (RecBole counts every split's
  interactions); items with no row are never drawn.
- **without replacement within a user**: draws are successive, each among the
  candidates not drawn yet (for ``popularity``: in proportion to their
  weights), so a user's negatives are distinct.
- **per** ``item`` (default, RecBole's convention): ``n`` negatives for each
  held-out item of the user (a user with 3 held-out items gets 3·n, all
  distinct, ranked together with the 3 positives); ``user``: ``n`` per user.
  With one held-out item per user (leave-one-out) the two are the same.
- **reproducible**: user u's negatives depend only on ``seed``, u's id, u's
  excluded items and the catalog (with its weights): never on the order of
  the rows, the other users, or the machine. Each user's random stream is a
  counter-based hash (SplitMix64) of ``(seed, BLAKE2b of the user id's text,
  draw number)``; the id's text is its canonical form under the id rule
  (``1``, ``1.0`` and ``"1"`` are the same user).
- **too few candidates**: a user with fewer candidates than negatives wanted
  is an :class:`~receval.errors.InputError` naming the user
  (``too_few="error"``), or gets all its candidates (``too_few="all"``).
  RecBole samples with replacement, so it never runs out (it repeats items)
  and fails only for a user who interacted with every item.

RecBole's evaluation modes (``eval_args: mode: uni100 / pop100``) are
:data:`RECBOLE` presets: ``sample_negatives(truth, train, convention="uni100")``;
any ``uniN`` / ``popN`` is read the same way. An explicit ``n=``,
``strategy=`` or ``per=`` overrides the preset.

Example:
    >>> import pandas as pd
    >>> train = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10]})
    >>> truth = pd.DataFrame({"user": [1, 2], "item": [12, 13]})
    >>> c = sample_negatives(truth, train, n=2, catalog=range(10, 20), seed=1)
    >>> c.groupby("user")["positive"].agg(["sum", "size"]).to_dict("list")
    {'sum': [1, 1], 'size': [3, 3]}
    >>> bool(c.equals(sample_negatives(truth.iloc[::-1], train, n=2, catalog=range(10, 20),
    ...                                seed=1)))
    True
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from receval.errors import InputError, OptionError
from receval.ids import STR, as_str, distinct, kind, unify, whitespace_notes
from receval.io.columns import is_table
from receval.io.inputs import is_path, opened
from receval.io.items import read_items, train_pairs
from receval.io.tables import read_truth
from receval.records import Columns, TruthData

__all__ = ["RECBOLE", "STRATEGIES", "sample_negatives"]

Strategy = Literal["uniform", "popularity"]
STRATEGIES: tuple[str, ...] = ("uniform", "popularity")

#: RecBole's sampled evaluation modes (``eval_args: mode``), as presets of
#: :func:`sample_negatives`; ``uniN`` / ``popN`` for any N are read alike.
RECBOLE: dict[str, dict[str, Any]] = {
    "uni100": {"n": 100, "strategy": "uniform", "per": "item"},
    "pop100": {"n": 100, "strategy": "popularity", "per": "item"},
}

_MODE = re.compile(r"^(uni|pop)([1-9][0-9]*)$")
_MASK = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_EXACT = np.uint64(1 << 40)  # counters of the exact path (per item), past any draw
_ROUNDS = 6  # rejection rounds before a user's remaining draws go the exact way
_DRAWS = 4_000_000  # draws per vectorised step (memory: ~10 arrays of this length)


def _preset(convention: str) -> dict[str, Any]:
    if convention in RECBOLE:
        return dict(RECBOLE[convention])
    found = _MODE.match(convention)
    if not found:
        raise OptionError(
            "convention",
            convention,
            expected="a RecBole mode: 'uni100', 'pop100', or uniN / popN for a number N",
        )
    strategy = "uniform" if found.group(1) == "uni" else "popularity"
    return {"n": int(found.group(2)), "strategy": strategy, "per": "item"}


def sample_negatives(
    truth: Any,
    train: Any = None,
    *,
    n: int | None = None,
    strategy: str | None = None,
    seed: int = 0,
    catalog: Any = None,
    per: str | None = None,
    exclude: Any = None,
    alpha: float = 1.0,
    too_few: str = "error",
    convention: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
) -> pd.DataFrame:
    """Each user's held-out items and ``n`` sampled negatives (per held-out
    item, or per user), reproducibly.

    Args:
        truth: the held-out items: a table (user, item[, relevance]), a file
            or a mapping user -> items. Rows with a grade of 0 are excluded
            from the negatives but are not positives.
        train: the training interactions (a table, a file or a mapping user
            -> items), excluded from each user's negatives.
        n: negatives per held-out item (``per="item"``) or per user
            (``per="user"``); default 100.
        strategy: ``uniform`` (default) or ``popularity``.
        seed: an integer ≥ 0; the same seed gives the same candidates.
        catalog: the items to sample from (a table, file, mapping or
            iterable of ids); default: the items of ``train`` and ``truth``.
        per: ``item`` (default, RecBole's convention) or ``user``.
        exclude: more (user, item) interactions to exclude (e.g. the
            validation split), in any form ``train`` takes.
        alpha: popularity exponent: weights are counts ** alpha (RecBole's
            ``alpha``, default 1).
        too_few: ``error`` or ``all`` (take every candidate) when a user has
            fewer candidates than negatives wanted.
        convention: a RecBole mode, ``uni100`` / ``pop100`` (:data:`RECBOLE`)
            or any ``uniN`` / ``popN``: sets ``n``, ``strategy`` and ``per``
            unless given.
        user_col, item_col: column names, when detection (``user``,
            ``user_id``, ``userId``, ...) is not enough.

    Returns:
        A DataFrame with columns ``user``, ``item`` and ``positive`` (True for
        a held-out item, False for a sampled negative): users in sorted id
        order, each user's positives (sorted) then its negatives in the
        order they were drawn.

    Raises:
        OptionError: a bad ``n``, ``strategy``, ``per``, ``seed``, ``alpha``,
            ``too_few`` or ``convention``.
        InputError: unreadable inputs, or a user with fewer candidates than
            negatives wanted (``too_few="error"``).

    Example:
        >>> import pandas as pd
        >>> truth = pd.DataFrame({"user": ["a"], "item": [3]})
        >>> c = sample_negatives(truth, n=3, catalog=[1, 2, 3, 4, 5], seed=7)
        >>> c["positive"].tolist()
        [True, False, False, False]
        >>> int(c["item"].iloc[0]), set(c["item"].iloc[1:]) < {1, 2, 4, 5}
        (3, True)
    """
    n, strategy, per = _options(convention, n, strategy, per, seed, alpha, too_few)
    cols = Columns(user=user_col, item=item_col)
    notes: list[str] = []
    t, users, items, cat = _inputs(truth, train, exclude, catalog, cols, notes)
    n_items = len(cat)
    if kind(users[0]) == STR:  # text ids: padded ones said (int64 ids hold no whitespace)
        notes += whitespace_notes(pd.unique(np.concatenate(users)), "user")
    notes += whitespace_notes(cat, "item")

    # users: those with a held-out item, sorted
    pos_mask = t.grades > 0
    user_ids = _distinct(users[0][pos_mask])
    n_users = len(user_ids)
    u_code = _lookup(user_ids, np.concatenate(users))
    i_code = _lookup(cat, np.concatenate(items))
    weight = _weights(i_code, n_items, strategy, alpha)

    # excluded (user, item) pairs, as sorted keys u * I + i
    ok = (u_code >= 0) & (i_code >= 0)
    excluded = _distinct(u_code[ok] * n_items + i_code[ok])

    # positives and how many negatives each user needs
    pu = u_code[: len(users[0])][pos_mask]
    positives = pd.DataFrame({"u": pu, "item": items[0][pos_mask]}).drop_duplicates()
    n_pos = np.bincount(positives["u"].to_numpy(), minlength=n_users)
    need = n_pos * n if per == "item" else np.full(n_users, n, dtype=np.int64)
    need = _within_reach(need, weight, excluded, n_items, user_ids, too_few, n, per, strategy)

    keys = _user_keys(user_ids)
    stream = _Stream(seed)
    taken_u, taken_i = _draw(need, keys, stream, weight, excluded, n_items)
    return _candidates(positives, taken_u, taken_i, cat, user_ids, notes)


def _options(
    convention: str | None,
    n: int | None,
    strategy: str | None,
    per: str | None,
    seed: Any,
    alpha: Any,
    too_few: Any,
) -> tuple[int, str, str]:
    """``n``, ``strategy`` and ``per``: as given, else from the ``convention``
    preset, else the defaults (100, uniform, item); every option checked."""
    settings = _preset(convention) if convention is not None else {}
    n = settings.get("n", 100) if n is None else n
    strategy = settings.get("strategy", "uniform") if strategy is None else strategy
    per = settings.get("per", "item") if per is None else per
    _check(n, strategy, per, seed, alpha, too_few)
    assert n is not None and strategy is not None and per is not None
    return n, strategy, per


def _inputs(
    truth: Any, train: Any, exclude: Any, catalog: Any, cols: Columns, notes: list[str]
) -> tuple[TruthData, list[np.ndarray], list[np.ndarray], np.ndarray]:
    """The truth read, the user and item ids of the truth, ``train`` and
    ``exclude`` (those given, in that order) under one id rule, and the
    catalog sorted: candidates are addressed by their position in it."""
    t = read_truth(*_read(truth, "truth", cols))
    pairs = [(t.users, t.items)]
    if train is not None:
        pairs.append(train_pairs(train, cols))
    if exclude is not None:
        pairs.append(train_pairs(exclude, cols))
    cat = read_items(catalog, "catalog", cols) if catalog is not None else None
    users = unify([p[0] for p in pairs], "user", notes)
    items = unify([p[1] for p in pairs] + ([cat] if cat is not None else []), "item", notes)
    cat = _distinct(np.concatenate(items[: len(pairs)]) if cat is None else items[-1])
    return t, users, items[: len(pairs)], cat


def _weights(i_code: np.ndarray, n_items: int, strategy: str, alpha: float) -> np.ndarray:
    """Each catalog item's weight: 1 (``uniform``), or (``popularity``) its
    rows in every input to the power ``alpha`` (0 for an item with none)."""
    if strategy != "popularity":
        return np.ones(n_items)
    counts = np.bincount(i_code[i_code >= 0], minlength=n_items).astype(np.float64)
    weight = counts**alpha if alpha != 1.0 else counts
    weight[counts == 0] = 0.0
    return weight


def _within_reach(
    need: np.ndarray,
    weight: np.ndarray,
    excluded: np.ndarray,
    n_items: int,
    user_ids: np.ndarray,
    too_few: str,
    n: int,
    per: str,
    strategy: str,
) -> np.ndarray:
    """The negatives each user needs, checked against its candidates (the
    items of weight > 0 not excluded for it): too few is an error naming the
    first such user, or (``too_few="all"``) all its candidates."""
    ex_u = excluded // n_items if n_items else excluded
    ex_i = excluded - ex_u * n_items
    sampleable = weight > 0
    available = int(sampleable.sum()) - np.bincount(
        ex_u, weights=sampleable[ex_i].astype(np.float64), minlength=len(need)
    ).astype(np.int64)
    short = np.flatnonzero(available < need)
    if not len(short):
        return need
    if too_few == "error":
        u = short[0]
        raise InputError(
            f"only {int(available[u])} candidate negatives (catalog items the user has not "
            f"interacted with{', with a popularity > 0' if strategy == 'popularity' else ''}"
            f") for the {int(need[u])} wanted (n={n}, per={per!r}); {len(short)} user(s) "
            "are short: lower n, pass a larger catalog=, or take every candidate with "
            "too_few='all'",
            source="truth",
            user=user_ids[u],
        )
    return np.minimum(need, available)


def _candidates(
    positives: pd.DataFrame,
    taken_u: np.ndarray,
    taken_i: np.ndarray,
    cat: np.ndarray,
    user_ids: np.ndarray,
    notes: list[str],
) -> pd.DataFrame:
    """The result: per user (sorted), its positives (sorted) then its
    negatives in draw order, with the id notes in ``attrs["notes"]``."""
    neg = pd.DataFrame({"u": taken_u, "item": cat[taken_i] if len(cat) else taken_i})
    neg["positive"] = False
    pos = positives.sort_values(["u", "item"], kind="stable")
    pos["positive"] = True
    out = pd.concat([pos, neg], ignore_index=True)
    out = out.sort_values(["u", "positive"], ascending=[True, False], kind="stable")
    result = pd.DataFrame(
        {
            "user": user_ids[out["u"].to_numpy()],
            "item": out["item"].to_numpy(),
            "positive": out["positive"].to_numpy(dtype=bool),
        }
    )
    result.attrs["notes"] = notes
    return result


# --------------------------------------------------------------------------- inputs


def _check(n: Any, strategy: Any, per: Any, seed: Any, alpha: Any, too_few: Any) -> None:
    def is_int(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    if not is_int(n) or n < 1:
        raise OptionError("n", n, expected="an integer >= 1")
    if strategy not in STRATEGIES:
        raise OptionError(
            "strategy", strategy, allowed=STRATEGIES, reason="RecBole's modes: convention='uni100'"
        )
    if per not in ("item", "user"):
        raise OptionError("per", per, allowed=("item", "user"))
    if not is_int(seed) or seed < 0:
        raise OptionError("seed", seed, expected="an integer >= 0")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
        raise OptionError("alpha", alpha, expected="a number >= 0")
    if too_few not in ("error", "all"):
        raise OptionError("too_few", too_few, allowed=("error", "all"))


def _read(obj: Any, role: str, cols: Columns) -> tuple[Any, Columns]:
    """A path read as a file of ``role`` (its columns then named by role);
    tables and mappings as they are."""
    if is_path(obj):
        table, columns, _ = opened(obj, role, cols)
        return table, columns
    if not (is_table(obj) or isinstance(obj, Mapping)):
        raise InputError(
            f"{role} must be a table, a file or a mapping user -> items; got {type(obj).__name__}",
            source=role,
        )
    return obj, cols


def _distinct(a: np.ndarray) -> np.ndarray:
    """Distinct ids, sorted (integers by value, strings by code point)."""
    if a.dtype == object:
        return np.unique(a.astype(str)).astype(object) if len(a) else a
    return distinct(a)  # a sort: np.unique hashes, 10x slower here


def _lookup(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Position of each value in ``sorted_ids`` (-1 when absent)."""
    if kind(sorted_ids) == STR or kind(values) == STR:
        sorted_ids, values = as_str(sorted_ids).astype(str), as_str(values).astype(str)
    if not len(sorted_ids):
        return np.full(len(values), -1, dtype=np.int64)
    pos = np.searchsorted(sorted_ids, values)
    pos = np.minimum(pos, len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == values, pos, -1).astype(np.int64)


# --------------------------------------------------------------------------- randomness


def _user_keys(user_ids: np.ndarray) -> np.ndarray:
    """A 64-bit key per user: BLAKE2b of the id's canonical text."""
    out = np.empty(len(user_ids), dtype=np.uint64)
    for j, u in enumerate(user_ids.tolist()):
        digest = hashlib.blake2b(str(u).encode("utf-8"), digest_size=8, person=b"receval.neg")
        out[j] = int.from_bytes(digest.digest(), "little")
    return out


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014), elementwise on uint64."""
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class _Stream:
    """Uniform numbers in [0, 1): U(user key, counter), fixed by the seed."""

    def __init__(self, seed: int) -> None:
        s = np.array([(seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK], dtype=np.uint64)
        self.salt = _mix(s)[0]

    def uniform(self, key: np.ndarray, counter: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            z = _mix(key ^ self.salt) + (counter.astype(np.uint64) + np.uint64(1)) * _GOLDEN
            bits = _mix(z) >> np.uint64(11)
        return bits.astype(np.float64) * (1.0 / (1 << 53))


# --------------------------------------------------------------------------- drawing


def _draw(
    need: np.ndarray,
    keys: np.ndarray,
    stream: _Stream,
    weight: np.ndarray,
    excluded: np.ndarray,
    n_items: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Successive sampling without replacement, ∝ weight, of ``need[u]``
    items per user among the items not excluded for u.

    Rejection: user u draws from the whole catalog ∝ weight with its stream
    (counters 0, 1, 2, ...); a draw that is excluded or already taken is
    dropped. Accepting the first ``need[u]`` valid draws is exactly
    successive sampling among the remaining candidates. Users whose
    acceptance rate is low (< 1/4), or still short after a few rounds, take
    their remaining items by Efraimidis–Spirakis keys E/w over every
    remaining candidate (E = −log U at counter 2⁴⁰ + item), which has the same
    distribution. Every choice depends on the user's own state only.
    """
    n_users = len(need)
    total = float(weight.sum())
    cum = np.cumsum(weight)
    ex_u = excluded // n_items if n_items else excluded
    ex_i = excluded - ex_u * n_items
    ex_mass = np.bincount(ex_u, weights=weight[ex_i], minlength=n_users)
    got_u: list[np.ndarray] = []
    got_i: list[np.ndarray] = []
    got_k: list[np.ndarray] = []  # order within the user
    taken = np.zeros(0, dtype=np.int64)  # sorted keys u * I + i
    count = np.zeros(n_users, dtype=np.int64)  # accepted so far
    counter = np.zeros(n_users, dtype=np.int64)  # next draw number
    mass = np.maximum(total - ex_mass, 0.0)  # weight of the candidates left
    rate = mass / total if total > 0 else np.zeros(n_users)
    active = np.flatnonzero((need > 0) & (rate >= 0.25))
    for _ in range(_ROUNDS):
        if not len(active):
            break
        left = need[active] - count[active]
        acc = np.maximum(mass[active] / total, 1e-3)
        size = np.minimum(np.ceil(left / acc * 1.25).astype(np.int64) + 4, 4 * left + 64)
        next_active: list[np.ndarray] = []
        for part in _parts(size, _DRAWS):
            users, sz = active[part], size[part]
            du = np.repeat(users, sz)
            start = np.repeat(np.cumsum(sz) - sz, sz)
            dc = counter[du] + (np.arange(len(du)) - start)
            u01 = stream.uniform(keys[du], dc)
            di = np.minimum(np.searchsorted(cum, u01 * total, side="right"), n_items - 1)
            key = du * n_items + di
            bad = _member(excluded, key) | _member(taken, key)
            order = np.argsort(key, kind="stable")  # first draw of each (user, item)
            dup = np.zeros(len(key), dtype=bool)
            ks = key[order]
            dup[order[1:]] = ks[1:] == ks[:-1]
            valid = ~bad & ~dup
            # accept up to need - count per user, in draw order
            rank = np.cumsum(valid) - 1
            first = np.repeat(np.cumsum(sz) - sz, sz)
            base = np.concatenate(([0], np.cumsum(valid)))[first]
            within = rank - base + 1  # 1-based position among the user's valid draws
            keep = valid & (within <= np.repeat(need[users] - count[users], sz))
            got_u.append(du[keep])
            got_i.append(di[keep])
            got_k.append(count[du[keep]] + within[keep] - 1)
            np.add.at(count, du[keep], 1)
            np.subtract.at(mass, du[keep], weight[di[keep]])
            counter[users] += sz
            taken = np.sort(np.concatenate((taken, key[keep])), kind="stable")  # two runs
            next_active.append(users[count[users] < need[users]])
        active = np.concatenate(next_active) if next_active else active[:0]
    rest = np.flatnonzero(count < need)
    if len(rest):
        u, i, k = _exact(rest, need, count, keys, stream, weight, excluded, taken, n_items)
        got_u.append(u)
        got_i.append(i)
        got_k.append(k)
    if not got_u:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    gu, gi, gk = np.concatenate(got_u), np.concatenate(got_i), np.concatenate(got_k)
    order = np.lexsort((gk, gu))
    return gu[order], gi[order]


def _exact(
    users: np.ndarray,
    need: np.ndarray,
    count: np.ndarray,
    keys: np.ndarray,
    stream: _Stream,
    weight: np.ndarray,
    excluded: np.ndarray,
    taken: np.ndarray,
    n_items: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The remaining draws of ``users`` by Efraimidis–Spirakis keys, in key order."""
    cand = np.flatnonzero(weight > 0)
    out_u, out_i, out_k = [], [], []
    per_part = max(1, _DRAWS // max(len(cand), 1))
    for s in range(0, len(users), per_part):
        us = users[s : s + per_part]
        du = np.repeat(us, len(cand))
        di = np.tile(cand, len(us))
        key = du * n_items + di
        ok = ~(_member(excluded, key) | _member(taken, key))
        du, di = du[ok], di[ok]
        u01 = stream.uniform(keys[du], _EXACT.astype(np.int64) + di)
        e = -np.log1p(-u01) / weight[di]  # Exp(1) / w: smallest first
        order = np.lexsort((di, e, du))
        du, di = du[order], di[order]
        starts = np.searchsorted(du, us)
        pos = np.arange(len(du)) - np.repeat(starts, np.diff(np.append(starts, len(du))))
        keep = pos < (need - count)[du]
        out_u.append(du[keep])
        out_i.append(di[keep])
        out_k.append(count[du[keep]] + pos[keep])
    return np.concatenate(out_u), np.concatenate(out_i), np.concatenate(out_k)


def _parts(size: np.ndarray, budget: int) -> list[slice]:
    """Consecutive slices of users whose draws add up to about ``budget``."""
    bounds = np.searchsorted(np.cumsum(size), np.arange(budget, int(size.sum()), budget))
    edges = [0, *sorted(set((bounds + 1).tolist())), len(size)]
    return [slice(a, b) for a, b in itertools.pairwise(edges) if b > a]


def _member(sorted_keys: np.ndarray, key: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(len(key), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, key), len(sorted_keys) - 1)
    return sorted_keys[pos] == key
