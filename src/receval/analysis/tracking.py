"""Logging a result or a comparison to an experiment tracker: MLflow and Weights & Biases.

Neither tracker is a dependency: each is imported inside the function that
uses it (``pip install "receval[mlflow]"``, ``pip install wandb``), and a
:class:`~receval.errors.ReceValError` naming the install command is raised
when it is missing. Nothing global is changed: no tracking URI, experiment or
environment variable is set; a run receval starts, receval ends.

**Names.** Trackers restrict metric and parameter names (MLflow: letters,
digits, ``_ - . /`` and spaces), and receval's canonical metric names hold
``@``, ``[``, ``]``, ``=`` and ``,``. :func:`tracker_name` maps them, one to
one, to readable names:

====================================  =================================
receval                               logged
====================================  =================================
``ndcg@10``                           ``ndcg_at_10``
``ndcg@10[gain=exp]``                 ``ndcg_at_10.gain_exp``
``ndcg@10[gain=exp,ideal=k]``         ``ndcg_at_10.gain_exp.ideal_k``
``long_tail@10[head=0.5]``            ``long_tail_at_10.head_0.5``
``exposure@10[group=a b]``            ``exposure_at_10.group_a-x20-b``
====================================  =================================

``@k`` becomes ``_at_k``; each parameter ``p=v`` becomes ``.p_v``; in a value,
letters, digits, ``_`` and ``+`` stay, ``.`` stays between two digits and
``-`` before a digit (numbers read as numbers), and any other character ``c``
becomes ``-x<hex code of c>-``. Other keys (counts, options, system names)
keep letters, digits and ``_``; any other character is written the same
``-x<hex>-`` way, and nested keys are joined with ``.``. The map is one to one
on canonical metric names (metric names hold no ``_at_`` and no parameter name
of a metric is another's plus ``_...``: both are tested over the registry), a
run refuses two keys that would land on one name, and every run gets the map
(receval name → logged name) as the artifact ``receval/names.json``.
"""

from __future__ import annotations

import contextlib
import json
import math
import numbers
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from receval._version import __version__
from receval.analysis.compare import Comparison
from receval.analysis.report import Report
from receval.errors import MetricError, ReceValError
from receval.evaluation.result import Result, clean
from receval.metrics.spec import parse_metric

__all__ = ["flat", "log_mlflow", "log_wandb", "tracker_name"]

_KEEP = re.compile(r"[A-Za-z0-9_]")
_DIGITS = frozenset("0123456789")
_PREFIX = re.compile(r"[A-Za-z0-9_.\- /]*")
#: MLflow's limit on a parameter value before 2.x raised it (used when the
#: installed MLflow does not say)
_PARAM_LENGTH = 500
_TAG_LENGTH = 5000
_INSTALL = {"mlflow": 'pip install "receval[mlflow]"', "wandb": "pip install wandb"}


def _hex(ch: str) -> str:
    return f"-x{ord(ch):x}-"


def _key(text: object) -> str:
    """One key segment: letters, digits and ``_`` kept, anything else ``-x<hex>-``."""
    return "".join(ch if _KEEP.fullmatch(ch) else _hex(ch) for ch in str(text))


def _value(text: str) -> str:
    """A metric parameter's value: numbers stay readable (``0.5``, ``-1.0``, ``1e-05``)."""
    out = []
    for i, ch in enumerate(text):
        before = text[i - 1] if i else ""
        after = text[i + 1] if i + 1 < len(text) else ""
        number = (ch == "." and before in _DIGITS and after in _DIGITS) or (
            ch == "-" and after in _DIGITS
        )
        if _KEEP.fullmatch(ch) or ch == "+" or number:
            out.append(ch)
        else:
            out.append(_hex(ch))
    return "".join(out)


def tracker_name(name: str) -> str:
    """The name a tracker logs for receval's metric name ``name`` (see the module's rule).

    A name that is not a canonical metric name (e.g. a count's key) is
    written as a plain key: letters, digits and ``_`` kept, any other
    character as ``-x<hex>-``.

    Example:
        >>> tracker_name("ndcg@10[gain=exp]"), tracker_name("precision@5"), tracker_name("rmse")
        ('ndcg_at_10.gain_exp', 'precision_at_5', 'rmse')
        >>> tracker_name("exposure@10[group=a b]")
        'exposure_at_10.group_a-x20-b'
    """
    try:
        spec = parse_metric(name)
    except MetricError:
        spec = None
    if spec is None or str(spec) != name:
        return _key(name)
    text = spec.name if spec.k is None else f"{spec.name}_at_{spec.k}"
    definition = spec.definition
    for param, value in spec.params:
        text += f".{param}_{_value(definition.param_map[param].format(value))}"
    return text


def flat(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings flattened: key paths joined with ``.`` (receval's own keys).

    Example:
        >>> flat({"users_skipped": {"no_truth": 2}, "users": 5})
        {'users_skipped.no_truth': 2, 'users': 5}
    """
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flat(v, key + "."))
        else:
            out[key] = v
    return out


def _logged_path(path: tuple[str, ...]) -> str:
    """A key path as a tracker name: metric names by :func:`tracker_name`, others by _key."""
    return ".".join(tracker_name(p) for p in path)


def _paths(
    mapping: Mapping[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    for k, v in mapping.items():
        here = (*path, str(k))
        if isinstance(v, Mapping) and v:
            yield from _paths(v, here)
        else:
            yield here, v


def _is_number(value: Any) -> bool:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class _Names:
    """receval name → logged name for one run; refuses two names landing on one."""

    def __init__(self, prefix: str) -> None:
        if not _PREFIX.fullmatch(prefix) or prefix.startswith("/") or "//" in prefix:
            raise ReceValError(
                f"prefix {prefix!r}: a tracker prefix may hold letters, digits, '_', '-', '.', "
                "'/' and spaces, and may not start with '/'"
            )
        self.prefix = prefix
        self.table: dict[str, dict[str, str]] = {"metrics": {}, "counts": {}, "parameters": {}}
        self._seen: dict[str, str] = {}

    def add(self, kind: str, original: str, logged: str) -> str:
        logged = self.prefix + logged
        key = f"{kind}:{logged}"
        if self._seen.setdefault(key, original) != original:
            raise ReceValError(
                f"{self._seen[key]!r} and {original!r} would both be logged as {logged!r}"
            )
        self.table[kind][original] = logged
        return logged


def _param_text(value: Any) -> str:
    """A parameter's value as text: a string as itself, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


class _Payload:
    """What is logged for one result: metrics, counts, parameters, files."""

    def __init__(self, res: Result, prefix: str, per_user: bool, step: int | None) -> None:
        self.names = _Names(prefix)
        self.metrics: dict[str, float] = {}
        for m, v in res.summary.items():
            self.metrics[self.names.add("metrics", m, tracker_name(m))] = float(v)
        for path, v in _paths(res.counts):
            if _is_number(v):
                logged = "counts." + _logged_path(path)
                self.metrics[self.names.add("counts", ".".join(path), logged)] = float(v)
        self.params: dict[str, str] = {}
        for path, v in _paths(clean(res.parameters)):
            logged = ".".join(_key(p) for p in path)
            self.params[self.names.add("parameters", ".".join(path), logged)] = _param_text(v)
        self.nan = [k for k, v in self.metrics.items() if math.isnan(v)]
        self.step = step
        self.files: dict[str, str | bytes] = {
            "result.json": res.to_json(),
            "result.md": res.to_markdown(),
            "counts.json": json.dumps(clean(res.counts), indent=2),
            "parameters.json": json.dumps(clean(res.parameters), indent=2, default=str),
        }
        if per_user:
            import io

            buffer = io.BytesIO()
            res.per_user.reset_index().to_parquet(buffer, index=False)
            self.files["per_user.parquet"] = buffer.getvalue()

    def finish(self) -> None:
        """Add the name map, once every name is known."""
        self.files["names.json"] = json.dumps(self.names.table, indent=2, ensure_ascii=False)

    def tags(self, kind: str) -> dict[str, str]:
        tags = {"receval.version": __version__, "receval.kind": kind}
        names = json.dumps(self.names.table["metrics"], ensure_ascii=False)
        tags["receval.metric_names"] = names if len(names) <= _TAG_LENGTH else "see names.json"
        if self.nan:
            tags["receval.nan_metrics"] = ",".join(self.nan)[:_TAG_LENGTH]
        return tags


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


def _folder(prefix: str) -> str:
    """The artifact folder of a run: ``receval`` (``receval/<prefix>`` with a prefix)."""
    tail = _key(prefix.strip("./ ")) if prefix.strip("./ ") else ""
    return "receval" if not tail else f"receval/{tail}"


# -- MLflow -------------------------------------------------------------------------------


def _import(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        raise ReceValError(
            f"logging to {'MLflow' if name == 'mlflow' else 'Weights & Biases'} needs {name}: "
            f"{_INSTALL[name]}"
        ) from None


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _mlflow_log(
    client: Any, run_id: str, payload: _Payload, kind: str, extra: Mapping[str, str | bytes]
) -> None:
    """Log one result's payload (and ``extra`` files) into the run ``run_id``."""
    from mlflow.entities import Metric, Param, RunTag

    limit = _param_limit()
    stamp = int(time.time() * 1000)
    step = payload.step or 0
    metrics = [Metric(k, v, stamp, step) for k, v in payload.metrics.items()]
    long = [k for k, v in payload.params.items() if len(v) > limit]
    params = [
        Param(k, v if len(v) <= limit else v[: limit - 3] + "...")
        for k, v in payload.params.items()
    ]
    tags = payload.tags(kind)
    if long:
        tags["receval.truncated_params"] = ",".join(long)[:_TAG_LENGTH]
    for chunk in _chunks(metrics, 1000):
        client.log_batch(run_id, metrics=chunk)
    for chunk in _chunks(params, 100):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks([RunTag(k, v) for k, v in tags.items()], 100):
        client.log_batch(run_id, tags=chunk)
    payload.finish()
    _mlflow_files(client, run_id, {**payload.files, **extra}, _folder(payload.names.prefix))


def _mlflow_files(client: Any, run_id: str, files: Mapping[str, str | bytes], folder: str) -> None:
    with tempfile.TemporaryDirectory(prefix="receval-mlflow-") as tmp:
        for name, content in files.items():
            path = Path(tmp) / name
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        client.log_artifacts(run_id, tmp, folder)


def _param_limit() -> int:
    try:
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH
    except ImportError:
        return _PARAM_LENGTH
    return int(MAX_PARAM_VAL_LENGTH)


@contextlib.contextmanager
def _mlflow_run(
    mlflow: Any,
    client: Any,
    run_id: str | None,
    nested: bool,
    experiment: str | None,
    run_name: str | None,
) -> Iterator[str]:
    """The run to log into: ``run_id``, else the active run, else a new run
    (ended here); with ``nested``, a new child of that run (ended here)."""
    started = None
    if run_id is None:
        active = mlflow.active_run()
        if active is not None:
            run_id = active.info.run_id
        else:
            experiment_id = None
            if experiment is not None:
                found = client.get_experiment_by_name(experiment)
                experiment_id = (
                    found.experiment_id if found else client.create_experiment(experiment)
                )
            started = mlflow.start_run(experiment_id=experiment_id, run_name=run_name)
            run_id = started.info.run_id
    status = "FINISHED"
    try:
        if nested:
            with _mlflow_child(client, run_id, run_name or "receval") as child:
                yield child
        else:
            yield run_id
    except BaseException:
        status = "FAILED"
        raise
    finally:
        if started is not None:
            mlflow.end_run(status)


@contextlib.contextmanager
def _mlflow_child(client: Any, parent: str, name: str) -> Iterator[str]:
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    experiment_id = client.get_run(parent).info.experiment_id
    child = client.create_run(experiment_id, run_name=name, tags={MLFLOW_PARENT_RUN_ID: parent})
    status = "FINISHED"
    try:
        yield child.info.run_id
    except BaseException:
        status = "FAILED"
        raise
    finally:
        client.set_terminated(child.info.run_id, status)


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
) -> str:
    """Log a :class:`~receval.Result`, a :class:`~receval.Comparison` or a
    :class:`~receval.Report` to MLflow; returns the id of the run logged into.

    The run: ``run_id`` if given, else the active run (``mlflow.start_run()``),
    else a new run in ``experiment`` (default: MLflow's own choice, e.g.
    ``MLFLOW_EXPERIMENT_NAME``) named ``run_name``, ended when logging ends.
    The tracking server is MLflow's (``MLFLOW_TRACKING_URI``). With
    ``nested=True`` a child run of that run is made (and ended) and logged into.

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

    Example:
        >>> import mlflow, receval                                   # doctest: +SKIP
        >>> res = receval.evaluate(recs, truth, ["ndcg@10", "recall@20"])  # doctest: +SKIP
        >>> with mlflow.start_run():                                 # doctest: +SKIP
        ...     receval.log_mlflow(res)         # metrics ndcg_at_10, recall_at_20, ...
    """
    mlflow = _import("mlflow")
    from mlflow.tracking import MlflowClient

    result, cmp, html = _unpack(obj, report)
    # everything is computed (and checked) before a run is made
    if result is not None:
        systems = {"": _Payload(result, prefix, per_user, step)}
    else:
        assert cmp is not None
        systems = {s: _Payload(cmp.results[s], prefix, per_user, step) for s in cmp.systems}
    client = MlflowClient()
    with _mlflow_run(mlflow, client, run_id, nested, experiment, run_name) as target:
        if cmp is None:
            extra = {"report.html": html} if html is not None else {}
            _mlflow_log(client, target, systems[""], "result", extra)
            return target
        parent = _Names(prefix)
        for system, payload in systems.items():
            with _mlflow_child(client, target, system) as child:
                client.set_tag(child, "receval.system", system)
                _mlflow_log(client, child, payload, "result", {})
                parent.table["metrics"].update(payload.names.table["metrics"])
        client.set_tag(target, "receval.version", __version__)
        client.set_tag(target, "receval.kind", "comparison")
        client.set_tag(target, "receval.systems", json.dumps(cmp.systems)[:_TAG_LENGTH])
        files: dict[str, str | bytes] = dict(_comparison_files(cmp, html, report))
        files["names.json"] = json.dumps(parent.table, indent=2, ensure_ascii=False)
        _mlflow_files(client, target, files, _folder(prefix))
    return target


# -- Weights & Biases ------------------------------------------------------------------------


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
    wandb = _import("wandb")
    result, cmp, html = _unpack(obj, report)
    own = run is None and wandb.run is None
    if run is None:
        run = wandb.run if wandb.run is not None else wandb.init(job_type="evaluation")
    try:
        data: dict[str, float] = {}
        config: dict[str, str] = {}
        files: dict[str, str | bytes] = {}
        parts = [("", result)] if result is not None else []
        if cmp is not None:
            parts = [(f"{_key(s)}/", cmp.results[s]) for s in cmp.systems]
        names: dict[str, Any] = {}
        for head, res in parts:
            payload = _Payload(res, prefix + head, per_user, step)
            payload.finish()
            data.update(payload.metrics)
            config.update(payload.params)
            names[head.rstrip("/") or "result"] = payload.names.table
            files.update({head.replace("/", ".") + k: v for k, v in payload.files.items()})
        if cmp is not None:
            files.update(_comparison_files(cmp, html, report))
        elif html is not None:
            files["report.html"] = html
        files["names.json"] = json.dumps(names, indent=2, ensure_ascii=False)
        run.config.update(config, allow_val_change=True)
        run.log(data, step=step)
        artifact = wandb.Artifact(f"receval-{run.id}", type="receval")
        with tempfile.TemporaryDirectory(prefix="receval-wandb-") as tmp:
            for name, content in files.items():
                path = Path(tmp) / name
                if isinstance(content, bytes):
                    path.write_bytes(content)
                else:
                    path.write_text(content, encoding="utf-8")
                artifact.add_file(str(path), name=f"{_folder(prefix)}/{name}")
            run.log_artifact(artifact)
            if own:
                run.finish()
                own = False
    finally:
        if own:
            run.finish(exit_code=1)
    return run
