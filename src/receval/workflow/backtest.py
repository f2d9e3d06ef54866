"""Backtests: a model retrained and scored over successive time windows.

:func:`backtest` runs the user's model over every fold of a ``time_windows``
split (:func:`receval.split`, :class:`~receval.workflow.split.Folds`): for
each fold it calls ``fit_predict(train, users, fold)`` with the fold's
training part, the users of its test window and a :class:`Fold` (its number,
its windows, the list length ``k``), evaluates the lists it returns against
the fold's test part with :func:`receval.evaluate` (the same kernels and
options as every evaluation) and returns a :class:`BacktestResult`: each
fold's :class:`~receval.Result`, a table fold × metric with each fold's
windows and sizes (the metric over time), the mean across folds with a
Student t interval, and the time spent in the model versus in receval.

:func:`compare_backtests` compares systems backtested on the same folds with
:func:`receval.compare`, pairing by fold and by user within fold: a paired
unit is a (fold, user), so the same user in two folds is two units.

:class:`ShellModel` makes ``fit_predict`` of a command template (``receval
backtest --command``): the fold's train is written to a Parquet file, its
test users to another, and the command writes its recommendations to a file.

>>> import pandas as pd
>>> log = pd.DataFrame({"user": [1, 2, 3, 3], "item": [1, 1, 1, 2],
...                     "timestamp": [0, 0, 1, 2]})
>>> def most_popular(train, users, fold):
...     top = train["item"].value_counts().index[: fold.k].tolist()
...     return {u: top for u in users}
>>> bt = backtest(log, {"test_length": 1, "n_folds": 2}, most_popular, "hit_rate@1")
>>> bt.to_frame()["hit_rate@1"].tolist()
[1.0, 0.0]
>>> bt.summary
{'hit_rate@1': 0.5}
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval._version import __version__
from receval.errors import InputError, OptionError, ReceValError
from receval.evaluation.api import needs_item_context
from receval.evaluation.result import Result, clean
from receval.metrics.spec import MetricSpec, parse_metrics
from receval.workflow.split import Folds, Split, split

__all__ = [
    "FOLD_COLUMNS",
    "PLACEHOLDERS",
    "RECS_FORMATS",
    "BacktestResult",
    "Fold",
    "ShellModel",
    "backtest",
    "compare_backtests",
]

#: The placeholders of :class:`ShellModel`'s command template.
PLACEHOLDERS: tuple[str, ...] = ("train", "users", "out", "k", "fold", "validation")

#: Columns of :meth:`BacktestResult.to_frame` before the metrics.
FOLD_COLUMNS: tuple[str, ...] = (
    "train_from",
    "train_to",
    "test_from",
    "test_to",
    "train_rows",
    "train_users",
    "test_rows",
    "test_users",
    "users_evaluated",
)


@dataclass(frozen=True)
class Fold:
    """What ``fit_predict`` is told of its fold (never the test part).

    Attributes:
        number: the fold's number, 0 for the oldest test window.
        train_from, train_to: the training window ``[from, to)`` (``train_from``
            None: expanding, everything before ``train_to``), as the split shows
            times (dates for date columns).
        test_from, test_to: the test window ``[from, to)``.
        k: the length of the lists to return.
        user_col: the name of the log's user column (that of ``train``).
        validation: the fold's validation part (the log's rows in
            ``[validation_from, validation_to)``, the end of its training
            period, just before the test window) when the split was made with
            ``validation_length=``, for early stopping or tuning; None
            otherwise. ``train`` then ends where it begins.
        validation_from, validation_to: its window (None without one).
    """

    number: int
    train_from: Any
    train_to: Any
    test_from: Any
    test_to: Any
    k: int
    user_col: str = "user"
    validation: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    validation_from: Any = None
    validation_to: Any = None


@dataclass
class BacktestResult:
    """What :func:`backtest` returns.

    Attributes:
        results: one :class:`~receval.Result` per fold, oldest first.
        folds: the :class:`~receval.workflow.split.Folds` the backtest ran on.
        metrics: the canonical metric names, in the order asked.
        summary: metric → the mean of the folds' values (each fold weighs
            the same; folds without a value, e.g. an empty test window, left
            out).
        intervals: one row per metric: ``mean``, ``std`` (across folds, ddof
            1), ``ci_low``, ``ci_high`` (the Student t interval
            ``mean ± t_{1-α/2, n-1} · std / √n`` over the n folds with a
            value; NaN with fewer than 2 folds) and ``folds`` (n).
        confidence: the interval's confidence (1 − α).
        timing: seconds: ``split`` (making the folds; 0 when given),
            ``model`` and ``evaluate`` (per fold, lists; the first fold's
            evaluation also indexes the log's trains when a metric reads
            them: :class:`receval.io.items.TrainRows`), ``model_total``,
            ``receval_total`` (split + evaluations) and ``overhead``
            (``receval_total / model_total``).
        notes: what to know before reading the numbers (empty windows, ...).
        k: the list length asked of the model.
    """

    results: list[Result]
    folds: Folds
    metrics: list[str]
    summary: dict[str, float]
    intervals: pd.DataFrame
    confidence: float
    timing: dict[str, Any]
    k: int
    notes: list[str] = field(default_factory=list)
    version: str = __version__

    def __len__(self) -> int:
        return len(self.results)

    def to_frame(self) -> pd.DataFrame:
        """The metric over time: one row per fold (index ``fold``), its windows
        (:data:`FOLD_COLUMNS`: ``train_from`` … ``test_to``), sizes (rows and
        users of train and test, users evaluated) and each metric's value."""
        rows = []
        for info, res in zip(self.folds.info["folds"], self.results, strict=True):
            tr, te = info["train"], info["test"]
            row = {
                "fold": info["fold"],
                "train_from": tr["from"],
                "train_to": tr["to"],
                "test_from": te["from"],
                "test_to": te["to"],
                "train_rows": tr["rows"],
                "train_users": tr["users"],
                "test_rows": te["rows"],
                "test_users": te["users"],
                "users_evaluated": int(res.counts["users_evaluated"]),
            }
            row |= {m: _float(res.summary[m]) for m in self.metrics}
            rows.append(row)
        columns = ["fold", *FOLD_COLUMNS, *self.metrics]
        return pd.DataFrame(rows, columns=columns).set_index("fold")

    def per_user(self) -> pd.DataFrame:
        """Every fold's per-user values in one table indexed by (fold, user):
        the units :func:`compare_backtests` pairs."""
        return _pooled_per_user(self.results, self._per_user_metrics())

    def _per_user_metrics(self) -> list[str]:
        return [m for m in self.metrics if m in self.results[0].per_user.columns]

    def pooled(self) -> Result:
        """One :class:`~receval.Result` whose users are the (fold, user) pairs:
        ``per_user`` is :meth:`per_user`; ``summary`` the mean over those
        units (an aggregate metric, which has no per-user values: the mean of
        its fold values); ``counts`` the folds' counts added up. What
        :func:`compare_backtests` hands to :func:`receval.compare`."""
        return _pooled(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form: ``metrics`` (the means across folds),
        ``intervals``, ``folds`` (windows, sizes, values), ``timing``,
        ``parameters`` (the split's and the evaluation's), ``notes``, ``version``."""
        frame = self.to_frame().reset_index()
        intervals = {
            m: {c: _float(v) if c != "folds" else int(v) for c, v in row.items()}
            for m, row in self.intervals.to_dict("index").items()
        }
        return clean(
            {
                "metrics": dict(self.summary),
                "confidence": self.confidence,
                "interval": "t over folds",
                "intervals": intervals,
                "folds": frame.to_dict("records"),
                "k": self.k,
                "timing": self.timing,
                "parameters": {
                    "split": {
                        "method": self.folds.info.get("method"),
                        **self.folds.info.get("parameters", {}),
                    },
                    "evaluate": self.results[0].parameters if self.results else {},
                },
                "notes": list(self.notes),
                "version": self.version,
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (NaN written as null)."""
        import json

        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)

    def to_markdown(self, digits: int = 4) -> str:
        """The per-fold table and the mean row as a Markdown table."""
        header, rows = self._rows(digits)
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)

    def to_latex(self, digits: int = 4) -> str:
        """The per-fold table and the mean row as a LaTeX tabular."""
        from receval.evaluation.result import latex_escape

        header, rows = self._rows(digits)
        spec = "l" * 3 + "r" * (len(header) - 3)
        out = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
        out.append(" & ".join(latex_escape(h) for h in header) + " \\\\")
        out.append("\\midrule")
        out += [" & ".join(latex_escape(c) for c in r) + " \\\\" for r in rows]
        out += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(out)

    def _rows(self, digits: int) -> tuple[list[str], list[list[str]]]:
        from receval.analysis.formatting import fmt_value

        frame = self.to_frame()
        header = ["fold", "train", "test", "test users", *self.metrics]
        rows = []
        for f, r in frame.iterrows():
            train = f"[{_show(r['train_from'])}, {_show(r['train_to'])})"
            test = f"[{_show(r['test_from'])}, {_show(r['test_to'])})"
            values = [fmt_value(r[m], digits) for m in self.metrics]
            rows.append([str(f), train, test, str(int(r["test_users"])), *values])
        pct = f"{self.confidence:.0%}"
        cells = []
        for m in self.metrics:
            iv = self.intervals.loc[m]
            cell = fmt_value(iv["mean"], digits)
            if math.isfinite(float(iv["ci_low"])):
                lo, hi = fmt_value(iv["ci_low"], digits), fmt_value(iv["ci_high"], digits)
                cell += f" [{lo}, {hi}]"
            cells.append(cell)
        rows.append(["mean", f"{len(self)} folds", f"{pct} t interval", "", *cells])
        return header, rows

    def to_csv(self) -> str:
        """:meth:`to_frame` as CSV text."""
        return self.to_frame().to_csv()

    def __str__(self) -> str:
        header, rows = self._rows(4)
        widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header]]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        t = self.timing
        lines.append(
            f"time: model {t['model_total']:.3f}s, receval {t['receval_total']:.3f}s "
            f"(split {t['split']:.3f}s + evaluation {sum(t['evaluate']):.3f}s)"
        )
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"BacktestResult(folds={len(self)}, summary={self.summary!r})"


# --------------------------------------------------------------------------- backtest


def backtest(
    log: Any,
    splitter: Folds | Mapping[str, Any],
    fit_predict: Callable[[pd.DataFrame, np.ndarray, Fold], Any],
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    k: int | None = None,
    confidence: float = 0.95,
    **evaluate_options: Any,
) -> BacktestResult:
    """Backtest a model over the folds of a time-window split.

    For each fold (oldest first): ``fit_predict(train, users, fold)`` is
    called with the fold's training part (a DataFrame, the log's columns), its
    test users (a NumPy array of the distinct users of the test part, in order
    of first appearance) and a :class:`Fold` (number, windows, ``k``); what it
    returns — any recommendations :func:`receval.evaluate` reads (a long table
    with a rank or a score, a mapping user → items, a file path) — is
    evaluated against the fold's test part with
    ``evaluate(recs, fold.test, metrics, train=fold.train, **evaluate_options)``
    (``train=`` only where a metric reads it: novelty, coverage, ...).
    A (user, item) pair repeated in a test window counts once (the row with
    the largest rating, a note says how many rows), unless a ``duplicates``
    policy is given. A fold whose test window is empty is not given to the
    model; its values are NaN (a note says so).

    Across folds, each metric's ``summary`` is the mean of the folds' values
    (each fold weighs the same), with the Student t interval over the n folds
    that have a value: ``mean ± t_{(1+confidence)/2, n-1} · s / √n`` (s the
    standard deviation across folds, ddof 1); NaN with one fold.

    Args:
        log: the interaction log (anything :func:`receval.split` reads); not
            read when ``splitter`` is a :class:`Folds` (pass None or the log).
        splitter: the folds: a :class:`~receval.workflow.split.Folds` already
            made (``receval.split(log, "time_windows", ...)``), or the keyword
            options of that split as a mapping (``{"test_length": "7D",
            "n_folds": 12, "train_length": "90D"}``), split here (its time is
            receval's).
        fit_predict: the model: ``(train, users, fold) -> recommendations``.
        metrics: metric strings, as for :func:`receval.evaluate`.
        k: the list length asked of the model (``fold.k``); None: the largest
            cut-off among the metrics (10 when none has one).
        confidence: the confidence of the interval across folds, in (0, 1).
        **evaluate_options: options and inputs of :func:`receval.evaluate`
            (``threshold``, ``empty_truth``, ``catalog``, ...); ``train`` is
            each fold's own.

    Returns:
        A :class:`BacktestResult`.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 1, 1, 1], "item": [1, 2, 3, 4],
        ...                     "timestamp": [0, 1, 2, 3]})
        >>> seen = lambda train, users, fold: {u: [train["item"].max() + 1] for u in users}
        >>> bt = backtest(log, {"test_length": 1, "n_folds": 3}, seen, "precision@1")
        >>> bt.to_frame()[["train_rows", "test_rows", "precision@1"]].values.tolist()
        [[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [3.0, 1.0, 1.0]]
    """
    if not callable(fit_predict):
        raise ReceValError(
            f"fit_predict must be a function (train, users, fold) -> recommendations; "
            f"got {type(fit_predict).__name__}"
        )
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise OptionError("confidence", confidence, expected="a number in (0, 1)")
    if "train" in evaluate_options:
        raise ReceValError(
            "backtest evaluates each fold with its own train: do not give train= "
            "(the log's folds give it)"
        )
    specs = parse_metrics(metrics)
    names = list(dict.fromkeys(str(s) for s in specs))
    k = _list_length(specs, k)
    started = time.perf_counter()
    folds = _folds(log, splitter)
    split_seconds = time.perf_counter() - started
    if not len(folds):
        raise ReceValError("backtest needs at least one fold; the split gave none")
    user_col = _user_column(folds)
    if not {"user_col", "truth_user_col", "item_col", "truth_item_col"} & set(evaluate_options):
        cols = folds.info["columns"]  # the truth is the log's test part: its own columns
        evaluate_options = {
            **evaluate_options,
            "truth_user_col": cols["user"],
            "truth_item_col": cols["item"],
        }
    needs_train = needs_item_context(specs) or evaluate_options.get("item_groups") is not None
    notes = [n for n in folds.info.get("notes", []) if n.startswith("fold")]
    out: dict[str, list[Any]] = {"results": [], "model": [], "evaluate": [], "notes": notes}
    once = None if _duplicates_given(evaluate_options) else _once(folds)
    trains = _Trains(folds) if needs_train else None
    try:
        for s in folds:
            fold = _fold_of(s, k, user_col)
            _run_fold(s, fold, fit_predict, specs, evaluate_options, out, once, trains)
    finally:
        close = getattr(fit_predict, "close", None)
        if callable(close):  # a ShellModel's last temporary folder
            close()
    results, model_s, eval_s = out["results"], out["model"], out["evaluate"]
    summary, intervals = _across(results, names, confidence)
    model_total = float(sum(model_s))
    receval_total = float(split_seconds + sum(eval_s))
    timing = {
        "split": float(split_seconds),
        "model": model_s,
        "evaluate": eval_s,
        "model_total": model_total,
        "receval_total": receval_total,
        "overhead": receval_total / model_total if model_total > 0 else math.nan,
    }
    return BacktestResult(
        results=results,
        folds=folds,
        metrics=names,
        summary=summary,
        intervals=intervals,
        confidence=float(confidence),
        timing=timing,
        k=k,
        notes=notes,
    )


def _run_fold(
    s: Split,
    fold: Fold,
    fit_predict: Callable[..., Any],
    specs: list[MetricSpec],
    evaluate_options: Mapping[str, Any],
    out: dict[str, list[Any]],
    once: tuple[Any, Any, Any] | None,
    trains: _Trains | None = None,
) -> None:
    """One fold: the model's lists (timed), their evaluation (timed) with
    the fold's train as ``train=`` when ``trains`` is given."""
    from receval.evaluation.api import evaluate

    t0 = time.perf_counter()
    users = np.asarray(pd.unique(s.test[fold.user_col])) if len(s.test) else np.array([])
    t1 = time.perf_counter()
    recs: Any = {}
    if len(users):
        recs = fit_predict(s.train, users, fold)
        if recs is None:
            raise ReceValError(
                f"fold {fold.number}: fit_predict returned None; it must return "
                "recommendations (a table with user, item and rank or score, a mapping "
                "user -> items, or a file)"
            )
    t2 = time.perf_counter()
    truth = s.test if once is None else _each_pair_once(s.test, once, fold.number, out["notes"])
    if trains is not None:
        evaluate_options = {**evaluate_options, "train": trains.of(fold.number, s)}
    try:  # lists written in the test users' order are put in user order by evaluate itself
        res = evaluate(recs, truth, specs, **evaluate_options)
    except InputError as exc:  # say which fold: "fold 3, recommendations, row 4: ..."
        where = f"fold {fold.number}, {exc.source or 'recommendations'}"
        raise exc.located(source=where) from None
    t3 = time.perf_counter()
    out["results"].append(res)
    out["model"].append(t2 - t1)
    out["evaluate"].append((t1 - t0) + (t3 - t2))


class _Trains:
    """Each fold's ``train=``. Over a log in time order, each fold's train is
    a range of the log's rows (:class:`~receval.workflow.split.Folds` records
    them): the log's (user, item) rows are indexed once, when the first fold
    is evaluated (:class:`~receval.io.items.TrainRows`), and each fold's item
    context is counted from the index (popularity, training rows, training
    pairs: the counts of the fold's table, without hashing and sorting it).
    The fold's table goes as it is when there is no index (another order,
    ids not integers) or when the table no longer holds the log's rows (the
    model wrote to its user or item column)."""

    def __init__(self, folds: Folds) -> None:
        self.log, self.ranges = folds._log, folds._train_rows
        self.usable = (
            self.log is not None and self.ranges is not None and len(self.ranges) == len(folds)
        )
        cols = folds.info["columns"]
        self.names = (cols["user"], cols["item"])
        self._rows: Any = None
        self._made = False

    def index(self) -> Any:
        """The log's :class:`~receval.io.items.TrainRows` (made on first use), or None."""
        from receval.io.items import TrainRows

        if not self._made and self.usable and self.log is not None and self.ranges:
            labels = {str(c): c for c in self.log.columns}
            self.user, self.item = labels[self.names[0]], labels[self.names[1]]
            prefixes = all(start == 0 for start, _ in self.ranges)  # expanding windows
            self._rows = TrainRows.of(self.log, self.user, self.item, prefixes=prefixes)
        self._made = True
        return self._rows

    def of(self, number: int, s: Split) -> Any:
        """The fold's ``train=``: a range of the index, or its table."""
        rows = self.index()
        if rows is None or self.ranges is None:
            return s.train
        start, stop = self.ranges[number]
        if not (
            self._holds(s.train, self.user, start, stop)
            and self._holds(s.train, self.item, start, stop)
        ):
            return s.train
        return rows.range(start, stop, s.train)

    def _holds(self, train: pd.DataFrame, col: Any, start: int, stop: int) -> bool:
        """Whether ``train[col]`` is still the log's rows [start, stop) (the
        same memory: a slice pandas has not copied since)."""
        if self.log is None or len(train) != stop - start or col not in train.columns:
            return False
        part = train[col].to_numpy()
        whole = self.log[col].to_numpy()[start:stop]
        return _where(part) == _where(whole)


def _where(a: np.ndarray) -> tuple[Any, ...]:
    """An array's memory: its data address, shape, strides and type."""
    face = a.__array_interface__
    return face["data"][0], face["shape"], face.get("strides"), face["typestr"]


def _duplicates_given(evaluate_options: Mapping[str, Any]) -> bool:
    """Whether the caller chose a ``duplicates`` policy (then the truth goes as it is)."""
    opts = evaluate_options.get("options")
    return "duplicates" in evaluate_options or (
        opts is not None and "duplicates" in getattr(opts, "given", ())
    )


def _once(folds: Folds) -> tuple[Any, Any, Any]:
    """The user, item and rating (or None) columns of the folds' tables."""
    cols = folds.info["columns"]
    labels = {str(c): c for c in folds[0].test.columns}
    return tuple(labels.get(cols.get(r), cols.get(r)) for r in ("user", "item", "rating"))


def _each_pair_once(
    test: pd.DataFrame, cols: tuple[Any, Any, Any], number: int, notes: list[str]
) -> pd.DataFrame:
    """The test part with each (user, item) pair once — the row of its largest
    rating, else its first — and a note saying how many rows went (a log
    repeats interactions; evaluate refuses a pair twice in the truth)."""
    user, item, rating = cols
    if _no_pair_twice(test, user, item):
        return test
    repeated = test.duplicated([user, item])
    if not repeated.any():
        return test
    ordered = test
    if rating is not None and rating in test.columns:
        ordered = test.sort_values(rating, ascending=False, kind="stable")
    kept = ordered.drop_duplicates([user, item]).sort_index()
    how = "the largest rating kept" if ordered is not test else "the first kept"
    notes.append(
        f"fold {number}: {int(repeated.sum())} repeated (user, item) rows of the test window "
        f"counted once ({how})"
    )
    return kept


def _no_pair_twice(test: pd.DataFrame, user: Any, item: Any) -> bool:
    """Whether no (user, item) pair of integer columns comes twice, told by one
    hash pass over a single key per row (``(user - min) · span + (item -
    min)``, one-to-one); False when it cannot tell (other columns, or a key
    that would not fit in 63 bits): the two-column check then decides."""
    names = test.columns
    if not names.is_unique or user not in names or item not in names or len(test) < 2:
        return False
    u, i = test[user].to_numpy(), test[item].to_numpy()
    if u.dtype.kind != "i" or i.dtype.kind != "i":
        return False
    u0, i0 = int(u.min()), int(i.min())
    span_u, span_i = int(u.max()) - u0 + 1, int(i.max()) - i0 + 1
    if span_u * span_i >= 2**63:
        return False
    key = (u.astype(np.int64) - u0) * span_i + (i.astype(np.int64) - i0)
    return bool(pd.Index(key).is_unique)


def _user_column(folds: Folds) -> Any:
    """The log's user column, as the folds' tables label it."""
    name = folds.info["columns"]["user"]
    labels = {str(c): c for c in folds[0].train.columns} | {
        str(c): c for c in folds[0].test.columns
    }
    return labels.get(name, name)


def _list_length(specs: list[MetricSpec], k: int | None) -> int:
    if k is None:
        cuts = [s.k for s in specs if s.k is not None]
        return max(cuts) if cuts else 10
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ReceValError(f"k must be a positive integer (the list length); got {k!r}")
    return int(k)


def _folds(log: Any, splitter: Folds | Mapping[str, Any]) -> Folds:
    if isinstance(splitter, Folds):
        return splitter
    if not isinstance(splitter, Mapping):
        raise ReceValError(
            "splitter must be the Folds of receval.split(log, 'time_windows', ...) or the "
            f"options of that split as a mapping (e.g. {{'test_length': '7D', 'n_folds': 12}}); "
            f"got {type(splitter).__name__}"
        )
    if log is None:
        raise ReceValError("backtest needs the log to split (splitter is a mapping of options)")
    options = dict(splitter)
    method = options.pop("method", "time_windows")
    if method != "time_windows":
        raise ReceValError(f"backtest splits by time windows; got method={method!r}")
    return split(log, "time_windows", **options)


def _fold_of(s: Split, k: int, user_col: Any) -> Fold:
    f = s.info["fold"]
    window = f.get("validation") or {}
    return Fold(
        number=int(f["fold"]),
        train_from=f["train"]["from"],
        train_to=f["train"]["to"],
        test_from=f["test"]["from"],
        test_to=f["test"]["to"],
        k=k,
        user_col=user_col,
        validation=s.validation,
        validation_from=window.get("from"),
        validation_to=window.get("to"),
    )


def _across(
    results: list[Result], names: list[str], confidence: float
) -> tuple[dict[str, float], pd.DataFrame]:
    """Per metric the mean of the fold values and its t interval."""
    from scipy import stats as sps

    summary: dict[str, float] = {}
    rows = []
    for m in names:
        values = np.array([_float(r.summary[m]) for r in results], dtype=np.float64)
        x = values[~np.isnan(values)]
        n = len(x)
        mean = float(x.mean()) if n else math.nan
        std = float(x.std(ddof=1)) if n > 1 else math.nan
        if n > 1:
            half = float(sps.t.ppf((1 + confidence) / 2, n - 1)) * std / math.sqrt(n)
            lo, hi = mean - half, mean + half
        else:
            lo = hi = math.nan
        summary[m] = mean
        rows.append(
            {"metric": m, "mean": mean, "std": std, "ci_low": lo, "ci_high": hi, "folds": n}
        )
    frame = pd.DataFrame(rows, columns=["metric", "mean", "std", "ci_low", "ci_high", "folds"])
    return summary, frame.set_index("metric")


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _show(value: Any) -> str:
    return "…" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


# --------------------------------------------------------------------------- comparing backtests


def _pooled_per_user(results: list[Result], metrics: list[str]) -> pd.DataFrame:
    frames = {i: r.per_user[metrics] for i, r in enumerate(results)}
    out = pd.concat(frames, names=["fold", "user"])
    return out


def _add_counts(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {key: _add_counts(a.get(key, 0), b.get(key, 0)) for key in {**a, **b}}
    if isinstance(a, (int, float, np.integer, np.floating)) and isinstance(
        b, (int, float, np.integer, np.floating)
    ):
        return a + b
    return a


def _pooled(bt: BacktestResult) -> Result:
    per_user_metrics = bt._per_user_metrics()
    per_user = _pooled_per_user(bt.results, per_user_metrics)
    counts: dict[str, Any] = {}
    for r in bt.results:
        counts = _add_counts(counts, r.counts) if counts else dict(r.counts)
    summary = {}
    for m in bt.metrics:
        if m in per_user.columns:
            summary[m] = float(per_user[m].mean()) if per_user[m].notna().any() else math.nan
        else:
            summary[m] = bt.summary[m]
    first = bt.results[0]
    notes = list(dict.fromkeys(n for r in bt.results for n in r.notes))
    return Result(
        summary=summary,
        per_user=per_user,
        counts=counts,
        parameters=dict(first.parameters),
        metrics=list(first.metrics),
        notes=notes,
        version=first.version,
    )


def _same_folds(backtests: Mapping[str, BacktestResult]) -> None:
    names = list(backtests)
    first = backtests[names[0]]
    windows = [(f["train"], f["test"]) for f in first.folds.info["folds"]]
    for name in names[1:]:
        other = [(f["train"], f["test"]) for f in backtests[name].folds.info["folds"]]
        if len(other) != len(windows):
            raise ReceValError(
                f"backtests compared must share their folds: {names[0]!r} has {len(windows)} "
                f"folds, {name!r} has {len(other)}"
            )
        for i, (a, b) in enumerate(zip(windows, other, strict=True)):
            keys = ("from", "to", "rows", "users")
            if any(a[0].get(x) != b[0].get(x) or a[1].get(x) != b[1].get(x) for x in keys):
                raise ReceValError(
                    f"backtests compared must share their folds: fold {i} of {names[0]!r} "
                    f"(train {a[0]}, test {a[1]}) differs from that of {name!r} "
                    f"(train {b[0]}, test {b[1]})"
                )


def compare_backtests(
    backtests: Mapping[str, BacktestResult],
    metrics: str | MetricSpec | Iterable[str | MetricSpec] | None = None,
    **compare_options: Any,
) -> Any:
    """Compare systems backtested on the same folds, pairing by fold and by
    user within fold.

    Each backtest becomes one :class:`~receval.Result` whose users are the
    (fold, user) pairs (:meth:`BacktestResult.pooled`), and
    :func:`receval.compare` compares them: a paired unit is a (fold, user) —
    the same user in two folds is two units —, means are over those units,
    and the tests, intervals and corrections are compare's own (its
    ``test``, ``correction``, ``n_resamples``, ``seed``, ... given as
    keywords). Aggregate metrics (no per-user values) show the mean of their
    fold values, untested.

    Args:
        backtests: system name → its :class:`BacktestResult`; all on the same
            folds (same windows and sizes), evaluated under the same options.
        metrics: the metrics to compare (None: those of the first backtest);
            each must have been evaluated in every backtest.
        **compare_options: :func:`receval.compare`'s settings (``baseline``,
            ``test``, ``correction``, ``alpha``, ``n_resamples``, ``seed``,
            ``ci``, ``n_jobs``).

    Returns:
        A :class:`~receval.analysis.compare.Comparison`; its ``aligned``
        frames are indexed by (fold, user).

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 2, 1, 2], "item": [1, 2, 2, 1],
        ...                     "timestamp": [0, 0, 1, 1]})
        >>> a = backtest(log, {"test_length": 1, "n_folds": 2},
        ...              lambda tr, us, f: {u: [1] for u in us}, "p@1")
        >>> b = backtest(log, {"test_length": 1, "n_folds": 2},
        ...              lambda tr, us, f: {u: [2] for u in us}, "p@1")
        >>> c = compare_backtests({"a": a, "b": b}, n_resamples=100)
        >>> c.aligned["precision@1"].index.names, len(c.aligned["precision@1"])
        (FrozenList(['fold', 'user']), 4)
    """
    from receval.analysis.compare import compare
    from receval.evaluation.options import EvalOptions

    if not isinstance(backtests, Mapping) or not backtests:
        raise ReceValError("compare_backtests needs a mapping of system names to backtests")
    for name, bt in backtests.items():
        if not isinstance(bt, BacktestResult):
            raise ReceValError(
                f"compare_backtests compares BacktestResults; {name!r} is a {type(bt).__name__}"
            )
    _same_folds(backtests)
    first = next(iter(backtests.values()))
    names = first.metrics if metrics is None else [str(s) for s in parse_metrics(metrics)]
    for name, bt in backtests.items():
        absent = [m for m in names if m not in bt.metrics]
        if absent:
            raise ReceValError(
                f"the backtest of {name!r} has no {', '.join(absent)} "
                f"(it was evaluated with {', '.join(bt.metrics)})"
            )
    if "options" in compare_options or "truth" in compare_options:
        raise ReceValError(
            "compare_backtests compares the backtests' own evaluations: give neither "
            "options= nor truth="
        )
    options = EvalOptions.from_dict(first.results[0].parameters)
    runs = {name: bt.pooled() for name, bt in backtests.items()}
    return compare(runs, None, names, options=options, **compare_options)


# --------------------------------------------------------------------------- a command as model

_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")

#: the formats the command may write its recommendations in (``{out}``'s suffix)
RECS_FORMATS: tuple[str, ...] = ("csv", "tsv", "parquet", "jsonl")


class ShellModel:
    """A ``fit_predict`` that runs a shell command per fold (``receval backtest --command``).

    For each fold, in a temporary folder, the fold's train is written to
    ``train.parquet`` (the log's columns) and its test users to
    ``users.parquet`` (one column, named as the log's user column); the
    template's placeholders (:data:`PLACEHOLDERS`) are replaced — ``{train}``,
    ``{users}``, ``{out}`` (paths, shell-quoted), ``{k}`` (the list length),
    ``{fold}`` (the fold's number), ``{validation}`` (the fold's validation
    part, ``validation.parquet``, written only when the template names it;
    folds without one are an error); other braces are left as they are — and
    the command is run by the shell (its stdout discarded, its stderr kept).
    It must write its recommendations to ``{out}`` (a ``.csv`` file by
    default: ``recs_format``), which :func:`backtest` then evaluates. A
    command that exits with a non-zero code, or writes no ``{out}``, stops
    the backtest with an error naming the fold, the command and the last
    ``stderr_lines`` lines of its stderr. A fold's folder is removed when the
    next fold starts, and the last one by :meth:`close` (which
    :func:`backtest` calls at the end, whatever happened).

    Args:
        template: the command, e.g. ``"python my_model.py {train} {users} {out} {k}"``.
        recs_format: ``csv``, ``tsv``, ``parquet`` or ``jsonl``: the suffix of ``{out}``.
        workdir: where the temporary folders are made (None: the system's).
        stderr_lines: how much of the command's stderr an error shows.

    Example:
        >>> model = ShellModel("cp {train} {out}", recs_format="parquet")
        >>> model.template
        'cp {train} {out}'
    """

    def __init__(
        self,
        template: str,
        *,
        recs_format: str = "csv",
        workdir: str | Path | None = None,
        stderr_lines: int = 20,
    ) -> None:
        if not isinstance(template, str) or not template.strip():
            raise ReceValError(
                "the command template is empty; give e.g. 'python model.py {train} {users} {out}'"
            )
        if "{out}" not in template:
            names = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            raise ReceValError(
                f"the command template must write the recommendations to {{out}}; got "
                f"{template!r} (placeholders: {names})"
            )
        if recs_format not in RECS_FORMATS:
            raise ReceValError(
                f"recs_format must be one of {', '.join(RECS_FORMATS)}; got {recs_format!r}"
            )
        self.template = template
        self.recs_format = recs_format
        self.workdir = workdir
        self.stderr_lines = stderr_lines
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def command(self, paths: Mapping[str, Path], fold: Fold) -> str:
        """The template with its placeholders replaced (paths shell-quoted)."""
        values = {name: shlex.quote(str(path)) for name, path in paths.items()}
        values |= {"k": str(fold.k), "fold": str(fold.number)}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.template)

    def __call__(self, train: pd.DataFrame, users: np.ndarray, fold: Fold) -> Path:
        self.close()  # the previous fold's files go when the next begins
        self._dir = tempfile.TemporaryDirectory(prefix="receval-backtest-", dir=self.workdir)
        folder = Path(self._dir.name)
        paths = {
            "train": folder / "train.parquet",
            "users": folder / "users.parquet",
            "out": folder / f"recommendations.{self.recs_format}",
        }
        if "{validation}" in self.template:
            if fold.validation is None:
                raise ReceValError(
                    f"fold {fold.number}: the command reads {{validation}}, but the folds "
                    "have no validation part; split with validation_length= "
                    "(receval backtest --validation-length)"
                )
            paths["validation"] = folder / "validation.parquet"
            fold.validation.to_parquet(paths["validation"], index=False)
        train.to_parquet(paths["train"], index=False)
        pd.DataFrame({fold.user_col: users}).to_parquet(paths["users"], index=False)
        command = self.command(paths, fold)
        done = _run_command(command)
        if done.returncode in (-2, 130):  # SIGINT: Ctrl-C reached the command too
            raise KeyboardInterrupt
        tail = _tail(done.stderr, self.stderr_lines)
        said = f"; its stderr ends with: {tail}" if tail else " (nothing on its stderr)"
        if done.returncode != 0:
            raise ReceValError(
                f"fold {fold.number}: the command exited with code {done.returncode}: "
                f"{command}{said}"
            )
        if not paths["out"].is_file():
            raise ReceValError(
                f"fold {fold.number}: the command wrote no recommendations to {{out}} "
                f"({paths['out'].name}): {command}{said}"
            )
        return paths["out"]

    def close(self) -> None:
        """Remove the last fold's temporary folder."""
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _run_command(command: str) -> subprocess.CompletedProcess[bytes]:
    """The model's command run by the shell, in a process group of its own:
    when the backtest stops (Ctrl-C, SIGTERM, an error), every process the
    command started is stopped with it (SIGTERM, then SIGKILL after 5 s), not
    only the shell."""
    posix = hasattr(os, "killpg")
    proc = subprocess.Popen(
        command,
        shell=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=posix,
    )
    try:
        _, err = proc.communicate()
    except BaseException:
        if posix:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        else:  # pragma: no cover - not POSIX
            proc.kill()
            proc.wait()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, None, err)


def _signal_group(pid: int, sig: int) -> None:
    """``sig`` to the process group ``pid`` leads, if it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _tail(data: bytes | None, lines: int) -> str:
    if not data:
        return ""
    text = data.decode("utf-8", errors="replace").rstrip()
    return " | ".join(line.rstrip() for line in text.splitlines()[-lines:] if line.strip())
