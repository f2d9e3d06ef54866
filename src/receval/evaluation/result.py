"""The result of an evaluation, and how it renders."""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from receval.metrics.spec import MetricSpec

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "PerUserValues",
    "Result",
    "float_cells",
    "markdown_escape",
    "means_csv",
    "pending_per_user",
]


_LATEX = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "^": r"\^{}",
    "~": r"\~{}",
}


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table cell."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


_MARKDOWN = {"\\": "\\\\", "|": "\\|", "<": "\\<", "\r\n": "<br>", "\r": "<br>", "\n": "<br>"}
_MARKDOWN_RE = re.compile(r"\r\n|[\\|<\r\n]")


def markdown_escape(text: object) -> str:
    r"""Text safe inside a Markdown table cell: ``\``, ``|`` and ``<``
    backslash-escaped (the cell shows them as they are, the row keeps its
    columns, no raw HTML), each line break as ``<br>`` (a row is one line).

    Example:
        >>> print(markdown_escape("a|b <script>\nC:\\x"))
        a\|b \<script><br>C:\\x
    """
    return _MARKDOWN_RE.sub(lambda m: _MARKDOWN[m.group()], str(text))


def clean(value: Any) -> Any:
    """JSON-safe copy: NaN (undefined) becomes null, an infinity the string
    ``"inf"`` or ``"-inf"`` (JSON has no number for it, and null would read as
    undefined), NumPy scalars become Python numbers.

    >>> clean({"t": float("inf"), "d": float("-inf"), "p": float("nan"), "x": 0.5})
    {'t': 'inf', 'd': '-inf', 'p': None, 'x': 0.5}
    """
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@dataclass
class Result:
    """What :func:`receval.evaluate` returns, whatever the number of metrics.

    Attributes:
        summary: canonical metric name → mean over the users evaluated
            (NaN values of undefined users left out); for aggregate metrics
            (coverage, gini, ...) their one value over the evaluated users' lists.
        per_user: one row per user (every user of the truth and every user
            with recommendations, sorted by id), one column per per-user
            metric (aggregates have none); NaN where the value is undefined or
            the user was skipped.
        counts: rows read, users evaluated, users skipped or scored 0 and why,
            users with an undefined value per metric.
        parameters: the options that produced the numbers.
        metrics: the parsed metrics, in the order asked.
        notes: what receval decided on the user's behalf (e.g. ids matched as
            strings).
        version: the receval version.
        groups: with ``user_groups=``: one row per (grouping, group) — the
            index — with every metric's value over that group's users and
            ``users`` (evaluated), each row equal to evaluating that group's
            users alone; None otherwise.
        group_results: with ``user_groups=``: (grouping, group) → the
            :class:`Result` of that group's users evaluated alone (its
            ``per_user`` is what :func:`receval.group_gap` tests and what
            ``compare(..., user_groups=)`` compares); None otherwise.
        item_groups: with ``item_groups=`` and a cut-off: one row per item
            group — the index (grouping, group) — with ``items`` (the group's
            items), ``catalog_share`` (its catalog items / the catalog's size),
            ``exposure@k`` (its share of the log-discounted attention of the
            top-k slots, k the largest cut-off asked) and the value within the
            group of each aggregate metric asked that has one (coverage,
            prediction_coverage, gini, entropy); None otherwise.
        per_user_spark: Spark engine only: the per-user values as a lazy Spark
            DataFrame (``user`` and one column per per-user metric), computed
            on the executors when an action runs. ``per_user`` of a Spark
            result collects it to the driver on first use (every user: O(users)
            memory, a choice the caller makes by asking). None for the other
            engines.
    """

    summary: dict[str, float]
    per_user: pd.DataFrame
    counts: dict[str, Any]
    parameters: dict[str, Any]
    metrics: list[MetricSpec]
    notes: list[str] = field(default_factory=list)
    version: str = ""
    per_user_spark: Any = field(default=None, repr=False, compare=False)
    groups: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    group_results: dict[tuple[str, Any], Result] | None = field(
        default=None, repr=False, compare=False
    )
    item_groups: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, metric: str) -> float:
        """The mean of a metric, by any spelling of its name (``res["MAP@10"]``),
        read as the evaluation read it: under its convention's defaults
        (``res["map@10"]`` of a ``trec_eval`` result is its
        ``ap@10[denominator=relevant]``)."""
        from receval.evaluation import conventions
        from receval.metrics.spec import parse_metric

        convention = self.parameters.get("convention")
        defaults = conventions.get(convention).params if convention else None
        key = str(parse_metric(metric, defaults))
        if key not in self.summary:
            under = f" under the convention {convention!r}" if convention else ""
            raise KeyError(
                f"{metric!r} (read as {key!r}{under}) is not among this result's metrics: "
                + ", ".join(self.summary)
            )
        return self.summary[key]

    def __eq__(self, other: object) -> bool:
        """Two results are equal when their numbers and what produced them are:
        summary (NaN equal to NaN), per-user values, counts, parameters,
        metrics, notes and version."""
        if not isinstance(other, Result):
            return NotImplemented
        same = lambda a, b: a == b or (a != a and b != b)  # noqa: E731  NaN equals NaN
        return (
            self.summary.keys() == other.summary.keys()
            and all(same(v, other.summary[k]) for k, v in self.summary.items())
            and self.per_user.equals(other.per_user)
            and (self.counts, self.parameters, self.metrics, self.notes, self.version)
            == (other.counts, other.parameters, other.metrics, other.notes, other.version)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as the dataclass was

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: its mean and the number of users it averages
        (the users evaluated but those whose value is undefined; aggregate
        metrics: the users evaluated)."""
        import pandas as pd

        return pd.DataFrame(
            {"mean": [self.summary[str(m)] for m in self.metrics], "users": self._users()},
            index=pd.Index([str(m) for m in self.metrics], name="metric"),
        )

    def _users(self) -> list[int]:
        """The number of users each metric's mean averages (:meth:`to_frame`'s ``users``)."""
        undefined = self.counts.get("undefined", {})
        evaluated = int(self.counts["users_evaluated"])
        return [evaluated - int(undefined.get(str(m), 0)) for m in self.metrics]

    def _means(self) -> list[float]:
        """Each metric's mean as :meth:`to_frame`'s ``mean`` column holds it (float64)."""
        values = [self.summary[str(m)] for m in self.metrics]
        return [math.nan if v is None else float(v) for v in values]

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON-ready form: metrics, counts, parameters, notes, version;
        with user groups, ``groups``: one record per (grouping, group); with
        item groups, ``item_groups``: one record per item group."""
        out: dict[str, Any] = {
            "metrics": dict(self.summary),
            "counts": self.counts,
            "parameters": self.parameters,
            "notes": list(self.notes),
            "version": self.version,
        }
        if self.groups is not None:
            out["groups"] = _records(self.groups)
        if self.item_groups is not None:
            out["item_groups"] = _records(self.item_groups)
        return clean(out)

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (NaN written as null, an infinity as
        ``"inf"`` / ``"-inf"``: :func:`clean`)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def tracking_payload(
        self, prefix: str = "", per_user: bool = False, step: int | None = None
    ) -> Any:
        """What a tracker logs for this result (a
        :class:`receval.evaluation.tracking.Payload`): the means, the counts
        (numbers), the parameters, and the files ``result.json``, ``result.md``,
        ``counts.json``, ``parameters.json`` (and ``per_user.parquet`` with
        ``per_user=True``), names after ``prefix``."""
        from receval.evaluation.tracking import Payload

        files: dict[str, str | bytes] = {
            "result.json": self.to_json(),
            "result.md": self.to_markdown(),
            "counts.json": json.dumps(clean(self.counts), indent=2),
            "parameters.json": json.dumps(clean(self.parameters), indent=2, default=str),
        }
        if per_user:
            import io

            buffer = io.BytesIO()
            self.per_user.reset_index().to_parquet(buffer, index=False)
            files["per_user.parquet"] = buffer.getvalue()
        return Payload(
            self.summary, self.counts, clean(self.parameters), files, prefix=prefix, step=step
        )

    def log_mlflow(
        self,
        *,
        run_id: str | None = None,
        nested: bool = False,
        prefix: str = "",
        report: Any = None,
        per_user: bool = False,
        step: int | None = None,
        experiment: str | None = None,
        run_name: str | None = None,
        tracking_timeout: float | None = 30.0,
    ) -> str:
        """Log this result to MLflow; returns the id of the run logged into.

        The same as :func:`receval.log_mlflow` (``receval.log_mlflow(res)``):
        the means as metrics (``ndcg@10`` → ``ndcg_at_10``), ``counts.*``, the
        options as params, and ``receval/result.json``, ``result.md``,
        ``counts.json``, ``parameters.json``, ``names.json`` as artifacts, into
        ``run_id``, else the active run, else a new run in ``experiment``
        (ended here); ``nested=True``: a child of that run. ``report``: a
        :class:`~receval.Report` (or its HTML) logged as ``receval/report.html``.
        ``per_user=True`` adds ``per_user.parquet``; ``step`` is the metrics'
        step (an epoch in a training loop). ``tracking_timeout``: seconds each
        request to a tracking server may take, retries included (None or 0:
        MLflow's own retries; docs/tracking.md). A run receval started ends
        KILLED when interrupted, FAILED on an error.

        Raises:
            ReceValError: mlflow is not installed (``pip install "receval[mlflow]"``).

        Example:
            >>> import mlflow, receval                                   # doctest: +SKIP
            >>> with mlflow.start_run():                                 # doctest: +SKIP
            ...     receval.evaluate(recs, truth, "ndcg@10").log_mlflow()
        """
        from receval.evaluation.tracking import log_result_mlflow, report_files

        files = report_files(report)
        payload = self.tracking_payload(prefix, per_user, step)  # checked before a run
        return log_result_mlflow(
            payload,
            files,
            run_id=run_id,
            nested=nested,
            experiment=experiment,
            run_name=run_name,
            tracking_timeout=tracking_timeout,
        )

    def log_wandb(
        self,
        run: Any = None,
        *,
        prefix: str = "",
        report: Any = None,
        per_user: bool = False,
        step: int | None = None,
    ) -> Any:
        """Log this result to Weights & Biases; returns the run. The same as
        :func:`receval.log_wandb`: into ``run``, else ``wandb.run``, else a new
        run (``WANDB_MODE=offline`` for an offline one), finished here.

        Raises:
            ReceValError: wandb is not installed (``pip install wandb``).

        Example:
            >>> receval.evaluate(recs, truth, "ndcg@10").log_wandb()      # doctest: +SKIP
        """
        from receval.evaluation.tracking import log_result_wandb, report_files

        files = report_files(report)
        payload = self.tracking_payload(prefix, per_user, step)
        return log_result_wandb([("", payload)], files, run, prefix=prefix, step=step)

    def _rows(self, digits: int) -> list[tuple[str, str, str]]:
        names = [str(m) for m in self.metrics]
        return [
            (name, "nan" if math.isnan(v) else f"{v:.{digits}f}", str(n))
            for name, v, n in zip(names, self._means(), self._users(), strict=True)
        ]

    def to_csv(self) -> str:
        """The means as CSV (``metric,mean,users``: :meth:`to_frame`, what
        ``receval evaluate -o csv`` prints); the per-user values are
        ``per_user.to_csv()``.

        Example:
            >>> import receval
            >>> print(receval.evaluate({1: [1, 2]}, {1: [2]}, "rr").to_csv(), end="")
            metric,mean,users
            rr,0.5,1
        """
        return means_csv(self)

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table of the means."""
        lines = ["| metric | mean | users |", "|---|---:|---:|"]
        lines += [f"| {markdown_escape(m)} | {v} | {n} |" for m, v, n in self._rows(digits)]
        return "\n".join(lines) + "\n"

    def to_latex(self, digits: int = 4) -> str:
        """A LaTeX ``tabular`` of the means (booktabs rules)."""

        lines = [r"\begin{tabular}{lrr}", r"\toprule", r"metric & mean & users \\", r"\midrule"]
        lines += [f"{latex_escape(m)} & {v} & {n} \\\\" for m, v, n in self._rows(digits)]
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines) + "\n"

    def _ungrouped(self) -> list[str]:
        """One line per grouping that leaves users out of every group (no
        group, or a null one): they are in no row of the table above."""
        out = []
        for name, c in (self.counts.get("user_groups") or {}).items():
            none = int(c.get("users_without_group", 0))
            null = int(c.get("users_with_a_null_group", 0))
            if none:
                users = "1 user is" if none == 1 else f"{none} users are"
                why = f" ({null} with a null {name!r})" if null else ""
                out.append(f"{name}: {users} in no group{why}")
        return out

    def __str__(self) -> str:
        rows = self._rows(4)
        wm = max([len("metric")] + [len(r[0]) for r in rows])
        wv = max([len("mean")] + [len(r[1]) for r in rows])
        wn = max([len("users")] + [len(r[2]) for r in rows])
        out = [f"{'metric':<{wm}}  {'mean':>{wv}}  {'users':>{wn}}"]
        out.append("-" * (wm + wv + wn + 4))
        out += [f"{m:<{wm}}  {v:>{wv}}  {n:>{wn}}" for m, v, n in rows]
        out += ["", self._counts_line()]
        if self.groups is not None:
            shown = self.groups.copy()
            for col in shown.columns.drop("users"):
                shown[col] = [f"{v:.4f}" for v in shown[col]]
            out += ["", "by user group (each group evaluated alone):", shown.to_string()]
            out += self._ungrouped()
        if self.item_groups is not None:
            shown = self.item_groups.copy()
            for col in shown.columns.drop("items"):
                shown[col] = [f"{v:.4f}" for v in shown[col]]
            out += ["", "by item group:", shown.to_string()]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    def _counts_line(self) -> str:
        """The line under the table: who was evaluated, skipped, scored 0."""
        c = self.counts
        return (
            f"{c['users_evaluated']} users evaluated of {c['users']}"
            + "".join(
                f"; {n} skipped ({why.replace('_', ' ')})"
                for why, n in c["users_skipped"].items()
                if n
            )
            + "".join(
                f"; {n} scored 0 ({why.replace('_', ' ')})"
                for why, n in c["users_scored_zero"].items()
                if n
            )
        )

    def __repr__(self) -> str:
        return f"Result({self.summary!r})"


def float_cells(values: np.ndarray, na_rep: str) -> list[str]:
    """A float64 column's cells as pandas' ``to_csv`` writes them (NumPy's shortest
    text of each value, ``na_rep`` for NaN), for the CSVs written without pandas."""
    import numpy as np

    text = values.astype(str).astype(object)
    text[np.isnan(values)] = na_rep
    return text.tolist()


def means_csv(result: Result) -> str:
    """``result.to_frame().to_csv()`` (``metric,mean,users``), the same bytes,
    written without pandas where the frame would be :class:`Result`'s own with
    a float64 ``mean`` column (every mean a float); else by pandas."""
    import csv
    import io

    import numpy as np

    floats = all(isinstance(result.summary[str(m)], float) for m in result.metrics)
    if type(result).to_frame is not Result.to_frame or not floats:
        return result.to_frame().to_csv()
    shown = float_cells(np.array(result._means(), dtype=np.float64), na_rep="")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=os.linesep)
    writer.writerow(["metric", "mean", "users"])
    for m, v, n in zip(result.metrics, shown, result._users(), strict=True):
        writer.writerow([str(m), str(v), n])
    return buffer.getvalue()


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per row of a table indexed by (grouping, group)."""
    return [
        {"grouping": g, "group": v, **row}
        for (g, v), row in zip(frame.index, frame.to_dict(orient="records"), strict=True)
    ]


@dataclass(frozen=True)
class PerUserValues:
    """The per-user values of an in-process evaluation before they are a
    DataFrame: ``values`` (one row per per-user metric, one column per user),
    ``user_ids`` (sorted), ``names`` (the metrics). :attr:`Result.per_user`
    builds its frame from them on first read, so that an evaluation whose
    per-user values nobody reads never loads pandas (issue #33)."""

    user_ids: np.ndarray
    values: np.ndarray
    names: list[str]

    def frame(self) -> pd.DataFrame:
        """The ``per_user`` frame: indexed by ``user``, one column per metric."""
        import pandas as pd

        index = pd.Index(self.user_ids, name="user")
        return pd.DataFrame(self.values.T, index=index, columns=self.names, copy=False)


def pending_per_user(result: Result) -> PerUserValues | None:
    """The per-user values of ``result`` while its ``per_user`` frame is not
    built yet (a writer that needs no pandas reads them); None once it is, or
    for a result made with a frame."""
    values = result.__dict__.get("_per_user")
    return values if isinstance(values, PerUserValues) else None


def _per_user(self: Result) -> pd.DataFrame:
    frame = self.__dict__.get("_per_user")
    if isinstance(frame, PerUserValues):  # built on first read
        frame = frame.frame()
        self.__dict__["_per_user"] = frame
    if frame is None and self.per_user_spark is not None:  # collected on first use
        frame = _collected(self.per_user_spark)
        self.__dict__["_per_user"] = frame
    return frame


def _set_per_user(self: Result, frame: pd.DataFrame | PerUserValues | None) -> None:
    self.__dict__["_per_user"] = frame


def _collected(df: Any) -> pd.DataFrame:
    """A Spark per-user DataFrame as the in-process engine's frame: indexed by
    user, sorted by id (numbers numerically, text by code point)."""
    frame = df.toPandas()
    frame = frame.sort_values("user", kind="stable").set_index("user")
    return frame


# ``per_user`` of a Spark result is collected when first read, that of an
# in-process one built when first read (the dataclass field stays:
# ``Result(summary, per_user, ...)`` sets it)
Result.per_user = property(_per_user, _set_per_user)  # type: ignore[assignment,method-assign]
