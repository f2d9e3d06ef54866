"""The command under a memory limit (``ulimit -v``): it succeeds, or it says
that it ran out of memory in one line and exits 2 (issue #31 points 8 and 9).

Never a traceback (a MemoryError or a library that cannot be mapped while the
command loads), an internal error ("can't start new thread"), an abort
(Arrow's allocators and its CSV parser end the process when an allocation
fails: exit 134), a crash (exit 139) or a hang (Arrow's reader waiting for a
thread that was never started). The real ``receval`` command of this
environment runs in ``bash -c 'ulimit -v N; exec receval ...'``; the limits
are chosen for where each failure came (Linux x86-64, CPython 3.11): while
Python and its libraries load (150-400 MB) and while a 1M-row CSV of text ids
is read and evaluated (350-400 MB; it needs ~430 MB of address space, give or take 20).
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pytest

from receval import _malloc
from receval import errors as receval_errors

RECEVAL = Path(sys.executable).with_name("receval")

limited = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("bash") is None or not RECEVAL.exists(),
    reason="ulimit -v and the installed receval command (Linux)",
)

#: the environment of a user who chose nothing: the command's own choices apply
ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("RECEVAL_MALLOC", "ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS")
}


def _under_limit(mib: int, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = " ".join(shlex.quote(a) for a in (str(RECEVAL), *argv))
    return subprocess.run(
        ["bash", "-c", f"ulimit -v {mib * 1024}; exec {command}"],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,  # a hang fails the test
    )


def _outcome(proc: subprocess.CompletedProcess[str]) -> str:
    """``ok``, or ``out of memory`` said in one line with exit 2; anything else fails."""
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if proc.returncode == 0:
        return "ok"
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith("error: out of memory"), proc.stderr[-3000:]
    assert "Parquet" in lines[0]  # what helps
    return "out of memory"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,000 rows: 20 users, 50 items each."""
    folder = tmp_path_factory.mktemp("small")
    rows = [f"u{u},i{(u * 7 + k * 13) % 300},{1 - k / 50}" for u in range(20) for k in range(50)]
    (folder / "recs.csv").write_text("user,item,score\n" + "\n".join(rows) + "\n")
    truth = [f"u{u},i{(u * 7 + k * 13) % 300}" for u in range(20) for k in (0, 5)]
    (folder / "truth.csv").write_text("user,item\n" + "\n".join(truth) + "\n")
    return folder


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1M recommendation rows with text ids (36 MB of CSV), 50 per user."""
    folder = tmp_path_factory.mktemp("large")
    users, per = 20_000, 50
    rng = np.random.default_rng(0)
    items = (rng.integers(0, 200_000, users)[:, None] + np.arange(per) * 3_997) % 200_000

    def ids(values: np.ndarray, prefix: str) -> pa.Array:
        text = pc.utf8_lpad(pc.cast(pa.array(values), pa.string()), width=7, padding="0")
        return pc.binary_join_element_wise(prefix, text, "")

    options = pcsv.WriteOptions(quoting_style="none")
    recs = {
        "user": ids(np.repeat(np.arange(users), per), "u"),
        "item": ids(items.ravel(), "i"),
        "score": rng.random(users * per),
    }
    pcsv.write_csv(pa.table(recs), folder / "recs.csv", options)
    truth = {
        "user": ids(np.repeat(np.arange(users), 2), "u"),
        "item": ids(items[:, :2].ravel(), "i"),
    }
    pcsv.write_csv(pa.table(truth), folder / "truth.csv", options)
    return folder


@limited
@pytest.mark.parametrize("mib", [150, 300, 400])
def test_starting_under_a_limit(small: Path, mib: int) -> None:
    """Before: a MemoryError traceback from the imports (300 MB), an internal
    error "can't start new thread" (350 MB), a hang in Arrow's CSV reader (400 MB)."""
    proc = _under_limit(mib, small, "evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "-q")
    outcome = _outcome(proc)
    if mib == 150:  # pandas and Arrow alone need more address space than that
        assert outcome == "out of memory"


@limited
@pytest.mark.parametrize("mib", [350, 380, 400])
def test_a_large_csv_under_a_limit(large: Path, mib: int) -> None:
    """The limit is met while the file is read or evaluated (the command alone
    starts under 350 MB). Before: Arrow's parser or allocator aborted (134) or
    a worker thread could not start. The job needs ~430 MB of address space,
    give or take 20 (an installed wheel has fitted in 400): at 350 it cannot
    finish, above it may (either outcome must be clean)."""
    argv = ["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "-m", "recall@10", "-q"]
    outcome = _outcome(_under_limit(mib, large, *argv))
    if mib == 350:
        assert outcome == "out of memory"


def test_what_counts_as_out_of_memory() -> None:
    """The failures a lack of memory takes, one line each; others are not."""
    try:
        try:
            raise ImportError("libopenblas.so: failed to map segment from shared object")
        except ImportError as inner:
            raise ImportError("Unable to import required dependency numpy") from inner
    except ImportError as wrapped:  # pandas' wording over NumPy's own failure
        assert _malloc.is_out_of_memory(wrapped)
    thread = pa.ArrowException("Failed to launch worker thread: Resource temporarily unavailable")
    assert _malloc.is_out_of_memory(thread)
    assert _malloc.is_out_of_memory(RuntimeError("can't start new thread"))
    assert _malloc.is_out_of_memory(OSError(errno.ENOMEM, "Cannot allocate memory"))
    assert _malloc.is_out_of_memory(pa.ArrowMemoryError("malloc of size 64 failed"))
    assert not _malloc.is_out_of_memory(OSError(errno.ENOENT, "No such file or directory"))
    assert not _malloc.is_out_of_memory(ImportError("No module named 'scipy'"))
    assert not _malloc.is_out_of_memory(RuntimeError("something else"))
    said = _malloc.out_of_memory(MemoryError("Unable to allocate 3.81 MiB for an array"))
    assert said.startswith("out of memory (an array of 3.81 MiB could not be allocated).")
    assert "thread" in _malloc.out_of_memory(RuntimeError("can't start new thread"))


def test_only_the_command_chooses_the_allocators() -> None:
    """``import receval`` and a library call leave Arrow's memory pool and the
    environment as they were; the command's start-up chooses the C library's
    pool and hands its children the user's environment back."""
    code = (
        "import os, sys, pyarrow as pa, receval\n"
        "default = pa.default_memory_pool().backend_name\n"
        "receval.evaluate({'u': ['a']}, {'u': ['a']}, ['ndcg@10'])\n"
        "assert pa.default_memory_pool().backend_name == default\n"
        "assert 'ARROW_DEFAULT_MEMORY_POOL' not in os.environ\n"
        "print(default)\n"
    )
    _python(code)
    command = (
        "import os, sys\n"
        "from receval import _malloc\n"
        "before = dict(os.environ)\n"
        "_malloc.own_process()\n"
        "import pyarrow as pa\n"
        "_malloc.settle()\n"
        "assert dict(os.environ) == before\n"
        "print(pa.default_memory_pool().backend_name)\n"
    )
    assert _python(command).strip() == "system"


def _python(code: str) -> str:
    """What a fresh Python running ``code`` prints (it must succeed)."""
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- the compact reader: the same ids, errors and chunks as reading the file whole ----------


def _table(path: Path, compact: bool) -> pa.Table:
    from receval.io.files import compact_ids, read_file

    if not compact:
        return read_file(path, role="recommendations")[0]
    with compact_ids():
        return read_file(path, role="recommendations")[0]


def _ids_kinds(tmp_path: Path) -> dict[str, Path]:
    """Files of 3 MB (several blocks of the reader) whose ids are integers,
    digit strings, text, or integers until text comes near the end."""
    n = 120_000
    users = np.repeat(np.arange(n // 40), 40)
    items = (np.arange(n) * 7919) % 5_000
    kinds = {
        "int": ([str(u) for u in users], [str(i) for i in items]),
        "digits": ([f"{u:06d}" for u in users], [f"{i:05d}" for i in items]),
        "text": ([f"u{u}" for u in users], [f"i{i}" for i in items]),
        # integers (some as 7.0 and 7e0) for ~2 MB, then text: the column is text, and
        # every integer before is its decimal string, "7.0" and "7" one id
        "late text": (
            [str(u) if u < 2_500 else f"u{u}" for u in users],
            [f"{i}.0" if i % 3 == 0 else (f"{i}e0" if i % 3 == 1 else str(i)) for i in items],
        ),
    }
    paths = {}
    for kind, (u, i) in kinds.items():
        path = tmp_path / f"{kind.replace(' ', '_')}.csv"
        lines = (f"{a},{b},{k % 40 + 1}" for k, (a, b) in enumerate(zip(u, i, strict=True)))
        path.write_text("user,item,rank\n" + "\n".join(lines) + "\n")
        paths[kind] = path
    return paths


def test_compact_ids_are_the_ids_read_whole(tmp_path: Path) -> None:
    from receval.io.tables import iter_recs, read_recs

    for kind, path in _ids_kinds(tmp_path).items():
        plain, compact = _table(path, False), _table(path, True)
        texts = {"int": [], "late text": ["user"]}.get(kind, ["user", "item"])
        for role in ("user", "item"):
            column, typ = compact.column(role), compact.schema.field(role).type
            if role in texts:  # codes into the canonical strings: the strings read whole
                assert pa.types.is_dictionary(typ), (kind, role)
                assert column.cast(pa.large_string()).equals(plain.column(role)), (kind, role)
            else:
                assert typ == plain.schema.field(role).type == pa.int64(), (kind, role)
        a, b = read_recs(plain), read_recs(compact)
        assert a.users.dtype == b.users.dtype and a.items.dtype == b.items.dtype, kind
        assert a.users.tolist() == b.users.tolist() and a.items.tolist() == b.items.tolist()
        if kind == "late text":  # the integers before the text are their decimal strings
            assert a.users[0] == "0" and a.users[-1] == f"u{2_999}"
            assert a.items.tolist() == ((np.arange(120_000) * 7919) % 5_000).tolist()
        # chunks of complete users, by the codes (a user cut nowhere)
        for one, two in zip(
            iter_recs(plain, chunk_rows=7_000), iter_recs(compact, chunk_rows=7_000), strict=True
        ):
            assert one[1] == two[1] and one[0].users.tolist() == two[0].users.tolist()
        shuffled = compact.take(pa.array(np.random.default_rng(0).permutation(compact.num_rows)))
        assert len(list(iter_recs(shuffled, chunk_rows=7_000))) == 1  # users not contiguous


def test_an_empty_id_far_into_the_file_names_its_line(tmp_path: Path) -> None:
    """Each block's ids are read as it comes: the row of an empty id is the
    file's, whatever block it is in; reported once the file is known to parse."""
    rows = [f"u{k // 50},i{k % 977},{k % 50 + 1}" for k in range(150_000)]
    rows[140_000] = f"u{140_000 // 50},,1"
    path = tmp_path / "recs.csv"
    path.write_text("user,item,rank\n" + "\n".join(rows) + "\n")
    for compact in (False, True):
        with pytest.raises(receval_errors.InputError) as err:
            _table(path, compact)
        assert "line 140002" in str(err.value) and "missing item id" in str(err.value)


def test_a_categorical_user_column_is_cut_into_chunks_by_its_codes() -> None:
    """Before: Arrow's count_distinct has no kernel for dictionaries, so a table
    of more than a chunk's rows whose users were a pandas categorical failed."""
    import pandas as pd

    from receval.io.tables import iter_recs

    users = np.repeat([f"u{k}" for k in range(30)], 4)
    frame = pd.DataFrame({"user": pd.Categorical(users), "item": np.tile([1, 2, 3, 4], 30)})
    frame["rank"] = np.tile([1, 2, 3, 4], 30)
    chunks = list(iter_recs(frame, chunk_rows=10))
    assert [c[1] for c in chunks][:4] == [0, 12, 20, 32]  # each at a user's first row
    assert np.concatenate([c[0].users for c in chunks]).tolist() == users.tolist()


def test_a_dictionary_read_once_for_every_chunk_gives_each_chunk_its_own_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of a table sorted by user whose ids are categoricals: the whole
    dictionary is put under the id rule once (``shared_dictionaries``) when it
    is not much longer than a chunk, each chunk's own values otherwise; unused
    categories (``""``, ``"7"`` beside ``"007"``, a text category among integer
    ids, where the whole dictionary would be of another kind) change nothing:
    the numbers are those of the same ids as plain strings, at any chunk size."""
    import pandas as pd

    import receval
    from receval.io import stream, tables

    rng = np.random.default_rng(3)
    users = np.repeat([f"u{k:03d}" for k in range(60)], 12)
    picks = np.concatenate([rng.permutation(40)[:12] for _ in range(60)])  # distinct per user
    items = np.array([f"i{k}" if k else "007" for k in picks], dtype=object)
    scores = rng.random(len(users))
    truth = pd.DataFrame({"user": users[::6], "item": items[::6]})
    plain = pd.DataFrame({"user": users, "item": items, "score": scores})
    categories = [*sorted(set(items)), "", "7", "zz unused"]  # unused, "7" a number
    coded = plain.assign(item=pd.Categorical(items, categories=categories))
    metrics = ["ndcg@5", "recall@10", "mrr", "hit_rate@3"]
    want = receval.evaluate(plain, truth, metrics)
    seen: list[int] = []
    real = tables._whole_dictionary

    def counting(values, *args):  # type: ignore[no-untyped-def]
        seen.append(len(values))
        return real(values, *args)

    monkeypatch.setattr(tables, "_whole_dictionary", counting)
    for rows in (8, 40, 300, 10_000):  # dictionaries longer than 2 pairs' rows, and not
        monkeypatch.setattr(stream, "CHUNK_ROWS", rows)
        got = receval.evaluate(coded, truth, metrics)
        assert dict(got.summary) == dict(want.summary), rows  # bit for bit
        assert got.per_user.equals(want.per_user), rows
        assert got.counts == want.counts, rows
    assert seen and set(seen) == {len(categories)}  # the whole dictionary, where used
    # integer ids with an unused text category: the whole dictionary would be text
    numbers = plain.assign(item=[str(k) for k in picks])
    coded = numbers.assign(
        item=pd.Categorical(numbers["item"], categories=[*map(str, range(40)), "zz"])
    )
    truth = truth.assign(item=numbers["item"][::6].to_numpy())
    want = receval.evaluate(numbers, truth, metrics)
    for rows in (8, 10_000):
        monkeypatch.setattr(stream, "CHUNK_ROWS", rows)
        got = receval.evaluate(coded, truth, metrics)
        assert dict(got.summary) == dict(want.summary), rows
        assert got.per_user.equals(want.per_user), rows
