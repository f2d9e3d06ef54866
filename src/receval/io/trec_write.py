"""Writing what receval reads as TREC files and ranx/pytrec_eval dictionaries.

The other direction of :mod:`receval.io.files`' TREC reader and of the
``user -> {item: score}`` mappings that :func:`receval.evaluate` reads:

* :func:`run_dict` / :func:`qrels_dict`: ``{qid: {docid: score}}`` and
  ``{qid: {docid: grade}}``, the dictionaries of ranx (``Run``/``Qrels``),
  pytrec_eval and ir_measures, from any recommendations or truth receval
  reads (pandas, polars, Arrow tables, mappings, files);
* :func:`write_trec_run` / :func:`write_trec_qrels`: trec_eval's text formats,
  ``qid Q0 docid rank score runid`` and ``qid 0 docid grade``.

Ids become text by receval's id rule (:mod:`receval.ids`): the integer 7, the
float 7.0 and the string ``"7"`` are all written ``7``, and ``"007"`` stays
``007``; reading the text back gives the same ids. Scores are written by
``repr`` (the shortest text that reads back as the same double) and grades as
integers when whole, so writing then reading gives the same evaluation, bit
for bit.

Lists without scores (a rank column, ``user -> [items]`` lists) get the score
``n + 1 - position`` (n items: ``n, n - 1, ..., 1``), which orders each list
as its ranks did (ranks close up: 3, 5, 9 are positions 1, 2, 3). With both a
rank and a score column the rank orders, as in :func:`receval.evaluate`, and
the scores written are these.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.errors import InputError, OptionError, option
from receval.ids import order_of
from receval.io.inputs import is_path
from receval.io.tables import read_recs, read_truth
from receval.io.write import atomic_write, check_target, refuse_inputs
from receval.records import Columns, RecsData, TruthData

__all__ = ["TIES", "qrels_dict", "run_dict", "write_trec_qrels", "write_trec_run"]

#: Tie rules for equal scores (those of :func:`receval.evaluate`'s ``ties=``).
TIES = ("item", "item_desc", "item_str", "item_str_desc", "input")


def _arrow_text(ids: np.ndarray) -> pa.Array:
    """Canonical ids as Arrow text (integers in decimal)."""
    if ids.dtype == object:
        return pa.array(ids, type=pa.large_string())
    return pa.array(ids).cast(pa.large_string())


def _text(ids: np.ndarray) -> list[str]:
    """Canonical ids as Python text."""
    return _arrow_text(ids).to_pylist()


def _id_rank(ids: np.ndarray, rule: str) -> np.ndarray:
    """An int64 key per id: ascending key = the rule's order of the ids."""
    if len(ids) == 0:
        return np.empty(0, dtype=np.int64)
    uniq, inverse = np.unique(ids, return_inverse=True)
    if rule in ("item_str", "item_str_desc"):
        order = np.argsort(np.asarray(_text(uniq), dtype=str), kind="stable")
    else:
        order = order_of(uniq)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq), dtype=np.int64)
    key = rank[inverse.reshape(-1)]
    return -key if rule.endswith("_desc") else key


def _refuse_duplicates(users: np.ndarray, items: np.ndarray, source: str) -> None:
    """Two rows for one (user, item): a dictionary or a TREC file holds one."""
    if len(users) < 2:
        return
    u = _id_rank(users, "item")
    i = _id_rank(items, "item")
    order = np.lexsort((i, u))
    same = (u[order][1:] == u[order][:-1]) & (i[order][1:] == i[order][:-1])
    if same.any():
        j = int(order[1:][np.flatnonzero(same)[0]])
        raise InputError(
            "the same item appears twice in a list; a run or qrels holds each "
            "(query, document) once — remove the duplicate rows first",
            source=source,
            row=j,
            user=users[j],
            item=items[j],
        )


def _in_order(data: RecsData, ties: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows in list order: users, items (canonical ids), scores, positions
    (1-based within each user's list)."""
    if ties not in TIES:
        raise OptionError("ties", ties, allowed=TIES)
    _refuse_duplicates(data.users, data.items, data.source)
    n = len(data.users)
    user_key = _id_rank(data.users, "item")
    if data.rank is not None:
        order = np.lexsort((np.arange(n), data.rank, user_key))
    else:
        assert data.score is not None
        tie = np.arange(n) if ties == "input" else _id_rank(data.items, ties)
        order = np.lexsort((tie, -data.score, user_key))
    sorted_users = user_key[order]
    starts = np.flatnonzero(np.r_[True, sorted_users[1:] != sorted_users[:-1]]) if n else []
    first = np.zeros(n, dtype=np.int64)
    if n:
        first[starts] = starts
        first = np.maximum.accumulate(first)
    position = np.arange(n, dtype=np.int64) - first + 1
    if data.score is not None and data.rank is None:
        scores = data.score[order].astype(np.float64)
    else:  # no scores: n + 1 - position reproduces the order of the ranks
        ends = np.r_[np.asarray(starts, dtype=np.int64)[1:], n] if n else np.empty(0, np.int64)
        length = np.repeat(ends - np.asarray(starts, dtype=np.int64), ends - starts) if n else ends
        scores = (length - position + 1).astype(np.float64)
    return data.users[order], data.items[order], scores, position


def _columns(
    user_col: str | None,
    item_col: str | None,
    score_col: str | None = None,
    rank_col: str | None = None,
    relevance_col: str | None = None,
) -> Columns:
    return Columns(
        user=user_col, item=item_col, score=score_col, rank=rank_col, relevance=relevance_col
    )


def _recs(recs: Any, cols: Columns) -> RecsData:
    return read_recs(recs, cols)


def _truth(truth: Any, cols: Columns) -> TruthData:
    return read_truth(truth, cols, negative_grades="unjudged")


def _empty_users(data: RecsData | TruthData) -> list[str]:
    empty = data.empty_users
    if not len(empty):
        return []
    return list(_text(empty[order_of(empty)]))


def _check_output(path: str | Path, given: Any, label: str) -> None:
    """``path`` checked before its input is read: never the input ``given``
    when that is a file (by file: another spelling or a link counts), not a
    folder, in a folder that exists."""
    if is_path(given):
        refuse_inputs((option("path", path), path), [(label, os.fspath(given))])
    check_target(path, "path")


def _grade(value: float) -> int | float:
    """A grade as pytrec_eval and ranx want it: an int when whole."""
    return int(value) if float(value).is_integer() else float(value)


def run_dict(
    recs: Any,
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    ties: str = "item",
) -> dict[str, dict[str, float]]:
    """Recommendations as a ranx / pytrec_eval / ir_measures run:
    ``{qid: {docid: score}}``.

    ``recs`` is anything :func:`receval.evaluate` reads as recommendations (a
    pandas/polars/Arrow table, a mapping ``user -> [items]`` or ``user ->
    {item: score}``, a file path); columns are found as there, or named by
    ``user_col``, ``item_col``, ``score_col``, ``rank_col``. Ids are text
    (receval's id rule: ``7``, ``7.0`` and ``"7"`` are ``"7"``); users come in
    the id order, each user's items in list order (``ties`` orders equal
    scores, as :func:`receval.evaluate`'s ``ties=``). Lists without scores get
    ``n + 1 - position`` (n, n − 1, ..., 1). A user with an empty list maps to
    ``{}``. The same (user, item) twice is an error.

    Example:
        >>> run_dict({"u1": [10, 7], 3: ["b"]})
        {'3': {'b': 1.0}, 'u1': {'10': 2.0, '7': 1.0}}
        >>> run_dict({"q1": {"b": 0.5, "a": 0.5, 7.0: 0.9}})
        {'q1': {'7': 0.9, 'a': 0.5, 'b': 0.5}}
    """
    data = _recs(recs, _columns(user_col, item_col, score_col, rank_col))
    users, items, scores, _ = _in_order(data, ties)
    out: dict[str, dict[str, float]] = {}
    for u, i, s in zip(_text(users), _text(items), scores.tolist(), strict=True):
        out.setdefault(u, {})[i] = s
    for u in _empty_users(data):
        out.setdefault(u, {})
    return out


def qrels_dict(
    truth: Any,
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    relevance_col: str | None = None,
) -> dict[str, dict[str, int | float]]:
    """The truth as a ranx / pytrec_eval / ir_measures qrels:
    ``{qid: {docid: grade}}``.

    ``truth`` is anything :func:`receval.evaluate` reads as the truth (a table
    with or without a relevance column, a mapping ``user -> {items}`` or
    ``user -> {item: grade}``, a file, a TREC qrels included). Grades are ints
    when whole (pytrec_eval accepts ints only), else floats; without a
    relevance column every item has grade 1; negative grades (trec_eval's
    judged non-relevant) are kept. Users and items come in the id order; a
    user without items maps to ``{}``.

    Example:
        >>> qrels_dict({"q1": {"d2": 2, "d1": 0}, 5: ["x"]})
        {'5': {'x': 1}, 'q1': {'d1': 0, 'd2': 2}}
    """
    return _qrels_of(_truth(truth, _columns(user_col, item_col, relevance_col=relevance_col)))


def _qrels_of(data: TruthData) -> dict[str, dict[str, int | float]]:
    _refuse_duplicates(data.users, data.items, data.source)
    order = np.lexsort((_id_rank(data.items, "item"), _id_rank(data.users, "item")))
    out: dict[str, dict[str, int | float]] = {}
    users, items = _text(data.users[order]), _text(data.items[order])
    for u, i, g in zip(users, items, data.grades[order].tolist(), strict=True):
        out.setdefault(u, {})[i] = _grade(g)
    for u in _empty_users(data):
        out.setdefault(u, {})
    return out


#: What Python's str.split() (the TREC readers') splits on: str.isspace().
_SPACE = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}"
    r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)


def _check_ids(role: str, ids: np.ndarray, text: pa.Array, source: str) -> None:
    """A TREC line is split on whitespace and ``#`` starts a comment: ids that
    are empty, hold whitespace or (a qid) start with ``#`` cannot be written.
    Integer ids are always fine."""
    if ids.dtype != object or not len(ids):
        return
    bad = pc.or_(pc.equal(text, ""), pc.match_substring_regex(text, _SPACE))
    if role == "user":
        bad = pc.or_(bad, pc.starts_with(text, "#"))
    where = np.flatnonzero(bad.to_numpy(zero_copy_only=False))
    if not len(where):
        return
    v = ids[int(where[0])]
    what = "is empty" if v == "" else "holds whitespace"
    if v and not any(ch.isspace() for ch in v):
        what = "starts with '#' (a comment in a TREC file)"
    raise InputError(
        f"a TREC file cannot hold this {role} id: it {what}; "
        "rename the ids (e.g. replace spaces by '_') before writing",
        source=source,
        **({"user": v} if role == "user" else {"item": v}),
    )


def _lines(*columns: pa.Array) -> bytes:
    """The rows' fields joined by spaces, each row ending in a newline (the
    last column ends with it), as UTF-8 bytes."""
    joined = pc.binary_join_element_wise(*columns, pa.scalar(" ", pa.large_string()))
    if not len(joined):
        return b""
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64)
    start, stop = int(offsets[joined.offset]), int(offsets[joined.offset + len(joined)])
    return joined.buffers()[2].to_pybytes()[start:stop]


def _repeat(text: str, n: int) -> pa.Array:
    return pa.array(np.full(n, text, dtype=object), type=pa.large_string())


def write_trec_run(
    recs: Any,
    path: str | Path,
    *,
    run_id: str = "receval",
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    ties: str = "item",
) -> Path:
    """Write recommendations as a TREC run file: ``qid Q0 docid rank score
    runid``, one line per (user, item), what trec_eval, ranx
    (``Run.from_file``), ir_measures and :func:`receval.evaluate` read.

    Users come in the id order, each list in its order (``ties`` orders equal
    scores), ranks 1, 2, ...; scores are written by ``repr`` so that they
    read back exactly (lists without scores: ``n + 1 - position``). trec_eval
    orders by score and breaks ties by docid descending as strings, receval
    by its tie rule: ``ties="item_str_desc"`` reads a file as trec_eval does.
    Ids are text (receval's id rule); an id that is empty, holds whitespace or
    (a qid) starts with ``#`` is refused, naming the user and item. Users
    with an empty list are not written (a TREC run cannot hold them). The
    file is written to a temporary file and renamed over ``path``: a failure
    leaves ``path`` as it was; a ``path`` that is the file ``recs`` (by any
    spelling or link) is refused before anything is read. Returns the path
    written.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.trec"
        >>> _ = write_trec_run({"q1": {"d1": 0.5, "d2": 1.25}}, p, run_id="bm25")
        >>> print(p.read_text(), end="")
        q1 Q0 d2 1 1.25 bm25
        q1 Q0 d1 2 0.5 bm25
    """
    if not run_id or any(ch.isspace() for ch in run_id):
        raise OptionError("run_id", run_id, expected="non-empty text without whitespace")
    _check_output(path, recs, "recommendations file")
    data = _recs(recs, _columns(user_col, item_col, score_col, rank_col))
    users, items, scores, position = _in_order(data, ties)
    user_text, item_text = _arrow_text(users), _arrow_text(items)
    _check_ids("user", users, user_text, data.source)
    _check_ids("item", items, item_text, data.source)
    n = len(users)
    data_bytes = _lines(
        user_text,
        _repeat("Q0", n),
        item_text,
        pa.array(position).cast(pa.large_string()),
        pa.array(list(map(repr, scores.tolist())), type=pa.large_string()),
        _repeat(run_id + "\n", n),
    )
    target = Path(path)
    atomic_write(target, lambda tmp: tmp.write_bytes(data_bytes))
    return target


def write_trec_qrels(
    truth: Any,
    path: str | Path,
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    relevance_col: str | None = None,
) -> Path:
    """Write the truth as a TREC qrels file: ``qid 0 docid grade``, one line
    per (user, item), users then items in the id order; grades as integers
    when whole, else by ``repr`` (trec_eval reads integer grades only; receval
    reads both). Ids as in :func:`write_trec_run` (refused when a TREC file
    cannot hold them); users without items are not written. Written
    atomically (temporary file, then rename); a ``path`` that is the file
    ``truth`` is refused. Returns the path written.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.txt"
        >>> _ = write_trec_qrels({"q1": {"d2": 2, "d1": 0}}, p)
        >>> print(p.read_text(), end="")
        q1 0 d1 0
        q1 0 d2 2
    """
    _check_output(path, truth, "truth file")
    data = _truth(truth, _columns(user_col, item_col, relevance_col=relevance_col))
    _refuse_duplicates(data.users, data.items, data.source)
    order = np.lexsort((_id_rank(data.items, "item"), _id_rank(data.users, "item")))
    users, items, grades = data.users[order], data.items[order], data.grades[order]
    user_text, item_text = _arrow_text(users), _arrow_text(items)
    _check_ids("user", users, user_text, data.source)
    _check_ids("item", items, item_text, data.source)
    n = len(users)
    grade_text = [f"{_grade(g)!r}\n" for g in grades.tolist()]
    data_bytes = _lines(
        user_text, _repeat("0", n), item_text, pa.array(grade_text, type=pa.large_string())
    )
    target = Path(path)
    atomic_write(target, lambda tmp: tmp.write_bytes(data_bytes))
    return target
