"""Tracking (#22 point 3): results and comparisons logged to a real MLflow file
store in tmp_path and read back with MlflowClient; W&B offline when installed.

Nothing global leaks: the tracking URI comes from MLFLOW_TRACKING_URI set with
monkeypatch (never mlflow.set_tracking_uri), every run a test starts is ended,
and each test checks that no run is left active."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import receval
from receval.analysis.tracking import log_mlflow, tracker_name
from receval.cli import main
from receval.errors import ReceValError
from tests.required import REQUIRE_EXTRAS, need

pytestmark = pytest.mark.timeout(120)

HAS_MLFLOW = importlib.util.find_spec("mlflow") is not None


@pytest.fixture(scope="module")
def _mlflow() -> None:
    need("mlflow", REQUIRE_EXTRAS, HAS_MLFLOW, 'pip install "receval[mlflow]"')


needs_mlflow = pytest.mark.usefixtures("_mlflow")

RECS = {"u1": [1, 6, 8], "u2": [2, 3, 9], "u3": [4, 5, 1]}
OTHER = {"u1": [6, 1, 8], "u2": [9, 3, 2], "u3": [2, 4, 5]}
TRUTH = {"u1": {1: 1, 6: 3}, "u2": {2: 2, 3: 1}, "u3": {2: 1}}
METRICS = ["ndcg@3[gain=exp]", "ap@3", "recall@2", "coverage@3"]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A local MLflow file store; yields a client reading it."""
    need("mlflow", REQUIRE_EXTRAS, HAS_MLFLOW, 'pip install "receval[mlflow]"')
    # set before mlflow is first imported: no telemetry, the file store allowed
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for name in ("MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID", "MLFLOW_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    import mlflow
    from mlflow.tracking import MlflowClient

    assert mlflow.active_run() is None
    before = _environ()
    yield MlflowClient()
    leaked = mlflow.active_run()
    while mlflow.active_run() is not None:
        mlflow.end_run()
    assert leaked is None, "a run was left active"
    assert _environ() == before, "receval changed the environment"


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def _result() -> receval.Result:
    return receval.evaluate(RECS, TRUTH, METRICS, catalog=list(range(1, 11)))


def _artifact(client: Any, run_id: str, path: str, tmp_path: Path) -> Path:
    return Path(client.download_artifacts(run_id, path, str(tmp_path)))


def _numbers(mapping: dict[str, Any], path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    for k, v in mapping.items():
        if isinstance(v, dict):
            out.update(_numbers(v, (*path, k)))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[(*path, k)] = v
    return out


# -- names ----------------------------------------------------------------------------------


def test_names_are_readable_and_valid_for_mlflow() -> None:
    assert tracker_name("ndcg@10") == "ndcg_at_10"
    assert tracker_name("ndcg@10[gain=exp]") == "ndcg_at_10.gain_exp"
    assert tracker_name("ndcg@10[gain=exp,ideal=k]") == "ndcg_at_10.gain_exp.ideal_k"
    assert tracker_name("long_tail@10[head=0.5]") == "long_tail_at_10.head_0.5"
    assert tracker_name("exposure@10[group=a b]") == "exposure_at_10.group_a-x20-b"
    assert tracker_name("rmse") == "rmse"
    assert tracker_name("users_skipped") == "users_skipped"  # not a metric: a plain key
    valid = re.compile(r"[A-Za-z0-9_.\-/ ]+")  # MLflow's portable names
    for name in ("utility@5[nonrel_ret=-2.0]", "exposure@10[group=x/../y:z]", "ap@3"):
        logged = tracker_name(str(receval.parse_metric(name)))
        assert valid.fullmatch(logged) and "/" not in logged, logged


def test_the_name_map_is_one_to_one_over_the_registry() -> None:
    """What makes the rule injective on canonical names, checked on every metric."""
    seen: dict[str, str] = {}
    for name, definition in receval.metrics().items():
        assert "_at_" not in name and name.replace("_", "").isalnum(), name
        params = list(getattr(definition, "param_map", {}))
        for p in params:
            assert p[0].isalpha(), (name, p)
            for q in params:
                assert p == q or not (q + "_").startswith(p + "_"), (name, p, q)
        for text in (name, f"{name}@5", f"{name}@50"):
            try:
                canonical = str(receval.parse_metric(text))
            except ReceValError:
                continue
            logged = tracker_name(canonical)
            assert seen.setdefault(logged, canonical) == canonical, (logged, canonical)
    # values that look alike stay apart
    group = [
        "exposure@10[group=a.b]",
        "exposure@10[group=a_b]",
        "exposure@10[group=a-b]",
        "exposure@10[group=a b]",
        "exposure@10[group=1.5]",
        "exposure@10[group=1-5]",
    ]
    logged = {tracker_name(str(receval.parse_metric(g))) for g in group}
    assert len(logged) == len(group)


# -- MLflow: a result ------------------------------------------------------------------------


@needs_mlflow
def test_a_result_logs_metrics_params_counts_and_files(store: Any, tmp_path: Path) -> None:
    res = _result()
    run_id = log_mlflow(res, per_user=True)
    run = store.get_run(run_id)
    assert run.info.status == "FINISHED"
    metrics = run.data.metrics
    # every metric's mean, exactly, under its mapped name
    for name, value in res.summary.items():
        assert metrics[tracker_name(name)] == value, name
    assert metrics["ndcg_at_3.gain_exp"] == res.summary["ndcg@3[gain=exp]"]
    # every numeric count, nested keys joined with "."
    for path, value in _numbers(res.counts).items():
        assert metrics["counts." + ".".join(path)] == value, path
    assert metrics["counts.users_skipped.no_truth"] == res.counts["users_skipped"]["no_truth"]
    # every option, a string as itself, anything else as JSON
    for key, value in res.parameters.items():
        if isinstance(value, dict):
            continue
        expected = value if isinstance(value, str) else json.dumps(value)
        assert run.data.params[key] == expected, key
    assert run.data.params["threshold"] == "1.0" and run.data.params["ties"] == "item"
    assert run.data.tags["receval.kind"] == "result"
    assert run.data.tags["receval.version"] == receval.__version__
    # the files
    names = json.loads(_artifact(store, run_id, "receval/names.json", tmp_path).read_text())
    assert names["metrics"] == {m: tracker_name(m) for m in res.summary}
    assert names["counts"]["users_skipped.no_truth"] == "counts.users_skipped.no_truth"
    assert json.loads(run.data.tags["receval.metric_names"]) == names["metrics"]
    logged = json.loads(_artifact(store, run_id, "receval/result.json", tmp_path).read_text())
    assert logged == json.loads(res.to_json())
    counts = json.loads(_artifact(store, run_id, "receval/counts.json", tmp_path).read_text())
    assert counts == res.to_dict()["counts"]
    md = _artifact(store, run_id, "receval/result.md", tmp_path).read_text()
    assert md == res.to_markdown()
    frame = pd.read_parquet(_artifact(store, run_id, "receval/per_user.parquet", tmp_path))
    pd.testing.assert_frame_equal(frame, res.per_user.reset_index())


@needs_mlflow
def test_nan_is_logged_as_nan_and_named_in_a_tag(store: Any) -> None:
    res = _result()
    res = dataclasses.replace(res, summary={**res.summary, "ap@3": float("nan")})
    run = store.get_run(log_mlflow(res))
    assert math.isnan(run.data.metrics["ap_at_3"])
    assert run.data.tags["receval.nan_metrics"] == "ap_at_3"
    assert run.data.metrics["recall_at_2"] == res.summary["recall@2"]


@needs_mlflow
def test_logs_into_the_active_run_and_leaves_it_active(store: Any) -> None:
    import mlflow

    res = _result()
    with mlflow.start_run(run_name="mine") as active:
        mlflow.log_param("model", "bpr")
        run_id = log_mlflow(res, prefix="test/", step=3)
        assert run_id == active.info.run_id
        assert mlflow.active_run().info.run_id == run_id  # still the user's run
    run = store.get_run(run_id)
    assert run.data.params["model"] == "bpr" and run.data.params["test/ties"] == "item"
    assert run.data.metrics["test/ap_at_3"] == res.summary["ap@3"]
    history = store.get_metric_history(run_id, "test/ap_at_3")
    assert [m.step for m in history] == [3]
    paths = [a.path for a in store.list_artifacts(run_id, "receval/test")]
    assert "receval/test/names.json" in paths


@needs_mlflow
def test_nested_makes_a_child_of_the_active_run(store: Any) -> None:
    import mlflow

    with mlflow.start_run() as parent:
        child_id = log_mlflow(_result(), nested=True, run_name="fold-1")
    child = store.get_run(child_id)
    assert child_id != parent.info.run_id
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert child.info.run_name == "fold-1" and child.info.status == "FINISHED"


@needs_mlflow
def test_a_new_run_goes_to_the_experiment_asked(store: Any) -> None:
    run_id = log_mlflow(_result(), experiment="offline", run_name="baseline")
    run = store.get_run(run_id)
    assert store.get_experiment(run.info.experiment_id).name == "offline"
    assert run.info.run_name == "baseline"


@needs_mlflow
def test_a_long_option_is_cut_and_named(store: Any, tmp_path: Path) -> None:
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    res = _result()
    res.parameters["note"] = "x" * (MAX_PARAM_VAL_LENGTH + 10)
    run_id = log_mlflow(res)
    run = store.get_run(run_id)
    assert len(run.data.params["note"]) == MAX_PARAM_VAL_LENGTH
    assert run.data.tags["receval.truncated_params"] == "note"
    whole = json.loads(_artifact(store, run_id, "receval/parameters.json", tmp_path).read_text())
    assert whole["note"] == res.parameters["note"]


@needs_mlflow
def test_a_bad_prefix_or_object_is_refused_before_any_run(store: Any) -> None:
    with pytest.raises(ReceValError, match="prefix"):
        log_mlflow(_result(), prefix="a@b")
    with pytest.raises(ReceValError, match="Result, Comparison or Report"):
        log_mlflow({"ndcg@10": 0.5})  # type: ignore[arg-type]
    assert store.search_runs(["0"]) == []


@needs_mlflow
def test_the_method_logs_what_the_function_logs(store: Any, tmp_path: Path) -> None:
    res = _result()
    by_method = res.log_mlflow(run_name="method", step=2, report="<!DOCTYPE html><p>page</p>")
    by_function = log_mlflow(res, run_name="function", step=2)
    one, two = store.get_run(by_method), store.get_run(by_function)
    assert one.data.metrics == two.data.metrics and one.data.params == two.data.params
    assert one.data.metrics["ap_at_3"] == res.summary["ap@3"]
    assert [m.step for m in store.get_metric_history(by_method, "ap_at_3")] == [2]
    for name in ("result.json", "result.md", "counts.json", "parameters.json", "names.json"):
        a = _artifact(store, by_method, f"receval/{name}", tmp_path / "a").read_text()
        b = _artifact(store, by_function, f"receval/{name}", tmp_path / "b").read_text()
        assert a == b, name
    page = _artifact(store, by_method, "receval/report.html", tmp_path / "a").read_text()
    assert page == "<!DOCTYPE html><p>page</p>"
    with pytest.raises(ReceValError, match="report=: a receval Report or its HTML text"):
        res.log_mlflow(report=3)


# -- MLflow: a comparison --------------------------------------------------------------------


def _comparison() -> receval.Comparison:
    return receval.compare({"a": RECS, "b": OTHER}, TRUTH, ["ndcg@3", "ap@3"], n_resamples=100)


@needs_mlflow
def test_a_comparison_logs_one_child_per_system_and_the_pairs(store: Any, tmp_path: Path) -> None:
    cmp = _comparison()
    parent_id = log_mlflow(cmp, run_name="two systems")
    parent = store.get_run(parent_id)
    assert parent.data.tags["receval.kind"] == "comparison"
    children = store.search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_id}'"
    )
    assert sorted(c.info.run_name for c in children) == ["a", "b"]
    for child in children:
        system = child.info.run_name
        assert child.data.tags["receval.system"] == system
        for name, value in cmp.results[system].summary.items():
            assert child.data.metrics[tracker_name(name)] == value
        assert child.data.metrics["counts.users_evaluated"] == 3
        assert child.data.params["ties"] == "item"
    table = pd.read_csv(_artifact(store, parent_id, "receval/comparison.csv", tmp_path))
    pairs = table[table["versus"].notna()]
    assert len(pairs) == 2 and {"p_value", "effect_size", "ci_low", "ci_high"} <= set(table)
    expected = cmp.to_long()
    expected = expected[expected["versus"].notna()]
    assert list(pairs["p_value"]) == pytest.approx(list(expected["p_value"]), abs=0, rel=1e-15)
    logged = json.loads(
        _artifact(store, parent_id, "receval/comparison.json", tmp_path).read_text()
    )
    assert logged == json.loads(cmp.to_json())
    assert logged["metrics"]["ap@3"]["comparisons"][0]["p_value"] >= 0


@needs_mlflow
def test_a_report_logs_its_html(store: Any, tmp_path: Path) -> None:
    rep = receval.report({"a": RECS, "b": OTHER}, TRUTH, "ndcg@3", n_resamples=100)
    parent_id = log_mlflow(rep)
    html = _artifact(store, parent_id, "receval/report.html", tmp_path).read_text()
    assert html == rep.html and html.startswith("<!DOCTYPE html>")
    # a comparison alone has no lists to draw curves from: no HTML, unless given
    other = log_mlflow(rep.comparison)
    assert "receval/report.html" not in [a.path for a in store.list_artifacts(other, "receval")]
    third = log_mlflow(rep.comparison, report=rep)
    assert "receval/report.html" in [a.path for a in store.list_artifacts(third, "receval")]


# -- the command line -----------------------------------------------------------------------


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    recs, other, truth = tmp_path / "r.csv", tmp_path / "o.csv", tmp_path / "t.csv"
    for path, run in ((recs, RECS), (other, OTHER)):
        rows = [(u, i, r) for u, items in run.items() for r, i in enumerate(items, 1)]
        pd.DataFrame(rows, columns=["user", "item", "rank"]).to_csv(path, index=False)
    rows = [(u, i, g) for u, items in TRUTH.items() for i, g in items.items()]
    pd.DataFrame(rows, columns=["user", "item", "relevance"]).to_csv(truth, index=False)
    return recs, other, truth


@needs_mlflow
def test_cli_evaluate_and_compare_log_to_mlflow(
    store: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, other, truth = _files(tmp_path)
    argv = ["evaluate", str(recs), str(truth), "-m", "ap@3", "-m", "ndcg@3[gain=exp]", "--json"]
    code = main([*argv, "--mlflow", "--mlflow-experiment", "cli", "--mlflow-run-name", "r1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    shown = json.loads(captured.out)
    assert "logged to MLflow run" in captured.err
    experiment = store.get_experiment_by_name("cli")
    (run,) = store.search_runs([experiment.experiment_id])
    assert run.info.run_name == "r1"
    assert run.data.metrics["ap_at_3"] == shown["metrics"]["ap@3"]
    assert run.data.metrics["ndcg_at_3.gain_exp"] == shown["metrics"]["ndcg@3[gain=exp]"]
    assert run.data.params["inputs.recommendations.path"] == str(recs)

    code = main(
        [
            *("compare", str(truth), str(recs), str(other), "--names", "a,b", "-m", "ap@3"),
            *("--n-resamples", "50", "--mlflow", "--mlflow-experiment", "cli", "-q"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""  # --quiet
    runs = store.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs if "mlflow.parentRunId" in r.data.tags) == [
        "a",
        "b",
    ]


@needs_mlflow
def test_cli_logs_the_html_report_of_what_it_evaluated(
    store: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, other, truth = _files(tmp_path)
    argv = ["evaluate", str(recs), str(truth), "-m", "ap@3", "-m", "recall@2", "--threshold", "2"]
    assert main([*argv, "--json", "--mlflow", "--mlflow-experiment", "pages", "-q"]) == 0
    shown = json.loads(capsys.readouterr().out)
    experiment = store.get_experiment_by_name("pages")
    (run,) = store.search_runs([experiment.experiment_id])
    page = _artifact(store, run.info.run_id, "receval/report.html", tmp_path / "a").read_text()
    assert page.startswith("<!DOCTYPE html>") and "receval evaluate r.csv" in page
    assert "curve-ap" in page  # the curves: the lists were read again
    # its leaderboard is the result's: the same means, under the same options
    expected = receval.compare(
        {"r": RECS}, TRUTH, ["ap@3", "recall@2"], threshold=2, ci="none"
    ).table
    for metric, value in shown["metrics"].items():
        assert expected.loc[(metric, "r"), "mean"] == value
        assert f"{value:.4f}" in page
    # --no-mlflow-report leaves it out
    assert main([*argv, "--mlflow", "--mlflow-experiment", "pages", "--no-mlflow-report"]) == 0
    runs = store.search_runs([experiment.experiment_id], order_by=["attributes.start_time DESC"])
    paths = [a.path for a in store.list_artifacts(runs[0].info.run_id, "receval")]
    assert "receval/result.json" in paths and "receval/report.html" not in paths
    # a comparison's report: its own comparison, with curves
    code = main(
        [
            *("compare", str(truth), str(recs), str(other), "--names", "a,b", "-m", "ap@3"),
            *("--n-resamples", "50", "--mlflow", "--mlflow-experiment", "cmp", "-q"),
        ]
    )
    assert code == 0
    experiment = store.get_experiment_by_name("cmp")
    (parent,) = [
        r
        for r in store.search_runs([experiment.experiment_id])
        if "mlflow.parentRunId" not in r.data.tags
    ]
    page = _artifact(store, parent.info.run_id, "receval/report.html", tmp_path / "c").read_text()
    logged = json.loads(
        _artifact(store, parent.info.run_id, "receval/comparison.json", tmp_path / "c").read_text()
    )
    assert "curve-ap" in page and f"{logged['metrics']['ap@3']['systems']['a']['mean']:.4f}" in page
    capsys.readouterr()
    code = main([*argv, "--no-mlflow-report"])
    assert code == 2 and "--no-mlflow-report goes with --mlflow" in capsys.readouterr().err


def test_cli_without_mlflow_exits_2_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recs, _, truth = _files(tmp_path)
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    for argv in (
        ["evaluate", str(recs), str(truth), "-m", "ap@3", "--mlflow"],
        ["compare", str(truth), str(recs), "-m", "ap@3", "--mlflow"],
    ):
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 2
        assert captured.out == ""  # nothing evaluated, nothing printed
        assert captured.err.strip() == 'error: --mlflow needs mlflow: pip install "receval[mlflow]"'
        assert "Traceback" not in captured.err
    with pytest.raises(ReceValError, match=r'pip install "receval\[mlflow\]"'):
        log_mlflow(_result())


def test_cli_mlflow_options_need_mlflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs, _, truth = _files(tmp_path)
    code = main(["evaluate", str(recs), str(truth), "-m", "ap@3", "--mlflow-run-name", "x"])
    assert code == 2 and "--mlflow-run-name goes with --mlflow" in capsys.readouterr().err


# -- Weights & Biases ------------------------------------------------------------------------


def test_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.util.find_spec("wandb") is not None
    need("wandb", REQUIRE_EXTRAS, found, "pip install wandb")
    for name in list(os.environ):
        if name.startswith("WANDB_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "data"))
    import wandb

    assert wandb.run is None
    res = _result()
    run = wandb.init(project="receval-test", dir=str(tmp_path))
    try:
        assert receval.log_wandb(res, run) is run
        for name, value in res.summary.items():
            assert run.summary[tracker_name(name)] == value
        assert run.summary["counts.users_evaluated"] == 3
        assert run.config["ties"] == "item"
        assert res.log_wandb(run, prefix="method/") is run
        assert run.summary["method/ap_at_3"] == res.summary["ap@3"]
        cmp = _comparison()
        receval.log_wandb(cmp, run, prefix="cmp/")
        assert run.summary["cmp/b/ap_at_3"] == cmp.results["b"].summary["ap@3"]
    finally:
        run.finish()
    assert wandb.run is None
    assert list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))


def test_receval_never_imports_a_tracker_until_asked() -> None:
    import subprocess

    code = (
        "import sys, receval, receval.analysis.tracking, receval.cli\n"
        "receval.log_mlflow, receval.log_wandb\n"
        "receval.evaluate({'u': [1]}, {'u': [1]}, 'ap@1')\n"
        "assert not {'mlflow', 'wandb'} & set(sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@needs_mlflow
def test_cli_says_what_mlflow_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recs, _, truth = _files(tmp_path)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "nosuchscheme://nowhere")
    code = main(["evaluate", str(recs), str(truth), "-m", "ap@3", "--mlflow", "-q"])
    captured = capsys.readouterr()
    assert code == 2 and "ap@3" in captured.out  # the numbers printed, then the error
    assert captured.err.startswith("error: could not log to MLflow at nosuchscheme://nowhere: ")
    assert "nosuchscheme" in captured.err.split(": ", 2)[2]  # MLflow's reason
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1
