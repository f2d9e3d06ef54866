"""Every example of README.md and docs/*.md, run as written (issue #32 point 4).

One test per fenced ``python`` or ``bash``/``shell`` block, named by page and line
(``test_example[docs/inputs.md:42]``). The rules, as docs/contributing.md states
them ("Examples that run"):

- a page's blocks run in order; Python blocks in one namespace, in this process,
  shell blocks as ``bash -e -o pipefail`` subprocesses; both in one temporary
  working folder per page, which holds a copy of ``examples/`` and the folder
  ``demo/`` that ``receval demo --users 1000 --out demo`` writes;
- shell blocks find ``receval`` (and ``python``) in this interpreter's ``bin``;
- a ``text`` block right after a code block (blank lines between, nothing else)
  is its output: the block's stdout (shell: stdout and stderr, as a terminal
  shows them), compared line by line with ``...`` matching anything;
- in Python, a top-level expression ending in ``# -> VALUE`` must have that
  ``repr``, ``...`` again matching anything;
- an HTML comment on the line before a block changes how it runs:
  ``<!-- docs: not run: REASON -->`` (never run; the reason is on the page),
  ``<!-- docs: spark -->`` (runs under ``pytest -m spark``, as the Spark tests do),
  ``<!-- docs: exit N -->`` (a shell block that must exit with N); one mark a block.

A block that does not run is never a test that skips: the page says why, and
:func:`test_every_block_runs_or_says_why` holds every mark to that. (Skips would
also change the count of skipped tests that the README announces.)
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.required import imported

ROOT = Path(__file__).resolve().parents[1]
#: the pages whose examples run: docs/reference/ is generated, and not globbed here
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON = {"python", "py"}
SHELL = {"bash", "shell", "sh"}
OUTPUT = "text"
#: packages of the ``test`` extra an example may import: missing, the example skips
#: as every test of them does (tests/required.py), or fails under RECEVAL_REQUIRE_EXTRAS
EXTRAS = {"mlflow", "wandb", "torch", "lightning", "torchmetrics", "polars", "matplotlib"}
#: each page's working folder holds demo/: ``receval demo --users DEMO_USERS --out demo``
DEMO_USERS = 1000


FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
MARK = re.compile(r"^\s*<!--\s*docs:\s*(?P<what>.*?)\s*-->\s*$")
CHECK = re.compile(r"#\s*->\s?(?P<want>.*)$")


@dataclass
class Block:
    """A fenced block of a page: where, its language, its text, what it shows."""

    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marks: list[str] = field(default_factory=list)
    output: str | None = None  # the text block right after it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in PYTHON | SHELL

    @property
    def not_run(self) -> str | None:
        """The reason the page gives for not running this block, else None."""
        for mark in self.marks:
            if mark.startswith("not run"):
                return mark.partition(":")[2].strip()
        return None

    @property
    def exit(self) -> int:
        for mark in self.marks:
            if m := re.fullmatch(r"exit (\d+)", mark):
                return int(m.group(1))
        return 0


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of one page, in order, with their marks and outputs."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(root).as_posix()
    found: list[Block] = []
    last_end = -2  # the line index just after the previous block's closing fence
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, fence = opened.group("indent"), opened.group("fence")
        end = i + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence) and lines[end].strip().strip(fence[0]) == ""
        ):
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end]
        ]
        block = Block(page, i + 1, opened.group("lang").lower(), "\n".join(body) + "\n")
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0 and (mark := MARK.match(lines[before])):
            block.marks = [mark.group("what")]
        gap = lines[last_end:i] if last_end >= 0 else ["x"]
        if block.lang == OUTPUT and found and found[-1].runs and all(not g.strip() for g in gap):
            found[-1].output = block.code
        found.append(block)
        last_end = end + 1
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]
RUNNABLE = [b for b in ALL if b.runs and b.not_run is None]


def _param(block: Block) -> Any:
    marks = [pytest.mark.spark] if "spark" in block.marks else []
    return pytest.param(block, id=block.id, marks=marks)


# -- the working folder and the state of each page -------------------------------------


class Page:
    """One page's working folder and Python namespace, its blocks run in order."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        self.ran: set[str] = set()  # the ids of the blocks run so far


@pytest.fixture(scope="session")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``receval demo --users 1000 --out demo`` writes, made once for every page
    (by the function the command calls, here: no second interpreter to start)."""
    import receval

    demo = tmp_path_factory.mktemp("docs-demo") / "demo"
    receval.run_demo(demo, users=DEMO_USERS, quiet=True)
    return demo


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory, demo_folder: Path) -> Any:
    made: dict[str, Page] = {}

    def page(name: str) -> Page:
        if name not in made:
            folder = tmp_path_factory.mktemp(Path(name).stem)
            shutil.copytree(ROOT / "examples", folder / "examples")
            shutil.copytree(demo_folder, folder / "demo")
            made[name] = Page(folder)
        return made[name]

    return page


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(PYTHONUNBUFFERED="1", COLUMNS="100", NO_COLOR="1", TERM="dumb")
    return env


# -- running a block --------------------------------------------------------------------


ELIDED = re.compile(r"(?P<number>-?\d+\.\d+)\.\.\.|\.\.\.")
NUMBER = r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"


def _same(want: str, got: str) -> bool:
    """Whether ``got`` is what the page shows, line by line (trailing spaces aside).

    ``...`` stands for anything; a number followed by ``...`` (``0.2917...``) for a
    number whose first digits, or whose value rounded to that many decimals, it is.
    """
    want, got = ("\n".join(x.rstrip() for x in s.strip("\n").splitlines()) for s in (want, got))
    parts, shown, at = [], [], 0
    for m in ELIDED.finditer(want):
        parts += [re.escape(want[at : m.start()]), NUMBER if m.group("number") else ".*?"]
        shown += [m.group("number")] if m.group("number") else []
        at = m.end()
    found = re.fullmatch("".join([*parts, re.escape(want[at:])]), got, re.DOTALL)
    if not found:
        return False
    for digits, value in zip(shown, found.groups(), strict=True):
        decimals = len(digits.split(".")[1])
        if not (value.startswith(digits) or round(float(value), decimals) == float(digits)):
            return False
    return True


def _checks(block: Block) -> dict[int, str]:
    """Line (1-based, in the block) -> the value its ``# -> VALUE`` comment shows.

    A comment alone on its line shows the value of the expression that ends on
    the line above: it is filed under that line.
    """
    found = {}
    tokens = tokenize.generate_tokens(io.StringIO(block.code).readline)
    for tok in tokens:
        if tok.type == tokenize.COMMENT and (m := CHECK.match(tok.string)):
            alone = tok.line.strip().startswith("#")
            found[tok.start[0] - alone] = m.group("want").strip()
    return found


def _needed_extras(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if name.split(".")[0] in EXTRAS:
                imported(name.split(".")[0])


@contextlib.contextmanager
def _environment() -> Any:
    """PATH as shell blocks have it, and the environment as it was after the block."""
    saved = dict(os.environ)
    os.environ["PATH"] = _env()["PATH"]  # the processes a block starts (Spark's workers)
    try:
        yield
    finally:
        for name in set(os.environ) - set(saved):
            del os.environ[name]
        os.environ.update(saved)


def run_python(block: Block, page: Page) -> str:
    """Run a Python block statement by statement; check ``# ->``; return its stdout."""
    tree = ast.parse(block.code, block.page)
    ast.increment_lineno(tree, block.line)  # tracebacks name the page's lines
    _needed_extras(tree)
    checks = _checks(block)
    unused = dict(checks)
    out = io.StringIO()
    with contextlib.chdir(page.folder), contextlib.redirect_stdout(out), _environment():
        for stmt in tree.body:
            last = stmt.end_lineno - block.line  # type: ignore[operator]
            if isinstance(stmt, ast.Expr) and last in checks:
                unused.pop(last)
                expr = ast.Expression(stmt.value)
                value = eval(compile(expr, block.page, "eval"), page.namespace)
                got, want = repr(value), checks[last]
                assert _same(want, got), f"{block.page}:{stmt.lineno}: shows {want}, is {got}"
            else:
                code = compile(ast.Module([stmt], []), block.page, "exec")
                exec(code, page.namespace)
    assert not unused, f"'# ->' on lines that end no expression: {sorted(unused)}"
    return out.getvalue()


def run_shell(block: Block, page: Page) -> str:
    """Run a shell block in the page's folder; check its exit code; return its output."""
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=page.folder,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=240,
    )
    assert done.returncode == block.exit, (
        f"{block.id} exited {done.returncode}, not {block.exit}:\n{done.stdout}"
    )
    return done.stdout


def run(block: Block, page: Page) -> None:
    output = run_python(block, page) if block.lang in PYTHON else run_shell(block, page)
    if block.output is not None:
        assert _same(block.output, output), (
            f"{block.id} prints\n{output}\nwhere the page shows\n{block.output}"
        )


@pytest.mark.parametrize("block", [_param(b) for b in RUNNABLE])
def test_example(block: Block, pages: Any) -> None:
    """The block runs as the page shows it, after the page's blocks before it."""
    page = pages(block.page)
    for earlier in RUNNABLE[: RUNNABLE.index(block)]:  # run alone (-k): the page's first
        if (
            earlier.page == block.page
            and earlier.id not in page.ran
            and "spark" not in earlier.marks
        ):
            page.ran.add(earlier.id)
            try:
                run(earlier, page)
            except Exception as e:
                raise AssertionError(f"the page's block {earlier.id} failed first: {e}") from e
    page.ran.add(block.id)
    run(block, page)


# -- the marks --------------------------------------------------------------------------


def test_every_block_runs_or_says_why() -> None:
    """Every Python and shell block runs, or its mark says why it does not; every
    mark is one of the three, on a block it applies to."""
    wrong = []
    for b in ALL:
        for mark in b.marks:
            if mark.startswith("not run"):
                if len(b.not_run or "") < 10:
                    wrong.append(f"{b.id}: 'not run' needs its reason: {mark!r}")
            elif mark == "spark" or re.fullmatch(r"exit \d+", mark):
                if not b.runs:
                    wrong.append(f"{b.id}: {mark!r} on a {b.lang or 'plain'} block")
            else:
                wrong.append(f"{b.id}: unknown mark {mark!r}")
        if b.lang in {"console", "pycon", "sh-session"}:
            wrong.append(f"{b.id}: write a {b.lang} example as python/bash plus a text block")
    assert not wrong, "\n".join(wrong)
    assert len(RUNNABLE) >= 40  # the pages' examples are found at all


def test_the_parser_finds_blocks_marks_and_outputs(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n<!-- docs: not run: needs a cluster -->\n```bash\nreceval x\n```\n\n"
        "```python\nprint(1)\n```\n\n```text\n1\n```\n\n- item\n\n  ```bash\n  ls\n  ```\n"
    )
    found = blocks(page, tmp_path)
    assert [(b.line, b.lang) for b in found] == [
        (4, "bash"),
        (8, "python"),
        (12, "text"),
        (18, "bash"),
    ]
    assert found[0].not_run == "needs a cluster"
    assert found[1].output == "1\n" and found[0].output is None
    assert found[3].code == "ls\n"


def test_a_wrong_output_or_value_fails(tmp_path: Path) -> None:
    """The checks can fail: a shown value or output that differs is an error."""
    page = Page(tmp_path)
    with pytest.raises(AssertionError, match="shows 3"):
        run(Block("p.md", 1, "python", "1 + 1  # -> 3\n"), page)
    run(Block("p.md", 1, "python", "0.25 + 0.04  # -> 0.29...\n"), page)
    run(Block("p.md", 1, "python", "7 / 24  # -> 0.2917...\n"), page)  # rounded
    run(Block("p.md", 1, "python", "7 / 24  # -> 0.2916...\n"), page)  # its first digits
    with pytest.raises(AssertionError, match=r"shows 0\.2918"):
        run(Block("p.md", 1, "python", "7 / 24  # -> 0.2918...\n"), page)
    run(Block("p.md", 1, "python", "print('a b', [1.0])\n", output="a ... [1...]\n"), page)
    with pytest.raises(AssertionError, match="where the page shows"):
        run(Block("p.md", 1, "bash", "echo 2\n", output="1\n"), page)
    with pytest.raises(AssertionError, match="exited 3, not 0"):
        run(Block("p.md", 1, "bash", "exit 3\n"), page)
    run(Block("p.md", 1, "bash", "echo a; false\n", ["exit 1"], output="a\n"), page)


# -- the count of skipped tests the README announces -------------------------------------

#: "every test passes but N, which read trec_eval 10.0's own test files"
_SKIPS_SAID = re.compile(r"every test passes but (\d+), which read trec_eval")


def test_the_readme_says_how_many_tests_skip_without_trec_eval_s_files(
    request: pytest.FixtureRequest,
) -> None:
    """The README (and the two pages that repeat it) name the number of tests marked
    ``trec_files``: those skip on a clean clone (issue #32 point 6). Counted from this
    run's own collection, so only when the run collected every test module whole."""
    root = Path(__file__).resolve().parents[1]
    config = request.config
    asked = {Path(a.split("::")[0]).resolve() for a in config.args}
    if not asked <= {root, root / "tests"} or config.option.keyword or config.option.deselect:
        pytest.skip("counts the marked tests only when the whole suite is collected")
    items = request.session.items
    marked = sum(item.get_closest_marker("trec_files") is not None for item in items)
    for page in ("README.md", "docs/index.md", "docs/getting-started.md"):
        said = _SKIPS_SAID.findall((root / page).read_text(encoding="utf-8").replace("\n", " "))
        assert said == [str(marked)], f"{page} says {said}; {marked} tests are marked trec_files"
