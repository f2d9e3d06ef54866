"""The app, its command classes and the one printing boundary of the command line."""

from __future__ import annotations

import contextlib
import functools
import sys
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from receval.analysis.formatting import visible


def _flags_as_flags(params: list[Any]) -> list[Any]:
    """Boolean flags shown in ``--help`` as flags, with no ``<bool>`` value."""
    for p in params:
        if getattr(p, "is_flag", False) and not getattr(p, "count", False):
            p.metavar = ""
    return params


def _help_as_written(command: Any) -> None:
    """``--help`` shows every help text as written: typer reads them as rich
    markup, where ``pip install 'receval[spark]'`` would lose ``[spark]``;
    escaped once here, when the command is built, none can."""
    for name in ("help", "short_help"):
        if getattr(command, name, None):
            setattr(command, name, escape(getattr(command, name)))
    for param in getattr(command, "params", []):
        if getattr(param, "help", None):
            param.help = escape(param.help)


class _Command(TyperCommand):
    """A command whose ``--help`` shows boolean flags as flags, and its help
    texts as written (:func:`_help_as_written`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _help_as_written(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_as_flags(super().get_params(ctx))


class _Group(TyperGroup):
    """The ``receval`` group, whose ``--help`` shows boolean flags as flags,
    and its help texts as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _help_as_written(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_as_flags(super().get_params(ctx))


app = typer.Typer(
    name="receval",
    help="Offline evaluation of recommender systems, every definition explicit.",
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _Out(Console):
    """The console of stdout: a closed pipe (``receval demo | head``) ends the output
    quietly (:func:`stdout_closed`) instead of rich's ``SystemExit(1)``, which would
    stop the command half way through writing its files."""

    def on_broken_pipe(self) -> None:
        stdout_closed()  # not ``quiet``: a host calling main() again gets its output
        with contextlib.suppress(AttributeError):
            del self._buffer[:]  # what could not be written is dropped, not sent again


# no markup, emoji codes or highlighting: what they print is text, never read as markup
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
out = _Out(highlight=False, soft_wrap=True, markup=False, emoji=False)
command = functools.partial(app.command, cls=_Command)


# -- the one printing boundary: every line the commands print goes through these ------------


def note_line(text: str) -> None:
    """One line on stderr (a note, a file read or written): never read as
    markup, its control characters written as escapes."""
    err.print(visible(text), markup=False, emoji=False)


def fail(text: str) -> None:
    """The one line of an error on stderr, as :func:`note_line` prints it."""
    note_line(f"error: {text}")


def show_out(text: str, output: Output | None = None) -> None:
    """A command's result on stdout. For the terminal (a table, a summary:
    ``output`` None or table) never read as markup, its control characters
    escaped (lines kept); JSON, CSV, Markdown and LaTeX as they are, byte for
    byte: data whose ids stay exact when redirected to a file."""
    try:
        if output is None or output is Output.table:
            out.print(visible(text, lines=True), markup=False, emoji=False)
            return
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()


def stdout_closed() -> None:
    """The reader of stdout went away (``receval demo | head``): what is left to print
    is dropped quietly and the command goes on, so the files it writes are complete
    (or, interrupted, absent); its exit code is what it would have been. Stdout is
    pointed at the null device, so no later write (nor the interpreter's last flush)
    meets the closed pipe again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file behind sys.stdout
        pass


class Output(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"


class Engine(StrEnum):
    numpy = "numpy"
    spark = "spark"


class Format(StrEnum):
    auto = "auto"
    csv = "csv"
    tsv = "tsv"
    parquet = "parquet"
    jsonl = "jsonl"
    trec = "trec"
    recbole = "recbole"
