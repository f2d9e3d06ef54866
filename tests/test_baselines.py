"""Baselines: long-format runs, no seen items, determinism, tie rules, speed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import receval
from receval._accel import NATIVE
from receval.errors import ReceValError
from receval.workflow.baselines import (
    ItemKNNRecommender,
    PopularRecommender,
    RandomRecommender,
    recommend,
    top_k,
)
from receval.workflow.split import leave_one_out
from receval.workflow.synthetic import synthetic_interactions

MODELS = ["random", "popular", "item_knn"]

# item-kNN's compiled pass and its NumPy path (both when the extension is built)
_NATIVE_PATHS = [True, False] if NATIVE is not None else [False]


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    return synthetic_interactions(400, 120, seed=5)[["user", "item"]]


def assert_valid_run(run: pd.DataFrame, train: pd.DataFrame, k: int) -> None:
    assert list(run.columns) == ["user", "item", "score", "rank"]
    assert not run.duplicated(["user", "item"]).any()
    sizes = run.groupby("user").size()
    assert (sizes <= k).all()
    expected_rank = run.groupby("user").cumcount() + 1
    assert (run["rank"] == expected_rank).all()
    # scores never increase down a list
    diffs = run.groupby("user")["score"].diff().dropna()
    assert (diffs <= 0).all()
    seen = pd.MultiIndex.from_frame(run[["user", "item"]]).isin(
        pd.MultiIndex.from_frame(train[["user", "item"]])
    )
    assert not seen.any()


@pytest.mark.parametrize("model", MODELS)
def test_runs_are_valid_and_deterministic(model: str, train: pd.DataFrame) -> None:
    run = recommend(model, train, k=15, seed=1)
    assert_valid_run(run, train, 15)
    assert run["user"].nunique() == train["user"].nunique()
    assert run.equals(recommend(model, train, k=15, seed=1))


@pytest.mark.parametrize("model", MODELS)
def test_score_order_matches_rank(model: str, train: pd.DataFrame) -> None:
    run = recommend(model, train, k=10)
    truth = train.groupby("user").head(1)
    by_rank = receval.evaluate(run.drop(columns="score"), truth, "ndcg@10")
    by_score = receval.evaluate(run.drop(columns="rank"), truth, "ndcg@10")
    assert by_rank.summary == by_score.summary


def test_popular_exact_and_ties_by_item_id() -> None:
    train = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": [30, 10, 30, 20, 10, 40]})
    run = recommend("popular", train, users=[1, 4], k=3)
    # pop: 10 → 2, 30 → 2, 20 → 1, 40 → 1; user 1 has 10 and 30.
    assert run.values.tolist() == [
        [1, 20, 1.0, 1],
        [1, 40, 1.0, 2],
        [4, 10, 2.0, 1],
        [4, 30, 2.0, 2],
        [4, 20, 1.0, 3],
    ]
    keep = recommend("popular", train, users=[1], k=2, exclude_seen=False)
    assert keep["item"].tolist() == [10, 30]


def test_item_knn_by_hand() -> None:
    # Items a and b always together; c with a once.
    train = pd.DataFrame(
        {"user": [1, 1, 2, 2, 3, 3, 4], "item": ["a", "b", "a", "b", "a", "c", "b"]}
    )
    model = ItemKNNRecommender().fit(train)
    sim = model.similarity.toarray()
    # pop a = 3, b = 3, c = 1; co(a, b) = 2, co(a, c) = 1.
    assert sim[0, 1] == pytest.approx(2 / 3)
    assert sim[0, 2] == pytest.approx(1 / np.sqrt(3))
    assert sim[1, 2] == 0 and sim[0, 0] == 0
    run = model.recommend([4, 99], k=2)
    # user 4 has b: a (2/3) then c by popularity fill (negative score);
    # unknown user 99: popularity a, b (ties by item id).
    assert run["item"].tolist() == ["a", "c", "a", "b"]
    assert run["score"].iloc[0] == pytest.approx(2 / 3)
    assert run["score"].iloc[1] < 0
    assert run.attrs["unknown_users"] == 1


def test_neighbors_prune() -> None:
    train = synthetic_interactions(200, 60, seed=2)
    model = ItemKNNRecommender(neighbors=5).fit(train)
    per_row = np.diff(model.similarity.indptr)
    assert per_row.max() <= 5


def test_random_large_catalog_sampling_path() -> None:
    rng = np.random.default_rng(0)
    n_users, n_items = 300, 5000
    train = pd.DataFrame(
        {"user": rng.integers(0, n_users, 6000), "item": rng.integers(0, n_items, 6000)}
    )
    train.loc[0:2999, "user"] = 0  # a heavy user
    run = RandomRecommender(seed=3).fit(train).recommend(k=20)
    assert_valid_run(run, train, 20)
    assert (run.groupby("user").size() == 20).all()
    assert run["item"].nunique() > 1000


def test_small_catalog_short_lists() -> None:
    train = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1]})
    for model in MODELS:
        run = recommend(model, train, k=5)
        assert run.groupby("user").size().to_dict() == {2: 1}
        assert run["item"].tolist() == [2]


def test_top_k_ties() -> None:
    key = np.array([[1.0, 2.0, 2.0, 2.0, 0.0]])
    rows, cols, vals = top_k(key, 2)
    assert (rows.tolist(), cols.tolist(), vals.tolist()) == ([0, 0], [1, 2], [2.0, 2.0])
    _, cols, _ = top_k(np.array([[-np.inf, 1.0]]), 2)
    assert cols.tolist() == [1]


def test_string_and_unknown_users(train: pd.DataFrame) -> None:
    t = train.assign(user="u" + train["user"].astype(str), item="i" + train["item"].astype(str))
    run = recommend("item_knn", t, users=["u1", "nobody"], k=3)
    assert set(run["user"]) == {"u1", "nobody"}
    assert run["item"].str.startswith("i").all()


def test_errors(train: pd.DataFrame) -> None:
    with pytest.raises(ReceValError, match="unknown baseline"):
        recommend("svd", train)  # type: ignore[arg-type]
    with pytest.raises(ReceValError, match="k must be"):
        recommend("popular", train, k=0)
    with pytest.raises(ReceValError, match="not fitted"):
        PopularRecommender().recommend()
    with pytest.raises(receval.InputError, match="empty"):
        recommend("popular", train.iloc[:0])


def test_ordering_on_synthetic_data() -> None:
    log = synthetic_interactions(1500, seed=0)
    s = leave_one_out(log)
    scores = {}
    for model in MODELS:
        run = recommend(model, s.train, users=s.test["user"].unique(), k=10)
        scores[model] = receval.evaluate(run, s.test, "ndcg@10").summary["ndcg@10"]
    assert scores["item_knn"] > scores["popular"] > scores["random"]


@pytest.mark.slow
def test_20k_users() -> None:
    """Every model lists k items for each of 20k users (the time is measured in
    benchmarks/workflow.py, not asserted here)."""
    log = synthetic_interactions(20_000, 1000, seed=1)
    for model in MODELS:
        run = recommend(model, log, k=10)
        assert run["user"].nunique() == 20_000
        assert (run.groupby("user").size() == 10).all()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("native", _NATIVE_PATHS)
def test_item_knn_sparse_equals_dense(
    seed: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item-kNN never builds dense users × items or items × items blocks; its
    neighbours and lists are those of the dense computation, bit for bit
    (random data: ties, unknown users, short lists, shrink, seen items kept),
    by the compiled pass and by the NumPy path alike."""
    from receval.workflow import baselines
    from receval.workflow.baselines import ItemKNNRecommender, Recommender, top_k

    if not native:
        monkeypatch.setattr(baselines, "NATIVE", None)
    rng = np.random.default_rng(seed)
    n_users, n_items = int(rng.integers(2, 300)), int(rng.integers(2, 200))
    n = int(rng.integers(3, 3000))
    train = pd.DataFrame({"user": rng.integers(0, n_users, n), "item": rng.zipf(1.3, n) % n_items})
    m = ItemKNNRecommender(neighbors=int(rng.integers(1, 40)), shrink=[0.0, 2.5][seed % 2])
    m.fit(train)
    # the neighbours, from dense rows
    x = m.matrix.toarray()
    co = x.T @ x
    norm = np.sqrt(m.pop)
    sim = co / (norm[:, None] * norm[None, :] + m.shrink)
    sim[co == 0] = -np.inf
    np.fill_diagonal(sim, -np.inf)
    r, c, v = top_k(sim, m.neighbors)
    dense = np.zeros(co.shape)
    dense[r, c] = v
    assert np.array_equal(m.similarity.toarray(), dense)
    # the lists, against the dense scores' top-k
    users = list(range(-2, n_users + 2))
    for k in (1, 7, 300):
        for exclude_seen in (True, False):
            sparse = m.recommend(users, k=k, exclude_seen=exclude_seen)
            with monkeypatch.context() as p:
                p.setattr(ItemKNNRecommender, "_block", Recommender._block)
                full = m.recommend(users, k=k, exclude_seen=exclude_seen)
            pd.testing.assert_frame_equal(sparse, full, check_exact=True)
