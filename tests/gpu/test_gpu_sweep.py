"""What the GPU sweep must show on real vLLM CUDA, on either model set: every method served and measured, the
collector's cross-checks exact, greedy output identical to the baseline's (or a near tie), bench cells at 1, 4 and
16, and each start-up's runner, async state and phases in the bundle. The lossless test (test_gpu_lossless.py),
the cached second start (test_gpu_cached.py) and the trained weights' own test (test_gpu_trained.py) are collected
when the run has them (tests/gpu/conftest.py)."""

from __future__ import annotations

import pytest

from specstack.config import methods
from tests.gpu.conftest import CONCURRENCIES, METHODS, PLATFORM, REPEATS, TASKS, report_table

pytestmark = pytest.mark.gpu

SPEC_METHODS = [m for m in METHODS if methods.is_speculative(m)]


@pytest.mark.parametrize("method", METHODS)
def test_method_ran(gpu_sweep, method):
    summary = gpu_sweep["summaries"][method]
    assert summary["status"] == "ok", summary["error"]


@pytest.mark.parametrize("method", SPEC_METHODS)
def test_crosscheck_exact(gpu_sweep, method):
    """/metrics deltas and per-request acceptance agree exactly, on checks that really ran."""
    check = gpu_sweep["summaries"][method]["crosscheck"]
    assert check["ok"] and not check["mismatches"], check
    assert check["checks"] > 0


@pytest.mark.parametrize("method", SPEC_METHODS)
def test_greedy_equal_to_baseline(gpu_sweep, method):
    """Equal, or each divergence at a near tie of the baseline's own choice (its top-2 log-probs, gap within a
    bf16 logit's rounding): vLLM promises losslessness up to hardware numerics, and a verify step computes the
    target in another batch shape than plain decode (docs/gpu.md: the H200 run of 2026-12-02 diverged 2 of 8)."""
    rows = [r for r in report_table(gpu_sweep["run_dir"], "equality_summary") if r["method"] == method]
    assert rows, f"no greedy-equality row for {method}"
    for row in rows:
        # near_ties is empty where nothing diverged, so the CSV holds the column as floats ("2.0")
        compared, equal = int(row["compared"]), int(row["equal"])
        assert compared > 0 and equal + int(float(row["near_ties"] or 0)) == compared, row


@pytest.mark.parametrize("method", METHODS)
def test_bench_cells(gpu_sweep, method):
    """Every task measured at every concurrency, each cell REPEATS times, no request failed."""
    tasks = gpu_sweep["summaries"][method]["tasks"]
    assert set(tasks) == set(TASKS)
    for task, result in tasks.items():
        cells = sorted((c["concurrency"], c["repeat"]) for c in result["bench"])
        assert cells == sorted((c, r) for c in CONCURRENCIES for r in range(REPEATS)), task
        assert all(c["status"] == "ok" and c["failed"] == 0 for c in result["bench"]), task


@pytest.mark.parametrize("method", METHODS)
def test_runner_and_async_recorded(gpu_sweep, method):
    server = gpu_sweep["summaries"][method]["server"]
    assert server["model_runner"] is not None and server["model_runner"] == server["model_runner_pinned"]
    assert server["async_scheduling"] is not None


@pytest.mark.parametrize("method", METHODS)
def test_startup_phases_recorded(gpu_sweep, method):
    """Load, compile, warm-up and graph capture from the server's log, in the bundle; eager mode says so."""
    startup = gpu_sweep["summaries"][method]["server"]["startup"]
    eager = PLATFORM.endswith("-eager")
    assert startup["mode"] == ("eager" if eager else "compile")
    assert startup["load"] is not None and startup["engine_init"] is not None and startup["total"] is not None
    if not eager:
        assert startup["compile"] is not None and startup["graph_capture"] is not None
