"""Start-up that fits a shell loop (issue #33): the plain ``receval evaluate``
and a first small in-process evaluation load neither pandas nor pydantic, nor
pyarrow.compute; the command loads no rich and no other command's module.

The module lists come from the process itself (``sys.modules`` at its end):
no timing is asserted here (``benchmarks/startup.py`` times them). What is written without pandas is
checked byte for byte against what pandas writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from receval.cli._main import main

SRC = str(Path(__file__).resolve().parents[1] / "src")
#: what the plain paths must not load
HEAVY = ("pandas", "pydantic")
#: modules (full names) the plain command must not load either
NOT_LOADED = (
    "rich",
    "pyarrow.compute",
    "pyarrow.dataset",
    "receval.cli.compare",
    "receval.cli.info",
    "receval.cli.workflow",
)

RECS = "user,item,rank\n1,10,1\n1,11,2\n1,12,3\n2,10,1\n2,13,2\n3,11,1\n3,12,2\n4,10,1\n"
TRUTH = "user,item\n1,10\n2,13\n3,12\n5,11\n"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC}


def _files(tmp_path: Path, trec: bool = False) -> tuple[Path, Path]:
    """The small pair as CSV, or (``trec``) as a TREC run and qrels."""
    if trec:
        recs, truth = tmp_path / "recs.run", tmp_path / "truth.qrels"
        rows = [r.split(",") for r in RECS.splitlines()[1:]]
        recs.write_text("".join(f"{u} Q0 {i} {r} {1 / int(r)} x\n" for u, i, r in rows))
        pairs = [r.split(",") for r in TRUTH.splitlines()[1:]]
        truth.write_text("".join(f"{u} 0 {i} 1\n" for u, i in pairs))
        return recs, truth
    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    recs.write_text(RECS)
    truth.write_text(TRUTH)
    return recs, truth


@pytest.mark.parametrize(
    "flags",
    [(), ("-o", "json"), ("-o", "csv"), ("--per-user", "per_user.csv"), ("-o", "json", "trec")],
)
def test_the_plain_command_loads_no_pandas_nor_pydantic(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    recs, truth = _files(tmp_path, trec="trec" in flags)
    argv = [str(tmp_path / f) if f.endswith(".csv") else f for f in flags if f != "trec"]
    args = ["evaluate", str(recs), str(truth), "-m", "ndcg@10", *argv]
    # ``python -m receval``, with every module loaded listed at exit (sys.modules: a
    # module imported by name, as the commands' are, is not in -X importtime's report)
    code = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
        "sys.argv = ['receval', *sys.argv[1:]]\n"
        "runpy.run_module('receval', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ndcg@10" in proc.stdout
    loaded = set(proc.stderr.split("MODULES", 1)[1].split())
    assert {"receval._launch", "receval.cli.evaluate", "numpy", "pyarrow"} <= loaded
    assert not (set(NOT_LOADED) | set(HEAVY)) & loaded, sorted(set(NOT_LOADED) & loaded)


def test_a_first_small_evaluate_in_python_loads_no_pandas() -> None:
    code = (
        "import receval, sys\n"
        "res = receval.evaluate({1: [10, 11]}, {1: [10]}, 'ndcg@10')\n"
        "print(res.summary['ndcg@10'], res['ndcg@10'], res.to_json(indent=None)[:12])\n"
        f"print(sorted(m for m in {HEAVY + NOT_LOADED!r} if m in sys.modules))\n"
        "res.per_user\n"  # the frame, built on first read
        "print('pandas' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ['1.0 1.0 {"metrics": ', "[]", "True"]


def test_per_user_is_the_same_frame_when_read_late() -> None:
    """The frame ``per_user`` builds on first read is the one built at once before."""
    import numpy as np
    import pandas as pd

    import receval

    res = receval.evaluate(
        {1: [10, 11, 12], 2: [10, 13], 4: [10]},
        {1: [10], 2: [13], 3: [12]},
        ["ndcg@10", "recall@2", "recall@2"],
    )
    frame = res.per_user
    assert frame is res.per_user  # built once
    assert frame.index.name == "user" and list(frame.columns) == ["ndcg@10", "recall@2"]
    assert frame.index.tolist() == [1, 2, 3, 4]
    expected = pd.DataFrame(
        {"ndcg@10": [1.0, 0.6309297535714574, 0.0, np.nan], "recall@2": [1.0, 1.0, 0.0, np.nan]},
        index=pd.Index([1, 2, 3, 4], name="user"),
    )
    pd.testing.assert_frame_equal(frame, expected)


@pytest.mark.parametrize(
    "users",
    [
        [1, 2, 3, 4],
        ["a", "b,c", 'q"x', "é\nz"],  # text ids that need quoting
    ],
)
def test_csv_written_without_pandas_is_what_pandas_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], users: list[object]
) -> None:
    """``--per-user x.csv`` and ``-o csv`` of the plain command: the bytes pandas wrote."""
    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    u = users
    rows = [(u[0], 10, 1), (u[0], 11, 2), (u[1], 10, 1), (u[1], 13, 2), (u[3], 10, 1)]
    quoted = [('"' + str(a).replace('"', '""') + '"', b, c) for a, b, c in rows]
    recs.write_text("user,item,rank\n" + "".join(f"{a},{b},{c}\n" for a, b, c in quoted))
    truth_rows = [(u[0], 10), (u[1], 13), (u[2], 12)]
    truth.write_text(
        "user,item\n" + "".join('"' + str(a).replace('"', '""') + f'",{b}\n' for a, b in truth_rows)
    )
    out = tmp_path / "per_user.csv"
    argv = ["evaluate", str(recs), str(truth), "-m", "ndcg@10", "-m", "ap@5", "-m", "recall@2"]
    assert main([*argv, "--per-user", str(out), "-o", "csv", "--quiet"]) == 0
    shown = capsys.readouterr().out

    import receval
    from receval.cli.inputs import _per_user_csv

    res = receval.evaluate(str(recs), str(truth), ["ndcg@10", "ap@5", "recall@2"])
    by_pandas = tmp_path / "by_pandas.csv"
    _per_user_csv(res.per_user.reset_index(), by_pandas)
    assert out.read_bytes() == by_pandas.read_bytes()
    assert b"NaN" in out.read_bytes()  # a user with no truth: NaN, as pandas writes it
    assert shown == res.to_frame().to_csv() + "\n"


def test_plain_flag_values_are_coerced_as_typer_coerces_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Numbers in the plain spelling (coerced without pydantic) and in another
    (typer's own coercion) mean the same; a bad value is still typer's error."""
    base = ["evaluate", "examples/recs.csv", "examples/truth.csv", "-m", "ndcg@3", "-o", "json"]
    root = Path(SRC).parent
    outs = []
    for threshold in ("2", "2.0", "2e0", "2.00"):
        cwd = os.getcwd()
        os.chdir(root)
        try:
            assert main([*base, "--threshold", threshold, "-k", "5"]) == 0, threshold
        finally:
            os.chdir(cwd)
        outs.append(capsys.readouterr().out)
    assert len(set(outs)) == 1 and '"threshold": 2.0' in outs[0]
    assert main([*base, "-k", "five"]) == 2
    assert "five" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text",
    [
        "pip install 'receval[spark]'",
        "a [b] c [/]",
        "\\[bold]x",
        "ends with \\",
        "ends with \\\\",
        "[#fff] [@click] [A] [[a]]",
        "\\\\[a]\\",
        "",
    ],
)
def test_help_texts_are_escaped_as_rich_escapes_them(text: str) -> None:
    """``--help`` escapes its texts without loading rich, as rich would."""
    from rich.markup import escape as rich_escape

    from receval.cli._base import escape

    assert escape(text) == rich_escape(text)


def test_arrow_and_numpy_without_pyarrow_s_conversions_are_pyarrow_s() -> None:
    """receval.ids' conversions that keep pyarrow from loading pandas give
    what ``pa.array`` and ``to_numpy`` give."""
    import numpy as np
    import pyarrow as pa

    from receval.ids import arrow_bools, arrow_floats, arrow_ints, arrow_strings, numbers

    ints = np.array([3, -1, 2**62, 0], dtype=np.int64)
    assert arrow_ints(ints).equals(pa.array(ints, type=pa.int64()))
    assert arrow_ints(ints[::2]).equals(pa.array(ints[::2]))  # not contiguous
    floats = np.array([0.5, -0.0, 1e300, 3.0])
    assert arrow_floats(floats).equals(pa.array(floats, type=pa.float64()))
    nan = arrow_floats(np.array([np.nan, 1.0]))  # a value, not a null, as pa.array has it
    assert nan.null_count == 0 and str(nan.to_pylist()) == "[nan, 1.0]"
    bools = np.array([True, False, True] * 5)
    assert arrow_bools(bools).equals(pa.array(bools))
    texts = ["a", "bé", "", "x,y", "1"]
    assert arrow_strings(texts).equals(pa.array(texts, pa.string()))
    assert arrow_strings([]).equals(pa.array([], pa.string()))
    for col in [
        pa.array(ints),
        pa.array(floats)[1:3],
        pa.array(np.arange(7, dtype=np.int32))[2:],
        pa.chunked_array([pa.array(ints)]),
        pa.chunked_array([pa.array(ints), pa.array(ints[:2])]),
        pa.chunked_array([], pa.int64()),
        pa.array([1, None]),
        pa.array(["a", "b"]),
    ]:
        mine = numbers(col)
        theirs = col.to_numpy() if isinstance(col, pa.ChunkedArray) else col.to_numpy(False)
        assert mine.dtype == theirs.dtype and mine.flags.writeable == theirs.flags.writeable
        assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f")


def test_the_command_table_names_each_command_s_module() -> None:
    """:data:`receval.cli._base.COMMANDS` (what a run imports) is where each
    command is registered, in the order ``--help`` lists them."""
    import typer

    from receval.cli import app
    from receval.cli._base import COMMANDS

    group = typer.main.get_command(app)
    registered = {n: c.callback.__module__ for n, c in group.commands.items()}
    assert registered == {n: f"receval.cli.{m}" for n, m in COMMANDS.items()}
    assert group.list_commands(None) == list(COMMANDS)


def test_help_lists_the_commands_in_one_order_whichever_loaded_first(tmp_path: Path) -> None:
    """A process that ran ``report`` first (its module registered first) lists
    the commands of ``--help`` in the usual order."""
    code = (
        "from receval.cli import main\n"
        "main(['report', '--help'])\n"
        "print('-----')\n"
        "main(['--help'])\n"
    )
    env = {**_env(), "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    after = proc.stdout.split("-----", 1)[1]
    from receval.cli._base import COMMANDS

    listed = [w for line in after.splitlines() for w in line.strip("│ ").split()[:1]]
    assert [w for w in listed if w in COMMANDS] == list(COMMANDS)


@pytest.mark.parametrize("terminal", [False, True])
def test_lines_printed_without_rich_are_what_rich_prints(terminal: bool) -> None:
    """Notes and tables are written straight to the stream (rich not loaded):
    the bytes rich's consoles, made as the command makes them, would print."""
    import io

    from rich.console import Console

    from receval.analysis.formatting import visible

    texts = [
        "metric     mean  users\n----------------------\nndcg@10  0.7753      2",
        "x" * 300,
        "trailing   ",
        "  leading",
        "– wide 漢字 é " * 30,
        "",
        "a\n\nb\n",
        "[bold]not markup[/] :smile: http://x.y/z 1.5e3 'quoted' (1, 2)",
        visible("\x1b[31mred\x07\tbell\r", lines=True),
    ]
    for text in texts:
        stream = io.StringIO()
        console = Console(
            file=stream,
            force_terminal=terminal,
            width=40,
            highlight=False,
            soft_wrap=True,
            markup=False,
            emoji=False,
        )
        console.print(text, markup=False, emoji=False)
        assert stream.getvalue() == text + "\n", text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.from_regex(r"-?[0-9]{1,20}", fullmatch=True),
            st.sampled_from(["0", "-0", "007", "1.0", "", " 1", "1 ", "1\n", "+1", "١٢", "1e3"]),
            st.text(alphabet="0123456789-.e \n", max_size=6),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_small_text_columns_read_as_arrow_reads_them(values: list[str]) -> None:
    """A small column of text ids checked by Python's ``re`` (no pyarrow.compute)
    gives what the Arrow path gives for the same column."""
    import numpy as np
    import pyarrow as pa

    from receval import ids

    col = pa.array(values, pa.string())
    small = ids.from_text(col, "user", "x.csv")
    limit = ids.SMALL_COLUMN
    try:
        ids.SMALL_COLUMN = -1  # the Arrow path only
        arrow = ids.from_text(col, "user", "x.csv")
    finally:
        ids.SMALL_COLUMN = limit
    assert small.dtype == arrow.dtype
    assert np.array_equal(small, arrow)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.from_regex(r"-?[0-9]{1,4}(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?", fullmatch=True),
            st.text(alphabet="0123456789-.eE+ \nab", max_size=6),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_whether_a_column_holds_a_number_is_arrow_s_answer(values: list[str | None]) -> None:
    """:func:`receval.ids.any_number_literal` by Python's ``re`` (small
    columns) is Arrow's regex kernel's answer."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from receval.ids import NUMBER_LITERAL, any_number_literal

    col = pa.array(values, pa.string())
    arrow = bool(pc.any(pc.match_substring_regex(col, NUMBER_LITERAL)).as_py())
    assert any_number_literal(col) is arrow
    assert any_number_literal(pa.chunked_array([col])) is arrow


def test_a_lazy_module_loads_on_first_use_and_pickles_by_name() -> None:
    import pickle
    import subprocess as sp

    from receval._lazy import LazyModule

    code = (
        "import sys\nfrom receval._lazy import LazyModule\n"
        "m = LazyModule('wave')\nprint('wave' in sys.modules)\n"
        "m.open\nprint('wave' in sys.modules, repr(m))\n"
    )
    out = sp.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert out.stdout.split("\n")[:2] == ["False", "True <module 'wave', loaded>"], out.stderr
    lazy = LazyModule("json")
    assert lazy.dumps([1]) == "[1]"
    back = pickle.loads(pickle.dumps(lazy))  # loaded or not: by name
    assert isinstance(back, LazyModule) and back.loads("[2]") == [2]
    with pytest.raises(AttributeError):
        lazy.no_such_name  # noqa: B018


def test_chunks_of_one_buffer_are_read_in_place() -> None:
    """Slices that follow each other in one buffer (a row group as pyarrow reads
    it, a table cut by user) become one read-only view, with pyarrow's values;
    anything else is copied."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from receval.ids import numbers

    base = pa.array(np.arange(20, dtype=np.int64))
    cases = [
        (pa.chunked_array([base.slice(0, 3), base.slice(3, 5), base.slice(8, 12)]), True),
        (pa.chunked_array([base.slice(2, 3), base.slice(5, 0), base.slice(5, 4)]), True),
        (pa.chunked_array([base.slice(0, 3), base.slice(4, 5)]), False),  # a gap
        (pa.chunked_array([base.slice(5, 3), base.slice(0, 5)]), False),  # out of order
        (pa.chunked_array([base.slice(0, 3), pa.array(np.arange(3))]), False),  # two buffers
        (pa.chunked_array([base.slice(0, 2), pa.array([1, None])]), False),  # a null
    ]
    for col, in_place in cases:
        mine = numbers(col)
        theirs = col.to_numpy()
        assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), col
        assert mine.flags.writeable is not in_place
    # a Parquet row group read in batches: one buffer, read in place
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"u": np.arange(300_000, dtype=np.int64)}), sink)
    table = pq.read_table(pa.BufferReader(sink.getvalue()))
    col = table.column("u").slice(100_000, 150_000)
    assert col.num_chunks == 2  # pyarrow's batches of 131,072 rows
    view = numbers(col)
    assert not view.flags.writeable and view[0] == 100_000 and len(view) == 150_000
    assert np.array_equal(view, np.arange(100_000, 250_000))
