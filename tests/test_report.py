"""receval.analysis.report: the HTML page (rendered in headless Chromium), its data and PNGs."""

from __future__ import annotations

import html as htmllib
import re
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.compare import compare
from receval.analysis.formatting import fmt_p, fmt_value
from receval.analysis.report import Report, report, svg
from receval.analysis.report.data import popularity_deciles, top_k_items
from receval.analysis.report.svg import bar_chart, box_plot, line_chart
from receval.errors import ReceValError
from tests.required import headless_chromium, imported, need_chromium

N_ITEMS, N_USERS = 60, 80


def _world() -> tuple[dict, dict, pd.DataFrame]:
    rng = np.random.default_rng(0)
    w = 1 / np.arange(1, N_ITEMS + 1)
    w /= w.sum()
    train = pd.DataFrame(
        {
            "user": np.repeat(np.arange(N_USERS), 8),
            "item": np.concatenate(
                [rng.choice(N_ITEMS, 8, replace=False, p=w) for _ in range(N_USERS)]
            ),
        }
    )
    truth = {
        u: [int(i) for i in rng.choice(N_ITEMS, 4, replace=False, p=w)] for u in range(N_USERS)
    }
    good = {}
    for u, rel in truth.items():
        rest = [int(i) for i in rng.permutation(N_ITEMS) if i not in rel]
        good[u] = rel[: int(rng.integers(0, 3))] + rest[:8]
    runs = {
        "most popular": {u: list(range(10)) for u in range(N_USERS)},
        "random": {u: [int(i) for i in rng.permutation(N_ITEMS)[:10]] for u in range(N_USERS)},
        "model <x&y>": good,
    }
    return truth, runs, train


@pytest.fixture(scope="module")
def rep(tmp_path_factory: pytest.TempPathFactory) -> Report:
    truth, runs, train = _world()
    out = tmp_path_factory.mktemp("report") / "report.html"
    return report(
        runs,
        truth,
        ["ndcg@10", "recall@5", "coverage@10"],
        train=train,
        out=out,
        n_resamples=500,
        title="Test report",
        user_groups={u: "early" if u < N_USERS // 2 else "late" for u in range(N_USERS)},
        item_groups=ITEM_GROUPS,
        next_items=_next_item_results(),
    )


def _next_item_results() -> dict[str, receval.NextItemResult]:
    """Two sequential models on 30 random sessions (the section "Next items")."""
    rng = np.random.default_rng(3)
    sessions = {
        s: [int(i) for i in rng.choice(N_ITEMS, int(rng.integers(2, 8)))] for s in range(30)
    }
    good, random = {}, {}
    for s, items in sessions.items():
        for t in range(1, len(items)):
            noise = [int(i) for i in rng.permutation(N_ITEMS) if i != items[t]][:5]
            good[(s, t)] = ([items[t]] if rng.random() < 0.6 else []) + noise
            random[(s, t)] = noise
    return {
        name: receval.evaluate_next_items(lists, sessions, ["mrr@5", "recall@5"])
        for name, lists in (("sequential", good), ("random", random))
    }


#: item groups by popularity rank of the id (the world's popularity falls with the id);
#: multiples of 7 are also in "seven"
ITEM_GROUPS = {
    i: ["head" if i < 10 else "torso" if i < 30 else "tail"] + (["seven"] if i % 7 == 0 else [])
    for i in range(N_ITEMS)
}


def test_report_is_self_contained(rep: Report) -> None:
    html = rep.html
    assert rep.path is not None and rep.path.read_text(encoding="utf-8") == html
    assert "<script" not in html.lower()
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", html)
    assert "@import" not in html and "url(" not in html
    assert html.count('class="chart"') == len(rep.charts)
    # user text is escaped
    assert "model &lt;x&amp;y&gt;" in html and "<x&y>" not in html


def test_report_content(rep: Report) -> None:
    assert rep.charts == [
        "curve-ndcg",
        "curve-recall",
        "curve-precision",
        "curve-coverage",
        "pr-curve",
        "dist-ndcg@10",
        "dist-recall@5",
        "popularity",
        "coverage",
        "group-group-ndcg@10",
        "group-group-recall@5",
        "group-group-coverage@10",
        "item-exposure",
        "position-rr@5",
        "position-recall@5",
    ]
    assert rep.max_k == 10
    html = rep.html
    for text in (
        "Leaderboard",
        "Pairwise comparisons",
        "Precision–recall",
        "Popularity bias",
        "receval version " + receval.__version__,
        "missing_recs",
        "score descending, then item id ascending",
        "Holm correction",
    ):
        assert text in html
    # the leaderboard marks agree with the comparison
    for (metric, system), row in rep.comparison.table.iterrows():
        if row["wins"]:
            assert f'<sup class="wins">{row["wins"]}</sup>' in html, (metric, system)


def test_groups_section(rep: Report) -> None:
    """The section by user group draws the comparison within each group: its
    bars are the groups' means, its tables the groups' leaderboards."""
    cmp = rep.comparison
    assert cmp.by_group is not None and list(cmp.by_group) == [
        ("group", "early"),
        ("group", "late"),
    ]
    section = rep.html.split("id='user-groups'")[1].split("</section>")[0]
    assert section.count('<table class="leaderboard">') == 2
    for (_, label), sub in cmp.by_group.items():
        row = sub.table.loc[("ndcg@10", "random")]
        assert f"random · {label}: " in section
        assert fmt_value(row["mean"]) in section
        # each bar's interval: a whisker, and its bounds in the bar's title
        bounds = f"[{svg._label(row['ci_low'])}, {svg._label(row['ci_high'])}]</title>"
        assert f"random · {label}: {svg._label(row['mean'])} {bounds}" in section
    # a whisker per bar of a per-user metric: 2 metrics x 2 groups x 3 systems
    # (coverage@10 is one value per system: no interval)
    assert section.count('class="interval"') == 12
    assert "Intervals (whiskers): 95% bootstrap over users" in section
    truth, runs, train = _world()
    early = [u for u in range(N_USERS) if u < N_USERS // 2]
    alone = compare(
        {k: {u: v[u] for u in early} for k, v in runs.items()},
        {u: truth[u] for u in early},
        ["ndcg@10", "recall@5", "coverage@10"],
        train=train,
        n_resamples=500,
        test="t",
        ci="bca",
    )
    pd.testing.assert_frame_equal(cmp.by_group[("group", "early")].table, alone.table)


def test_item_groups_section(rep: Report) -> None:
    """The section by item group draws each system's Result.item_groups: its
    bars are the groups' exposure and catalog shares, its table every column."""
    section = rep.html.split("id='item-groups'")[1].split("</section>")[0]
    for s in rep.comparison.systems:
        table = rep.comparison.results[s].item_groups
        assert table is not None and list(table.index.get_level_values(1)) == [
            "head",
            "seven",
            "tail",
            "torso",
        ]
        for (_, label), value in table["exposure@10"].items():
            assert f"{htmllib.escape(s)} · {label}: {svg._label(value)}</title>" in section
    first = rep.comparison.results["random"].item_groups
    for (_, label), value in first["catalog_share"].items():
        assert f"catalog share · {label}: {svg._label(value)}</title>" in section
    assert section.count("<tr><td class='name'>") == 4
    assert "exposure@10 · a" in section and "coverage@10 · c" in section


def test_curves_are_evaluate_at_each_k(rep: Report) -> None:
    truth, runs, train = _world()
    res = receval.evaluate(runs["random"], truth, "ndcg@1-10", train=train)
    sub = rep.curves[(rep.curves["system"] == "random") & (rep.curves["metric"] == "ndcg")]
    assert sub["k"].tolist() == list(range(1, 11))
    expected = [res.summary[f"ndcg@{k}"] for k in range(1, 11)]
    assert sub["value"].to_numpy() == pytest.approx(expected)
    cov = receval.evaluate(runs["most popular"], truth, "coverage@10", train=train)
    assert rep.coverage is not None
    assert rep.coverage["most popular"] == pytest.approx(cov.summary["coverage@10"])


def test_popularity_deciles(rep: Report) -> None:
    pop = rep.popularity
    assert pop is not None
    assert pop.sum(axis=1).to_numpy() == pytest.approx(1.0)
    # the ten most popular items cover the first decile(s) only
    assert pop.loc["most popular", "1"] + pop.loc["most popular", "2"] == pytest.approx(1.0)
    assert pop.loc["training data", "1"] > pop.loc["training data", "10"]


def test_popularity_deciles_by_hand() -> None:
    # pop: item 1 -> 3 users, item 2 -> 2, items 3..10 -> 1; catalog 10 items, one per decile
    train = {0: [1, 2, 3, 4, 5], 1: [1, 2, 6, 7], 2: [1, 8, 9, 10]}
    tops = {"s": top_k_items({"u": [2, 10, 99], "v": [1, 2]}, 2)}
    f = popularity_deciles(tops, train=train)
    assert f.loc["s", "1"] == pytest.approx(0.25)  # item 1
    assert f.loc["s", "2"] == pytest.approx(0.5)  # item 2, twice
    assert f.loc["s", "10"] == pytest.approx(0.25)  # item 10 (ties by id: last)
    assert f.loc["s", "outside"] == 0.0  # 99 is third in u's list, cut at k=2
    assert f.loc["training data", "1"] == pytest.approx(3 / 13)


def test_top_k_orders_scores_like_evaluate() -> None:
    recs = pd.DataFrame({"user": [1, 1, 1, 2], "item": [5, 3, 4, 9], "score": [0.5, 0.9, 0.5, 1]})
    top = top_k_items(recs, 2)
    assert top["item"].tolist() == [3, 4, 9]  # tie 0.5: item 4 before 5


def test_without_training_data_no_popularity_chart() -> None:
    truth, runs, _ = _world()
    r = report(runs, truth, "ndcg@3", n_resamples=100, ci="percentile")
    assert r.popularity is None and r.coverage is None
    assert "popularity" not in r.charts and "Popularity bias" not in r.html
    assert r.max_k == 3


def test_report_errors() -> None:
    truth, runs, _ = _world()
    res = {k: receval.evaluate(v, truth, "ndcg@3") for k, v in runs.items()}
    with pytest.raises(ReceValError, match="not an evaluated Result"):
        report(res, truth, "ndcg@3")
    with pytest.raises(ReceValError, match="max_k"):
        report(runs, truth, "ndcg@3", max_k=0)


def test_png_images(tmp_path: Path) -> None:
    imported("matplotlib")
    truth, runs, train = _world()
    r = report(runs, truth, ["ndcg@5"], train=train, png_dir=tmp_path / "png", n_resamples=100)
    names = sorted(p.name for p in r.images)
    assert names == sorted(
        [
            "curve_ndcg.png",
            "curve_precision.png",
            "curve_recall.png",
            "curve_coverage.png",
            "pr_curve.png",
            "distribution_ndcg_5.png",
            "popularity.png",
        ]
    )
    import matplotlib.image as mpimg

    for p in r.images:
        img = mpimg.imread(p)
        assert img.shape[0] > 100 and np.ptp(img[..., :3]) > 0.5, p.name


def test_svg_helpers_are_well_formed() -> None:
    import xml.etree.ElementTree as ET

    charts = [
        line_chart(
            "l",
            "t <&>",
            {"a&b": ([1, 2, 3], [0.1, float("nan"), 0.3])},
            xlabel="k",
            ylabel="v",
            integer_x=True,
        ),
        bar_chart("b", "t", ["1", "2"], {"x": [0.5, 0.25]}, xlabel="", ylabel=""),
        box_plot("x", "t", {"a": np.linspace(0, 1, 50), "empty": []}, ylabel="v"),
        line_chart("e", "empty", {}, xlabel="", ylabel=""),
    ]
    for c in charts:
        root = ET.fromstring(c)
        assert root.tag.endswith("svg")


def _cells(html: str) -> dict[tuple[str, str], str]:
    """Leaderboard cells by (metric, system): their marks."""
    out = {}
    for m, sys_, body in re.findall(
        r'<td data-metric="([^"]+)" data-system="([^"]+)">(.*?)</td>', html
    ):
        marks = re.findall(r'<sup class="wins">([^<]*)</sup>', body)
        out[(htmllib.unescape(m), htmllib.unescape(sys_))] = marks[0] if marks else ""
    return out


def _pair_p(html: str) -> dict[tuple[str, str, str], tuple[str, str]]:
    """Pairwise rows by (metric, system, versus): raw and corrected p as printed."""
    out = {}
    for key, body in re.findall(r'<tr data-pair="([^"]+)">(.*?)</tr>', html):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", body)]
        m, a, b = htmllib.unescape(key).split("|")
        out[(m, a, b)] = (cells[-4], cells[-3].removesuffix(" *"))
    return out


def test_report_draws_the_comparison_given() -> None:
    truth, runs, train = _world()
    cmp = compare(runs, truth, ["ndcg@10", "recall@5", "coverage@10"], train=train, n_resamples=300)
    rep = report(runs, truth, comparison=cmp, train=train)
    assert rep.comparison is cmp
    cells = _cells(rep.html)
    assert len(cells) == len(cmp.metrics) * len(cmp.systems)
    for (m, s), wins in cells.items():
        assert wins == cmp.table.loc[(m, s), "wins"]
    printed = _pair_p(rep.html)
    assert len(printed) == len(cmp.pairs)
    for key, row in cmp.pairs.iterrows():
        assert printed[key] == (fmt_p(row["p_value"]), fmt_p(row["p_adjusted"]))
    assert htmllib.escape(cmp.footnote(), quote=False) in rep.html
    # the same numbers as asking report to compare with the same settings
    again = report(
        runs, truth, ["ndcg@10", "recall@5", "coverage@10"], train=train, n_resamples=300
    )
    pd.testing.assert_frame_equal(again.comparison.pairs, cmp.pairs)


def test_report_refuses_a_comparison_it_cannot_draw() -> None:
    truth, runs, train = _world()
    cmp = compare(runs, truth, ["ndcg@5"], train=train, n_resamples=100)
    with pytest.raises(ReceValError, match="test cannot be given with comparison="):
        report(runs, truth, comparison=cmp, train=train, test="wilcoxon")
    with pytest.raises(ReceValError, match="not the systems of the comparison"):
        report({k: runs[k] for k in ("random", "most popular")}, truth, comparison=cmp, train=train)
    with pytest.raises(ReceValError, match="not those of the comparison"):
        report(runs, truth, "ndcg@10", comparison=cmp, train=train)
    # the curves would be evaluated under other options than the leaderboard
    with pytest.raises(ReceValError, match=r"compared with depth=None .* has depth=3"):
        report(runs, truth, comparison=cmp, train=train, depth=3)
    with pytest.raises(ReceValError, match="needs metrics"):
        report(runs, truth)


def test_report_of_one_run() -> None:
    """Regression: report refused a single run although its help says "one or more"."""
    truth, runs, train = _world()
    rep = report({"random": runs["random"]}, truth, "ndcg@5", train=train, n_resamples=100)
    assert rep.comparison.systems == ["random"] and len(rep.comparison.pairs) == 0
    assert "One system: nothing to compare." in rep.html
    assert "No significance marks: one system" in rep.html
    assert "dist-ndcg@5" in rep.charts and "popularity" in rep.charts
    assert "1 system ·" in rep.html


def test_png_without_matplotlib_still_writes_the_html(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: report(png_dir=...) without matplotlib failed before writing the HTML."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    truth, runs, _ = _world()
    out = tmp_path / "r.html"
    rep = report(runs, truth, "ndcg@3", out=out, png_dir=tmp_path / "png", n_resamples=100)
    assert out.read_text(encoding="utf-8") == rep.html
    assert rep.images == [] and not (tmp_path / "png").exists()
    assert len(rep.notes) == 1
    assert "matplotlib" in rep.notes[0] and "pip install 'receval[plot]'" in rep.notes[0]
    assert rep.notes[0].endswith("the HTML report was written") and rep.notes[0] in str(rep)


def _captions(html: str) -> dict[str, str]:
    figures = re.findall(r"<figure>(.*?)</figure>", html, flags=re.S)
    out = {}
    for fig in figures:
        cid = re.search(r'data-chart="([^"]+)"', fig)
        cap = re.search(r"<figcaption>(.*?)</figcaption>", fig, flags=re.S)
        assert cid and cap
        out[cid.group(1)] = htmllib.unescape(cap.group(1))
    return out


def test_captions_say_what_is_drawn() -> None:
    truth, runs, train = _world()
    rep = report(runs, truth, ["ndcg@10", "coverage@10"], train=train, max_k=5, n_resamples=100)
    caps = _captions(rep.html)
    assert list(caps) == rep.charts
    # "mean over users" only under means
    for cid in ("curve-ndcg", "curve-precision", "curve-recall", "pr-curve"):
        assert "mean over the users evaluated" in caps[cid], cid
    for cid in ("curve-coverage", "coverage", "popularity", "dist-ndcg@10"):
        assert "mean over" not in caps[cid], cid
    # the coverage chart is at the k it names (max_k = 5, not the leaderboard's 10)
    assert "Catalog coverage@5" in rep.html
    assert caps["coverage"].startswith("coverage@5: share of catalog items in the top 5")
    assert rep.coverage is not None
    cov = receval.evaluate(runs["random"], truth, "coverage@5", train=train)
    assert rep.coverage["random"] == cov.summary["coverage@5"]
    assert "top-5" in caps["popularity"] and "Popularity bias (top-5)" in rep.html
    assert caps["dist-ndcg@10"].startswith(f"ndcg@10 of each of the {N_USERS} users compared")


def test_interval_notes_only_where_intervals_are_shown() -> None:
    truth, runs, _ = _world()
    with_ci = report(runs, truth, "ndcg@3", n_resamples=100, ci="percentile")
    assert "Intervals in brackets under each mean: 95% bootstrap" in with_ci.html
    assert "CI of Δ" in with_ci.html
    none = report(runs, truth, "ndcg@3", n_resamples=100, ci="none")
    assert "nterval" not in none.html and "CI of Δ" not in none.html
    assert 'class="ci"' not in none.html


def test_provenance_shows_the_facts_given() -> None:
    truth, runs, _ = _world()
    rep = report(
        runs, truth, "ndcg@3", n_resamples=100, provenance={"relevance": "rating ≥ 4 <graded>"}
    )
    assert "<h3>Data and protocol</h3>" in rep.html
    assert "<dt>relevance</dt><dd>rating ≥ 4 &lt;graded&gt;</dd>" in rep.html


# -- a real browser ------------------------------------------------------------------


def _png_pixels(path: Path) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG with zlib only."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, ihdr = 8, [], b""
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            ihdr = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + n
    width, height = int.from_bytes(ihdr[0:4], "big"), int.from_bytes(ihdr[4:8], "big")
    depth, ctype, interlace = ihdr[8], ihdr[9], ihdr[12]
    assert depth == 8 and ctype in (2, 6) and interlace == 0
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (line[x] + pred) & 255
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)[..., :3]


def test_report_renders_in_headless_chromium(rep: Report, tmp_path: Path) -> None:
    need_chromium()
    assert rep.path is not None
    url = rep.path.resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        dom = headless_chromium("--dump-dom", url, profile=profile)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    for key in (
        "Test report",
        "Leaderboard",
        "Pairwise comparisons",
        "most popular",
        "Metrics at every cut-off",
        "Distribution of per-user values",
        "Popularity bias and coverage",
        "By user group",
        "group = early (40 users)",
        "By item group",
        "Next items: metric by position in session",
        "Paired comparison over sessions",
        "How these numbers were produced",
    ):
        assert key in text, key
    found = re.findall(r'<svg class="chart" data-chart="([^"]+)"', text)
    assert found == rep.charts
    assert text.count("<polyline") >= 3 * 5  # 3 systems × (4 curves + PR)

    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        run = headless_chromium(
            f"--screenshot={shot}", "--window-size=1280,2000", url, profile=profile
        )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    try:
        import matplotlib.image as mpimg

        pixels = (mpimg.imread(shot)[..., :3] * 255).round().astype(np.uint8)
    except ImportError:  # pragma: no cover - matplotlib is a test dependency
        pixels = _png_pixels(shot)
    assert pixels.shape[:2] == (2000, 1280)
    colours = np.unique(pixels.reshape(-1, 3)[::97], axis=0)
    assert len(colours) > 20, "the screenshot is (nearly) one colour"
    # the chart colours are on the page: blue and vermillion series
    flat = pixels.reshape(-1, 3).astype(int)
    assert (np.abs(flat - [0x00, 0x72, 0xB2]).sum(axis=1) < 30).any()
    assert (np.abs(flat - [0xD5, 0x5E, 0x00]).sum(axis=1) < 30).any()
