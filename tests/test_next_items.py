"""receval.evaluate_next_items: known values worked by hand, a slow literal
reference on random sessions, edge cases, id forms, the callable, compare."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError, OptionError
from receval.evaluation.next_items import NextItemResult, evaluate_next_items

# Two sessions with users; s1 repeats item 2.
#   s1 (u1): 1 2 3 2      steps 1..3
#   s2 (u1): 4 5          step 1
#   s3 (u2): 6 7 8        steps 1..2
SESSIONS = pd.DataFrame(
    {
        "session": ["s1"] * 4 + ["s2"] * 2 + ["s3"] * 3,
        "user": ["u1"] * 6 + ["u2"] * 3,
        "item": [1, 2, 3, 2, 4, 5, 6, 7, 8],
        "time": [1, 2, 3, 4, 1, 2, 1, 2, 3],
    }
)
LISTS = {
    ("s1", 1): [2, 9, 3],  # next 2 at rank 1; remaining {2, 3}
    ("s1", 2): [9, 3, 2],  # next 3 at rank 2; remaining {3, 2}
    ("s1", 3): [9, 8, 7],  # next 2 absent; remaining {2}
    ("s2", 1): [5],  # next 5 at rank 1
    ("s3", 1): [9, 9.5, 7],  # next 7 at rank 3; remaining {7, 8}
    ("s3", 2): [8, 7, 6],  # next 8 at rank 1
}


def _shuffled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sample(frac=1.0, random_state=3).reset_index(drop=True)


def test_next_known_values_every_average() -> None:
    # rr@3 per step: s1: 1, 1/2, 0; s2: 1; s3: 1/3, 1
    metrics = ["rr@3", "hit_rate@2"]
    steps = evaluate_next_items(LISTS, _shuffled(SESSIONS), metrics)
    assert isinstance(steps, NextItemResult)
    assert steps["rr@3"] == pytest.approx((1 + 0.5 + 0 + 1 + 1 / 3 + 1) / 6, abs=1e-15)
    assert steps["hit_rate@2"] == pytest.approx(4 / 6, abs=1e-15)
    sessions = evaluate_next_items(LISTS, SESSIONS, metrics, average="sessions")
    assert sessions["rr@3"] == pytest.approx((0.5 + 1 + (1 / 3 + 1) / 2) / 3, abs=1e-15)
    users = evaluate_next_items(LISTS, SESSIONS, metrics, average="users")
    # u1 pools its 4 steps over s1 and s2 (Cornac's user_based), u2 its 2
    assert users["rr@3"] == pytest.approx(((1 + 0.5 + 0 + 1) / 4 + (1 / 3 + 1) / 2) / 2, abs=1e-15)
    assert list(users.per_user.index) == ["u1", "u2"]
    assert list(sessions.per_user.index) == ["s1", "s2", "s3"]
    # by position: step 1 in three sessions, 2 in two, 3 in one
    pos = steps.by_position
    assert pos["steps"].tolist() == [3, 2, 1]
    assert pos["rr@3"].tolist() == pytest.approx([(1 + 1 + 1 / 3) / 3, (0.5 + 1) / 2, 0.0])
    assert steps.per_step["step"].tolist() == [1, 2, 3, 1, 1, 2]
    assert steps.per_session["steps"].tolist() == [3, 1, 2]
    assert steps.counts["steps"] == 6 and steps.counts["sessions"] == 3


def test_remaining_known_values_repeated_items_counted_once() -> None:
    res = evaluate_next_items(LISTS, SESSIONS, ["recall@2", "precision@3"], target="remaining")
    rec = res.per_step["recall@2"].tolist()
    # s1 t=1: remaining {2,3} (2 again later: once), top2 [2,9] -> 1/2
    # s1 t=2: {3,2}, top2 [9,3] -> 1/2; t=3: {2} -> 0; s2: {5} -> 1; s3 t=1: {7,8} -> 0; t=2: 1
    assert rec == pytest.approx([0.5, 0.5, 0.0, 1.0, 0.0, 1.0])
    prec = res.per_step["precision@3"].tolist()
    assert prec == pytest.approx([2 / 3, 2 / 3, 0, 1 / 3, 1 / 3, 1 / 3])
    assert res["recall@2"] == pytest.approx(3 / 6)
    by_session = evaluate_next_items(
        LISTS, SESSIONS, "recall@2", target="remaining", average="sessions"
    )
    assert by_session["recall@2"] == pytest.approx((1 / 3 + 1 + 0.5) / 3, abs=1e-15)
    by_user = evaluate_next_items(LISTS, SESSIONS, "recall@2", target="remaining", average="users")
    assert by_user["recall@2"] == pytest.approx((2 / 4 + 1 / 2) / 2, abs=1e-15)


def test_last_step_only() -> None:
    res = evaluate_next_items(LISTS, SESSIONS, "rr@3", steps="last")
    assert res.per_step["step"].tolist() == [3, 1, 2]
    assert res["rr@3"] == pytest.approx((0 + 1 + 1) / 3)
    assert res.counts["list_rows_step_not_evaluated"] == 9  # s1 steps 1, 2 and s3 step 1
    remaining = evaluate_next_items(LISTS, SESSIONS, "recall@3", steps="last", target="remaining")
    assert remaining.per_step["recall@3"].tolist() == [0.0, 1.0, 1.0]


# -- a slow literal reference --------------------------------------------------


def _reference(
    lists: dict, sessions: dict, k: int, target: str, average: str, users: dict
) -> dict[str, float]:
    """Pure Python: every step of every session, the formulas written out."""
    per_step: list[tuple[object, dict[str, float]]] = []
    for s, items in sessions.items():
        for t in range(1, len(items)):
            relevant = {items[t]} if target == "next" else set(items[t:])
            ranked = []
            for x in lists.get((s, t), []):
                if x not in ranked:
                    ranked.append(x)
            top = ranked[:k]
            hits = [x in relevant for x in top]
            first = next((i for i, h in enumerate(hits) if h), None)
            dcg = sum(1 / math.log2(i + 2) for i, h in enumerate(hits) if h)
            idcg = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
            values = {
                "precision": sum(hits) / k,
                "recall": sum(hits) / len(relevant),
                "rr": 0.0 if first is None else 1 / (first + 1),
                "ndcg": dcg / idcg,
            }
            per_step.append(((s, users[s]), values))
    out = {}
    for m in ("precision", "recall", "rr", "ndcg"):
        if average == "steps":
            out[m] = math.fsum(v[m] for _, v in per_step) / len(per_step)
            continue
        key = 0 if average == "sessions" else 1
        groups: dict[object, list[float]] = {}
        for unit, v in per_step:
            groups.setdefault(unit[key], []).append(v[m])
        means = [math.fsum(g) / len(g) for g in groups.values()]
        out[m] = math.fsum(means) / len(means)
    return out


def _random_log(seed: int, n_sessions: int = 60) -> tuple[dict, dict, dict]:
    rng = np.random.default_rng(seed)
    sessions, lists, users = {}, {}, {}
    for s in range(n_sessions):
        n = int(rng.integers(1, 8))
        sessions[s] = [int(x) for x in rng.integers(0, 12, size=n)]  # repeats happen
        users[s] = int(rng.integers(0, 15))
        for t in range(1, n):
            if rng.random() < 0.9:  # some steps without a list: scored 0
                size = int(rng.integers(0, 9))
                lists[(s, t)] = [int(x) for x in rng.permutation(12)[:size]]
    return sessions, lists, users


@pytest.mark.parametrize("target", ["next", "remaining"])
@pytest.mark.parametrize("average", ["steps", "sessions", "users"])
def test_agrees_with_slow_reference(target: str, average: str) -> None:
    sessions, lists, users = _random_log(7)
    frame = pd.DataFrame(
        [(s, users[s], x, i) for s, items in sessions.items() for i, x in enumerate(items)],
        columns=["session", "user", "item", "step"],
    )
    expected = _reference(lists, sessions, 5, target, average, users)
    res = evaluate_next_items(
        lists,
        _shuffled(frame),
        ["precision@5", "recall@5", "rr@5", "ndcg@5"],
        target=target,
        average=average,
    )
    for m, v in expected.items():
        assert abs(res[f"{m}@5"] - v) <= 1e-12, (m, res[f"{m}@5"], v)


# -- edge cases ------------------------------------------------------------------


def test_session_of_one_item_has_no_step() -> None:
    sessions = {"a": [1], "b": [1, 2]}
    res = evaluate_next_items({("b", 1): [2]}, sessions, "rr@1")
    assert res.counts["sessions_too_short"] == 1 and res.counts["steps"] == 1
    assert res["rr@1"] == 1.0
    assert list(res.per_session.index) == ["b"]
    with pytest.raises(InputError, match="no step"):
        evaluate_next_items({("a", 1): [2]}, sessions, "rr@1")


def test_steps_that_do_not_exist_and_unknown_sessions_are_errors() -> None:
    with pytest.raises(InputError, match=r"step 4 of session 's1'.*steps 1\.\.3"):
        evaluate_next_items({("s1", 4): [1]}, SESSIONS, "rr@3")
    with pytest.raises(InputError, match="step 0"):
        evaluate_next_items({("s1", 0): [1]}, SESSIONS, "rr@3")
    with pytest.raises(InputError, match="'zz', which is not in the sessions"):
        evaluate_next_items({("zz", 1): [1]}, SESSIONS, "rr@3")


def test_steps_without_lists_follow_missing_recs() -> None:
    only = {("s1", 1): [2]}
    zero = evaluate_next_items(only, SESSIONS, "rr@3")
    assert zero["rr@3"] == pytest.approx(1 / 6)
    assert zero.counts["steps_scored_zero"]["no_recommendations"] == 5
    skip = evaluate_next_items(only, SESSIONS, "rr@3", missing_recs="skip")
    assert skip["rr@3"] == 1.0
    empty = pd.DataFrame({"session": [], "step": [], "item": []})
    assert evaluate_next_items(empty, SESSIONS, "rr@3")["rr@3"] == 0.0
    with pytest.raises(receval.ReceValError):
        evaluate_next_items(only, SESSIONS, "rr@3", missing_recs="error")


def test_k_beyond_the_list() -> None:
    res = evaluate_next_items({("s2", 1): [9, 5]}, SESSIONS, ["precision@10", "ndcg@10"])
    step = res.per_step.set_index("session").loc["s2"]
    assert step["precision@10"] == pytest.approx(0.1)
    assert step["ndcg@10"] == pytest.approx(1 / math.log2(3))


def test_options_are_checked() -> None:
    with pytest.raises(OptionError, match="target"):
        evaluate_next_items(LISTS, SESSIONS, "rr@3", target="rest")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="average"):
        evaluate_next_items(LISTS, {"s1": [1, 2]}, "rr@3", average="users")
    with pytest.raises(OptionError, match="threshold"):
        evaluate_next_items(LISTS, SESSIONS, "rr@3", threshold=2)
    with pytest.raises(OptionError, match="batch_size"):
        evaluate_next_items(LISTS, SESSIONS, "rr@3", batch_size=0)
    two_users = SESSIONS.assign(user=["u1"] * 3 + ["u9"] + ["u1"] * 2 + ["u2"] * 3)
    with pytest.raises(InputError, match="session 's1' has two users"):
        evaluate_next_items(LISTS, two_users, "rr@3")


@pytest.mark.parametrize("form", ["int", "digits", "text"])
def test_id_forms_give_the_same_numbers(form: str) -> None:
    def f(x: object) -> object:
        return {"int": x, "digits": str(x), "text": f"i{x}"}[form]

    def g(s: str) -> object:
        return {"int": int(s[1:]), "digits": s[1:], "text": s}[form]

    sessions = SESSIONS.assign(session=SESSIONS["session"].map(g), item=SESSIONS["item"].map(f))
    lists = pd.DataFrame(
        [(g(s), t, f(x), r) for (s, t), xs in LISTS.items() for r, x in enumerate(xs, 1)],
        columns=["session", "step", "item", "rank"],
    )
    res = evaluate_next_items(lists, sessions, ["ndcg@3", "recall@2"], target="remaining")
    base = evaluate_next_items(LISTS, SESSIONS, ["ndcg@3", "recall@2"], target="remaining")
    assert res.summary == base.summary


def test_scores_and_rows_order() -> None:
    rows = [(s, t, x, 10 - r) for (s, t), xs in LISTS.items() for r, x in enumerate(xs)]
    scored = pd.DataFrame(rows, columns=["session", "step", "item", "score"])
    by_order = scored.drop(columns="score")
    base = evaluate_next_items(LISTS, SESSIONS, "ndcg@3")
    assert evaluate_next_items(_shuffled(scored), SESSIONS, "ndcg@3").summary == base.summary
    assert evaluate_next_items(by_order, SESSIONS, "ndcg@3").summary == base.summary


def test_rows_of_one_list_apart_keep_their_order() -> None:
    # every list's first item, then every list's second, ...: each list's order kept
    rows = [(r, s, t, x) for (s, t), xs in LISTS.items() for r, x in enumerate(xs)]
    rows.sort(key=lambda row: row[0])
    apart = pd.DataFrame([row[1:] for row in rows], columns=["session", "step", "item"])
    res = evaluate_next_items(apart, SESSIONS, ["ndcg@3", "rr@3"])
    assert res.summary == evaluate_next_items(LISTS, SESSIONS, ["ndcg@3", "rr@3"]).summary


def test_renders() -> None:
    res = evaluate_next_items(LISTS, SESSIONS, "rr@3", average="sessions")
    assert "6 steps evaluated of 6, in 3 sessions of 3" in str(res)
    data = res.to_dict()
    assert data["parameters"]["target"] == "next"
    assert [r["step"] for r in data["by_position"]] == [1, 2, 3]
    assert res.to_frame().loc["rr@3", "users"] == 3  # the sessions averaged


# -- the callable ------------------------------------------------------------------


def test_callable_gets_prefixes_in_batches_of_whole_sessions() -> None:
    seen: list[pd.DataFrame] = []

    def model(prefixes: pd.DataFrame) -> pd.DataFrame:
        seen.append(prefixes)
        keys = prefixes.drop_duplicates(["session", "step"])[["session", "step"]]
        rows = [
            (s, t, x, r)
            for s, t in keys.itertuples(index=False)
            for r, x in enumerate(LISTS.get((s, t), []), 1)
        ]
        return pd.DataFrame(rows, columns=["session", "step", "item", "rank"])

    res = evaluate_next_items(model, SESSIONS, "rr@3", batch_size=2)
    assert res.summary == evaluate_next_items(LISTS, SESSIONS, "rr@3").summary
    assert [sorted(set(b["session"])) for b in seen] == [["s1"], ["s2", "s3"]]
    first = seen[0]
    assert list(first.columns) == ["session", "step", "position", "item"]
    # step t holds the prefix s1..st
    assert first[first["step"] == 3]["item"].tolist() == [1, 2, 3]
    assert first["position"].tolist() == [1, 1, 2, 1, 2, 3]
    last = evaluate_next_items(model, SESSIONS, "rr@3", steps="last", batch_size=100)
    assert last.summary == evaluate_next_items(LISTS, SESSIONS, "rr@3", steps="last").summary


# -- compare: sessions are the paired units -------------------------------------------


def test_compare_pairs_by_session() -> None:
    worse = {key: list(reversed(xs)) for key, xs in LISTS.items()}
    a = evaluate_next_items(LISTS, SESSIONS, "rr@3", average="sessions")
    b = evaluate_next_items(worse, SESSIONS, "rr@3", average="sessions")
    cmp = receval.compare({"a": a, "b": b}, None, "rr@3", test="randomization", n_resamples=99)
    assert cmp.table.loc[("rr@3", "a"), "users"] == 3  # three sessions paired
    assert cmp.table.loc[("rr@3", "a"), "mean"] == pytest.approx(a["rr@3"])
    assert list(cmp.aligned["rr@3"].index.sort_values()) == ["s1", "s2", "s3"]


# -- the steps as evaluate's units (issue #36 point 6) ------------------------------


def test_remaining_truth_is_built_in_unit_order() -> None:
    # the truth handed to evaluate: units ascending, each step's distinct
    # remaining items in session order (first occurrence), as written out here
    from receval.evaluation.next_items import _Sessions

    rng = np.random.default_rng(5)
    sessions = {s: [int(x) for x in rng.integers(0, 6, size=rng.integers(1, 9))] for s in range(40)}
    cols = {"session": None, "item": None, "time": None, "user": None}
    for steps in ("all", "last"):
        log = _Sessions.of(sessions, cols, steps)
        units, items = log.truth("remaining")
        expected: list[tuple[int, int]] = []
        unit = 0
        for s in sorted(sessions):
            seq = sessions[s]
            chosen = range(1, len(seq)) if steps == "all" else range(len(seq) - 1, len(seq))
            for t in chosen:
                if t < 1:
                    continue
                rest = list(dict.fromkeys(seq[t:]))
                expected += [(unit, x) for x in rest]
                unit += 1
        assert list(zip(units.tolist(), items.tolist(), strict=True)) == expected


@pytest.mark.parametrize("form", ["int", "text"])
def test_runs_of_rows_found_across_blocks(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the (session, step) runs of the lists' rows are found a block of rows at a
    # time: blocks of 3 rows give the same per-step values as one block
    import receval.evaluation.next_items as next_items

    def g(s: str) -> object:
        return int(s[1:]) if form == "int" else s

    lists = pd.DataFrame(
        [(g(s), t, x) for (s, t), xs in LISTS.items() for x in xs],
        columns=["session", "step", "item"],
    )
    sessions = SESSIONS.assign(session=SESSIONS["session"].map(g))
    metrics = ["ndcg@3", "rr@3", "recall@2"]
    base = evaluate_next_items(lists, sessions, metrics, target="remaining")
    monkeypatch.setattr(next_items, "HEAD_BLOCK", 3)
    small = evaluate_next_items(lists, sessions, metrics, target="remaining")
    pd.testing.assert_frame_equal(small.per_step, base.per_step, check_exact=True)
    assert small.summary == base.summary
    # a list whose rows are apart is two runs of one step: the same values
    apart = pd.concat([lists.iloc[[0]], lists.iloc[3:], lists.iloc[1:3]], ignore_index=True)
    again = evaluate_next_items(apart, sessions, metrics, target="remaining")
    pd.testing.assert_frame_equal(again.per_step, base.per_step, check_exact=True)


# -- the callable, batch by batch: the whole table's numbers ----------------------------

BATCH_OPTIONS = {
    "next-steps": {"metrics": ["ndcg@5", "recall@5", "rr@5", "ap@5", "precision@5"]},
    "remaining-sessions-skip": {
        "metrics": ["ndcg@5", "recall@5", "hit_rate@3"],
        "target": "remaining",
        "average": "sessions",
        "missing_recs": "skip",
    },
    "users-last": {"metrics": ["rr@5", "ndcg@3"], "average": "users", "steps": "last"},
    "train-aggregates": {
        "metrics": ["coverage@5", "gini@5", "novelty@5", "hit_rate@5", "unjudged@5"],
        "target": "remaining",
        "average": "sessions",
        "train": True,
    },
    "scores-keep-duplicates": {
        "metrics": ["ndcg@5", "precision@5"],
        "scores": True,
        "duplicates": "keep",
    },
}


def _id_form(form: str, x: object) -> object:
    return {"int": x, "digits": str(x), "text": f"x{x}"}[form]


def _batched_inputs(form: str, scores: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    sessions, lists, users = _random_log(11, 24)
    frame = pd.DataFrame(
        [
            (_id_form(form, s), users[s], _id_form(form, x), i)
            for s, items in sessions.items()
            for i, x in enumerate(items)
        ],
        columns=["session", "user", "item", "step"],
    )
    rows = [
        (_id_form(form, s), t, _id_form(form, x), r)
        for (s, t), xs in lists.items()
        for r, x in enumerate(xs, 1)
    ]
    table = pd.DataFrame(rows, columns=["session", "step", "item", "rank"])
    if scores:
        table = table.assign(score=10.0 - table["rank"]).drop(columns="rank")
    train = pd.DataFrame({"user": [0, 0, 1, 1, 2], "item": [_id_form(form, x) for x in range(5)]})
    return frame, table, train


def _assert_same_result(a: NextItemResult, b: NextItemResult) -> None:
    assert a.summary == b.summary or all(
        (x == y) or (math.isnan(x) and math.isnan(y))
        for x, y in zip(a.summary.values(), b.summary.values(), strict=True)
    )
    assert list(a.summary) == list(b.summary)
    for name in ("per_user", "per_step", "per_session", "by_position"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert a.counts == b.counts
    assert {k: v for k, v in a.parameters.items() if k != "batch_size"} == {
        k: v for k, v in b.parameters.items() if k != "batch_size"
    }
    assert a.notes == b.notes


def _check_batched(case: str, form: str, batch_sizes: tuple[int, ...], apart: bool = False) -> None:
    opts = dict(BATCH_OPTIONS[case])
    metrics = opts.pop("metrics")
    frame, table, train = _batched_inputs(form, bool(opts.pop("scores", False)))
    if opts.pop("train", False):
        opts["train"] = train
    calls: list[int] = []

    def model(prefixes: pd.DataFrame) -> pd.DataFrame:
        calls.append(1)
        # the batch's sessions' lists (the prefixes hold the ids as read: digits are numbers)
        mine = table[table["session"].astype(str).isin(prefixes["session"].astype(str))]
        if apart:  # every list's first row, then every list's second, ...
            order = mine.groupby(["session", "step"]).cumcount().to_numpy()
            mine = mine.iloc[np.argsort(order, kind="stable")]
        return mine

    whole = evaluate_next_items(table, frame, metrics, **opts)
    assert any(v > 0 for v in whole.summary.values())  # lists that hit: a real check
    for size in batch_sizes:
        calls.clear()
        res = evaluate_next_items(model, frame, metrics, batch_size=size, **opts)
        _assert_same_result(res, whole)
        assert len(calls) >= 1 and (size > 1 or len(calls) == res.counts["sessions_evaluated"])


@pytest.mark.parametrize("case", sorted(BATCH_OPTIONS))
def test_callable_batch_by_batch_is_the_whole_table(case: str) -> None:
    # one session a batch, a few sessions a batch, every session in one batch
    _check_batched(case, "int", (1, 7, 10**6))


@pytest.mark.parametrize("form", ["digits", "text"])
def test_callable_batch_by_batch_id_forms(form: str) -> None:
    _check_batched("remaining-sessions-skip", form, (1, 7, 10**6))
    _check_batched("train-aggregates", form, (3,))


def test_callable_lists_outside_the_batch_are_refused() -> None:
    table = pd.DataFrame(
        [(s, t, x, r) for (s, t), xs in LISTS.items() for r, x in enumerate(xs, 1)],
        columns=["session", "step", "item", "rank"],
    )
    with pytest.raises(InputError, match="not in the batch of sessions it was handed"):
        evaluate_next_items(lambda prefixes: table, SESSIONS, "rr@3", batch_size=1)
    # every batch's lists in one form
    scored = table.assign(score=1.0 / table["rank"]).drop(columns="rank")

    def mixed(prefixes: pd.DataFrame) -> pd.DataFrame:
        mine = table[table["session"].isin(prefixes["session"])]
        return mine if prefixes["session"].iat[0] == "s1" else scored.loc[mine.index]

    with pytest.raises(InputError, match="some have a score column"):
        evaluate_next_items(mixed, SESSIONS, "rr@3", batch_size=1)
    # item ids of one kind where items are counted across batches (s3's 9.5 makes its
    # batch text); without, the steps' values are the same: as the whole table
    floats = table.assign(item=table["item"].astype(float))

    def per_batch(prefixes: pd.DataFrame) -> pd.DataFrame:
        return floats[floats["session"].isin(prefixes["session"])]

    with pytest.raises(InputError, match="item ids as numbers in earlier batches and as text"):
        evaluate_next_items(
            per_batch, SESSIONS, ["rr@3", "coverage@3"], catalog=range(10), batch_size=1
        )
    _assert_same_result(
        evaluate_next_items(per_batch, SESSIONS, ["rr@3", "ndcg@3"], batch_size=1),
        evaluate_next_items(floats, SESSIONS, ["rr@3", "ndcg@3"]),
    )


def test_callable_batches_without_lists() -> None:
    table = pd.DataFrame(
        [(s, t, x, r) for (s, t), xs in LISTS.items() for r, x in enumerate(xs, 1)],
        columns=["session", "step", "item", "rank"],
    )
    table = table[table["item"] != 9.5].astype({"item": "int64"})

    def some(prefixes: pd.DataFrame) -> pd.DataFrame:  # no list for s2's batch
        mine = table[table["session"].isin(prefixes["session"])]
        return mine if prefixes["session"].iat[0] != "s2" else mine.iloc[:0]

    for missing in ("zero", "skip"):
        opts = {"missing_recs": missing, "catalog": list(range(10))}
        metrics = ["rr@3", "coverage@3"]
        whole = evaluate_next_items(table[table["session"] != "s2"], SESSIONS, metrics, **opts)
        batched = evaluate_next_items(some, SESSIONS, metrics, batch_size=1, **opts)
        _assert_same_result(batched, whole)
    _assert_same_result(
        evaluate_next_items(lambda p: {}, SESSIONS, "rr@3", batch_size=1),
        evaluate_next_items({}, SESSIONS, "rr@3"),
    )


@pytest.mark.parametrize("apart", [False, True])
def test_callable_batches_evaluated_in_pieces(apart: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # pieces of whole steps within a batch (rows of one list apart: the batch whole)
    import receval.evaluation.next_items as next_items

    monkeypatch.setattr(next_items, "PIECE_ROWS", 5)
    _check_batched("remaining-sessions-skip", "int", (1, 7, 10**6), apart=apart)
    _check_batched("train-aggregates", "text", (7,), apart=apart)


def test_times_written_as_text_order_events_as_numbers() -> None:
    """A time column of text (a JSON file's "9", a string column) orders each
    session's events as the same characters read from a CSV file do: as
    numbers (was: as text, "10" before "9": other numbers, no word); a value
    that is no time names its row; ints and digit strings mixed read alike."""
    shuffled = SESSIONS.sample(frac=1, random_state=4)
    times = shuffled.assign(time=shuffled["time"] * 5)  # 5, 10, 15, 20: one digit and two
    want = evaluate_next_items(LISTS, times, ["rr@3", "hit_rate@1"])
    for form in (times.astype({"time": str}), times.astype({"time": object})):
        got = evaluate_next_items(LISTS, form, ["rr@3", "hit_rate@1"])
        assert got.summary == want.summary
    mixed = times.astype({"time": object})
    mixed.iloc[0, mixed.columns.get_loc("time")] = str(mixed["time"].iloc[0])
    assert evaluate_next_items(LISTS, mixed, ["rr@3", "hit_rate@1"]).summary == want.summary
    typo = times.astype({"time": str})
    typo.iloc[4, typo.columns.get_loc("time")] = "abc"
    with pytest.raises(InputError, match=r"row 4: 'time' holds 'abc'"):
        evaluate_next_items(LISTS, typo, "rr@3")


def test_a_score_that_is_no_number_names_its_row() -> None:
    lists = pd.DataFrame(
        {"session": ["s1", "s1"], "step": [1, 1], "item": [3, 4], "score": ["abc", 0.5]}
    )
    with pytest.raises(InputError, match=r"row 0: score must be a finite number; found 'abc'"):
        evaluate_next_items(lists, SESSIONS, "rr@3")
