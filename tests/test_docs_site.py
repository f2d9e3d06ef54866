"""The docs site (issue #32 points 3 and 5): ``mkdocs build --strict`` passes, the
pages generated from the code hold what the code declares (every metric, every
command and option, the public API), and the site, served over HTTP, renders in
headless Chromium.

One build for the module (a real ``python -m mkdocs`` subprocess into a temporary
folder). Each check of a generated page compares the page with the code, both
ways, so that a metric, a command or a flag missing from the site, or on the site
but not in the code, fails. ``RECEVAL_SCREENSHOTS=DIR`` also copies the
screenshots to DIR, for a person to look at.
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.required import headless_chromium, imported, need_chromium

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1280, 2000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``mkdocs build --strict``."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        imported(module)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    took = time.perf_counter() - start
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stderr[-6000:]}"
    assert "WARNING" not in run.stderr, run.stderr[-6000:]
    print(f"mkdocs build --strict: {took:.1f} s")
    return out


def page(site: Path, path: str) -> str:
    """The HTML of a page given by its Markdown path (``reference/cli.md``)."""
    stem = path.removesuffix(".md")
    folder = stem.removesuffix("index").rstrip("/")
    return (site / folder / "index.html").read_text(encoding="utf-8")


def plain(markup: str) -> str:
    """An HTML fragment's text: tags dropped, entities read, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def said(text: Any) -> str:
    """A declaration's text as a page shows it: code-span backticks gone, spaces
    collapsed (tags next to punctuation put spaces in :func:`plain`'s output, so
    both sides are compared without spaces before punctuation)."""
    return _tight(" ".join(str(text).replace("`", "").split()))


def _tight(text: str) -> str:
    return re.sub(r"\s+([,.;:)\]])|([(\[])\s+", r"\1\2", text)


def sections(markup: str, level: int = 2) -> dict[str, str]:
    """id -> the HTML from a heading of ``level`` to the next one."""
    parts = re.split(rf"(<h{level} id=\"[^\"]+\")", markup)
    return {
        re.search(r'id="([^"]+)"', head).group(1): body  # type: ignore[union-attr]
        for head, body in zip(parts[1::2], parts[2::2], strict=True)
    }


# -- 1. the build and the generated pages --------------------------------------------


def test_every_metric_is_on_its_family_page(site: Path) -> None:
    from receval.metrics.registry import REGISTRY

    pages = sorted((site / "reference" / "metrics").glob("*/index.html"))
    assert len(pages) >= 5, pages
    found: dict[str, str] = {}
    for path in pages:
        for name, body in sections(path.read_text(encoding="utf-8")).items():
            assert name not in found, f"{name} on two pages"
            found[name] = body
    # both ways: no metric missing, none on the site that the registry lacks
    assert sorted(found) == sorted(REGISTRY)
    for name, d in REGISTRY.items():
        text = _tight(plain(found[name]))
        assert _tight(" ".join(d.formula.split())) in text, name  # in code, as written
        for what in (d.description, d.undefined, d.notes, *d.aliases):
            assert said(what) in text, (name, what)
        for p in d.params:
            assert said(p.description) in text, (name, p.name)
            assert re.search(rf"<code>{re.escape(p.name)}</code>", found[name]), (name, p.name)
            default = "None" if p.default is None else p.format(p.default)
            assert f"<code>{html.escape(default, quote=False)}</code>" in found[name], p.name
            for choice in p.choices or ():
                assert f"<code>{html.escape(choice, quote=False)}</code>" in found[name]
        # the output of `receval explain` is there, as the command prints it
        assert f"receval explain {name}" in plain(found[name])
    index = page(site, "reference/metrics/index.md")
    for name in REGISTRY:
        assert re.search(rf'href="[a-z_]+/#{name}"', index), f"index does not link {name}"


def test_the_explain_blocks_are_what_the_command_prints(site: Path) -> None:
    """One metric's block, against a real ``receval explain`` process."""
    run = subprocess.run(
        [sys.executable, "-m", "receval", "explain", "ndcg"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    body = sections(page(site, "reference/metrics/ranking.md"))["ndcg"]
    block = re.search(r"<code>(.*?)</code></pre>", body.split("receval explain ndcg", 1)[1], re.S)
    assert block is not None
    shown = html.unescape(re.sub(r"<[^>]+>", "", block.group(1)))
    assert shown.strip() == run.stdout.strip()


def _click_commands() -> tuple[Any, Any, dict[str, Any]]:
    import click
    import typer.main

    from receval.cli import app

    group = typer.main.get_command(app)
    ctx = click.Context(group, info_name="receval")
    return group, ctx, {n: group.get_command(ctx, n) for n in group.list_commands(ctx)}


def _flags(params: list[Any]) -> set[str]:
    return {
        o for p in params if not p.hidden for o in (*p.opts, *p.secondary_opts) if o.startswith("-")
    }


def test_every_command_and_option_is_on_the_cli_page(site: Path) -> None:
    import click

    group, ctx, commands = _click_commands()
    markup = page(site, "reference/cli.md")
    found = sections(markup)
    assert sorted(found) == sorted(commands)  # both ways
    head = markup.split('<h2 id="', 1)[0]
    assert _flags(group.get_params(ctx)) <= set(re.findall(r"<code>(-[^<]+)</code>", head))
    for name, command in commands.items():
        sub = click.Context(command, info_name=name, parent=ctx)
        params = command.get_params(sub)
        body = found[name]
        shown = set(re.findall(r"<code>(--?[a-z][^<]*)</code>", body))
        assert shown == _flags(params), name  # both ways: every flag, no stale one
        text = _tight(plain(body))
        assert said(_unmarked(command.help).split("\n\n")[0]) in text, name
        for p in params:
            if p.help and not p.hidden:
                assert said(plain(_unmarked(p.help))) in text, (name, p.name)
            if p.param_type_name == "argument":
                label = getattr(p, "display_name_raw", None) or p.name.upper()
                assert f"<code>{label}</code>" in body, (name, label)


def _unmarked(text: str) -> str:
    from rich.text import Text

    return Text.from_markup(text).plain


def test_the_api_pages_document_the_public_names(site: Path) -> None:
    import inspect

    import receval

    markup = page(site, "reference/api.md")
    assert 'id="receval.evaluation.api.evaluate"' in markup
    evaluate = sections(markup)["receval.evaluation.api.evaluate"]
    assert "receval.evaluate" in plain(evaluate)
    first = inspect.getdoc(receval.evaluate).split("\n\n")[0]  # type: ignore[union-attr]
    assert said(first) in _tight(plain(evaluate))
    for param in inspect.signature(receval.evaluate).parameters:
        assert f"<code>{param}</code>" in evaluate or f"<b>{param}</b>" in evaluate, param
    every = markup + "".join(
        p.read_text(encoding="utf-8") for p in (site / "reference" / "api").glob("*/index.html")
    )
    for name in receval.__all__:
        if name != "__version__":
            module = getattr(receval, name).__module__
            assert f'id="{module}.{name}"' in every, name
    assert ":func:" not in plain(every) and ":class:" not in plain(every)


def test_the_guides_and_the_changelog_are_there(site: Path) -> None:
    import yaml

    nav = yaml.safe_load(
        re.sub(r"!!python/\S+", "", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    )["nav"]

    def leaves(entry: Any) -> Iterator[str]:
        if isinstance(entry, str):
            yield entry
        elif isinstance(entry, dict):
            for value in entry.values():
                yield from leaves(value)
        else:
            for value in entry:
                yield from leaves(value)

    for path in leaves(nav):
        assert page(site, path), path
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = next(line for line in changelog.splitlines() if line.startswith("## "))
    assert plain(first.removeprefix("## ")) in plain(page(site, "changelog.md"))


def _hooks() -> Any:
    import importlib.util

    imported("mkdocs")
    spec = importlib.util.spec_from_file_location("receval_docs_hooks", ROOT / "docs/_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_links_to_repository_files_outside_docs(caplog: pytest.LogCaptureFixture) -> None:
    hooks = _hooks()
    docs, root = hooks.DOCS, hooks.ROOT
    url = "https://example.org/receval"
    # a repository file: its path in code without repo_url, the repository's page with it
    assert hooks.retarget("../benchmarks/README.md", docs, "groups.md", None) == ""
    assert (
        hooks.retarget("../benchmarks/README.md#issue-20", docs, "groups.md", url)
        == f"{url}/blob/main/benchmarks/README.md#issue-20"
    )
    assert hooks.retarget("../src/receval", docs, "x.md", url) == f"{url}/tree/main/src/receval"
    # the README is the home page, from wherever the page is
    assert hooks.retarget("../../README.md", docs / "reference", "reference/x.md", None) == (
        "../index.md"
    )
    # pages, anchors and URLs are mkdocs' to check; the changelog's links are from the root
    for target in ("options.md#x", "https://example.org", "#here", "/reference/cli.md"):
        assert hooks.retarget(target, docs, "compare.md", url) is None
    assert hooks.retarget("docs/options.md#x", root, "changelog.md", None) == "options.md#x"
    # a file that does not exist warns (an error under --strict) and is left as written
    with caplog.at_level("WARNING"):
        assert hooks.retarget("../no_such_file.py", docs, "compare.md", url) is None
    assert "no_such_file.py: no such file in the repository" in caplog.text
    # code spans and blocks are left alone
    text = "[a](../setup.py) `[b](../setup.py)`\n```\n[c](../setup.py)\n```\n"

    def change(part: str) -> str:
        return hooks._links(part, docs, "x.md", None)

    out = hooks._outside_code(
        text, hooks._FENCE, lambda t: hooks._outside_code(t, hooks._SPAN, change)
    )
    assert out == "a (`setup.py`) `[b](../setup.py)`\n```\n[c](../setup.py)\n```\n"


# -- 2. served, rendered in headless Chromium ------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free port of 127.0.0.1 (a thread of this process)."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


RENDERED = {
    "home": ("", "receval"),
    "metric-family": ("reference/metrics/ranking/", "ndcg"),
    "api": ("reference/api/", "receval.evaluate"),
    "cli": ("reference/cli/", "receval evaluate"),
}


@pytest.mark.parametrize("name", list(RENDERED))
def test_a_page_renders_in_headless_chromium(served: str, name: str, tmp_path: Path) -> None:
    need_chromium()
    mpimg = imported("matplotlib.image")
    path, expected = RENDERED[name]
    with urllib.request.urlopen(served + path, timeout=30) as response:
        assert response.status == 200
        assert expected in plain(response.read().decode("utf-8"))
    shot = tmp_path / f"{name}.png"
    with tempfile.TemporaryDirectory() as profile:
        size = f"--window-size={WIDTH},{HEIGHT}"
        run = headless_chromium(f"--screenshot={shot}", size, served + path, profile=profile)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    if os.environ.get("RECEVAL_SCREENSHOTS"):
        folder = Path(os.environ["RECEVAL_SCREENSHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, folder / shot.name)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = (mpimg.imread(shot)[..., :3] * 255).round().astype(np.uint8)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    colours = np.unique(pixels.reshape(-1, 3)[::37], axis=0)
    assert len(colours) > 20, "the screenshot is (nearly) one colour"
    # the theme's stylesheet was applied: Material's indigo header bar is at the top
    top = pixels[:40].reshape(-1, 3).astype(int)
    assert (np.abs(top - [0x3F, 0x51, 0xB5]).sum(axis=1) < 30).mean() > 0.5
