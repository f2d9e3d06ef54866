"""Session baselines (receval.workflow.session_baselines) and ``demo --sessions``:
hand-worked lists, a literal reference on random logs, ids and row order, edges."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import InputError, OptionError, ReceValError
from receval.workflow.session_baselines import (
    MarkovRecommender,
    RecentPopularRecommender,
    SessionItemKNNRecommender,
    SessionRecommender,
    session_baseline,
)
from receval.workflow.session_demo import run_session_demo
from receval.workflow.synthetic import synthetic_sessions

# s1: a b c, s2: a b, s3: c d a (times 1..8). Sessions with each item (pop):
# a 3, b 2, c 2, d 1, so the fill -1 + pop / 4 is a -.25, b -.5, c -.5, d -.75.
TRAIN = pd.DataFrame(
    {
        "session": [1, 1, 1, 2, 2, 3, 3, 3],
        "item": ["a", "b", "c", "a", "b", "c", "d", "a"],
        "time": [1, 2, 3, 4, 5, 6, 7, 8],
    }
)


def prefixes(*seqs: list[Any]) -> pd.DataFrame:
    """One step per sequence (session ``p<i>``, step = its length)."""
    rows = [
        (f"p{s}", len(seq), pos + 1, x) for s, seq in enumerate(seqs) for pos, x in enumerate(seq)
    ]
    return pd.DataFrame(rows, columns=["session", "step", "position", "item"])


def lists_of(model: SessionRecommender, *seqs: list[Any], k: int = 10, **kw: Any) -> list[list]:
    out = model.lists(prefixes(*seqs), k, **kw)
    return [
        list(zip(g["item"], g["score"].round(12), strict=True))
        for _, g in out.groupby("session", sort=True)
    ]


# -- hand-worked lists --------------------------------------------------------------------


def test_markov_hand_worked() -> None:
    # transitions a->b twice, b->c, c->d, d->a: each P = 1
    m = MarkovRecommender().fit(TRAIN)
    assert lists_of(m, ["a"], ["a", "b"], ["zz"], k=3) == [
        [("b", 1.0), ("c", -0.5), ("d", -0.75)],  # then the fill, a (in the prefix) left out
        [("c", 1.0), ("d", -0.75)],  # k beyond the items left: shorter
        [("a", -0.25), ("b", -0.5), ("c", -0.5)],  # unknown last item: popularity, ties by id
    ]
    assert lists_of(m, ["a"], k=4, exclude_seen=False) == [
        [("b", 1.0), ("a", -0.25), ("c", -0.5), ("d", -0.75)]
    ]
    two = pd.DataFrame({"session": [1, 1, 1, 1], "item": [1, 2, 1, 3], "time": [1, 2, 3, 4]})
    # 1->2 and 1->3: 1/2 each
    assert lists_of(MarkovRecommender().fit(two), [1], k=2) == [[(2, 0.5), (3, 0.5)]]


def test_session_item_knn_hand_worked() -> None:
    # events: a 3, b 2, c 2, d 1; co-occurrences a-b 2, a-c 2, a-d 1, b-c 1, c-d 1
    m = SessionItemKNNRecommender(lmbd=0.0, alpha=0.5).fit(TRAIN)
    r6, r3, r2 = 2 / math.sqrt(6), 1 / math.sqrt(3), 1 / math.sqrt(2)
    got = lists_of(m, ["a"], ["d"], ["b", "c"])
    assert got[0] == [("b", round(r6, 12)), ("c", round(r6, 12)), ("d", round(r3, 12))]
    assert got[1] == [("c", round(r2, 12)), ("a", round(r3, 12)), ("b", -0.5)]
    assert got[2] == [("a", round(r6, 12)), ("d", round(r2, 12))]  # last c; b, c left out
    # alpha 1: the confidence C(i, j) / supp_i (asymmetric)
    conf = SessionItemKNNRecommender(lmbd=0.0, alpha=1.0).fit(TRAIN)
    assert lists_of(conf, ["b"], k=2) == [[("a", 1.0), ("c", 0.5)]]
    # lambda 20 (session-rec's default): 2 / sqrt(23 * 22)
    assert lists_of(SessionItemKNNRecommender().fit(TRAIN), ["b"], k=1) == [
        [("a", round(2 / math.sqrt(23 * 22), 12))]
    ]
    # one neighbour kept: of a's tie b, c the smaller id, then the fill
    one = SessionItemKNNRecommender(neighbors=1, lmbd=0.0).fit(TRAIN)
    assert lists_of(one, ["a"], k=3) == [[("b", round(r6, 12)), ("c", -0.5), ("d", -0.75)]]


def test_session_item_knn_counts_events_as_session_rec() -> None:
    # s1: a a b, s2: a c. c(s1, a) = 2: C(a, b) = 2, C(a, c) = 1, supp_a = 3
    log = pd.DataFrame({"session": [1, 1, 1, 2, 2], "item": ["a", "a", "b", "a", "c"]})
    m = SessionItemKNNRecommender(lmbd=0.0, alpha=1.0).fit(log, time_col=None)
    assert lists_of(m, ["a"]) == [[("b", round(2 / 3, 12)), ("c", round(1 / 3, 12))]]


def test_recent_popular_hand_worked() -> None:
    # window (5, 8]: times 6, 7, 8 = session 3: c, d, a once each
    m = RecentPopularRecommender(window=3).fit(TRAIN)
    assert lists_of(m, ["a"], ["zz"], k=4) == [
        [("c", 1.0), ("d", 1.0), ("b", -0.5)],
        [("a", 1.0), ("c", 1.0), ("d", 1.0), ("b", -0.5)],
    ]
    # (4, 8]: b too
    assert lists_of(RecentPopularRecommender(window=4).fit(TRAIN), ["zz"], k=2) == [
        [("a", 1.0), ("b", 1.0)]
    ]
    # an empty window (now long after the data): all-time popularity
    empty = RecentPopularRecommender(window=3, now=100).fit(TRAIN)
    assert lists_of(empty, ["zz"]) == [[("a", -0.25), ("b", -0.5), ("c", -0.5), ("d", -0.75)]]
    whole = RecentPopularRecommender(window=None).fit(TRAIN)
    assert lists_of(whole, ["zz"]) == [[("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)]]
    # distinct sessions: x twice in one session counts once
    log = pd.DataFrame(
        {"session": [1, 1, 2, 3], "item": ["x", "x", "y", "y"], "time": [1, 2, 3, 4]}
    )
    assert lists_of(RecentPopularRecommender(window=10).fit(log), ["q"]) == [
        [("y", 2.0), ("x", 1.0)]
    ]


def test_recent_popular_dates() -> None:
    log = TRAIN.assign(time=pd.Timestamp("2024-01-01") + pd.to_timedelta(TRAIN["time"], unit="D"))
    m = RecentPopularRecommender(window="3D").fit(log)
    assert lists_of(m, ["a"], k=2) == [[("c", 1.0), ("d", 1.0)]]
    m = RecentPopularRecommender(window="3D", now="2024-03-01").fit(log)
    assert lists_of(m, ["zz"], k=1) == [[("a", -0.25)]]


# -- a literal reference on random logs ----------------------------------------------------


def reference(name: str, train: pd.DataFrame, seq: list[int], k: int, **p: Any) -> list:
    """A slow, literal version: dictionaries and sorted()."""
    sessions: dict[int, list[int]] = defaultdict(list)
    for s, i in train.sort_values(["session", "time"], kind="stable")[["session", "item"]].values:
        sessions[int(s)].append(int(i))
    items = sorted(set(train["item"]))
    pop = Counter(i for s in sessions.values() for i in set(s))
    fill = {i: -1.0 + pop[i] / (max(pop.values()) + 1.0) for i in items}
    scores: dict[int, float] = {}
    last = seq[-1]
    if name == "markov":
        pairs = Counter((a, b) for s in sessions.values() for a, b in itertools.pairwise(s))
        out = sum(n for (a, _), n in pairs.items() if a == last)
        scores = {b: n / out for (a, b), n in pairs.items() if a == last}
    elif name == "iknn":
        lmbd, alpha, nb = p["lmbd"], p["alpha"], p["neighbors"]
        supp = Counter(i for s in sessions.values() for i in s)
        if last in supp:
            sim = {}
            for j in items:
                c = sum(s.count(last) * s.count(j) for s in sessions.values())
                v = c / (np.float64(supp[last] + lmbd) ** alpha * (supp[j] + lmbd) ** (1 - alpha))
                if j != last and v > 0:
                    sim[j] = float(v)
            scores = dict(sorted(sim.items(), key=lambda kv: (-kv[1], kv[0]))[:nb])
    elif name == "recent":
        now = train["time"].max()
        inside = train[train["time"] > now - p["window"]]
        scores = {i: float(n) for i, n in Counter(inside.drop_duplicates()["item"]).items()}
        scores = {i: float(inside[inside["item"] == i]["session"].nunique()) for i in scores}
    ranked = {i: scores.get(i, fill[i]) for i in items if i not in seq}
    order = sorted(ranked, key=lambda i: (-ranked[i], i))[:k]
    return [(i, round(ranked[i], 9)) for i in order]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_a_literal_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    train = pd.DataFrame(
        {
            "session": rng.integers(0, 25, n),
            "item": rng.integers(0, 15, n),
            "time": rng.permutation(n),
        }
    )
    seqs = [list(rng.integers(0, 17, rng.integers(1, 5))) for _ in range(30)]
    models = {
        "markov": (MarkovRecommender(), {}),
        "iknn": (
            SessionItemKNNRecommender(neighbors=4, lmbd=2.0, alpha=0.7),
            {"lmbd": 2.0, "alpha": 0.7, "neighbors": 4},
        ),
        "recent": (RecentPopularRecommender(window=40), {"window": 40}),
    }
    for name, (model, p) in models.items():
        model.fit(train)
        got = model.lists(prefixes(*seqs), 6)
        for s, seq in enumerate(seqs):
            g = got[got["session"] == f"p{s}"]
            mine = list(zip(g["item"].tolist(), g["score"].round(9).tolist(), strict=True))
            assert mine == reference(name, train, [int(x) for x in seq], 6, **p), (name, seq)
            assert g["rank"].tolist() == list(range(1, len(g) + 1))


# -- determinism: row order and id forms ------------------------------------------------------


@pytest.mark.parametrize("name", ["markov", "session_item_knn", "recent_popular"])
def test_row_order_and_id_forms(name: str) -> None:
    log = synthetic_sessions(60, 20, seed=3).rename(columns={"timestamp": "time"})
    test = prefixes([1, 2], [5], [7, 3, 9], [99])
    base = session_baseline(name).fit(log).lists(test, 8)
    shuffled = log.sample(frac=1.0, random_state=1)
    assert session_baseline(name).fit(shuffled).lists(test, 8).equals(base)
    # digit strings are the same ids (the id rule), in the training data and the prefixes
    as_text = log.assign(item=log["item"].astype(str))
    got = session_baseline(name).fit(as_text).lists(test.assign(item=test["item"].astype(str)), 8)
    assert got.equals(base)
    # text ids: the same lists, mapped (the order of i00..i99 is the numbers' order)
    named = log.assign(item=log["item"].map("i{:02d}".format))
    got = (
        session_baseline(name)
        .fit(named)
        .lists(test.assign(item=test["item"].map("i{:02d}".format)), 8)
    )
    assert got["item"].tolist() == [f"i{x:02d}" for x in base["item"]]
    assert got["score"].tolist() == base["score"].tolist()


# -- edges -----------------------------------------------------------------------------------


def test_one_item_sessions_leave_popularity() -> None:
    log = pd.DataFrame({"session": [1, 2, 3], "item": [5, 6, 6], "time": [1, 2, 3]})
    third, two_thirds = round(-1 / 3, 12), round(-2 / 3, 12)  # -1 + pop / 3
    for model in (MarkovRecommender(), SessionItemKNNRecommender()):
        assert lists_of(model.fit(log), [5], [7]) == [[(6, third)], [(6, third), (5, two_thirds)]]


def test_errors() -> None:
    with pytest.raises(InputError, match="no session column"):
        MarkovRecommender().fit(TRAIN.rename(columns={"session": "s"}))
    with pytest.raises(InputError, match="empty"):
        MarkovRecommender().fit(TRAIN.iloc[:0])
    with pytest.raises(ReceValError, match="not fitted"):
        MarkovRecommender().lists(prefixes([1]))
    with pytest.raises(ReceValError, match="k must be"):
        MarkovRecommender().fit(TRAIN).lists(prefixes(["a"]), 0)
    with pytest.raises(OptionError, match="window"):
        RecentPopularRecommender(window="soon").fit(TRAIN)
    with pytest.raises(ReceValError, match="time column"):
        RecentPopularRecommender().fit(TRAIN, time_col=None)
    with pytest.raises(OptionError, match="alpha"):
        SessionItemKNNRecommender(alpha=2)
    with pytest.raises(OptionError, match="name"):
        session_baseline("gru4rec")  # type: ignore[arg-type]


# -- with evaluate_next_items, and the demo ------------------------------------------------------


def test_plugs_into_evaluate_next_items() -> None:
    # test session a b c: after [a] Markov lists b first, after [a, b] c first
    model = MarkovRecommender().fit(TRAIN)
    res = receval.evaluate_next_items(
        model.lister(2), {"t": ["a", "b", "c"], "u": ["d", "b"]}, "mrr@2"
    )
    # u: after [d] the list is a (1.0), then b (-0.5): rr 1/2
    assert res["rr@2"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert res.per_step["rr@2"].tolist() == [1.0, 1.0, 0.5]


def test_synthetic_sessions_is_deterministic() -> None:
    a = synthetic_sessions(200, 40, seed=5)
    assert a.equals(synthetic_sessions(200, 40, seed=5))
    assert not a.equals(synthetic_sessions(200, 40, seed=6))
    assert a["session"].nunique() == 200 and a.groupby("session").size().min() >= 2
    assert a["timestamp"].is_monotonic_increasing


def test_session_demo(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_session_demo(sessions=600, quiet=True)
    board = out["leaderboard"]
    assert set(board.index) == {"markov", "session_item_knn", "recent_popular", "popular"}
    assert board.loc["markov", "rr@20"] > board.loc["popular", "rr@20"]
    assert out["comparison"].systems[-1] == "popular"
    assert main(["demo", "--sessions"]) == 0
    text = capsys.readouterr().out
    assert "next-item accuracy" in text and "session_item_knn" in text and "hit_rate@20" in text
    assert main(["demo", "--sessions", "--threshold", "3"]) == 2
    assert "not with --sessions" in capsys.readouterr().err
