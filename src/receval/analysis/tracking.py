"""Logging a result, a comparison or a report to an experiment tracker:
MLflow and Weights & Biases.

Neither tracker is a dependency: each is imported inside the function that
uses it (``pip install "receval[mlflow]"``, ``pip install wandb``), and a
:class:`~receval.errors.ReceValError` naming the install command is raised
when it is missing. Nothing global is changed (no tracking URI or experiment
set, the host's random generators left as they were, MLflow's HTTP settings
set only during the call), each request to a tracking server is bounded
(``tracking_timeout=``), and a run receval starts, receval ends: FINISHED,
FAILED on an error, KILLED when interrupted (docs/tracking.md). The names
logged and a result's payload are those of :mod:`receval.evaluation.tracking`
(:func:`tracker_name`); a :class:`~receval.Result` alone also logs itself
(:meth:`receval.Result.log_mlflow`, :meth:`~receval.Result.log_wandb`).
"""

from __future__ import annotations

import json
from typing import Any

from receval._version import __version__
from receval.analysis.compare import Comparison
from receval.analysis.report import Report
from receval.errors import ReceValError
from receval.evaluation.result import Result
from receval.evaluation.tracking import (
    TAG_LENGTH,
    TRACKING_TIMEOUT,
    Names,
    Payload,
    flat,
    folder_of,
    key_of,
    log_result_mlflow,
    log_result_wandb,
    mlflow_child,
    mlflow_files,
    mlflow_log,
    mlflow_run,
    mlflow_session,
    report_files,
    tracker_name,
)

__all__ = ["flat", "log_mlflow", "log_wandb", "tracker_name"]


def _unpack(obj: Any, report: bool | Report) -> tuple[Result | None, Comparison | None, str | None]:
    """(result, comparison, html) of what is to be logged."""
    html = report.html if isinstance(report, Report) else None
    if isinstance(obj, Report):
        return None, obj.comparison, obj.html if report is not False else None
    if isinstance(obj, Result):
        return obj, None, html
    if isinstance(obj, Comparison):
        return None, obj, html
    raise ReceValError(f"can log a receval Result, Comparison or Report; got {type(obj).__name__}")


def _comparison_files(cmp: Comparison, html: str | None, report: bool | Report) -> dict[str, str]:
    files: dict[str, str] = {"comparison.json": cmp.to_json(), "comparison.csv": cmp.to_csv()}
    if report is not False:
        files["comparison.md"] = cmp.to_markdown()
    if html is not None:
        files["report.html"] = html
    return files


def log_mlflow(
    obj: Result | Comparison | Report,
    *,
    run_id: str | None = None,
    nested: bool = False,
    prefix: str = "",
    report: bool | Report = True,
    per_user: bool = False,
    step: int | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    tracking_timeout: float | None = TRACKING_TIMEOUT,
) -> str:
    """Log a :class:`~receval.Result`, a :class:`~receval.Comparison` or a
    :class:`~receval.Report` to MLflow; returns the id of the run logged into.

    The run: ``run_id`` if given, else the active run (``mlflow.start_run()``),
    else a new run in ``experiment`` (default: MLflow's own choice, e.g.
    ``MLFLOW_EXPERIMENT_NAME``) named ``run_name``, ended when logging ends.
    The tracking server is MLflow's (``MLFLOW_TRACKING_URI``). With
    ``nested=True`` a child run of that run is made (and ended) and logged into.

    The runs receval makes, receval ends: FINISHED, FAILED when an error
    stops the logging, KILLED when it is interrupted (Ctrl-C, SIGTERM: any
    ``BaseException`` that is no ``Exception``); the active run or ``run_id``
    (or ``MLFLOW_RUN_ID``'s run) is the caller's, logged into and left running.
    Each request to a tracking server gives up after ``tracking_timeout``
    seconds, retries included (None or 0: MLflow's own retries, about four
    minutes for a server that is down; MLflow's ``MLFLOW_HTTP_REQUEST_*``
    variables that the environment sets are kept). The host's ``random`` and
    NumPy global generators are restored after the call.

    What is logged for a result (names by :func:`tracker_name`, after ``prefix``):

    - metrics: each metric's mean (NaN as NaN, and its name in the tag
      ``receval.nan_metrics``), each number of ``Result.counts`` as
      ``counts.<key>`` (nested keys joined with ``.``), at ``step`` (default 0);
    - params: each value of ``Result.parameters`` (the evaluation options;
      nested keys joined with ``.``), a string as itself, anything else as
      JSON, cut to MLflow's length limit (named in the tag
      ``receval.truncated_params``; whole in ``parameters.json``);
    - tags: ``receval.version``, ``receval.kind``, ``receval.metric_names``;
    - artifacts in ``receval/`` (``receval/<prefix>/`` with a prefix):
      ``result.json`` (:meth:`Result.to_json`), ``result.md``, ``counts.json``,
      ``parameters.json``, ``names.json`` (receval name → logged name, for
      metrics, counts and params) and, with ``per_user=True``,
      ``per_user.parquet`` (one row per user).

    A comparison logs one child run per system (run name: the system's name,
    tag ``receval.system``) holding that system's result as above, and on the
    parent run the comparison — every mean with its interval, every pair with
    its difference, interval, p-values and effect size — as
    ``receval/comparison.json``, ``comparison.csv`` (:meth:`Comparison.to_csv`)
    and ``comparison.md``. The HTML report needs the recommendation lists (its
    curves are computed from them), so it is logged, as ``receval/report.html``,
    when a :class:`~receval.Report` is logged (or given as ``report=``);
    ``report=False`` leaves out the HTML and Markdown renderings.

    Raises:
        ReceValError: mlflow is not installed (``pip install "receval[mlflow]"``),
            or ``obj`` is none of the above.
        OutputError: the logging failed (``could not log to MLflow at <uri>:
            <reason>``: the server refused or did not answer in time, ...),
            raised from MLflow's error.

    Example:
        >>> import mlflow, receval                                   # doctest: +SKIP
        >>> res = receval.evaluate(recs, truth, ["ndcg@10", "recall@20"])  # doctest: +SKIP
        >>> with mlflow.start_run():                                 # doctest: +SKIP
        ...     receval.log_mlflow(res)         # metrics ndcg_at_10, recall_at_20, ...
    """
    result, cmp, html = _unpack(obj, report)
    if result is not None:  # (Result.log_mlflow, with the timeout)
        files = report_files(html)
        payload = result.tracking_payload(prefix, per_user, step)  # checked before a run
        return log_result_mlflow(
            payload,
            files,
            run_id=run_id,
            nested=nested,
            experiment=experiment,
            run_name=run_name,
            tracking_timeout=tracking_timeout,
        )
    assert cmp is not None
    # everything is computed (and checked) before a run is made
    systems: dict[str, Payload] = {
        s: cmp.results[s].tracking_payload(prefix, per_user, step) for s in cmp.systems
    }
    with (
        mlflow_session(tracking_timeout) as (mlflow, client),
        mlflow_run(mlflow, client, run_id, nested, experiment, run_name) as target,
    ):
        parent = Names(prefix)
        for system, payload in systems.items():
            with mlflow_child(client, target, system) as child:
                client.set_tag(child, "receval.system", system)
                mlflow_log(client, child, payload, "result", {})
                parent.table["metrics"].update(payload.names.table["metrics"])
        client.set_tag(target, "receval.version", __version__)
        client.set_tag(target, "receval.kind", "comparison")
        client.set_tag(target, "receval.systems", json.dumps(cmp.systems)[:TAG_LENGTH])
        files: dict[str, str | bytes] = dict(_comparison_files(cmp, html, report))
        files["names.json"] = json.dumps(parent.table, indent=2, ensure_ascii=False)
        mlflow_files(client, target, files, folder_of(prefix))
    return target


def log_wandb(
    obj: Result | Comparison | Report,
    run: Any = None,
    *,
    prefix: str = "",
    report: bool | Report = True,
    per_user: bool = False,
    step: int | None = None,
) -> Any:
    """Log a :class:`~receval.Result`, :class:`~receval.Comparison` or
    :class:`~receval.Report` to Weights & Biases; returns the run.

    The run: ``run`` if given, else ``wandb.run``, else a new run
    (``wandb.init(job_type="evaluation")``, finished here; offline with
    ``WANDB_MODE=offline``). The names and content are those of
    :func:`log_mlflow`: metrics and ``counts.<key>`` with ``run.log`` (and so
    in the run's summary), the parameters in ``run.config``, the files as one
    artifact of type ``receval``. W&B has no nested runs: a comparison logs
    each system's metrics under ``<system>/`` (config: ``<system>/<param>``)
    in the one run.

    Raises:
        ReceValError: wandb is not installed (``pip install wandb``).

    Example:
        >>> import receval                                   # doctest: +SKIP
        >>> receval.log_wandb(receval.evaluate(recs, truth, "ndcg@10"))  # doctest: +SKIP
    """
    result, cmp, html = _unpack(obj, report)
    if result is not None:
        return result.log_wandb(run, prefix=prefix, report=html, per_user=per_user, step=step)
    assert cmp is not None
    heads = {s: f"{key_of(s)}/" for s in cmp.systems}
    parts = [
        (head, cmp.results[s].tracking_payload(prefix + head, per_user, step))
        for s, head in heads.items()
    ]
    files = _comparison_files(cmp, html, report)
    return log_result_wandb(parts, files, run, prefix=prefix, step=step)
