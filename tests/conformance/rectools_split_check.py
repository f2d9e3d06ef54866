"""Run RecTools' TimeRangeSplitter on a log (under the rectools conformance
interpreter): ``python rectools_split_check.py IN.parquet OUT.json PARAMS_JSON``.

IN.parquet has ``user_id``, ``item_id``, ``datetime`` (and ``row``); the
output holds, per fold, the test window's borders and the ``row`` values of
train and test, as RecTools gives them."""

from __future__ import annotations

import json
import sys

import pandas as pd
from rectools import Columns
from rectools.dataset import Interactions
from rectools.model_selection import TimeRangeSplitter


def main() -> None:
    src, out, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    df = pd.read_parquet(src)
    rows = df["row"].to_numpy()
    frame = df[["user_id", "item_id", "datetime"]].assign(weight=1.0)
    frame = frame.rename(
        columns={
            "user_id": Columns.User,
            "item_id": Columns.Item,
            "datetime": Columns.Datetime,
            "weight": Columns.Weight,
        }
    )
    interactions = Interactions(frame)
    splitter = TimeRangeSplitter(
        params["test_size"],
        params["n_splits"],
        filter_cold_users=params["filter_cold_users"],
        filter_cold_items=params["filter_cold_items"],
        filter_already_seen=params["filter_already_seen"],
    )
    folds = []
    for train_idx, test_idx, info in splitter.split(interactions):
        folds.append(
            {
                "start": str(info["start"]),
                "end": str(info["end"]),
                "train": sorted(int(r) for r in rows[train_idx]),
                "test": sorted(int(r) for r in rows[test_idx]),
            }
        )
    with open(out, "w", encoding="utf-8") as f:
        json.dump(folds, f)


if __name__ == "__main__":
    main()
