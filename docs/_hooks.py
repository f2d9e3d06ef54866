"""MkDocs hooks (mkdocs.yml ``hooks:``): the pages generated from the code, and links
to repository files outside docs/.

* ``on_config``: the generated pages are made (``docs/_reference.py``) and the
  metric families' pages and the API's other pages put into the nav, after
  ``reference/metrics/index.md`` and ``reference/api.md``.
* ``on_files``: the generated pages, and ``changelog.md`` (``CHANGELOG.md`` as it
  is), are added to the site; none is a file under docs/.
* ``on_page_markdown``: a link from a page to a file of the repository outside
  docs/ (``../src/receval/...``, ``../benchmarks/README.md``) is checked (the file
  must exist, else the build warns, which ``--strict`` makes an error) and pointed
  at the repository (``repo_url``) when mkdocs.yml sets one; without one it becomes
  the file's path in code. A link to ``../README.md`` is a link to the home page.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
log = logging.getLogger("mkdocs.plugins.receval")

_generated: dict[str, str] = {}


def _reference() -> Any:
    """``docs/_reference.py``, loaded from its path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("receval_docs_reference", DOCS / "_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _title(markdown: str) -> str:
    first = markdown.lstrip().splitlines()[0]
    return first.removeprefix("# ").strip()


def _extend_nav(nav: list[Any], after: str, pages: list[str]) -> bool:
    """Put ``pages`` (with their titles) right after the nav entry ``after``."""
    for i, entry in enumerate(nav):
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if value == after:
            there = {next(iter(e.values())) for e in nav if isinstance(e, dict)}
            new = [p for p in pages if p not in there]  # a config built twice: once
            nav[i + 1 : i + 1] = [{_title(_generated[p]): p} for p in new]
            return True
        if isinstance(value, list) and _extend_nav(value, after, pages):
            return True
    return False


def on_config(config: Any) -> Any:
    """Make the generated pages and put them into the nav."""
    _generated.clear()
    _generated.update(_reference().pages(config.repo_url))
    for first, folder in (
        ("reference/metrics/index.md", "reference/metrics/"),
        ("reference/api.md", "reference/api/"),
    ):
        more = [p for p in _generated if p.startswith(folder) and p != first]
        if config.nav is not None and not _extend_nav(config.nav, first, more):
            log.warning("mkdocs.yml's nav has no %s: the pages after it are left out", first)
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages and the changelog to the site."""
    pages = dict(_generated)
    pages["changelog.md"] = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for path, markdown in pages.items():
        if files.get_file_from_path(path) is not None:
            log.warning("docs/%s exists, but the build generates it: remove the file", path)
            files.remove(files.get_file_from_path(path))
        files.append(File.generated(config, path, content=markdown))
    return files


#: an inline link or image ``[text](target "title")``
_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)"
)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"(`+)[^`].*?\1", re.S)


def retarget(target: str, base: Path, page: str, repo_url: str | None) -> str | None:
    """Where a link written in a file of folder ``base`` should point from the page
    ``page`` (its path under docs/); None: leave it as it is, "": no link (the
    file's path in code instead). A link to a repository file that does not exist
    is left, with a warning."""
    if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
        return None
    path, _, anchor = target.partition("#")
    resolved = (base / path).resolve()
    if not (resolved == ROOT or ROOT in resolved.parents) or resolved == DOCS / page:
        return None
    hash_ = f"#{anchor}" if anchor else ""
    up = "../" * page.count("/")
    if DOCS in resolved.parents:  # a page: relative to where the page is served from
        if base == (DOCS / page).parent:
            return None
        return up + resolved.relative_to(DOCS).as_posix() + hash_
    rel = resolved.relative_to(ROOT).as_posix()
    if not resolved.exists():
        log.warning("docs/%s links to %s: no such file in the repository", page, rel)
        return None
    if rel == "README.md":  # the home page is the README's successor
        return f"{up}index.md"
    if not repo_url:
        return ""
    kind = "tree" if resolved.is_dir() else "blob"
    return f"{repo_url.rstrip('/')}/{kind}/main/{rel}{hash_}"


def _links(text: str, base: Path, page: str, repo_url: str | None) -> str:
    def one(m: re.Match[str]) -> str:
        target = retarget(m["target"], base, page, repo_url)
        if target is None:
            return m.group(0)
        if target == "":
            rel = (base / m["target"].partition("#")[0]).resolve().relative_to(ROOT)
            return f"{m['text']} (`{rel.as_posix()}`)"
        return f"{m['bang']}[{m['text']}]({target}{m['title'] or ''})"

    return _LINK.sub(one, text)


def _outside_code(text: str, pattern: re.Pattern[str], change: Any) -> str:
    """``change`` applied to the parts of ``text`` that ``pattern`` does not match."""
    out, last = [], 0
    for m in pattern.finditer(text):
        out += [change(text[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join([*out, change(text[last:])])


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links to repository files outside docs/ (see the module's docstring); the
    changelog's links are read from the repository's root, where CHANGELOG.md is.
    Code blocks and code spans are left alone."""
    name = page.file.src_uri
    base = ROOT if name == "changelog.md" else (DOCS / name).parent

    def change(part: str) -> str:
        return _links(part, base, name, config.repo_url)

    return _outside_code(markdown, _FENCE, lambda t: _outside_code(t, _SPAN, change))
