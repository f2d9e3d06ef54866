"""The entry point: one error boundary for every command (exit codes 0, 1, 2, 129,
130 and 143, signals, internal errors)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from receval import __version__, _malloc
from receval.cli._base import app, fail, note_line, show_out
from receval.errors import (
    SIGNAL_MESSAGES,
    ReceValError,
)
from receval.io.write import output_notes


@app.callback(invoke_without_command=True)
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="print the version, whether the compiled part is in use, and the extras found",
        ),
    ] = False,
) -> None:
    if version:
        for line in version_lines():
            show_out(line)
        raise typer.Exit()


#: The optional extras (``pip install 'receval[NAME]'``) and the package each needs.
EXTRAS = {
    "polars": "polars",
    "plot": "matplotlib",
    "spark": "pyspark",
    "torch": "torch",
    "mlflow": "mlflow",
}


def version_lines() -> list[str]:
    """What ``receval --version`` prints: the version; whether the compiled
    part (``receval._native``) is in use, or why not; and which optional extras
    are installed. Extras are looked up (:func:`importlib.util.find_spec`), not
    imported: torch or Spark would take seconds to load."""
    import importlib.util
    import os
    import platform

    from receval._accel import NATIVE

    if NATIVE is not None:
        native = "in use (receval._native)"
    elif os.environ.get("RECEVAL_NATIVE", "1") == "0":
        native = "off (RECEVAL_NATIVE=0): the NumPy paths, same numbers"
    else:
        native = "not built (no C compiler at install time): the NumPy paths, same numbers"
    found = []
    for extra, package in EXTRAS.items():
        try:
            there = importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):
            there = False
        found.append(f"{extra} {'yes' if there else 'no'}")
    return [
        f"receval {__version__}",
        f"compiled part: {native}",
        f"extras: {', '.join(found)}",
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}",
    ]


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl-C so the same cleanup
    runs; ``code`` is the command's exit code for it (143, 129)."""

    def __init__(self, code: int = 143) -> None:
        super().__init__(code)
        self.code = code


_SIGNALLED: list[int] = []  # the exit code of each signal received during main()


def _on_signal(signum: int, frame: Any) -> None:
    import signal

    if signum == signal.SIGINT:
        _SIGNALLED.append(130)
        raise KeyboardInterrupt
    code = 129 if signum == getattr(signal, "SIGHUP", None) else 143
    _SIGNALLED.append(code)
    raise Terminated(code)


def _interrupted(code: int) -> int:
    """One line on stderr; the shell's code for the signal (129 SIGHUP, 130 SIGINT,
    143 SIGTERM)."""
    note_line(SIGNAL_MESSAGES[code])
    return code


def command_line() -> int:
    """The ``receval`` command (and ``python -m receval``): :func:`main` in a
    process the command owns, so it may tune the allocator (freed memory kept
    for reuse during large runs; ``RECEVAL_MALLOC=0`` turns it off). A host
    that calls :func:`main` keeps its allocator as it is."""
    _malloc.allow()
    return main()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Ctrl-C returns 130, SIGTERM 143 and SIGHUP 129 (the terminal closed: handled as
    SIGTERM is, unless SIGHUP is ignored, as under ``nohup``), each with one line on
    stderr and no traceback; the handlers are installed here, in the command's own
    process, never on import, and put back on return. (Typer turns KeyboardInterrupt
    into a plain return value of 130, so the handlers note which signal came.)
    """
    import signal
    import threading

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _on_signal)
        hup = getattr(signal, "SIGHUP", None)
        if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:
            previous[hup] = signal.signal(hup, _on_signal)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not if ignored
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_signal)
    _SIGNALLED.clear()
    try:
        code = _main_unguarded(argv)
    except KeyboardInterrupt as exc:  # Terminated too
        code = exc.code if isinstance(exc, Terminated) else 130
        return _interrupted(_SIGNALLED[0] if _SIGNALLED else code)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if _SIGNALLED or code == 130:
        return _interrupted(_SIGNALLED[0] if _SIGNALLED else 130)
    return code


def _internal_error(exc: BaseException) -> int:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # Ctrl-C wrapped by Python, e.g.
        seen.add(id(cause))  # in a RuntimeError from __set_name__ during an import
        if isinstance(cause, KeyboardInterrupt):
            raise cause
        cause = cause.__cause__ or cause.__context__
    note_line(f"internal error: {type(exc).__name__}: {exc}")
    note_line("please report it with the command you ran (receval " + __version__ + ")")
    return 1


def _out_of_memory(exc: BaseException) -> str:
    """What ran out, how much was asked for when NumPy says, and what helps
    (:func:`receval._malloc.out_of_memory`: the start-up says it too)."""
    return _malloc.out_of_memory(exc)


def _main_unguarded(argv: list[str] | None) -> int:
    try:
        # a stale lock taken over is said even under -q: an earlier run was killed
        with output_notes(lambda n: note_line(f"note: {n}")):
            from receval.cli import load_commands

            load_commands(sys.argv[1:] if argv is None else argv)
            returned = app(args=argv, standalone_mode=False)
    except ReceValError as exc:  # the shell's syntax: --empty-truth zero, not empty_truth="zero"
        fail(exc.cli_message())
        return 2
    except MemoryError as exc:
        fail(_out_of_memory(exc))
        return 2
    except OSError as exc:  # reading: no such file, permission, I/O error, ...
        if _malloc.is_out_of_memory(exc):  # ENOMEM: a map or a buffer refused
            fail(_out_of_memory(exc))
            return 2
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except ImportError as exc:
        if _malloc.is_out_of_memory(exc):
            fail(_out_of_memory(exc))
            return 2  # a library could not be loaded for lack of memory
        return _internal_error(exc)
    except Exception as exc:  # usage errors of the parser, and everything unexpected
        if _malloc.is_out_of_memory(exc):  # a thread (ours, Arrow's, BLAS') not started
            fail(_out_of_memory(exc))
            return 2
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()  # a usage error: "Missing parameter", "No such option" (exit 2)
            return int(exc.exit_code)
        return _internal_error(exc)
    if returned == 130:  # a KeyboardInterrupt that typer caught and returned as 130
        return 130  # main() says which signal it was
    if isinstance(returned, int) and not isinstance(returned, bool):
        return returned  # typer.Exit(code=n) raised by a command (check: 1 on leakage)
    return 0
