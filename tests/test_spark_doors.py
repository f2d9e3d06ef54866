"""``receval evaluate --engine spark`` from the shell (issue #31, points 5
and 6, the Spark parts): Ctrl-C is one line; the command works run by its
absolute path with no venv on PATH (cron, pipx); ``--per-user`` writes ids
of every kind (integers, digit strings, text; from CSV and Parquet) and a
write that fails leaves no folder; ``--master`` that is no Spark master is
one line. Real Spark, real subprocesses of the ``receval`` command.

Run with ``pytest -m spark`` (``pip install -e ".[spark]"``, Java 17).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import receval
from receval.errors import OptionError, OutputError
from tests.pipes import default_signals

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

RECEVAL = Path(sys.executable).parent / "receval"  # the console script of this environment
METRICS = ["ndcg@10", "recall@5"]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """The user's session (as a host's): receval must use it as it is."""
    pytest.importorskip("pyspark")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("receval-doors")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()


def _frames(form: str, users: int = 30) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recommendations and truth with user and item ids in ``form``."""
    rng = np.random.default_rng(31)
    uid = {"int": int, "digits": str, "text": lambda i: f"u{i}"}[form]
    iid = {"int": int, "digits": str, "text": lambda j: f"i{j}"}[form]
    recs = [
        (uid(u), iid(int(j)), r + 1)
        for u in range(1, users + 1)
        for r, j in enumerate(rng.choice(40, 8, replace=False))
    ]
    truth = [
        (uid(u), iid(int(j))) for u in range(3, users + 3) for j in rng.choice(40, 3, replace=False)
    ]
    return (
        pd.DataFrame(recs, columns=["user", "item", "rank"]),
        pd.DataFrame(truth, columns=["user", "item"]),
    )


def _files(tmp: Path, form: str, ext: str) -> tuple[Path, Path]:
    paths = []
    for name, frame in zip(("recs", "truth"), _frames(form), strict=True):
        path = tmp / f"{name}.{ext}"
        if ext == "csv":
            frame.to_csv(path, index=False)
        else:
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
        paths.append(path)
    return paths[0], paths[1]


def _written(folder: Path) -> pd.DataFrame:
    """A per-user folder written by Spark, read back (its user column as written)."""
    assert (folder / "_SUCCESS").exists(), sorted(p.name for p in folder.iterdir())
    if folder.suffix == ".csv":
        parts = sorted(folder.glob("part-*.csv"))
        return pd.concat([pd.read_csv(p, dtype={"user": str}) for p in parts], ignore_index=True)
    return pq.read_table(folder).to_pandas()


def _same_values(written: pd.DataFrame, expected: pd.DataFrame, exact: bool = True) -> None:
    """The per-user values of every user (bit for bit when ``exact``: not
    through CSV's text), users compared as text."""
    got = written.assign(user=written["user"].astype(str)).set_index("user").sort_index()
    want = expected.set_index(expected.index.astype(str)).sort_index()
    assert list(got.index) == list(want.index)
    for metric in METRICS:
        a, b = got[metric].to_numpy(dtype=float), want[metric].to_numpy(dtype=float)
        if exact:
            assert a.tobytes() == b.tobytes(), metric
        else:
            np.testing.assert_allclose(a, b, rtol=1e-15, atol=0, err_msg=metric)


# -- --per-user: ids of every kind, from CSV and Parquet ------------------------------------


@pytest.mark.parametrize(
    ("ext", "form", "out", "user_type"),
    [
        ("csv", "int", "per_user.csv", None),  # Spark reads int: was a Java getInt error
        ("csv", "int", "per_user.parquet", pa.int32()),
        ("csv", "text", "per_user.parquet", pa.string()),
        ("parquet", "int", "per_user.pq", pa.int64()),
        ("parquet", "digits", "per_user.csv", None),
        ("parquet", "text", "per_user.parquet", pa.string()),
    ],
)
def test_per_user_ids_of_every_kind(
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ext: str,
    form: str,
    out: str,
    user_type: pa.DataType | None,
) -> None:
    from receval.cli import main

    recs, truth = _files(tmp_path, form, ext)
    folder = tmp_path / out
    root = logging.getLogger()
    handlers, filters = list(root.handlers), list(root.filters)
    args = ["evaluate", "--engine", "spark", str(recs), str(truth), "--json", "-q"]
    for m in METRICS:
        args += ["-m", m]
    code = main([*args, "--per-user", str(folder)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    local = receval.evaluate(recs, truth, METRICS)
    assert json.loads(captured.out)["metrics"] == dict(local.summary)
    _same_values(_written(folder), local.per_user, exact=folder.suffix != ".csv")
    if user_type is not None:
        assert pq.read_table(folder).schema.field("user").type == user_type
    # a good guest: the user's session as it was, logging as it was
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None
    assert spark.range(3).count() == 3
    assert root.handlers == handlers and root.filters == filters
    assert logging.getLogger("py4j").propagate


def test_per_user_of_ratings_with_int_ids(spark: Any, tmp_path: Path) -> None:
    """evaluate_ratings' per-user values of a Spark CSV (int ids) collect."""
    path = tmp_path / "ratings.csv"
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "user": np.repeat(np.arange(1, 21), 4),
            "item": np.tile(np.arange(4), 20),
            "actual": rng.integers(1, 6, 80).astype(float),
            "predicted": rng.random(80) * 5,
        }
    )
    frame.to_csv(path, index=False)
    df = spark.read.csv(str(path), header=True, inferSchema=True)
    assert df.schema["user"].dataType.typeName() == "integer"
    res = receval.evaluate_ratings(df, ["rmse[per_user=true]"])
    local = receval.evaluate_ratings(frame, ["rmse[per_user=true]"])
    pd.testing.assert_frame_equal(res.per_user, local.per_user, check_exact=True)


def test_a_failed_write_leaves_no_folder(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from receval.io.spark_files import write_per_user

    column = F.col("id")
    df = spark.range(0, 200, numPartitions=4).select(
        F.when(column == 150, F.raise_error(F.lit("boom"))).otherwise(column).alias("user")
    )
    target = tmp_path / "per_user.parquet"
    with pytest.raises(OutputError) as failed:
        write_per_user(df, str(target))
    assert "boom" in str(failed.value) and "\n" not in str(failed.value)
    assert not target.exists()  # not an empty folder, nor part files without _SUCCESS
    taken = tmp_path / "taken.csv"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(OutputError, match="already exists"):
        write_per_user(spark.range(3), str(taken))
    assert (taken / "keep.txt").read_text() == "mine"  # someone else's folder: left alone


# -- --master ---------------------------------------------------------------------------------


def test_master_that_is_no_spark_url_is_one_line(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from receval.cli import main
    from receval.io.spark_files import command_session

    recs, truth = _files(tmp_path, "int", "csv")
    args = ["evaluate", "--engine", "spark", str(recs), str(truth), "-m", "ndcg@10"]
    code = main([*args, "--master", "bogus://x"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: --master bogus://x "), err
    assert "local[N]" in err and "spark://HOST:PORT" in err and "yarn" in err
    python = pytest.raises(OptionError, match=r"^master='bogus://x' is not allowed")
    with python, command_session(master="bogus://x"):  # in Python: the keyword
        pass
    for good in ("local", "local[4]", "local[*]", "spark://h1:7077,h2:7077", "yarn"):
        with command_session(master=good) as session:  # the user's session: used as it is
            assert session is spark


# -- the command in the shell: a real process --------------------------------------------------


def _bare_env(tmp: Path) -> dict[str, str]:
    """The environment of cron: no venv on PATH, no PYSPARK_PYTHON, no SPARK_HOME."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp)), "TMPDIR": str(tmp)}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    if shutil.which("java", path=env["PATH"]) is None:
        if "JAVA_HOME" not in os.environ:
            pytest.skip("no java in /usr/bin:/bin and no JAVA_HOME")
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    return env


def _logs_left(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("receval-spark-*"))


def test_run_by_absolute_path_without_path(spark: Any, tmp_path: Path) -> None:
    """`env -i PATH=/usr/bin:/bin /path/venv/bin/receval evaluate --engine spark`:
    Spark found without PATH, the workers run receval's own interpreter, the
    numbers of the in-process engine, and nothing on stderr (Spark's console
    is not the user's)."""
    if not RECEVAL.exists():
        pytest.skip(f"no console script at {RECEVAL}")
    recs, truth = _files(tmp_path, "int", "csv")
    folder = tmp_path / "per_user.csv"
    args = [str(RECEVAL), "evaluate", "--engine", "spark", str(recs), str(truth), "--json"]
    for m in METRICS:
        args += ["-m", m]
    args += ["--per-user", str(folder), "-q"]
    env = _bare_env(tmp_path)
    done = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""
    local = receval.evaluate(recs, truth, METRICS)
    assert json.loads(done.stdout)["metrics"] == dict(local.summary)
    _same_values(_written(folder), local.per_user, exact=False)
    assert _logs_left(tmp_path) == []
    # no Java: one line that says so, before any work
    env["JAVA_HOME"] = str(tmp_path / "no-java")
    done = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Spark could not start" in done.stderr, done.stderr
    assert "JAVA_HOME" in done.stderr and "Traceback" not in done.stderr
    assert _logs_left(tmp_path) == []


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            kids.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    return kids


def _descendants(pid: int) -> list[int]:
    kids, found, todo = _children(), [], [pid]
    while todo:
        for kid in kids.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_during_a_spark_job_is_one_line(spark: Any, tmp_path: Path) -> None:
    """Ctrl-C in the terminal (SIGINT to the whole process group) once Spark's
    Python workers run: exit 130, one line, Spark's Java process gone."""
    if not RECEVAL.exists():
        pytest.skip(f"no console script at {RECEVAL}")
    users, per = 300_000, 10  # a job of many seconds: still running when Ctrl-C comes
    user = np.repeat(np.arange(users), per)
    rank = np.tile(np.arange(1, per + 1), users)
    recs = pa.table({"user": user, "item": (user * 7 + rank * 13) % 50_000, "rank": rank})
    rng = np.random.default_rng(0)
    truth = pa.table({"user": np.arange(users), "item": rng.integers(0, 50_000, users)})
    pq.write_table(recs, tmp_path / "recs.parquet")
    pq.write_table(truth, tmp_path / "truth.parquet")
    args = [str(RECEVAL), "evaluate", "--engine", "spark", "recs.parquet", "truth.parquet"]
    args += ["-m", "ndcg@10", "-m", "recall@10", "-m", "mrr@10"]
    proc = subprocess.Popen(
        args,
        env=_bare_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a job of a shell
        preexec_fn=default_signals,  # Ctrl-C as a terminal sends it, whatever pytest ignores
    )
    try:
        deadline = time.monotonic() + 240
        workers: list[int] = []
        while proc.poll() is None and not workers and time.monotonic() < deadline:
            commands = [_command(p) for p in _descendants(proc.pid)]
            workers = [c for c in commands if "pyspark.daemon" in c or "pyspark.worker" in c]
            time.sleep(0.2)
        if not workers:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(
                f"Spark's Python workers never started ({proc.returncode}): {err[-2000:]!r}"
            )
        java = [p for p in _descendants(proc.pid) if _command(p).split(" ")[0].endswith("java")]
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
        signalled = time.monotonic()
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    text = err.decode()
    assert proc.returncode == 130, text[-3000:]
    lines = text.splitlines()
    assert len(lines) <= 2 and lines[0].startswith("interrupted"), text[-3000:]
    assert out == b""
    assert time.monotonic() - signalled < 60
    time.sleep(1)
    assert java and not any(_alive(p) for p in java)  # no Java process left behind
    assert _logs_left(tmp_path) == []


def test_a_metric_of_one_s_own_on_spark_passes_the_suite(spark: Any) -> None:
    """A metric registered through the public API (issue #34 point 1) runs on the
    Spark engine with no extra code: its declaration travels to the workers with
    the plan, and Spark DataFrames give the numbers of every other door."""
    import importlib

    import receval
    from receval.metrics import registry
    from receval.testing import check_metric

    sys.modules.pop("tests.plugin_metrics", None)
    plugin = importlib.import_module("tests.plugin_metrics")
    try:
        compared = check_metric(plugin.NAMES, seeds=[2], spark=spark)
        assert compared["Spark DataFrames"] == 1
    finally:
        for name in plugin.NAMES:
            if registry.lookup(name) is not None:
                receval.unregister_metric(name)
        sys.modules.pop("tests.plugin_metrics", None)


def _same_in_process(
    spark: Any, recs: Any, truth: Any, metrics: Any, fmt: str = "auto"
) -> receval.Result:
    """The Spark engine's result of files read by Spark's readers, against the
    in-process result of the same files."""
    from receval.io import spark_files
    from receval.io.inputs import FileInput

    want = receval.evaluate(FileInput(recs, fmt), FileInput(truth, fmt), metrics)
    got = receval.evaluate(
        spark_files.read(spark, str(recs), "recommendations", fmt),
        spark_files.read(spark, str(truth), "truth", fmt),
        metrics,
    )
    assert got.summary == want.summary or all(
        a == b or (a != a and b != b)
        for a, b in zip(got.summary.values(), want.summary.values(), strict=True)
    )
    assert got.counts["users"] == want.counts["users"]
    return got


def test_files_read_by_spark_as_in_process(spark: Any, tmp_path: Path) -> None:
    """An audit's cases: a TREC run is ordered by its score (trec_eval's reading,
    its rank column ignored), a CSV's ids keep their text (``007`` and ``7`` are
    two users, as in-process), a missing order column and inputs of no row are
    said as in-process."""
    run = tmp_path / "run.txt"
    run.write_text(
        "".join(f"q{q} Q0 d{i} {i} {i / 10} t\n" for q in (1, 2, 3) for i in (1, 2, 3, 4))
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d4 1\n" for q in (1, 2, 3)))
    got = _same_in_process(spark, run, qrels, "ndcg@10", "trec")
    assert got.summary["ndcg@10"] == 1.0
    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    recs.write_text("user,item,score\n007,1,0.9\n007,2,0.8\n7,3,0.9\n7,4,0.8\n")
    truth.write_text("user,item\n007,1\n7,4\n")
    assert _same_in_process(spark, recs, truth, "ndcg@10").counts["users"] == 2
    from receval.errors import InputError

    pairs = spark.createDataFrame([(1, 2)], "user long, item long")
    with pytest.raises(InputError, match="need a rank column"):
        receval.evaluate(pairs, pairs, "rr")
    empty_recs = spark.createDataFrame([], "user long, item long, score double")
    empty_truth = spark.createDataFrame([], "user long, item long")
    assert receval.evaluate(empty_recs, empty_truth, "rr").counts["users"] == 0
    both = receval.evaluate(
        spark.createDataFrame(
            [(1, True, 0.5), (1, False, 0.4)], "user long, item boolean, score double"
        ),
        spark.createDataFrame([(1, 1)], "user long, item long"),
        "rr",
    )
    assert both.summary == {"rr": 0.0}


def test_an_empty_id_and_decimal_ids_as_in_process(spark: Any) -> None:
    """An empty text is a missing id on Spark as in process (naming the user
    there); a decimal id is read by the text rule (7.00 is 7) on both."""
    from decimal import Decimal

    from receval.errors import InputError

    recs = pd.DataFrame({"user": ["u", "u"], "item": ["a", "b"], "rank": [1, 2]})
    truth = pd.DataFrame({"user": ["u", "u"], "item": ["a", ""]})
    with pytest.raises(InputError, match=r"missing item id \(an empty text\)"):
        receval.evaluate(recs, truth, "recall@2")
    with pytest.raises(InputError) as remote:
        receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), "recall@2")
    assert str(remote.value) == "truth, user 'u': missing item id (an empty text)"
    dec = spark.createDataFrame([(1, Decimal("7.00"), 1)], "user long, item decimal(5,2), rank int")
    ints = spark.createDataFrame([(1, 7)], "user long, item long")
    assert receval.evaluate(dec, ints, "rr").summary == {"rr": 1.0}


def test_a_missing_item_id_names_its_user(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A null item id: in-process the error names its row (a file's line) and
    the row's user; a Spark partition's rows are not the input's, so on Spark
    it names the user alone (it named nothing: "recommendations: missing item
    id"), recommendations and truth, a DataFrame and a file alike."""
    from receval.cli import main
    from receval.errors import InputError

    recs = pd.DataFrame(
        {"user": ["u1", "u1", "u2", "u3"], "item": ["1", None, "3", "4"], "rank": [1, 2, 1, 1]}
    )
    truth = pd.DataFrame({"user": ["u1", "u2", "u3"], "item": ["1", "3", None]})
    cases = [(recs, truth.fillna("4"), "recommendations", "u1", 1)]
    cases.append((recs.fillna("2"), truth, "truth", "u3", 2))
    for r, t, side, user, row in cases:
        with pytest.raises(InputError) as local:
            receval.evaluate(r, t, "ndcg@10")
        assert str(local.value) == f"{side}, row {row}, user {user!r}: missing item id"
        with pytest.raises(InputError) as remote:
            receval.evaluate(spark.createDataFrame(r), spark.createDataFrame(t), "ndcg@10")
        assert str(remote.value) == f"{side}, user {user!r}: missing item id"
        assert remote.value.user == user and remote.value.reason == local.value.reason
    ints = pd.DataFrame({"user": [1, 2, 2], "item": [1.0, 3.0, np.nan], "rank": [1, 1, 2]})
    with pytest.raises(InputError, match=r"^recommendations, user 2: missing item id$"):
        receval.evaluate(
            spark.createDataFrame(ints),
            spark.createDataFrame(pd.DataFrame({"user": [1, 2], "item": [1, 3]})),
            "ndcg@10",
        )
    recs_csv, truth_csv = tmp_path / "recs.csv", tmp_path / "truth.csv"
    recs_csv.write_text("user,item,rank\nu1,1,1\nu1,,2\nu2,3,1\n")
    truth_csv.write_text("user,item\nu1,1\nu2,3\n")
    argv = ["evaluate", str(recs_csv), str(truth_csv), "-m", "ndcg@10", "-q"]
    assert main(argv) == 2
    assert f"{recs_csv}, line 3, user 'u1': missing item id" in capsys.readouterr().err
    assert main([*argv, "--engine", "spark"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {recs_csv}, user 'u1': missing item id\n", err
