"""Metrics of one's own (issue #34 point 1): declared through the public API
(``receval.register_metric``, ``@receval.metric``, an entry point of the group
``receval.metrics``, ``--plugin``), then usable through every door and engine with
no extra code, and checked by the same property suite as receval's own
(``receval.testing.check_metric``)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli._main import main
from receval.errors import MetricError
from receval.metrics import registry
from receval.testing import MetricCheckError, check_metric, metric_strings, workload
from tests.reference import by_evaluate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def plugin() -> Iterator[Any]:
    """tests/plugin_metrics.py imported (its metrics registered), then forgotten."""
    sys.modules.pop("tests.plugin_metrics", None)
    module = importlib.import_module("tests.plugin_metrics")
    try:
        yield module
    finally:
        for name in module.NAMES:
            if registry.lookup(name) is not None:
                receval.unregister_metric(name)
        sys.modules.pop("tests.plugin_metrics", None)


def _frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    # u1: [10 (grade 3), 11 (grade 1), 12]; u2: [12, 13 (grade 2)]; u3: [] (truth only)
    recs = pd.DataFrame(
        {"user": [1, 1, 1, 2, 2], "item": [10, 11, 12, 12, 13], "score": [5, 4, 3, 2, 1]}
    )
    truth = pd.DataFrame(
        {"user": [1, 1, 2, 3], "item": [10, 11, 13, 10], "relevance": [3, 1, 2, 1]}
    )
    # item 10: 3 training users, 11: 1, 12: 2, 13: none (popularity 1)
    train = pd.DataFrame({"user": [7, 8, 9, 7, 7, 8], "item": [10, 10, 10, 11, 12, 12]})
    return recs, truth, train


# -- known values, worked by hand -----------------------------------------------------


def test_known_values_of_the_plugin_s_metrics(plugin: Any) -> None:
    recs, truth, train = _frames()
    res = receval.evaluate(
        recs,
        truth,
        [
            "cold_share@2",
            "cold_share[min_users=2]",
            "sp@2",
            "strong_precision@2[min_grade=1.0]",
            "top_item_share@2",
        ],
        train=train,
    )
    # cold (pop < 3) in the top 2: u1 [10 no, 11 yes] 1/2; u2 [12 yes, 13 yes] 2/2
    cold = res.per_user["cold_share@2"].tolist()
    assert cold[:2] == [0.5, 1.0] and np.isnan(cold[2])  # u3 has no list: undefined
    # min_users=2 over whole lists: u1 [10, 11 cold, 12] 1/3; u2 [12, 13 cold] 1/2
    assert res.per_user["cold_share[min_users=2]"].tolist()[:2] == [1 / 3, 0.5]
    # grade >= 2 in the top 2, over 2: u1 {10}: 1/2; u2 {13 at 2}: 1/2; u3 0
    assert res.per_user["strong_precision@2"].tolist() == [0.5, 0.5, 0.0]
    assert res.per_user["strong_precision@2[min_grade=1.0]"].tolist() == [1.0, 0.5, 0.0]
    # top-2 slots: 10, 11, 12, 13 once each: the largest share 1/4
    assert res.summary["top_item_share@2"] == 0.25


def test_the_decorator_and_the_function_register_alike() -> None:
    @receval.metric("first_hit_at_1", description="the top item is relevant", formula="[rel_1]")
    def first(batch: Any, k: int | None) -> np.ndarray:
        return (batch.hits_at(1) > 0).astype(np.float64)

    try:
        assert receval.metrics()["first_hit_at_1"].kernel is first
        res = receval.evaluate({"u": [3, 1], "v": [2]}, {"u": [3], "v": [1]}, ["first_hit_at_1"])
        assert res.per_user["first_hit_at_1"].tolist() == [1.0, 0.0]
        with pytest.raises(MetricError, match=r"registered already .replace=True"):
            receval.metric("first_hit_at_1", description="x", formula="x")(first)
        receval.metric("first_hit_at_1", description="again", formula="x", replace=True)(first)
        assert receval.metrics()["first_hit_at_1"].description == "again"
    finally:
        receval.unregister_metric("first_hit_at_1")
    assert registry.lookup("first_hit_at_1") is None


def _def(**kw: Any) -> receval.MetricDef:
    base: dict[str, Any] = {
        "name": "mine",
        "description": "d",
        "formula": "f",
        "kernel": lambda b, k: np.zeros(b.size),
    }
    return receval.MetricDef(**(base | kw))


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"name": "Mine"}, "'Mine' is not a metric name"),
        ({"name": "9lives"}, "not starting with a digit"),
        ({"aliases": ("my metric",)}, "'my metric' is not a metric name"),
        ({"aliases": ("mine",)}, "given twice"),
        ({"kind": "rating"}, "kind='rating': expected one of 'ranking', 'aggregate'"),
        ({"kernel": 3}, "kernel= is not callable"),
        ({"bounds": (1.0, 0.0)}, "the lower bound is above the upper"),
        ({"params": (receval.ParamDef("x", list, [], "d"),)}, "is not bool, int, float or str"),
        (
            {"params": (receval.ParamDef("x", str, "c", "d", choices=("a", "b")),)},
            "its default 'c' is refused \\(expected one of a, b\\)",
        ),
        ({"name": "ndcg"}, "'ndcg': receval's own"),
        ({"name": "map"}, "it is an alias of 'ap'"),
        ({"aliases": ("prec",)}, "its alias 'prec' is a name of 'precision'"),
    ],
)
def test_a_malformed_or_taken_declaration_is_refused(kw: dict[str, Any], why: str) -> None:
    with pytest.raises(MetricError, match=why):
        receval.register_metric(_def(**kw))
    assert registry.lookup("mine") is None
    with pytest.raises(MetricError, match=r"cannot register the metric .*: expected a receval"):
        receval.register_metric("mine")  # type: ignore[arg-type]


def test_receval_s_own_metrics_cannot_be_replaced_nor_forgotten() -> None:
    with pytest.raises(MetricError, match="receval's own"):
        receval.register_metric(receval.metrics()["ndcg"], replace=True)
    with pytest.raises(MetricError, match="'ap' is receval's own metric"):
        receval.unregister_metric("map")
    with pytest.raises(MetricError, match="no registered metric 'nope'"):
        receval.unregister_metric("nope")


# -- the property suite ----------------------------------------------------------------


def test_the_plugin_s_metrics_pass_the_suite(plugin: Any) -> None:
    compared = check_metric(plugin.NAMES, seeds=[3])
    assert set(compared) >= {
        "row order",
        "ids as digits",
        "ids as text",
        "blocks, chunks and threads",
        "Accumulator batches",
        "pyarrow tables",
        "CSV files",
        "Parquet files (streamed)",
        "pickling",
    }
    assert metric_strings(receval.metrics()["cold_share"])[:4] == [
        "cold_share",
        "cold_share@1",
        "cold_share@3",
        "cold_share@10",
    ]


def test_receval_s_own_metrics_pass_the_same_suite() -> None:
    own = [
        d
        for d in receval.metrics().values()
        if d.kind != "rating" and registry.is_built_in(d.name) and by_evaluate(d)
    ]  # the metrics of a door of their own: tests/test_door_only_metrics.py
    assert len(own) >= 45
    check_metric(own, seeds=[4])


def _register(kernel: Any, **kw: Any) -> str:
    receval.register_metric(_def(name="broken", kernel=kernel, **kw))
    return "broken"


@pytest.mark.parametrize(
    ("kernel", "kw", "check"),
    [
        # a value that depends on the block the user is evaluated in
        (lambda b, k: np.full(b.size, 1.0 / b.size), {}, "blocks, chunks and threads"),
        # beyond its declared bounds
        (lambda b, k: b.hits_at(k).astype(np.float64), {}, "bounds"),
        # a value that depends on the order of the users' rows within a block
        (lambda b, k: np.arange(b.size, dtype=np.float64) % 2, {}, "changed a number"),
    ],
)
def test_the_suite_fails_a_broken_metric(kernel: Any, kw: dict[str, Any], check: str) -> None:
    name = _register(kernel, **kw)
    try:
        with pytest.raises(MetricCheckError, match=check):
            check_metric(name, seeds=[0])
    finally:
        receval.unregister_metric(name)


def test_the_suite_says_what_does_not_pickle() -> None:
    def kernel(b: Any, k: int | None, *, x: int) -> np.ndarray:
        return np.zeros(b.size)

    p = receval.ParamDef("x", int, 1, "d", check=lambda v: v > 0, check_text="> 0")
    receval.register_metric(_def(name="unpicklable", kernel=kernel, params=(p,)))
    try:
        with pytest.raises(
            MetricCheckError, match=r"(?s)pickling .*functions of a module, not lambdas"
        ):
            check_metric("unpicklable", seeds=[0])
    finally:
        receval.unregister_metric("unpicklable")


def test_check_metric_wants_registered_metrics() -> None:
    with pytest.raises(receval.ReceValError, match="'nope' is not registered"):
        check_metric("nope")
    with pytest.raises(receval.ReceValError, match="'rmse' is a rating metric"):
        check_metric("rmse")


# -- every door ------------------------------------------------------------------------


def test_compare_report_groups_and_the_accumulator_take_them(plugin: Any, tmp_path: Path) -> None:
    w = workload(5)
    metrics = ["cold_share@5", "sp@5", "top_item_share@5", "ndcg@5"]
    one = receval.evaluate(w["recs"], w["truth"], metrics, train=w["train"])
    other = w["recs"].assign(score=w["recs"]["score"][::-1].to_numpy())
    cmp = receval.compare(
        {"a": w["recs"], "b": other}, w["truth"], metrics, train=w["train"], n_resamples=200
    )
    for name in ("cold_share@5", "strong_precision@5", "top_item_share@5"):
        assert cmp.to_frame().loc["a", name] == one.summary[name]
    groups = pd.DataFrame({"user": range(70), "group": ["x", "y"] * 35})
    grouped = receval.evaluate(w["recs"], w["truth"], metrics, train=w["train"], user_groups=groups)
    assert {"cold_share@5", "strong_precision@5"} <= set(grouped.groups.columns)
    page = receval.report({"a": w["recs"], "b": other}, w["truth"], metrics, train=w["train"])
    assert "cold_share@5" in page.html and "top_item_share@5" in page.html
    acc = receval.Accumulator(metrics, train=w["train"])
    for half in (w["recs"]["user"] < 30, w["recs"]["user"] >= 30):
        users = set(w["recs"]["user"][half])
        acc.update(w["recs"][half], w["truth"][w["truth"]["user"].isin(users)])
    assert acc.compute().summary["cold_share@5"] == one.summary["cold_share@5"]


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _files(tmp: Path) -> tuple[Path, Path, Path]:
    recs, truth, train = _frames()
    paths = tmp / "recs.csv", tmp / "truth.csv", tmp / "train.csv"
    for frame, path in zip((recs, truth, train), paths, strict=True):
        frame.to_csv(path, index=False)
    return paths


@pytest.mark.parametrize("form", ["module", "file"])
def test_the_command_line_loads_a_plugin(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin: Any
) -> None:
    recs, truth, train = _files(tmp_path)
    receval.unregister_metric("cold_share")  # known only through --plugin from here
    receval.unregister_metric("strong_precision")
    receval.unregister_metric("top_item_share")
    sys.modules.pop("tests.plugin_metrics", None)
    given = (
        "tests.plugin_metrics" if form == "module" else str(ROOT / "tests" / "plugin_metrics.py")
    )
    m = ["-m", "cold_share@2", "-m", "sp@2"]
    code, out, err = run(
        capsys, "evaluate", recs, truth, *m, "--train", train, "--json", "--plugin", given
    )
    assert code == 0, err
    assert json.loads(out)["metrics"]["cold_share@2"] == 0.75  # u1 1/2, u2 2/2
    code, out, err = run(
        capsys,
        "compare",
        truth,
        recs,
        recs,
        "--names",
        "a,b",
        *m,
        "--train",
        train,
        "--plugin",
        given,
    )
    assert code == 0, err
    code, out, _ = run(capsys, "metrics", "--plugin", given)
    assert "cold_share [min_users=3] — per user: share of the top k held by cold items" in out
    code, out, _ = run(capsys, "explain", "sp@3", "--plugin", given)
    assert code == 0 and "strong_precision@3" in out and "|{i ≤ k : g_i ≥ min_grade}| / k" in out
    page = tmp_path / "r.html"
    code, _, err = run(
        capsys,
        "report",
        truth,
        recs,
        "--names",
        "a",
        *m,
        "--train",
        train,
        "--out",
        page,
        "--plugin",
        given,
    )
    assert code == 0 and "cold_share@2" in page.read_text(), err
    if form == "file":
        sys.modules.pop("plugin_metrics", None)


def test_a_plugin_that_fails_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, truth, _ = _files(tmp_path)
    code, out, err = run(capsys, "evaluate", recs, truth, "--plugin", "no_such_module_here")
    assert (code, out) == (2, "")
    assert err == (
        "error: --plugin no_such_module_here: no module named 'no_such_module_here' (a module "
        "on the Python path, or a path to a .py file)\n"
    )
    bad = tmp_path / "bad_metrics.py"
    bad.write_text("raise RuntimeError('the team broke it')\n")
    code, out, err = run(capsys, "evaluate", recs, truth, "--plugin", bad)
    assert code == 2 and err.count("\n") == 1
    assert f"--plugin {bad}: importing it failed: RuntimeError: the team broke it" in err
    code, _, err = run(capsys, "evaluate", recs, truth, "--plugin", tmp_path / "none.py")
    assert code == 2 and "no such Python file" in err


# -- entry points ------------------------------------------------------------------------


def _installed(tmp: Path, value: str, module: str) -> dict[str, str]:
    """A package installed into ``tmp`` (its dist-info names an entry point of the
    group receval.metrics): the environment of a process that sees it."""
    (tmp / "team_metrics.py").write_text(module)
    info = tmp / "team_metrics-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-metrics\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[receval.metrics]\nteam = {value}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp), str(ROOT), env.get("PYTHONPATH", "")])
    return env


TEAM = textwrap.dedent(
    """
    import numpy as np
    import receval

    def _top1(batch, k):
        return (batch.hits_at(1) > 0).astype(np.float64)

    DEFS = [receval.MetricDef(name="team_top1", description="top item relevant",
                              formula="[rel_1]", kernel=_top1)]
    """
)


def test_an_installed_package_s_metrics_are_found_on_first_use(tmp_path: Path) -> None:
    recs, truth, _ = _files(tmp_path)
    (tmp_path / "site").mkdir()
    env = _installed(tmp_path / "site", "team_metrics:DEFS", TEAM)
    code = (
        "import receval; "
        f"r = receval.evaluate({str(recs)!r}, {str(truth)!r}, ['team_top1', 'ndcg@2']); "
        "print(r.summary['team_top1'])"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(1 / 3)  # u1 1, u2 0, u3 (no list) 0
    cmd = [
        sys.executable,
        "-m",
        "receval",
        "evaluate",
        str(recs),
        str(truth),
        "-m",
        "team_top1",
        "--json",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"] == {"team_top1": 1 / 3}


def test_a_broken_entry_point_is_named(tmp_path: Path) -> None:
    recs, truth, _ = _files(tmp_path)
    (tmp_path / "site").mkdir()
    env = _installed(tmp_path / "site", "team_metrics:NOT_THERE", TEAM)
    cmd = [sys.executable, "-m", "receval", "evaluate", str(recs), str(truth), "-m", "team_top1"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "error: the metric plugin team = team_metrics:NOT_THERE (package team-metrics 1.0) "
        "failed to load: AttributeError"
    ), done.stderr
    # receval's own metrics never load the plugins
    ok = [sys.executable, "-m", "receval", "evaluate", str(recs), str(truth), "-m", "ndcg@2"]
    assert subprocess.run(ok, env=env, capture_output=True, text=True).returncode == 0


def test_the_guide_shows_the_example_module_as_it_is() -> None:
    """docs/custom-metrics.md shows examples/team_metrics.py (which its shell examples
    load with --plugin): the page's first block is the file, docstring aside."""
    page = (ROOT / "docs" / "custom-metrics.md").read_text(encoding="utf-8")
    shown = page.split("```python\n", 1)[1].split("```", 1)[0]
    module = (ROOT / "examples" / "team_metrics.py").read_text(encoding="utf-8")
    assert module.split('"""\n', 1)[1].lstrip("\n") == shown
