"""MLflow logging when things go wrong (#31 points 5 and 6): a run receval
started and that is interrupted ends KILLED (an error: FAILED), the caller's
run is left running; a tracking server that refuses or does not answer fails
within ``tracking_timeout`` (``--tracking-timeout``) with one line, the
numbers already printed; logging leaves the host's environment and its
``random`` and NumPy global generators as they were.

Real MLflow file stores in tmp_path, real closed and silent local ports. The
interrupt is MLflow's own ``MlflowClient.log_batch`` raising KeyboardInterrupt
(monkeypatched: where a Ctrl-C or a signal's handler would raise it)."""

from __future__ import annotations

import json
import os
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import receval
from receval.analysis.tracking import log_mlflow
from receval.cli import main
from receval.errors import OptionError, OutputError
from tests.required import REQUIRE_EXTRAS, need
from tests.test_tracking import HAS_MLFLOW, _environ, _files, _result

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True, scope="module")
def _mlflow() -> None:
    need("mlflow", REQUIRE_EXTRAS, HAS_MLFLOW, 'pip install "receval[mlflow]"')


#: what a bounded failure may take at most here (the bound asked is 2 s; a
#: loaded machine's imports and evaluation come on top): MLflow's own retries
#: took 248 s
GENEROUS = 30.0


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A local MLflow file store (MLFLOW_TRACKING_URI); yields a client reading it."""
    _quiet_mlflow(monkeypatch)
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


def _quiet_mlflow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for name in list(os.environ):  # the host's own settings: none here unless a test sets one
        if name.startswith("MLFLOW_HTTP_") or name in {
            "MLFLOW_EXPERIMENT_NAME",
            "MLFLOW_EXPERIMENT_ID",
            "MLFLOW_RUN_ID",
        }:
            monkeypatch.delenv(name)


@pytest.fixture
def closed_port() -> str:
    """http://127.0.0.1:<a port nothing listens on> (connections refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def silent_port() -> Iterator[str]:
    """http://127.0.0.1:<a port that takes connections and never answers>."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)  # the kernel completes the connections; nobody reads or answers
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def interrupt_at_log_batch(monkeypatch: pytest.MonkeyPatch) -> Any:
    """MLflow's client raises ``exc`` when logging a batch (a signal's arrival point)."""
    from mlflow.tracking import MlflowClient

    def arm(exc: BaseException) -> None:
        def log_batch(self: Any, *args: Any, **kwargs: Any) -> None:
            raise exc

        monkeypatch.setattr(MlflowClient, "log_batch", log_batch)

    return arm


def _runs(client: Any, experiment: str) -> dict[str, Any]:
    found = client.get_experiment_by_name(experiment)
    return {r.info.run_name: r for r in client.search_runs([found.experiment_id])}


# -- 5. an interrupted run ends KILLED, not RUNNING ---------------------------------------------


def test_an_interrupted_run_receval_started_ends_killed(
    store: Any, interrupt_at_log_batch: Any
) -> None:
    interrupt_at_log_batch(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        log_mlflow(_result(), experiment="x", run_name="result")
    interrupt_at_log_batch(RuntimeError("disk on fire"))
    with pytest.raises(RuntimeError, match="disk on fire"):
        log_mlflow(_result(), experiment="x", run_name="error")
    runs = _runs(store, "x")
    assert runs["result"].info.status == "KILLED"
    assert runs["error"].info.status == "FAILED"
    # a comparison: its children and itself
    from receval.cli._main import Terminated

    interrupt_at_log_batch(Terminated(143))  # SIGTERM, as the command line raises it
    cmp = receval.compare({"a": {"u1": [1]}, "b": {"u1": [2]}}, {"u1": {1: 1}}, "ap@1")
    with pytest.raises(KeyboardInterrupt):
        log_mlflow(cmp, experiment="x", run_name="cmp")
    runs = _runs(store, "x")
    assert runs["cmp"].info.status == "KILLED"
    assert runs["a"].info.status == "KILLED" and "b" not in runs  # b was never made


def test_the_callers_run_is_left_running_a_child_ends_killed(
    store: Any, interrupt_at_log_batch: Any
) -> None:
    import mlflow

    interrupt_at_log_batch(KeyboardInterrupt())
    with mlflow.start_run(run_name="mine") as mine:
        with pytest.raises(KeyboardInterrupt):
            log_mlflow(_result())
        assert mlflow.active_run().info.run_id == mine.info.run_id
        assert store.get_run(mine.info.run_id).info.status == "RUNNING"
        with pytest.raises(KeyboardInterrupt):
            log_mlflow(_result(), nested=True, run_name="child")
        (child,) = [
            r
            for r in store.search_runs([mine.info.experiment_id])
            if r.data.tags.get("mlflow.parentRunId") == mine.info.run_id
        ]
        assert child.info.status == "KILLED" and child.info.run_name == "child"
    # the host's run, ended by the host's `with`
    assert store.get_run(mine.info.run_id).info.status == "FINISHED"


def test_the_run_mlflow_run_id_names_is_the_callers(store: Any) -> None:
    """As ``mlflow run`` sets it: logged into, left running and set (MLflow's
    start_run would have resumed it, ended it FINISHED and unset the variable)."""
    run = store.create_run("0", run_name="project")
    os.environ["MLFLOW_RUN_ID"] = run.info.run_id  # (the fixture checks the rest is as it was)
    try:
        assert log_mlflow(_result()) == run.info.run_id
        assert os.environ["MLFLOW_RUN_ID"] == run.info.run_id
    finally:
        os.environ.pop("MLFLOW_RUN_ID", None)
    logged = store.get_run(run.info.run_id)
    assert logged.info.status == "RUNNING" and "ap_at_3" in logged.data.metrics
    store.set_terminated(run.info.run_id)


def test_the_command_line_interrupted_while_logging(
    store: Any,
    interrupt_at_log_batch: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recs, _, truth = _files(tmp_path)
    interrupt_at_log_batch(KeyboardInterrupt())
    argv = ["evaluate", str(recs), str(truth), "-m", "ap@3", "--json", "--no-mlflow-report"]
    code = main([*argv, "--mlflow", "--mlflow-experiment", "cli", "--mlflow-run-name", "r"])
    captured = capsys.readouterr()
    assert code == 130
    assert captured.err.strip().splitlines() == ["interrupted (Ctrl-C)"]
    assert "ap@3" in json.loads(captured.out)["metrics"]  # printed before the logging
    assert _runs(store, "cli")["r"].info.status == "KILLED"


# -- 6. an unreachable server fails in a bounded time, the numbers printed ----------------------


def test_a_refused_connection_fails_fast_with_one_line_and_the_numbers_printed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    closed_port: str,
) -> None:
    _quiet_mlflow(monkeypatch)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", closed_port)
    recs, other, truth = _files(tmp_path)
    runs = [
        ["evaluate", str(recs), str(truth), "-m", "ap@3", "--json", "--tracking-timeout", "2"],
        # receval's default bound: three tries, 2 s apart (MLflow's own: 248 s)
        ["compare", str(truth), str(recs), str(other), "-m", "ap@3", "--n-resamples", "20"],
    ]
    for argv in runs:
        start = time.monotonic()
        code = main([*argv, "--mlflow", "--no-mlflow-report", "-q"])
        took = time.monotonic() - start
        captured = capsys.readouterr()
        assert code == 2 and took < GENEROUS, (code, took)
        line = f"error: could not log to MLflow at {closed_port}: Connection refused\n"
        assert captured.err == line
        assert "ap@3" in captured.out  # the numbers, printed before the logging


def test_a_silent_server_times_out_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, silent_port: str
) -> None:
    _quiet_mlflow(monkeypatch)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", silent_port)
    res = _result()
    before = _environ()
    start = time.monotonic()
    with pytest.raises(OutputError) as caught:
        log_mlflow(res, tracking_timeout=2)
    took = time.monotonic() - start
    assert took < GENEROUS, took
    message = str(caught.value)
    assert message == (
        f"could not log to MLflow at {silent_port}: timed out: the server did not answer "
        "(the bound: tracking_timeout=2)"
    )
    assert "--tracking-timeout 2" in caught.value.cli_message()
    assert caught.value.__cause__ is not None  # MLflow's own error, kept
    assert _environ() == before


def test_a_password_in_the_uri_is_not_shown(
    monkeypatch: pytest.MonkeyPatch, closed_port: str
) -> None:
    _quiet_mlflow(monkeypatch)
    uri = closed_port.replace("//", "//me:s3cret@")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    with pytest.raises(OutputError) as caught:
        log_mlflow(_result(), tracking_timeout=1)
    assert "s3cret" not in str(caught.value) and "//me:***@127.0.0.1" in str(caught.value)


def test_the_bound_is_set_during_the_call_only_and_the_hosts_settings_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import mlflow.environment_variables as names

    from receval.evaluation.tracking import mlflow_session, mlflow_settings

    _quiet_mlflow(monkeypatch)
    settings = mlflow_settings(30)
    for name in settings:  # MLflow still reads these names
        assert getattr(names, name).name == name
    assert settings["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "9"  # 3 tries of 9 s + 2 s pause
    assert settings["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "77")  # the host's
    before = _environ()
    with mlflow_session(30):
        assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "77"
        assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"
        assert os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"] == "0"
    assert _environ() == before
    with mlflow_session(None):  # MLflow's own settings
        assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
    for bad in (-1, float("nan"), float("inf"), "30", True):
        with pytest.raises(OptionError, match="tracking_timeout="):
            log_mlflow(_result(), tracking_timeout=bad)


# -- 6. logging draws nothing from the host's generators -------------------------------------


def test_logging_leaves_the_hosts_random_state(store: Any, closed_port: str) -> None:
    """MLflow names a run with ``random`` when none is given."""
    res = _result()
    cmp = receval.compare({"a": {"u1": [1]}, "b": {"u1": [2]}}, {"u1": {1: 1}}, "ap@1")

    def draws() -> tuple[float, float]:
        return random.random(), float(np.random.random())

    random.seed(1)
    np.random.seed(1)
    expected = draws()
    for log in (
        lambda: log_mlflow(res),
        lambda: log_mlflow(cmp),
        lambda: log_mlflow(res, experiment="new"),  # an experiment id is drawn too
    ):
        random.seed(1)
        np.random.seed(1)
        log()
        assert draws() == expected
    os.environ["MLFLOW_TRACKING_URI"], uri = closed_port, os.environ["MLFLOW_TRACKING_URI"]
    try:  # a failure too (MLflow's retries draw a jitter)
        random.seed(1)
        np.random.seed(1)
        with pytest.raises(OutputError):
            log_mlflow(res, tracking_timeout=1)
        assert draws() == expected
    finally:
        os.environ["MLFLOW_TRACKING_URI"] = uri
