"""Leakage and sanity checks on train, test and recommendations.

:func:`check` looks for what silently distorts offline numbers and reports
each finding with a count and a one-line explanation; it never changes the
data. What it checks (each only when the inputs it needs are given), with its
severity (``leakage``: the split leaks, ``receval check`` exits 1;
``warning``: likely distorts the numbers; ``info``):

- ``train_test_overlap`` (leakage): test rows whose (user, item) pair is also
  in train — the model was trained on the answers.
- ``test_before_train`` (leakage): test rows earlier than the same user's
  latest training row (``chronological="global"``: than the latest training
  row of anyone) — the model was trained on the future. Checked whenever
  train and test both have the timestamp column (else skipped, with a note);
  ``chronological=True`` makes the timestamp required, ``False`` skips the
  check (a random split, where test may precede train by design).
- ``session_straddles_cut`` (leakage, with ``session_col=`` or
  ``session_gap=``): sessions with rows in both train and test — a session
  split (:func:`receval.split` ``method="session"``) puts each session wholly
  in one part.
- With ``validation=`` (the validation part of a split), the same leakage
  checks between train and validation and between validation and test:
  ``train_validation_overlap`` / ``validation_test_overlap`` (pairs in both),
  ``validation_before_train`` / ``test_before_validation`` (time travel, as
  ``test_before_train``), ``session_straddles_validation_cut`` (sessions with
  rows in train and validation); ``session_straddles_cut`` then counts test
  sessions with rows in train or validation (sessions by a gap are cut over
  the three parts together).
- ``seen_in_train``: recommended (user, item) pairs the user already has in
  train — usually a bug (filter with :func:`remove_seen`), unless re-consumption
  is the task.
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

import contextlib
import functools
import itertools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from receval.analysis.formatting import visible
from receval.errors import InputError, ReceValError, for_cli, for_python, option, plain, said, shown
from receval.evaluation.options import EvalOptions
from receval.ids import canonical, distinct, kind, unify
from receval.io.columns import RECS, TRAIN, resolve, to_arrow
from receval.io.inputs import opened
from receval.io.interactions import as_frame
from receval.io.tables import long_rows, of_users, read_order
from receval.records import Columns

__all__ = ["CheckReport", "Finding", "check", "remove_seen"]

#: the roles an input has (required, then detected), as :mod:`receval.io.columns` takes them
_Roles = tuple[tuple[str, ...], tuple[str, ...]]
#: how much a finding matters: ``leakage`` makes ``receval check`` exit 1
Severity = Literal["leakage", "warning", "info"]


@dataclass
class Finding:
    """One check: a count and a one-line explanation.

    Attributes:
        code: the check's name (e.g. ``seen_in_train``).
        count: how many rows / users / items it found (0: nothing found).
        message: one line saying what was found and what it means.
        severity: ``leakage`` (the split leaks: test data reached training),
            ``warning`` (likely distorts the numbers), ``info``.
        examples: up to 5 offending (user, item) pairs or ids.
        cli_message: the message as the command line says it, when it names
            what to type (``--remove-seen`` instead of ``remove_seen(...)``).
        skipped: the check could not run (count 0; the message says why).
    """

    code: str
    count: int
    message: str
    severity: Severity = "warning"
    examples: list[Any] = field(default_factory=list)
    cli_message: str | None = None
    skipped: bool = False

    def render(self, cli: bool = False) -> str:
        """One line: mark (``LEAK``, ``WARN``, ``info``, ``ok``, ``skip``),
        code, message (the command line's with ``cli``); the examples'
        control characters written as escapes (``\\x1b``), so that an id
        can neither break the line nor drive the terminal."""
        if self.skipped:
            mark = "skip"
        elif self.count == 0:
            mark = "ok  "
        else:
            mark = {"leakage": "LEAK", "warning": "WARN"}.get(self.severity, "info")
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
        """Findings with a count > 0 and severity ``leakage`` or ``warning``."""
        return [f for f in self.findings if f.count and f.severity in ("leakage", "warning")]

    @property
    def leakage(self) -> list[Finding]:
        """Findings with a count > 0 and severity ``leakage`` (test data that
        reached training: ``train_test_overlap``, ``test_before_train``);
        empty (false) when the split does not leak. ``receval check`` exits 1
        when it is not empty."""
        return [f for f in self.findings if f.count and f.severity == "leakage"]

    @property
    def ok(self) -> bool:
        """True when neither leakage nor a warning was found."""
        return not self.problems

    def to_frame(self) -> pd.DataFrame:
        """One row per check: code, count, severity, message."""
        return pd.DataFrame(
            [(f.code, f.count, f.severity, f.message) for f in self.findings],
            columns=["check", "count", "severity", "message"],
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{code: {count, severity, message, examples, skipped}}``."""
        return {
            f.code: {
                "count": f.count,
                "severity": f.severity,
                "message": f.message,
                "examples": [_plain(e) for e in f.examples],
                "skipped": f.skipped,
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
    severity: Severity = "warning",
    examples: list[Any] | None = None,
    skipped: bool = False,
) -> Finding:
    """A finding whose ``text`` may name options (:func:`~receval.errors.option`):
    its message in Python's syntax, and in the command line's for ``receval check``."""
    python, cli = for_python(text), for_cli(text)
    return Finding(
        code,
        count,
        python,
        severity,
        examples or [],
        cli_message=cli if cli != python else None,
        skipped=skipped,
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
            frame, rows = _long(frame, found, roles == RECS, given.source)
            try:
                data = _earliest(frame, found, roles == RECS, given.source)
            except InputError as exc:  # a row of the lists expanded: the given table's row
                raise exc if rows is None else exc.remap(rows.item) from None
        columns.append(data)
    present = [d for d in columns if d is not None]
    for role in ("user", "item"):
        parts = unify([d[role] for d in present], role, [])
        for d, part in zip(present, parts, strict=True):
            d[role] = part
    # one frame per input, built once from its columns (no copy of each new column)
    return [None if d is None else pd.DataFrame(d, copy=False) for d in columns]


def _long(
    frame: pd.DataFrame, found: dict[str, str], rank: bool, source: str
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """A frame holding a list of items a row (a user's list, best first) as one
    row per listed item, as :func:`receval.evaluate` reads it
    (:func:`receval.io.tables.long_rows`), and the given row of each; else the
    frame as it is."""
    if "item" not in frame.columns:
        return frame, None
    table, rows = long_rows(to_arrow(frame, source, ids={"item": "item"}), found, rank, source)
    return (frame, None) if rows is None else (as_frame(table, source), rows)


def _columns(
    frame: pd.DataFrame, found: dict[str, Any], recs: bool, source: str, kinds: tuple[Any, Any]
) -> dict[str, Any]:
    """The frame's columns, its ids under the id rule (of ``kinds``, None:
    their own) and, for recommendations, its scores or ranks read as
    :func:`receval.evaluate` reads them; an error names its row's user."""
    data: dict[str, Any] = {c: frame[c] for c in frame.columns}
    data["user"] = users = canonical(frame["user"].to_numpy(), "user", source, kinds[0])
    items = functools.partial(canonical, frame["item"].to_numpy(), "item", source, kinds[1])
    data["item"] = of_users(users, items)
    if recs:  # the scores or ranks as evaluate reads them, refused as it does
        _order(frame, data, found, source)
    return data


def _earliest(
    frame: pd.DataFrame, found: dict[str, Any], recs: bool, source: str
) -> dict[str, Any]:
    """:func:`_columns`, or the error of the frame's first offending row,
    whichever check finds it (a bad score before a missing item id: the
    score's), as :func:`receval.evaluate` names it (SPEC §2.3): the rows
    before a refused one are read again, with the whole columns' id kinds,
    until they pass."""
    try:
        return _columns(frame, found, recs, source, (None, None))
    except InputError as exc:
        first = exc
    kinds: tuple[Any, Any] = (None, None)
    with contextlib.suppress(InputError):  # the whole columns' kinds, when readable
        kinds = (
            kind(canonical(frame["user"].to_numpy(), "user", source)),
            kind(canonical(frame["item"].to_numpy(), "item", source)),
        )
    while first.row:
        try:
            _columns(frame.iloc[: first.row], dict(found), recs, source, kinds)
        except InputError as exc:
            if exc.row is None:
                break
            first = exc
        else:
            break
    raise first from None


def _order(frame: pd.DataFrame, data: dict[str, Any], found: dict[str, Any], source: str) -> None:
    """The recommendations' rank (or, without one, score) column checked by
    :func:`receval.io.tables.read_order`, as :func:`receval.evaluate` reads
    it: text, a missing value, NaN or an infinity for a score (a rank not a
    positive integer) is an error naming the row, user, item and value; the
    column read replaces the one in ``data`` (``"0.50"`` ties with ``0.5``)."""
    role = "rank" if "rank" in found else "score" if "score" in found else None
    if role is None:
        return
    column = to_arrow(frame[[role]], source).column(role)
    data[role] = read_order(column, role, data["user"], data["item"], source)  # ties as numbers


def _shared(parts: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Each array's ids as int64 codes shared by the arrays (one hash pass), and
    the number of distinct ids."""
    codes, uniq = pd.factorize(np.concatenate(parts), use_na_sentinel=False)
    return np.split(codes.astype(np.int64), np.cumsum([len(p) for p in parts])[:-1]), len(uniq)


def _pair_keys(users: list[np.ndarray], items: list[np.ndarray]) -> list[np.ndarray]:
    """Each table's (user, item) pairs as int64 keys, codes shared by the tables
    (one hash pass per column instead of tuples of a MultiIndex)."""
    u, _ = _shared(users)
    i, width = _shared(items)
    return [a * width + b for a, b in zip(u, i, strict=True)]


@dataclass
class _Codes:
    """The users and items of each table of :func:`check` (``train``, ``test``,
    ``recs``) as int64 codes shared by the tables, so that membership, distinct
    counts and per-user maxima are array operations on integers."""

    codes: dict[str, dict[str, np.ndarray]]  # role (user, item) -> table -> codes
    size: dict[str, int]  # role -> number of distinct ids over the tables

    @classmethod
    def of(cls, tables: dict[str, pd.DataFrame]) -> _Codes:
        codes, size = {}, {}
        for role in ("user", "item"):
            parts, size[role] = _shared([f[role].to_numpy() for f in tables.values()])
            codes[role] = dict(zip(tables, parts, strict=True))
        return cls(codes, size)

    def keys(self, table: str) -> np.ndarray:
        """The table's (user, item) pairs as int64 keys."""
        return self.codes["user"][table] * self.size["item"] + self.codes["item"][table]

    def known(self, role: str, table: str, among: str) -> np.ndarray:
        """Rows of ``table`` whose ``role`` id occurs in the table ``among``."""
        present = np.zeros(self.size[role], dtype=bool)
        present[self.codes[role][among]] = True
        return present[self.codes[role][table]]

    def distinct(self, role: str, table: str, rows: np.ndarray | None = None) -> int:
        """How many distinct ``role`` ids the table (or its ``rows``, a mask) holds."""
        codes = self.codes[role][table]
        codes = codes if rows is None else codes[rows]
        return int(np.count_nonzero(np.bincount(codes, minlength=self.size[role])))


def _examples(values: Any, n: int = 5) -> list[Any]:
    return [
        tuple(plain(x) for x in v) if isinstance(v, tuple) else plain(v)
        for v in itertools.islice(values, n)
    ]


def check(
    train: Any = None,
    test: Any = None,
    recs: Any = None,
    *,
    k: int | None = None,
    chronological: bool | Literal["user", "global"] | None = None,
    options: EvalOptions | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    timestamp_col: str = "timestamp",
    session_col: str | None = None,
    session_gap: Any = None,
    validation: Any = None,
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
        chronological: how ``test_before_train`` (time travel: leakage)
            is checked. None (default): test rows must not precede the same
            user's latest training row, checked when train and test both
            have the column ``timestamp_col`` (else the finding says it was
            skipped). ``"user"`` (or True) / ``"global"``: the protocol is
            chronological — per user, or overall (no test row before the
            latest training row) — and the timestamps are required (an
            :class:`~receval.errors.InputError` without them). False: not
            checked (a random split, where test may precede train).
        options: an :class:`~receval.EvalOptions`: its column names apply
            (columns are detected as :func:`receval.evaluate` detects them,
            and ids compared under the same id rule).
        user_col, item_col, score_col, rank_col: column names on top of
            ``options`` (None: detected).
        timestamp_col: the timestamp column of train and test.
        session_col, session_gap: the split is by sessions — named by a
            column of train and test (per user), or runs of one user's rows
            of train and test together with no inactivity gap longer than
            ``session_gap`` (as :func:`receval.split` takes it) —: sessions
            with rows in both parts are leakage (``session_straddles_cut``).
        validation: the validation part of the split (interactions, as
            ``train``): it is checked against train as test is (overlap,
            time travel, sessions across the validation cut), and test
            against it (``validation_test_overlap``,
            ``test_before_validation``; a session with rows in validation
            and test straddles the test cut); see the module docstring.

    Returns:
        A :class:`CheckReport` (``report.leakage``: the leakage found;
        ``report.ok``: neither leakage nor a warning); nothing is modified.
    """
    if chronological is True:
        chronological = "user"
    if chronological is not None and chronological not in (False, "user", "global"):
        raise ReceValError(
            "chronological must be None, True, False, 'user' or 'global'; got "
            + shown(chronological)
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
        "validation": None if validation is None else _read(validation, "validation", "log", cols),
    }
    tr, te, rc, va = _frames(
        [
            (given["train"], TRAIN),
            (given["test"], TRAIN),
            (given["recs"], RECS),
            (given["validation"], TRAIN),
        ],
        cols,
    )
    out: list[Finding] = []
    named = (("train", tr), ("validation", va), ("test", te), ("recs", rc))
    tables = {name: f for name, f in named if f is not None}
    codes = _Codes.of(tables)
    out += [_duplicates(name, frame, codes.keys(name)) for name, frame in tables.items()]
    if rc is not None and tr is not None:
        out += _seen_and_unknown(rc, codes)
    sources = {k: v.source for k, v in given.items() if v is not None}
    # the pairs of parts that must not leak: (earlier, later)
    order = (("train", "test"), ("train", "validation"), ("validation", "test"))
    pairs = [(a, b) for a, b in order if a in tables and b in tables]
    for a, b in pairs:
        out.append(_overlap(tables[b], codes, a, b))
    if chronological is not False:
        for a, b in pairs:
            out.append(
                _chronology(
                    tables[a], tables[b], chronological, timestamp_col, sources, codes, (a, b)
                )
            )
    sessions = session_col is not None or session_gap is not None
    if sessions and tr is not None and (te is not None or va is not None):
        if session_col is not None and session_gap is not None:
            raise ReceValError(
                f"{option('session_col')} and {option('session_gap')} exclude each other: "
                "sessions are named by a column or cut by a gap"
            )
        parts = {p: tables[p] for p in ("train", "validation", "test") if p in tables}
        out += _session_straddles(parts, session_col, session_gap, timestamp_col, sources, codes)
    if te is not None and tr is not None:
        out += _cold_start(te, codes)
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
        "validation": "an error for receval.evaluate as truth ("
        + option("duplicates", "keep")
        + " keeps the largest grade)",
    }[name]
    message = f"{n} of {len(frame)} {name} rows repeat an earlier (user, item) pair: {what}"
    return _finding(
        f"duplicate_rows_{name}",
        n,
        message,
        "info" if name == "train" else "warning",
        _examples(zip(frame["user"][dup], frame["item"][dup], strict=True)),
    )


def _seen_and_unknown(rc: pd.DataFrame, codes: _Codes) -> list[Finding]:
    """Recommended items the user has in train; recommended items train never holds."""
    seen = pd.Series(codes.keys("recs")).isin(codes.keys("train")).to_numpy()
    n = int(seen.sum())
    users = codes.distinct("user", "recs", seen)
    message = (
        f"{n} of {len(rc)} recommendation rows ({users} of {codes.distinct('user', 'recs')} "
        "users) recommend an item the user already has in train; remove them with "
        + said(
            "receval.workflow.checks.remove_seen(recs, train)",
            "--remove-seen (receval evaluate/compare/report --train TRAIN --remove-seen)",
        )
    )
    examples = _examples(zip(rc["user"][seen], rc["item"][seen], strict=True))
    cold = ~codes.known("item", "recs", "train")
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


def _cold_start(te: pd.DataFrame, codes: _Codes) -> list[Finding]:
    """Test users and items absent from train (informational for leakage: a
    warning, since every model scores them from nothing)."""
    out = []
    for col, what in (("user", "users"), ("item", "items")):
        unseen = ~codes.known(col, "test", "train")
        ids = te[col][unseen].unique()
        drop = option(f"drop_unseen_{what}", True, flag="--drop-unseen")
        of = codes.distinct(col, "test")
        out.append(
            _finding(
                f"test_{what}_not_in_train",
                len(ids),
                f"{len(ids)} of {of} test {what} ({int(unseen.sum())} test "
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


def _share(n: int, total: int) -> str:
    """``n`` of ``total`` as a percentage that is never 0.0% for n > 0."""
    share = n / total if total else 0.0
    return "<0.1%" if 0 < share < 0.001 else f"{share:.1%}"


#: how a finding names the rows of a part (``training``, not ``train``)
_ROWS_OF = {"train": "training", "validation": "validation", "test": "test"}


def _overlap(
    te: pd.DataFrame, codes: _Codes, earlier: str = "train", later: str = "test"
) -> Finding:
    """Rows of the part ``later`` whose (user, item) pair is also in the part
    ``earlier`` (integer keys, one hash pass): the model was fit (or tuned)
    on the answers. ``train_test_overlap``, ``train_validation_overlap``,
    ``validation_test_overlap``."""
    key = codes.keys(later)
    both = pd.Series(key).isin(codes.keys(earlier)).to_numpy()
    n = int(both.sum())
    rows = np.flatnonzero(both)
    first = rows[~pd.Series(key[rows]).duplicated().to_numpy()]  # each pair's first row
    users = codes.distinct("user", later, both)
    fit = "fit on train" if earlier == "train" else "tuned on validation"
    return _finding(
        f"{earlier}_{later}_overlap",
        n,
        f"{n} of {len(te)} {later} rows ({_share(n, len(te))}; {len(first)} distinct (user, "
        f"item) pairs, {users} of {codes.distinct('user', later)} {later} users) are also in "
        f"{earlier} (leakage: a model {fit} has seen these answers; a split puts each "
        "interaction in one part)",
        "leakage",
        _examples(zip(te["user"].iloc[first[:5]], te["item"].iloc[first[:5]], strict=True)),
    )


def _times(frame: pd.DataFrame, ts: str) -> tuple[str, np.ndarray, np.ndarray] | str:
    """A timestamp column as comparable values: (kind ``date`` or ``number``,
    values — int64 nanoseconds (UTC) for dates, int64 or float64 numbers —,
    the mask of rows that have one); or why it cannot be compared. Text is
    read as dates, as a chronological split reads it."""
    s = frame[ts]
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        try:
            with warnings.catch_warnings():  # "could not infer format": parsed one by one
                warnings.simplefilter("ignore", UserWarning)
                s = pd.to_datetime(s, utc=True)
        except (ValueError, TypeError, OverflowError):
            return "holds values that are neither numbers nor dates"
    valid = s.notna().to_numpy()
    if pd.api.types.is_datetime64_any_dtype(s):
        if getattr(s.dtype, "tz", None) is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = s.to_numpy(dtype="datetime64[ns]").view(np.int64)
        return "date", ns, valid
    if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
        return "holds values that are neither numbers nor dates"
    if pd.api.types.is_integer_dtype(s) and valid.all():
        return "number", s.to_numpy(dtype=np.int64), valid
    values = s.to_numpy(dtype=np.float64, na_value=np.nan)
    return "number", values, valid & np.isfinite(values)


def _comparable(
    tr: pd.DataFrame, te: pd.DataFrame, ts: str, names: tuple[str, str] = ("train", "test")
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | tuple[str, str]:
    """Two parts' timestamps (``names``: train's and test's by default) on one
    scale with their masks (:func:`_times`), or (the input at fault, why they
    cannot be compared)."""
    one, two = names
    missing = [(name, f) for f, name in ((tr, one), (te, two)) if ts not in f.columns]
    if missing:
        found = "; ".join(f"{name}: {', '.join(map(str, f.columns))}" for name, f in missing)
        subject = " and ".join(name for name, _ in missing)
        verb = "have" if len(missing) > 1 else "has"
        return subject, f"{verb} no timestamp column {ts!r} (columns found: {found})"
    got = {}
    for frame, name in ((tr, one), (te, two)):
        times = _times(frame, ts)
        if isinstance(times, str):
            return name, f"has a timestamp column {ts!r} that {times}"
        got[name] = times
    (k_tr, t_tr, v_tr), (k_te, t_te, v_te) = got[one], got[two]
    if k_tr != k_te:
        return two, f"has {k_te}s as timestamps and {one} {k_tr}s: they cannot be compared"
    if t_tr.dtype != t_te.dtype:  # int64 and float64 numbers
        t_tr, t_te = t_tr.astype(np.float64), t_te.astype(np.float64)
    return t_tr, v_tr, t_te, v_te


def _latest_per_user(
    c_tr: np.ndarray, t_tr: np.ndarray, c_te: np.ndarray, n_users: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each test row (``c_te``: user codes shared with train's ``c_tr``):
    its user's latest training time, and whether the user has a timed
    training row (the maximum by one :func:`numpy.maximum.at` pass: no
    per-user loop)."""
    low = np.iinfo(np.int64).min if t_tr.dtype == np.int64 else -np.inf
    latest = np.full(n_users, low, dtype=t_tr.dtype)
    np.maximum.at(latest, c_tr, t_tr)
    has = np.zeros(n_users, dtype=bool)
    has[c_tr] = True
    return latest[c_te], has[c_te]


def _chronology(
    tr: pd.DataFrame,
    te: pd.DataFrame,
    how: str | None,
    ts: str,
    sources: dict[str, str],
    codes: _Codes,
    names: tuple[str, str] = ("train", "test"),
) -> Finding:
    """Rows of the later part earlier than the rows of the earlier part
    (``names``: train and test by default: ``test_before_train``; train and
    validation: ``validation_before_train``; validation and test:
    ``test_before_validation``): per user (``how`` None or ``"user"``) or
    overall (``"global"``). Timestamps that cannot be compared: an error when
    ``how`` asks for the check, else a skipped finding saying why
    (``sources``: each input's name in errors: its file, or its part's name)."""
    earlier, later = names
    code = f"{later}_before_{earlier}"
    times = _comparable(tr, te, ts, names)
    if isinstance(times[0], str):
        name, why = times
        if how is not None:
            raise InputError(
                f"a chronological check needs comparable timestamps in {earlier} and {later}: "
                f"{name} {why}; name the column with {option('timestamp_col')}",
                source=sources[str(name).split(" and ")[0]],
            )
        return _finding(
            code,
            0,
            f"not checked: {name} {why}; name the column with {option('timestamp_col')} "
            f"(or {said('chronological=False', '--not-chronological')} for a random split)",
            "leakage",
            skipped=True,
        )
    t_tr, v_tr, t_te, v_te = times
    rows_of = _ROWS_OF[earlier]
    if how == "global":
        latest = t_tr[v_tr].max() if v_tr.any() else None
        early = v_te & (t_te < latest) if latest is not None else np.zeros(len(te), dtype=bool)
        shown_latest = _time_text(tr, ts, v_tr, t_tr)
        where = f"the latest {rows_of} row ({shown_latest})"
    else:
        user = codes.codes["user"]
        latest_u, has = _latest_per_user(
            user[earlier][v_tr], t_tr[v_tr], user[later], codes.size["user"]
        )
        early = v_te & has & (t_te < latest_u)
        where = f"the same user's latest {rows_of} row"
    n = int(early.sum())
    first = np.flatnonzero(early)[:5]
    users = codes.distinct("user", later, early)
    untimed = int((~v_tr).sum()) + int((~v_te).sum())
    skipped = f"; {untimed} rows without a timestamp not compared" if untimed else ""
    seen = "fit on train" if earlier == "train" else "tuned on validation"
    return _finding(
        code,
        n,
        f"{n} of {len(te)} {later} rows ({users} of {codes.distinct('user', later)} {later} "
        f"users) are earlier than {where} (leakage: a model {seen} has seen the "
        f"future{skipped})",
        "leakage",
        _examples(zip(te["user"].iloc[first], te["item"].iloc[first], strict=True)),
    )


def _session_straddles(
    parts: dict[str, pd.DataFrame],
    session_col: str | None,
    session_gap: Any,
    ts: str,
    sources: dict[str, str],
    codes: _Codes,
) -> list[Finding]:
    """Sessions across a cut: sessions by a (user, ``session_col``) pair, or
    runs of one user's rows of all the parts together with no inactivity gap
    longer than ``session_gap``. ``session_straddles_cut``: test rows whose
    session has rows in train (or validation); with a validation part,
    ``session_straddles_validation_cut``: validation rows whose session has
    rows in train."""
    if session_col is not None:
        ids, label = _sessions_by_column(parts, session_col, sources, codes)
        how, called = f"session column {session_col!r}", "session"
    else:
        ids, label = _sessions_by_gap(parts, session_gap, ts, sources, codes)
        how, called = f"inactivity gap {session_gap!r}", "session starting at"
    pairs: list[tuple[str, list[str], str]] = []
    if "test" in parts:
        earlier = [p for p in ("train", "validation") if p in parts]
        pairs.append(("session_straddles_cut", earlier, "test"))
    if "validation" in parts:
        pairs.append(("session_straddles_validation_cut", ["train"], "validation"))
    out = []
    for code, earlier, later in pairs:
        seen = np.concatenate([ids[p] for p in earlier])
        s_later = ids[later]
        straddles = (s_later >= 0) & pd.Series(s_later).isin(seen[seen >= 0]).to_numpy()
        frame = parts[later]
        sessions = int(pd.Series(s_later[straddles]).nunique())
        n = int(straddles.sum())
        first = np.flatnonzero(straddles)
        where = ""
        if n:
            r = int(first[0])
            where = (
                f"; the first: user {plain(frame['user'].iloc[r])!r}, {called} "
                f"{label(later, r)!r}, {later} row {r} (from 0)"
            )
        fit = "fit on train" if later == "validation" or len(earlier) == 1 else "fit (or tuned)"
        out.append(
            _finding(
                code,
                sessions,
                f"{sessions} sessions ({how}; {n} of {len(frame)} {later} rows) have rows in "
                f"both {' or '.join(earlier)} and {later} (leakage: a session split puts each "
                f"session wholly in one part, a model {fit} has seen part of these {later} "
                f"sessions){where}",
                "leakage",
                _examples(
                    zip(
                        frame["user"].iloc[first[:5]],
                        [label(later, int(i)) for i in first[:5]],
                        strict=True,
                    )
                ),
            )
        )
    return out


def _sessions_by_column(
    parts: dict[str, pd.DataFrame], col: str, sources: dict[str, str], codes: _Codes
) -> tuple[dict[str, np.ndarray], Any]:
    """Each part's rows' (user, ``col``) session as codes shared by the
    parts, and a row's session as the input writes it (``label(part, row)``)."""
    for name, frame in parts.items():
        if col not in frame.columns:
            found = ", ".join(map(str, frame.columns))
            raise InputError(
                f"no session column {col!r} (columns found: {found}); name it with "
                + option("session_col"),
                source=sources[name],
            )
        missing = frame[col].isna().to_numpy()
        if missing.any():
            raise InputError(
                "missing session id", source=sources[name], row=int(np.flatnonzero(missing)[0])
            )
    ids = [canonical(f[col].to_numpy(), "session", sources[n]) for n, f in parts.items()]
    shared, width = _shared(unify(ids, "session", []))
    keys = {
        name: codes.codes["user"][name] * width + s for name, s in zip(parts, shared, strict=True)
    }
    return keys, lambda part, i: plain(parts[part][col].iloc[i])


def _sessions_by_gap(
    parts: dict[str, pd.DataFrame],
    session_gap: Any,
    ts: str,
    sources: dict[str, str],
    codes: _Codes,
) -> tuple[dict[str, np.ndarray], Any]:
    """As :func:`_sessions_by_column`, sessions cut by an inactivity gap over
    the parts together (rows without a timestamp are in no session: code
    -1); a session shown by its first time."""
    from receval.workflow.split import duration

    names = list(parts)
    times: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for other in names[1:]:  # each part against the first (train)
        got = _comparable(parts[names[0]], parts[other], ts, (names[0], other))
        if isinstance(got[0], str):
            name, why = got
            raise InputError(
                f"sessions by an inactivity gap need comparable timestamps in "
                f"{' and '.join(names)}: {name} {why}; name the column with "
                f"{option('timestamp_col')}",
                source=sources[str(name).split(" and ")[0]],
            )
        t_a, v_a, t_b, v_b = got
        times[names[0]] = (t_a.astype(np.float64), v_a)
        times[other] = (t_b.astype(np.float64), v_b)
    gap = duration("session_gap", session_gap, _times(parts[names[0]], ts)[0] == "date")
    user = np.concatenate([codes.codes["user"][n] for n in names])
    when = np.concatenate([times[n][0] for n in names])
    valid = np.concatenate([times[n][1] for n in names])
    rows = np.flatnonzero(valid)
    order = rows[np.lexsort((when[rows], user[rows]))]
    u, t = user[order], when[order]
    new = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        new[1:] = (u[1:] != u[:-1]) | (t[1:] - t[:-1] > gap)
    session = np.full(len(user), -1, dtype=np.int64)
    session[order] = np.cumsum(new) - 1
    n_sessions = int(session.max()) + 1 if len(order) else 1
    start = np.full(n_sessions, np.inf)
    np.minimum.at(start, session[valid], when[valid])
    bounds = np.cumsum([0] + [len(parts[n]) for n in names])
    ids = {n: session[bounds[i] : bounds[i + 1]] for i, n in enumerate(names)}
    return ids, lambda part, i: _time_label(parts[part], ts, float(start[ids[part][i]]))


def _time_label(frame: pd.DataFrame, ts: str, value: float) -> Any:
    """A time of :func:`_times`' scale as the column shows it (a session's start)."""
    s = frame[ts]
    if pd.api.types.is_datetime64_any_dtype(s) or s.dtype == object:
        return str(pd.Timestamp(int(value)))
    return int(value) if float(value).is_integer() else float(value)


def _time_text(frame: pd.DataFrame, ts: str, valid: np.ndarray, values: np.ndarray) -> str:
    """The latest timestamp of ``frame`` as the input writes it."""
    if not valid.any():
        return "none"
    return str(plain(frame[ts].iloc[int(np.flatnonzero(valid)[np.argmax(values[valid])])]))


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
