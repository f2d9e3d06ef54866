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

# the command modules register their commands, in the order --help lists them
from receval.cli import evaluate  # noqa: F401

# isort: split
from receval.cli import info  # noqa: F401

# isort: split
from receval.cli import compare  # noqa: F401

# isort: split
from receval.cli import workflow  # noqa: F401

# isort: split
from receval.cli._base import app
from receval.cli._main import command_line, main
from receval.cli.flags import COLUMN_FLAGS, POLICY_FLAGS

__all__ = ["COLUMN_FLAGS", "POLICY_FLAGS", "app", "command_line", "main"]
