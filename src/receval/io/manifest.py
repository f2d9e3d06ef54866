"""Reading files a receval set wrote: each checked against its folder's manifest.

A folder written by ``receval split``, ``demo`` or a report's PNGs holds a
``manifest.json`` listing every file of the set with its size and SHA-256
(:class:`receval.io.write.OutputSet`). When an input file lies in such a folder
(or one level below it), the readers check it:

- a file the manifest lists whose size or SHA-256 differs was changed (or
  replaced by another run's file) after the set was written: *"changed since
  receval split wrote it ..."*;
- a file in the manifest's own folder that it does not list is not part of the
  set (left by another run, or added since): *"not part of the set ..."*;
- two inputs of one command listed by the manifests of two different runs of
  ``receval split`` (a train of one split, a test of another) do not belong
  together: :func:`apart`.

These are notes, not errors (the file may have been changed on purpose): the
command line prints them as ``PATH: ...`` on stderr, the evaluation adds them to
``Result.notes``. A ``manifest.json`` that is not receval's (no ``receval`` and
``files`` keys) is ignored. Each file is hashed once per process while its size,
time and inode stay the same.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST",
    "Listed",
    "apart",
    "files_listed",
    "inside_name",
    "listed_in",
    "notes_for",
    "read_manifest",
    "set_notes",
]

#: The name of a set's manifest (``PREFIXmanifest.json`` for a prefixed split);
#: :class:`receval.io.write.OutputSet` writes it.
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Listed:
    """Where a file stands in the manifest of a receval set."""

    manifest: Path
    name: str  # the file's name in the manifest (relative to its folder)
    command: str
    generation: str
    finished: str
    facts: Mapping[str, Any] | None  # its size and hash; None: the manifest does not list it


def _manifest(path: Path) -> dict[str, Any] | None:
    """A receval manifest's content, or None (none, unreadable or someone else's)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _read_manifest(str(path), st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=64)
def _read_manifest(path: str, size: int, mtime: int, inode: int) -> dict[str, Any] | None:
    return read_manifest(Path(path))


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A receval manifest's content read now (no cache), or None: none,
    unreadable, not JSON, or someone else's (no ``receval`` key, no ``files``
    table). The one reader of manifests, for the readers of a set
    (:func:`notes_for`, cached by the file's identity) and for the writer
    (:class:`receval.io.write.OutputSet`, which reads what it staged)."""
    try:
        facts = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(facts, dict) or "receval" not in facts:
        return None
    return facts if isinstance(facts.get("files"), dict) else None


def files_listed(path: Path) -> dict[str, Any] | None:
    """The files a receval manifest at ``path`` lists (name -> facts), only
    the names that stay inside its folder; None when there is no such manifest."""
    facts = read_manifest(path)
    if facts is None:
        return None
    return {name: f for name, f in facts["files"].items() if inside_name(name)}


def inside_name(name: Any) -> bool:
    """Whether a manifest's file name stays inside its folder (relative, no ``..``)."""
    if not isinstance(name, str) or not name:
        return False
    return not Path(name).is_absolute() and ".." not in Path(name).parts


def _candidates(path: Path) -> list[tuple[Path, str]]:
    """The manifests that may list ``path``, nearest first, with its name in each:
    its folder's (``manifest.json``, or ``PREFIXmanifest.json`` for a prefixed
    split's ``PREFIXtrain.parquet``) and its parent folder's."""
    out = [(path.parent / MANIFEST, path.name)]
    for part in ("train.parquet", "test.parquet", "validation.parquet", "split.json"):
        if path.name.endswith(part) and path.name != part:
            out.append((path.parent / f"{path.name[: -len(part)]}{MANIFEST}", path.name))
    out.append((path.parent.parent / MANIFEST, f"{path.parent.name}/{path.name}"))
    return out


def listed_in(path: str | os.PathLike[str]) -> Listed | None:
    """The nearest receval manifest that lists ``path`` (or, in ``path``'s own
    folder, one that does not), or None when no receval set holds it."""
    p = Path(path)
    if not p.is_file():
        return None
    for manifest, name in _candidates(p):
        facts = _manifest(manifest)
        if facts is None:
            continue
        entry = facts["files"].get(name)
        if entry is None and manifest.parent != p.parent:
            continue  # the parent's manifest need not list its subfolders' files
        return Listed(
            manifest=manifest,
            name=name,
            command=str(facts.get("command", "")),
            generation=str(facts.get("generation") or facts.get("finished") or manifest),
            finished=str(facts.get("finished", "")),
            facts=entry if isinstance(entry, dict) else None,
        )
    return None


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime: int, inode: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def notes_for(path: str | os.PathLike[str]) -> list[str]:
    """What the manifest of ``path``'s set says about it: nothing when it is
    the file the set wrote (or no set holds it), else one note."""
    where = listed_in(path)
    if where is None:
        return []
    by = f"receval {where.command} wrote {where.manifest}"
    if where.finished:
        by += f" (finished {where.finished})"
    if where.facts is None:
        return [
            f"not part of the set {where.manifest} lists ({by}): another run's file, or added since"
        ]
    try:
        st = os.stat(path)
        same = st.st_size == where.facts.get("bytes") and _sha256(
            os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ino
        ) == where.facts.get("sha256")
    except OSError:
        return []
    if same:
        return []
    return [
        f"changed since {by}: its size or SHA-256 differs from the manifest's, so it is not "
        "the file of that run (files of different runs do not belong together)"
    ]


def apart(inputs: Mapping[str, Any]) -> list[str]:
    """Notes on inputs (label -> path) that come from different runs of
    ``receval split``: e.g. ``--train`` of one split, ``--test`` of another."""
    splits: dict[str, tuple[str, Listed]] = {}
    for label, path in inputs.items():
        if path is None or not isinstance(path, (str, os.PathLike)):
            continue
        where = listed_in(path)
        if where is not None and where.command == "split" and where.facts is not None:
            splits.setdefault(where.generation, (label, where))
    if len(splits) < 2:
        return []
    named = ", ".join(f"{label} from {w.manifest}" for label, w in splits.values())
    return [
        f"the inputs come from {len(splits)} different runs of receval split ({named}): "
        "a split's parts belong together only with each other"
    ]


def set_notes(inputs: Mapping[str, Any]) -> list[str]:
    """Every note of :func:`notes_for` (``PATH: ...``) and :func:`apart` on
    the inputs (label -> path; anything but a path is skipped)."""
    notes = []
    for path in inputs.values():
        if isinstance(path, (str, os.PathLike)):
            notes += [f"{os.fspath(path)}: {n}" for n in notes_for(path)]
    return notes + apart(inputs)
