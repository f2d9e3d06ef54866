"""The training lookups of a backtest's folds (issue #36 point 6): the compiled
passes of ``receval._native`` ("backtest / train lookups": ``pair_entries``,
``range_keys``, ``train_found``) give the arrays of the NumPy paths bit for bit,
and both give what a slow literal reading of the pairs gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval import _accel
from receval.io import items as items_mod
from receval.io.items import TrainRows, build_context
from receval.metrics.context import TrainPairs
from receval.workflow import backtest as backtest_mod
from tests.required import REQUIRE_NATIVE, need

NATIVE = _accel.NATIVE
NEW = ("pair_entries", "range_keys", "train_found")


@pytest.fixture(scope="module")
def _native() -> None:
    built = NATIVE is not None and all(hasattr(NATIVE, f) for f in NEW)
    need("receval._native", REQUIRE_NATIVE, built, "not built with the train lookups")


needs_native = pytest.mark.usefixtures("_native")


def _with(on: bool, fn: Any) -> Any:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_accel, "NATIVE", NATIVE if on else None)
        return fn()


def _log(rng: np.random.Generator, n: int, users: int, items: int) -> pd.DataFrame:
    return pd.DataFrame(
        {"user": rng.integers(-3, users, n) * 7, "item": rng.integers(0, items, n) - 5}
    )


@needs_native
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("prefixes", [True, False])
def test_index_entries_native_equal_numpy(seed: int, prefixes: bool) -> None:
    rng = np.random.default_rng(seed)
    log = _log(rng, int(rng.integers(1, 3000)), 1 + 40 * seed, 2 + 25 * seed)
    log.loc[: len(log) // 3, "user"] = 14  # one user of many rows (sorted by qsort)
    a = _with(True, lambda: TrainRows.of(log, "user", "item", prefixes=prefixes))
    b = _with(False, lambda: TrainRows.of(log, "user", "item", prefixes=prefixes))
    for name in ("entry_row", "entry_user", "entry_item", "entry_prev"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None) == (name == "entry_prev" and prefixes)
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), name
    # the entries: every (user, item, row) in that order, with the pair's previous row
    codes = (a.user_codes.tolist(), a.item_codes.tolist(), range(len(log)))
    key = sorted(zip(*codes, strict=True))
    if prefixes:
        key = [k for j, k in enumerate(key) if j == 0 or key[j - 1][:2] != k[:2]]
    assert a.entry_row.tolist() == [k[2] for k in key]
    assert a.entry_item.tolist() == [k[1] for k in key]


def test_dense_codes_equal_factorize() -> None:
    rng = np.random.default_rng(3)
    for values in (rng.integers(-50, 50, 500), rng.integers(0, 10**12, 300), np.array([4])):
        codes, ids = items_mod._sorted_codes(values.astype(np.int64), True)
        expected, uniques = pd.factorize(values, sort=True)
        assert codes.dtype == np.int32 and np.array_equal(codes, expected)
        assert np.array_equal(ids, uniques)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("prefixes", [True, False])
def test_range_counts_native_numpy_and_table_agree(seed: int, prefixes: bool) -> None:
    rng = np.random.default_rng(seed)
    log = _log(rng, 2000, 60, 40)
    rows = {
        on: _with(on, lambda: TrainRows.of(log, "user", "item", prefixes=prefixes))
        for on in (True, False)
    }
    for _ in range(4):
        a = 0 if prefixes else int(rng.integers(0, 1500))
        b = int(rng.integers(a + 1, 2001))
        table = build_context(train=log.iloc[a:b])
        for on in (True, False):
            r = rows[on]
            ctx = _with(on, lambda r=r, a=a, b=b: build_context(train=r.range(a, b, log.iloc[a:b])))
            for name in ("item_ids", "pop", "seen", "rows", "in_catalog"):
                assert np.array_equal(getattr(ctx, name), getattr(table, name)), name
            assert ctx.train_pairs is not None and table.train_pairs is not None
            assert np.array_equal(ctx.train_pairs.keys, table.train_pairs.keys)
            assert np.array_equal(ctx.train_pairs.users, table.train_pairs.users)


def _literal(pairs: TrainPairs, users: np.ndarray, items: np.ndarray) -> list[bool]:
    keys = set(pairs.keys.tolist())
    place = {u: j for j, u in enumerate(pairs.users.tolist())}
    return [
        u in place and place[u] * pairs.width + i in keys
        for u, i in zip(users.tolist(), items.tolist(), strict=True)
    ]


@needs_native
@pytest.mark.parametrize("seed", range(6))
def test_found_native_equal_numpy_and_literal(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_users, width = 30 + 10 * seed, 12 + 5 * seed
    t_users = rng.integers(0, n_users, 600)
    t_items = rng.integers(0, width, 600)
    t_users[:200] = 3  # a long history: searched, not stamped, beside short lists
    pairs = TrainPairs.of(t_users.astype(np.int64), t_items.astype(np.int64), width)
    per_user = 1 if seed % 2 else 8
    users = np.repeat(rng.integers(-2, n_users + 3, 80), per_user).astype(np.int64)
    if seed % 3 == 0:
        users = np.sort(users)  # ascending runs (the engine's order): the gallop
    items = rng.integers(0, width, len(users)).astype(np.int64)
    if seed == 4:
        items[::7] += width  # outside the user's keys: searched among all
    got = _with(True, lambda: pairs.found(users, items))
    assert np.array_equal(got, _with(False, lambda: pairs.found(users, items)))
    assert got.tolist() == _literal(pairs, users, items)
    empty = TrainPairs.of(np.empty(0, np.int64), np.empty(0, np.int64), width)
    assert not empty.found(users, items).any()


@pytest.mark.parametrize(
    "test, twice",
    [
        (pd.DataFrame({"user": [1, 1, 2], "item": [5, 6, 5]}), False),
        (pd.DataFrame({"user": [1, 2, 1], "item": [5, 5, 5]}), True),
        (pd.DataFrame({"user": [-(2**62), 2**62], "item": [0, 2**40]}), None),  # too wide
        (pd.DataFrame({"user": ["a", "b"], "item": [1, 1]}), None),  # text ids
    ],
)
def test_no_pair_twice(test: pd.DataFrame, twice: bool | None) -> None:
    """True only when told for sure; else the two-column check decides."""
    told = backtest_mod._no_pair_twice(test, "user", "item")
    assert told == (twice is False)
    assert test.duplicated(["user", "item"]).any() == bool(twice)


@needs_native
def test_backtest_native_equal_numpy() -> None:
    """A backtest whose metrics read the train: the same values either way."""
    log = receval.synthetic_interactions(300, seed=2)

    def model(train: pd.DataFrame, users: np.ndarray, fold: Any) -> pd.DataFrame:
        top = train["item"].value_counts().index[: fold.k + 3].to_numpy()
        rows = [(u, i, r) for u in users for r, i in enumerate(top[u % 4 :][: fold.k], 1)]
        return pd.DataFrame(rows, columns=["user", "item", "rank"])

    metrics = ["ndcg@10", "novelty@10", "coverage@10", "long_tail@10", "arp@10"]

    def run() -> Any:
        return receval.backtest(log, {"test_length": "60D", "n_folds": 4}, model, metrics)

    a, b = _with(True, run), _with(False, run)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    pd.testing.assert_frame_equal(a.per_user(), b.per_user())
    seen = [r.counts["recommendations_seen_in_train"] for r in a.results]
    assert seen == [r.counts["recommendations_seen_in_train"] for r in b.results]
    assert any(seen)


def _rows_log() -> pd.DataFrame:
    """Test windows whose users come in descending order (the truth is reordered)."""
    return pd.DataFrame(
        {
            "user": [1, 2, 3, 1, 2, 3, 4, 5, 6, 6, 5, 4],
            "item": [1, 2, 3, 2, 3, 1, 1, 2, 3, 2, 3, 1],
            "rating": [1, 2, 3, 4, 5, 1, 1, 2, 3, -1, 5, 1],
            "timestamp": list(range(12)),
        }
    )


def test_lists_and_truth_in_user_order_keep_their_rows_in_errors() -> None:
    """evaluate reads both in user order; an error names the row as the model
    wrote it, and the test part's own row."""

    def bad_score(train: pd.DataFrame, users: np.ndarray, fold: Any) -> pd.DataFrame:
        rows = [(u, i, 5.0 - i) for u in sorted(users, reverse=True) for i in (1, 2, 3, 4, 5)]
        out = pd.DataFrame(rows, columns=["user", "item", "score"])
        out.loc[7, "score"] = np.nan
        return out

    def twice(train: pd.DataFrame, users: np.ndarray, fold: Any) -> pd.DataFrame:
        rows = [(u, i, r) for u in sorted(users, reverse=True) for r, i in enumerate(range(5), 1)]
        out = pd.DataFrame(rows, columns=["user", "item", "rank"])
        out.loc[8, "item"] = out.loc[7, "item"]
        return out

    def fine(train: pd.DataFrame, users: np.ndarray, fold: Any) -> pd.DataFrame:
        rows = [(u, i, r) for u in users for r, i in enumerate((1, 2, 3), 1)]
        return pd.DataFrame(rows, columns=["user", "item", "rank"])

    windows = {"test_length": 3, "n_folds": 2}
    with pytest.raises(receval.InputError, match=r"fold 0, recommendations, row 7, user 5,"):
        receval.backtest(_rows_log(), windows, bad_score, ["ndcg@3", "novelty@3"])
    with pytest.raises(receval.InputError, match=r"row 8, .*\(rows 7 and 8\)"):
        receval.backtest(_rows_log(), windows, twice, ["ndcg@3", "novelty@3"])
    with pytest.raises(receval.InputError, match=r"fold 1, truth, row 0, user 6, item 2:"):
        receval.backtest(
            _rows_log(), windows, fine, ["ndcg@3"], threshold=2, negative_grades="error"
        )
