"""Writing output files: whole or not at all, never through a link, never over an input.

Every file receval writes goes through :func:`atomic_write`:

- the bytes go to a temporary file in the target's folder (``.NAME.PID-XXXXXXXX.tmp``),
  created when writing starts, flushed and fsync'd, then renamed over the target: a
  reader sees the old file or the new one, never half of one; one that a killed process
  left (its pid gone) is removed by the next write of that file, or of a set
  (:class:`OutputSet`) into its folder;
- a file inside a folder that another receval run is writing as a set is refused;
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
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from receval.errors import OutputError, ReceValError, option
from receval.io.manifest import MANIFEST, files_listed

__all__ = [
    "LOCK",
    "MANIFEST",
    "PAGE_SUFFIXES",
    "STAGING",
    "OutputSet",
    "atomic_write",
    "atomic_write_text",
    "cannot_write",
    "check_target",
    "given_once",
    "held_by_another",
    "make_folder",
    "output_notes",
    "refuse_inputs",
    "refuse_inside",
    "suffix_format",
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


def atomic_write(
    path: str | Path, write: Callable[[Path], Any], shown: str | Path | None = None
) -> Any:
    """Call ``write(tmp)`` to write a temporary file, then rename it over ``path``.

    ``write`` gets the temporary file's path (writers such as ``DataFrame.to_parquet``
    want a path) and may write it any way it likes; its return value is returned. On any
    exception, ``KeyboardInterrupt`` included, the temporary file is removed and the target
    is left as it was; an ``OSError`` (full disk, read-only folder, no permission ...)
    becomes an :class:`~receval.errors.OutputError` naming the target (``shown``, when
    ``path`` is not where the file will lie: a set's file is written into its hidden
    folder first) and what to do.
    """
    target = Path(path)
    named = target if shown is None else shown
    if target.is_dir() and not target.is_symlink():
        raise cannot_write(named, IsADirectoryError(errno.EISDIR, "Is a directory"))
    folder = target.parent
    _refuse_held(target)
    for left in _stale_temporaries(folder, target.name):  # by a killed run into this file
        with contextlib.suppress(OSError):
            left.unlink()
    try:
        prefix = f".{target.name}.{os.getpid()}-"
        fd, name = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    except OSError as exc:
        raise cannot_write(named, exc) from None
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
            raise cannot_write(named, exc) from None
        raise
    _sync_folder(folder)  # the rename itself, on file systems that need it
    return result


def atomic_write_text(
    path: str | Path, text: str, encoding: str = "utf-8", shown: str | Path | None = None
) -> None:
    """Write ``text`` to ``path`` with :func:`atomic_write` (``shown``: its name in errors)."""
    atomic_write(path, lambda p: p.write_text(text, encoding=encoding), shown)


def check_target(path: str | Path, name: str | None = None, *, folder_made: bool = False) -> None:
    """Raise now the :class:`~receval.errors.OutputError` that writing the file
    ``path`` would meet at the end of the work: a folder at ``path`` (a link is
    fine: it is replaced), its folder missing (fine with ``folder_made``: the
    writer makes it) or a file where a folder of the path should be, or a folder
    above it held by another receval run. ``name``: the keyword / flag the
    target was given with, named in the message in the caller's syntax
    (``per_user='x.csv'`` / ``--per-user x.csv``); the error's ``path`` is
    ``path``. Call it for every output before any work (and before any output
    is written): a command then never fails half-way, some files written."""
    target = Path(path)
    shown = str(path) if name is None else option(name, path)
    problem: OSError | None = None
    if target.is_dir() and not target.is_symlink():
        problem = IsADirectoryError(errno.EISDIR, "Is a directory")
    else:
        try:
            st = os.stat(target.parent)
        except FileNotFoundError as exc:
            problem = None if folder_made and _made_below_folder(target.parent) else exc
        except OSError as exc:  # ENOTDIR: a file above; EACCES ...
            problem = exc
        else:
            if not stat.S_ISDIR(st.st_mode):
                problem = NotADirectoryError(errno.ENOTDIR, "Not a directory")
    if problem is not None:
        err = cannot_write(shown, problem)
        err.path = str(target)
        raise err
    if os.path.isdir(target.parent):
        _refuse_held(target)


def _made_below_folder(folder: Path) -> bool:
    """Whether the missing ``folder`` can be made: its nearest existing
    ancestor is a folder (not a file)."""
    for above in folder.parents:
        if os.path.lexists(above):
            return above.is_dir()
    return True


#: the suffixes of an HTML page receval writes (a report)
PAGE_SUFFIXES = (".html", ".htm")


def suffix_format(name: str, path: str | Path, formats: Mapping[str, str], what: str) -> str:
    """The format the suffix of the output ``path`` (given as ``name``) chooses;
    any other suffix is a :class:`~receval.errors.ReceValError` naming the
    keyword or flag (:func:`~receval.errors.option`), the file, the suffix found
    and ``what`` is written (e.g. "the report is an HTML page"): a file is never
    written in a format its name does not say (``out='truth.csv'`` would have
    written a page over a CSV file)."""
    suffix = Path(str(path).rstrip("/")).suffix.lower()
    if suffix in formats:
        return formats[suffix]
    found = f"receval writes no {suffix} file" if suffix else "the name has no suffix"
    names = list(formats)
    ending = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    raise ReceValError(f"{option(name, path)}: {found}; {what}: give a name ending in {ending}")


def given_once(name: str, given: Sequence[Any] | None) -> Any:
    """The one value of an output option that may be given once (None: not
    given); given twice, a :class:`~receval.errors.ReceValError` naming it: the
    second would silently replace the first (``--per-user a.csv --per-user
    b.parquet``)."""
    values = list(given or ())
    if len(values) > 1:
        shown = " and ".join(option(name, v) for v in values)
        raise ReceValError(f"{option(name)} is given {len(values)} times ({shown}): give it once")
    return values[0] if values else None


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


def refuse_inside(
    output: tuple[str, str | Path],
    inputs: Iterable[tuple[str, str | Path | None]],
    writes: Iterable[str] = (),
) -> None:
    """Raise if the output folder ``(what, path)`` is one of the ``(label, path)``
    inputs, holds one of them (the input's real path, or where the link given as
    the input lies), or is one of the files ``writes`` names (paths relative to
    the folder: the files written there) through a hard link. The message names
    both: ``out='d' would write into the folder holding the interactions file
    d/log.csv; choose another output folder``."""
    what, given_folder = output
    folder = Path(given_folder)
    root = folder.resolve()
    written = {Path(name).as_posix(): root / name for name in writes}
    for label, path in inputs:
        if path is None or str(path) == "-":
            continue
        given = Path(path)
        if not given.exists() and not given.is_symlink():
            continue  # nothing there to write over (reading it will say so)
        if _same_file(folder, given):
            raise ReceValError(
                f"{what} would write over the {label} {path}; choose another output folder"
            )
        places = (given.resolve(), given.absolute().parent.resolve() / given.name)
        inside = [p.relative_to(root).as_posix() for p in places if p.is_relative_to(root)]
        inside += [name for name, target in written.items() if _same_file(target, given)]
        if not inside:
            continue
        name = next((n for n in inside if n in written), None)
        if name is not None:
            said = f"{what} ({name}) would write over the {label} {path}"
        else:
            said = f"{what} would write into the folder holding the {label} {path}"
        raise ReceValError(f"{said}; choose another output folder")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


#: The lock file a multi-file output holds while it writes.
LOCK = ".receval.lock"
#: The folder (``prefix`` + this name) where a set's new files wait to be published.
STAGING = ".receval-new"

#: the folders this process holds, by (device, inode), with how many sets hold each:
#: its own writes into them pass (another process's are refused)
_HELD: dict[tuple[int, int], int] = {}
#: the set being written here: a set opened inside its folder is written as part of it
_ACTIVE: ContextVar[OutputSet | None] = ContextVar("receval_output_set", default=None)


class OutputSet:
    """A folder of files written as one set, one generation (the demo's folder,
    a split's, a report's PNGs): a reader never sees a mix of two runs.

    - **One writer at a time, nested folders too**: entering takes a lock in
      the folder (``.receval.lock``: an exclusive ``flock`` on a file holding
      the writer's pid, host, command and start time). A second writer fails
      at once with an :class:`~receval.errors.OutputError` naming the holder;
      so does a set or a single file (:func:`atomic_write`) written anywhere
      inside a folder another run holds (``split --out d/split`` while ``demo
      --out d`` runs), and a set that would write into a subfolder another run
      holds. The system releases the flock when its process ends, however it
      ends; the file itself is removed on exit. A set opened in this process
      inside the folder of a set being written (the demo's split) is written
      as part of that set, under its lock.
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
    - **One generation**: every file of the set is written into a hidden
      folder of the set's folder (``.receval-new``), the folder's current set
      left as it is. Leaving without an error writes the new manifest there
      (every file with its size and SHA-256, the command, its parameters and
      a generation id), then publishes: with Ctrl-C, SIGTERM and SIGHUP held
      back for those few renames, the old manifest is removed, each new file
      renamed into place, the old set's files that the new one does not have
      removed (those the old manifest lists, still of its size), and the new
      manifest renamed into place last. Leaving with an error (Ctrl-C too)
      removes the hidden folder: the old set stays whole, manifest and all.
      A folder with a manifest holds one complete set, and its files are
      those the manifest lists; a folder without one was never written whole,
      or its publishing was cut by ``kill -9`` or a power cut, which the next
      run into the folder finishes (the new set was complete), with a note.
    - **Left-overs cleaned**: entering removes what a killed run left in the
      folder (an unpublished hidden folder, temporary files of
      :func:`atomic_write` whose process is gone), with a note.
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
        #: the set's files: name (relative to the folder) -> where it lies once published
        self.files: dict[str, Path] = {}
        self._outside: dict[str, Path] = {}  # counted, written in place by another writer
        self._fd: int | None = None
        self._lock = self.folder / f"{prefix}{LOCK}"
        self._staging = self.folder / f"{prefix}{STAGING}"
        self._started = ""
        self._parent: OutputSet | None = None  # the set this one is written as part of
        self._token: Any = None
        #: What the set's writer should be told (a stale lock taken over), in order.
        self.notes: list[str] = []

    @property
    def manifest(self) -> Path:
        return self.folder / f"{self.prefix}{MANIFEST}"

    def __enter__(self) -> OutputSet:
        import datetime

        self._started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        parent = _ACTIVE.get()
        if parent is not None and parent._holds(self.folder):
            self._parent = parent  # written as part of the set being written here
        else:
            make_folder(self.folder)
            self._take_lock()
            try:
                self._refuse_held_above()
                self._refuse_inside_a_set()
                self._recover()
                _clean_temporaries(self.folder, self._note)
                _fresh_folder(self._staging)
            except BaseException as exc:  # Ctrl-C too: __exit__ will not run, release here
                self._release()
                if isinstance(exc, OSError):
                    raise cannot_write(self.folder, exc) from None
                raise
        self._token = _ACTIVE.set(self)
        return self

    def _holds(self, folder: Path) -> bool:
        """Whether ``folder`` is this set's folder or lies inside it."""
        mine = Path(os.path.realpath(self.folder))
        return Path(os.path.realpath(folder)).is_relative_to(mine)

    def _relative(self, name: str) -> str:
        """``name`` of this nested set as a name of the set it is written in."""
        assert self._parent is not None
        mine = Path(os.path.realpath(self.folder))
        return (mine.relative_to(os.path.realpath(self._parent.folder)) / name).as_posix()

    def write(self, name: str, write: Callable[[Path], Any]) -> Path:
        """Write the set's file ``name`` (a path relative to the folder) whole;
        it is published where it belongs (the returned path) when the set closes."""
        final = self.folder / name
        if self._parent is not None:
            self._parent.write(self._relative(name), write)
        else:
            self._refuse_held_below(name)
            staged = self._staging / name
            try:
                make_folder(staged.parent)
            except OutputError as exc:  # the hidden folder is no name of the user's
                raise OutputError(
                    str(exc).replace(str(staged.parent), str(final.parent)),
                    path=str(final),
                    errno=exc.errno,
                ) from None
            atomic_write(staged, write, shown=final)
        self.files[name] = final
        return final

    def add(self, name: str, path: Path) -> None:
        """Count a file written by another writer (e.g. a nested set) in the set."""
        if name in self.files:
            return  # written as part of this set already
        if self._parent is not None:
            self._parent.add(self._relative(name), path)
        self.files[name] = path
        self._outside[name] = path

    def _staged(self, name: str) -> Path:
        """Where the set's file ``name`` lies until it is published."""
        if name in self._outside:
            return self._outside[name]
        if self._parent is not None:
            return self._parent._staged(self._relative(name))
        return self._staging / name

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        try:
            if self._parent is not None:
                if kind is None:
                    text = self._manifest_text()
                    self.write(self.manifest.name, lambda p: p.write_text(text, "utf-8"))
                return
            try:
                if kind is None:
                    staged = self._staging / self.manifest.name
                    atomic_write_text(staged, self._manifest_text(), shown=self.manifest)
                    with _signals_held():
                        self._publish()
            finally:
                with contextlib.suppress(OSError):
                    shutil.rmtree(self._staging)
                self._release()
        finally:
            if self._token is not None:
                _ACTIVE.reset(self._token)
                self._token = None

    def _manifest_text(self) -> str:
        import datetime
        import hashlib
        import json
        import socket
        import uuid

        from receval._version import __version__

        listed = {}
        for name in sorted(self.files):
            if name == self.manifest.name and name not in self._outside:
                continue
            path = self._staged(name)
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda f=f: f.read(1 << 20), b""):
                    digest.update(block)
            listed[name] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
        facts = {
            "receval": __version__,
            "command": self.command,
            "parameters": self.parameters,
            "generation": uuid.uuid4().hex,  # os.urandom: no global random state is drawn
            "host": socket.gethostname(),
            "started": self._started,
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "files": listed,
        }
        return json.dumps(facts, indent=2, default=str) + "\n"

    def _publish(self) -> None:
        """Move the complete new set (manifest in the hidden folder) into place."""
        new = files_listed(self._staging / self.manifest.name) or {}
        old = files_listed(self.manifest) or {}
        self.manifest.unlink(missing_ok=True)
        for name in new:
            staged = self._staging / name
            if os.path.lexists(staged):
                target = self.folder / name
                make_folder(target.parent)
                os.replace(staged, target)
        for name, facts in old.items():
            if name not in new:
                _remove_old(self.folder, name, facts)
        os.replace(self._staging / self.manifest.name, self.manifest)
        _sync_folder(self.folder)

    def _recover(self) -> None:
        """What a killed run left: its complete set published, an unfinished one removed."""
        if not os.path.lexists(self._staging):
            return
        if not self._staging.is_dir() or self._staging.is_symlink():
            raise OutputError(
                f"{self._staging} is {_kind(os.lstat(self._staging).st_mode)}, not receval's "
                "folder of unpublished files: remove it or write elsewhere",
                path=str(self._staging),
            )
        done = files_listed(self._staging / self.manifest.name)
        if done is not None:
            with _signals_held():
                self._publish()
            self._note(
                f"finished publishing the files of an interrupted run into {self.folder} "
                "(it was stopped while moving its complete set into place)"
            )
        elif any(self._staging.iterdir()):
            self._note(f"removed the unfinished files of an interrupted run ({self._staging})")
        shutil.rmtree(self._staging)

    def _refuse_held_above(self) -> None:
        """Refuse when a folder above this one is another run's (its own with a prefix)."""
        mine = Path(os.path.realpath(self.folder))
        for folder in ([mine] if self.prefix else []) + list(mine.parents):
            who = held_by_another(folder)
            if who is not None:
                raise OutputError(
                    f"{self.folder} is inside {folder}, which is being written by another "
                    f"receval run ({who}); wait for it to finish or write elsewhere",
                    path=str(self.folder),
                )

    def _refuse_inside_a_set(self) -> None:
        """Refuse to write a set into a folder whose files another set (in a
        folder above) lists in its manifest: that manifest would then list
        files that are no longer the ones it describes, and its readers would
        not know (a split written into the demo's ``split`` folder)."""
        mine = Path(os.path.realpath(self.folder))
        for above in mine.parents:
            listed = files_listed(above / MANIFEST)
            if not listed:
                continue
            here = mine.relative_to(above)
            ours = sorted(  # a data file first, the nested set's manifest last
                (n for n in listed if Path(n).is_relative_to(here)),
                key=lambda n: (Path(n).name == MANIFEST, n),
            )
            if ours:
                raise OutputError(
                    f"{self.folder} holds files of the set in {above} (its {MANIFEST} lists "
                    f"{ours[0]}): a new set here would leave that one's manifest listing other "
                    f"files; write elsewhere, or write {above} again whole",
                    path=str(self.folder),
                )

    def _refuse_held_below(self, name: str) -> None:
        """Refuse to write ``name`` into a subfolder that another run holds."""
        parts = Path(name).parts[:-1]
        below = (self.folder.joinpath(*parts[:i]) for i in range(1, len(parts) + 1))
        _refuse_held_in(self.folder / name, below)

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
                f"({_holder_text(fd)}); wait for it to finish or write elsewhere",
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
        key = _folder_key(self.folder)
        if key is not None:
            _HELD[key] = _HELD.get(key, 0) + 1
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
        key = _folder_key(self.folder)
        if key is not None and key in _HELD:
            _HELD[key] -= 1
            if not _HELD[key]:
                del _HELD[key]
        with contextlib.suppress(OSError):
            if os.lstat(self._lock).st_ino == os.fstat(fd).st_ino:  # ours, not a newcomer's
                os.unlink(self._lock)
        os.close(fd)  # closing releases the flock


def _folder_key(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _holder_text(fd: int) -> str:
    """Who holds (or held) the lock open at ``fd``, as its file says."""
    who = _lock_facts(fd)
    if not who:
        return "another process"
    return (
        f"{who.get('command')}, pid {who.get('pid')} on {who.get('host')}, "
        f"started {who.get('started')}"
    )


def held_by_another(folder: str | Path) -> str | None:
    """Who holds ``folder`` (its ``.receval.lock`` locked by another process),
    in words; None when nobody else does (no lock, a stale one, or this
    process's own)."""
    lock = Path(folder) / LOCK
    try:
        st = os.lstat(lock)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or _folder_key(Path(folder)) in _HELD:
        return None
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder_text(fd)
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases a shared lock taken on a stale file
    return None


def _refuse_held(target: Path) -> None:
    """Refuse to write ``target`` inside a folder another run holds."""
    folder = Path(os.path.realpath(target.parent))
    _refuse_held_in(target, (folder, *folder.parents))


def _refuse_held_in(target: Path, folders: Iterable[Path]) -> None:
    """Refuse to write ``target`` when one of ``folders`` is another run's."""
    for folder in folders:
        who = held_by_another(folder)
        if who is not None:
            raise OutputError(
                f"cannot write {target}: {folder} is being written by another receval run "
                f"({who}); wait for it to finish or write elsewhere",
                path=str(target),
            )


#: a temporary file of :func:`atomic_write`: ``.NAME.PID-XXXXXXXX.tmp``
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)-[A-Za-z0-9_]{8}\.tmp$")


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process
        return False
    return False


def _stale_temporaries(folder: Path, name: str | None = None) -> list[Path]:
    """The temporary files of :func:`atomic_write` in ``folder`` (of the target
    ``name`` only, when given) whose process is gone."""
    found = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            m = _TEMPORARY.match(entry.name)
            if m is None or (name is not None and m["name"] != name):
                continue
            if entry.is_file(follow_symlinks=False) and _gone(int(m["pid"])):
                found.append(Path(entry.path))
    return found


def _clean_temporaries(folder: Path, note: Callable[[str], None], depth: int = 4) -> None:
    """Remove the temporary files killed runs left in ``folder`` and its subfolders."""
    removed = 0
    for here, subfolders, _ in os.walk(folder):
        if len(Path(here).relative_to(folder).parts) >= depth:
            subfolders.clear()
        subfolders[:] = [d for d in subfolders if not d.endswith(STAGING)]
        for path in _stale_temporaries(Path(here)):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    if removed:
        note(f"removed {removed} temporary file(s) left in {folder} by runs that were killed")


def _fresh_folder(path: Path) -> None:
    """An empty folder at ``path`` (never a link)."""
    path.mkdir()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held back (delivered at the end) in the block:
    a set's few renames are done whole. Only the main thread can hold them."""
    import signal
    import threading

    wanted = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _remove_old(folder: Path, name: str, facts: Any) -> None:
    """Remove a file of the set being replaced that the new set does not have,
    if it is still the plain file of the size its manifest lists."""
    path = folder / name
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        size = facts.get("bytes") if isinstance(facts, dict) else None
        if stat.S_ISREG(st.st_mode) and size == st.st_size:
            path.unlink()


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # the renames, on file systems that need it
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


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
