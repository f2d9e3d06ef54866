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
  share), ordered by timestamp, ties by input row order.
- ``leave_one_out``: ``user_time`` with ``test_size=1``.

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
from typing import Any, Literal

import numpy as np
import pandas as pd

from receval.errors import InputError, OptionError, ReceValError, check_seed, option
from receval.io.interactions import LOG_ALIASES, as_frame, log_columns, read_log
from receval.io.write import OutputSet

__all__ = [
    "METHODS",
    "Split",
    "filter_interactions",
    "kfold",
    "leave_one_out",
    "random_split",
    "split",
    "split_file",
    "time_split",
    "user_random_split",
    "user_time_split",
]

Method = Literal["random", "user_random", "time", "user_time", "leave_one_out"]
METHODS: tuple[str, ...] = ("random", "user_random", "time", "user_time", "leave_one_out")

_EPS = 1e-9

#: The files :meth:`Split.save` writes into its folder (a validation part only when
#: there is one; ``manifest.json`` last).
FILES: tuple[str, ...] = (
    "train.parquet",
    "test.parquet",
    "validation.parquet",
    "split.json",
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
    """Timestamps as sortable numbers (int64 nanoseconds for dates)."""
    col = _needs(frame, o, "timestamp", "a chronological split")
    s = frame[col]
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        try:
            s = pd.to_datetime(s)
        except (ValueError, TypeError):
            raise InputError(
                f"timestamp column {col!r} holds values that are neither numbers nor dates",
                source="interactions",
            ) from None
    if pd.api.types.is_datetime64_any_dtype(s):
        bad = s.isna().to_numpy()
        if bad.any():
            raise InputError("missing timestamp", source="interactions", row=_first(bad))
        return s.to_numpy().astype("datetime64[ns]").astype(np.int64)
    try:
        values = s.to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        raise InputError(
            f"timestamp column {col!r} must hold numbers or dates", source="interactions"
        ) from None
    bad = ~np.isfinite(values)
    if bad.any():
        raise InputError("missing or non-finite timestamp", source="interactions", row=_first(bad))
    return values


def _cut_value(frame: pd.DataFrame, col: str, value: Any) -> float:
    """A cut-off given by the user, on the scale of :func:`_time_key`."""
    s = frame[col]
    if (
        pd.api.types.is_datetime64_any_dtype(s)
        or s.dtype == object
        or isinstance(value, (str, pd.Timestamp))
    ):
        ts = pd.Timestamp(value)
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
        if size < 0:
            raise ReceValError(f"{name} must be a share in (0, 1) or a count >= 0; got {size}")
        return
    if isinstance(size, float) and 0 < size < 1:
        return
    raise ReceValError(
        f"{name} must be a share in (0, 1) (a float) or a number of rows (an int); got {size!r}"
    )


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


def _positions(group: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's 0-based position within its group ordered by ``key`` (ties:
    row order), and its group's size."""
    n = len(group)
    order = np.lexsort((key, group))  # stable: equal keys keep row order
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
            raise ReceValError(f"{name} must be an integer >= 0; got {v!r}")
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
) -> Split:
    train_df = frame[~test & (~val if val is not None else True)].reset_index(drop=True)
    test_df = frame[test].reset_index(drop=True)
    val_df = frame[val].reset_index(drop=True) if val is not None else None
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
        parts[name] = part
    test_df = parts["test"]
    val_df = parts["validation"]
    sizes = info["sizes"]
    sizes["train"] = _size(train_df, o.user_col, o.item_col)
    if val_df is not None:
        sizes["validation"] = _size(val_df, o.user_col, o.item_col)
    sizes["test"] = _size(test_df, o.user_col, o.item_col)
    info = {"method": method, "parameters": parameters, **info}
    return Split(train=train_df, test=test_df, validation=val_df, info=info)


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
) -> _Opts:
    if relevance_threshold is not None:
        try:
            relevance_threshold = float(relevance_threshold)
        except (TypeError, ValueError):
            raise ReceValError(
                f"relevance_threshold must be a number; got {relevance_threshold!r}"
            ) from None
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
    )


def _per_user(
    frame: pd.DataFrame,
    o: _Opts,
    key: np.ndarray,
    test_size: Any,
    validation_size: Any,
    info: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per user, the rows at the end of ``key`` order are test, the ones just
    before them validation; at least one row per user stays in train."""
    user = _codes(frame[o.user_col])
    pos, n = _positions(user, key)
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


def split(
    interactions: Any,
    method: Method = "user_time",
    *,
    test_size: float | int = 0.2,
    validation_size: float | int | None = None,
    cutoff: Any = None,
    validation_cutoff: Any = None,
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
) -> Split:
    """Split an interaction log into train and test (and validation).

    Args:
        interactions: a table (pandas, polars, pyarrow) with user and item
            columns, optionally rating and timestamp.
        method: ``random``, ``user_random``, ``time``, ``user_time`` or
            ``leave_one_out`` (see the module docstring).
        test_size: a share in (0, 1) (a float) or a number of rows (an int):
            of all rows (``random``, ``time``) or of each user's rows.
        validation_size: the same, for a validation part taken just before
            the test part (chronological) or at random from the rest; None: no
            validation part.
        cutoff: ``time`` only: rows with timestamp ≥ cutoff are test (a
            number, or a date for date columns); overrides ``test_size``.
        validation_cutoff: ``time`` only: rows in [validation_cutoff, cutoff)
            are validation.
        seed: the seed of the random methods.
        min_user_interactions, min_item_interactions: k-core filter before
            splitting (see :func:`filter_interactions`).
        relevance_threshold: keep in test/validation only rows rated ≥ it.
        drop_unseen_users, drop_unseen_items: drop test/validation rows whose
            user/item has no training row.
        user_col, item_col, rating_col, timestamp_col: the columns (None:
            detected: user, user_id, userId, ...; rating, stars; timestamp,
            time, date, ...; see :func:`receval.io.interactions.log_columns`).

    Returns:
        A :class:`Split`.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1] * 5, "item": range(5), "timestamp": range(5)})
        >>> split(log, "user_time", test_size=0.4).test["item"].tolist()
        [3, 4]
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
    if method not in METHODS:
        raise ReceValError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if method == "leave_one_out":
        test_size = 1
    _check_size("test_size", test_size)
    _check_size("validation_size", validation_size, allow_none=True)
    _check_shares(test_size, validation_size)
    check_seed(seed)
    frame, info, o = _prepare(interactions, o)
    params: dict[str, Any] = {"test_size": test_size}
    if validation_size is not None:
        params["validation_size"] = validation_size
    n = len(frame)
    val: np.ndarray | None
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
    else:
        key = _time_key(frame, o)
        test, val = _per_user(frame, o, key, test_size, validation_size, info)
    if method == "leave_one_out":
        params = {k: v for k, v in params.items() if k != "test_size"}
    return _finish(frame, test, val, o, info, method, params)


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
) -> Split:
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
    log = read_log(path, format=format, sep=sep, user_col=user_col, item_col=item_col)
    return split(
        log,
        method,
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        timestamp_col=timestamp_col,
        **options,
    )


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
        cut = _cut_value(frame, o.timestamp_col, cutoff)
        params.pop("test_size", None)
        params["cutoff"] = cutoff
    else:
        t = int(_how_many(test_size, n))
        cut = ordered[n - t] if t else math.inf
    test = key >= cut
    val = None
    if validation_cutoff is not None:
        vcut = _cut_value(frame, o.timestamp_col, validation_cutoff)
        if vcut > cut:
            raise ReceValError(
                f"validation_cutoff ({validation_cutoff}) must not be after cutoff ({cutoff})"
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
    """``split(interactions, "leave_one_out", ...)``: each user's last row is test."""
    return split(interactions, "leave_one_out", **options)


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
