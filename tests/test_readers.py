"""The table of readers (receval.io.files.READERS): format detection from one
table, RecBole atomic files read through it, and UTF-8 byte-order marks
skipped by every text reader (plain, compressed, pipes)."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval.errors import InputError
from receval.io import spark_files as engine
from receval.io.files import READERS, format_by_suffix, format_of, read_file
from receval.io.interactions import detect_format, read_interactions, read_log
from tests import test_spark
from tests.test_every_door import _api, _data, _pandas, check_door

BOM = b"\xef\xbb\xbf"

spark = test_spark.spark  # the Spark session fixture of tests/test_spark.py

INTER = (
    "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    "1\t007\t5\t100\n"
    "1\t12\t3.5\t200\n"
    "u2\t7\t4\t150\n"
)


def _write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


def _through_fifo(tmp_path: Path, name: str, data: bytes, read: object) -> object:
    """``read(path)`` of a named pipe that a thread fills with ``data`` (read once)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)

    def fill() -> None:
        with open(fifo, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=fill)
    writer.start()
    try:
        return read(fifo)  # type: ignore[operator]
    finally:
        writer.join(timeout=30)


# -- 1. one table of readers ------------------------------------------------------------------


def test_every_format_is_one_row_of_the_table() -> None:
    assert list(READERS) == ["parquet", "recbole", "trec", "jsonl", "csv", "tsv"]
    suffixes = [s for r in READERS.values() for s in r.suffixes]
    assert len(suffixes) == len(set(suffixes)), "a suffix tells one format"
    for name, reader in READERS.items():
        assert reader.name == name and callable(reader.read)
        assert reader.ids in ("text", "typed", "as written")
        for suffix in reader.suffixes:
            assert format_by_suffix(f"data{suffix}") == name
            assert format_by_suffix(f"data{suffix}.gz") == name
    assert READERS["tsv"].sep == "\t" and READERS["recbole"].sep == "\t"
    assert READERS["csv"].ids == READERS["recbole"].ids == "text"
    assert READERS["parquet"].ids == READERS["jsonl"].ids == "typed"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("r.csv", "user,item\n1,2\n", "csv"),
        ("r.txt", "1 Q0 d1 1 0.5 run\n", "trec"),  # a run saved as text
        ("r.csv", "1 0 d1 1\n", "trec"),  # qrels saved as .csv (content wins)
        ("r.tsv", "user_id:token\titem_id:token\n1\t2\n", "recbole"),
        ("r.csv", "user_id:token,item_id:token\n1,2\n", "recbole"),
        ("r.dat", "1 Q0 d1 1 0.5 run\n", "trec"),  # unknown suffix: content
        ("pipe", '{"user": 1, "item": 2}\n', "jsonl"),  # no suffix at all: content
        ("pipe", "user;item\n1;2\n", "csv"),
        ("pipe", "user_id:token\titem_id:token\n1\t2\n", "recbole"),
        ("ml.inter", "user_id:token\titem_id:token\n1\t2\n", "recbole"),
        ("r.jsonl", '{"user": 1}\n', "jsonl"),
        ("r.txt", "q1 0 d1 1 0.5 run\n", "trec"),  # a run with 0 where Q0 goes
        ("r.txt", "q1 0 d3 x\nq1 0 d1 1\n", "trec"),  # qrels whose first grade is bad
        ("r.txt", "user item rank score x y\n1 2 1 0.5 a b\n", "csv"),  # a header: no rank
        ("r.txt", "user\titem\tscore\tx\n1\t2\t0.5\t1\n", "csv"),
    ],
)
def test_the_format_comes_from_the_table(name: str, content: str, expected: str) -> None:
    assert format_of(name, content.encode()) == expected


def test_an_unknown_suffix_names_every_format() -> None:
    with pytest.raises(InputError, match=r"unknown file type '\.xlsx'") as err:
        format_of("book.xlsx", b"PK\x03\x04")
    for label in (".csv", ".tsv", ".parquet", ".jsonl", "RecBole .inter", "TREC"):
        assert label in str(err.value)


def test_spark_tells_formats_by_the_same_table() -> None:
    assert engine.format_of("hdfs://nn/data/ml.inter") == "recbole"
    assert engine.format_of("s3://bucket/part.csv.bz2") == "csv"
    assert engine.format_of("runs.txt") == "csv"
    assert engine.format_of("folder/") == "parquet"  # part files Spark wrote
    assert engine.format_of("x.qrels", "csv") == "csv"  # given
    for name, reader in READERS.items():
        for suffix in reader.suffixes:
            assert engine.format_of(f"d{suffix}") == name


# -- 2. RecBole atomic files --------------------------------------------------------------------


def test_recbole_inter_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "ml.inter", INTER)
    table, info = read_file(path, role="truth")
    assert info.format == "recbole"
    assert info.columns == {"user": "user_id", "item": "item_id", "relevance": "rating"}
    assert table.column_names == ["user", "item", "relevance"]
    # token ids under the text rule, as CSV ids: "007" stays text, 1 and 7 are integers
    assert table.column("user").to_pylist() == ["1", "1", "u2"]
    assert table.column("item").to_pylist() == ["007", "12", "7"]
    assert table.column("relevance").to_pylist() == [5.0, 3.5, 4.0]
    log, _ = read_file(path, role="log")
    assert log.column_names == ["user", "item", "rating", "timestamp"]
    assert log.schema.field("timestamp").type == pa.float64()


def test_recbole_ids_match_csv_ids(tmp_path: Path) -> None:
    """The same ids read from a RecBole file and from a CSV file are equal."""
    inter = _write(tmp_path / "a.inter", INTER)
    csv = _write(
        tmp_path / "a.csv",
        INTER.replace(":token", "").replace(":float", "").replace("\t", ","),
    )
    a, _ = read_file(inter, role="truth")
    b, _ = read_file(csv, role="truth")
    assert a.column("user").to_pylist() == b.column("user").to_pylist()
    assert a.column("item").to_pylist() == b.column("item").to_pylist()


def test_recbole_item_and_user_files(tmp_path: Path) -> None:
    items = _write(
        tmp_path / "ml.item",
        "item_id:token\tgenre:token_seq\tyear:float\tclass:token\n7\tDrama Comedy\t1999\t3\n"
        "8\tHorror\t2001\t4\n",
    )
    table, info = read_file(items, role="items")
    assert info.format == "recbole"
    assert table.column_names == ["item", "genre", "year", "class"]
    assert table.column("genre").to_pylist() == ["Drama Comedy", "Horror"]
    assert table.column("year").to_pylist() == [1999.0, 2001.0]
    assert table.column("class").to_pylist() == [3, 4]  # a token: the text rule
    users = _write(tmp_path / "ml.user", "user_id:token\tage:float\tgender:token\n1\t20\tF\n")
    groups, _ = read_file(users, role="user_groups")
    assert groups.column_names == ["user", "age", "gender"]


def test_recbole_by_its_header_compressed_and_through_a_pipe(tmp_path: Path) -> None:
    want, _ = read_file(_write(tmp_path / "a.inter", INTER), role="truth")
    gz = _write(tmp_path / "log.tsv.gz", gzip.compress(INTER.encode()))
    got, info = read_file(gz, role="truth")
    assert info.format == "recbole" and got.equals(want)
    piped, info = _through_fifo(
        tmp_path, "pipe", INTER.encode(), lambda p: read_file(p, role="truth")
    )  # type: ignore[misc]
    assert info.format == "recbole" and piped.equals(want)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "user_id:token\titem_id:int\n1\t2\n",
            ["line 1", "field 2", "token, token_seq, float, float_seq", "'item_id:int'"],
        ),
        (
            "user_id:token\titem_id:token\trating:float\n1\t2\t5\n1\t3\tfive\n",
            ["line 3", "column rating", "expected a number", "'five'"],
        ),
        ("user_id:token\titem_id:token\n1\t2\n\t3\n", ["line 3", "missing user id"]),
        ("user_id:token\titem_id:token\n1\t2\n1\t2\t3\n", ["line 3", "expected 2 fields"]),
        ("user:token\tuser:float\n1\t2\n", ["line 1", "'user' is repeated"]),
    ],
)
def test_recbole_errors_name_the_file_and_line(tmp_path: Path, text: str, words: list) -> None:
    path = _write(tmp_path / "bad.inter", text)
    with pytest.raises(InputError) as err:
        read_file(path, role="truth")
    message = str(err.value)
    assert "bad.inter" in message
    for word in words:
        assert word in message, message


def test_recbole_door_gives_the_same_numbers(tmp_path: Path) -> None:
    """The every-door test's data as RecBole atomic files: the same numbers,
    bit for bit, as the pandas door (tests/test_every_door.py)."""
    d = _data()
    types = {"user": "token", "item": "token", "score": "float", "rating": "float"}
    paths = {}
    for name, frame in d.items():
        suffix = ".item" if name == "catalog" else ".inter"
        frame = frame.rename(columns={c: f"{c}_id" if c in ("user", "item") else c for c in frame})
        header = [f"{c}:{types[c.removesuffix('_id')]}" for c in frame.columns]
        frame.to_csv(tmp_path / f"{name}{suffix}", sep="\t", index=False, header=header)
        paths[name] = tmp_path / f"{name}{suffix}"
    got = _api(paths["recs"], paths["truth"], paths["train"], paths["catalog"])
    check_door(got, _pandas(d, tmp_path))


@pytest.mark.spark
def test_spark_reads_recbole_files(spark: Any, tmp_path: Path) -> None:
    """Spark's reader of the format of the same name: names without types,
    floats as doubles, tokens as text."""
    path = _write(tmp_path / "ml.inter", INTER)
    df = engine.read(spark, str(path), "truth")
    assert df.columns == ["user_id", "item_id", "rating", "timestamp"]
    rows = [tuple(r) for r in df.collect()]
    assert rows[0] == ("1", "007", 5.0, 100.0)


# -- 3. UTF-8 byte-order marks ----------------------------------------------------------------

CSV = "user_id,item_id,rating\n1,10,5\n2,11,4\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("t.csv", CSV),
        ("t.tsv", CSV.replace(",", "\t")),
        ("t.txt", CSV.replace(",", ";")),
        (
            "t.jsonl",
            '{"user_id": 1, "item_id": 10, "rating": 5}\n'
            '{"user_id": 2, "item_id": 11, "rating": 4}\n',
        ),
        ("t.qrels", "1 0 10 5\n2 0 11 4\n"),
        ("t.inter", "user_id:token\titem_id:token\trating:float\n1\t10\t5\n2\t11\t4\n"),
    ],
)
def test_a_byte_order_mark_is_not_content(tmp_path: Path, name: str, text: str) -> None:
    """Excel's "CSV UTF-8" starts with a BOM: every text reader skips it, in
    a plain file, gzip, zstd and a pipe (the header is user_id, not \\ufeffuser_id)."""
    want, _ = read_file(_write(tmp_path / name, text), role="truth")
    data = BOM + text.encode()
    for path in (
        _write(tmp_path / f"bom-{name}", data),
        _write(tmp_path / f"bom-{name}.gz", gzip.compress(data)),
        _write(tmp_path / f"bom-{name}.zst", _zstd(data)),
    ):
        got, info = read_file(path, role="truth")
        assert got.to_pydict() == want.to_pydict(), path
        assert "\ufeff" not in "".join(info.columns.values())
    piped, _ = _through_fifo(tmp_path, f"pipe-{name}", data, lambda p: read_file(p, role="truth"))  # type: ignore[misc]
    assert piped.to_pydict() == want.to_pydict()


def test_a_byte_order_mark_in_the_evaluation(tmp_path: Path) -> None:
    recs = _write(tmp_path / "recs.csv", BOM + b"user_id,item_id,score\n1,10,0.9\n1,12,0.5\n")
    truth = _write(tmp_path / "truth.csv", BOM + b"user_id,item_id,rating\n1,10,5\n1,11,4\n")
    res = receval.evaluate(recs, truth, "precision@2")
    assert res.summary["precision@2"] == 0.5


def test_a_byte_order_mark_alone_is_no_data(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="only a byte-order mark"):
        read_file(_write(tmp_path / "bom.csv", BOM), role="truth")


@pytest.mark.parametrize(
    ("name", "text", "fmt"),
    [
        ("u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n", "movielens-udata"),
        ("ratings.dat", "196::242::3::881250949\n186::302::3::891717742\n", "movielens-dat"),
        (
            "ratings.csv",
            "userId,movieId,rating,timestamp\n196,242,3,881250949\n186,302,3,891717742\n",
            "movielens-csv",
        ),
        (
            "log.csv",
            "user_id,item_id,rating,timestamp\n196,242,3,881250949\n186,302,3,891717742\n",
            "csv",
        ),
        (
            "log.inter",
            "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
            "196\t242\t3\t881250949\n186\t302\t3\t891717742\n",
            "recbole",
        ),
    ],
)
def test_interaction_logs_skip_a_byte_order_mark(
    tmp_path: Path, name: str, text: str, fmt: str
) -> None:
    plain = _write(tmp_path / name, text)
    want = read_interactions(plain)
    assert list(want.columns) == ["user", "item", "rating", "timestamp"]
    assert want["user"].tolist() == [196, 186]
    (tmp_path / "bom").mkdir()
    bom = _write(tmp_path / "bom" / name, BOM + text.encode())
    assert detect_format(bom) == fmt
    pd.testing.assert_frame_equal(read_interactions(bom), want, check_dtype=False)
    piped = _through_fifo(tmp_path, "pipe", BOM + text.encode(), read_interactions)
    pd.testing.assert_frame_equal(piped, want, check_dtype=False)  # type: ignore[arg-type]


def test_read_log_keeps_every_column_under_its_name(tmp_path: Path) -> None:
    path = _write(tmp_path / "log.csv", BOM + b"user_id,item_id,when,note\n1,007,3,a\n2,7,4,b\n")
    log = read_log(path)
    assert list(log.columns) == ["user_id", "item_id", "when", "note"]
    assert log["item_id"].tolist() == ["007", "7"]  # the text rule: "007" stays text
    qrels = read_log(_write(tmp_path / "t.qrels", "q1 0 d1 2\nq2 0 d2 1\n"))
    assert list(qrels.columns) == ["qid", "docno", "rel"]


def test_trec_files_told_by_their_shape_name_their_line(tmp_path: Path) -> None:
    """A run with 0 where Q0 goes reads as a run (trec_eval reads neither);
    qrels whose first grade is bad are still qrels: the error names that
    line, not a missing user column of a one-column CSV."""
    run = tmp_path / "run.txt"
    run.write_text("q1 0 d1 1 0.5 t\nq1 0 d2 2 0.4 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d2 1\n")
    assert receval.evaluate(run, qrels, "rr").summary == {"rr": 0.5}
    qrels.write_text("q1 0 d3 x\nq1 0 d1 1\n")
    with pytest.raises(InputError) as got:
        receval.evaluate(run, qrels, "rr")
    assert got.value.line == 1 and "relevance must be a number; found 'x'" in str(got.value)


def test_a_role_column_named_twice_is_refused_by_every_door(tmp_path: Path) -> None:
    """Two columns named alike where one is read (the score, the item):
    which one is meant cannot be told; pandas, Arrow, CSV, Parquet and the
    command line say so alike (pandas had raised KeyError, Arrow a schema
    error, a CSV silently took the first). Unrelated twins are left alone."""
    import pyarrow.parquet as pq

    names = ["user", "item", "score", "score"]
    arrow = pa.table([[1], [2], [0.5], [0.4]], names=names)
    csv, parquet = tmp_path / "r.csv", tmp_path / "r.parquet"
    csv.write_text("user,item,score,score\n1,2,0.5,0.4\n")
    pq.write_table(arrow, parquet)
    said = "the column 'score' appears 2 times (columns 3 and 4)"
    for form in (pd.DataFrame([[1, 2, 0.5, 0.4]], columns=names), arrow, csv, parquet):
        with pytest.raises(InputError, match=re.escape(said)):
            receval.evaluate(form, {1: [2]}, "rr")
    twice = pd.DataFrame([[1, 2, 3, 0.4]], columns=["user", "item", "item", "score"])
    with pytest.raises(InputError, match=re.escape("'item' appears 2 times (columns 2 and 3)")):
        receval.evaluate(twice, {1: [2]}, "rr")
    done = subprocess.run(
        [sys.executable, "-m", "receval", "evaluate", str(parquet), str(csv), "-m", "rr"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
    other = pd.DataFrame([[1, 2, 0.5, "a", "b"]], columns=["user", "item", "score", "x", "x"])
    assert receval.evaluate(other, {1: [2]}, "rr").summary == {"rr": 1.0}


def test_a_csv_of_bare_carriage_returns_is_read_as_its_lines(tmp_path: Path) -> None:
    """Old Mac line endings (a bare CR): read as the same file with LF (the
    header had raised Python's csv.Error, an internal error in the shell);
    an error names the line as counted there."""
    lf, cr = tmp_path / "lf.csv", tmp_path / "cr.csv"
    text = "user,item,score\nu1,a,0.9\nu1,b,0.5\nu2,c,0.7\n"
    lf.write_text(text)
    cr.write_bytes(text.replace("\n", "\r").encode())
    truth = {"u1": ["b"], "u2": ["c"]}
    assert receval.evaluate(cr, truth, "rr").summary == receval.evaluate(lf, truth, "rr").summary
    cr.write_bytes(text.replace("0.5", "x").replace("\n", "\r").encode())
    with pytest.raises(InputError, match=r"cr\.csv, line 3, user 'u1', item 'b'"):
        receval.evaluate(cr, truth, "rr")


def test_numbers_with_digit_separators_or_other_scripts_are_refused_by_every_door(
    tmp_path: Path,
) -> None:
    """Python's float reads "1_0" as 10 and "١" (Arabic-Indic one) as 1;
    Arrow's CSV and RecBole's readers refuse them: every door now refuses
    them, naming the line (a CSV, JSON Lines, TREC qrels, a mapping)."""
    for text in ("1_0", "\u0661", "\uff12"):
        csv, jsonl, qrels = tmp_path / "g.csv", tmp_path / "g.jsonl", tmp_path / "g.qrels"
        csv.write_text(f"user,item,rel\nu,a,{text}\nu,b,1\n", encoding="utf-8")
        rows = [
            f'{{"user": "u", "item": "a", "rel": "{text}"}}',
            '{"user": "u", "item": "b", "rel": 1}',
        ]
        jsonl.write_text("\n".join(rows) + "\n", encoding="utf-8")
        qrels.write_text(f"u 0 a {text}\nu 0 b 1\n", encoding="utf-8")
        for path, where in ((csv, "line 2"), (jsonl, "line 1"), (qrels, "line 1")):
            with pytest.raises(InputError, match=f"{where}.*found '{text}'"):
                receval.evaluate({"u": ["b", "a"]}, path, "ndcg@2")
        with pytest.raises(InputError, match=f"score must be a finite number; found '{text}'"):
            receval.evaluate({"u": {"a": text, "b": "2"}}, {"u": ["a"]}, "ndcg@2")
    assert receval.evaluate({"u": {"a": "2.5", "b": "+2"}}, {"u": ["a"]}, "ndcg@2").summary == {
        "ndcg@2": 1.0
    }


def test_a_polars_column_arrow_cannot_hold_is_named() -> None:
    """A polars Int128 id column: Arrow has no such type (polars' to_arrow
    raised ArrowInvalid, an internal error); named, with what to do. The
    same type in a column not read is left alone."""
    pl = pytest.importorskip("polars")
    wide = pl.Series([2], dtype=pl.Int128)
    with pytest.raises(InputError, match=r"'item': Int128.*cast it to Int64, Float64 or String"):
        receval.evaluate(pl.DataFrame({"user": [1], "item": wide, "rank": [1]}), {1: [2]}, "rr")
    other = pl.DataFrame({"user": [1], "item": [2], "rank": [1], "x": wide})
    assert receval.evaluate(other, {1: [2]}, "rr").summary == {"rr": 1.0}


def test_a_value_that_is_no_number_is_shown_as_the_file_writes_it(tmp_path: Path) -> None:
    """A date in a CSV's score column, a JSON true among grades: shown as
    the file holds them ('2024-01-01', 'true'), not as Python writes the
    converted value (np.datetime64('2024-01-01'), 'True')."""
    csv, jsonl = tmp_path / "d.csv", tmp_path / "b.jsonl"
    csv.write_text("user,item,score\nu,a,2024-01-01\nu,b,2024-01-02\n")
    jsonl.write_text(
        '{"user": "u", "item": "a", "rel": true}\n{"user": "u", "item": "b", "rel": "x"}\n'
    )
    with pytest.raises(
        InputError,
        match=r"line 2, user 'u', item 'a': score must be a finite number; found '2024-01-01'$",
    ):
        receval.evaluate(csv, {"u": ["a"]}, "rr")
    with pytest.raises(InputError, match=r"line 1, user 'u', item 'a': .* found 'true'$"):
        receval.evaluate({"u": ["a", "b"]}, jsonl, "rr")
