"""Folds of a log in time order as row ranges, and their trains counted from
one index (issue #36 point 6): the same parts, sizes and values as the
general path (masks, each train's table counted on its own)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import receval
from receval.io.items import TrainRange, TrainRows, build_context
from receval.workflow import split as split_mod

DEMO = ["ndcg@5", "novelty@10", "coverage@10", "arp@10", "long_tail@10", "gini@10"]


def _log(seed: int, n: int = 400, dates: bool = False) -> pd.DataFrame:
    """A log in time order, with ties of time and repeated (user, item) pairs."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 60, n))
    log = pd.DataFrame(
        {
            "user": rng.integers(0, 25, n),
            "item": rng.integers(0, 30, n) * 3 - 7,
            "rating": rng.integers(1, 6, n),
            "timestamp": pd.to_datetime(t, unit="D") if dates else t,
        }
    )
    return log


def _masks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The general path: every fold cut out of the log by masks."""
    monkeypatch.setattr(split_mod._Rows, "of", classmethod(lambda cls, *a: None))


def _same_folds(a: split_mod.Folds, b: split_mod.Folds) -> None:
    assert a.info == b.info
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x.train, y.train)
        pd.testing.assert_frame_equal(x.test, y.test)
        assert x.info == y.info


@pytest.mark.parametrize(
    "options",
    [
        {"test_length": 5, "n_folds": 6},
        {"test_length": 4, "n_folds": 5, "train_length": 9, "step": 3},
        {"test_length": 5, "n_folds": 4, "start": -20},  # empty windows first
        {"test_length": 6, "n_folds": 4, "relevance_threshold": 3, "drop_unseen_users": True},
        {"test_length": 6, "n_folds": 3, "drop_unseen_items": True, "min_user_interactions": 5},
    ],
)
def test_ranges_cut_the_folds_of_the_masks(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, object]
) -> None:
    log = _log(1)
    ranged = receval.split(log, "time_windows", **options)
    assert ranged._train_rows is not None
    _masks_only(monkeypatch)
    masked = receval.split(log, "time_windows", **options)
    assert masked._train_rows is None
    _same_folds(ranged, masked)


def test_ranges_of_dates_and_unsorted_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log(2, dates=True)
    ranged = receval.split(log, "time_windows", test_length="7D", n_folds=4)
    shuffled = receval.split(
        log.sample(frac=1, random_state=0), "time_windows", **{"test_length": "7D", "n_folds": 4}
    )
    assert ranged._train_rows is not None and shuffled._train_rows is None
    _masks_only(monkeypatch)
    _same_folds(ranged, receval.split(log, "time_windows", test_length="7D", n_folds=4))


def _context_arrays(ctx: object) -> dict[str, object]:
    pairs = ctx.train_pairs  # type: ignore[attr-defined]
    out = {k: getattr(ctx, k) for k in ("item_ids", "pop", "seen", "rows", "in_catalog")}
    out |= {"users": pairs.users, "keys": pairs.keys}
    return out | {"n": ctx.n_train_users, "width": pairs.width}  # type: ignore[attr-defined]


@pytest.mark.parametrize("prefixes", [False, True])
def test_a_range_counts_as_its_table(prefixes: bool) -> None:
    """A slow literal reference: each range's table given as train=."""
    log = _log(3, n=300)
    rows = TrainRows.of(log, "user", "item", prefixes=prefixes)
    assert rows is not None
    catalog = np.arange(-10, 100, 2)
    rng = np.random.default_rng(0)
    rolling = [(0, 100), (20, 150), (60, 160), (150, 300), (290, 300), (0, 40), (0, 90)]
    for start, stop in [*rolling, (0, 1), (0, 300), *rng.integers(0, 300, (8, 2)).tolist()]:
        start, stop = sorted((start, stop))
        if prefixes:
            start = 0
        table = log.iloc[start:stop]
        train = rows.range(start, stop, table)
        text = ["x", "-7", 8, "011"]  # text ids: every item id compared as text
        for extra in ({}, {"catalog": catalog}, {"catalog": text}, {"popular": text}):
            got = build_context(train=train, **extra)
            want = build_context(train=table, **extra)
            assert got.catalog_source == want.catalog_source
            a, b = _context_arrays(got), _context_arrays(want)
            assert a.keys() == b.keys()
            for k in a:
                np.testing.assert_array_equal(a[k], b[k], err_msg=k)
                assert np.asarray(a[k]).dtype == np.asarray(b[k]).dtype, k


def test_text_ids_have_no_index() -> None:
    log = _log(4).astype({"item": str})
    assert TrainRows.of(log, "user", "item") is None


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The ranges the index counts, as they are counted."""
    seen: list[tuple[int, int]] = []
    count = TrainRange.count

    def spy(self: TrainRange, ctx: object) -> None:
        seen.append((self.start, self.stop))
        count(self, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(TrainRange, "count", spy)
    return seen


def _popular(train: pd.DataFrame, users: np.ndarray, fold: object) -> dict[object, list[int]]:
    top = train["item"].value_counts().index[:10].tolist()
    return {u: top[::-1] if u % 2 else top for u in users}


@pytest.mark.parametrize("windows", [{"n_folds": 5}, {"n_folds": 4, "train_length": 15}])
def test_backtest_values_with_and_without_the_index(
    monkeypatch: pytest.MonkeyPatch, windows: dict[str, object]
) -> None:
    log = _log(5, n=600)
    options = {"test_length": 8, **windows}
    counted = _counted(monkeypatch)
    fast = receval.backtest(log, options, _popular, DEMO, threshold=3)
    assert len(counted) == len(fast)  # every fold's train counted from the index
    assert any(start > 0 for start, _ in counted) == ("train_length" in windows)
    monkeypatch.setattr(TrainRows, "of", classmethod(lambda cls, *a, **k: None))
    slow = receval.backtest(log, options, _popular, DEMO, threshold=3)
    pd.testing.assert_frame_equal(fast.to_frame(), slow.to_frame())
    pd.testing.assert_frame_equal(fast.per_user(), slow.per_user())
    assert fast.notes == slow.notes
    for a, b in zip(fast.results, slow.results, strict=True):
        assert a.counts == b.counts and a.notes == b.notes


def test_a_model_that_writes_to_its_train(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index stands for the log's rows: a train the model changed is read as it is."""
    log = _log(6, n=500)

    def rewrite(train: pd.DataFrame, users: np.ndarray, fold: object) -> dict[object, list]:
        train["item"] = train["item"] % 5  # the evaluation sees this train
        return _popular(train, users, fold)

    counted = _counted(monkeypatch)
    fast = receval.backtest(log, {"test_length": 8, "n_folds": 4}, rewrite, DEMO)
    assert counted == []
    monkeypatch.setattr(TrainRows, "of", classmethod(lambda cls, *a, **k: None))
    slow = receval.backtest(log, {"test_length": 8, "n_folds": 4}, rewrite, DEMO)
    pd.testing.assert_frame_equal(fast.to_frame(), slow.to_frame())
    assert log["item"].min() == -7  # the log itself is untouched


def test_both_orders_by_pair() -> None:
    from receval.io.items import _by_pair

    key = np.random.default_rng(7).integers(0, 40, 500)
    fast, slow = _by_pair(key, 40), _by_pair(key, 2**62)  # one sort / a stable argsort
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast[0], np.argsort(key, kind="stable"))
