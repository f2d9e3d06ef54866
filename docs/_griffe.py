"""A griffe extension (mkdocs.yml, mkdocstrings' ``extensions``) for receval's docstrings.

receval's docstrings are Google-style with reStructuredText roles for names
(``:func:`receval.evaluate```, ``:class:`~receval.Result```). Markdown has no roles:
left alone they would show as ``:func:`` followed by the name. This extension
turns each role into a code span of the name as Sphinx shows it (``~`` keeps the
last part only), on the docs site only; the source is not changed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: ``:role:`target``` and ``:role:`title <target>```
ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]*?)(?:\s*<([^`>]+)>)?`")


def plain_roles(text: str) -> str:
    """Each reStructuredText role of ``text`` as a Markdown code span.

    Example:
        >>> plain_roles("see :func:`~receval.evaluation.api.evaluate` and :class:`x <a.B>`")
        'see `evaluate` and `x`'
    """

    def one(m: re.Match[str]) -> str:
        tilde, title, target = m.groups()
        shown = title.strip() or (target or "")
        if tilde:
            shown = shown.rsplit(".", 1)[-1]
        return f"`{shown}`"

    return ROLE.sub(one, text)


_SECTION = re.compile(
    r"^(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Attributes):\s*$"
)
_ITEM = re.compile(r"^(\s*)(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)+)(\s*\([^)]*\))?:(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def one_name_per_item(text: str, keywords: frozenset[str] = frozenset()) -> str:
    r"""``a, b: text`` in a parameters section (receval's way of describing several
    parameters at once) as one item per name, each with the text: Google style
    has one name per item. The items named in ``keywords`` (options a function
    takes through ``**kwargs``, not in its signature) go to an "Other Parameters"
    section after it, where they are keyword arguments.

    Example:
        >>> one_name_per_item("Args:\n    a, b: the sides\n        of it.\n    c: x")
        'Args:\n    a: the sides\n        of it.\n    b: the sides\n        of it.\n    c: x'
        >>> one_name_per_item("Args:\n    a: x\n    b: y", frozenset({"b"}))
        'Args:\n    a: x\n\nOther Parameters:\n    b: y'
    """
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        header = _SECTION.match(lines[i])
        out.append(lines[i])
        i += 1
        if header is None:
            continue
        kept: list[str] = []
        others: list[str] = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > len(header[1])):
            item, i = [lines[i]], i + 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > _indent(item[0]):
                item.append(lines[i])
                i += 1
            m = _ITEM.match(item[0])
            names = re.split(r"\s*,\s*", m[2]) if m else [_name(item[0])]
            for name in names:
                first = f"{m[1]}{name}{m[3] or ''}:{m[4]}" if m else item[0]
                (others if name.lstrip("*") in keywords else kept).extend([first, *item[1:]])
        blanks = []
        while kept and not kept[-1].strip():
            blanks.append(kept.pop())
        out += kept
        if others:
            out += ["", f"{header[1]}Other Parameters:", *others]
        out += blanks
    return "\n".join(out)


def _name(line: str) -> str:
    m = re.match(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?:", line)
    return m[1] if m else ""


def fenced_doctests(text: str) -> str:
    r"""Each doctest (a ``>>>`` line and the lines up to a blank one) in a ``pycon``
    code block: in Markdown a bare doctest's output would be read as text
    (``['rr', 'ndcg@5[gain=exp]']`` as a link).

    Example:
        >>> fenced_doctests("Text.\n\n>>> 1 + 1\n2\n\nMore.")
        'Text.\n\n```pycon\n>>> 1 + 1\n2\n```\n\nMore.'
    """
    out: list[str] = []
    fenced = False
    test: str | None = None  # the indentation of the open doctest
    for line in text.split("\n"):
        stripped = line.strip()
        if test is not None:
            if stripped:
                out.append(line)
                continue
            out.append(test + "```")
            test = None
        if stripped.startswith("```"):
            fenced = not fenced
        elif not fenced and stripped.startswith(">>>"):
            test = line[: _indent(line)]
            out.append(test + "```pycon")
        out.append(line)
    if test is not None:
        out.append(test + "```")
    return "\n".join(out)


class RstRoles(griffe.Extension):
    """Every docstring made readable as Markdown: roles as code spans
    (:func:`plain_roles`), one name per parameter (:func:`one_name_per_item`),
    doctests as code blocks (:func:`fenced_doctests`)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the object's docstring once the tree is built."""
        if obj.docstring is not None:
            value = plain_roles(obj.docstring.value)
            value = one_name_per_item(value)
            value = one_name_per_item(value, _through_kwargs(obj, value))
            obj.docstring.value = fenced_doctests(value)


def _through_kwargs(obj: griffe.Object, docstring: str) -> frozenset[str]:
    """The names a function (or a class's ``__init__``) documents but takes through
    ``**kwargs``: every documented name not in its signature, when it has one."""
    function = obj.members.get("__init__") if obj.is_class else obj
    if function is None or not getattr(function, "is_function", False):
        return frozenset()
    params = function.parameters
    if not any(p.kind is griffe.ParameterKind.var_keyword for p in params):
        return frozenset()
    named = {p.name for p in params}
    documented = set(re.findall(r"^\s*\*{0,2}(\w+)(?:\s*\([^)]*\))?:", docstring, re.M))
    return frozenset(documented - named)
