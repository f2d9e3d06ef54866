"""``receval demo``: the whole offline-evaluation pipeline in one call, no download.

:func:`run_demo` (the CLI's ``receval demo`` wraps it):

1. data: the synthetic log built into the package
   (:func:`receval.synthetic_interactions`: Zipf-like popularity, users
   with tastes over genres, ratings 1–5, timestamps), or the user's own log
   (:func:`receval.io.interactions.read_log`: CSV, Parquet, JSON Lines,
   RecBole ``.inter``, MovieLens ``u.data`` / ``ratings.dat`` / ``ratings.csv``),
   whose user, item, rating and timestamp columns are found by
   :func:`receval.io.interactions.log_columns` (``user_id``, ``rating:float``,
   ``time``, ...) or named (``rating_col=``, ``timestamp_col=``);
2. relevance: with a rating column, the ratings are graded relevance and
   an item is relevant when its rating is ≥ ``threshold`` (default
   :data:`DEFAULT_THRESHOLD`); without one, every test interaction is
   relevant. The console and the report say which, and which column;
3. split: per user, chronologically — each user's last 20% of interactions
   are test (users keep at least one training row; users with fewer than 5
   interactions are dropped first, repeated to a fixed point; a log without
   timestamps is split at random per user instead);
4. three baselines (:mod:`receval.workflow.baselines`): random, most popular, item-kNN,
   each recommending 20 unseen items to every test user;
5. evaluation: precision, recall, nDCG at 5, 10, 20; MAP, MRR, hit rate at
   10; coverage, novelty, ARP, long-tail share, Gini and personalization at 10
   (popularity from the training part);
6. comparison: ONE :func:`receval.analysis.compare.compare` call on
   :data:`COMPARED` (paired t-tests over all pairs, Holm over all of them,
   percentile bootstrap intervals, :data:`N_RESAMPLES` resamples), systems
   lettered in leaderboard order;
7. output: that comparison printed (console), written as Markdown
   (``leaderboard.md``), as CSV (``significance.csv``) and drawn by the HTML
   report (``report.html``) — the same letters and p-values everywhere — plus
   every metric's means (``leaderboard.csv``), the runs (Parquet), the split
   (Parquet + JSON) and per-system results (JSON).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval._progress import Step, silent, steps_of
from receval.analysis.compare import Comparison, compare
from receval.analysis.formatting import spreadsheet_csv
from receval.analysis.report import report
from receval.errors import ReceValError, check_seed, for_python, option
from receval.evaluation.api import evaluate
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import Result, markdown_escape
from receval.io.inputs import is_path
from receval.io.interactions import as_frame, as_log, read_log
from receval.io.manifest import notes_for
from receval.io.write import OutputSet, refuse_inside
from receval.workflow import baselines
from receval.workflow.session_demo import run_session_demo
from receval.workflow.split import FILES as SPLIT_FILES
from receval.workflow.split import Split, split
from receval.workflow.synthetic import synthetic_interactions

__all__ = [
    "COMPARED",
    "DEFAULT_THRESHOLD",
    "DEMO_METRICS",
    "N_RESAMPLES",
    "SYSTEMS",
    "run_demo",
    "run_session_demo",
]

#: The metrics the demo evaluates (canonical names appear in the output).
DEMO_METRICS: list[str] = [
    "precision@5,10,20",
    "recall@5,10,20",
    "ndcg@5,10,20",
    "map@10",
    "mrr@10",
    "hit_rate@10",
    "coverage@10",
    "novelty@10",
    "arp@10",
    "long_tail@10",
    "gini@10",
    "personalization@10",
]

#: The systems, best expected first.
SYSTEMS: tuple[str, ...] = ("item_knn", "popular", "random")

#: The files the demo writes into its folder, relative to it (``manifest.json`` last).
FILES: tuple[str, ...] = (
    *(f"split/{name}" for name in SPLIT_FILES),
    *(f"runs/{system}.parquet" for system in SYSTEMS),
    "leaderboard.csv",
    "leaderboard.md",
    "significance.csv",
    "results.json",
    "report.html",
    "manifest.json",
)

#: Length of every recommended list.
LIST_LENGTH = 20

#: The metric the leaderboard is sorted by.
MAIN_METRIC = "ndcg@10"

#: The metrics of the one comparison (console, leaderboard.md, significance.csv,
#: report.html); per-user ones are tested, coverage is shown without a test.
COMPARED: tuple[str, ...] = ("ndcg@10", "recall@10", "precision@10", "ap@10", "coverage@10")

#: Resamples of the comparison's bootstrap intervals.
N_RESAMPLES = 2000

#: Ratings at or above this are relevant when the log has a ``rating`` column.
DEFAULT_THRESHOLD = 4.0

#: Beyond-accuracy metrics printed on the console next to the comparison.
_BEYOND = ("novelty@10", "arp@10", "long_tail@10", "gini@10", "personalization@10")


@dataclass(frozen=True)
class Relevance:
    """What counts as relevant in the demo's truth.

    Attributes:
        column: the log's column read as graded relevance (``rating``), or None
            (every test interaction is relevant).
        threshold: relevant when ``column`` ≥ threshold (None without a column).
        phrase: the sentence the console prints (options in each door's
            syntax: :func:`receval.errors.said`).
    """

    column: str | None
    threshold: float | None
    phrase: str

    @property
    def text(self) -> str:
        """The sentence in Python's syntax (the report and leaderboard.md)."""
        return for_python(self.phrase)

    @property
    def options(self) -> EvalOptions:
        """The evaluation options of every evaluation the demo makes."""
        return EvalOptions(threshold=self.threshold)


@dataclass
class _Protocol:
    """Everything the demo decided, for the console, leaderboard.md and the report."""

    source: str
    relevance: Relevance
    split_text: str
    notes: list[str] = field(default_factory=list)
    columns: str = ""  #: role=column of each column read (:func:`_columns_text`)

    def facts(self) -> dict[str, str]:
        return {
            "data": self.source,
            **({"columns": self.columns} if self.columns else {}),
            "relevance": self.relevance.text,
            "split": self.split_text,
            "systems": f"{', '.join(SYSTEMS)} (receval.baselines), {LIST_LENGTH} unseen items each",
            # files are read from either side: options in their Python spelling
            **{f"note {i + 1}": for_python(n) for i, n in enumerate(self.notes)},
        }


def _load(
    interactions: Any, users: int, seed: int, rating_col: str | None, timestamp_col: str | None
) -> tuple[pd.DataFrame, str, dict[str, str]]:
    """The log under the roles' names (``user``, ``item``, [``rating``],
    [``timestamp``]), where it comes from, and role -> the column read."""
    if interactions is None:
        frame = synthetic_interactions(users, seed=seed)
        source = f"synthetic log (receval.synthetic_interactions, users={users}, seed={seed})"
    elif isinstance(interactions, (str, Path)):
        frame, source = read_log(interactions), str(interactions)
    else:
        frame, source = as_frame(interactions, "interactions"), "the given table"
    log, found = as_log(
        frame,
        rating_col=rating_col,
        timestamp_col=timestamp_col,
        source="interactions" if source == "the given table" else source,
    )
    return log, source, found


def _relevance(log: pd.DataFrame, threshold: float | None, column: str | None) -> Relevance:
    """The relevance rule: the rating column (read as ``column``) at
    ``threshold``, or every interaction."""
    if "rating" not in log.columns:
        if threshold is not None:
            raise ReceValError(
                f"{option('threshold', threshold)} needs a rating column in the log; its "
                f"columns are {', '.join(map(str, log.columns))}"
            )
        return Relevance(
            None, None, "every test interaction is relevant (the log has no rating column)"
        )
    t = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    if not t > 0:
        raise ReceValError(f"{option('threshold', threshold)}: the threshold must be > 0")
    name = column or "rating"
    return Relevance(
        name,
        t,
        f"column {name} as graded relevance: a test item is relevant when its rating is "
        f"≥ {t:g} ({option('threshold', int(t) if t.is_integer() else t)} to change it)",
    )


def _split(
    log: pd.DataFrame, seed: int, notes: list[str], time_column: str | None
) -> tuple[Split, str]:
    """Per user in time (by the timestamp column, read as ``time_column``), or
    at random per user when the log has none."""
    options: dict[str, Any] = {"test_size": 0.2, "min_user_interactions": 5}
    method = "user_time"
    if "timestamp" not in log.columns:
        method = "user_random"
        options["seed"] = seed
        notes.append("the log has no timestamp column: split at random per user instead")
    sp = split(log, method, **options)  # type: ignore[arg-type]
    if len(sp.test) == 0 or len(sp.train) == 0:
        raise ReceValError("the split left an empty train or test part: too few interactions")
    by = f" by column {time_column or 'timestamp'}" if method == "user_time" else ""
    return sp, f"{method}{by}, " + ", ".join(f"{k}={v}" for k, v in options.items())


def _truth(test: pd.DataFrame, relevance: Relevance, notes: list[str]) -> pd.DataFrame:
    """``user, item[, relevance]`` of the test part; a repeated pair keeps its largest rating."""
    if relevance.column is None:
        truth = test.drop_duplicates(["user", "item"])[["user", "item"]]
    else:
        truth = (
            test.groupby(["user", "item"], sort=False)["rating"]
            .max()
            .rename("relevance")
            .reset_index()
        )
    if len(truth) < len(test):
        kept = "" if relevance.column is None else " (with their largest rating)"
        notes.append(f"{len(test) - len(truth)} repeated test (user, item) rows counted once{kept}")
    return truth


def _run_baselines(
    train: pd.DataFrame,
    truth: pd.DataFrame,
    relevance: Relevance,
    seed: int,
    out: OutputSet,
    say: Callable[[str], None],
    step: Step,
) -> tuple[dict[str, pd.DataFrame], dict[str, Result]]:
    """Each baseline's run (written to ``runs/``) and its evaluation."""
    test_users = pd.unique(truth["user"])
    runs: dict[str, pd.DataFrame] = {}
    results: dict[str, Result] = {}
    for name in SYSTEMS:
        t = time.perf_counter()
        with step(f"{name}: recommending {LIST_LENGTH} items to {len(test_users)} users"):
            run = baselines.recommend(name, train, users=test_users, k=LIST_LENGTH, seed=seed)  # type: ignore[arg-type]
        fit = time.perf_counter() - t
        with step(f"{name}: writing and evaluating {len(run)} recommendations"):
            out.write(f"runs/{name}.parquet", lambda p, r=run: r.to_parquet(p, index=False))
            runs[name] = run
            results[name] = evaluate(
                run, truth, DEMO_METRICS, train=train, options=relevance.options
            )
        say(
            f"{name}: {len(run)} recommendations in {fit:.2f} s, evaluated in "
            f"{time.perf_counter() - t - fit:.2f} s"
        )
    return runs, results


def _leaderboard(results: Mapping[str, Result]) -> pd.DataFrame:
    """Every metric's value per system, best :data:`MAIN_METRIC` first."""
    names = [str(s) for s in next(iter(results.values())).metrics]
    board = pd.DataFrame(
        {name: [res.summary[m] for m in names] for name, res in results.items()}, index=names
    ).T
    board.index.name = "system"
    return board.sort_values(MAIN_METRIC, ascending=False, kind="stable")


def _skipped_note(results: Mapping[str, Result], relevance: Relevance) -> str | None:
    res = next(iter(results.values()))
    n = int(res.counts.get("users_skipped", {}).get("no_relevant_items", 0))
    if not n:
        return None
    why = (
        f"no test rating ≥ {relevance.threshold:g}"
        if relevance.threshold is not None
        else "no relevant test item"
    )
    policy = res.parameters.get("empty_truth", "skip")
    return f"{n} test users have {why}: {option('empty_truth', policy)} (counted in results.json)"


def _markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    """``frame`` as a Markdown table (every name and text cell escaped)."""
    esc = markdown_escape
    cols = [esc(c) for c in frame.columns]
    lines = ["| " + " | ".join([esc(frame.index.name or ""), *cols]) + " |"]
    lines.append("|---|" + "---:|" * len(cols))
    for idx, row in frame.iterrows():
        cells = [f"{v:.{digits}f}" if isinstance(v, (float, np.floating)) else esc(v) for v in row]
        lines.append("| " + " | ".join([esc(idx), *cells]) + " |")
    return "\n".join(lines) + "\n"


def _leaderboard_md(protocol: _Protocol, comparison: Comparison, board: pd.DataFrame) -> str:
    return "\n".join(
        [
            "# receval demo: leaderboard",
            "",
            *(f"- {k}: {markdown_escape(v)}" for k, v in protocol.facts().items()),
            "",
            f"## Compared: {', '.join(comparison.metrics)}",
            "",
            comparison.to_markdown(),
            "## Every metric (values only, no test)",
            "",
            _markdown(board),
        ]
    )


def _write_outputs(
    out: OutputSet,
    board: pd.DataFrame,
    comparison: Comparison,
    results: Mapping[str, Result],
    protocol: _Protocol,
) -> dict[str, Path]:
    """The leaderboard, significance and results files, each written whole."""
    texts = {
        "leaderboard_csv": ("leaderboard.csv", spreadsheet_csv(board)),
        "leaderboard_md": ("leaderboard.md", _leaderboard_md(protocol, comparison, board)),
        "significance_csv": ("significance.csv", comparison.to_csv()),
        "results_json": (
            "results.json",
            json.dumps({n: r.to_dict() for n, r in results.items()}, indent=2) + "\n",
        ),
    }
    return {
        key: out.write(name, lambda p, t=text: p.write_text(t, encoding="utf-8"))
        for key, (name, text) in texts.items()
    }


def _summary(
    comparison: Comparison,
    board: pd.DataFrame,
    notes: list[str],
    files: Mapping[str, Path],
    seconds: float,
) -> list[str]:
    """The console's closing lines: the comparison, beyond-accuracy values, notes, files."""
    beyond = board[[c for c in _BEYOND if c in board.columns]]
    return [
        "",
        str(comparison),
        "",
        "beyond accuracy (values only, no test):",
        beyond.to_string(float_format=lambda v: f"{v:.4f}"),
        *(f"note: {n}" for n in notes),
        "",
        f"files ({seconds:.1f} s):",
        *(f"  {name}: {path}" for name, path in files.items()),
    ]


def run_demo(
    out_dir: str | Path,
    *,
    users: int = 10_000,
    interactions: Any = None,
    seed: int = 0,
    threshold: float | None = None,
    rating_col: str | None = None,
    timestamp_col: str | None = None,
    quiet: bool = False,
    console: Callable[[str], None] | None = None,
    progress: bool | Step = False,
) -> dict[str, Any]:
    """Generate (or read) a log, split it, train three baselines, evaluate and compare them.

    Args:
        out_dir: where the files go (created if needed); a log given as
            ``interactions`` must not lie in it (an error, before any work).
        users: users of the synthetic log (ignored with ``interactions``).
        interactions: your own log instead: a path (CSV, Parquet, JSON Lines,
            RecBole ``.inter``, MovieLens ``u.data`` / ``ratings.dat`` /
            ``ratings.csv``) or a table with user and item columns and,
            ideally, rating and timestamp columns (found by their names:
            :func:`receval.io.interactions.log_columns`).
        seed: seed of the synthetic log and of the random baseline (and of the
            comparison's bootstrap).
        threshold: a test item is relevant when its rating is ≥ threshold
            (graded relevance: nDCG gains are the ratings); default
            :data:`DEFAULT_THRESHOLD`. Needs a rating column; a log without
            one counts every test interaction as relevant.
        rating_col: the log's rating column (None: detected: ``rating``,
            ``rating:float``, ``stars``, ...); a name given must exist.
        timestamp_col: the log's timestamp column (None: detected:
            ``timestamp``, ``time``, ``date``, ...); a name given must exist.
            Without one the split is random per user.
        quiet: print nothing.
        console: where the console lines go (default: print, options written in
            Python syntax; the command line passes its own, in flag syntax).
        progress: say what each long step is doing while it runs: False
            (default: silent), True (a line on stderr as each step starts and
            its time when it ends), or a function of the step's description
            returning a context manager (the command line passes a spinner).
            ``quiet`` silences it too.

    Returns:
        ``leaderboard`` (DataFrame: one row per system, one column per metric,
        best ``ndcg@10`` first), ``comparison`` (the one
        :class:`~receval.analysis.compare.Comparison` every output shows),
        ``significance`` (its :meth:`~receval.analysis.compare.Comparison.to_long`,
        as written to ``significance.csv``), ``report`` (the
        :class:`~receval.analysis.report.Report`), ``results`` (system →
        :class:`~receval.Result`), ``split`` (the
        :class:`~receval.workflow.split.Split`), ``relevance``
        (:class:`Relevance`), ``columns`` (role → the log's column read),
        ``files`` (name → path), ``notes``, ``seconds``.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = run_demo(d, users=300, quiet=True)
        >>> out["relevance"].threshold, list(out["comparison"].systems)
        (4.0, ['item_knn', 'popular', 'random'])
    """
    check_seed(seed)  # before the output folder is taken
    if is_path(interactions):  # as demo --out: the log is never in the folder written
        given = [("interactions file", os.fspath(interactions))]
        refuse_inside((option("out_dir", out_dir), out_dir), given, FILES)
    t0 = time.perf_counter()
    step: Step = silent if quiet else steps_of(progress, "demo")
    asked = _Asked(interactions, users, seed, threshold, rating_col, timestamp_col)
    show = console or (lambda s: print(for_python(s)))
    say: Callable[[str], None] = (lambda s: None) if quiet else show
    with OutputSet(out_dir, "demo", {"users": users, "seed": seed, "threshold": threshold}) as out:
        return _demo(out, asked, say, t0, step)


@dataclass(frozen=True)
class _Asked:
    """What the demo was asked to run on."""

    interactions: Any
    users: int
    seed: int
    threshold: float | None
    rating_col: str | None
    timestamp_col: str | None


def _data(
    asked: _Asked, say: Callable[[str], None], step: Step
) -> tuple[pd.DataFrame, str, dict[str, str], Relevance]:
    """The log, where it comes from, role -> its column, and the relevance
    rule; the console says each."""
    reading = asked.interactions is not None
    with step("reading the log" if reading else f"generating {asked.users} users"):
        log, source, found = _load(
            asked.interactions, asked.users, asked.seed, asked.rating_col, asked.timestamp_col
        )
    relevance = _relevance(log, asked.threshold, found.get("rating"))
    say(
        f"data: {source}: {len(log)} interactions, {log['user'].nunique()} users, "
        f"{log['item'].nunique()} items"
    )
    say(f"columns: {_columns_text(found)}")
    say(f"relevance: {relevance.phrase}")
    if reading and is_path(asked.interactions):  # checked against its set's manifest
        for note in notes_for(asked.interactions):
            say(f"note: {asked.interactions}: {note}")
    return log, source, found, relevance


def _columns_text(found: Mapping[str, str]) -> str:
    """``user=user_id, item=item_id, rating=rating:float, timestamp=time``."""
    return ", ".join(f"{role}={column}" for role, column in found.items())


def _demo(
    out: OutputSet,
    asked: _Asked,
    say: Callable[[str], None],
    t0: float,
    step: Step,
) -> dict[str, Any]:
    """The demo, writing into the locked folder ``out`` (manifest written on success)."""
    log, source, found, relevance = _data(asked, say, step)
    seed = asked.seed
    notes: list[str] = []
    with step(f"splitting {len(log)} interactions"):
        sp, split_text = _split(log, seed, notes, found.get("timestamp"))
    truth = _truth(sp.test, relevance, notes)
    train = sp.train[["user", "item"]]
    for line in sp.describe():
        say(line)
    with step("writing the split"):
        saved = sp.save(out.folder / "split")
    files = {f"split_{name}": path for name, path in saved.items()}
    for path in files.values():
        out.add(str(path.relative_to(out.folder)), path)

    runs, results = _run_baselines(train, truth, relevance, seed, out, say, step)
    files |= {f"run_{name}": out.folder / "runs" / f"{name}.parquet" for name in SYSTEMS}
    board = _leaderboard(results)
    skipped = _skipped_note(results, relevance)
    if skipped:
        notes.append(skipped)
    protocol = _Protocol(source, relevance, split_text, notes, _columns_text(found))

    # the one comparison every output shows; the runs are evaluated already
    with step(f"comparing the systems (t-tests, {N_RESAMPLES} bootstrap resamples)"):
        comparison = compare(
            {name: results[name] for name in board.index},
            truth,
            list(COMPARED),
            test="t",
            correction="holm",
            ci="percentile",
            n_resamples=N_RESAMPLES,
            seed=seed,
            options=relevance.options,
        )
    files |= _write_outputs(out, board, comparison, results, protocol)
    with step("drawing the report (curves over k, popularity)"):
        rep = report(
            runs,
            truth,
            comparison=comparison,
            title="receval demo",
            provenance=protocol.facts(),
            train=train,
            options=relevance.options,
        )
    with step("writing the report"):
        files["report_html"] = out.write("report.html", lambda p: p.write_text(rep.html, "utf-8"))
    rep.path = files["report_html"]
    files["manifest"] = out.manifest  # written as the set closes, after these lines
    seconds = time.perf_counter() - t0
    for line in _summary(comparison, board, notes, files, seconds):
        say(line)
    return {
        "leaderboard": board,
        "comparison": comparison,
        "significance": comparison.to_long(),
        "report": rep,
        "results": results,
        "split": sp,
        "relevance": relevance,
        "columns": found,
        "files": files,
        "notes": notes,
        "seconds": seconds,
    }
