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
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
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
    "output_notes",
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
      The system releases the flock when its process ends, however it ends;
      the file itself is removed on exit.
    - **A lock never writes through a link**: the file is created with
      ``O_CREAT | O_EXCL | O_NOFOLLOW`` and an existing one opened with
      ``O_NOFOLLOW``. A symbolic link at the lock's path, or anything but a
      plain file with one name (a named pipe, a folder, a device, a second
      hard link to another file), is refused with an
      :class:`~receval.errors.OutputError` naming it ("... is a symbolic link,
      not a receval lock: remove it"), exit 2 on the command line; it is left
      as it is and so is what it points to. Refused rather than replaced: the
      lock's path is receval's own, so something else there is a mistake or a
      trap the user should see, and removing it would hide both.
    - **A stale lock is taken over, and said**: a lock file whose flock no
      process holds was left by a run that ended without removing it
      (``kill -9``, a crash, a power cut). The flock decides, not the pid
      written in the file (a pid is reused; a lock on another host cannot be
      checked): the new run takes the file over, and :attr:`notes` gets one
      line naming the run that left it and whether its process is gone (on
      this host). Each note also goes to the watcher of :func:`output_notes`,
      which is how the command line prints it.
    - **An interrupted lock is no lock**: Ctrl-C or SIGTERM while the lock is
      being taken (or while entering) removes the lock file this run created
      or took over; a lock held by another run is never removed.
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
        #: What the set's writer should be told (a stale lock taken over), in order.
        self.notes: list[str] = []

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
        except BaseException as exc:  # Ctrl-C too: __exit__ will not run, release here
            self._release()
            if isinstance(exc, OSError):
                raise cannot_write(self.manifest, exc, "remove") from None
            raise
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

    def _holder(self, fd: int) -> str:
        """Who holds (or held) the lock open at ``fd``, as its file says."""
        who = _lock_facts(fd)
        if not who:
            return "another process"
        return (
            f"{who.get('command')}, pid {who.get('pid')} on {who.get('host')}, "
            f"started {who.get('started')}"
        )

    def _not_a_lock(self, what: str) -> OutputError:
        return OutputError(
            f"{self._lock} is {what}, not a receval lock: remove it or write elsewhere",
            path=str(self._lock),
        )

    def _open_lock(self) -> int | None:
        """The lock file opened read-write, made (exclusively) if need be, never
        through a link; None when it vanished between two looks (try again).
        Anything at the path but a plain file with one name is refused."""
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            return os.open(self._lock, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        except OSError as exc:
            raise cannot_write(self._lock, exc, "lock") from None
        try:
            st = os.lstat(self._lock)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise cannot_write(self._lock, exc, "lock") from None
        if not stat.S_ISREG(st.st_mode):
            raise self._not_a_lock(_kind(st.st_mode))
        try:
            fd = os.open(self._lock, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # became a link since the look above
                raise self._not_a_lock("a symbolic link") from None
            raise cannot_write(self._lock, exc, "lock") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # replaced between the look and the open
                raise self._not_a_lock(_kind(st.st_mode))
            if st.st_nlink > 1:  # a second name of some file: writing would change it
                raise self._not_a_lock("a second name (hard link) of another file")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _take_lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, the manifest still tells
            return
        for _ in range(10):
            fd = self._open_lock()
            if fd is None:
                continue
            try:
                if self._lock_open_file(fd, fcntl):
                    return
            except BaseException:  # held by another run, or Ctrl-C / SIGTERM meanwhile
                _abandon(fd, self._lock, fcntl)
                raise
            os.close(fd)
        raise OutputError(f"could not lock {self.folder}", path=str(self.folder))

    def _lock_open_file(self, fd: int, fcntl: Any) -> bool:
        """Lock the file open at ``fd`` and write this run into it: True, the lock is
        held (``self._fd``); False, the file at the path is no longer this one."""
        import json
        import socket
        import sys

        st = os.fstat(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(
                f"{self.folder} is being written by another receval run "
                f"({self._holder(fd)}); wait for it to finish or write elsewhere",
                path=str(self.folder),
            ) from None
        # the holder may have removed the file as we opened it: lock the one there
        try:
            if os.lstat(self._lock).st_ino != st.st_ino:
                return False
        except FileNotFoundError:
            return False
        if st.st_size:
            self._note(f"took over the lock {self._lock}: {_stale(_lock_facts(fd))}")
        os.ftruncate(fd, 0)
        who = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": f"receval {self.command}",
            "argv": " ".join(sys.argv),
            "started": self._started,
        }
        os.pwrite(fd, json.dumps(who).encode(), 0)
        self._fd = fd
        return True

    def _note(self, text: str) -> None:
        self.notes.append(text)
        watcher = _NOTES.get()
        if watcher is not None:
            watcher(text)

    def _release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            if os.lstat(self._lock).st_ino == os.fstat(fd).st_ino:  # ours, not a newcomer's
                os.unlink(self._lock)
        os.close(fd)  # closing releases the flock


def _kind(mode: int) -> str:
    """What a file that is not a plain file is, in words."""
    kinds = [
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    ]
    return next((words for test, words in kinds if test(mode)), "not a plain file")


def _lock_facts(fd: int) -> dict[str, Any]:
    """The JSON a lock file open at ``fd`` holds (read without moving its offset), or {}."""
    import json

    try:
        who = json.loads(os.pread(fd, 1 << 16, 0).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return who if isinstance(who, dict) else {}


def _stale(who: dict[str, Any]) -> str:
    """Why a lock file nobody holds is stale: who left it, and whether it is gone."""
    import socket

    if not who:
        return "it was left by an interrupted run and no process holds it"
    left = (
        f"it was left by {who.get('command')}, pid {who.get('pid')} on {who.get('host')}, "
        f"started {who.get('started')}, which ended without removing it"
    )
    pid = who.get("pid")
    if who.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return f"{left} (no process holds it)"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"{left} (process {pid} is gone)"
    except OSError:
        pass
    return f"{left} (pid {pid} is now another process, which does not hold it)"


def _abandon(fd: int, lock: Path, fcntl: Any) -> None:
    """Undo a lock being taken when an exception stops it (Ctrl-C, SIGTERM, another
    run holding it): close ``fd``, removing the file at ``lock`` first if it is still
    the one at ``fd`` and no other run holds it. Safe whoever made the file: a run
    that opened it but has not locked it yet finds it gone once locked, and makes
    a new one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # at once if this run holds it
        if os.lstat(lock).st_ino == os.fstat(fd).st_ino:
            os.unlink(lock)
    except OSError:  # held by another run (BlockingIOError), or gone: leave it
        pass
    finally:
        os.close(fd)


#: who is told of each note of an :class:`OutputSet` (:func:`output_notes`); None: nobody
_NOTES: ContextVar[Callable[[str], None] | None] = ContextVar("receval_output_notes", default=None)


@contextlib.contextmanager
def output_notes(note: Callable[[str], None]) -> Iterator[None]:
    """Within the block, ``note(text)`` is called with each note of an
    :class:`OutputSet` (e.g. a stale lock taken over), as it is made; the
    library itself prints nothing. The command line prints each as
    ``note: ...``."""
    token = _NOTES.set(note)
    try:
        yield
    finally:
        _NOTES.reset(token)
