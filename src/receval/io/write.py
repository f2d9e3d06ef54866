"""Writing output files: whole or not at all, never through a link, never over an input.

Every file receval writes goes through :func:`atomic_write`:

- the bytes go to a temporary file in the target's folder (``.NAME.XXXX.tmp``), created
  when writing starts, flushed and fsync'd, then renamed over the target: a reader sees
  the old file or the new one, never half of one;
- the temporary file is removed on any failure, on Ctrl-C and on SIGTERM (the command
  line turns SIGTERM into an exception, so the same cleanup runs);
- a symbolic link at the target is replaced by the new file, never followed (the file it
  pointed to is left as it was);
- the new file gets the mode of the file it replaces, or ``0o666`` less the umask for a
  new file (as ``open()`` would give), not the ``0o600`` of a temporary file.

:func:`refuse_inputs` is the other half: a command never writes over one of its own inputs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from receval.errors import OutputError, ReceValError

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "cannot_write",
    "make_folder",
    "refuse_inputs",
    "umask",
]

#: What to do about each system error when writing (by errno).
_ADVICE = {
    errno.ENOSPC: ("no space left on the device", "free some space or write elsewhere"),
    errno.EDQUOT: ("disk quota exceeded", "free some space or write elsewhere"),
    errno.EFBIG: ("the file is too large for this file system or limit", "write elsewhere"),
    errno.EROFS: ("the file system is read-only", "write to a writable folder"),
    errno.EACCES: ("permission denied", "write to a folder you may write to"),
    errno.EPERM: ("operation not permitted", "write to a folder you may write to"),
    errno.ENOENT: ("its folder does not exist", "create the folder or write elsewhere"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "choose another path"),
    errno.EISDIR: ("it is a folder", "give a file name"),
    errno.EEXIST: ("a file is in the way", "choose another path"),
}


def cannot_write(path: str | Path, exc: OSError, what: str = "write") -> OutputError:
    """The :class:`OutputError` for an ``OSError`` met while writing ``path``:
    it names ``path`` (not a temporary file) and says what to do."""
    number = exc.errno
    if number is None:  # e.g. pyarrow: "IOError: ... No space left on device"
        text = str(exc)
        number = next((n for n in _ADVICE if os.strerror(n).lower() in text.lower()), None)
    reason, advice = _ADVICE.get(number, (exc.strerror or str(exc), "check the path"))  # type: ignore[arg-type]
    return OutputError(f"cannot {what} {path}: {reason}; {advice}", path=str(path), errno=number)


def make_folder(path: str | Path) -> Path:
    """Create the folder ``path`` (and its parents) if need be: an
    :class:`OutputError` naming it when a file is in the way or it cannot be made."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(
            f"cannot write into {p}: it is a file, not a folder; give a folder", path=str(p)
        )
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(p, exc, "create the folder") from None
    return p


def umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and restore at once
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """The existing regular file's mode, else what a new file would get."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return 0o666 & ~umask()


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Any:
    """Call ``write(tmp)`` to write a temporary file, then rename it over ``path``.

    ``write`` gets the temporary file's path (writers such as ``DataFrame.to_parquet``
    want a path) and may write it any way it likes; its return value is returned. On any
    exception, ``KeyboardInterrupt`` included, the temporary file is removed and the target
    is left as it was; an ``OSError`` (full disk, read-only folder, no permission ...)
    becomes an :class:`~receval.errors.OutputError` naming the target and what to do.
    """
    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        raise cannot_write(target, IsADirectoryError(errno.EISDIR, "Is a directory"))
    folder = target.parent
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise cannot_write(target, exc) from None
    tmp = Path(name)
    try:
        os.close(fd)
        result = write(tmp)
        with open(tmp, "rb+") as f:  # the writer may have closed without syncing
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)  # replaces a link at target; never follows it
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise cannot_write(target, exc) from None
        raise
    with contextlib.suppress(OSError):  # the rename itself, on file systems that need it
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return result


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` with :func:`atomic_write`."""
    atomic_write(path, lambda p: p.write_text(text, encoding=encoding))


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def refuse_inputs(
    output: tuple[str, str | Path],
    inputs: Iterable[tuple[str, str | Path | None]],
) -> None:
    """Raise if the output ``(what, path)`` is one of the ``(label, path)`` inputs.

    The comparison is by file (``os.path.samefile``: links and ``..`` count), so a command
    never replaces its own input. The message names both, e.g. ``--per-user in.csv would
    write over the recommendations file in.csv``.
    """
    what, out = output
    for label, path in inputs:
        if path is None or str(path) == "-":
            continue
        if _same(Path(out), Path(path)):
            raise ReceValError(
                f"{what} would write over the {label} {path}; choose another output file"
            )
