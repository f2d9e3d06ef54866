"""Issue #30, one way in: ``check`` and ``remove_seen`` take paths as
``evaluate`` does (opened by :func:`receval.io.inputs.opened`, the same
findings and rows as for the table read from the file, errors naming the
file and its line), and the command line says what every input file it
reads was read as (``PATH: using column uid as user``, ``PATH: item lists
expanded ...``), ``--train``, ``--catalog`` and the other side inputs too,
once per file; the library itself prints nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.io.inputs import FileInput, files_read
from receval.workflow.checks import remove_seen

TRAIN = pd.DataFrame(
    {"uid": [1, 1, 2, 2, 2, 3], "iid": [10, 11, 10, 10, 12, 13], "ts": [5, 6, 7, 8, 9, 2]}
)
TEST = pd.DataFrame({"uid": [1, 2, 3, 4], "iid": [12, 11, 10, 14], "ts": [4, 10, 3, 9]})
RECS = pd.DataFrame(
    {
        "uid": [1, 1, 1, 2, 2, 3],
        "iid": [10, 12, 14, 11, 12, 10],
        "score": [0.9, 0.8, 0.8, 0.5, 0.4, 0.3],
    }
)
RANKED = pd.DataFrame(
    {"user_id": [1, 1, 1, 2, 2], "item_id": [11, 10, 12, 12, 10], "rank": [1, 2, 3, 1, 2]}
)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- check and remove_seen take paths ----------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_check_of_files_is_check_of_their_tables(tmp_path: Path, suffix: str) -> None:
    paths = [
        _write(f, tmp_path / f"{n}{suffix}")
        for n, f in (("train", TRAIN), ("test", TEST), ("recs", RECS))
    ]
    kw = {"k": 3, "chronological": True, "timestamp_col": "ts"}
    want = receval.check(TRAIN, TEST, RECS, **kw)
    got = receval.check(*paths, **kw)
    assert got.to_dict() == want.to_dict()
    assert got["seen_in_train"].count == 2 and got["test_before_train"].count == 1
    assert got["duplicate_rows_train"].count == 1 and got["score_ties"].count == 2
    # any one of them a file, the others tables; by keyword; a FileInput
    mixed = receval.check(train=paths[0], test=TEST, recs=FileInput(paths[2]), **kw)
    assert mixed.to_dict() == want.to_dict()
    assert (
        receval.check(recs=str(paths[2]), k=3).to_dict() == receval.check(recs=RECS, k=3).to_dict()
    )


def test_check_reads_a_file_with_the_column_options(tmp_path: Path) -> None:
    frame = RECS.rename(columns={"uid": "who", "iid": "what", "score": "s"})
    path = _write(frame, tmp_path / "recs.tsv")
    path.write_text(frame.to_csv(sep="\t", index=False))
    named = {"user_col": "who", "item_col": "what", "score_col": "s"}
    want = receval.check(recs=frame, k=3, **named)
    assert receval.check(recs=FileInput(path, format="tsv"), k=3, **named).to_dict() == (
        want.to_dict()
    )
    assert want["score_ties"].count == 2


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_remove_seen_of_files_is_remove_seen_of_their_tables(tmp_path: Path, suffix: str) -> None:
    recs = _write(RECS, tmp_path / f"recs{suffix}")
    train = _write(TRAIN, tmp_path / f"train{suffix}")
    want = remove_seen(RECS, TRAIN)
    got = remove_seen(recs, train)
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs == want.attrs == {"removed": 2}
    assert list(got.columns) == ["uid", "iid", "score"]  # the file's own names
    pd.testing.assert_frame_equal(remove_seen(str(recs), TRAIN), want)
    pd.testing.assert_frame_equal(remove_seen(RECS, FileInput(train)), want)


def test_remove_seen_of_a_ranked_file_renumbers_its_ranks(tmp_path: Path) -> None:
    recs = _write(RANKED, tmp_path / "ranked.csv")
    seen = pd.DataFrame({"user": [1, 2], "item": [10, 12]})
    train = _write(seen, tmp_path / "seen.parquet")
    got = remove_seen(recs, train)
    pd.testing.assert_frame_equal(got, remove_seen(RANKED, seen))
    assert got.values.tolist() == [[1, 11, 1], [1, 12, 2], [2, 10, 1]]
    assert got.attrs["removed"] == 2


def test_remove_seen_keeps_a_score_column_named_by_score_col(tmp_path: Path) -> None:
    frame = RECS.rename(columns={"score": "s"})
    recs = _write(frame, tmp_path / "recs.csv")
    got = remove_seen(recs, TRAIN, score_col="s")
    pd.testing.assert_frame_equal(got, remove_seen(frame, TRAIN), check_like=True)
    assert sorted(got.columns) == ["iid", "s", "uid"]


def test_remove_seen_of_a_list_file_expands_it(tmp_path: Path) -> None:
    lists = tmp_path / "lists.jsonl"
    lists.write_text('{"user": 1, "item": [10, 12, 14]}\n{"user": 2, "item": [12, 11]}\n')
    got = remove_seen(lists, TRAIN)
    assert got.values.tolist() == [[1, 12, 1], [1, 14, 2], [2, 11, 1]]


# -- an error in a file names the file and its line ---------------------------------------------


def test_an_error_in_a_file_names_the_file_and_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("uid,iid\n1,10\n,11\n")
    recs = _write(RECS, tmp_path / "recs.csv")
    for call in (
        lambda: receval.check(train=bad),
        lambda: receval.check(train=TRAIN, test=bad),
        lambda: receval.check(recs=bad),
        lambda: remove_seen(recs, bad),
        lambda: remove_seen(bad, TRAIN),
    ):
        with pytest.raises(receval.InputError) as caught:
            call()
        assert caught.value.source == str(bad) and caught.value.line == 3, caught.value
        assert str(caught.value).startswith(f"{bad}, line 3: missing user id")


def test_an_error_about_a_file_names_the_file(tmp_path: Path) -> None:
    train = _write(TRAIN.drop(columns="ts"), tmp_path / "train.csv")
    with pytest.raises(receval.InputError, match="train has no timestamp column 'ts'") as caught:
        receval.check(train, TEST, chronological=True, timestamp_col="ts")
    assert caught.value.source == str(train)
    # a table still names its role
    with pytest.raises(receval.InputError) as caught:
        receval.check(TRAIN.drop(columns="ts"), TEST, chronological=True, timestamp_col="ts")
    assert caught.value.source == "train"


# -- the library says nothing; files_read tells who asks ---------------------------------------


def test_the_library_prints_no_note_about_its_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(RECS, tmp_path / "recs.csv")
    truth = _write(TEST, tmp_path / "test.csv")
    train = _write(TRAIN, tmp_path / "train.csv")
    res = receval.evaluate(recs, truth, ["ndcg@3", "novelty@3"], train=train)
    receval.check(train, truth, recs)
    remove_seen(recs, train)
    assert capsys.readouterr().err == ""
    # Result.notes holds no reader's note, as for the recommendations and truth before
    assert not [n for n in res.notes if "using column" in n]
    seen: list[object] = []
    with files_read(seen.append):
        receval.evaluate(recs, truth, ["ndcg@3", "novelty@3"], train=train)
    read = {info.path: info.messages for info in seen}  # type: ignore[attr-defined]
    assert read[str(train)] == ["using column uid as user", "using column iid as item"]
    assert set(read) == {str(recs), str(truth), str(train)}
    receval.evaluate(recs, truth, ["ndcg@3"], train=train)  # the block is over
    assert len(seen) == 3


# -- the command line notes every input file, once --------------------------------------------


def _notes(err: str, path: Path) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"{path}: ")]


def test_evaluate_notes_the_columns_of_the_train_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(RECS.rename(columns={"uid": "user", "iid": "item"}), tmp_path / "recs.csv")
    truth = _write(TEST.rename(columns={"uid": "user", "iid": "item"}), tmp_path / "test.csv")
    train = _write(TRAIN, tmp_path / "train.csv")
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "novelty@3", "--train", train)
    assert code == 0, err
    assert _notes(err, train) == [
        f"{train}: using column uid as user",
        f"{train}: using column iid as item",
    ]
    assert not _notes(err, recs) and not _notes(err, truth)  # their columns are the roles
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "novelty@3", "--train", train, "-q")
    assert code == 0 and err == ""


def test_evaluate_notes_every_side_input_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(RECS, tmp_path / "recs.csv")
    truth = _write(TEST, tmp_path / "test.csv")
    train = _write(TRAIN, tmp_path / "train.parquet")
    items = pd.DataFrame({"item_id": [10, 11, 12, 13, 14], "genre": list("aabbc")})
    catalog = _write(items[["item_id"]], tmp_path / "catalog.csv")
    popular = _write(items[["item_id"]].head(2), tmp_path / "popular.parquet")
    groups = _write(items, tmp_path / "groups.csv")
    users = _write(pd.DataFrame({"user_id": [1, 2, 3], "segment": list("xxy")}), tmp_path / "u.csv")
    code, out, err = run(
        capsys,
        "evaluate",
        recs,
        truth,
        *("-m", "novelty@3", "-m", "coverage@3", "-m", "exposure@3[group=a]"),
        *("--train", train, "--catalog", catalog, "--popular", popular),
        *("--item-groups", groups, "--user-groups", users, "--json"),
    )
    assert code == 0, err
    assert json.loads(out)["metrics"] and json.loads(out)["groups"]
    assert _notes(err, users) == [f"{users}: using column user_id as user"], err
    for path in (catalog, popular, groups):
        assert _notes(err, path) == [f"{path}: using column item_id as item"], err
    for path in (recs, truth, train):
        assert _notes(err, path) == [
            f"{path}: using column uid as user",
            f"{path}: using column iid as item",
        ], err


def test_an_item_list_file_is_said_expanded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lists = tmp_path / "lists.jsonl"
    lists.write_text('{"user": 1, "item": [10, 12, 14]}\n{"user": 2, "item": [12, 11]}\n')
    truth = _write(TEST, tmp_path / "test.csv")
    code, _, err = run(capsys, "evaluate", lists, truth, "-m", "ndcg@3")
    assert code == 0, err
    assert _notes(err, lists) == [
        f"{lists}: item lists expanded to one row per item, rank = position in the list"
    ]
    assert _notes(err, truth) == [
        f"{truth}: using column uid as user",
        f"{truth}: using column iid as item",
    ]


def test_each_file_is_noted_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Opened twice (by --remove-seen, by each run of compare), said once."""
    recs = _write(RECS, tmp_path / "recs.csv")
    other = _write(RECS.iloc[::-1], tmp_path / "other.csv")
    truth = _write(TEST, tmp_path / "test.csv")
    train = _write(TRAIN, tmp_path / "train.csv")
    metrics = ("-m", "novelty@3", "-m", "ndcg@3")
    code, _, err = run(capsys, "evaluate", recs, truth, *metrics, "--train", train, "--remove-seen")
    assert code == 0, err
    for path in (recs, truth, train):
        assert _notes(err, path)[:2] == [
            f"{path}: using column uid as user",
            f"{path}: using column iid as item",
        ], err
    assert _notes(err, recs)[2:] == [f"{recs}: 2 recommendation rows seen in --train removed"]
    for command in ("compare", "report"):
        out_file = ("--out", tmp_path / "r.html") if command == "report" else ()
        code, _, err = run(
            capsys, command, truth, recs, other, *metrics, "--train", train, *out_file
        )
        assert code == 0, err
        for path in (recs, other, truth, train):
            assert _notes(err, path) == [
                f"{path}: using column uid as user",
                f"{path}: using column iid as item",
            ], err


def test_no_note_when_the_command_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    recs = _write(RECS, tmp_path / "recs.csv")
    truth = _write(TEST, tmp_path / "test.csv")
    train = tmp_path / "train.csv"
    train.write_text("uid,iid\n1,10\n,11\n")
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "novelty@3", "--train", train)
    assert code == 2
    assert err.splitlines() == [f"error: {train}, line 3: missing user id (an empty field)"]


def test_check_on_the_command_line_opens_the_recommendations_as_evaluate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(RECS, tmp_path / "recs.parquet")
    train = _write(TRAIN, tmp_path / "train.csv")
    code, out, err = run(capsys, "check", "--recs", recs, "--train", train, "-k", "3")
    assert code == 0, err
    want = receval.check(TRAIN, None, RECS, k=3).render(cli=True)
    assert out.strip() == want
    bad = tmp_path / "bad.csv"
    bad.write_text("uid,iid,score\n1,10,0.5\n2,,0.4\n")
    code, _, err = run(capsys, "check", "--recs", bad)
    assert code == 2 and f"{bad}, line 3, user 2: missing item id" in err, err
