"""How comparisons print: numbers, p-values, system letters and their marks.

One place for the text of a value, so that the console, Markdown, LaTeX, CSV
and the HTML report of one :class:`~receval.analysis.compare.Comparison` show
the same digits.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["fmt_p", "fmt_value", "letters_for", "superscript"]

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
