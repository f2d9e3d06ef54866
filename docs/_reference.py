"""The docs site's reference pages, generated from the code at build time.

``docs/_hooks.py`` (mkdocs.yml ``hooks:``) calls :func:`pages` once per build and
adds every page it returns to the site; none is a file of the repository, so none
can disagree with the code:

* ``reference/metrics/index.md`` and one page per metric family
  (``reference/metrics/<family>.md``), from the registry
  (:func:`receval.metrics.registry.metrics`): the same declarations that
  ``receval explain METRIC`` prints, with that command's own output.
  A metric's family is the module of its kernel (``receval.metrics.kernels.<family>``).
* ``reference/cli.md``, from the command definitions (``receval.cli.app``): every
  command, its arguments and options, with the help texts ``--help`` shows.
* ``reference/api.md`` and ``reference/api/<layer>.md``: mkdocstrings' ``:::``
  blocks for every name of ``receval.__all__``, grouped by the layer that defines it.

Nothing here is imported by receval.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import re
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

KERNELS = "receval.metrics.kernels"

#: family (the kernel module's name) -> (title, what the page covers, a guide page).
#: A family missing here still gets a page, titled by its module's docstring.
FAMILIES: dict[str, tuple[str, str, str | None]] = {
    "ranking": (
        "Ranking accuracy",
        "The accuracy of each user's top-k list against the user's truth: "
        "precision, recall, hit rate, AP, RR, DCG and nDCG, RBP, ERR, AUC. "
        "Several take `correction=` for sampled evaluation.",
        "sampled.md",
    ),
    "trec": (
        "trec_eval's measures",
        "The measures of trec_eval that the ranking family does not have: judgments, "
        "bpref, infAP, geometric means, interpolated precision, set measures, utility.",
        "trec_eval.md",
    ),
    "beyond": (
        "Beyond accuracy",
        "What a list is besides accurate: novelty, popularity, long tail, serendipity, "
        "diversity, and the aggregates over all lists (coverage, Gini, entropy, "
        "personalization).",
        None,
    ),
    "groups": (
        "Item groups: exposure, parity, calibration",
        "Metrics of item groups (`item_groups=`): how exposure and relevance are shared "
        "between groups of items, and how far each list is from the user's history.",
        "groups.md",
    ),
    "rating": (
        "Rating prediction",
        "Errors and correlations of predicted ratings against actual ones (explicit feedback).",
        None,
    ),
}

KINDS = {
    "ranking": "per user, averaged over the users evaluated",
    "aggregate": "one value over all lists (no per-user value)",
    "rating": "over (actual, predicted) rating pairs",
}


# -- Markdown ---------------------------------------------------------------------------

_CODE = re.compile(r"(`+)(.+?)\1")
_SPECIAL = re.compile(r"([\\*_\[\]|#<>])")


def text(value: Any) -> str:
    """Plain text as Markdown: special characters escaped, ```code``` spans kept."""
    out, last = [], 0
    raw = str(value)
    for m in _CODE.finditer(raw):
        out.append(_SPECIAL.sub(r"\\\1", raw[last : m.start()]))
        out.append(code(m.group(2).strip()))
        last = m.end()
    out.append(_SPECIAL.sub(r"\\\1", raw[last:]))
    return "".join(out).replace("\n", " ")


def code(value: Any) -> str:
    """A Markdown code span of ``value`` (fenced by more backticks than it holds)."""
    raw = str(value)
    longest = max((len(m) for m in re.findall(r"`+", raw)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if raw.startswith("`") or raw.endswith("`") else ""
    return f"{fence}{pad}{raw}{pad}{fence}"


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    """A Markdown table's lines (cells already Markdown)."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    # cells come from text() and code(): pipes outside code spans are escaped, and
    # Python-Markdown's tables do not split a row at a pipe inside a code span
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def source_link(fn: Callable[..., Any], repo_url: str | None) -> str:
    """Where a function is defined: its path in the repository and line, linked to
    the repository when ``repo_url`` is set."""
    import receval

    package = Path(receval.__file__).resolve().parent
    path = Path(inspect.getsourcefile(fn) or "").resolve()
    where = "src/receval/" + path.relative_to(package).as_posix()
    line = inspect.getsourcelines(fn)[1]
    shown = f"{code(fn.__module__ + '.' + fn.__name__)} ({code(where)}, line {line})"
    if repo_url:
        return f"[{shown}]({repo_url.rstrip('/')}/blob/main/{where}#L{line})"
    return shown


# -- metrics ----------------------------------------------------------------------------


def kernel_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel function behind a registry declaration's ``kernel``: a wrapper
    defined in the registry (``correction=``) is unwrapped through its closure."""
    registry = "receval.metrics.registry"
    while fn.__module__ == registry:
        inner = [
            c.cell_contents
            for c in fn.__closure__ or ()
            if callable(c.cell_contents)
            and getattr(c.cell_contents, "__module__", "").startswith(KERNELS)
        ]
        if not inner:
            return fn
        fn = inner[0]
    return fn


def family_of(definition: Any) -> str:
    """A metric's family: the kernel module its kernel is defined in; for a kernel
    written in the registry itself (gm_ap: a logarithm of ap), the first kernel
    module it calls."""
    registry = importlib.import_module("receval.metrics.registry")  # receval.metrics: a function
    fn = kernel_of(definition.kernel)
    if fn.__module__.startswith(KERNELS + "."):
        return fn.__module__.rsplit(".", 1)[1]
    for name in fn.__code__.co_names:
        value = getattr(registry, name, None)
        if isinstance(value, types.ModuleType) and value.__name__.startswith(KERNELS + "."):
            return value.__name__.rsplit(".", 1)[1]
    raise ValueError(f"{definition.name}: its kernel belongs to no kernel module")


def families() -> dict[str, list[Any]]:
    """family -> its metrics' declarations, in registry order; the families of
    :data:`FAMILIES` first, in that order."""
    from receval.metrics.registry import metrics

    out: dict[str, list[Any]] = {f: [] for f in FAMILIES}
    for d in metrics().values():
        out.setdefault(family_of(d), []).append(d)
    return {f: ds for f, ds in out.items() if ds}


def family_title(family: str) -> str:
    """The title of a family's page."""
    if family in FAMILIES:
        return FAMILIES[family][0]
    module = importlib.import_module(f"{KERNELS}.{family}")
    return (module.__doc__ or family).strip().splitlines()[0].rstrip(".")


@functools.cache
def cli_group() -> Any:
    """The ``receval`` command as click sees it (built once: typer builds it anew on
    each call of ``receval.cli.main``, 30 ms)."""
    import typer.main

    from receval.cli import app

    return typer.main.get_command(app)


def explain_output(metric: str) -> str:
    """What ``receval explain METRIC`` prints: the command run in this process (an
    error raises, failing the build)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli_group().main(["explain", metric], prog_name="receval", standalone_mode=False)
    return out.getvalue().rstrip("\n")


def param_rows(definition: Any) -> list[list[str]]:
    """The parameter table's rows of a metric."""
    rows = []
    for p in definition.params:
        allowed = (
            ", ".join(code(c) for c in p.choices)
            if p.choices
            else text(p.check_text)
            if p.check_text
            else "any " + p.type.__name__
        )
        extra = []
        if p.at_least:
            from receval.metrics.registry import STATISTICS

            extra.append(f"not below {STATISTICS[p.at_least]}")
        if p.only_with:
            other, values = p.only_with
            extra.append("only with " + " or ".join(code(f"{other}={v}") for v in values))
        by_need: dict[str, list[str]] = {}
        for v, need in p.needs:
            by_need.setdefault(need, []).append(code(p.format(v)))
        extra += [f"{', '.join(vs)}: {text(requirements()[n])}" for n, vs in by_need.items()]
        meaning = text(p.description) + "".join(f" ({e})" for e in extra)
        default = "None" if p.default is None else p.format(p.default)
        rows.append([code(p.name), p.type.__name__, code(default), allowed, meaning])
    return rows


def requirements() -> dict[str, str]:
    """What a metric may need -> what provides it (the registry's ``REQUIREMENTS``)."""
    from receval.metrics.registry import REQUIREMENTS

    return dict(REQUIREMENTS)


def cutoff_text(d: Any) -> str:
    """What a metric does with ``@k``."""
    if d.needs_cutoff:
        return "needs `@k`"
    if not d.takes_cutoff:
        return "takes no `@k`: it reads the user's whole ideal"
    return "`@k` optional; without it, the whole list"


def conventions_lines(example: str, under: dict[str, str]) -> list[str]:
    """What a metric becomes under the other tools' conventions (``variants``)."""
    others = {c: v for c, v in under.items() if c != "receval"}
    if not others:
        return []
    same = [code(c) for c, v in others.items() if v == example]
    lines = [
        "**Under other tools' conventions** ([conventions](../../conventions.md)): "
        + (
            f"{code(example)} is the same metric under {', '.join(same)}"
            if same
            else f"every tool that has {code(example)} defines it differently"
        ),
        "",
    ]
    lines += [f"- {code(c)}: {code(v)}" for c, v in others.items() if v != example]
    return [*lines, ""]


def metric_section(d: Any, repo_url: str | None) -> list[str]:
    """One metric's section of its family page."""
    from receval.evaluation.conventions import variants

    example = f"{d.name}@10" if d.needs_cutoff else d.name
    facts = [f"- **Formula**: {code(d.formula)}"]
    if d.aliases:
        facts.append("- **Also called**: " + ", ".join(code(a) for a in d.aliases))
    facts.append(
        f"- **Value**: {KINDS.get(d.kind, d.kind)}; bounds [{d.bounds[0]:g}, "
        f"{d.bounds[1]:g}], {'higher' if d.higher_is_better else 'lower'} is better"
    )
    facts.append(f"- **Cut-off**: {cutoff_text(d)}")
    if d.needs:
        facts.append("- **Needs**: " + "; ".join(text(requirements()[n]) for n in d.needs))
    facts.append(f"- **Undefined for** (edge cases): {text(d.undefined)}")
    if d.notes:
        facts.append(f"- **Notes**: {text(d.notes)}")
    facts.append(f"- **Source**: kernel {source_link(kernel_of(d.kernel), repo_url)}")
    lines = [f"## {d.name} {{ #{d.name} }}", "", text(d.description) + ".", "", *facts, ""]
    if d.params:
        header = ["parameter", "type", "default", "allowed values", "meaning"]
        lines += ["**Parameters**", "", *table(header, param_rows(d)), ""]
    lines += conventions_lines(example, variants(example))
    shown = explain_output(example)
    lines += [f'??? example "receval explain {example}"', "", "    ```text"]
    lines += [f"    {line}".rstrip() for line in shown.splitlines()]
    lines += ["    ```", ""]
    return lines


def family_page(family: str, defs: list[Any], repo_url: str | None) -> str:
    """A metric family's page."""
    title = family_title(family)
    intro, guide = (FAMILIES[family][1], FAMILIES[family][2]) if family in FAMILIES else ("", None)
    lines = [f"# {title}", "", intro]
    if guide:
        lines[-1] += f" The guide: [{guide.removesuffix('.md')}](../../{guide})."
    lines += [
        "",
        "Generated from the metric registry (`receval.metrics.registry`) when the site is "
        "built: the declarations `receval explain METRIC` prints. A metric is written "
        "`name@k[param=value,...]` ([metrics](index.md)).",
        "",
        *table(
            ["metric", "what it measures"],
            [[f"[{code(d.name)}](#{d.name})", text(d.description)] for d in defs],
        ),
        "",
    ]
    for d in defs:
        lines += metric_section(d, repo_url)
    return "\n".join(lines)


def metrics_index(groups: dict[str, list[Any]]) -> str:
    """``reference/metrics/index.md``: every family, every metric, every requirement."""
    lines = [
        "# Metrics",
        "",
        "Every metric receval computes, one page per family, generated from the metric "
        "registry when the site is built (what `receval metrics` lists and "
        "`receval explain METRIC` prints). A metric is named "
        "`name@k[param=value,...]`: `ndcg@10`, `ap@10[denominator=min_k_relevant]`; "
        "aliases and upper case are accepted, and results are keyed by the canonical "
        "name (aliases resolved, default parameters dropped).",
        "",
        *table(
            ["family", "metrics"],
            [
                [
                    f"[{text(family_title(f))}]({f}.md)",
                    ", ".join(f"[{code(d.name)}]({f}.md#{d.name})" for d in ds),
                ]
                for f, ds in groups.items()
            ],
        ),
        "",
        "## Every metric",
        "",
    ]
    rows = [
        [
            f"[{code(d.name)}]({f}.md#{d.name})",
            ", ".join(code(a) for a in d.aliases),
            text(family_title(f)),
            text(d.description),
        ]
        for f, ds in groups.items()
        for d in ds
    ]
    lines += [*table(["metric", "aliases", "family", "what it measures"], rows), ""]
    lines += [
        "## What metrics may need",
        "",
        "A metric, or one value of its parameters, may need more than the lists and the truth:",
        "",
    ]
    lines += table(["need", "given by"], [[code(k), text(v)] for k, v in requirements().items()])
    return "\n".join(lines) + "\n"


def metric_pages(repo_url: str | None) -> dict[str, str]:
    """path -> Markdown of the metric reference."""
    groups = families()
    out = {"reference/metrics/index.md": metrics_index(groups)}
    for family, defs in groups.items():
        out[f"reference/metrics/{family}.md"] = family_page(family, defs, repo_url)
    return out


# -- the command line -------------------------------------------------------------------


def plain_help(value: str | None) -> str:
    """A help text as ``--help`` shows it: the rich markup read, ``\\f`` and after cut."""
    from rich.text import Text

    raw = inspect.cleandoc(value or "").partition("\f")[0]
    return Text.from_markup(raw).plain


def help_markdown(value: str | None) -> list[str]:
    """A command's help as Markdown paragraphs."""
    paragraphs = plain_help(value).split("\n\n")
    return [text(p.replace("\b", "").strip()) + "\n" for p in paragraphs if p.strip()]


def _default(param: Any, ctx: Any) -> str:
    """The default ``--help`` shows for a parameter ('' when it shows none)."""
    extract = getattr(param, "_extract_default_help_str", None)
    if extract is None:  # another typer: its default, as is
        default = getattr(param, "default", None)
        return "" if default in (None, False, ()) else str(default)
    value = extract(ctx=ctx)
    shown = isinstance(param.show_default, str)
    if not shown and (value is None or not (param.show_default or ctx.show_default)):
        return ""
    return str(
        param._get_default_string(ctx=ctx, show_default_is_str=shown, default_value=value) or ""
    )


def _type(param: Any, ctx: Any) -> str:
    """The type or metavar ``--help`` shows for a parameter."""
    show = getattr(param, "display_type_rich", None)
    if show is not None:
        return str(show(ctx=ctx) or "")
    try:
        return str(param.make_metavar(ctx))
    except TypeError:  # click before 8.2
        return str(param.make_metavar())


def param_table(params: list[Any], ctx: Any, arguments: bool) -> list[str]:
    """The table of a command's arguments or of one panel of its options."""
    rows = []
    for p in params:
        help_ = text(plain_help(p.help).replace("\n", " "))
        kind = _type(p, ctx)
        if arguments:
            name = getattr(p, "display_name_raw", None) or p.name.upper()
            rows.append(
                [code(name), code(kind) if kind else "", "yes" if p.required else "", help_]
            )
            continue
        flags = ", ".join(code(o) for o in (*p.opts, *p.secondary_opts))
        default = _default(p, ctx)
        rows.append(
            [
                flags,
                code(kind) if kind else "",
                code(default) if default else "",
                help_ + (" **required**" if p.required else ""),
            ]
        )
    header = (
        ["argument", "type", "required", "description"]
        if arguments
        else ["option", "type", "default", "description"]
    )
    return table(header, rows)


def command_section(name: str, command: Any, parent: Any) -> list[str]:
    """One command's section of the CLI page."""
    import click

    ctx = click.Context(command, info_name=name, parent=parent)
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    usage = " ".join(["receval", name, *command.collect_usage_pieces(ctx)])
    lines = [f"## receval {name} {{ #{name} }}", "", *help_markdown(command.help)]
    lines += ["```text", usage, "```", ""]
    arguments = [p for p in params if p.param_type_name == "argument"]
    if arguments:
        lines += ["**Arguments**", "", *param_table(arguments, ctx, True), ""]
    panels: dict[str, list[Any]] = {}
    for p in params:
        if p.param_type_name != "argument":
            panels.setdefault(getattr(p, "rich_help_panel", None) or "Options", []).append(p)
    for panel, members in panels.items():
        lines += [f"**{text(panel)}**", "", *param_table(members, ctx, False), ""]
    return lines


def cli_page() -> str:
    """``reference/cli.md``: every command, argument and option of ``receval``."""
    import click

    group = cli_group()
    ctx = click.Context(group, info_name="receval")
    names = group.list_commands(ctx)
    commands = {n: group.get_command(ctx, n) for n in names}
    lines = [
        "# Command line reference",
        "",
        "Generated from the command definitions (`receval.cli`) when the site is built: "
        "every command, its arguments and every option, with the help that "
        "`receval COMMAND --help` prints. The [command line guide](../command-line.md) "
        "shows them at work. Bad input ends a command with one line `error: ...` and "
        "exit status 2.",
        "",
        *help_markdown(group.help),
        "```text",
        " ".join(["receval", *group.collect_usage_pieces(ctx)]),
        "```",
        "",
        *param_table([p for p in group.get_params(ctx) if not p.hidden], ctx, False),
        "",
        *table(
            ["command", "what it does"],
            [
                [f"[{code(n)}](#{n})", text(plain_help(c.help).split("\n\n")[0].replace("\n", " "))]
                for n, c in commands.items()
            ],
        ),
        "",
    ]
    for n, c in commands.items():
        lines += command_section(n, c, ctx)
    return "\n".join(lines)


# -- the Python API ---------------------------------------------------------------------

#: layer -> (page, title); the layer is the subpackage that defines a public name.
API_PAGES: dict[str, tuple[str, str]] = {
    "receval": ("reference/api.md", "Python API: evaluating"),
    "evaluation": ("reference/api.md", "Python API: evaluating"),
    "analysis": ("reference/api/analysis.md", "Comparing, reporting, tracking"),
    "metrics": ("reference/api/metrics.md", "Metric declarations and names"),
    "workflow": ("reference/api/workflow.md", "Data: reading, splitting, sampling"),
    "io": ("reference/api/workflow.md", "Data: reading, splitting, sampling"),
    "errors": ("reference/api/errors.md", "Errors"),
}


#: public names of modules ``import receval`` does not export (module, names, page)
MODULE_PAGES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("receval.testing", ("check_metric", "MetricCheckError"), "reference/api/metrics.md"),
)


def public_names() -> dict[str, tuple[str, str]]:
    """Each name of ``receval.__all__`` (but ``__version__``) -> (the module that
    defines it, its layer)."""
    import receval

    out = {}
    for name in receval.__all__:
        if name.startswith("__"):
            continue
        module = getattr(receval, name).__module__
        parts = module.split(".")
        out[name] = (module, parts[1] if len(parts) > 1 else parts[0])
    return out


def api_pages() -> dict[str, str]:
    """path -> Markdown of the API reference."""
    import receval

    names = public_names()
    pages: dict[str, list[str]] = {}
    for name, (module, layer) in names.items():
        path, _ = API_PAGES.get(layer, ("reference/api/other.md", "Other"))
        pages.setdefault(path, [])
        pages[path] += [
            f"::: {module}.{name}",
            "    options:",
            f"      heading: receval.{name}",
            f"      toc_label: {name}",
            "",
        ]
    for module, extra, path in MODULE_PAGES:
        for name in extra:
            pages.setdefault(path, [])
            pages[path] += [
                f"::: {module}.{name}",
                "    options:",
                f"      heading: {module}.{name}",
                f"      toc_label: {name}",
                "",
            ]
    out = {}
    titles = {p: t for p, t in API_PAGES.values()}
    for path, blocks in pages.items():
        head = [f"# {titles.get(path, 'Other')}", ""]
        if path == "reference/api.md":
            head += api_index(names, receval.__version__)
        out[path] = "\n".join(head + blocks)
    return dict(sorted(out.items(), key=lambda kv: kv[0] != "reference/api.md"))


def api_index(names: dict[str, tuple[str, str]], version: str) -> list[str]:
    """The table of every public name, at the top of ``reference/api.md``."""
    rows = []
    for name, (module, layer) in names.items():
        path, _ = API_PAGES.get(layer, ("reference/api/other.md", ""))
        rel = path.removeprefix("reference/")
        href = "" if rel == "api.md" else rel  # relative to reference/api.md
        target = f"{href}#{module}.{name}"  # mkdocstrings' id: the defining path
        rows.append([f"[{code('receval.' + name)}]({target})", text(_summary(name))])
    return [
        "Generated from the docstrings of every name `import receval` exports "
        f"(`receval.__all__`; this build: receval {text(version)}). Everything below "
        "is imported by `import receval` on first use.",
        "",
        *table(["name", "what it is"], rows),
        "",
    ]


@functools.cache
def _griffe_extension() -> Any:
    """``docs/_griffe.py``, loaded from its path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "receval_docs_griffe", Path(__file__).with_name("_griffe.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summary(name: str) -> str:
    """The first paragraph of a public name's docstring, its roles as code spans."""
    import receval

    doc = inspect.getdoc(getattr(receval, name)) or ""
    return _griffe_extension().plain_roles(doc.split("\n\n")[0].replace("\n", " "))


# -- everything -------------------------------------------------------------------------


def pages(repo_url: str | None = None) -> dict[str, str]:
    """path (under docs/) -> Markdown of every generated page."""
    out = metric_pages(repo_url)
    out["reference/cli.md"] = cli_page()
    out.update(api_pages())
    return out
