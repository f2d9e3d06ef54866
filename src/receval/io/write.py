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
    "LOCK",
    "MANIFEST",
    "OutputSet",
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


#: The manifest a multi-file output writes last (``prefix`` + this name).
MANIFEST = "manifest.json"
#: The lock file a multi-file output holds while it writes.
LOCK = ".receval.lock"


class OutputSet:
    """A folder of files written as one set (the demo's folder, a split's):
    a reader never sees a mix of two runs or a partial set.

    - **One writer at a time**: entering takes a lock in the folder
      (``.receval.lock``: an exclusive ``flock`` on a file holding the
      writer's pid, host, command and start time). A second writer fails at
      once with an :class:`~receval.errors.OutputError` naming the holder.
      The system releases the lock when its process ends, however it ends, so
      a lock can never be stale; the file itself is removed on exit.
    - **Manifest last**: entering removes the folder's manifest
      (``manifest.json``); leaving without an error writes a new one listing
      every file of the set with its size and SHA-256, the command and its
      parameters. A folder with a manifest holds a complete set, and its
      files are those the manifest lists (a file of the folder not in it is
      not part of the set); a folder without one is being written or was
      interrupted.
    - Every file goes through :func:`atomic_write` (:meth:`write`).

    Example::

        with OutputSet(out, "split", {"seed": 0}) as files:
            files.write("train.parquet", lambda p: train.to_parquet(p))
    """

    def __init__(
        self,
        folder: str | Path,
        command: str,
        parameters: dict[str, Any] | None = None,
        prefix: str = "",
    ) -> None:
        self.folder = Path(folder)
        self.command = command
        self.parameters = dict(parameters or {})
        self.prefix = prefix
        self.files: dict[str, Path] = {}
        self._fd: int | None = None
        self._lock = self.folder / f"{prefix}{LOCK}"
        self._started = ""

    @property
    def manifest(self) -> Path:
        return self.folder / f"{self.prefix}{MANIFEST}"

    def __enter__(self) -> OutputSet:
        import datetime

        make_folder(self.folder)
        self._started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self._take_lock()
        try:
            self.manifest.unlink(missing_ok=True)
        except OSError as exc:
            self._release()
            raise cannot_write(self.manifest, exc, "remove") from None
        return self

    def write(self, name: str, write: Callable[[Path], Any]) -> Path:
        """Write the set's file ``name`` (a path relative to the folder) whole."""
        path = self.folder / name
        make_folder(path.parent)
        atomic_write(path, write)
        self.files[name] = path
        return path

    def add(self, name: str, path: Path) -> None:
        """Count a file written by another writer (e.g. a nested set) in the set."""
        self.files[name] = path

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        try:
            if kind is None:
                self._write_manifest()
        finally:
            self._release()

    def _write_manifest(self) -> None:
        import datetime
        import hashlib
        import json
        import socket

        from receval._version import __version__

        listed = {}
        for name, path in sorted(self.files.items()):
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda f=f: f.read(1 << 20), b""):
                    digest.update(block)
            listed[name] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
        text = json.dumps(
            {
                "receval": __version__,
                "command": self.command,
                "parameters": self.parameters,
                "host": socket.gethostname(),
                "started": self._started,
                "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "files": listed,
            },
            indent=2,
            default=str,
        )
        atomic_write_text(self.manifest, text + "\n")

    def _holder(self) -> str:
        import json

        try:
            who = json.loads(self._lock.read_text(encoding="utf-8"))
            return (
                f"{who.get('command')}, pid {who.get('pid')} on {who.get('host')}, "
                f"started {who.get('started')}"
            )
        except (OSError, ValueError):
            return "another process"

    def _take_lock(self) -> None:
        import json
        import socket
        import sys

        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, the manifest still tells
            return
        for _ in range(10):
            try:
                fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise cannot_write(self._lock, exc, "lock") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputError(
                    f"{self.folder} is being written by another receval run "
                    f"({self._holder()}); wait for it to finish or write elsewhere",
                    path=str(self.folder),
                ) from None
            # the file may have been removed by the holder as we opened it: lock the one there
            try:
                same = os.stat(self._lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            who = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": f"receval {self.command}",
                "argv": " ".join(sys.argv),
                "started": self._started,
            }
            os.write(fd, json.dumps(who).encode())
            self._fd = fd
            return
        raise OutputError(f"could not lock {self.folder}", path=str(self.folder))

    def _release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self._lock)
        os.close(self._fd)  # closing releases the flock
        self._fd = None
