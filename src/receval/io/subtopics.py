"""Subtopic judgments (TREC diversity qrels): ``query subtopic document judgment``.

The TREC Web track's diversity qrels, read by its ``ndeval``, have one line per
judged (query, subtopic, document): four fields separated by white space, the
judgment an integer (> 0: the document is relevant to the subtopic; 0 or less:
judged not relevant to it). The same four columns come as a table, or as a
mapping ``query -> {subtopic: documents}`` (every listed document relevant) or
``query -> {subtopic: {document: judgment}}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.errors import InputError

__all__ = ["SubtopicQrels", "read_subtopic_qrels"]

#: the usual spellings of each column of a table of subtopic judgments
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "query": ("query", "qid", "query_id", "topic", "user", "user_id"),
    "subtopic": ("subtopic", "subtopic_id", "intent", "aspect", "iteration"),
    "doc": ("doc", "doc_id", "docid", "docno", "item", "item_id"),
    "judgment": ("judgment", "relevance", "rel", "grade", "label"),
}


@dataclass(frozen=True)
class SubtopicQrels:
    """Subtopic judgments as aligned columns, one row per judged (query,
    subtopic, document); ids as they were given (a file's are strings).

    Attributes:
        query, subtopic, doc: ``(n,)`` object arrays of ids.
        judgment: ``(n,)`` float64; > 0 means relevant to the subtopic.
        source: where they came from (a file name, "table" or "mapping").
    """

    query: np.ndarray
    subtopic: np.ndarray
    doc: np.ndarray
    judgment: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.query)


def read_subtopic_qrels(
    qrels: Any,
    *,
    query_col: str | None = None,
    subtopic_col: str | None = None,
    doc_col: str | None = None,
    judgment_col: str | None = None,
) -> SubtopicQrels:
    """Read subtopic judgments from a file, a table or a mapping.

    Args:
        qrels: the path of a text file (``query subtopic document judgment``
            per line, white-space separated; blank lines and lines starting
            with ``#`` are skipped), a pandas, polars or pyarrow table, or a
            mapping ``query -> {subtopic: documents | {document: judgment}}``.
        query_col, subtopic_col, doc_col, judgment_col: a table's column
            names; None detects each by its usual spellings (``query`` /
            ``qid`` / ``topic`` / ``user``, ``subtopic`` / ``intent``,
            ``doc`` / ``docno`` / ``item``, ``judgment`` / ``relevance`` /
            ``rel``). A table without a judgment column has every row relevant.

    Raises:
        InputError: a line without four fields or with a judgment that is not
            an integer (naming the file and line), a missing column, or no
            judgments at all.

    Example:
        >>> q = read_subtopic_qrels({"q1": {1: ["d1", "d2"], 2: {"d2": 1, "d3": 0}}})
        >>> q.doc.tolist(), q.judgment.tolist()
        (['d1', 'd2', 'd2', 'd3'], [1.0, 1.0, 1.0, 0.0])
    """
    if isinstance(qrels, (str, os.PathLike)):
        return _read_file(Path(qrels))
    if isinstance(qrels, Mapping):
        return _from_mapping(qrels)
    return _from_table(qrels, query_col, subtopic_col, doc_col, judgment_col)


def _read_file(path: Path) -> SubtopicQrels:
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"subtopic qrels file {name!r} does not exist") from None
    except UnicodeDecodeError:
        raise InputError(
            f"{name}: not UTF-8 text (expected 'query subtopic doc judgment' lines)"
        ) from None
    rows: list[tuple[str, str, str, float]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4:
            raise InputError(
                f"{name}, line {number}: expected 4 fields 'query subtopic doc judgment', "
                f"found {len(parts)}: {line[:80]!r}"
            )
        try:
            judgment = int(parts[3])
        except ValueError:
            raise InputError(
                f"{name}, line {number}: the judgment must be an integer; found {parts[3]!r}"
            ) from None
        rows.append((parts[0], parts[1], parts[2], float(judgment)))
    if not rows:
        raise InputError(
            f"{name}: no subtopic judgments (expected 'query subtopic doc judgment' lines)"
        )
    q, s, d, j = zip(*rows, strict=True)
    return SubtopicQrels(_ids(q), _ids(s), _ids(d), np.asarray(j, dtype=np.float64), name)


def _from_mapping(qrels: Mapping[Any, Any]) -> SubtopicQrels:
    q: list[Any] = []
    s: list[Any] = []
    d: list[Any] = []
    j: list[float] = []
    for query, subtopics in qrels.items():
        if not isinstance(subtopics, Mapping):
            raise InputError(
                "subtopic qrels as a mapping: expected query -> {subtopic: documents}; "
                f"query {query!r} maps to {type(subtopics).__name__}"
            )
        for subtopic, docs in subtopics.items():
            graded = docs.items() if isinstance(docs, Mapping) else ((doc, 1.0) for doc in docs)
            for doc, judgment in graded:
                q.append(query)
                s.append(subtopic)
                d.append(doc)
                j.append(float(judgment))
    if not q:
        raise InputError("subtopic qrels: the mapping holds no judgment")
    return SubtopicQrels(_ids(q), _ids(s), _ids(d), np.asarray(j, dtype=np.float64), "mapping")


def _from_table(
    table: Any,
    query_col: str | None,
    subtopic_col: str | None,
    doc_col: str | None,
    judgment_col: str | None,
) -> SubtopicQrels:
    if hasattr(table, "to_pandas") and not isinstance(table, pd.DataFrame):
        table = table.to_pandas()  # pyarrow and polars
    if not isinstance(table, pd.DataFrame):
        raise InputError(
            "subtopic qrels: expected a file path, a table (query, subtopic, doc, judgment) "
            f"or a mapping query -> {{subtopic: documents}}; got {type(table).__name__}"
        )
    given = {"query": query_col, "subtopic": subtopic_col, "doc": doc_col, "judgment": judgment_col}
    lower = {str(c).lower(): c for c in table.columns}
    found: dict[str, Any] = {}
    for role, name in given.items():
        if name is not None:
            if name not in table.columns:
                raise InputError(
                    f"subtopic qrels: no column {name!r} ({role}); columns: {list(table.columns)}"
                )
            found[role] = name
            continue
        hit = next((lower[x] for x in _SPELLINGS[role] if x in lower), None)
        if hit is None and role != "judgment":
            raise InputError(
                f"subtopic qrels: no {role} column (looked for {', '.join(_SPELLINGS[role])}; "
                f"columns: {list(table.columns)}); name it with {role}_col="
            )
        if hit is not None:
            found[role] = hit
    if len(table) == 0:
        raise InputError("subtopic qrels: the table has no rows")
    if "judgment" in found:
        judgment = pd.to_numeric(table[found["judgment"]], errors="coerce").to_numpy(np.float64)
        bad = np.flatnonzero(np.isnan(judgment))
        if len(bad):
            raise InputError(
                f"subtopic qrels: the judgment column {found['judgment']!r} must hold numbers; "
                f"row {int(bad[0])} holds {table[found['judgment']].iloc[int(bad[0])]!r}"
            )
    else:
        judgment = np.ones(len(table))
    return SubtopicQrels(
        _ids(table[found["query"]]),
        _ids(table[found["subtopic"]]),
        _ids(table[found["doc"]]),
        judgment,
        "table",
    )


def _ids(values: Any) -> np.ndarray:
    if isinstance(values, pd.Series):
        return values.to_numpy(dtype=object)
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out
