"""The report table of ranx's ``compare`` (ranx 0.3.21), byte for byte:
:func:`ranx_table` and :meth:`receval.Comparison.to_ranx_table`.

ranx prints a comparison (``print(ranx.compare(...))``, ``Report.to_table()``)
as a `tabulate <https://pypi.org/project/tabulate/>`_ table in its ``simple``
layout: a header row (``#``, ``Model``, one label per metric), a row of dashes,
one row per run with its letter, its name and each mean rounded to 3 digits
(``"%.3f"``) followed by the superscript letters of the runs it beats
significantly (ᵃ, ᵇ, ᶜ, ...). The layout is tabulate's (0.9 and 0.10), rebuilt
here without depending on it: each column is as wide as its widest cell and
at least two more than its header, separated by two spaces; a column whose
cells all read as numbers (no superscript in it) is reformatted with ``"g"``
(``0.320`` → ``0.32``) and aligned on the decimal point to the right, others
are left-aligned; trailing spaces are stripped. Widths count characters
(tabulate without the optional ``wcwidth`` package); names holding ANSI colour
codes are not supported. ``tests/conformance/test_ir_measures_provider.py`` checks the
strings against ranx itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from receval.errors import OptionError

__all__ = ["RANX_LABELS", "ranx_label", "ranx_table"]

#: Letters of the runs, and their superscripts (ranx's: q is U+06F9).
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ۹ʳˢᵗᵘᵛʷˣʸᶻ"

#: receval metric name → ranx's label for the metric it corresponds to.
RANX_LABELS = {
    "hits": "Hits",
    "hit_rate": "Hit Rate",
    "precision": "P",
    "recall": "Recall",
    "f1": "F1",
    "r_precision": "R-Prec",
    "rr": "MRR",
    "ap": "MAP",
    "dcg": "DCG",
    "ndcg": "NDCG",
    "bpref": "BPref",
}

_NAME = re.compile(r"^([a-z_0-9]+)(@[0-9]+)?$")
_THOUSANDS = re.compile(r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\.[0-9]*|\.[0-9]+)?$")
_NONE, _BOOL, _INT, _FLOAT, _STR = 0, 1, 2, 3, 5


def ranx_label(metric: str) -> str:
    """ranx's label of a receval metric name: ``ndcg@10`` → ``NDCG@10``,
    ``ap@100`` → ``MAP@100``, ``rr`` → ``MRR``; a name ranx has no label for
    (or one with parameters) is kept as it is.

    >>> ranx_label("ndcg@10"), ranx_label("precision@5"), ranx_label("coverage")
    ('NDCG@10', 'P@5', 'coverage')
    """
    match = _NAME.match(metric)
    if match is None or match.group(1) not in RANX_LABELS:
        return metric
    return RANX_LABELS[match.group(1)] + (match.group(2) or "")


def _converts(conv: Any, text: str) -> bool:
    try:
        conv(text)
    except (ValueError, TypeError):
        return False
    return True


def _is_number(text: str) -> bool:
    """Reads as a float and is not an overflow to infinity (tabulate's rule)."""
    if not _converts(float, text):
        return False
    value = float(text)
    return not (math.isinf(value) or math.isnan(value)) or text.lower() in ("inf", "-inf", "nan")


def _kind(text: str) -> int:
    """The type tabulate deduces for one cell."""
    if not text:
        return _NONE
    if text in ("True", "False"):
        return _BOOL
    if _converts(int, text) or (_THOUSANDS.match(text) is not None and "." not in text):
        return _INT
    if _is_number(text) or _THOUSANDS.match(text) is not None:
        return _FLOAT
    return _STR


def _after_point(text: str) -> int:
    """Characters after the decimal point (or exponent); -1 when none."""
    if not (_is_number(text) or _THOUSANDS.match(text) is not None) or _converts(int, text):
        return -1
    pos = text.rfind(".")
    if pos < 0:
        pos = text.lower().rfind("e")
    return len(text) - pos - 1 if pos >= 0 else -1


def _formatted(text: str, kind: int) -> str:
    if kind != _FLOAT or not text:
        return text
    try:
        return format(float(text.replace(",", "")), "g")
    except ValueError:
        return text


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """tabulate(rows, headers) in the ``simple`` layout, for text cells."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in headers]
    out_columns: list[list[str]] = []
    numeric: list[bool] = []
    for header, cells in zip(headers, columns, strict=True):
        kind = max((_kind(c) for c in cells), default=_BOOL)
        kind = max(kind, _BOOL)
        texts = [_formatted(c, kind) for c in cells]
        is_number = kind in (_INT, _FLOAT)
        if is_number:
            points = [_after_point(t) for t in texts]
            most = max(points, default=-1)
            texts = [t + " " * (most - p) for t, p in zip(texts, points, strict=True)]
        else:
            texts = [t.strip() for t in texts]
        width = max([len(header) + 2, *(len(t) for t in texts)])
        out_columns.append([t.rjust(width) if is_number else t.ljust(width) for t in texts])
        numeric.append(is_number)
    widths = [
        max([len(h) + 2, *(len(c) for c in col)])
        for h, col in zip(headers, out_columns, strict=True)
    ]
    head = [
        h.rjust(w) if n else h.ljust(w) for h, w, n in zip(headers, widths, numeric, strict=True)
    ]
    lines = ["  ".join(head).rstrip(), "  ".join("-" * w for w in widths).rstrip()]
    lines += ["  ".join(row).rstrip() for row in zip(*out_columns, strict=True)]
    return "\n".join(lines)


def _score(value: float, digits: int, percentages: bool) -> str:
    if percentages:
        return f"{round(value * 100, max(0, digits - 2)):.{digits - 2}f}"
    return f"{round(value, digits):.{digits}f}"


def ranx_table(
    means: Mapping[str, Mapping[str, float]],
    wins: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    rounding_digits: int = 3,
    show_percentages: bool = False,
) -> str:
    """A comparison as ranx 0.3.21's report table (``str(ranx.compare(...))``).

    Args:
        means: run name → metric → mean, runs in table order (letters a, b, ...).
        wins: run name → metric → the runs it beats significantly (their
            letters become its superscripts, in table order); None: no marks.
        metrics: the metric columns, in order (default: the first run's keys).
        labels: metric → header (default :func:`ranx_label`; give ranx's own
            metric names, e.g. ``map@100``, with ``labels={"map@100": "MAP@100"}``).
        rounding_digits: digits of each mean, ``"%.{d}f"`` of ``round(mean, d)``.
        show_percentages: means × 100 with ``rounding_digits - 2`` digits.

    Example:
        >>> print(ranx_table({"bm25": {"ndcg@10": 0.4123}, "dpr": {"ndcg@10": 0.45}},
        ...                  {"dpr": {"ndcg@10": ["bm25"]}}))
        #    Model    NDCG@10
        ---  -------  ---------
        a    bm25     0.412
        b    dpr      0.450ᵃ
    """
    systems = list(means)
    if len(systems) > len(LETTERS):
        raise OptionError("means", f"{len(systems)} runs", expected="at most 26 runs (a to z)")
    if rounding_digits < (2 if show_percentages else 0):
        raise OptionError(
            "rounding_digits",
            rounding_digits,
            expected="an integer >= 2 with show_percentages" if show_percentages else ">= 0",
        )
    names = list(metrics) if metrics is not None else list(means[systems[0]]) if systems else []
    labels = labels or {}
    letter = {s: i for i, s in enumerate(systems)}
    rows = []
    for i, system in enumerate(systems):
        row = [LETTERS[i], str(system)]
        for m in names:
            beaten = set((wins or {}).get(system, {}).get(m, ()))
            unknown = beaten - set(letter)
            if unknown:
                raise OptionError(
                    "wins",
                    sorted(unknown),
                    expected=f"runs of the table (the runs {system!r} beats on {m!r})",
                )
            marks = "".join(SUPERSCRIPTS[letter[s]] for s in systems if s in beaten)
            row.append(_score(float(means[system][m]), rounding_digits, show_percentages) + marks)
        rows.append(row)
    headers = ["#", "Model", *(labels.get(m, ranx_label(m)) for m in names)]
    return _table(headers, rows)


def comparison_table(
    comparison: Any, rounding_digits: int = 3, show_percentages: bool = False
) -> str:
    """:func:`ranx_table` of a :class:`receval.Comparison`: its systems and
    metrics in order, each mean over the users compared, marks for the
    significant wins of receval's tests (``Comparison.table["beats"]``: its
    test, correction and alpha, and each metric's direction)."""
    table = comparison.table
    means = {
        s: {m: float(table.loc[(m, s), "mean"]) for m in comparison.metrics}
        for s in comparison.systems
    }
    wins = {
        s: {m: tuple(table.loc[(m, s), "beats"]) for m in comparison.metrics}
        for s in comparison.systems
    }
    return ranx_table(
        means,
        wins,
        metrics=comparison.metrics,
        rounding_digits=rounding_digits,
        show_percentages=show_percentages,
    )
