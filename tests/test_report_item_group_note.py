"""The report's section by item group tells which metrics of the item groups
are per user by their declaration (MetricDef.per_user_of_item_groups), never
by their names (issue #30)."""

from __future__ import annotations

import html

import pytest

from receval.analysis.report import report
from receval.metrics.registry import REGISTRY

RECS = {
    "a": {1: [10, 11, 12], 2: [12, 13, 10], 3: [14, 10], 4: [11, 13]},
    "b": {1: [13, 14, 10], 2: [10, 11, 12], 3: [12, 11], 4: [14, 10]},
}
TRUTH = {1: [10, 13], 2: [13], 3: [11, 14], 4: [10]}
TRAIN = {1: [11, 14], 2: [10, 14], 3: [12], 4: [13, 12]}
GROUPS = {10: "pop", 11: "pop", 12: ["pop", "tail"], 13: "tail", 14: "tail"}


def test_the_per_user_metrics_of_the_item_groups_are_declared() -> None:
    found = {name for name, d in REGISTRY.items() if d.per_user_of_item_groups}
    assert found == {"awrf", "miscalibration"}
    for name in ("rsp", "reo", "exposure"):  # aggregates of the item groups
        assert "item_groups" in REGISTRY[name].needs and REGISTRY[name].kind == "aggregate"


@pytest.mark.parametrize(
    ("metrics", "named"),
    [
        (["miscalibration@2", "rsp@2"], "miscalibration@2 is"),
        (["awrf@2", "c_kl@2", "reo@2"], "awrf@2, miscalibration@2 are"),
        (["rsp@2"], None),
    ],
)
def test_the_section_points_to_their_distributions(metrics: list[str], named: str | None) -> None:
    page = report(RECS, TRUTH, metrics, train=TRAIN, item_groups=GROUPS, n_resamples=50).html
    section = page.split("id='item-groups'")[1].split("</section>")[0]
    note = html.escape("Columns: each system's value (by letter).", quote=True)
    assert note in section
    if named is None:
        assert "per-user distribution" not in section
    else:
        want = f"The per-user distribution of {named} under 'Distribution of per-user values'."
        assert html.escape(want, quote=True) in section
