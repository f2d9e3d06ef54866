"""Instructions of the in-memory evaluation, for valgrind's callgrind.

Three evaluations of the 12 standard metrics on the 20k-user workload read
into Arrow tables (read before the measured part starts), the measure used
since issue #18 to compare two trees where wall time cannot resolve a few
percent (benchmarks/README.md):

    python benchmarks/workload.py --users 20000 --out bench-data/20000 --seed 0
    valgrind --tool=callgrind --callgrind-out-file=cg.out \\
        python benchmarks/callgrind_eval.py bench-data/20000
    callgrind_annotate cg.out | head -20        # the PROGRAM TOTALS line

and once more with ``--repeat 0`` (imports and reading only) to subtract.

``PYTHONPATH=OLD/src`` runs another tree's receval on the same files.
With ``--ids text`` the ids are written as text (``u1``, ``i7``), the path of
string ids (the text rule and the tie order of issue #30).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import _common


def _as_text(table, prefix):  # type: ignore[no-untyped-def]
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(pa.scalar(prefix), pc.cast(table, pa.string()), "")


def main() -> None:
    import pyarrow.parquet as pq

    import receval

    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--ids", choices=("int", "text"), default="int")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    recs = pq.read_table(os.path.join(args.data, "recs.parquet"))
    truth = pq.read_table(os.path.join(args.data, "truth.parquet"))
    if args.ids == "text":
        for name in ("recs", "truth"):
            t = recs if name == "recs" else truth
            for col, prefix in (("user", "u"), ("item", "i")):
                i = t.column_names.index(col)
                t = t.set_column(i, col, _as_text(t.column(col), prefix))
            recs, truth = (t, truth) if name == "recs" else (recs, t)
    for _ in range(args.repeat):  # --repeat 0: the cost of the start alone, to subtract
        res = receval.evaluate(recs, truth, _common.STANDARD_SPEC)
        print(res.summary)


if __name__ == "__main__":
    main()
