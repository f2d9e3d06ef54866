"""A library is a good guest (#17 point 6): calling receval changes nothing
global in the host process — garbage collection, the allocator, matplotlib's
backend and figures, warnings. Each check runs in a fresh interpreter, since
it is process state that is under test."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from tests.required import imported

# 250,000 recommendation rows: above receval._malloc.MIN_ROWS, several chunks.
_INPUTS = """
import numpy as np, pandas as pd, receval
rng = np.random.default_rng(0)
users = np.repeat(np.arange(5000), 50)
recs = pd.DataFrame({"user": users, "item": rng.integers(0, 10**6, len(users)),
                     "rank": np.tile(np.arange(1, 51), 5000)}).drop_duplicates(["user", "item"])
truth = recs.sample(frac=0.1, random_state=1)[["user", "item"]]
METRICS = ["ndcg@10", "ap@50", "recall@20", "hit_rate@5"]
"""


def _run(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "RECEVAL_MALLOC"}
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-c", _INPUTS + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_host_thread_sees_gc_enabled_throughout_an_evaluation() -> None:
    out = _run(
        """
        import gc, threading, time
        samples, stop = [], threading.Event()
        def sample():
            while not stop.is_set():
                samples.append(gc.isenabled())
                time.sleep(0.0005)
        t = threading.Thread(target=sample, daemon=True)
        t.start()
        try:
            for _ in range(3):
                receval.evaluate(recs, truth, METRICS)
        finally:
            stop.set()
        t.join()
        assert len(samples) > 10, len(samples)
        assert all(samples), f"gc off in {samples.count(False)} of {len(samples)} samples"
        assert gc.isenabled()
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_host_with_gc_disabled_keeps_it_disabled() -> None:
    """Disabled before the call, or by the host while an evaluation runs on
    another thread: it is still disabled afterwards."""
    out = _run(
        """
        import gc, threading, time
        gc.disable()
        receval.evaluate(recs, truth, METRICS)
        print(gc.isenabled())
        gc.enable()
        def work():
            for _ in range(3):
                receval.evaluate(recs, truth, METRICS)
        t = threading.Thread(target=work)
        t.start()
        time.sleep(0.05)
        gc.disable()  # the host changes its mind mid-evaluation
        t.join()
        print(gc.isenabled())
        """
    )
    assert out.split() == ["False", "False"]


# What glibc keeps after the host frees 200 MiB of 64 KiB blocks: untouched,
# the allocator trims its heap (dynamic trim threshold <= 64 MiB); tuned by
# receval._malloc (M_TRIM_THRESHOLD 512 MiB) it keeps all of it. The array of
# pointers is allocated before the blocks: a Python list grown while they are
# allocated could land above them (where, depends on the heap the evaluation
# left), and a live chunk at the top of the heap stops any trim (this test
# failed that way, 222 MiB kept, in 1 run of 2 in a fresh venv).
_KEPT = """
import ctypes
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd"
                " usmblks fsmblks uordblks fordblks keepcost".split()]
libc.mallinfo2.restype = Info
blocks = (ctypes.c_void_p * 3200)()  # allocated before the blocks, so below them
for i in range(len(blocks)):
    blocks[i] = libc.malloc(64 << 10)
for i in reversed(range(len(blocks))):
    libc.free(blocks[i])
print(libc.mallinfo2().arena >> 20)
"""

_glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)


@_glibc
def test_a_library_call_leaves_the_allocator_alone() -> None:
    kept = _run("receval.evaluate(recs, truth, METRICS)\n" + _KEPT)
    assert int(kept) < 150, f"{kept} MiB of freed heap kept: the allocator was tuned"


@_glibc
def test_the_probe_sees_a_tuned_allocator() -> None:
    """The same probe, in a process that opted in (what the receval command does)."""
    code = "from receval import _malloc\n_malloc.allow()\nreceval.evaluate(recs, truth, METRICS)\n"
    assert int(_run(code + _KEPT)) >= 200
    assert int(_run("receval.evaluate(recs, truth, METRICS)\n" + _KEPT, RECEVAL_MALLOC="1")) >= 200
    assert int(_run(code + _KEPT, RECEVAL_MALLOC="0")) < 150


def test_no_warning_during_an_evaluation() -> None:
    out = _run(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            receval.evaluate(recs, truth, METRICS)
            # users without truth, without recommendations, with one item: edge cases
            small = recs[recs["user"] < 50]
            t = pd.concat([truth[truth["user"] < 40],
                           pd.DataFrame({"user": [10**7], "item": [1]})])
            receval.evaluate(small, t, METRICS + ["mrr@5", "gini@10", "novelty@10"],
                             train=recs[recs["user"] < 200], empty_truth="zero")
        assert caught == [], [str(w.message) for w in caught]
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_report_with_pngs_leaves_matplotlib_as_it_was(tmp_path) -> None:
    imported("matplotlib")
    out = _run(
        f"""
        import warnings
        import matplotlib
        matplotlib.use("svg")
        import matplotlib.pyplot as plt
        plt.figure()
        before = (matplotlib.get_backend(), plt.get_fignums(), matplotlib.is_interactive())
        small = recs[recs["user"] < 300]
        runs = {{"a": small, "b": small.assign(item=small["item"] + 1)}}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rep = receval.report(runs, truth[truth["user"] < 300], "ndcg@5",
                                 train=recs[recs["user"] < 600],
                                 png_dir={str(tmp_path / "png")!r}, n_resamples=50)
        assert caught == [], [str(w.message) for w in caught]
        after = (matplotlib.get_backend(), plt.get_fignums(), matplotlib.is_interactive())
        assert before == after, (before, after)
        assert len(rep.images) >= 5 and all(p.stat().st_size > 1000 for p in rep.images)
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_tests_on_nearly_equal_values_warn_nothing_and_touch_no_filter() -> None:
    """The paired t-test computes t itself (SciPy's ttest_1samp warns on nearly
    identical data, and silencing it would rewrite the host's warning filters,
    which are process-wide): no warning, and warnings.filters is not touched."""
    import warnings

    from receval.analysis.stats import paired_t_test, wilcoxon_test

    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        inside = list(warnings.filters)
        t = paired_t_test([1e-17, 1e-17 + 1e-33, 1e-17])
        w = wilcoxon_test([1.0, 1.0, -2.0, 3.0])
        assert list(warnings.filters) == inside
    assert not seen, [str(s.message) for s in seen]
    assert list(warnings.filters) == before
    assert t.pvalue < 1e-30 and w.pvalue == 0.625


def test_subpackages_are_attributes_after_import_receval() -> None:
    """`import receval` is lazy, yet `receval.evaluation.conventions` and
    `receval.analysis.stats` work as they did when everything loaded eagerly."""
    _run(
        """
        assert receval.evaluation.conventions.get('trec_eval').name == 'trec_eval'
        assert callable(receval.analysis.stats.paired_t_test)
        assert callable(receval.metrics) and 'ndcg' in receval.metrics()
        """
    )
