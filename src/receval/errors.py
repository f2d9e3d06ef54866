"""The errors receval raises.

Every error a user can cause is a :class:`ReceValError`, a subclass of
:class:`ValueError`, whose message says what is wrong and where (file, row,
user, item, what was expected and what was found).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "InputError",
    "MetricError",
    "NoSharedUser",
    "OptionError",
    "PolicyError",
    "ReceValError",
    "plain",
]


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (for messages and attributes)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, (str, bytes)) else value


class ReceValError(ValueError):
    """Base class of every error caused by the user's input or arguments."""


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
    ) -> None:
        self.option = option
        self.value = plain(value)
        self.allowed = tuple(allowed)
        self.expected = expected or (
            "one of " + ", ".join(repr(a) for a in allowed) if allowed else "another value"
        )
        self.reason = reason
        super().__init__(self._render(f"{option}={self.value!r}", repr))

    def _render(self, given: str, show: Callable[[Any], str]) -> str:
        expected = (
            "one of " + ", ".join(show(a) for a in self.allowed) if self.allowed else self.expected
        )
        tail = f" ({self.reason})" if self.reason else ""
        return f"{given} is not allowed: expected {expected}{tail}"

    def cli_message(self, flag: str | None = None) -> str:
        """The message with the command line's syntax: ``--empty-truth zeros``."""
        flag = flag or "--" + self.option.replace("_", "-")
        value = self.value
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        return self._render(f"{flag} {shown}", str)


class PolicyError(ReceValError):
    """A user-policy violation requested to be an error (``empty_truth="error"`` ...)."""


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
                reason = reason.replace(key, word + " and ".join(map(str, both)))
        return (", ".join(where) + ": " if where else "") + reason

    def remap(self, row_of: Callable[[int], int]) -> InputError:
        """The same error with its rows mapped (a chunk's rows to its table's)."""
        return InputError(
            self.reason,
            source=self.source,
            line=self.line,
            user=self.user,
            item=self.item,
            column=self.column,
            row=None if self.row is None else int(row_of(self.row)),
            other_row=None if self.other_row is None else int(row_of(self.other_row)),
        )

    def located(self, *, source: str | None = None, line_offset: int | None = None) -> InputError:
        """Return a copy naming a file (and turning a row into a line number)."""
        line = self.line
        if line is None and line_offset is not None and self.row is not None:
            line = self.row + line_offset
        return InputError(
            self.reason,
            source=source or self.source,
            row=self.row,
            line=line,
            user=self.user,
            item=self.item,
            column=self.column,
            other_row=self.other_row,
        )


class NoSharedUser(InputError):
    """Recommendations and truth without a single user in common.

    ``recommendation_users`` and ``truth_users`` hold a few users of each
    side, for a caller to add what it knows (e.g. which columns it read).
    """

    def __init__(
        self, message: str, *, recommendation_users: list[Any], truth_users: list[Any]
    ) -> None:
        super().__init__(message)
        self.recommendation_users = [plain(u) for u in recommendation_users]
        self.truth_users = [plain(u) for u in truth_users]
