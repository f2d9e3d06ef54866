"""The ``receval`` command line: parsing and rendering only; the work is in the library.

One module per command group (:mod:`~receval.cli.evaluate`,
:mod:`~receval.cli.compare`, :mod:`~receval.cli.info`,
:mod:`~receval.cli.workflow`), the shared flags made from the one table of
options (:mod:`~receval.cli.flags`: :data:`POLICY_FLAGS`,
:data:`COLUMN_FLAGS`), the inputs handed down to the library
(:mod:`~receval.cli.inputs`), the printing boundary (:mod:`~receval.cli._base`)
and one error boundary (:mod:`~receval.cli._main`).

Every command that evaluates takes the same policy and column flags, turned
into one :class:`~receval.EvalOptions`; a flag left unset is None, so the
convention's preset applies. The commands read no file themselves (issue
#30, "one way in"): they hand the paths, ``--format`` and ``--sep`` riding
along as a :class:`~receval.io.inputs.FileInput`, and the options unchanged
down to the library, whose one reader opens every input.

Exit codes: 0 success; 2 a usage or input error (one or two lines on stderr
naming the file, line, user and item, no traceback); 1 an internal error;
130 on Ctrl-C.

Everything the commands print goes through one boundary: no rich markup is
read in it (a ``[/]`` in a file name is text), the terminal's text has its
control characters written as escapes, and JSON, CSV, Markdown and LaTeX go to
stdout as they are.
"""

import importlib
from typing import Any

from receval.cli._base import COMMANDS
from receval.cli._main import command_line, main

__all__ = ["COLUMN_FLAGS", "POLICY_FLAGS", "app", "command_line", "load_commands", "main"]


def load_commands(argv: list[str] | None = None) -> None:
    """Import the modules that register the commands (each registers its
    commands on import): only the one of the command named in ``argv`` when
    there is one (``receval evaluate ...`` loads no compare, report or demo
    code: issue #33), else every one (``--help``, a misspelt command)."""
    named = next((a for a in argv or [] if not a.startswith("-")), None)
    modules = [COMMANDS[named]] if named in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(f"receval.cli.{module}")


def __getattr__(name: str) -> Any:
    """``app`` (every command registered), ``COLUMN_FLAGS`` and ``POLICY_FLAGS``,
    loaded on first use."""
    if name == "app":
        load_commands()
        from receval.cli._base import app

        return app
    if name in ("COLUMN_FLAGS", "POLICY_FLAGS"):
        from receval.cli import flags

        return getattr(flags, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
