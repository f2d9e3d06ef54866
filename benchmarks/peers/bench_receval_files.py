"""receval end to end from the Parquet files: ``receval.evaluate(path, path)``.

    python benchmarks/peers/bench_receval_files.py --recs R --truth T [--out result.json]

Unlike every other runner, nothing is read beforehand: receval streams both
files by chunks of users (``receval.io.stream``), so reading and computing
overlap and memory stays bounded. The whole run is reported as ``compute_s``
with ``read_s`` = 0, so that "total" is end to end as for the others.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recs", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    import receval

    _common.warm_reader()
    t0 = time.perf_counter()
    res = receval.evaluate(args.recs, args.truth, _common.STANDARD_SPEC)
    total = time.perf_counter() - t0
    result = {
        "library": "receval_files",
        "version": receval.__version__,
        "python": sys.executable,
        "metrics": {k: float(v) for k, v in res.summary.items()},
        "read_s": 0.0,
        "compute_s": round(total, 4),
        "peak_rss_mib": round(_common.peak_rss_mib(), 1),
        "recs_rows": int(res.counts["recommendation_rows"]),
        "truth_rows": int(res.counts["truth_rows"]),
        "convention": {"metrics": {m: m for m in _common.STANDARD_METRICS}},
    }
    text = json.dumps(result, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
