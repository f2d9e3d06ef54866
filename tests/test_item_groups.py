"""Item groups (issue #20 points 2 and 3): rsp, reo, exposure, awrf,
miscalibration and ``Result.item_groups``.

Known values are in tests/data/known_values_beyond.csv (case ``groups``) and
the slow reference on random data in tests/test_beyond.py; here: TREC Fair
Ranking's own formula (SciPy's Jensen–Shannon distance), edge cases, input
forms and errors, and every door giving the same numbers.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval import ReceValError
from receval.errors import InputError
from receval.io import stream
from tests.test_every_door import _data, _write

RECS = {1: [10, 11, 12], 2: [12, 13, 10], 3: [14, 10]}
TRUTH = {1: [10, 13], 2: [13], 3: [11, 14]}
TRAIN = {1: [11, 14], 2: [10, 14], 3: [12]}
GROUPS = {10: "pop", 11: "pop", 12: ["pop", "tail"], 13: "tail", 14: "tail"}


def test_awrf_is_trec_fair_rankings_formula() -> None:
    """TREC Fair Ranking 2022 (wptrec): 1 − jensenshannon(ε, t)² with natural
    logs, discount 1/log2(max(r, 2)), fractional membership."""
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(5)
    labels = ["a", "b", "c", "d"]
    groups = {i: sorted(set(rng.choice(labels, int(rng.integers(1, 3))))) for i in range(30)}
    recs = {u: [int(i) for i in rng.choice(30, 12, replace=False)] for u in range(20)}
    truth = {u: [0] for u in range(20)}
    res = receval.evaluate(
        recs, truth, "awrf@10[base=e,discount=trec]", item_groups=groups, empty_truth="zero"
    )
    for u, items in recs.items():
        eps = np.zeros(len(labels))
        for r, i in enumerate(items[:10], 1):
            for g in groups[i]:
                eps[labels.index(g)] += 1 / math.log2(max(r, 2)) / len(groups[i])
        want = 1 - jensenshannon(eps, np.full(len(labels), 0.25)) ** 2
        assert res.per_user.loc[u, "awrf@10[base=e,discount=trec]"] == pytest.approx(want, 1e-12)


def test_item_groups_table() -> None:
    res = receval.evaluate(
        RECS,
        TRUTH,
        ["ndcg@2", "coverage@2", "gini@2", "entropy@2", "prediction_coverage@2"],
        train=TRAIN,
        item_groups=GROUPS,
    )
    t = res.item_groups
    assert t is not None and list(t.index.names) == ["grouping", "group"]
    assert list(t.index) == [("group", "pop"), ("group", "tail")]
    assert t["items"].tolist() == [3, 3]
    assert t["catalog_share"].tolist() == [0.75, 0.5]  # catalog: the training items 10 11 12 14
    a = 1 / math.log2(3)
    assert t["exposure@2"].tolist() == pytest.approx(
        [(2 + 2 * a) / (3 + 3 * a), (2 + a) / (3 + 3 * a)]
    )
    assert t["coverage@2"].tolist() == [1.0, 1.0]
    assert t["gini@2"].tolist() == pytest.approx([1 / 6, 0.0])  # pop: counts 2, 1, 1
    # entropy within pop: shares 2/4, 1/4, 1/4; tail: 12, 13, 14 once each (any item)
    assert t["entropy@2"].tolist() == pytest.approx([1.5, math.log2(3)])
    assert t["prediction_coverage@2"].tolist() == pytest.approx([4 / 9, 2 / 6])
    assert "ndcg@2" not in t
    records = res.to_dict()["item_groups"]
    assert records[0]["grouping"] == "group" and records[0]["group"] == "pop"
    assert "by item group" in str(res)


def test_item_groups_without_a_cutoff_say_so() -> None:
    res = receval.evaluate(RECS, TRUTH, "ndcg", item_groups=GROUPS)
    assert res.item_groups is None
    assert any("item_groups" in n for n in res.notes)


def test_inputs_forms_agree(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [(i, g) for i, gs in GROUPS.items() for g in ([gs] if isinstance(gs, str) else gs)],
        columns=["movieId", "genre"],
    )
    path = tmp_path / "groups.csv"
    frame.to_csv(path, index=False)
    metrics = ["rsp@2", "reo@2", "awrf@2", "miscalibration@2", "exposure@2[group=tail]"]
    want = receval.evaluate(RECS, TRUTH, metrics, train=TRAIN, item_groups=GROUPS)
    for given in (frame, pa.Table.from_pandas(frame), path, str(path)):
        got = receval.evaluate(RECS, TRUTH, metrics, train=TRAIN, item_groups=given)
        assert got.summary == want.summary
        assert got.item_groups.index.get_level_values(0).unique().tolist() == ["genre"]


def test_a_table_with_extra_columns_takes_the_one_named_group() -> None:
    frame = pd.DataFrame({"item": [10, 13], "group": ["a", "b"], "weight": [1, 2]})
    res = receval.evaluate(RECS, TRUTH, "exposure@2[group=b]", item_groups=frame)
    assert res.item_groups.index.get_level_values(0)[0] == "group"
    with pytest.raises(InputError, match=r"one group column.*found genre, weight"):
        receval.evaluate(
            RECS,
            TRUTH,
            "rsp@2[exclude_train=false]",
            item_groups=frame.rename(columns={"group": "genre"}),
        )


def test_null_groups_are_left_out_and_groups_keep_their_case() -> None:
    frame = pd.DataFrame({"item": [10, 11, 13], "group": ["Pop", None, "pop"]})
    res = receval.evaluate(RECS, TRUTH, ["exposure@2[group=Pop]"], item_groups=frame)
    assert res.item_groups.index.get_level_values(1).tolist() == ["Pop", "pop"]
    # 10 at rank 1 (user 1) and rank 2 (user 3): (1 + a) / (3 + 3 a) = 1/3
    assert res.summary["exposure@2[group=Pop]"] == pytest.approx(1 / 3)


def test_errors_name_the_option_and_the_groups() -> None:
    with pytest.raises(ReceValError, match=r"rsp@2 needs item_groups=, which was not given"):
        receval.evaluate(RECS, TRUTH, "rsp@2", train=TRAIN)
    with pytest.raises(ReceValError, match=r"rsp@2 needs train="):
        receval.evaluate(RECS, TRUTH, "rsp@2", item_groups=GROUPS)
    with pytest.raises(ReceValError, match=r"needs a group: exposure@2\[group=NAME\].*pop, tail"):
        receval.evaluate(RECS, TRUTH, "exposure@2", item_groups=GROUPS)
    with pytest.raises(ReceValError, match=r"no item group 'Tail'.*did you mean 'tail'"):
        receval.evaluate(RECS, TRUTH, "exposure@2[group=Tail]", item_groups=GROUPS)
    with pytest.raises(ReceValError, match="needs a cut-off"):
        receval.evaluate(RECS, TRUTH, "reo", item_groups=GROUPS)
    with pytest.raises(ReceValError, match=r"awrf@2\[target=catalog\] needs catalog="):
        receval.evaluate(RECS, TRUTH, "awrf@2[target=catalog]", item_groups=GROUPS)
    with pytest.raises(InputError, match="mapping item -> group"):
        receval.evaluate(RECS, TRUTH, "reo@2", item_groups=42)
    with pytest.raises(receval.MetricError, match="alpha"):
        receval.evaluate(RECS, TRUTH, "miscalibration@2[alpha=0]", item_groups=GROUPS, train=TRAIN)


def test_edge_cases() -> None:
    # user 4: an empty list; user 5: a list of items in no group; 6: no history
    recs = {1: [10, 11], 4: [], 5: [98, 99], 6: [13]}
    truth = {1: [10], 4: [13], 5: [10], 6: [13]}
    train = {1: [11, 14], 4: [12], 5: [13]}
    res = receval.evaluate(
        recs,
        truth,
        ["awrf@2", "miscalibration@2", "reo@2", "rsp@2"],
        train=train,
        item_groups=GROUPS,
    )
    pu = res.per_user
    assert math.isnan(pu.loc[4, "awrf@2"]) and math.isnan(pu.loc[5, "awrf@2"])
    # an empty list: q = 0, so C = Σ p ln(p / (α p)) = ln(1/α)
    assert pu.loc[4, "miscalibration@2"] == pytest.approx(math.log(100))
    assert pu.loc[5, "miscalibration@2"] == pytest.approx(math.log(100))
    assert math.isnan(pu.loc[6, "miscalibration@2"])
    assert res.counts["undefined"]["miscalibration@2"] == 1
    assert res.counts["undefined"]["awrf@2"] == 2
    # reo: hits pop 1 (u1 10) of 2 relevant pop pairs (u1 10, u5 10); tail 1 (u6 13) of 2
    assert res.summary["reo@2"] == 0.0


def test_a_group_nobody_can_get_is_left_out_of_rsp() -> None:
    """A group whose every item is in every user's training data has no
    denominator: its P is undefined and left out (not 0)."""
    groups = {10: "a", 11: "b", 12: "c"}
    recs = {1: [10, 11], 2: [11, 10]}
    truth = {1: [10], 2: [11]}
    train = {1: [12], 2: [12]}
    res = receval.evaluate(recs, truth, ["rsp@2", "reo@2"], train=train, item_groups=groups)
    assert res.summary["rsp@2"] == 0.0  # a and b: 2 slots / 2 items each
    assert res.summary["reo@2"] == 0.0


def test_rsp_counts_only_the_users_evaluated() -> None:
    res = receval.evaluate(
        {1: [10], 2: [13]},
        {1: [10], 2: []},
        "rsp@1[exclude_train=false]",
        item_groups={10: "a", 13: "b"},
    )
    # user 2 (no relevant item) is skipped: a 1 / 1, b 0 / 1
    assert res.counts["users_evaluated"] == 1
    assert res.summary["rsp@1[exclude_train=false]"] == 1.0


# --- every door: item groups through the Python forms, files and the CLI ----

METRICS = ["rsp@5", "reo@5", "awrf@5", "miscalibration@5", "exposure@5[group=g1]", "coverage@5"]


def _groups() -> pd.DataFrame:
    rng = np.random.default_rng(20)
    rows = {(f"i{j}", f"g{int(rng.integers(0, 3))}") for j in range(25) for _ in range(2)}
    return pd.DataFrame(sorted(rows), columns=["item", "group"])


def _outcome(res: receval.Result) -> tuple[dict[str, float], pd.DataFrame, pd.DataFrame]:
    return dict(res.summary), res.per_user, res.item_groups


def _python(d: dict[str, Any], groups: Any, tmp: Path) -> Any:
    return _outcome(
        receval.evaluate(
            d["recs"],
            d["truth"],
            METRICS,
            train=d["train"],
            catalog=d["catalog"],
            item_groups=groups,
        )
    )


def _door_pandas(d: dict[str, Any], tmp: Path) -> Any:
    return _python(d, _groups(), tmp)


def _door_mapping(d: dict[str, Any], tmp: Path) -> Any:
    g = _groups()
    return _python(d, {i: list(s["group"]) for i, s in g.groupby("item")}, tmp)


def _door_files(ext: str) -> Any:
    def door(d: dict[str, Any], tmp: Path) -> Any:
        p = _write({**d, "groups": _groups()}, tmp, ext)
        return _python({k: p[k] for k in ("recs", "truth", "train", "catalog")}, p["groups"], tmp)

    door.__name__ = f"files_{ext}"
    return door


def _door_streamed(d: dict[str, Any], tmp: Path) -> Any:
    p = _write({**d, "groups": _groups()}, tmp, "parquet")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(stream, "CHUNK_ROWS", 5)
        return _python({k: p[k] for k in ("recs", "truth", "train", "catalog")}, p["groups"], tmp)


def _door_cli(ext: str) -> Any:
    def door(d: dict[str, Any], tmp: Path) -> Any:
        p = _write({**d, "groups": _groups()}, tmp, ext)
        out = tmp / "per_user.csv"
        args = [sys.executable, "-m", "receval", "evaluate", str(p["recs"]), str(p["truth"])]
        for m in METRICS:
            args += ["-m", m]
        args += ["--train", str(p["train"]), "--catalog", str(p["catalog"])]
        args += ["--item-groups", str(p["groups"]), "--per-user", str(out), "--json", "-q"]
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        summary = {k: math.nan if v is None else v for k, v in found["metrics"].items()}
        frame = pd.read_csv(out, dtype={"user": str}).set_index("user")
        table = pd.DataFrame(found["item_groups"]).set_index(["grouping", "group"])
        return summary, frame, table.astype(float)

    door.__name__ = f"cli_{ext}"
    return door


DOORS = [
    _door_mapping,
    _door_files("csv"),
    _door_files("parquet"),
    _door_streamed,
    _door_cli("csv"),
    _door_cli("parquet"),
]


@pytest.mark.parametrize("door", DOORS, ids=lambda f: f.__name__.strip("_"))
def test_every_door_gives_the_same_item_group_numbers(door: Any, tmp_path: Path) -> None:
    want_summary, want_users, want_table = _door_pandas(_data(), tmp_path)
    summary, users, table = door(_data(), tmp_path)
    assert summary.keys() == want_summary.keys()
    for m, v in want_summary.items():
        assert summary[m] == v or (math.isnan(v) and math.isnan(summary[m])), m
    for m in want_users:
        a = want_users[m].to_numpy()
        b = users[m].to_numpy()
        assert ((a == b) | (np.isnan(a) & np.isnan(b))).all(), m
    np.testing.assert_array_equal(table.to_numpy(float), want_table.to_numpy(float))
    assert list(table.index) == list(want_table.index)


def test_compare_and_report_take_item_and_user_groups_on_the_command_line(
    tmp_path: Path,
) -> None:
    """`receval compare` and `receval report` with --item-groups and
    --user-groups: the numbers are those of the Python calls."""
    pd.DataFrame(
        [(u, i, r) for u, items in RECS.items() for r, i in enumerate(items, 1)],
        columns=["user", "item", "rank"],
    ).to_csv(tmp_path / "a.csv", index=False)
    other = {1: [13, 14], 2: [10, 11], 3: [11, 12]}
    pd.DataFrame(
        [(u, i, r) for u, items in other.items() for r, i in enumerate(items, 1)],
        columns=["user", "item", "rank"],
    ).to_csv(tmp_path / "b.csv", index=False)
    pd.DataFrame(
        [(u, i) for u, its in TRUTH.items() for i in its], columns=["user", "item"]
    ).to_csv(tmp_path / "truth.csv", index=False)
    pd.DataFrame(
        [(u, i) for u, its in TRAIN.items() for i in its], columns=["user", "item"]
    ).to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame(
        [(i, g) for i, gs in GROUPS.items() for g in ([gs] if isinstance(gs, str) else gs)],
        columns=["item", "genre"],
    ).to_csv(tmp_path / "groups.csv", index=False)
    pd.DataFrame({"user": [1, 2, 3], "seg": ["x", "x", "y"]}).to_csv(
        tmp_path / "segments.csv", index=False
    )
    common = ["-m", "awrf@2", "-m", "rsp@2", "--train", "train.csv", "--item-groups", "groups.csv"]
    common += ["--user-groups", "segments.csv", "--n-resamples", "200"]

    def receval_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "receval", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    done = receval_cli("compare", "truth.csv", "a.csv", "b.csv", *common, "-o", "json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    want = receval.compare(
        {"a": RECS, "b": other},
        TRUTH,
        ["awrf@2", "rsp@2"],
        train=TRAIN,
        item_groups=GROUPS,
        user_groups={1: "x", 2: "x", 3: "y"},
        n_resamples=200,
    )
    for s in ("a", "b"):
        for m in ("awrf@2", "rsp@2"):
            assert found["metrics"][m]["systems"][s]["mean"] == want.table.loc[(m, s), "mean"]
        table = found["evaluations"][s]["item_groups"]
        assert [r["group"] for r in table] == ["pop", "tail"]
        assert [r["exposure@2"] for r in table] == want.results[s].item_groups[
            "exposure@2"
        ].tolist()
    assert [(g["grouping"], g["group"]) for g in found["by_group"]] == [("seg", "x"), ("seg", "y")]
    text = receval_cli("compare", "truth.csv", "a.csv", "b.csv", *common)
    assert text.returncode == 0 and "seg = x (2 users):" in text.stdout, text.stderr
    rep = receval_cli("report", "truth.csv", "a.csv", "b.csv", *common, "-q", "--out", "r.html")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "id='item-groups'" in html and "id='user-groups'" in html
