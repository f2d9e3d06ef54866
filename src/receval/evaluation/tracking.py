"""Logging to an experiment tracker, MLflow or Weights & Biases: the names, the
payload of one result, and the runs (the evaluation layer: :meth:`receval.Result.log_mlflow`
and :meth:`~receval.Result.log_wandb` use it; :mod:`receval.analysis.tracking`
logs comparisons and reports with it).

Neither tracker is a dependency: each is imported inside the function that
uses it (``pip install "receval[mlflow]"``, ``pip install wandb``), and a
:class:`~receval.errors.ReceValError` naming the install command is raised
when it is missing. Nothing global is changed: no tracking URI or experiment
is set, the host's ``random`` and NumPy global generators are left as they
were (MLflow draws run names with ``random``), and MLflow's HTTP settings are
set only during the call (:func:`mlflow_session`); a run receval starts,
receval ends (:func:`mlflow_run`: FINISHED, FAILED on an error, KILLED on
Ctrl-C or a signal).

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
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from receval._version import __version__
from receval.errors import MetricError, OptionError, OutputError, ReceValError, option, said
from receval.metrics.spec import parse_metric

__all__ = [
    "TRACKING_TIMEOUT",
    "Names",
    "Payload",
    "check_tracking_timeout",
    "flat",
    "folder_of",
    "import_tracker",
    "key_of",
    "log_result_mlflow",
    "log_result_wandb",
    "mlflow_child",
    "mlflow_files",
    "mlflow_log",
    "mlflow_run",
    "mlflow_session",
    "mlflow_settings",
    "report_files",
    "tracker_name",
]

_KEEP = re.compile(r"[A-Za-z0-9_]")
_DIGITS = frozenset("0123456789")
_PREFIX = re.compile(r"[A-Za-z0-9_.\- /]*")
#: MLflow's limit on a parameter value before 2.x raised it (used when the
#: installed MLflow does not say)
_PARAM_LENGTH = 500
TAG_LENGTH = 5000
_INSTALL = {"mlflow": 'pip install "receval[mlflow]"', "wandb": "pip install wandb"}


def _hex(ch: str) -> str:
    return f"-x{ord(ch):x}-"


def key_of(text: object) -> str:
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
        return key_of(name)
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


class Names:
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


class Payload:
    """What is logged for one result: metrics, counts, parameters, files.

    Built from a result's parts (:meth:`receval.Result.tracking_payload`):
    its means, counts, parameters (JSON-ready) and the files to attach."""

    def __init__(
        self,
        summary: Mapping[str, float],
        counts: Mapping[str, Any],
        parameters: Mapping[str, Any],
        files: Mapping[str, str | bytes],
        prefix: str = "",
        step: int | None = None,
    ) -> None:
        self.names = Names(prefix)
        self.metrics: dict[str, float] = {}
        for m, v in summary.items():
            self.metrics[self.names.add("metrics", m, tracker_name(m))] = float(v)
        for path, v in _paths(counts):
            if _is_number(v):
                logged = "counts." + _logged_path(path)
                self.metrics[self.names.add("counts", ".".join(path), logged)] = float(v)
        self.params: dict[str, str] = {}
        for path, v in _paths(parameters):
            logged = ".".join(key_of(p) for p in path)
            self.params[self.names.add("parameters", ".".join(path), logged)] = _param_text(v)
        self.nan = [k for k, v in self.metrics.items() if math.isnan(v)]
        self.step = step
        self.files: dict[str, str | bytes] = dict(files)

    def finish(self) -> None:
        """Add the name map, once every name is known."""
        self.files["names.json"] = json.dumps(self.names.table, indent=2, ensure_ascii=False)

    def tags(self, kind: str) -> dict[str, str]:
        tags = {"receval.version": __version__, "receval.kind": kind}
        names = json.dumps(self.names.table["metrics"], ensure_ascii=False)
        tags["receval.metric_names"] = names if len(names) <= TAG_LENGTH else "see names.json"
        if self.nan:
            tags["receval.nan_metrics"] = ",".join(self.nan)[:TAG_LENGTH]
        return tags


def folder_of(prefix: str) -> str:
    """The artifact folder of a run: ``receval`` (``receval/<prefix>`` with a prefix)."""
    tail = key_of(prefix.strip("./ ")) if prefix.strip("./ ") else ""
    return "receval" if not tail else f"receval/{tail}"


# -- MLflow -------------------------------------------------------------------------------


def import_tracker(name: str) -> Any:
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


def mlflow_log(
    client: Any, run_id: str, payload: Payload, kind: str, extra: Mapping[str, str | bytes]
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
        tags["receval.truncated_params"] = ",".join(long)[:TAG_LENGTH]
    for chunk in _chunks(metrics, 1000):
        client.log_batch(run_id, metrics=chunk)
    for chunk in _chunks(params, 100):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks([RunTag(k, v) for k, v in tags.items()], 100):
        client.log_batch(run_id, tags=chunk)
    payload.finish()
    mlflow_files(client, run_id, {**payload.files, **extra}, folder_of(payload.names.prefix))


def _write_files(folder: str, files: Mapping[str, str | bytes]) -> dict[str, Path]:
    """Write ``files`` (name → text or bytes) into ``folder``; name → path."""
    paths = {}
    for name, content in files.items():
        path = paths[name] = Path(folder) / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return paths


def mlflow_files(client: Any, run_id: str, files: Mapping[str, str | bytes], folder: str) -> None:
    with tempfile.TemporaryDirectory(prefix="receval-mlflow-") as tmp:
        _write_files(tmp, files)
        client.log_artifacts(run_id, tmp, folder)


def _param_limit() -> int:
    try:
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH
    except ImportError:
        return _PARAM_LENGTH
    return int(MAX_PARAM_VAL_LENGTH)


#: receval's bound, in seconds, on one request to an MLflow tracking server,
#: retries included (``tracking_timeout=``, ``--tracking-timeout``)
TRACKING_TIMEOUT = 30.0


def check_tracking_timeout(value: Any) -> float | None:
    """``tracking_timeout=`` as seconds: a number > 0; None or 0 for MLflow's
    own settings (None returned). Anything else is an :class:`OptionError`."""
    if value is None or (isinstance(value, numbers.Real) and value == 0):
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        ok = False
    else:
        ok = math.isfinite(value) and value > 0
    if not ok:
        raise OptionError(
            "tracking_timeout",
            value,
            expected=f"seconds > 0, or {said('None', '0')} for MLflow's own retries",
        )
    return float(value)


def mlflow_settings(timeout: float) -> dict[str, str]:
    """MLflow's HTTP settings (environment variables) that keep one request to
    the tracking server within ``timeout`` seconds, retries included: three
    tries from 8 s up (no pause, then 2 s), else one; each try waits at most
    ``(timeout - pauses) / tries`` seconds, whole and at least 1 (what MLflow
    takes), to connect and for each answer; no random jitter, and a server's
    ``Retry-After`` is not waited for.

    Example:
        >>> mlflow_settings(30)["MLFLOW_HTTP_REQUEST_TIMEOUT"], mlflow_settings(2)
        ... # doctest: +NORMALIZE_WHITESPACE
        ('9', {'MLFLOW_HTTP_REQUEST_TIMEOUT': '2', 'MLFLOW_HTTP_REQUEST_MAX_RETRIES': '0',
        'MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR': '1', 'MLFLOW_HTTP_REQUEST_BACKOFF_JITTER': '0',
        'MLFLOW_HTTP_RESPECT_RETRY_AFTER_HEADER': 'false',
        'MLFLOW_DATABRICKS_ENDPOINT_HTTP_RETRY_TIMEOUT': '2'})
    """
    tries = 3 if timeout >= 8 else 1
    pauses = 2 if tries == 3 else 0  # urllib3: none before the 2nd try, factor * 2 before the 3rd
    per_try = max(1, int((timeout - pauses) // tries))
    return {
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(per_try),
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(tries - 1),
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
        "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
        "MLFLOW_HTTP_RESPECT_RETRY_AFTER_HEADER": "false",
        "MLFLOW_DATABRICKS_ENDPOINT_HTTP_RETRY_TIMEOUT": str(max(1, int(timeout))),
    }


@contextlib.contextmanager
def _environ_during(settings: Mapping[str, str]) -> Iterator[None]:
    """Each of ``settings`` the environment does not set, set during the block
    and removed after it: a variable the host set is the host's choice, kept."""
    added = [name for name in settings if name not in os.environ]
    for name in added:
        os.environ[name] = settings[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def _random_kept() -> Iterator[None]:
    """The host's ``random`` and NumPy global generators as they were before
    the block (MLflow draws run names, experiment ids and retry jitter with
    ``random``)."""
    import random

    import numpy as np

    state, numpy_state = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(state)
        np.random.set_state(numpy_state)


def _shown_uri(uri: str) -> str:
    """A tracking URI for a message: a password in it written ``***``."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(uri)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
            return parts._replace(netloc=netloc).geturl()
    except ValueError:
        pass
    return uri


def _reason(exc: BaseException, timeout: float | None) -> str:
    """What went wrong, in one line: the system's word for a failed connection
    ("Connection refused"), a timeout, else MLflow's message."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and all(cause is not c for c in chain):
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, TimeoutError) or "Timeout" in type(c).__name__ for c in chain):
        seconds = int(timeout) if timeout is not None and timeout.is_integer() else timeout
        bound = f" (the bound: {option('tracking_timeout', seconds)})" if seconds else ""
        text = f"timed out: the server did not answer{bound}"
    elif isinstance(chain[-1], OSError) and chain[-1].strerror:
        text = str(chain[-1].strerror)
    else:
        text = str(getattr(exc, "message", None) or exc)
    text = " ".join(text.split())
    return text if len(text) <= 500 else text[:497] + "..."


def _could_not_log(mlflow: Any, exc: BaseException, timeout: float | None) -> OutputError:
    try:
        uri = _shown_uri(str(mlflow.get_tracking_uri()))
    except Exception:  # the URI only names the server in the message
        uri = "the tracking URI"
    return OutputError(f"could not log to MLflow at {uri}: {_reason(exc, timeout)}", path=uri)


@contextlib.contextmanager
def mlflow_session(timeout: float | None = TRACKING_TIMEOUT) -> Iterator[tuple[Any, Any]]:
    """``(mlflow, client)`` for one logging call, during which: each request
    to a tracking server gives up after ``timeout`` seconds, retries included
    (:func:`mlflow_settings`; None: MLflow's own settings; MLflow's variables
    the host set are kept); the host's ``random`` and NumPy global states are
    restored after it; and MLflow's errors (and the system's: a refused
    connection, a full disk) end it as one :class:`~receval.errors.OutputError`,
    ``could not log to MLflow at <uri>: <reason>``."""
    timeout = check_tracking_timeout(timeout)
    settings = {} if timeout is None else mlflow_settings(timeout)
    with _random_kept(), _environ_during(settings):
        mlflow = import_tracker("mlflow")
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        try:
            yield mlflow, MlflowClient()
        except (MlflowException, OSError) as exc:
            raise _could_not_log(mlflow, exc, timeout) from exc


def _status(exc: BaseException | None) -> str:
    """How a run receval made ends: FINISHED, FAILED on an error, KILLED when
    interrupted (Ctrl-C, SIGTERM, SIGHUP: a BaseException that is no Exception)."""
    if exc is None:
        return "FINISHED"
    return "FAILED" if isinstance(exc, Exception) else "KILLED"


def _end(end: Any, status: str, failing: bool) -> None:
    """End a run; while an error or interrupt is on its way, a failure to end
    it (the server gone) does not replace that error."""
    if not failing:
        end(status)
        return
    with contextlib.suppress(Exception):
        end(status)


@contextlib.contextmanager
def mlflow_run(
    mlflow: Any,
    client: Any,
    run_id: str | None,
    nested: bool,
    experiment: str | None,
    run_name: str | None,
) -> Iterator[str]:
    """The run to log into: ``run_id``, else the active run, else the run
    ``MLFLOW_RUN_ID`` names (as ``mlflow run`` sets it), else a new run; with
    ``nested``, a new child of that run. The runs made here are ended here, as
    :func:`_status` says; the others are the caller's, left running."""
    started = None
    if run_id is None:
        active = mlflow.active_run()
        if active is not None:
            run_id = active.info.run_id
        elif os.environ.get("MLFLOW_RUN_ID"):  # start_run would resume, end and unset it
            run_id = os.environ["MLFLOW_RUN_ID"]
        else:
            experiment_id = None
            if experiment is not None:
                found = client.get_experiment_by_name(experiment)
                experiment_id = (
                    found.experiment_id if found else client.create_experiment(experiment)
                )
            try:
                started = mlflow.start_run(experiment_id=experiment_id, run_name=run_name)
            except BaseException as exc:
                if mlflow.active_run() is not None:  # started, then interrupted
                    _end(mlflow.end_run, _status(exc), failing=True)
                raise
            run_id = started.info.run_id
    try:
        if nested:
            with mlflow_child(client, run_id, run_name or "receval") as child:
                yield child
        else:
            yield run_id
    except BaseException as exc:
        if started is not None:
            _end(mlflow.end_run, _status(exc), failing=True)
        raise
    if started is not None:
        _end(mlflow.end_run, _status(None), failing=False)


@contextlib.contextmanager
def mlflow_child(client: Any, parent: str, name: str) -> Iterator[str]:
    """A new child run of ``parent`` named ``name``, ended here (:func:`_status`)."""
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    experiment_id = client.get_run(parent).info.experiment_id
    child = client.create_run(experiment_id, run_name=name, tags={MLFLOW_PARENT_RUN_ID: parent})
    child_id = child.info.run_id

    def end(status: str) -> None:
        client.set_terminated(child_id, status)

    try:
        yield child_id
    except BaseException as exc:
        _end(end, _status(exc), failing=True)
        raise
    _end(end, _status(None), failing=False)


def report_files(report: Any) -> dict[str, str]:
    """The HTML page to attach, as files: ``{"report.html": page}`` for a
    :class:`~receval.Report` (its ``.html``) or the page's text itself, ``{}``
    for None, False or True (no page given)."""
    if report is None or isinstance(report, bool):
        return {}
    html = report if isinstance(report, str) else getattr(report, "html", None)
    if not isinstance(html, str):
        raise ReceValError(
            f"report=: a receval Report or its HTML text; got {type(report).__name__}"
        )
    return {"report.html": html}


def log_result_mlflow(
    payload: Payload,
    extra: Mapping[str, str | bytes],
    *,
    run_id: str | None = None,
    nested: bool = False,
    experiment: str | None = None,
    run_name: str | None = None,
    tracking_timeout: float | None = TRACKING_TIMEOUT,
) -> str:
    """Log one result's ``payload`` (and the ``extra`` files) to MLflow: into
    ``run_id``, else the active run, else a new run (see
    :func:`receval.log_mlflow`), each request within ``tracking_timeout``
    seconds (:func:`mlflow_session`); returns the id of the run logged into."""
    with (
        mlflow_session(tracking_timeout) as (mlflow, client),
        mlflow_run(mlflow, client, run_id, nested, experiment, run_name) as target,
    ):
        mlflow_log(client, target, payload, "result", extra)
    return target


def log_result_wandb(
    parts: list[tuple[str, Payload]],
    extra: Mapping[str, str | bytes],
    run: Any = None,
    *,
    prefix: str = "",
    step: int | None = None,
) -> Any:
    """Log the payloads ``parts`` — (name head, payload): ``""`` for a result,
    ``"<system>/"`` for each system of a comparison — and the ``extra`` files
    to Weights & Biases, into ``run``, else ``wandb.run``, else a new run
    (finished here); returns the run."""
    wandb = import_tracker("wandb")
    own = run is None and wandb.run is None
    if run is None:
        run = wandb.run if wandb.run is not None else wandb.init(job_type="evaluation")
    try:
        data: dict[str, float] = {}
        config: dict[str, str] = {}
        files: dict[str, str | bytes] = {}
        names: dict[str, Any] = {}
        for head, payload in parts:
            payload.finish()
            data.update(payload.metrics)
            config.update(payload.params)
            names[head.rstrip("/") or "result"] = payload.names.table
            files.update({head.replace("/", ".") + k: v for k, v in payload.files.items()})
        files.update(extra)
        files["names.json"] = json.dumps(names, indent=2, ensure_ascii=False)
        run.config.update(config, allow_val_change=True)
        run.log(data, step=step)
        artifact = wandb.Artifact(f"receval-{run.id}", type="receval")
        with tempfile.TemporaryDirectory(prefix="receval-wandb-") as tmp:
            for name, path in _write_files(tmp, files).items():
                artifact.add_file(str(path), name=f"{folder_of(prefix)}/{name}")
            run.log_artifact(artifact)
            if own:
                run.finish()
                own = False
    finally:
        if own:
            run.finish(exit_code=1)
    return run
