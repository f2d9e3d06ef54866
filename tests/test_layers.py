"""The package's layers: imports point down, never up, and never in a circle.

Every ``import`` of every module counts, function-level ones included (they
are cycles all the same, only hidden until run time). The layers, bottom
first, are documented in README.md ("Layout").
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "receval"

# bottom first; a module may import its own layer or any layer below it
LAYERS = [
    (
        "base",
        (
            "receval.errors",
            "receval._version",
            "receval._accel",
            "receval._progress",
            "receval._malloc",
            "receval._lazy",
            "receval._workspace",
            "receval._native",
            "receval.ids",
            "receval.records",
            "receval.exact",
        ),
    ),
    ("metrics", ("receval.metrics",)),
    ("engines", ("receval.engines",)),
    ("io", ("receval.io",)),
    ("evaluation", ("receval.evaluation",)),
    ("analysis", ("receval.analysis",)),
    ("workflow", ("receval.workflow",)),
    ("cli", ("receval.cli", "receval._launch", "receval.__main__", "receval")),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int:
    best, length = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > length:
                best, length = i, len(p)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS and README"
    return best


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The receval modules that ``name`` imports (the longest known prefix of each)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            # `from pkg import sub` imports pkg.sub; `from pkg import attr` imports pkg
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            # a package's __init__ importing its own submodules is no dependency of code
            if t and t != name and not t.startswith(name + "."):
                found.add(t)
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods) | {"receval._native"}
    return {name: _imports(name, path, known) for name, path in mods.items()}


def test_every_module_has_a_layer() -> None:
    for name in _modules():
        _layer(name)


def test_imports_point_down() -> None:
    wrong = [
        f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})"
        for a, deps in _graph().items()
        for b in sorted(deps)
        if _layer(b) > _layer(a)
    ]
    assert not wrong, "\n".join(wrong)


def test_io_never_imports_an_engine_and_kernels_never_the_registry() -> None:
    g = _graph()
    wrong = [
        f"{a} imports {b}"
        for a, deps in g.items()
        for b in deps
        if (a.startswith("receval.io") and b.startswith("receval.engines"))
        or (a.startswith("receval.metrics.kernels") and b == "receval.metrics.registry")
    ]
    assert not wrong, "\n".join(wrong)


#: what opens an input file: only receval.io may call these (issue #30, "one way in")
_READS = {
    "read_file",
    "read_table",
    "read_csv",
    "read_parquet",
    "read_json",
    "open_csv",
    "ParquetFile",
    "open_parquet",
    "read_interactions_file",
}


def _file_reads(path: Path) -> list[str]:
    """The calls in a module that open an input file, and Spark's ``.read``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _READS:
                found.append(f"line {node.lineno}: {name}()")
        elif isinstance(node, ast.Attribute) and node.attr == "read":
            inner = node.value
            if isinstance(inner, (ast.Name, ast.Attribute)) and "spark" in ast.unparse(inner):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_door_reads_a_file_itself() -> None:
    """Every input is opened by receval.io (io/inputs.py, io/files.py, the
    readers' table): the commands, the evaluation surface, analysis and
    workflow hand paths down, never read them."""
    wrong = [
        f"{name}: {call}"
        for name, path in _modules().items()
        if not name.startswith("receval.io")
        for call in _file_reads(path)
    ]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    g = _graph()
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(max(1000, sys.getrecursionlimit()))
    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    "first",
    [
        "from receval import Comparison",
        "import receval.analysis.compare",
        "import receval.analysis.report",
        "import receval.workflow.split",
        "import receval.metrics.registry",
    ],
)
def test_public_functions_stay_functions(first: str) -> None:
    """Whatever the host imported first, receval.compare/report/split/metrics are functions."""
    code = (
        f"{first}\nimport receval\n"
        "for n in ('compare', 'report', 'split', 'metrics', 'evaluate', 'check', 'curve'):\n"
        "    assert callable(getattr(receval, n)) and not hasattr(getattr(receval, n), '__path__')"
        " and type(getattr(receval, n)).__name__ == 'function', n\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_importing_receval_changes_nothing_global() -> None:
    """A good guest: no warnings filters, no logging handlers, no NumPy print options."""
    code = (
        "import logging, warnings, numpy as np, pandas, pyarrow, scipy.stats, scipy.special\n"
        "before = (list(warnings.filters), list(logging.root.handlers), np.get_printoptions(),"
        " np.geterr())\n"
        "import receval, receval.analysis.compare, receval.workflow.demo\n"
        "after = (list(warnings.filters), list(logging.root.handlers), np.get_printoptions(),"
        " np.geterr())\n"
        "assert before == after, (before, after)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_every_module_imports() -> None:
    for name in _modules():
        if name != "receval.__main__":
            importlib.import_module(name)


def test_no_private_name_is_imported_from_another_module() -> None:
    """A name with a leading underscore stays in its module (the compiled
    `_native` and `_malloc` modules, and `NATIVE as _native`, are modules)."""
    wrong = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("receval"):
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and target not in _modules() and target != "receval._native":
                        wrong.append(f"{name} imports {alias.name} from {node.module}")
    assert not wrong, "\n".join(wrong)


#: the longest body a function may have (issue #30: "no function over ~80
#: lines except declarative tables", which are module-level data, not functions)
LONGEST_BODY = 80


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from a function's first statement after its docstring to its end."""
    body = node.body
    first = body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if docstring and isinstance(first.value.value, str) and len(body) > 1:  # type: ignore[attr-defined]
        body = body[1:]
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def test_no_function_is_longer_than_a_newcomer_can_read() -> None:
    long = [
        f"{name}.{node.name}: {_body_lines(node)} lines of body"
        for name, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and _body_lines(node) > LONGEST_BODY
    ]
    assert not long, "split these into named steps:\n" + "\n".join(long)
