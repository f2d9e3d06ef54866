"""receval.analysis.compare: alignment, tests, corrections, marks and renderings."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import receval
from receval.analysis import stats
from receval.analysis.compare import Comparison, compare, letters_for
from receval.analysis.formatting import fmt_p
from receval.errors import OptionError, ReceValError

N_ITEMS = 40


def _world(n_users: int = 120, seed: int = 0) -> tuple[dict, dict]:
    """Truth and three systems: a strong one, a weak one, a random one."""
    rng = np.random.default_rng(seed)
    truth = {u: [int(i) for i in rng.choice(N_ITEMS, 4, replace=False)] for u in range(n_users)}
    runs: dict[str, dict] = {"random": {}, "good": {}, "weak": {}}
    for u, rel in truth.items():
        others = [i for i in rng.permutation(N_ITEMS).tolist() if i not in rel]
        runs["random"][u] = rng.permutation(N_ITEMS)[:10].tolist()
        k = int(rng.integers(1, 4))
        runs["good"][u] = rel[:k] + others[: 10 - k]
        runs["weak"][u] = others[:5] + rel[:1] + others[5:9]
    return truth, runs


@pytest.fixture(scope="module")
def world() -> tuple[dict, dict]:
    return _world()


@pytest.fixture(scope="module")
def cmp(world: tuple[dict, dict]) -> Comparison:
    truth, runs = world
    return compare(
        runs,
        truth,
        ["ndcg@10", "p@5", "coverage@10"],
        n_resamples=2000,
        train={0: list(range(N_ITEMS))},
    )


def test_table_means_equal_evaluate(world: tuple[dict, dict], cmp: Comparison) -> None:
    truth, runs = world
    for name, run in runs.items():
        res = receval.evaluate(run, truth, ["ndcg@10", "precision@5"])
        for m in ("ndcg@10", "precision@5"):
            assert cmp.table.loc[(m, name), "mean"] == pytest.approx(res.summary[m])
            assert cmp.table.loc[(m, name), "users"] == len(truth)
    assert cmp.metrics == ["ndcg@10", "precision@5", "coverage@10"]
    assert cmp.letters == {"random": "a", "good": "b", "weak": "c"}


def test_p_values_are_scipy_t_tests_corrected_by_holm(
    world: tuple[dict, dict], cmp: Comparison
) -> None:
    truth, runs = world
    per = {n: receval.evaluate(r, truth, ["ndcg@10", "p@5"]).per_user for n, r in runs.items()}
    raw = []
    for m in ("ndcg@10", "precision@5"):
        for a, b in [("random", "good"), ("random", "weak"), ("good", "weak")]:
            ref = sps.ttest_rel(per[a][m], per[b][m])
            row = cmp.pairs.loc[(m, a, b)]
            assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
            assert row["statistic"] == pytest.approx(ref.statistic)
            assert row["diff"] == pytest.approx((per[a][m] - per[b][m]).mean())
            d = per[a][m] - per[b][m]
            assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
            raw.append(ref.pvalue)
    # corrected over all 6 comparisons (both metrics), in table order
    assert cmp.pairs["p_adjusted"].to_numpy() == pytest.approx(
        stats.adjust_pvalues(raw, "holm"), rel=1e-9, abs=1e-300
    )
    assert cmp.settings["comparisons"] == 6


def test_marks_name_the_systems_beaten(cmp: Comparison) -> None:
    assert cmp.table.loc[("ndcg@10", "good"), "wins"] == "ac"
    assert cmp.table.loc[("ndcg@10", "good"), "beats"] == ("random", "weak")
    assert cmp.table.loc[("ndcg@10", "random"), "wins"] == ""
    assert cmp.pairs.loc[("ndcg@10", "random", "good"), "winner"] == "good"
    # aggregate: a value, no test, no mark
    assert cmp.table.loc[("coverage@10", "good"), "wins"] == ""
    assert math.isnan(cmp.table.loc[("coverage@10", "good"), "ci_low"])
    assert "coverage@10" not in cmp.pairs.index.get_level_values(0)
    assert cmp.table.loc[("coverage@10", "random"), "mean"] == pytest.approx(1.0)


def test_lower_is_better_metrics_flip_the_winner() -> None:
    truth = {u: [u % 5] for u in range(30)}
    popular_run = {u: [0, 1, 2] for u in range(30)}  # always the most popular items
    niche_run = {u: [7, 8, 9] for u in range(30)}
    train = {v: [0, 1, 2] for v in range(20)} | {99: [7, 8, 9]}
    c = compare({"pop": popular_run, "niche": niche_run}, truth, "arp@3", train=train)
    assert c.pairs.loc[("arp@3", "pop", "niche"), "winner"] == "niche"
    assert c.table.loc[("arp@3", "niche"), "wins"] == "a"


def test_baseline_compares_only_against_it(world: tuple[dict, dict]) -> None:
    truth, runs = world
    c = compare(runs, truth, "ndcg@10", baseline="random", n_resamples=500)
    assert list(c.pairs.index) == [("ndcg@10", "good", "random"), ("ndcg@10", "weak", "random")]
    assert c.settings["baseline"] == "random"
    assert c.table.loc[("ndcg@10", "good"), "wins"] == "a"
    with pytest.raises(ReceValError, match="baseline='nope' is not allowed: expected one of"):
        compare(runs, truth, "ndcg@10", baseline="nope")


def test_users_lacking_in_a_run_are_dropped_and_counted() -> None:
    truth = {u: [1, 2] for u in range(10)}
    a = {u: [1, 3] for u in range(10)}
    b = {u: [2, 1] for u in range(7)}  # users 7, 8, 9 have no list
    c = compare({"a": a, "b": b}, truth, "ndcg@2", n_resamples=200, missing_recs="skip")
    assert c.table.loc[("ndcg@2", "a"), "users"] == 7
    assert c.missing.loc["b", "ndcg@2"] == 3 and c.missing.loc["a", "ndcg@2"] == 0
    assert c.missing.loc["b", "no_recommendations"] == 3
    assert c.missing.loc["b", "counted_as"] == "left out"
    assert "3 users without recommendations (counted as left out)" in c.to_markdown()
    # default missing_recs="zero": the users count, with 0
    z = compare({"a": a, "b": b}, truth, "ndcg@2", n_resamples=200)
    assert z.table.loc[("ndcg@2", "a"), "users"] == 10
    assert z.missing.loc["b", "counted_as"] == "0"
    assert z.table.loc[("ndcg@2", "b"), "mean"] == pytest.approx(0.7)


def test_same_seed_same_numbers_on_any_number_of_threads(world: tuple[dict, dict]) -> None:
    truth, runs = world
    kw = dict(test="randomization", n_resamples=1500, seed=11, ci="bca")
    one = compare(runs, truth, ["ndcg@10", "recall@10"], n_jobs=1, **kw)
    four = compare(runs, truth, ["ndcg@10", "recall@10"], n_jobs=4, **kw)
    pd.testing.assert_frame_equal(one.pairs, four.pairs)
    pd.testing.assert_frame_equal(one.table, four.table)
    other = compare(runs, truth, ["ndcg@10", "recall@10"], **{**kw, "seed": 12})
    assert not one.table["ci_low"].equals(other.table["ci_low"])


def test_each_metric_uses_its_spawned_seed(world: tuple[dict, dict]) -> None:
    """Metric j uses child j of the root seed, split in two (bootstrap, sign
    flips); one resample serves every system and pair of the metric, so each
    unit's numbers are those of the one-unit functions with that seed."""
    truth, runs = world
    metrics = ["recall@10", "ndcg@10"]
    c = compare(runs, truth, metrics, test="randomization", n_resamples=800, seed=5)
    boot, flip = np.random.SeedSequence(5).spawn(2)[1].spawn(2)  # ndcg@10: child 1
    frame = c.aligned["ndcg@10"]
    # what resampling sees: each system's values in their order; the pair's
    # differences in the orientation of positive mean (good - random), in theirs
    d = np.sort((frame["good"] - frame["random"]).to_numpy())
    assert d.mean() > 0
    expected = stats.randomization_test(d, n_resamples=800, seed=flip).pvalue
    assert c.pairs.loc[("ndcg@10", "random", "good"), "p_value"] == expected
    for system in ("good", "random"):
        lo, hi = stats.bootstrap_ci(np.sort(frame[system]), n_resamples=800, seed=boot)
        got = c.table.loc[("ndcg@10", system), ["ci_low", "ci_high"]].tolist()
        assert got == pytest.approx([lo, hi], rel=1e-12)
    lo, hi = stats.bootstrap_ci(d, n_resamples=800, seed=boot)
    got = c.pairs.loc[("ndcg@10", "random", "good"), ["ci_low", "ci_high"]].tolist()
    assert got == pytest.approx([-hi, -lo], rel=1e-12)  # random - good: mirrored


def test_bootstrap_means_are_the_means_of_index_resamples() -> None:
    """Counts times values, one matrix product: the means of the resamples a
    literal bootstrap draws (the same index stream, gathered one by one)."""
    x = np.random.default_rng(1).random((57, 3))
    got = stats.bootstrap_means(x, 1000, np.random.default_rng(9))
    rng = np.random.default_rng(9)
    rows = stats._block_rows(57, 1000)
    want = []
    for start in range(0, 1000, rows):
        idx = rng.integers(0, 57, size=(min(rows, 1000 - start), 57), dtype=np.int64)
        want += [[sum(x[i, j] for i in row) / 57 for j in range(3)] for row in idx]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-13)


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization", "permutation"])
@pytest.mark.parametrize("correction", ["holm", "bonferroni", "bh", "none"])
def test_every_test_and_correction_runs(
    world: tuple[dict, dict], test: str, correction: str
) -> None:
    truth, runs = world
    c = compare(
        runs, truth, "rr@10", test=test, correction=correction, n_resamples=300, ci="percentile"
    )
    p = c.pairs["p_value"].to_numpy()
    assert ((p >= 0) & (p <= 1)).all()
    assert (c.pairs["p_adjusted"].to_numpy() >= p - 1e-15).all()
    lo, hi = c.pairs["ci_low"].to_numpy(), c.pairs["ci_high"].to_numpy()
    assert (lo <= c.pairs["diff"].to_numpy() + 1e-12).all()
    assert (hi >= c.pairs["diff"].to_numpy() - 1e-12).all()


def test_renderings(cmp: Comparison) -> None:
    md = cmp.to_markdown()
    assert "| b | good |" in md and "<sup>ac</sup>" in md
    assert "### ndcg@10" in md and "p (holm)" in md
    tex = cmp.to_latex(details=True)
    assert r"\textsuperscript{ac}" in tex and r"\begin{tabular}{llrrr}" in tex
    assert tex.count(r"\begin{tabular}") == 3
    text = str(cmp)
    assert "ᵃᶜ" in text and "Holm correction over 6 comparisons" in text
    doc = json.loads(cmp.to_json())
    assert doc["systems"][1] == {"name": "good", "letter": "b"}
    nd = doc["metrics"]["ndcg@10"]
    assert nd["systems"]["good"]["wins"] == "ac"
    assert len(nd["comparisons"]) == 3 and nd["comparisons"][0]["system"] == "random"
    assert doc["metrics"]["coverage@10"]["kind"] == "aggregate"
    assert doc["metrics"]["coverage@10"]["systems"]["good"]["ci"] == [None, None]
    assert doc["settings"]["test"] == "t" and doc["version"] == receval.__version__
    assert "counts" in doc["evaluations"]["good"]
    board = cmp.to_frame()
    assert list(board.index) == ["random", "good", "weak"]
    assert list(board.columns) == cmp.metrics


def test_latex_escapes_names() -> None:
    truth = {1: [1], 2: [2]}
    c = compare(
        {"my_sys": {1: [1], 2: [2]}, "x&y": {1: [2], 2: [1]}}, truth, "p@1", n_resamples=100
    )
    tex = c.to_latex()
    assert r"my\_sys" in tex and r"x\&y" in tex


def test_precomputed_results_are_accepted(world: tuple[dict, dict]) -> None:
    truth, runs = world
    res = {n: receval.evaluate(r, truth, "ndcg@10") for n, r in runs.items()}
    c = compare(res, truth, "ndcg@10", n_resamples=300)
    d = compare(runs, truth, "ndcg@10", n_resamples=300)
    pd.testing.assert_frame_equal(c.pairs, d.pairs)
    with pytest.raises(ReceValError, match="has no recall@10"):
        compare(res, truth, "recall@10")


def test_argument_errors(world: tuple[dict, dict]) -> None:
    truth, runs = world
    with pytest.raises(ReceValError, match="at least one"):
        compare({}, truth, "ndcg@10")
    with pytest.raises(ReceValError, match="test='anova' is not allowed: expected one of 't'"):
        compare(runs, truth, "ndcg@10", test="anova")
    with pytest.raises(
        ReceValError, match="correction='sidak' is not allowed: expected one of 'holm'"
    ):
        compare(runs, truth, "ndcg@10", correction="sidak")
    with pytest.raises(ReceValError, match="alpha"):
        compare(runs, truth, "ndcg@10", alpha=0)
    with pytest.raises(ReceValError, match="ci='normal' is not allowed: expected one of"):
        compare(runs, truth, "ndcg@10", ci="normal")
    with pytest.raises(OptionError, match="seed=-1 is not allowed") as info:
        compare(runs, truth, "ndcg@10", seed=-1)
    assert info.value.cli_message().startswith("--seed -1 is not allowed")


def test_letters_beyond_z() -> None:
    assert letters_for(27)[25:] == ["z", "aa"]
    assert len(set(letters_for(800))) == 800


def test_one_system_has_means_and_no_test(world: tuple[dict, dict]) -> None:
    truth, runs = world
    c = compare(
        {"good": runs["good"]},
        truth,
        ["ndcg@10", "coverage@10"],
        n_resamples=200,
        train={0: list(range(N_ITEMS))},
    )
    res = receval.evaluate(runs["good"], truth, "ndcg@10")
    assert c.table.loc[("ndcg@10", "good"), "mean"] == pytest.approx(res.summary["ndcg@10"])
    assert len(c.pairs) == 0 and c.settings["comparisons"] == 0
    assert c.footnote() == "No significance marks: one system, nothing to compare with."
    assert "Superscript" not in str(c) and "Superscript" not in c.to_markdown()


def test_no_per_user_metric_says_why_there_is_no_mark(world: tuple[dict, dict]) -> None:
    truth, runs = world
    c = compare(runs, truth, "coverage@10", train={0: list(range(N_ITEMS))})
    assert c.footnote() == "No significance marks: no per-user metric, so no paired test."


def test_footnotes_do_not_describe_intervals_a_table_does_not_show(cmp: Comparison) -> None:
    """Regression: the leaderboard footnote named bootstrap intervals under tables
    (console, LaTeX, Markdown leaderboard) that show none."""
    assert "nterval" not in cmp.footnote()
    text = str(cmp)
    assert "nterval" not in text and "bootstrap" not in text
    tex = cmp.to_latex()
    assert "nterval" not in tex and "CI" not in tex
    # the details show intervals: each says what they are
    details = cmp.to_latex(details=True)
    assert details.count("% Intervals: 95% bootstrap over users (bca, 2000 resamples") == 2
    md = cmp.to_markdown()
    board, rest = md.split("### ", 1)
    assert "bootstrap" not in board.split(cmp.footnote())[0]
    assert "Intervals in the tables below: 95% bootstrap over users (bca, 2000" in md
    assert "95% CI" in rest


def test_without_intervals_no_interval_column(world: tuple[dict, dict]) -> None:
    truth, runs = world
    c = compare(runs, truth, "ndcg@10", ci="none", n_resamples=200)
    assert c.interval_note() == "" and not c.has_intervals
    for text in (c.to_markdown(), c.to_latex(details=True), str(c)):
        assert "CI" not in text and "nterval" not in text and "[–, –]" not in text
    md = c.to_markdown()
    assert "| comparison | Δ mean | statistic | p | p (holm) | d |" in md
    assert "| system | mean |" in md


def test_csv_carries_p_values_and_no_tuple_reprs(cmp: Comparison) -> None:
    """Regression: CSV exports of a Comparison (the table) held tuple reprs such as
    "('random', 'weak')" and no p-value."""
    text = cmp.to_csv()
    assert "(" not in text and "'" not in text
    back = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    assert list(back.columns) == list(cmp.to_long().columns)
    n_rows = len(cmp.metrics) * len(cmp.systems) + len(cmp.pairs)
    assert len(back) == n_rows
    pairs = back[back["versus"].notna()].set_index(["metric", "system", "versus"])
    for key, row in cmp.pairs.iterrows():
        assert pairs.loc[key, "p_value"] == row["p_value"]  # full precision
        assert pairs.loc[key, "p_adjusted"] == row["p_adjusted"]
        assert bool(pairs.loc[key, "significant"]) == bool(row["significant"])
    systems = back[back["versus"].isna()].set_index(["metric", "system"])
    assert systems.loc[("ndcg@10", "good"), "beats"] == "random;weak"
    assert systems.loc[("ndcg@10", "good"), "wins"] == "ac"
    assert systems.loc[("ndcg@10", "good"), "users"] == 120
    assert math.isnan(systems.loc[("coverage@10", "good"), "users"])


def test_csv_written_to_a_path(cmp: Comparison, tmp_path) -> None:
    path = tmp_path / "cmp.csv"
    assert cmp.to_csv(path) == path.read_text(encoding="utf-8")


def test_markdown_marks_and_p_values_are_the_comparison(cmp: Comparison) -> None:
    md = cmp.to_markdown()
    board = [r for r in md.splitlines() if r.startswith("| ") and r.count("|") == 6]
    for row in board[1:]:
        _, letter, name, *cells, _ = (c.strip() for c in row.split("|"))
        assert cmp.letters[name] == letter
        for m, cell in zip(cmp.metrics, cells, strict=True):
            marks = re.findall(r"<sup>(\w+)</sup>", cell)
            assert (marks[0] if marks else "") == cmp.table.loc[(m, name), "wins"], (m, name)
    sections = dict(part.split("\n", 1) for part in md.split("### ")[1:])
    for (m, a, b), row in cmp.pairs.iterrows():
        line = next(x for x in sections[m].splitlines() if x.startswith(f"| {a} − {b} |"))
        cells = [c.strip() for c in line.split("|")]
        assert cells[5] == fmt_p(row["p_value"])
        assert cells[6] == fmt_p(row["p_adjusted"]) + (" *" if row["significant"] else "")


def test_randomised_tukey_hsd(world: tuple[dict, dict]) -> None:
    """compare(test="tukey"): each metric's pairs get the randomised Tukey HSD
    p-values of stats.tukey_hsd on the aligned values, drawn from the metric's
    sign-flip seed; no further correction (they are family-wise already)."""
    truth, runs = world
    metrics = ["recall@10", "ndcg@10", "coverage@10"]
    train = {0: list(range(N_ITEMS))}
    c = compare(runs, truth, metrics, test="tukey", n_resamples=600, seed=5, train=train)
    assert c.settings["test"] == "tukey" and c.settings["correction"] == "none"
    for j, m in enumerate(["recall@10", "ndcg@10"]):
        flip = np.random.SeedSequence(5).spawn(3)[j].spawn(2)[1]
        frame = c.aligned[m]  # tukey_hsd orders the rows itself: any order, the same p
        p = stats.tukey_hsd(frame[list(runs)].to_numpy(), n_resamples=600, seed=flip)
        names = list(runs)
        for (metric, a, b), row in c.pairs.loc[[m]].iterrows():
            assert row["p_value"] == p[names.index(a), names.index(b)], (metric, a, b)
            assert row["p_adjusted"] == row["p_value"]
            assert row["diff"] == pytest.approx(frame[a].mean() - frame[b].mean(), abs=1e-15)
    assert "randomised Tukey HSD test" in c.footnote() and "family-wise" in c.footnote()
    # the good system beats the others on every metric with users
    assert c.pairs.loc[("ndcg@10", "random", "good"), "winner"] == "good"
    with pytest.raises(OptionError, match="already control the family-wise"):
        compare(runs, truth, "ndcg@10", test="tukey", correction="holm")
    same = compare(runs, truth, "ndcg@10", test="tukey", correction="none", n_resamples=600)
    assert same.settings["correction"] == "none"
    default = compare(runs, truth, "ndcg@10", n_resamples=300)
    assert default.settings["correction"] == "holm"
    with pytest.raises(OptionError, match="permutes every user's systems at once"):
        compare(runs, truth, "ndcg@10", test="tukey", resampling="poisson")


def test_tukey_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from receval.cli import main

    truth, runs = _world(40)
    rows = [(u, i) for u, items in truth.items() for i in items]
    pd.DataFrame(rows, columns=["user", "item"]).to_csv(tmp_path / "truth.csv", index=False)
    paths = []
    for name, lists in runs.items():
        ranked = [(u, i, r) for u, items in lists.items() for r, i in enumerate(items, 1)]
        pd.DataFrame(ranked, columns=["user", "item", "rank"]).to_csv(
            tmp_path / f"{name}.csv", index=False
        )
        paths.append(str(tmp_path / f"{name}.csv"))
    args = ["compare", str(tmp_path / "truth.csv"), *paths, "-m", "ndcg@10", "--test", "tukey"]
    assert main([*args, "--n-resamples", "300", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["test"] == "tukey" and out["settings"]["correction"] == "none"
    want = compare(runs, truth, "ndcg@10", test="tukey", n_resamples=300)
    got = out["metrics"]["ndcg@10"]["comparisons"]
    assert [c["p_value"] for c in got] == want.pairs["p_value"].tolist()
    assert main([*args, "--correction", "bh"]) == 2
    assert "--correction bh is not allowed" in capsys.readouterr().err


def test_omnibus_tests_of_three_systems_or_more(world: tuple[dict, dict]) -> None:
    truth, runs = world
    c = compare(runs, truth, ["ndcg@10", "rr@10"], n_resamples=300)
    assert c.omnibus is not None and list(c.omnibus.index) == ["ndcg@10", "rr@10"]
    for m in ("ndcg@10", "rr@10"):
        x = c.aligned[m][list(runs)].to_numpy()
        f, df1, df2, p = stats.repeated_measures_anova(x)
        row = c.omnibus.loc[m]
        assert (row["anova_f"], row["anova_p"]) == (f, p)
        assert (row["anova_df1"], row["anova_df2"]) == (df1, df2)
        assert row["friedman_p"] == stats.friedman_test(x).pvalue
        assert row["users"] == len(x)
        assert row["anova_p"] < 1e-6  # a good, a weak and a random system
    assert c.to_dict()["omnibus"][0]["metric"] == "ndcg@10"
    two = compare({k: runs[k] for k in ("good", "weak")}, truth, "ndcg@10", n_resamples=300)
    assert two.omnibus is None


def test_effect_size_intervals_from_the_same_resamples(world: tuple[dict, dict]) -> None:
    """Each pair's Cohen's d gets the percentile interval of d* over the
    bootstrap resamples of its metric (the same users drawn as for the
    difference's interval), computed here from the literal index stream."""
    truth, runs = world
    c = compare(runs, truth, ["recall@10", "ndcg@10"], n_resamples=400, seed=5)
    boot = np.random.SeedSequence(5).spawn(2)[1].spawn(2)[0]  # ndcg@10: child 1
    frame = c.aligned["ndcg@10"]
    # what resampling sees: the differences in the orientation of positive mean
    # (good - random), in their order; random - good's numbers are the mirror
    d = np.sort((frame["good"] - frame["random"]).to_numpy())
    n = len(d)
    rng = np.random.default_rng(boot)
    rows = stats._block_rows(n, 400)
    star = []
    for start in range(0, 400, rows):
        idx = rng.integers(0, n, size=(min(rows, 400 - start), n), dtype=np.int64)
        for row in idx:
            sample = d[row]
            star.append(sample.mean() / sample.std(ddof=1))
    hi, lo = -np.quantile(np.array(star), [0.025, 0.975])
    row = c.pairs.loc[("ndcg@10", "random", "good")]
    assert row["effect_ci_low"] == pytest.approx(lo, rel=1e-9)
    assert row["effect_ci_high"] == pytest.approx(hi, rel=1e-9)
    assert row["effect_ci_low"] <= row["effect_size"] <= row["effect_ci_high"]
    assert "effect_ci_low" in c.to_long().columns
    got = c.to_dict()["metrics"]["ndcg@10"]["comparisons"][0]["effect_ci"]
    assert len(got) == 2
    none = compare(runs, truth, "ndcg@10", n_resamples=200, ci="none")
    assert none.pairs["effect_ci_low"].isna().all()


@pytest.mark.parametrize("test", ["randomization", "t", "wilcoxon", "tukey"])
def test_intervals_and_p_values_do_not_depend_on_the_ids(test):
    """The same users under other ids (text sorts apart from numbers) and in
    another row order: every interval and p-value the same bits (resampling by
    index sees the users in the order of their values)."""
    rng = np.random.default_rng(11)
    truth = {u: [int(i) for i in rng.choice(30, 3, replace=False)] for u in range(40)}
    runs = {s: {u: [int(i) for i in rng.permutation(30)[:8]] for u in range(40)} for s in "ABC"}

    def text(d):
        return {f"u{u}": [f"i{i}" for i in v] for u, v in reversed(list(d.items()))}

    groups = {u: u % 3 for u in range(40)}
    kw = dict(test=test, ci="bca", n_resamples=200, user_groups=None)
    one = receval.compare(runs, truth, ["ndcg@5", "rr@8"], **kw)
    other = receval.compare(
        {s: text(r) for s, r in runs.items()}, text(truth), ["ndcg@5", "rr@8"], **kw
    )
    assert one.table.equals(other.table)
    assert one.pairs.equals(other.pairs)
    if test != "tukey":
        kw["user_groups"] = groups
        g1 = receval.compare(runs, truth, "ndcg@5", **kw)
        kw["user_groups"] = {f"u{u}": g for u, g in groups.items()}
        g2 = receval.compare({s: text(r) for s, r in runs.items()}, text(truth), "ndcg@5", **kw)
        assert g1.by_group.keys() == g2.by_group.keys()
        for key, value in g1.by_group.items():
            assert value.table.equals(g2.by_group[key].table), key
            assert value.pairs.equals(g2.by_group[key].pairs), key


@pytest.mark.parametrize(
    ("test", "ci"), [("randomization", "bca"), ("t", "percentile"), ("tukey", "bca")]
)
def test_the_order_of_the_systems_moves_no_number(
    world: tuple[dict, dict], test: str, ci: str
) -> None:
    """The systems given in any order: each system's mean and interval bit for
    bit, each pair's numbers bit for bit or, given the other way round, their
    mirror (docs/compare.md, "Which users a resample draws")."""
    truth, runs = world
    runs = {**runs, "copy": dict(runs["weak"])}  # two equal columns too

    def numbers(order: list[str]) -> tuple[pd.DataFrame, dict]:
        c = compare(
            {k: runs[k] for k in order},
            truth,
            ["ndcg@10", "rr"],
            test=test,
            ci=ci,
            n_resamples=300,
            seed=3,
        )
        pairs = {}
        for (m, a, b), r in c.pairs.iterrows():
            s = 1.0 if a < b else -1.0
            lo, hi = ("ci_low", "ci_high")[:: int(s)]
            elo, ehi = ("effect_ci_low", "effect_ci_high")[:: int(s)]
            pairs[(m, *sorted((a, b)))] = (
                s * r["diff"],
                s * r[lo],
                s * r[hi],
                s * r["statistic"],
                r["p_value"],
                s * r["effect_size"],
                s * r[elo],
                s * r[ehi],
            )
        return c.table[["mean", "ci_low", "ci_high"]].sort_index(), pairs

    names = list(runs)
    first = numbers(names)
    for seed in range(3):
        order = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
        table, pairs = numbers(order)
        pd.testing.assert_frame_equal(table, first[0], check_exact=True)
        assert pairs.keys() == first[1].keys()
        for key, got in pairs.items():
            assert np.array_equal(got, first[1][key], equal_nan=True), (order, key)


def test_a_columns_resampled_bits_do_not_depend_on_where_it_stands() -> None:
    """BLAS sums a column of a matrix product by where it stands (a full tile or
    an edge) and by the matrix's layout: the resamples' products take the
    columns in the order of their values, in one layout, so that a column's
    numbers are the same bits in any order (here a few orders plain BLAS sums
    differently on this machine)."""
    from receval.analysis.compare import _canonical

    for n, k in [(50, 3), (50, 9), (333, 3), (1000, 5), (4097, 13)]:
        x = np.random.default_rng(n * k).random((n, k))
        x[:, 1] = x[:, 0]  # two equal columns: either order, the same numbers

        def means(m: np.ndarray) -> np.ndarray:
            return stats.bootstrap_means(m, 300, np.random.default_rng(1))

        want = _canonical(x, means)
        for t in range(4):
            perm = np.random.default_rng(t).permutation(k)
            assert np.array_equal(_canonical(x[:, perm], means), want[:, perm]), (n, k, perm)
            assert np.array_equal(_canonical(np.asfortranarray(x), means), want)


def test_results_evaluated_on_another_truth_are_refused() -> None:
    """Every system is compared on one truth: a Result that read other truth
    rows than the rest is an error naming both (SPEC §10)."""
    truth, other = {1: [1, 2], 2: [3]}, {1: [1], 2: [3]}
    a = receval.evaluate({1: [1, 5], 2: [3]}, truth, "rr@2")
    b = receval.evaluate({1: [2, 5], 2: [4]}, other, "rr@2")
    with pytest.raises(ReceValError, match=r"'a' read 3 truth rows of 2 users, 'b' 2 rows"):
        compare({"a": a, "b": b}, truth, "rr@2", n_resamples=99)
    with pytest.raises(ReceValError, match="different truths"):
        compare({"a": a, "b": {1: [2, 5], 2: [4]}}, other, "rr@2", n_resamples=99)
    same = compare({"a": a, "b": {1: [2, 5], 2: [4]}}, truth, "rr@2", n_resamples=99)
    assert same.table.loc[("rr@2", "b"), "mean"] == 0.5


def test_a_run_sharing_no_user_with_the_truth_is_named() -> None:
    with pytest.raises(receval.errors.NoSharedUser, match=r"^recommendations of 'b': no user"):
        compare({"a": {"u1": [1]}, "b": {9: [1]}}, {"u1": [1]}, "rr", n_resamples=99)
