"""Leakage and sanity checks on train, test and recommendations.

:func:`check` looks for what silently distorts offline numbers and reports
each finding with a count and a one-line explanation; it never changes the
data. What it checks (each only when the inputs it needs are given):

- ``seen_in_train``: recommended (user, item) pairs the user already has in
  train — usually a bug (filter with :func:`remove_seen`), unless re-consumption
  is the task.
- ``test_before_train`` (``chronological="user"``): test rows earlier than the
  same user's latest training row; (``chronological="global"``): test rows
  earlier than the latest training row of anyone — leakage from the future.
- ``test_users_not_in_train`` / ``test_items_not_in_train``: cold-start users
  and items of the test part (no model trained on train can know them).
- ``missing_lists``: test users without any recommendation (scored 0 by
  default: ``missing_recs="zero"``).
- ``short_lists``: lists shorter than ``k`` (precision@k still divides by k).
- ``score_ties``: rows whose score equals another row's in the same list
  (receval breaks ties by item id ascending; other tools may not).
- ``duplicate_rows_{train,test,recs}``: repeated (user, item) pairs (an error
  in recs and truth for :func:`receval.evaluate`).
- ``recommended_items_not_in_train``: items recommended that no training row
  has (popularity 1 for novelty and arp).

>>> import pandas as pd
>>> train = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1]})
>>> test = pd.DataFrame({"user": [1, 2, 3], "item": [3, 2, 1]})
>>> recs = pd.DataFrame({"user": [1, 1, 2], "item": [1, 3, 2], "score": [0.9, 0.5, 0.5]})
>>> report = check(train, test, recs, k=2)
>>> report["seen_in_train"].count, report["short_lists"].count
(1, 1)
>>> print(report["seen_in_train"].message)
1 of 3 recommendation rows (1 of 2 users) recommend an item the user already has in train; \
remove them with receval.workflow.checks.remove_seen(recs, train)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from receval.analysis.formatting import visible
from receval.errors import InputError, ReceValError, for_cli, for_python, option, plain, said, shown
from receval.evaluation.options import EvalOptions
from receval.ids import canonical, distinct, unify
from receval.io.columns import RECS, TRAIN, resolve
from receval.io.inputs import opened
from receval.io.interactions import as_frame
from receval.records import Columns

__all__ = ["CheckReport", "Finding", "check", "remove_seen"]

#: the roles an input has (required, then detected), as :mod:`receval.io.columns` takes them
_Roles = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass
class Finding:
    """One check: a count and a one-line explanation.

    Attributes:
        code: the check's name (e.g. ``seen_in_train``).
        count: how many rows / users / items it found (0: nothing found).
        message: one line saying what was found and what it means.
        severity: ``warning`` (likely distorts the numbers), ``info``.
        examples: up to 5 offending (user, item) pairs or ids.
        cli_message: the message as the command line says it, when it names
            what to type (``--remove-seen`` instead of ``remove_seen(...)``).
    """

    code: str
    count: int
    message: str
    severity: Literal["warning", "info"] = "warning"
    examples: list[Any] = field(default_factory=list)
    cli_message: str | None = None

    def render(self, cli: bool = False) -> str:
        """One line: mark, code, message (the command line's with ``cli``);
        the examples' control characters written as escapes (``\\x1b``),
        so that an id can neither break the line nor drive the terminal."""
        mark = "ok  " if self.count == 0 else ("WARN" if self.severity == "warning" else "info")
        shown_ = ", ".join(visible(_example(e)) for e in self.examples)
        ex = f" (e.g. {shown_})" if self.count and self.examples else ""
        message = (self.cli_message or self.message) if cli else self.message
        return f"[{mark}] {self.code}: {message}{ex}"

    def __str__(self) -> str:
        return self.render()


@dataclass
class CheckReport:
    """All findings of :func:`check`, in a fixed order."""

    findings: list[Finding]

    def __getitem__(self, code: str) -> Finding:
        for f in self.findings:
            if f.code == code:
                return f
        raise KeyError(f"no check {code!r} ran (ran: {', '.join(self.codes())})")

    def codes(self) -> list[str]:
        """The names of the checks that ran."""
        return [f.code for f in self.findings]

    @property
    def problems(self) -> list[Finding]:
        """Findings with a count > 0 and severity ``warning``."""
        return [f for f in self.findings if f.count and f.severity == "warning"]

    @property
    def ok(self) -> bool:
        """True when no warning was found."""
        return not self.problems

    def to_frame(self) -> pd.DataFrame:
        """One row per check: code, count, severity, message."""
        return pd.DataFrame(
            [(f.code, f.count, f.severity, f.message) for f in self.findings],
            columns=["check", "count", "severity", "message"],
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{code: {count, severity, message, examples}}``."""
        return {
            f.code: {
                "count": f.count,
                "severity": f.severity,
                "message": f.message,
                "examples": [_plain(e) for e in f.examples],
            }
            for f in self.findings
        }

    def render(self, cli: bool = False) -> str:
        """One line per finding (messages as the command line says them with ``cli``)."""
        return "\n".join(f.render(cli) for f in self.findings)

    def __str__(self) -> str:
        return self.render()


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return plain(value)


def _example(value: Any) -> str:
    """An example as a report line shows it: an id as it is, a pair as a tuple."""
    return str(tuple(plain(v) for v in value) if isinstance(value, tuple) else plain(value))


def _finding(
    code: str,
    count: int,
    text: str,
    severity: Literal["warning", "info"] = "warning",
    examples: list[Any] | None = None,
) -> Finding:
    """A finding whose ``text`` may name options (:func:`~receval.errors.option`):
    its message in Python's syntax, and in the command line's for ``receval check``."""
    python, cli = for_python(text), for_cli(text)
    return Finding(
        code, count, python, severity, examples or [], cli_message=cli if cli != python else None
    )


@dataclass
class _Input:
    """One input of :func:`check` or :func:`remove_seen` as read: a frame with
    the input's own column names (a file's, as it names them), the name its
    errors give (the file's path, or ``train``/``test``/``recommendations``)
    and the :class:`~receval.io.files.FileInfo` of a file (None: a table)."""

    frame: pd.DataFrame
    source: str
    info: Any = None

    @contextmanager
    def located(self) -> Iterator[None]:
        """An input error about this input's rows names its file and line."""
        try:
            yield
        except InputError as exc:
            if self.info is None:
                raise
            raise self.info.locate(exc) from None


def _read(obj: Any, what: str, role: str, cols: Columns) -> _Input:
    """``obj`` opened by the one way in (:func:`receval.io.inputs.opened`: a
    path of any format receval reads, a FileInput, a table) as a pandas frame
    with its own column names: a file's columns named back from their roles
    (``uid``, not ``user``), so the column options apply to it as to the
    file and the frame is the table the file holds (ids under the id rule)."""
    table, _, info = opened(obj, role, cols)
    if info is None:
        return _Input(as_frame(table, what), what)
    frame = as_frame(table, info.path)
    own = {role: column for role, column in info.columns.items() if role in frame}
    return _Input(frame.rename(columns=own), info.path, info)


def _frames(inputs: list[tuple[_Input | None, _Roles]], cols: Columns) -> list[pd.DataFrame | None]:
    """The inputs (:func:`_read`) as frames whose user/item (and score/rank)
    columns are detected as :func:`receval.evaluate` detects them and renamed
    to their roles, with ids under the one id rule, matched as one kind."""
    columns: list[dict[str, Any] | None] = []
    for given, roles in inputs:
        if given is None:
            columns.append(None)
            continue
        with given.located():
            frame = given.frame.rename(columns=str)  # a new frame: the input stays as is
            found = resolve(list(frame.columns), cols, roles, given.source)
            frame = frame.rename(columns={name: role for role, name in found.items()})
            data: dict[str, Any] = {c: frame[c] for c in frame.columns}
            for r in ("user", "item"):
                data[r] = canonical(frame[r].to_numpy(), r, given.source)
        columns.append(data)
    present = [d for d in columns if d is not None]
    for role in ("user", "item"):
        parts = unify([d[role] for d in present], role, [])
        for d, part in zip(present, parts, strict=True):
            d[role] = part
    # one frame per input, built once from its columns (no copy of each new column)
    return [None if d is None else pd.DataFrame(d, copy=False) for d in columns]


def _pair_keys(users: list[np.ndarray], items: list[np.ndarray]) -> list[np.ndarray]:
    """Each table's (user, item) pairs as int64 keys, codes shared by the tables
    (one hash pass per column instead of tuples of a MultiIndex)."""

    def shared(parts: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
        codes, uniq = pd.factorize(np.concatenate(parts), use_na_sentinel=False)
        return np.split(codes.astype(np.int64), np.cumsum([len(p) for p in parts])[:-1]), len(uniq)

    u, _ = shared(users)
    i, width = shared(items)
    return [a * width + b for a, b in zip(u, i, strict=True)]


def _examples(values: Any, n: int = 5) -> list[Any]:
    return [
        tuple(plain(x) for x in v) if isinstance(v, tuple) else plain(v) for v in list(values)[:n]
    ]


def check(
    train: Any = None,
    test: Any = None,
    recs: Any = None,
    *,
    k: int | None = None,
    chronological: bool | Literal["user", "global"] = False,
    options: EvalOptions | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    timestamp_col: str = "timestamp",
) -> CheckReport:
    """Run every check the given inputs allow; see the module docstring.

    Each input is a table (pandas, polars, pyarrow) or the path of a file
    (CSV/TSV, Parquet, JSON Lines, TREC, RecBole, compressed; a
    :class:`~receval.io.inputs.FileInput` to give its format or delimiter),
    opened as :func:`receval.evaluate` opens it
    (:func:`receval.io.inputs.opened`): the findings of a file are those of
    the table read from it, and an error in it names the file and its line.

    Args:
        train, test: interactions (user, item[, timestamp]): tables or files
            (every column of a file is read: the timestamp too).
        recs: recommendations (user, item, score or rank): a table or a file.
        k: the largest cut-off you will evaluate (``short_lists``).
        chronological: ``"user"`` (or True) / ``"global"``: the protocol is
            chronological, so test rows must not precede train rows (per user,
            or overall); needs timestamps in train and test.
        options: an :class:`~receval.EvalOptions`: its column names apply
            (columns are detected as :func:`receval.evaluate` detects them,
            and ids compared under the same id rule).
        user_col, item_col, score_col, rank_col: column names on top of
            ``options`` (None: detected).
        timestamp_col: the timestamp column of train and test.

    Returns:
        A :class:`CheckReport`; nothing is modified.
    """
    if chronological is True:
        chronological = "user"
    if chronological not in (False, "user", "global"):
        raise ReceValError(
            f"chronological must be False, 'user' or 'global'; got {shown(chronological)}"
        )
    if k is not None and (not isinstance(k, (int, np.integer)) or k < 1):
        raise ReceValError(said("k", "-k") + f" must be an integer >= 1; got {shown(k)}")
    opts = EvalOptions.build(
        options, user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col
    )
    cols = opts.columns()
    given = {
        "train": None if train is None else _read(train, "train", "log", cols),
        "test": None if test is None else _read(test, "test", "log", cols),
        "recs": None if recs is None else _read(recs, "recommendations", "recommendations", cols),
    }
    tr, te, rc = _frames(
        [(given["train"], TRAIN), (given["test"], TRAIN), (given["recs"], RECS)], cols
    )
    out: list[Finding] = []
    tables = [(name, f) for name, f in (("train", tr), ("test", te), ("recs", rc)) if f is not None]
    keys = dict(
        zip(
            [name for name, _ in tables],
            _pair_keys(
                [f["user"].to_numpy() for _, f in tables],
                [f["item"].to_numpy() for _, f in tables],
            ),
            strict=True,
        )
    )
    out += [_duplicates(name, frame, keys[name]) for name, frame in tables]
    if rc is not None and tr is not None:
        out += _seen_and_unknown(rc, tr, keys)
    if te is not None and tr is not None:
        out += _cold_start(te, tr)
        if chronological:
            sources = {k: v.source for k, v in given.items() if v is not None}
            out.append(_chronology(tr, te, chronological, timestamp_col, sources))
    if rc is not None:
        out += _lists(rc, te, k)
    return CheckReport(out)


def _duplicates(name: str, frame: pd.DataFrame, key: np.ndarray) -> Finding:
    """Rows of one input repeating an earlier (user, item) pair."""
    # counted by a sort; the repeated rows themselves found only when there are some
    if len(key) == len(distinct(key)):
        dup = np.zeros(len(key), dtype=bool)
    else:
        dup = pd.Series(key).duplicated(keep="first").to_numpy()
    n = int(dup.sum())
    what = {
        "train": "repeated interactions (kept; popularity counts distinct users)",
        "test": "an error for receval.evaluate as truth ("
        + option("duplicates", "keep")
        + " keeps the largest grade)",
        "recs": "an error for receval.evaluate ("
        + option("duplicates", "keep")
        + " keeps the first)",
    }[name]
    message = f"{n} of {len(frame)} {name} rows repeat an earlier (user, item) pair: {what}"
    return _finding(
        f"duplicate_rows_{name}",
        n,
        message,
        "info" if name == "train" else "warning",
        _examples(zip(frame["user"][dup], frame["item"][dup], strict=True)),
    )


def _seen_and_unknown(
    rc: pd.DataFrame, tr: pd.DataFrame, keys: dict[str, np.ndarray]
) -> list[Finding]:
    """Recommended items the user has in train; recommended items train never holds."""
    seen = pd.Series(keys["recs"]).isin(keys["train"]).to_numpy()
    n = int(seen.sum())
    users = int(rc["user"][seen].nunique())
    message = (
        f"{n} of {len(rc)} recommendation rows ({users} of {rc['user'].nunique()} "
        "users) recommend an item the user already has in train; remove them with "
        + said(
            "receval.workflow.checks.remove_seen(recs, train)",
            "--remove-seen (receval evaluate/compare/report --train TRAIN --remove-seen)",
        )
    )
    examples = _examples(zip(rc["user"][seen], rc["item"][seen], strict=True))
    cold = ~rc["item"].isin(pd.unique(tr["item"])).to_numpy()
    items = rc["item"][cold].unique()
    return [
        _finding("seen_in_train", n, message, examples=examples),
        _finding(
            "recommended_items_not_in_train",
            len(items),
            f"{len(items)} recommended items ({int(cold.sum())} rows) never occur in train "
            "(novelty and arp give them popularity 1)",
            "info",
            _examples(items),
        ),
    ]


def _cold_start(te: pd.DataFrame, tr: pd.DataFrame) -> list[Finding]:
    """Test users and items absent from train."""
    out = []
    for col, what in (("user", "users"), ("item", "items")):
        unseen = ~te[col].isin(pd.unique(tr[col])).to_numpy()
        ids = te[col][unseen].unique()
        drop = option(f"drop_unseen_{what}", True, flag="--drop-unseen")
        out.append(
            _finding(
                f"test_{what}_not_in_train",
                len(ids),
                f"{len(ids)} of {te[col].nunique()} test {what} ({int(unseen.sum())} test "
                f"rows) are absent from train (cold start; drop them with {drop} when "
                "splitting)",
                examples=_examples(ids),
            )
        )
    return out


def _lists(rc: pd.DataFrame, te: pd.DataFrame | None, k: int | None) -> list[Finding]:
    """Test users without a list, lists shorter than k, tied scores."""
    out = []
    if te is not None:
        missing = ~pd.Index(pd.unique(te["user"])).isin(pd.unique(rc["user"]))
        ids = pd.unique(te["user"])[missing]
        out.append(
            _finding(
                "missing_lists",
                len(ids),
                f"{len(ids)} of {te['user'].nunique()} test users have no recommendation "
                f"(scored 0 by default: {option('missing_recs', 'zero')})",
                examples=_examples(ids),
            )
        )
    sizes = rc.groupby("user", sort=True).size()
    if k is not None:
        short = sizes[sizes < k]
        out.append(
            _finding(
                "short_lists",
                len(short),
                f"{len(short)} of {len(sizes)} lists have fewer than "
                f"{said(f'k={k}', f'-k {k}')} items "
                f"(shortest: {int(sizes.min()) if len(sizes) else 0}); precision@{k} still "
                f"divides by {k}",
                examples=_examples(short.index),
            )
        )
    if "rank" not in rc.columns and "score" in rc.columns:
        tied = rc.duplicated(["user", "score"], keep=False).to_numpy()
        users = rc["user"][tied].unique()
        out.append(
            _finding(
                "score_ties",
                int(tied.sum()),
                f"{int(tied.sum())} recommendation rows ({len(users)} users) share their "
                "score with another item of the same list; receval orders ties by item id "
                "ascending, other tools may not",
                examples=_examples(users),
            )
        )
    return out


def _chronology(
    tr: pd.DataFrame, te: pd.DataFrame, how: str, ts: str, sources: dict[str, str]
) -> Finding:
    """Test rows earlier than the training rows (``sources``: each input's
    name in errors: its file, or ``train``/``test``)."""
    user_col, item_col = "user", "item"
    for frame, name in ((tr, "train"), (te, "test")):
        if ts not in frame.columns:
            raise InputError(
                f"a chronological check needs a timestamp column {ts!r} in {name}; name it "
                f"with {option('timestamp_col')}",
                source=sources[name],
            )
    if how == "global":
        latest = tr[ts].max()
        early = (te[ts] < latest).to_numpy()
        where = f"the latest training row ({latest})"
    else:
        latest_u = tr.groupby(user_col)[ts].max()
        mapped = te[user_col].map(latest_u)
        early = (mapped.notna() & (te[ts] < mapped)).to_numpy()
        where = "the same user's latest training row"
    n = int(early.sum())
    users = int(te[user_col][early].nunique())
    return _finding(
        "test_before_train",
        n,
        f"{n} of {len(te)} test rows ({users} users) are earlier than {where}: the model "
        "was trained on the future",
        examples=_examples(zip(te[user_col][early], te[item_col][early], strict=True)),
    )


def remove_seen(
    recs: Any,
    train: Any,
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    rank_col: str | None = None,
    score_col: str | None = None,
) -> pd.DataFrame:
    """The recommendations without the (user, item) pairs present in train.

    ``recs`` and ``train`` are tables (pandas, polars, pyarrow) or paths of
    files (any format :func:`receval.evaluate` reads, or a
    :class:`~receval.io.inputs.FileInput`), opened as it opens them
    (:func:`receval.io.inputs.opened`); an error in a file names the file and
    its line. Columns are detected as :func:`receval.evaluate` detects them
    (or named by the keywords: ``score_col`` keeps a file's score column of
    another name) and ids matched under the one id rule.

    Returns a pandas DataFrame: the rows of ``recs`` kept, with its columns.
    When ``recs`` is a file, that is the table read from it: its user, item
    and score or rank columns under the file's own names (a list of items per
    user expanded to one row per item, with a ``rank``), its ids under the id
    rule; the same rows as for that table given as a table.

    Rows keep their order; a ``rank`` column is renumbered 1, 2, ... within
    each user in rank order, so lists stay gap-free. The number of rows removed
    is in ``result.attrs["removed"]``.

    Example:
        >>> import pandas as pd
        >>> recs = pd.DataFrame({"user": [1, 1, 1], "item": [5, 6, 7], "rank": [1, 2, 3]})
        >>> out = remove_seen(recs, pd.DataFrame({"user": [1], "item": [6]}))
        >>> out[["item", "rank"]].values.tolist(), out.attrs["removed"]
        ([[5, 1], [7, 2]], 1)
    """
    cols = Columns(user=user_col, item=item_col, rank=rank_col, score=score_col)
    given = _read(recs, "recommendations", "recommendations", cols)
    rc = given.frame
    with given.located():
        found = resolve([str(c) for c in rc.columns], cols, RECS, given.source)
    named = {str(c): c for c in rc.columns}
    train_cols = Columns(user=user_col, item=item_col)
    seen_by = _read(train, "train", "train", train_cols)
    canon, train_canon = _frames([(given, TRAIN), (seen_by, TRAIN)], train_cols)
    assert canon is not None and train_canon is not None
    key, train_key = _pair_keys(
        [canon["user"].to_numpy(), train_canon["user"].to_numpy()],
        [canon["item"].to_numpy(), train_canon["item"].to_numpy()],
    )
    seen = pd.Series(key).isin(train_key).to_numpy()
    out = rc[~seen].reset_index(drop=True)
    if "rank" in found:
        rank, user = named[found["rank"]], named[found["user"]]
        out[rank] = out.groupby(user, sort=False)[rank].rank(method="first").astype(np.int64)
    out.attrs["removed"] = int(seen.sum())
    return out
