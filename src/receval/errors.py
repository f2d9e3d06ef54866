"""The errors receval raises.

Every error a user can cause is a :class:`ReceValError`, a subclass of
:class:`ValueError`, whose message says what is wrong and where (file, row,
user, item, what was expected and what was found).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "InputError",
    "MetricError",
    "NoSharedUser",
    "OptionError",
    "OutputError",
    "PolicyError",
    "ReceValError",
    "as_written",
    "for_cli",
    "for_python",
    "option",
    "plain",
    "said",
    "shown",
]

# A phrase with one spelling for Python and one for the shell: the two texts
# between private-use characters, resolved when the message is shown.
_OPEN, _SEP, _CLOSE = "\ue000", "\ue001", "\ue002"
_SAID = re.compile(f"{_OPEN}([^{_SEP}]*){_SEP}([^{_CLOSE}]*){_CLOSE}")
_NOTHING = object()

# NumPy scalars as repr() writes them (np.int64(1), np.str_('a'), np.True_),
# in a message some caller formatted with !r: shown as the value itself.
_NUMPY_REPR = re.compile(
    r"\bnp\.(?:(?P<bool>True|False)_"
    r"|(?:str_|bytes_)\((?P<text>b?'(?:[^'\\]|\\.)*'|b?\"(?:[^\"\\]|\\.)*\")\)"
    r"|(?:u?int|float|complex|longdouble|clongdouble|half|single|double|longlong|ulonglong"
    r"|intc|uintc|intp|uintp|short|ushort|byte|ubyte|bool)\d*\('?(?P<number>[^()'\"]*)'?\))"
)


def said(python: str, cli: str) -> str:
    """A phrase written ``python`` to Python callers and ``cli`` on the command
    line, for messages that tell the user what to type (one text, two doors).

    >>> msg = "drop them with " + said("remove_seen(recs, train)", "--remove-seen")
    >>> for_python(msg), for_cli(msg)
    ('drop them with remove_seen(recs, train)', 'drop them with --remove-seen')
    """
    return f"{_OPEN}{python}{_SEP}{cli}{_CLOSE}"


def option(name: str, value: Any = _NOTHING, *, flag: str | None = None) -> str:
    """An option named in a message: ``name=value`` in Python,
    ``--name value`` on the command line (``flag``: when the flag is not
    ``--`` + name with dashes). A value of True is the bare flag.

    >>> for_python(option("duplicates", "keep")), for_cli(option("duplicates", "keep"))
    ("duplicates='keep'", '--duplicates keep')
    >>> for_python(option("dropna", True)), for_cli(option("dropna", True))
    ('dropna=True', '--dropna')
    >>> for_python(option("item_features")), for_cli(option("item_features"))
    ('item_features=', '--item-features')
    """
    flag = flag or "--" + name.replace("_", "-")
    if value is _NOTHING:
        return said(f"{name}=", flag)
    value = plain(value)
    typed = "" if value is True else " " + (str(value).lower() if value is False else str(value))
    return said(f"{name}={value!r}", flag + typed)


def for_python(text: str) -> str:
    """``text`` with every :func:`said` phrase in its Python spelling."""
    return _SAID.sub(r"\1", text)


def for_cli(text: str) -> str:
    """``text`` with every :func:`said` phrase in its command-line spelling."""
    return _SAID.sub(r"\2", text)


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (for messages and attributes):
    ``np.int64(1)`` is 1, ``np.str_('a')`` is ``'a'``; anything else as it is.

    >>> import numpy as np
    >>> plain(np.int64(1)), plain(np.str_("a")), plain(np.float64(0.5)), plain([1])
    (1, 'a', 0.5, [1])
    """
    if isinstance(value, str):
        return str.__str__(value)  # np.str_ and other subclasses: the text itself
    if isinstance(value, bytes):
        return bytes(value)
    item = getattr(value, "item", None)
    if not callable(item):
        return value
    try:
        return item()
    except (TypeError, ValueError):  # not one value (an array of several)
        return value


def shown(value: Any) -> str:
    """``value`` in a message as its user wrote it: ``repr`` of :func:`plain`
    (``1``, ``'abc'``, ``0.5``; never ``np.int64(1)``).

    >>> import numpy as np
    >>> shown(np.int64(1)), shown(np.str_("abc"))
    ('1', "'abc'")
    """
    return repr(plain(value))


def as_written(text: str) -> str:
    """``text`` with each NumPy scalar that a ``!r`` put in it written as its
    value: ``user np.int64(1)`` is ``user 1``, ``np.str_('a')`` is ``'a'``.

    >>> as_written("user np.int64(1), item np.str_('x'), np.float64(0.5), np.True_")
    "user 1, item 'x', 0.5, True"
    """

    def value(match: re.Match[str]) -> str:
        return match.group("bool") or match.group("text") or match.group("number")

    return _NUMPY_REPR.sub(value, text)


#: The command's one line on stderr for each signal's exit code (129 SIGHUP, 130 Ctrl-C,
#: 143 SIGTERM: 128 + the signal's number, as shells report a process the signal killed).
SIGNAL_MESSAGES = {
    129: "hung up (SIGHUP)",
    130: "interrupted (Ctrl-C)",
    143: "terminated (SIGTERM)",
}


class ReceValError(ValueError):
    """Base class of every error caused by the user's input or arguments.

    ``str(err)`` speaks Python (``duplicates='keep'``); :meth:`cli_message`
    the shell (``--duplicates keep``): options named in a message are written
    with :func:`option` / :func:`said`.
    """

    def __str__(self) -> str:
        return as_written(for_python(super().__str__()))

    def cli_message(self) -> str:
        """The message with the command line's syntax."""
        return as_written(for_cli(super().__str__()))


def check_seed(seed: Any, name: str = "seed") -> None:
    """Raise an :class:`OptionError` unless ``seed`` is a whole number >= 0,
    what NumPy's generators take (``--seed -1`` was an internal error).

    Example:
        >>> check_seed(7)
        >>> try:
        ...     check_seed(-1)
        ... except OptionError as exc:
        ...     print(exc.cli_message())
        --seed -1 is not allowed: expected a whole number >= 0 (NumPy's SeedSequence)
    """
    import numbers

    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise OptionError(name, seed, expected="a whole number >= 0 (NumPy's SeedSequence)")


class MetricError(ReceValError):
    """An unknown metric, parameter or parameter value, or a malformed metric string."""


class OptionError(ReceValError):
    """An option given a value it does not take.

    ``option`` is the Python keyword (``empty_truth``), ``value`` what was
    given and ``allowed`` the values it takes (or ``expected``, a phrase such
    as "a finite number"). ``str(err)`` speaks Python (``empty_truth="zeros"``);
    :meth:`cli_message` speaks the shell (``--empty-truth zeros``), so that
    each caller reads an error in the syntax they typed.
    """

    def __init__(
        self,
        option: str,
        value: Any,
        *,
        allowed: tuple[Any, ...] = (),
        expected: str | None = None,
        reason: str | None = None,
        flag: str | None = None,
    ) -> None:
        self.option = option
        self.flag = flag  # the command line's flag when it is not --option-name
        self.value = plain(value)
        self.allowed = tuple(allowed)
        self.expected = expected or (
            "one of " + ", ".join(shown(a) for a in allowed) if allowed else "another value"
        )
        self.reason = reason
        super().__init__(self._render(f"{option}={self.value!r}", shown))

    def _render(self, given: str, show: Callable[[Any], str]) -> str:
        expected = (
            "one of " + ", ".join(show(a) for a in self.allowed) if self.allowed else self.expected
        )
        tail = f" ({self.reason})" if self.reason else ""
        return f"{given} is not allowed: expected {expected}{tail}"

    def cli_message(self, flag: str | None = None) -> str:
        """The message with the command line's syntax: ``--empty-truth zeros``
        (``flag``, or the error's own :attr:`flag`, when the flag is another)."""
        flag = flag or self.flag or "--" + self.option.replace("_", "-")
        value = self.value
        typed = str(value).lower() if isinstance(value, bool) else str(value)
        if isinstance(value, str):  # as the shell would need it typed: --sep '' , --sep ';;'
            import shlex

            typed = shlex.quote(typed)
        return as_written(for_cli(self._render(f"{flag} {typed}", lambda a: str(plain(a)))))


class PolicyError(ReceValError):
    """A user-policy violation requested to be an error (``empty_truth="error"`` ...);
    ``user`` is the user it is about."""

    user: Any = None


class InputError(ReceValError):
    """A bad value in an input table, located as precisely as we can.

    Attributes hold the location (``source``: "recommendations" / "truth" or a
    file name, ``row``: 0-based row of the table, ``line``: 1-based line of a
    text file, ``user``, ``item``) so callers such as the command line can add
    context without parsing the message.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        row: int | None = None,
        line: int | None = None,
        user: Any = None,
        item: Any = None,
        column: str | None = None,
        other_row: int | None = None,
    ) -> None:
        self.reason = message
        self.other_row = other_row
        self.source = source
        self.row = row
        self.line = line
        self.user = plain(user)
        self.item = plain(item)
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.source is not None:
            where.append(str(self.source))
        if self.line is not None:
            where.append(f"line {self.line}")
        elif self.row is not None:
            where.append(f"row {self.row}")
        if self.user is not None:
            where.append(f"user {self.user!r}")
        if self.item is not None:
            where.append(f"item {self.item!r}")
        reason = self.reason
        for key, word, first in (("{rows}", "rows ", self.row), ("{lines}", "lines ", self.line)):
            if key in reason:
                both = sorted(r for r in (first, self.other_row) if r is not None)
                if not both:  # no row numbers (a Spark partition's rows have none)
                    reason = reason.replace(f" ({key})", "").replace(key, word.strip())
                if len(both) == 2 and both[0] == both[1]:  # one row or line of a list
                    reason = reason.replace(key, f"both in {word.strip()[:-1]} {both[0]}")
                reason = reason.replace(key, word + " and ".join(map(str, both)))
        return (", ".join(where) + ": " if where else "") + reason

    def _copy(self, **changes: Any) -> InputError:
        """The same error with some of its location changed."""
        fields = {
            "source": self.source,
            "row": self.row,
            "line": self.line,
            "user": self.user,
            "item": self.item,
            "column": self.column,
            "other_row": self.other_row,
        }
        return InputError(self.reason, **{**fields, **changes})

    def remap(self, row_of: Callable[[int], int]) -> InputError:
        """The same error with its rows mapped (a chunk's rows to its table's)."""
        return self._copy(
            row=None if self.row is None else int(row_of(self.row)),
            other_row=None if self.other_row is None else int(row_of(self.other_row)),
        )

    def of_user(self, user_of: Callable[[int], Any]) -> InputError:
        """The same error naming the user of its row (``user_of(row)``; None
        when unknown), when it names a row and no user yet; else itself. A
        missing item id is found after the users are read: the row's user is
        then named, as every later error of a row names it."""
        if self.row is None or self.user is not None:
            return self
        user = user_of(self.row)
        return self if user is None else self._copy(user=user)

    def located(self, *, source: str | None = None, line_offset: int | None = None) -> InputError:
        """Return a copy naming a file (and turning a row into a line number)."""
        line = self.line
        if line is None and line_offset is not None and self.row is not None:
            line = self.row + line_offset
        return self._copy(source=source or self.source, line=line)


class NoSharedUser(InputError):
    """Recommendations and truth without a single user in common.

    ``recommendation_users`` and ``truth_users`` hold a few users of each
    side, for a caller to add what it knows (e.g. which columns it read).
    """

    def __init__(
        self,
        message: str,
        *,
        recommendation_users: list[Any],
        truth_users: list[Any],
        source: str | None = None,
    ) -> None:
        super().__init__(message, source=source)
        self.recommendation_users = [plain(u) for u in recommendation_users]
        self.truth_users = [plain(u) for u in truth_users]


class OutputError(ReceValError):
    """An output could not be written: a full disk, a read-only or missing
    folder, no permission, a folder where a file should go (or the other way
    round). The message names the target (never a temporary file) and says
    what to do; ``errno`` is the system's error number when there is one."""

    def __init__(self, message: str, *, path: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno
