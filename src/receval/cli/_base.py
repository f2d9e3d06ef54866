"""The app, its command classes and the one printing boundary of the command line."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from enum import Enum, StrEnum
from typing import Any, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

from receval.analysis.formatting import visible


def _flags_as_flags(params: list[Any]) -> list[Any]:
    """Boolean flags shown in ``--help`` as flags, with no ``<bool>`` value;
    plain values coerced without pydantic (:func:`_plain_coercion`)."""
    _plain_coercion(params)
    for p in params:
        if getattr(p, "is_flag", False) and not getattr(p, "count", False):
            p.metavar = ""
    return params


#: rich's markup tags (rich.markup.escape's pattern): a ``[`` opening one is escaped
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def escape(markup: str) -> str:
    """``rich.markup.escape``, without loading rich (issue #33): each ``[``
    that would open a markup tag backslash-escaped (and the backslashes before
    it doubled), and a lone backslash at the end doubled."""
    markup = _MARKUP_TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


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


#: what :func:`_plain_value` cannot coerce: typer's own coercion does
_TYPERS = object()
_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")


class _PlainValues:
    """The coercion of one parameter's values where they are plain (issue #33):
    typer (0.2x) coerces every value, an unset flag's None included, through a
    pydantic ``TypeAdapter`` it builds on first use, which loads pydantic
    (0.1–0.2 s) on every command. A value that is None, text, a flag, digits or
    a choice spelled as one is coerced here as typer's adapter coerces it;
    any other value (a path, a number in another spelling, a bad choice) goes
    to typer's own coercion, so what it accepts and what its errors say stay
    typer's."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        found = _plain_value(value, param.type_descriptor, multi, ctx)
        if found is not _TYPERS:
            return found
        param._runtime_param = None  # typer's own coercion, from here on
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def _plain_value(value: Any, desc: Any, multi: bool, ctx: Any) -> Any:
    """``value`` coerced as typer's adapter for ``desc`` (its type descriptor)
    would, where that is plain; else :data:`_TYPERS`."""
    info, annotation = desc.parameter_info, desc.annotation
    if info.parser is not None or desc.file_annotation is not None or info.min is not None:
        return _TYPERS
    if info.max is not None:
        return _TYPERS
    if multi:
        texts = get_origin(annotation) is list and get_args(annotation) == (str,)
        if texts and isinstance(value, (list, tuple)) and all(type(v) is str for v in value):
            return list(value)
        return _TYPERS
    if annotation is str and type(value) is str:
        return value
    if annotation is bool and isinstance(value, bool):
        return value
    if type(value) is str and annotation in (int, float):
        if (_DIGITS if annotation is int else _DECIMAL).fullmatch(value):
            return annotation(value)
        return _TYPERS
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choice(value, annotation, info.case_sensitive, ctx)
    return _TYPERS


def _choice(value: Any, choices: type[Enum], case_sensitive: bool, ctx: Any) -> Any:
    """A choice's member, matched as typer matches it (the member's value as
    text, the context's token normalisation, case folded unless case
    sensitive); :data:`_TYPERS` for no match (typer words the error)."""
    if isinstance(value, choices):
        return value
    if type(value) is not str:
        return _TYPERS

    def normal(text: str) -> str:
        if ctx is not None and ctx.token_normalize_func is not None:
            text = ctx.token_normalize_func(text)
        return text if case_sensitive else text.casefold()

    wanted = normal(value)
    for member in choices:
        if normal(str(member.value)) == wanted:
            return member
    return _TYPERS


def _plain_coercion(params: list[Any]) -> None:
    """Each typer parameter's values coerced by :class:`_PlainValues` where
    plain (a parameter of another typer, with no such hook, is left alone)."""
    for p in params:
        if hasattr(p, "type_descriptor") and getattr(p, "_runtime_param", 0) is None:
            p._runtime_param = _PlainValues()


class _Command(TyperCommand):
    """A command whose ``--help`` shows boolean flags as flags, its help
    texts as written (:func:`_help_as_written`), and its plain values coerced
    without pydantic (:class:`_PlainValues`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _help_as_written(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_as_flags(super().get_params(ctx))


#: Each command and the module of :mod:`receval.cli` that registers it, in the
#: order ``--help`` lists them: a run imports only its command's module
#: (:func:`receval.cli.load_commands`; tests/test_startup.py checks the table).
COMMANDS = {
    "evaluate": "evaluate",
    "evaluate-ratings": "evaluate",
    "metrics": "info",
    "explain": "info",
    "inspect": "info",
    "compare": "compare",
    "report": "compare",
    "agreement": "agreement",
    "demo": "workflow",
    "split": "workflow",
    "check": "workflow",
    "backtest": "backtest",
    "trec_eval": "trec",
    "intent-aware": "intent",
    "off-policy": "off_policy",
    "next-items": "next_items",
}


class _Group(TyperGroup):
    """The ``receval`` group, whose ``--help`` shows boolean flags as flags,
    its help texts as written, and its commands in the order of
    :data:`COMMANDS`, whichever module was loaded first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _help_as_written(self)

    def list_commands(self, ctx: Any) -> list[str]:
        order = list(COMMANDS)
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n))

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


@functools.cache
def _consoles() -> tuple[Any, Any]:
    """The consoles of stderr and stdout, made (and rich loaded) when first
    printed to: a command whose output is JSON or CSV loads no rich (issue #33).
    No markup, emoji codes or highlighting: what they print is text, never
    read as markup."""
    from rich.console import Console

    class _Out(Console):
        """The console of stdout: a closed pipe (``receval demo | head``) ends the
        output quietly (:func:`stdout_closed`) instead of rich's ``SystemExit(1)``,
        which would stop the command half way through writing its files."""

        def on_broken_pipe(self) -> None:
            stdout_closed()  # not ``quiet``: a host calling main() again gets its output
            with contextlib.suppress(AttributeError):
                del self._buffer[:]  # what could not be written is dropped, not sent again

    err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
    out = _Out(highlight=False, soft_wrap=True, markup=False, emoji=False)
    return err, out


def err_console() -> Any:
    """The rich console of stderr (:func:`_consoles`)."""
    return _consoles()[0]


def out_console() -> Any:
    """The rich console of stdout (:func:`_consoles`)."""
    return _consoles()[1]


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal, as the console of stderr sees it; a
    stderr that is no tty, with none of the variables that make rich say
    otherwise, is answered without loading rich."""
    forced = ("FORCE_TERMINAL", "TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE")
    with contextlib.suppress(ValueError, AttributeError):
        if not sys.stderr.isatty() and not any(v in os.environ for v in forced):
            return False
    return bool(err_console().is_terminal)


def __getattr__(name: str) -> Any:
    """``err`` and ``out``: the consoles, made on first use (:func:`_consoles`)."""
    if name in ("err", "out"):
        return _consoles()[0 if name == "err" else 1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


command = functools.partial(app.command, cls=_Command)


# -- the one printing boundary: every line the commands print goes through these ------------


def note_line(text: str) -> None:
    """One line on stderr (a note, a file read or written): never read as
    markup, its control characters written as escapes."""
    with contextlib.suppress(BrokenPipeError):  # nobody reads stderr any more: nothing to tell
        _print(visible(text), stderr=True)


def fail(text: str) -> None:
    """The one line of an error on stderr, as :func:`note_line` prints it."""
    note_line(f"error: {text}")


def show_out(text: str, output: Output | EvaluateOutput | None = None) -> None:
    """A command's result on stdout. For the terminal (a table, a summary:
    ``output`` None or table) never read as markup, its control characters
    escaped (lines kept); JSON, CSV, Markdown and LaTeX as they are, byte for
    byte: data whose ids stay exact when redirected to a file."""
    try:
        if output is None or output is Output.table:
            _print(visible(text, lines=True), stderr=False)
            return
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()


def _print(text: str, *, stderr: bool) -> None:
    """One text (made :func:`visible`) and a line break on stderr or stdout:
    written as it is, without loading rich (issue #33: what rich's consoles
    print for such text, bit for bit), unless the consoles are in use (a status
    line or a progress bar may be live on the terminal): then through them, so
    the line goes above it."""
    if _consoles.cache_info().currsize:
        _consoles()[0 if stderr else 1].print(text, markup=False, emoji=False)
        return
    stream = sys.stderr if stderr else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def stdout_closed() -> None:
    """The reader of stdout went away (``receval demo | head``): what is left to print
    is dropped quietly and the command goes on, so the files it writes are complete
    (or, interrupted, absent); its exit code is what it would have been. Stdout is
    pointed at the null device, so no later write (nor the interpreter's last flush)
    meets the closed pipe again."""
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


class EvaluateOutput(StrEnum):
    """``receval evaluate``'s ``--output``: :class:`Output`'s, and trec_eval's own
    text (``-o trec_eval``, under ``--convention trec_eval``), which the other
    commands do not print."""

    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"
    trec_eval = "trec_eval"


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
