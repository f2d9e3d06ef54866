"""How comparisons print: numbers, p-values, system letters and their marks.

One place for the text of a value, so that the console, Markdown, LaTeX, CSV
and the HTML report of one :class:`~receval.analysis.compare.Comparison` show
the same digits.
"""

from __future__ import annotations

import csv
import io
import math
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "fmt_p",
    "fmt_value",
    "letters_for",
    "spreadsheet_cell",
    "spreadsheet_safe",
    "superscript",
    "visible",
]

#: First characters that make a spreadsheet read a cell as a formula (OWASP).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
#: The control characters (Unicode category Cc: C0, DEL and C1).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")

_SUPERSCRIPT = dict(
    zip(
        "abcdefghijklmnoprstuvwxyz",
        "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ",
        strict=True,
    )
)


def letters_for(n: int) -> list[str]:
    """Letters naming ``n`` systems in order: a, b, …, z, aa, ab, …

    Example:
        >>> letters_for(3), letters_for(28)[-2:]
        (['a', 'b', 'c'], ['aa', 'ab'])
    """
    out: list[str] = []
    for i in range(n):
        s = ""
        j = i
        while True:
            s = chr(ord("a") + j % 26) + s
            j = j // 26 - 1
            if j < 0:
                break
        out.append(s)
    return out


def superscript(text: str) -> str:
    """Letters as Unicode superscripts (``q`` has none: then ``^text``).

    Example:
        >>> superscript("ac"), superscript("q")
        ('ᵃᶜ', '^q')
    """
    if all(ch in _SUPERSCRIPT for ch in text):
        return "".join(_SUPERSCRIPT[ch] for ch in text)
    return "^" + text


def visible(text: Any, *, lines: bool = False) -> str:
    r"""``text`` safe to show on a terminal: every control character (Unicode
    category Cc: C0, DEL, C1) written as Python writes it in a string literal
    (``\x1b``, ``\t``), so that an id cannot move the cursor, recolour the
    terminal or ring its bell; ``lines``: line breaks (``\n``) kept, for
    text of several lines. Files keep their values as they are: this is for
    the terminal only.

    Example:
        >>> print(visible("\x1b[31mEVIL\x07 a\tb"))
        \x1b[31mEVIL\x07 a\tb
        >>> print(visible("one\ntwo\r", lines=True))
        one
        two\r
    """
    pattern = _CONTROL_BUT_LINES if lines else _CONTROL
    return pattern.sub(lambda m: repr(m.group())[1:-1], str(text))


def fmt_value(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` decimals; ``–`` for None/NaN, ``inf``/``-inf``.

    Example:
        >>> fmt_value(0.123456), fmt_value(float("nan")), fmt_value(None)
        ('0.1235', '–', '–')
    """
    if value is None:
        return "–"
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if math.isnan(f):
        return "–"
    return f"{f:.{digits}f}"


def fmt_p(p: Any) -> str:
    """A p-value: four decimals, or scientific notation below 1e-4; ``–`` for NaN.

    Example:
        >>> fmt_p(0.04321), fmt_p(3.2e-7), fmt_p(float("nan"))
        ('0.0432', '3.2e-07', '–')
    """
    f = float(p)
    if not math.isfinite(f):
        return "–"
    return f"{f:.1e}" if f < 1e-4 else f"{f:.4f}"


def spreadsheet_cell(value: Any) -> Any:
    """A cell of a spreadsheet-bound CSV: text that begins with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return gets a leading ``'`` (OWASP's rule
    against CSV injection), unless it is a plain number (``-1.5``); anything
    that is not text (numbers, NaN, None) is returned as it is.

    Example:
        >>> spreadsheet_cell("=1+2"), spreadsheet_cell("-1.5"), spreadsheet_cell(-2.0)
        ("'=1+2", '-1.5', -2.0)
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` for a spreadsheet-bound CSV: :func:`spreadsheet_cell`
    applied to every text cell, index label and column name; numeric columns
    are left untouched (a negative number stays a number)."""
    import pandas as pd

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or isinstance(out[col].dtype, pd.StringDtype):
            out[col] = out[col].map(spreadsheet_cell)
    out.columns = out.columns.map(spreadsheet_cell)
    out.index = out.index.map(spreadsheet_cell)
    out.index.names = [spreadsheet_cell(n) for n in out.index.names]
    return out


def spreadsheet_csv(frame: pd.DataFrame, index: bool = True) -> str:
    """``frame`` as the text of a spreadsheet-bound CSV: :func:`spreadsheet_safe`
    cells, ``\\n`` between records, numbers as Python writes them (full
    precision), NaN/None as an empty field, and every field that holds a
    line break (``\\n`` or a lone ``\\r``) or a quote quoted, so that a
    name with a carriage return stays one cell of one row."""
    safe = spreadsheet_safe(frame)
    if index:
        safe = safe.reset_index()
    buf = io.StringIO()
    # "\r\n" as the writer's terminator makes it quote fields holding either
    # character; each record's terminator is then written as "\n".
    writer = csv.writer(buf, lineterminator="\r\n")
    out = []
    for row in [list(safe.columns), *safe.itertuples(index=False, name=None)]:
        buf.seek(0)
        buf.truncate()
        writer.writerow(["" if _missing(v) else v for v in row])
        out.append(buf.getvalue()[:-2])
    return "\n".join(out) + "\n"


def _missing(value: Any) -> bool:
    pd = sys.modules.get("pandas")  # no pd.NA without pandas loaded
    na = pd is not None and value is pd.NA
    return value is None or na or (isinstance(value, float) and math.isnan(value))
