"""Train/test(/validation) splits of an interaction log, deterministic given a seed.

An interaction log is a table with a user and an item column and optionally a
rating and a timestamp. Every split keeps the input's columns (all of them,
under their own names) and rows (in their input order) and returns a
:class:`Split`: ``train``, ``test``, optionally ``validation``, and ``info`` —
the method, its parameters, the columns used, the sizes of each part and
everything that was dropped, and why.

Columns are found as for every input (:func:`receval.io.interactions.log_columns`):
the user and item by :func:`receval.io.columns.resolve` (``user``, ``user_id``,
``userId``, ``uid``, ...), the rating and timestamp by
:data:`receval.io.interactions.LOG_ALIASES` (``rating``, ``stars``;
``timestamp``, ``time``, ``date``, ...); ``user_col=`` and the others name them.
:func:`split_file` splits a file (``receval split``): :func:`receval.io.interactions.read_log`
reads it whole, so the parts keep the file's own columns and names.

Methods (``split(log, method=...)``):

- ``random``: a random share (or number) of all rows is test.
- ``user_random``: for each user, a random share (or number) of their rows.
- ``time``: chronological, global — rows at or after a cut-off time are test;
  the cut-off is given, or is the timestamp at which the last ``test_size``
  share of rows (ordered by time) starts. Rows sharing the cut-off timestamp
  all go to test, so the test share can exceed ``test_size`` a little.
- ``user_time``: chronological, per user — each user's last n rows (or last
  share), ordered by timestamp, ties as ``leave_last_out`` breaks them (by item id
  in the id order, so neither row order nor the ids' form moves a row).
- ``leave_last_out``: per user, the last n rows by time (``test_size=n``, an
  int, default 1), optionally the ``validation_size`` rows just before them as
  validation. Rows of one user with the same timestamp are ordered by item id
  in the id order (:func:`receval.ids.order_of`), the larger id counting as
  later: the split depends neither on row order nor on the form of the ids
  (``1``, ``1.0``, ``"1"``); rows equal in user, time and item keep input order.
- ``leave_one_out``: ``leave_last_out`` with n = 1 (one implementation).
- ``session``: sessions — a (user, ``session_col``) pair, or a run of one
  user's rows with no inactivity gap longer than ``session_gap`` — are
  assigned wholly to train or test by a time cut (``cutoff``, or found from
  ``test_size``: the time that assigns the first of the last ``test_size``
  share or count of sessions, ordered by that time): a session is test
  when it starts at or after the cut; one that starts before the cut and ends
  at or after it (it straddles the cut) goes where ``straddle`` says: ``test``
  (default: a session is test when its last row is at or after the cut, as
  session-rec assigns them), ``train`` (by its first row) or ``drop``.
  Validation (``validation_cutoff``, or ``validation_size`` sessions just
  before the test ones): a second, earlier cut; the sessions between the two
  cuts are validation, and a session straddling the validation cut follows
  the same ``straddle`` rule (``test``: validation when its last row is at or
  after the validation cut; ``train``: by its first row; ``drop``: dropped,
  counted).
- ``time_windows``: :class:`Folds` of successive test windows of
  ``test_length`` (one every ``step``), ``n_folds`` of them ending just after
  the last interaction (or at ``end``, or starting at ``start``); each fold
  trains on everything before its test window (expanding) or on the
  ``train_length`` before it (rolling). With ``validation_length``, the last
  ``validation_length`` of each fold's train window (just before its test
  window) is that fold's validation part and the train ends where it starts
  (rolling: ``train_length`` spans train and validation together).

Per-user counts: a share ``s`` of a user with ``n`` rows is ``round(s · n)``
rows (halves rounded up), and never more than ``n − 1``, so every user keeps
at least one training row (users with a single row stay in train only; the
info counts them). :func:`kfold` yields cross-validation folds.

Options, applied in this order: ``min_user_interactions`` /
``min_item_interactions`` (before splitting, repeated until every remaining
user and item has enough rows — a k-core), then the split, then
``relevance_threshold`` (test and validation keep only rows whose rating is
≥ the threshold) and ``drop_unseen_users`` / ``drop_unseen_items`` (test and
validation rows whose user / item has no training row are dropped). Every drop
is counted in ``info["dropped"]``.

>>> import pandas as pd
>>> log = pd.DataFrame({"user": [1, 1, 1, 2, 2], "item": [10, 11, 12, 10, 13],
...                     "timestamp": [1, 2, 3, 1, 2]})
>>> s = leave_one_out(log)
>>> s.test.to_dict("list")
{'user': [1, 2], 'item': [12, 13], 'timestamp': [3, 2]}
>>> s.sizes()["train"]
{'rows': 3, 'users': 2, 'items': 2}
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from receval.errors import InputError, OptionError, ReceValError, check_seed, option
from receval.ids import canonical, order_of
from receval.io.interactions import (
    LOG_ALIASES,
    as_frame,
    log_columns,
    read_log_located,
    time_key,
)
from receval.io.write import OutputSet

__all__ = [
    "METHODS",
    "Folds",
    "Split",
    "filter_interactions",
    "kfold",
    "leave_last_out",
    "leave_one_out",
    "random_split",
    "session_split",
    "split",
    "split_file",
    "time_split",
    "time_windows",
    "user_random_split",
    "user_time_split",
]

Method = Literal[
    "random",
    "user_random",
    "time",
    "user_time",
    "leave_one_out",
    "leave_last_out",
    "session",
    "time_windows",
]
METHODS: tuple[str, ...] = (
    "random",
    "user_random",
    "time",
    "user_time",
    "leave_one_out",
    "leave_last_out",
    "session",
    "time_windows",
)
#: where a session that straddles the cut goes (``session``)
STRADDLE: tuple[str, ...] = ("test", "train", "drop")

_EPS = 1e-9

#: whether pandas shares the data of a slice until one side writes (pandas 3,
#: or 2.x with the option on): then a fold's parts need no copy of the log
_COPY_ON_WRITE: bool = int(pd.__version__.split(".")[0]) >= 3 or (
    pd.get_option("mode.copy_on_write") is True
)

#: The files :meth:`Split.save` writes into its folder (a validation part only when
#: there is one; ``manifest.json`` last).
FILES: tuple[str, ...] = (
    "train.parquet",
    "test.parquet",
    "validation.parquet",
    "split.json",
    "folds.json",
    "manifest.json",
)


@dataclass
class Split:
    """One split of an interaction log.

    Attributes:
        train, test: the parts (input columns, input row order, fresh index).
        validation: the validation part, or None when none was asked.
        info: ``method``, ``parameters``, ``sizes`` (rows, users, items of
            the input, of the log after filtering, and of each part),
            ``dropped`` (what each option removed) and ``notes``.
    """

    train: pd.DataFrame
    test: pd.DataFrame
    validation: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def sizes(self) -> dict[str, dict[str, int]]:
        """Rows, distinct users and distinct items of each part."""
        return dict(self.info["sizes"])

    def describe(self) -> list[str]:
        """One line per fact: the method, each part's size, each drop."""
        sz = self.info["sizes"]
        params = ", ".join(f"{k}={v}" for k, v in self.info["parameters"].items())
        lines = [f"split: {self.info['method']} ({params})"]
        for part in ("input", "filtered", "train", "validation", "test"):
            if part in sz:
                s = sz[part]
                lines.append(f"{part}: {s['rows']} rows, {s['users']} users, {s['items']} items")
        lines += self.info.get("notes", [])
        return lines

    def __str__(self) -> str:
        return "\n".join(self.describe())

    def save(self, out_dir: str | Path, *, prefix: str = "") -> dict[str, Path]:
        """Write ``train.parquet``, ``test.parquet`` (``validation.parquet``)
        and ``split.json`` (the info) into ``out_dir``, then
        ``manifest.json`` (every file with its size and SHA-256); return the
        paths. The folder is locked while it is written
        (:class:`receval.io.write.OutputSet`): a concurrent save into it fails
        at once, and a folder with a manifest holds one complete split."""
        paths: dict[str, Path] = {}
        parts = {"train": self.train, "test": self.test, "validation": self.validation}
        text = json.dumps(_jsonable(self.info), indent=2) + "\n"
        params = {"method": self.info.get("method"), **_jsonable(self.info.get("parameters", {}))}
        with OutputSet(out_dir, "split", params, prefix) as s:
            for name, frame in parts.items():
                if frame is not None:
                    paths[name] = s.write(
                        f"{prefix}{name}.parquet", lambda p, f=frame: f.to_parquet(p, index=False)
                    )
            paths["info"] = s.write(
                f"{prefix}split.json", lambda p: p.write_text(text, encoding="utf-8")
            )
        paths["manifest"] = s.manifest
        return paths


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return str(value)
    return value


# --------------------------------------------------------------------------- helpers


def _size(frame: pd.DataFrame, user_col: str, item_col: str) -> dict[str, int]:
    return {
        "rows": len(frame),
        "users": int(frame[user_col].nunique()),
        "items": int(frame[item_col].nunique()),
    }


@dataclass
class _Opts:
    """A split's options; the columns as asked (None: detected), then as found
    (:func:`_log`; a rating or timestamp column not found: None)."""

    user_col: Any
    item_col: Any
    rating_col: Any
    timestamp_col: Any
    min_user_interactions: int
    min_item_interactions: int
    relevance_threshold: float | None
    drop_unseen_users: bool
    drop_unseen_items: bool
    #: drop test/validation rows whose (user, item) pair is in train
    drop_seen: bool = False
    #: the rating and timestamp columns asked for (messages)
    asked: dict[str, str | None] = field(default_factory=dict)


def _log(interactions: Any, o: _Opts, strict: bool = False) -> tuple[pd.DataFrame, _Opts]:
    """The log (fresh index) and the options with the columns found
    (:func:`receval.io.interactions.log_columns`; names as the table's labels;
    a rating or timestamp column not found: None, said when one is needed)."""
    frame = as_frame(interactions, "interactions")
    labels = {str(c): c for c in frame.columns}
    found = log_columns(
        list(labels),
        user_col=o.user_col,
        item_col=o.item_col,
        rating_col=o.rating_col,
        timestamp_col=o.timestamp_col,
        strict=strict,
    )
    for role in ("user", "item"):
        missing = frame[labels[found[role]]].isna().to_numpy()
        if missing.any():
            raise InputError(f"missing {role} id", source="interactions", row=_first(missing))
    resolved = dataclasses.replace(
        o,
        user_col=labels[found["user"]],
        item_col=labels[found["item"]],
        rating_col=labels[found["rating"]] if "rating" in found else None,
        timestamp_col=labels[found["timestamp"]] if "timestamp" in found else None,
        asked={"rating": o.rating_col, "timestamp": o.timestamp_col},
    )
    return frame.reset_index(drop=True), resolved


def _needs(frame: pd.DataFrame, o: _Opts, role: str, why: str) -> Any:
    """The rating or timestamp column found, or an error saying why it is needed."""
    col = o.rating_col if role == "rating" else o.timestamp_col
    if col is not None:
        return col
    found = ", ".join(map(str, frame.columns))
    asked = o.asked.get(role)
    if asked:
        wanted = f"{asked!r} (columns found: {found})"
    else:
        wanted = f"{role!r} (or {', '.join(LOG_ALIASES[role][1:])}; columns found: {found})"
    raise InputError(
        f"{why} needs a {role} column {wanted}; name it with " + option(f"{role}_col"),
        source="interactions",
    )


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _time_key(frame: pd.DataFrame, o: _Opts) -> np.ndarray:
    """Timestamps as sortable numbers (:func:`receval.io.interactions.time_key`)."""
    col = _needs(frame, o, "timestamp", "a chronological split")
    return time_key(frame[col], f"timestamp column {col!r}", "interactions")


def _cut_value(frame: pd.DataFrame, col: str, value: Any, name: str = "cutoff") -> float:
    """A cut-off given by the user (the option ``name``), on the scale of
    :func:`_time_key`; a value that is no time is an :class:`OptionError`."""
    try:
        return _time_of(frame[col], value)
    except (ValueError, TypeError, OverflowError):
        raise OptionError(
            name,
            value,
            expected="a time: a number on the timestamp column's scale, or a date and time "
            "such as 2024-01-31 or 2024-01-31T12:00",
        ) from None


def _time_of(s: pd.Series, value: Any) -> float:
    """:func:`_cut_value` of a column ``s``."""
    if (
        pd.api.types.is_datetime64_any_dtype(s)
        or s.dtype == object
        or isinstance(value, (str, pd.Timestamp))
    ):
        ts = pd.Timestamp(value)
        if ts is pd.NaT:
            raise ValueError("not a time")
        tz = getattr(s.dtype, "tz", None)
        if tz is not None and ts.tzinfo is None:
            ts = ts.tz_localize(tz)
        if ts.tzinfo is not None:
            ts = ts.tz_convert("UTC").tz_localize(None)
        return float(ts.value)
    return float(value)


def _is_count(size: Any) -> bool:
    return isinstance(size, (int, np.integer)) and not isinstance(size, bool)


def _check_size(name: str, size: Any, allow_none: bool = False) -> None:
    if size is None and allow_none:
        return
    if _is_count(size):
        if size < 1:  # no row in the part: a share or count of none is a mistake
            raise OptionError(name, size, expected="a share in (0, 1) or a count >= 1")
        return
    if isinstance(size, float) and 0 < size < 1:
        return
    raise OptionError(name, size, expected="a share in (0, 1) or a number of rows (a whole number)")


def _check_shares(test_size: Any, validation_size: Any) -> None:
    """Two shares (of all rows, or of each user's) must leave train a share:
    test 0.6 and validation 0.5 left none, and were accepted."""
    shares = [s for s in (test_size, validation_size) if s is not None and not _is_count(s)]
    if len(shares) == 2 and sum(shares) >= 1:
        raise OptionError(
            "validation_size",
            validation_size,
            expected=f"a share below {1 - test_size:g}",
            reason=f"test_size={test_size:g} and validation_size={validation_size:g} leave "
            "no share to train on",
        )


def _how_many(size: Any, n: np.ndarray | int) -> np.ndarray:
    """round(share · n), halves up; or the count itself (None: 0)."""
    n_arr = np.asarray(n, dtype=np.int64)
    if size is None:
        return np.zeros_like(n_arr)
    if _is_count(size):
        return np.minimum(np.int64(size), n_arr)
    return np.floor(float(size) * n_arr + 0.5 + _EPS).astype(np.int64)


def _codes(values: pd.Series) -> np.ndarray:
    codes, _ = pd.factorize(values, sort=False)
    return codes.astype(np.int64)


def _positions(
    group: np.ndarray, key: np.ndarray, tiebreak: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's 0-based position within its group ordered by ``key``, then
    ``tiebreak`` (ties left: row order), and its group's size."""
    n = len(group)
    keys = (key, group) if tiebreak is None else (tiebreak, key, group)
    order = np.lexsort(keys)  # stable: equal keys keep row order
    g = group[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1] if n else np.zeros(0, np.int64)
    run = np.zeros(n, dtype=np.int64)
    if n:
        run[starts] = 1
        run = np.cumsum(run) - 1
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n) - starts[run] if n else pos
    size = np.bincount(group, minlength=int(group.max()) + 1 if n else 0)[group]
    return pos, size


# --------------------------------------------------------------------------- filtering


def filter_interactions(
    interactions: Any,
    *,
    min_user_interactions: int = 0,
    min_item_interactions: int = 0,
    user_col: str | None = None,
    item_col: str | None = None,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Keep users with ≥ ``min_user_interactions`` rows and items with ≥
    ``min_item_interactions`` rows, repeated until both hold (a k-core).
    ``user_col``, ``item_col``: the columns (None: detected, as in :func:`split`).

    Returns:
        The filtered log (input row order) and what was dropped: ``rows``,
        ``users``, ``items`` and the number of ``rounds``.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [1, 2, 1, 3, 1]})
        >>> kept, dropped = filter_interactions(log, min_user_interactions=2,
        ...                                     min_item_interactions=2)
        >>> kept.to_dict("list"), dropped
        ({'user': [], 'item': []}, {'rows': 5, 'users': 3, 'items': 3, 'rounds': 3})
    """
    frame, o = _log(interactions, _opts(user_col, item_col, None, None, 0, 0, None, False, False))
    user_col, item_col = o.user_col, o.item_col
    for name, v in (
        ("min_user_interactions", min_user_interactions),
        ("min_item_interactions", min_item_interactions),
    ):
        if not _is_count(v) or v < 0:
            raise OptionError(name, v, expected="a whole number >= 0")
    u = _codes(frame[user_col])
    i = _codes(frame[item_col])
    keep = np.ones(len(frame), dtype=bool)
    rounds = 0
    while True:
        rounds += 1
        ok = keep.copy()
        if min_user_interactions > 1:
            cu = np.bincount(u[keep], minlength=u.max() + 1 if len(u) else 0)
            ok &= cu[u] >= min_user_interactions
        if min_item_interactions > 1:
            ci = np.bincount(i[ok], minlength=i.max() + 1 if len(i) else 0)
            ok &= ci[i] >= min_item_interactions
        if ok.sum() == keep.sum():
            break
        keep = ok
    kept = frame[keep].reset_index(drop=True)
    dropped = {
        "rows": int((~keep).sum()),
        "users": int(frame[user_col].nunique() - kept[user_col].nunique()),
        "items": int(frame[item_col].nunique() - kept[item_col].nunique()),
        "rounds": rounds,
    }
    return kept, dropped


# --------------------------------------------------------------------------- the splits


def _prepare(interactions: Any, o: _Opts) -> tuple[pd.DataFrame, dict[str, Any], _Opts]:
    """The log filtered (k-core), the info so far, the options with the columns found."""
    frame, o = _log(interactions, o)
    if o.relevance_threshold is not None:
        _needs(frame, o, "rating", "relevance_threshold")
    used = {"user": o.user_col, "item": o.item_col}
    used |= {"rating": o.rating_col, "timestamp": o.timestamp_col}
    info: dict[str, Any] = {"sizes": {"input": _size(frame, o.user_col, o.item_col)}}
    info["columns"] = {role: str(c) for role, c in used.items() if c is not None}
    info["dropped"] = {}
    info["notes"] = []
    if o.min_user_interactions > 1 or o.min_item_interactions > 1:
        whole = frame
        frame, dropped = filter_interactions(
            whole,
            min_user_interactions=o.min_user_interactions,
            min_item_interactions=o.min_item_interactions,
            user_col=str(o.user_col),
            item_col=str(o.item_col),
        )
        if not len(frame) and dropped["rows"]:
            _nothing_left(whole, o, dropped["rounds"])
        info["dropped"]["min_interactions"] = dropped
        info["sizes"]["filtered"] = _size(frame, o.user_col, o.item_col)
        info["notes"].append(
            f"dropped before splitting: {dropped['rows']} rows, {dropped['users']} users and "
            f"{dropped['items']} items below min_user_interactions={o.min_user_interactions} / "
            f"min_item_interactions={o.min_item_interactions} ({dropped['rounds']} rounds)"
        )
    return frame, info, o


def _nothing_left(frame: pd.DataFrame, o: _Opts, rounds: int) -> None:
    """Raise the :class:`OptionError` of a k-core filter that removed every
    row of ``frame`` (it was accepted, and ``receval split`` wrote empty
    files): the option that alone removes everything, with the largest value
    that keeps something, or both options (together they remove everything,
    round after round)."""
    most_user = int(frame.groupby(o.user_col, sort=False).size().max())
    most_item = int(frame.groupby(o.item_col, sort=False).size().max())
    mu, mi = o.min_user_interactions, o.min_item_interactions
    users, items = frame[o.user_col].nunique(), frame[o.item_col].nunique()
    if mu > most_user:
        raise OptionError(
            "min_user_interactions",
            mu,
            expected=f"at most {most_user}",
            reason=f"it removes every user: the most active of the {users} users has "
            f"{most_user} interactions",
        )
    if mi > most_item:
        raise OptionError(
            "min_item_interactions",
            mi,
            expected=f"at most {most_item}",
            reason=f"it removes every item: the most frequent of the {items} items has "
            f"{most_item} interactions",
        )
    with_items = option("min_item_interactions", mi)
    raise OptionError(
        "min_user_interactions",
        mu,
        expected=f"a value that leaves some interactions with {with_items}",
        reason=f"together they remove every row in {rounds} rounds, each dropping the users "
        "and items the one before left with too few interactions; the most active of the "
        f"{users} users has {most_user}, the most frequent of the {items} items {most_item}: "
        "lower one of them",
    )


def _finish(
    frame: pd.DataFrame,
    test: np.ndarray,
    val: np.ndarray | None,
    o: _Opts,
    info: dict[str, Any],
    method: str,
    parameters: dict[str, Any],
    excluded: np.ndarray | None = None,
) -> Split:
    """The parts from the masks (``excluded``: rows in no part), the options
    applied to test and validation, the sizes."""
    in_train = ~test & (~val if val is not None else True)
    if excluded is not None:
        in_train &= ~excluded
    train_df = frame[in_train].reset_index(drop=True)
    test_df = frame[test].reset_index(drop=True)
    val_df = frame[val].reset_index(drop=True) if val is not None else None
    return _finish_parts(train_df, test_df, val_df, o, info, method, parameters)


def _finish_parts(
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    val_df: pd.DataFrame | None,
    o: _Opts,
    info: dict[str, Any],
    method: str,
    parameters: dict[str, Any],
    train_size: dict[str, int] | None = None,
) -> Split:
    """:func:`_finish` of the parts made: the options applied to test and
    validation, the sizes (``train_size``: the train's, counted already)."""
    dropped = info["dropped"]
    notes: list[str] = info["notes"]
    parts = {"test": test_df, "validation": val_df}
    for name, part in list(parts.items()):
        if part is None:
            continue
        if o.relevance_threshold is not None:
            rating = pd.to_numeric(part[o.rating_col], errors="coerce").to_numpy(dtype=float)
            low = ~(rating >= o.relevance_threshold)
            dropped.setdefault("below_threshold", {})[name] = int(low.sum())
            notes.append(
                f"dropped from {name}: {int(low.sum())} rows rated below "
                f"relevance_threshold={o.relevance_threshold} (or unrated)"
            )
            part = part[~low].reset_index(drop=True)
        for flag, col, what in (
            (o.drop_unseen_users, o.user_col, "users"),
            (o.drop_unseen_items, o.item_col, "items"),
        ):
            if not flag:
                continue
            unseen = ~part[col].isin(pd.unique(train_df[col])).to_numpy()
            count = {"rows": int(unseen.sum()), what: int(part[col][unseen].nunique())}
            dropped.setdefault(f"unseen_{what}", {})[name] = count
            notes.append(
                f"dropped from {name}: {count['rows']} rows of {count[what]} {what} "
                "absent from train"
            )
            part = part[~unseen].reset_index(drop=True)
        if o.drop_seen:
            seen = _seen_pairs(part, train_df, o)
            count = {"rows": int(seen.sum())}
            dropped.setdefault("seen_pairs", {})[name] = count
            notes.append(
                f"dropped from {name}: {count['rows']} rows whose (user, item) pair is in train"
            )
            part = part[~seen].reset_index(drop=True)
        parts[name] = part
    test_df = parts["test"]
    val_df = parts["validation"]
    sizes = info["sizes"]
    sizes["train"] = (
        train_size if train_size is not None else _size(train_df, o.user_col, o.item_col)
    )
    if val_df is not None:
        sizes["validation"] = _size(val_df, o.user_col, o.item_col)
    sizes["test"] = _size(test_df, o.user_col, o.item_col)
    info = {"method": method, "parameters": parameters, **info}
    return Split(train=train_df, test=test_df, validation=val_df, info=info)


def _seen_pairs(part: pd.DataFrame, train: pd.DataFrame, o: _Opts) -> np.ndarray:
    """Rows of ``part`` whose (user, item) pair is in ``train`` (codes shared by
    both, one hash pass per column)."""
    n = len(part)
    users, _ = pd.factorize(pd.concat([part[o.user_col], train[o.user_col]], ignore_index=True))
    items, width = pd.factorize(pd.concat([part[o.item_col], train[o.item_col]], ignore_index=True))
    key = users.astype(np.int64) * max(len(width), 1) + items
    return pd.Series(key[:n]).isin(key[n:]).to_numpy()


def _opts(
    user_col: str | None,
    item_col: str | None,
    rating_col: str | None,
    timestamp_col: str | None,
    min_user_interactions: int,
    min_item_interactions: int,
    relevance_threshold: float | None,
    drop_unseen_users: bool,
    drop_unseen_items: bool,
    drop_seen: bool = False,
) -> _Opts:
    if relevance_threshold is not None:
        try:
            relevance_threshold = float(relevance_threshold)
        except (TypeError, ValueError):
            raise OptionError(
                "relevance_threshold", relevance_threshold, expected="a number"
            ) from None
    for name, v in (
        ("min_user_interactions", min_user_interactions),
        ("min_item_interactions", min_item_interactions),
    ):
        if not _is_count(v) or v < 0:
            raise OptionError(name, v, expected="a whole number >= 0")
    return _Opts(
        user_col,
        item_col,
        rating_col,
        timestamp_col,
        int(min_user_interactions),
        int(min_item_interactions),
        relevance_threshold,
        bool(drop_unseen_users),
        bool(drop_unseen_items),
        bool(drop_seen),
    )


def _per_user(
    frame: pd.DataFrame,
    o: _Opts,
    key: np.ndarray,
    test_size: Any,
    validation_size: Any,
    info: dict[str, Any],
    tiebreak: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per user, the rows at the end of ``key`` order (then ``tiebreak``) are
    test, the ones just before them validation; at least one row per user
    stays in train."""
    user = _codes(frame[o.user_col])
    pos, n = _positions(user, key, tiebreak)
    t = np.minimum(_how_many(test_size, n), np.maximum(n - 1, 0))
    v = np.minimum(_how_many(validation_size, n), np.maximum(n - 1 - t, 0))
    test = pos >= n - t
    val = ((pos >= n - t - v) & ~test) if validation_size is not None else None
    first = pos == 0
    only_train = int((first & (t == 0)).sum())
    if only_train:
        info["notes"].append(
            f"{only_train} users have no test row (too few rows: each user keeps at least one "
            "training row)"
        )
    info["users_without_test"] = only_train
    return test, val


@overload
def split(interactions: Any, method: Literal["time_windows"], **options: Any) -> Folds: ...


@overload
def split(
    interactions: Any,
    method: Literal[
        "random",
        "user_random",
        "time",
        "user_time",
        "leave_one_out",
        "leave_last_out",
        "session",
    ] = ...,
    **options: Any,
) -> Split: ...


def split(
    interactions: Any,
    method: Method = "user_time",
    *,
    test_size: float | int | None = None,
    validation_size: float | int | None = None,
    cutoff: Any = None,
    validation_cutoff: Any = None,
    seed: int = 0,
    session_col: str | None = None,
    session_gap: Any = None,
    straddle: Literal["test", "train", "drop"] = "test",
    test_length: Any = None,
    train_length: Any = None,
    step: Any = None,
    n_folds: int = 1,
    start: Any = None,
    end: Any = None,
    validation_length: Any = None,
    min_user_interactions: int = 0,
    min_item_interactions: int = 0,
    relevance_threshold: float | None = None,
    drop_unseen_users: bool = False,
    drop_unseen_items: bool = False,
    drop_seen: bool = False,
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
) -> Split | Folds:
    """Split an interaction log into train and test (and validation).

    Args:
        interactions: a table (pandas, polars, pyarrow) with user and item
            columns, optionally rating and timestamp.
        method: ``random``, ``user_random``, ``time``, ``user_time``,
            ``leave_one_out``, ``leave_last_out``, ``session`` or
            ``time_windows`` (see the module docstring). ``time_windows``
            returns :class:`Folds`, the others a :class:`Split`.
        test_size: a share in (0, 1) (a float) or a number of rows (an int):
            of all rows (``random``, ``time``), of each user's rows, or of the
            sessions (``session``); ``leave_last_out``: the number n of each
            user's last rows (an int). None: 0.2 (``leave_last_out``: 1).
        validation_size: the same, for a validation part taken just before
            the test part (chronological) or at random from the rest
            (``session``: the sessions just before the test ones, a share of
            all sessions or a count); None: no validation part.
        cutoff: ``time`` and ``session``: the cut (a number, or a date for
            date columns); overrides ``test_size``.
        validation_cutoff: ``time`` and ``session``: rows (sessions, by the
            ``straddle`` rule) in [validation_cutoff, cutoff) are validation;
            overrides ``validation_size``.
        seed: the seed of the random methods.
        session_col: ``session``: the column naming each user's sessions.
        session_gap: ``session``: instead of ``session_col``, a new session
            starts after an inactivity longer than this: a duration string
            (``"30min"``, ``"1h"``) or a number (seconds for date columns, the
            column's own unit for numeric timestamps).
        straddle: ``session``: where a session that starts before the cut and
            ends at or after it goes: ``test`` (default), ``train`` or
            ``drop`` (neither part).
        test_length, train_length, step: ``time_windows``: durations (as
            ``session_gap``) of each test window, of each train window (None:
            expanding, everything before the test window) and between the
            starts of two folds' test windows (None: ``test_length``).
        n_folds: ``time_windows``: the number of folds.
        start, end: ``time_windows``: the start of the first test window, or
            the (exclusive) end of the last one (neither: just after the last
            interaction).
        validation_length: ``time_windows``: a duration (as ``session_gap``):
            each fold's rows in [test start − validation_length, test start)
            are its validation part, its train ends there (rolling: must be
            shorter than ``train_length``, which spans both). None: no
            validation part.
        min_user_interactions, min_item_interactions: k-core filter before
            splitting (see :func:`filter_interactions`).
        relevance_threshold: keep in test/validation only rows rated ≥ it.
        drop_unseen_users, drop_unseen_items: drop test/validation rows whose
            user/item has no training row.
        drop_seen: drop test/validation rows whose (user, item) pair is in
            train.
        user_col, item_col, rating_col, timestamp_col: the columns (None:
            detected: user, user_id, userId, ...; rating, stars; timestamp,
            time, date, ...; see :func:`receval.io.interactions.log_columns`).

    Returns:
        A :class:`Split` (``time_windows``: :class:`Folds`).

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1] * 5, "item": range(5), "timestamp": range(5)})
        >>> split(log, "user_time", test_size=0.4).test["item"].tolist()
        [3, 4]
        >>> split(log, "leave_last_out", test_size=2, validation_size=1).validation["item"].tolist()
        [2]
    """
    o = _opts(
        user_col,
        item_col,
        rating_col,
        timestamp_col,
        min_user_interactions,
        min_item_interactions,
        relevance_threshold,
        drop_unseen_users,
        drop_unseen_items,
        drop_seen,
    )
    if method not in METHODS:
        raise OptionError("method", method, allowed=tuple(METHODS))
    windows = (test_length, train_length, step, n_folds, start, end, validation_length)
    _only_for(
        method,
        session=(session_col, session_gap, None if straddle == "test" else straddle),
        time_windows=(*windows[:3], None if n_folds == 1 else n_folds, validation_length),
        time_windows_anchor=(start, end),
        time_or_session=(cutoff, validation_cutoff),
    )
    if method == "time_windows":
        _no_sizes(test_size, validation_size)
        return _time_windows(interactions, o, *windows)
    test_size = _sizes(method, test_size, validation_size)
    check_seed(seed)
    frame, info, o = _prepare(interactions, o)
    params: dict[str, Any] = {"test_size": test_size}
    if validation_size is not None:
        params["validation_size"] = validation_size
    n = len(frame)
    val: np.ndarray | None
    excluded = None
    if method in ("random", "user_random"):
        params["seed"] = seed
        rng = np.random.default_rng(seed)
        key = rng.random(n)
        if method == "user_random":
            test, val = _per_user(frame, o, key, test_size, validation_size, info)
        else:
            test, val = _random_rows(key, test_size, validation_size)
    elif method == "time":
        test, val = _time_global(
            frame, o, test_size, validation_size, cutoff, validation_cutoff, params
        )
    elif method == "session":
        sizes, cuts = (test_size, validation_size), (cutoff, validation_cutoff)
        sessions = (session_col, session_gap, straddle)
        test, val, excluded = _session_split(frame, o, sizes, cuts, *sessions, params, info)
    else:  # user_time, leave_last_out, leave_one_out: one implementation; ties by item id
        key = _time_key(frame, o)
        tiebreak = _item_order(frame, o)
        test, val = _per_user(frame, o, key, test_size, validation_size, info, tiebreak)
    if method == "leave_one_out":
        params = {k: v for k, v in params.items() if k != "test_size"}
    if o.drop_seen:
        params["drop_seen"] = True
    return _finish(frame, test, val, o, info, method, params, excluded)


def _no_sizes(test_size: Any, validation_size: Any) -> None:
    """``time_windows`` takes no ``test_size`` / ``validation_size``: its
    windows are durations."""
    if test_size is not None or validation_size is not None:
        raise OptionError(
            "test_size" if test_size is not None else "validation_size",
            test_size if test_size is not None else validation_size,
            expected="no value for time_windows",
            reason="its test windows are given by test_length (and n_folds, step, start/end), "
            "its validation windows by validation_length",
        )


def _only_for(method: str, **given: tuple[Any, ...]) -> None:
    """Refuse the options of one method given to another (a session gap to a
    random split was a silent no-op)."""
    owners = {
        "session": ("session",),
        "time_windows": ("time_windows",),
        "time_windows_anchor": ("time_windows",),
        "time_or_session": ("time", "session"),
    }
    names = {
        "session": ("session_col", "session_gap", "straddle"),
        "time_windows": ("test_length", "train_length", "step", "n_folds", "validation_length"),
        "time_windows_anchor": ("start", "end"),
        "time_or_session": ("cutoff", "validation_cutoff"),
    }
    for group, values in given.items():
        if method in owners[group]:
            continue
        for name, value in zip(names[group], values, strict=True):
            if value is not None:
                raise OptionError(
                    name,
                    value,
                    expected=f"no value for method {method!r}",
                    reason=f"it is an option of {' and '.join(owners[group])} only",
                )


def _sizes(method: str, test_size: Any, validation_size: Any) -> Any:
    """``test_size`` checked (with ``validation_size``), its default filled in."""
    if method == "leave_one_out":
        test_size = 1
    elif test_size is None:
        test_size = 1 if method == "leave_last_out" else 0.2
    if method == "leave_last_out":
        _check_count("test_size", test_size, 1)
        if validation_size is not None:
            _check_count("validation_size", validation_size, 0)
    _check_size("test_size", test_size)
    _check_size("validation_size", validation_size, allow_none=True)
    _check_shares(test_size, validation_size)
    return test_size


def _check_count(name: str, value: Any, low: int) -> None:
    """``leave_last_out`` counts: integers ≥ ``low`` (a share is refused)."""
    if not _is_count(value) or value < low:
        raise OptionError(
            name,
            value,
            expected=f"an integer >= {low} (a number of rows per user)",
            reason="leave_last_out takes each user's last n rows, not a share",
        )


def _item_order(frame: pd.DataFrame, o: _Opts) -> np.ndarray:
    """Each row's item as its rank in the id order (:func:`receval.ids.order_of`:
    integers first, numerically, then text by code point; ``1``, ``1.0`` and
    ``"1"`` are one id): a tie-break that depends neither on row order nor on
    the form of the ids."""
    ids = canonical(frame[o.item_col].to_numpy(), "item", "interactions")
    order = order_of(ids)
    ranked = ids[order]
    new = np.ones(len(ids), dtype=bool)
    if len(ids) > 1:
        new[1:] = ranked[1:] != ranked[:-1]
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    return rank


# --------------------------------------------------------------------------- durations, sessions


def _is_date(frame: pd.DataFrame, col: Any) -> bool:
    """Whether :func:`_time_key` reads the column as dates (int64 nanoseconds)."""
    s = frame[col]
    return bool(
        pd.api.types.is_datetime64_any_dtype(s)
        or s.dtype == object
        or pd.api.types.is_string_dtype(s)
    )


def duration(name: str, value: Any, dates: bool) -> float:
    """A positive duration on the scale of :func:`_time_key`: a duration string
    (``"30min"``, ``"1D"``) or a :class:`pandas.Timedelta` is exact for date
    columns and read as seconds for numeric ones; a number is seconds for date
    columns and the column's own unit for numeric ones."""
    expected = "a positive duration like '30min', '4h', '7D' or a positive number"
    if isinstance(value, bool):
        raise OptionError(name, value, expected=expected)
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if not (math.isfinite(number) and number > 0):
            raise OptionError(name, value, expected=expected)
        return number * 1e9 if dates else number
    try:
        td = pd.Timedelta(value)
    except (ValueError, TypeError):
        raise OptionError(name, value, expected=expected) from None
    if pd.isna(td) or td.value <= 0:
        raise OptionError(name, value, expected=expected)
    return float(td.value) if dates else td.value / 1e9


def _group_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Codes of the pairs (a, b) of two int64 code arrays."""
    width = int(b.max()) + 1 if len(b) else 1
    return _codes(pd.Series(a * width + b))


def _sessions(
    frame: pd.DataFrame,
    o: _Opts,
    key: np.ndarray,
    tiebreak: np.ndarray,
    session_col: str | None,
    session_gap: Any,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Each row's session (int64 codes) and the parameters that defined them:
    a (user, ``session_col``) pair, or a run of one user's rows (in time
    order, ties by item id) with no gap longer than ``session_gap``."""
    if (session_col is None) == (session_gap is None):
        which = "both were given" if session_col is not None else "neither was given"
        raise ReceValError(
            f"a session split needs {option('session_col')} (the column naming sessions) or "
            f"{option('session_gap')} (an inactivity gap that starts a new session), one of "
            f"the two: {which}"
        )
    user = _codes(frame[o.user_col])
    if session_col is not None:
        if session_col not in frame.columns:
            found = ", ".join(map(str, frame.columns))
            raise InputError(
                f"no session column {session_col!r} (columns found: {found}); name it with "
                + option("session_col"),
                source="interactions",
            )
        missing = frame[session_col].isna().to_numpy()
        if missing.any():
            raise InputError("missing session id", source="interactions", row=_first(missing))
        return _group_codes(user, _codes(frame[session_col])), {"session_col": session_col}
    gap = duration("session_gap", session_gap, _is_date(frame, o.timestamp_col))
    order = np.lexsort((tiebreak, key, user))
    u, k = user[order], key[order]
    new = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        new[1:] = (u[1:] != u[:-1]) | (k[1:] - k[:-1] > gap)
    session = np.empty(len(order), dtype=np.int64)
    session[order] = np.cumsum(new) - 1
    return session, {"session_gap": session_gap}


def _session_split(
    frame: pd.DataFrame,
    o: _Opts,
    sizes: tuple[Any, Any],
    cutoffs: tuple[Any, Any],
    session_col: str | None,
    session_gap: Any,
    straddle: str,
    params: dict[str, Any],
    info: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``session``: the test mask, the validation mask (None: none asked) and
    the mask of rows in no part (sessions straddling a cut, with
    ``straddle="drop"``). ``sizes``: ``test_size`` and ``validation_size``;
    ``cutoffs``: ``cutoff`` and ``validation_cutoff``.

    Each session is assigned wholly by one time: its last row with
    ``straddle="test"``, its first row otherwise. Test: that time at or after
    the cut; validation: at or after the validation cut and not test; train:
    the rest. With ``drop``, a session straddling either cut (its first row
    before the cut, its last at or after it) is in no part."""
    test_size, validation_size = sizes
    cutoff, validation_cutoff = cutoffs
    if straddle not in STRADDLE:
        raise OptionError("straddle", straddle, expected="one of " + ", ".join(STRADDLE))
    key = _time_key(frame, o)
    session, defined = _sessions(frame, o, key, _item_order(frame, o), session_col, session_gap)
    params.update(defined)
    params["straddle"] = straddle
    n_sessions = int(session.max()) + 1 if len(session) else 0
    first = np.full(n_sessions, np.inf)
    last = np.full(n_sessions, -np.inf)
    np.minimum.at(first, session, key)
    np.maximum.at(last, session, key)
    by = last if straddle == "test" else first  # the time that assigns a whole session
    if cutoff is not None:
        cut = _cut_value(frame, o.timestamp_col, cutoff, "cutoff")
        params.pop("test_size", None)
        params["cutoff"] = cutoff
    else:
        t = int(_how_many(test_size, n_sessions))
        cut = float(np.sort(by)[n_sessions - t]) if t else math.inf
        params["cutoff_found"] = _show_time(frame, o.timestamp_col, cut) if n_sessions else None
    drop = straddle == "drop"
    straddling = (first < cut) & (last >= cut)
    test_s = (by >= cut) & ~(straddling & drop)
    val_s = None
    out = straddling & drop  # sessions in no part
    crossing_v = 0  # sessions straddling the validation cut
    if validation_cutoff is not None or validation_size is not None:
        vcut = _validation_cut(frame, o, by, ~test_s & ~out, cut, sizes, cutoffs, params)
        straddling_v = (first < vcut) & (last >= vcut)
        if drop:
            out = out | straddling_v
        val_s = (by >= vcut) & ~test_s & ~out
        crossing_v = int(straddling_v.sum())
    if drop:
        excluded = out[session]
        info["dropped"]["straddling_sessions"] = {
            "sessions": int(out.sum()),
            "rows": int(excluded.sum()),
        }
        cuts = "a cut" if val_s is not None else "the cut"
        info["notes"].append(
            f"dropped: {int(out.sum())} sessions ({int(excluded.sum())} rows) that start "
            f"before {cuts} and end at or after it"
        )
    else:
        excluded = None
        for n_cross, which in (
            (int(straddling.sum()), "the cut"),
            (crossing_v, "the validation cut"),
        ):
            if n_cross:
                info["notes"].append(
                    f"{n_cross} sessions start before {which} and end at or after it: each is "
                    f"wholly in one part by its {'last' if straddle == 'test' else 'first'} "
                    f"row (straddle={straddle})"
                )
    train_s = ~test_s & ~out & (~val_s if val_s is not None else True)
    counts = {"train": int(train_s.sum())}
    if val_s is not None:
        counts["validation"] = int(val_s.sum())
    counts |= {"test": int(test_s.sum()), "straddling": int(straddling.sum())}
    if val_s is not None:
        counts["straddling_validation"] = crossing_v
        if not counts["validation"]:
            info["notes"].append(
                "no session in the validation window: the validation part is empty"
            )
    info["sessions"] = counts
    return test_s[session], None if val_s is None else val_s[session], excluded


def _validation_cut(
    frame: pd.DataFrame,
    o: _Opts,
    by: np.ndarray,
    before: np.ndarray,
    cut: float,
    sizes: tuple[Any, Any],
    cutoffs: tuple[Any, Any],
    params: dict[str, Any],
) -> float:
    """The session split's validation cut: ``validation_cutoff``, or the
    assigning time (``by``) of the first of the last ``validation_size``
    sessions (a share of all sessions, or a count) among those ``before`` the
    test part, in that time's order."""
    _, validation_size = sizes
    cutoff, validation_cutoff = cutoffs
    if validation_cutoff is not None:
        vcut = _cut_value(frame, o.timestamp_col, validation_cutoff, "validation_cutoff")
        if vcut > cut:
            shown_cut = cutoff if cutoff is not None else params.get("cutoff_found")
            raise OptionError(
                "validation_cutoff",
                validation_cutoff,
                expected=f"a time at or before the test cut ({shown_cut})",
                reason="validation sessions come before the test sessions",
            )
        params.pop("validation_size", None)
        params["validation_cutoff"] = validation_cutoff
        return vcut
    candidates = np.sort(by[before])
    v = min(int(_how_many(validation_size, len(by))), len(candidates))
    vcut = float(candidates[len(candidates) - v]) if v else cut
    params["validation_cutoff_found"] = (
        _show_time(frame, o.timestamp_col, vcut) if v else params.get("cutoff_found", cutoff)
    )
    return vcut


# --------------------------------------------------------------------------- time windows


@dataclass
class Folds:
    """The folds of a ``time_windows`` split: a sequence of :class:`Split`.

    Attributes:
        splits: one :class:`Split` per fold, oldest test window first; each
            one's ``info["fold"]`` has its number, the time ranges of its
            train, validation (with ``validation_length``) and test windows
            (``[from, to)``; ``from`` None: the expanding window's open
            start) and ``outside``, the rows in none of its parts.
        info: ``method``, ``parameters``, ``sizes`` of the input and
            ``folds`` (each fold's ranges and sizes).
    """

    splits: list[Split]
    info: dict[str, Any] = field(default_factory=dict)
    #: the log the folds were cut from, when each train is a range of its rows
    #: (a log in time order; :func:`receval.backtest` counts the trains from it)
    _log: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    #: per fold, its train's rows [start, stop) of ``_log``
    _train_rows: list[tuple[int, int]] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.splits)

    def __iter__(self) -> Iterator[Split]:
        return iter(self.splits)

    def __getitem__(self, i: int) -> Split:
        return self.splits[i]

    def describe(self) -> list[str]:
        """One line for the method, one per fold (windows and sizes)."""
        params = ", ".join(f"{k}={v}" for k, v in self.info["parameters"].items())
        lines = [f"split: {self.info['method']} ({params})"]
        for f in self.info["folds"]:
            tr, te = f["train"], f["test"]
            va = f.get("validation")
            validation = f"validation [{va['from']}, {va['to']}) {va['rows']} rows, " if va else ""
            lines.append(
                f"fold {f['fold']}: train [{tr['from']}, {tr['to']}) {tr['rows']} rows, "
                f"{validation}test [{te['from']}, {te['to']}) {te['rows']} rows, "
                f"{te['users']} users"
            )
        lines += self.info.get("notes", [])
        return lines

    def __str__(self) -> str:
        return "\n".join(self.describe())

    def save(self, out_dir: str | Path) -> dict[str, Path]:
        """Write each fold into ``out_dir/fold_<i>/`` (as :meth:`Split.save`:
        its parts, ``split.json`` and manifest), then ``folds.json`` (this
        info) and ``manifest.json``; the whole folder is one set
        (:class:`receval.io.write.OutputSet`): a reader never sees folds of
        two runs."""
        paths: dict[str, Path] = {}
        text = json.dumps(_jsonable(self.info), indent=2) + "\n"
        params = {"method": self.info.get("method"), **_jsonable(self.info.get("parameters", {}))}
        with OutputSet(out_dir, "split", params) as s:
            for i, fold in enumerate(self.splits):
                saved = fold.save(s.folder / f"fold_{i}")
                for name, path in saved.items():
                    s.add(str(path.relative_to(s.folder)), path)
                    paths[f"fold_{i}_{name}"] = path
            paths["folds"] = s.write("folds.json", lambda p: p.write_text(text, encoding="utf-8"))
        paths["manifest"] = s.manifest
        return paths


def _after(value: float, frame: pd.DataFrame, col: Any) -> float:
    """The default end of the last test window, just after the last time
    ``value``: the next whole second for dates, + 1 for integer timestamps,
    the next float otherwise."""
    if _is_date(frame, col):
        second = 1e9
        return (math.floor(value / second) + 1) * second
    if pd.api.types.is_integer_dtype(frame[col]) and float(value).is_integer():
        return value + 1
    return float(np.nextafter(value, np.inf))


def _first_start(
    frame: pd.DataFrame,
    col: Any,
    key: np.ndarray,
    start: Any,
    end: Any,
    span: float,
    params: dict[str, Any],
) -> float:
    """The start of the first test window: ``start``, or ``span`` (the folds'
    whole test span) before ``end`` or before just after the last row."""
    if start is not None:
        params["start"] = start
        return _cut_value(frame, col, start, "start")
    if end is not None:
        stop = _cut_value(frame, col, end, "end")
        params["end"] = end
    elif len(key):
        stop = _after(float(key.max()), frame, col)
        params["end_found"] = _show_time(frame, col, stop)
    else:
        stop = 0.0
    return stop - span


def _time_windows(
    interactions: Any,
    o: _Opts,
    test_length: Any,
    train_length: Any,
    step: Any,
    n_folds: Any,
    start: Any,
    end: Any,
    validation_length: Any = None,
) -> Folds:
    if test_length is None:
        raise ReceValError(
            f"a time_windows split needs {option('test_length')}: the length of each test "
            "window, a duration like '1D' or '7D' (or a number)"
        )
    if not _is_count(n_folds) or n_folds < 1:
        raise OptionError("n_folds", n_folds, expected="an integer >= 1")
    if start is not None and end is not None:
        raise OptionError(
            "end", end, expected="no value with start", reason="start or end anchors the folds"
        )
    frame, base, o = _prepare(interactions, o)
    key = _time_key(frame, o)
    col = o.timestamp_col
    dates = _is_date(frame, col)
    t_len = duration("test_length", test_length, dates)
    r_len = None if train_length is None else duration("train_length", train_length, dates)
    hop = t_len if step is None else duration("step", step, dates)
    v_len = _validation_length(validation_length, train_length, r_len, dates)
    params: dict[str, Any] = {"test_length": test_length}
    if train_length is not None:
        params["train_length"] = train_length
    if validation_length is not None:
        params["validation_length"] = validation_length
    params |= {"step": step if step is not None else test_length, "n_folds": n_folds}
    first_start = _first_start(frame, col, key, start, end, t_len + (n_folds - 1) * hop, params)
    splits = []
    folds_info = []
    rows = _Rows.of(frame, key, o)
    for f in range(n_folds):
        lo = first_start + f * hop
        hi = lo + t_len
        info = _copy_info(base)
        if rows is not None:  # a log in time order: each part is a range of its rows
            s, outside, parts = rows.fold(lo, hi, r_len, v_len, o, info, dict(params))
            any_ = {name: stop > begin for name, (begin, stop) in parts.items()}
        else:
            s, outside, any_ = _masked_fold(frame, key, (lo, hi, r_len, v_len), o, info, params)
        shown = _windows(frame, col, lo, hi, r_len, v_len)
        s.info["fold"] = {"fold": f, **shown, "outside": outside}
        for part in ("test", "validation", "train"):
            if not any_.get(part, True):
                s.info["notes"].append(f"fold {f}: no interaction in its {part} window")
        sz = s.info["sizes"]
        folds_info.append(
            {
                "fold": f,
                **{part: {**window, **sz[part]} for part, window in shown.items()},
                "outside": outside,
            }
        )
        splits.append(s)
    notes = list(base["notes"]) + [
        n for s in splits for n in s.info["notes"] if n.startswith("fold")
    ]
    info = {
        "method": "time_windows",
        "parameters": params,
        "columns": base["columns"],
        "sizes": base["sizes"],
        "folds": folds_info,
        "notes": notes,
    }
    if rows is None:
        return Folds(splits, info)
    return Folds(splits, info, _log=frame, _train_rows=rows.trains)


def _validation_length(
    validation_length: Any, train_length: Any, r_len: float | None, dates: bool
) -> float | None:
    """``validation_length`` on the time scale (None: none), refused when it
    leaves a rolling train window nothing to train on."""
    if validation_length is None:
        return None
    v_len = duration("validation_length", validation_length, dates)
    if r_len is not None and v_len >= r_len:
        raise OptionError(
            "validation_length",
            validation_length,
            expected=f"a duration shorter than train_length ({train_length})",
            reason="the validation window is the end of each fold's train window, "
            "which train_length spans: nothing would be left to train on",
        )
    return v_len


def _masked_fold(
    frame: pd.DataFrame,
    key: np.ndarray,
    window: tuple[float, float, float | None, float | None],
    o: _Opts,
    info: dict[str, Any],
    params: dict[str, Any],
) -> tuple[Split, int, dict[str, bool]]:
    """A fold of a log not in time order, by masks: ``window`` is the test
    window [lo, hi), the train length (None: expanding) and the validation
    length (None: none). The split, the rows in none of its parts, whether
    each part has a row."""
    lo, hi, r_len, v_len = window
    mid = lo if v_len is None else lo - v_len  # the end of train, start of validation
    test = (key >= lo) & (key < hi)
    train = key < mid
    if r_len is not None:
        train &= key >= lo - r_len
    val = None if v_len is None else (key >= mid) & (key < lo)
    kept = train | test | (val if val is not None else False)
    s = _finish(frame, test, val, o, info, "time_windows", dict(params), ~kept)
    any_ = {"train": bool(train.any()), "test": bool(test.any())}
    if val is not None:
        any_["validation"] = bool(val.any())
    return s, int((~kept).sum()), any_


def _windows(
    frame: pd.DataFrame, col: Any, lo: float, hi: float, r_len: float | None, v_len: float | None
) -> dict[str, dict[str, Any]]:
    """A fold's windows ``[from, to)`` as the timestamp column shows times:
    train (``from`` None: expanding), test, and validation with ``v_len``."""
    mid = lo if v_len is None else lo - v_len
    shown: dict[str, dict[str, Any]] = {
        "train": {
            "from": None if r_len is None else _show_time(frame, col, lo - r_len),
            "to": _show_time(frame, col, mid),
        }
    }
    if v_len is not None:
        shown["validation"] = {
            "from": _show_time(frame, col, mid),
            "to": _show_time(frame, col, lo),
        }
    shown["test"] = {"from": _show_time(frame, col, lo), "to": _show_time(frame, col, hi)}
    return shown


@dataclass
class _Rows:
    """A log whose rows are in time order (``key`` non-decreasing): the rows
    of a time window are a range of them, so each fold's parts are slices of
    the log (no copy: pandas' copy on write shares the data until one side
    writes), and their distinct users and items are counted from codes made
    once. The parts hold the same rows, in the same order, as the masks of
    the general path would select."""

    frame: pd.DataFrame
    key: np.ndarray
    users: np.ndarray
    items: np.ndarray
    #: per fold, the train's row range [start, stop) in ``frame``
    trains: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def of(cls, frame: pd.DataFrame, key: np.ndarray, o: _Opts) -> _Rows | None:
        """The log's rows when they are in time order, else None."""
        if len(key) > 1 and not bool((key[1:] >= key[:-1]).all()):
            return None
        return cls(frame, key, _codes(frame[o.user_col]), _codes(frame[o.item_col]))

    def at(self, t: float) -> int:
        """The first row at or after time ``t``."""
        return int(np.searchsorted(self.key, t, side="left"))

    def part(self, start: int, stop: int) -> pd.DataFrame:
        """Rows [start, stop) with a fresh index (a copy where pandas has no
        copy on write: the model may write to its train)."""
        out = self.frame.iloc[start:stop].reset_index(drop=True)
        return out if _COPY_ON_WRITE else out.copy()

    def distinct(self, codes: np.ndarray, start: int, stop: int) -> int:
        """Distinct codes among rows [start, stop): codes count from 0 in
        order of first appearance, so a prefix holds ``max + 1`` of them."""
        if stop <= start:
            return 0
        if start == 0:
            return int(codes[:stop].max()) + 1
        return int(np.count_nonzero(np.bincount(codes[start:stop])))

    def fold(
        self,
        lo: float,
        hi: float,
        r_len: float | None,
        v_len: float | None,
        o: _Opts,
        info: dict[str, Any],
        params: dict[str, Any],
    ) -> tuple[Split, int, dict[str, tuple[int, int]]]:
        """The fold testing on [lo, hi), validating on the ``v_len`` before
        ``lo`` (None: no validation), training on what precedes that (or
        on the rest of the ``r_len`` before ``lo``): the split, the rows
        outside its parts, each part's row range."""
        t0, t1 = self.at(lo), self.at(hi)
        v0 = t0 if v_len is None else min(self.at(lo - v_len), t0)
        r0 = 0 if r_len is None else min(self.at(lo - r_len), v0)
        size = {
            "rows": v0 - r0,
            "users": self.distinct(self.users, r0, v0),
            "items": self.distinct(self.items, r0, v0),
        }
        train, test = self.part(r0, v0), self.part(t0, t1)
        val = None if v_len is None else self.part(v0, t0)
        s = _finish_parts(train, test, val, o, info, "time_windows", params, size)
        self.trains.append((r0, v0))
        ranges = {"train": (r0, v0), "test": (t0, t1)}
        if v_len is not None:
            ranges["validation"] = (v0, t0)
        return s, len(self.key) - (v0 - r0) - (t1 - v0), ranges


def _random_rows(
    key: np.ndarray, test_size: Any, validation_size: Any
) -> tuple[np.ndarray, np.ndarray | None]:
    """``random``: the rows last in ``key`` order are test, those just before validation."""
    n = len(key)
    order = np.argsort(key, kind="stable")
    t = int(_how_many(test_size, n))
    v = min(int(_how_many(validation_size, n)), n - t)
    test = np.zeros(n, dtype=bool)
    test[order[n - t :]] = True
    if validation_size is None:
        return test, None
    val = np.zeros(n, dtype=bool)
    val[order[n - t - v : n - t]] = True
    return test, val


def split_file(
    path: str | Path,
    method: Method = "user_time",
    *,
    format: str = "auto",
    sep: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
    **options: Any,
) -> Split | Folds:
    """Split an interaction log file (``receval split``): the file is read
    whole (:func:`receval.io.interactions.read_log`: any format receval reads,
    MovieLens logs, ``-`` for the standard input), so every part keeps all the
    file's columns under the file's own names.

    Args:
        path: the file.
        method: as for :func:`split`.
        format: ``auto`` or a format name (:func:`receval.io.interactions.detect_format`).
        sep: the delimiter of a CSV file (None: detected).
        user_col, item_col, rating_col, timestamp_col: as for :func:`split`.
        options: the other keywords of :func:`split`.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d, "log.csv")
        ...     _ = p.write_text("user_id,item_id,time,note\\n1,7,1,a\\n1,8,2,b\\n")
        ...     s = split_file(p, test_size=1)
        >>> s.test.to_dict("list")
        {'user_id': [1], 'item_id': [8], 'time': [2], 'note': ['b']}
    """
    log, located = read_log_located(
        path, format=format, sep=sep, user_col=user_col, item_col=item_col
    )
    try:
        return split(
            log,
            method,
            user_col=user_col,
            item_col=item_col,
            rating_col=rating_col,
            timestamp_col=timestamp_col,
            **options,
        )
    except InputError as exc:  # a row of the file: its line
        if exc.row is None or exc.source != "interactions":
            raise
        raise located(exc) from None


def _time_global(
    frame: pd.DataFrame,
    o: _Opts,
    test_size: Any,
    validation_size: Any,
    cutoff: Any,
    validation_cutoff: Any,
    params: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray | None]:
    key = _time_key(frame, o)
    n = len(frame)
    ordered = np.sort(key)
    if cutoff is not None:
        cut = _cut_value(frame, o.timestamp_col, cutoff, "cutoff")
        params.pop("test_size", None)
        params["cutoff"] = cutoff
    else:
        t = int(_how_many(test_size, n))
        cut = ordered[n - t] if t else math.inf
    test = key >= cut
    val = None
    if validation_cutoff is not None:
        vcut = _cut_value(frame, o.timestamp_col, validation_cutoff, "validation_cutoff")
        if vcut > cut:
            raise ReceValError(
                f"{option('validation_cutoff', validation_cutoff)} must not be after "
                f"{option('cutoff', cutoff)}"
            )
        params["validation_cutoff"] = validation_cutoff
        val = (key >= vcut) & ~test
    elif validation_size is not None:
        rest = int((~test).sum())
        v = min(int(_how_many(validation_size, n)), rest)
        vcut = ordered[rest - v] if v else math.inf
        val = (key >= vcut) & ~test
    if cutoff is None and n:
        params["cutoff_found"] = _show_time(frame, o.timestamp_col, cut)
    return test, val


def _show_time(frame: pd.DataFrame, col: str, value: float) -> Any:
    if not math.isfinite(value):
        return None
    s = frame[col]
    if pd.api.types.is_datetime64_any_dtype(s) or s.dtype == object:
        return str(pd.Timestamp(int(value)))
    return int(value) if float(value).is_integer() else float(value)


def random_split(interactions: Any, test_size: float | int = 0.2, **options: Any) -> Split:
    """``split(interactions, "random", ...)``: a random share of all rows is test.

    >>> import pandas as pd
    >>> log = pd.DataFrame({"user": range(10), "item": range(10)})
    >>> random_split(log, 0.3, seed=1).sizes()["test"]["rows"]
    3
    """
    return split(interactions, "random", test_size=test_size, **options)


def user_random_split(interactions: Any, test_size: float | int = 0.2, **options: Any) -> Split:
    """``split(interactions, "user_random", ...)``: a random share of each user's rows."""
    return split(interactions, "user_random", test_size=test_size, **options)


def time_split(
    interactions: Any, test_size: float | int = 0.2, *, cutoff: Any = None, **options: Any
) -> Split:
    """``split(interactions, "time", ...)``: rows at or after the cut-off are test."""
    return split(interactions, "time", test_size=test_size, cutoff=cutoff, **options)


def user_time_split(interactions: Any, test_size: float | int = 0.2, **options: Any) -> Split:
    """``split(interactions, "user_time", ...)``: each user's last rows are test."""
    return split(interactions, "user_time", test_size=test_size, **options)


def leave_one_out(interactions: Any, **options: Any) -> Split:
    """``split(interactions, "leave_one_out", ...)``: each user's last row is
    test — :func:`leave_last_out` with n = 1 (one implementation), recorded as
    ``leave_one_out``."""
    return split(interactions, "leave_one_out", **options)


def leave_last_out(
    interactions: Any, n: int = 1, *, validation: int | None = None, **options: Any
) -> Split:
    """``split(interactions, "leave_last_out", test_size=n, validation_size=validation)``.

    Per user, the last ``n`` rows by time are test and the ``validation`` rows
    just before them validation; each user keeps at least one training row.
    Rows of one user with the same timestamp are ordered by item id (the id
    order: integers numerically, then text; ``1`` and ``"1"`` alike), the
    larger id later; rows with the same user, time and item by input order.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 1, 1, 1], "item": [5, 7, 6, 8],
        ...                     "timestamp": [1, 2, 2, 0]})
        >>> s = leave_last_out(log, 1, validation=1)
        >>> s.test["item"].tolist(), s.validation["item"].tolist()
        ([7], [6])
    """
    return split(interactions, "leave_last_out", test_size=n, validation_size=validation, **options)


def session_split(interactions: Any, cutoff: Any = None, **options: Any) -> Split:
    """``split(interactions, "session", cutoff=cutoff, ...)``: sessions (by
    ``session_col=`` or ``session_gap=``) after the cut are test, each session
    wholly in one part.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 1, 1, 2, 2], "item": [1, 2, 3, 1, 4],
        ...                     "timestamp": [0, 10, 100, 95, 99]})
        >>> s = session_split(log, cutoff=98, session_gap=30)
        >>> s.test["item"].tolist(), s.info["sessions"]
        ([3, 1, 4], {'train': 1, 'test': 2, 'straddling': 1})

        With a validation cut (``validation_cutoff=``, or ``validation_size=``
        sessions just before the test ones), the sessions between the two
        cuts are validation, a session across the validation cut assigned by
        the same ``straddle`` rule:

        >>> v = session_split(log, cutoff=98, validation_cutoff=5, session_gap=30)
        >>> v.train["item"].tolist(), v.validation["item"].tolist(), v.test["item"].tolist()
        ([], [1, 2], [3, 1, 4])
    """
    return split(interactions, "session", cutoff=cutoff, **options)


def time_windows(interactions: Any, test_length: Any, **options: Any) -> Folds:
    """``split(interactions, "time_windows", test_length=..., ...)``: folds of
    successive test windows, each trained on what precedes it (expanding) or
    on ``train_length`` before it (rolling); with ``validation_length``, the
    last ``validation_length`` before each test window is that fold's
    validation part (within ``train_length``).

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1] * 6, "item": range(6), "timestamp": range(6)})
        >>> folds = time_windows(log, 2, n_folds=2, train_length=2)
        >>> [(f.train["item"].tolist(), f.test["item"].tolist()) for f in folds]
        [([0, 1], [2, 3]), ([2, 3], [4, 5])]

        ``validation_length=`` holds out the end of each fold's train window:

        >>> folds = time_windows(log, 2, n_folds=2, train_length=3, validation_length=1)
        >>> [(f.train["item"].tolist(), f.validation["item"].tolist()) for f in folds]
        [([0], [1]), ([1, 2], [3])]
    """
    return split(interactions, "time_windows", test_length=test_length, **options)


def kfold(
    interactions: Any,
    k: int = 5,
    *,
    by: Literal["user", "interaction"] = "user",
    holdout: float | int = 0.2,
    order: Literal["random", "time"] = "random",
    seed: int = 0,
    min_user_interactions: int = 0,
    min_item_interactions: int = 0,
    relevance_threshold: float | None = None,
    drop_unseen_users: bool = False,
    drop_unseen_items: bool = False,
    user_col: str | None = None,
    item_col: str | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
) -> Iterator[Split]:
    """k-fold cross-validation: yields ``k`` splits whose test parts are disjoint.

    - ``by="interaction"``: rows are shuffled and cut into ``k`` folds of equal
      size (±1); fold f's rows are test, all others train.
    - ``by="user"``: users are shuffled and cut into ``k`` groups; for fold f,
      each user of group f gives ``holdout`` (a share or a count) of their rows
      to test — at random, or their last rows with ``order="time"`` — and
      keeps the rest in train; every other user is entirely in train.

    Options as in :func:`split`, applied to each fold (the k-core filter once,
    before the folds). ``info["fold"]`` is the 0-based fold number.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": [1, 2, 1, 3, 2, 3]})
        >>> [s.sizes()["test"]["rows"] for s in kfold(log, 3, by="interaction")]
        [2, 2, 2]
    """
    o = _opts(
        user_col,
        item_col,
        rating_col,
        timestamp_col,
        min_user_interactions,
        min_item_interactions,
        relevance_threshold,
        drop_unseen_users,
        drop_unseen_items,
    )
    if not _is_count(k) or k < 2:
        raise ReceValError(f"k must be an integer >= 2; got {k!r}")
    if by not in ("user", "interaction"):
        raise ReceValError(f"by must be user or interaction; got {by!r}")
    if order not in ("random", "time"):
        raise ReceValError(f"order must be random or time; got {order!r}")
    _check_size("holdout", holdout)
    check_seed(seed)
    frame, base_info, o = _prepare(interactions, o)
    n = len(frame)
    rng = np.random.default_rng(seed)
    params: dict[str, Any] = {"k": k, "by": by, "seed": seed}
    if by == "interaction":
        fold_of = np.empty(n, dtype=np.int64)
        fold_of[rng.permutation(n)] = np.arange(n) % k
        for f in range(k):
            info = _copy_info(base_info)
            yield _fold(frame, fold_of == f, o, info, params, f)
        return
    params.update(holdout=holdout, order=order)
    user = _codes(frame[o.user_col])
    n_users = int(user.max()) + 1 if n else 0
    group = np.empty(n_users, dtype=np.int64)
    group[rng.permutation(n_users)] = np.arange(n_users) % k
    key = _time_key(frame, o) if order == "time" else rng.random(n)
    for f in range(k):
        info = _copy_info(base_info)
        in_fold = group[user] == f
        sub = np.flatnonzero(in_fold)
        test = np.zeros(n, dtype=bool)
        if len(sub):
            t_sub, _ = _per_user(frame.iloc[sub], o, key[sub], holdout, None, info)
            test[sub[t_sub]] = True
        yield _fold(frame, test, o, info, params, f)


def _copy_info(info: dict[str, Any]) -> dict[str, Any]:
    return {
        "sizes": dict(info["sizes"]),
        "columns": dict(info["columns"]),
        "dropped": {k: dict(v) for k, v in info["dropped"].items()},
        "notes": list(info["notes"]),
    }


def _fold(
    frame: pd.DataFrame,
    test: np.ndarray,
    o: _Opts,
    info: dict[str, Any],
    params: dict[str, Any],
    f: int,
) -> Split:
    s = _finish(frame, test, None, o, info, "kfold", dict(params))
    s.info["fold"] = f
    return s
