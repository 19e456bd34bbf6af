"""`python -m selfbench load` (`make bench-load`): its arithmetic, row generation and the report's structure.

No vLLM server and no timing assertions: the figures themselves live in docs/load.md.
"""

from __future__ import annotations

import pytest

from selfbench import load as lb
from selfbench import load_report
from specstack import events
from specstack.measure import chat

pytestmark = pytest.mark.unit

MiB = 2**20


def test_slope_of_a_line_and_of_noise_around_it():
    assert lb.slope([(0, 1.0), (1, 3.0), (2, 5.0)]) == pytest.approx(2.0)
    assert lb.slope([(0, 0.0), (1, 1.0), (2, 0.0), (3, 1.0)]) == pytest.approx(0.2)
    assert lb.slope([(1, 5.0), (1, 6.0)]) is None  # no spread in x
    assert lb.slope([(1, 5.0)]) is None


def test_downsample_keeps_ends_and_spacing():
    points = list(range(101))
    assert lb.downsample(points, 5) == [0, 25, 50, 75, 100]
    assert lb.downsample(points[:3], 5) == [0, 1, 2]
    assert lb.downsample(points, 1) == [0]
    assert len(lb.downsample(points, 40)) == 40


def test_calibrate_rate_and_prompts():
    assert lb.calibrate(1200, 10.0) == (4.0, 4800)  # capped at max_rate
    assert lb.calibrate(1200, 3.0) == (1.5, 1800)  # half the capacity
    assert lb.calibrate(120, 3.3, share=0.5, max_rate=8) == (1.65, 198)
    assert lb.calibrate(1, 0.1) == (0.05, 1)  # never 0 prompts
    with pytest.raises(ValueError):
        lb.calibrate(60, 0.0)


def test_load_rows_are_varied_and_valid_acceptance_rows():
    rows = lb.load_rows(10, max_tokens=8)
    assert [r["id"] for r in rows[:3]] == ["load-0000", "load-0001", "load-0002"]
    assert len({r["prompt"] for r in rows}) == 10
    assert rows[0]["prompt"].startswith("Change only the factor") and rows[1]["prompt"].startswith("Case 1:")
    assert all(r["max_tokens"] == 8 for r in rows)
    # what run_requests sends for a row
    payload = chat.chat_payload("spec-demo", rows[3]["prompt"], rows[3]["max_tokens"])
    assert payload["max_tokens"] == 8 and payload["messages"][0]["content"] == rows[3]["prompt"]


def _series(n: int, base_mib: float, per_request_mib: float):
    """Samples (seconds, requests done, rss bytes, blocks) for n requests, one per 10 requests."""
    return [(i / 10, i, int((base_mib + per_request_mib * i) * MiB), 1000 + 3 * i) for i in range(0, n + 1, 10)]


def test_request_memory_counted_progress():
    mem = lb.request_memory(_series(1000, 500.0, 0.002), 1000)
    assert mem["progress"] == "counted"
    assert mem["rss_start_mib"] == pytest.approx(500.0)
    assert mem["rss_end_mib"] == pytest.approx(502.0, abs=1e-5)
    assert mem["rss_at_mib"]["10%"] == pytest.approx(500.2, abs=1e-5)
    assert mem["rss_at_mib"]["50%"] == pytest.approx(501.0, abs=1e-5)
    assert mem["slope_mib_per_100_requests_second_half"] == pytest.approx(0.2, abs=1e-4)
    assert mem["growth_mib"] == pytest.approx(2.0, abs=1e-5)
    assert len(mem["series_requests_mib"]) == 40
    assert (mem["blocks_start"], mem["blocks_end"]) == (1000, 4000)
    assert mem["blocks_per_request_second_half"] == pytest.approx(3.0)


def test_request_memory_flat_second_half_and_time_fallback():
    # grows in the first half, flat afterwards: the second-half slope is 0
    samples = [(t, None, int((400 + min(t, 5)) * MiB)) for t in range(11)]
    mem = lb.request_memory(samples, 100)
    assert mem["progress"] == "elapsed time"
    assert mem["rss_at_mib"]["50%"] == pytest.approx(405.0)
    assert mem["slope_mib_per_100_requests_second_half"] == pytest.approx(0.0, abs=1e-6)
    assert mem["rss_peak_mib"] == pytest.approx(405.0)
    assert mem["blocks_per_request_second_half"] is None  # 3-tuples: no block counts sampled


def test_time_memory_ignores_the_first_quarter():
    # +8 MiB jump in the first minute, then 0.5 MiB/min for 19 minutes; sampled every 5 s
    samples = [
        (t, None, int((300 + (8 if t >= 30 else 0) + 0.5 * max(0, t - 60) / 60) * MiB), 5000 + 2 * t)
        for t in range(0, 1201, 5)
    ]
    mem = lb.time_memory(samples, rate=4.0)
    assert mem["minutes"] == pytest.approx(20.0)
    assert mem["slope_mib_per_min_last_3_4"] == pytest.approx(0.5, abs=1e-3)
    assert mem["kib_per_request_from_slope"] == pytest.approx(0.5 * 1024 / 240, rel=1e-3)
    assert mem["growth_mib"] == pytest.approx(8 + 0.5 * 19, abs=1e-3)
    assert mem["blocks_per_min_last_3_4"] == pytest.approx(120.0)
    assert mem["blocks_per_request"] == pytest.approx(0.5)  # 120 blocks/min at 240 requests/min
    assert lb.time_memory(samples)["kib_per_request_from_slope"] is None


def test_plan_sizes():
    full, quick = lb.Plan.make(False), lb.Plan.make(True)
    assert (full.requests, full.small_requests, full.bench_minutes) == (1000, 100, 20.0)
    assert (quick.requests, quick.small_requests, quick.bench_minutes) == (200, 20, 2.0)
    assert lb.Plan.make(False, 500, 10).small_requests == 50


def test_counting_requests_follows_the_window_progress_events():
    """The count comes from the events run_requests emits (nothing of the product is wrapped): it follows
    window.progress and ignores every other event; outside the block nothing listens any more."""
    with lb.counting_requests() as done:
        assert done() == 0
        events.emit("window.start", name="acceptance/load", phase="acceptance", total=3)
        for n in (1, 2, 3):
            events.emit("window.progress", done=n, total=3)
        assert done() == 3
    events.emit("window.progress", done=7, total=7)
    assert done() == 3 and not events.listening_now()


def _fake_report(bench_slope: float, acc_slope: float, parse_s: float, page_mb: float = 5.2) -> dict:
    def acceptance(n, slope, peak=None):
        mem = lb.request_memory(_series(n, 500.0, slope / 100), n)
        out = {
            "requests": n,
            "concurrency": 4,
            "memory": mem,
            "window": {"status": "ok", "reason": None, "checks": 5, "checks_ok": True, "seconds": 20.0},
        }
        if peak is not None:
            out["tracemalloc"] = {"net_growth_mib": 0.1, "peak_above_start_mib": peak, "own_overhead_mib": 1.0}
        return out

    long_samples = [(t, None, int((600 + bench_slope * t / 60) * MiB)) for t in range(0, 1201, 5)]
    report = {
        "schema": lb.SCHEMA,
        "date": "2026-11-29T16:00:00+00:00",
        "quick": False,
        "plan": vars(lb.Plan.make(False)),
        "load": {"start": [1.0, 1.0, 1.0], "end": [2.0, 2.0, 2.0]},
        "machine": {"cpu_model": "x", "logical_cores": 2, "memory_gib": 23.5, "python": "3.11", "vllm": "0.32.0"},
        "acceptance": {
            "rss": acceptance(1000, acc_slope),
            "traced": acceptance(1000, 5.0, 3.0),
            "small_traced": acceptance(100, 5.0, 1.5),
        },
        "acceptance_peak_ratio": {"requests_ratio": 10.0, "tracemalloc_peak_ratio": 2.0},
        "bench": {
            "long": {
                "completed": 4800,
                "rate": 4.0,
                "memory": lb.time_memory(long_samples, 4.0),
                "window": {"status": "ok", "checks_ok": True},
                "client_process": {
                    "samples": 240,
                    "uss_first_mib": 690.0,
                    "uss_peak_mib": 707.5,
                    "growth_mib": 17.5,
                    "alive_after_window": False,
                },
            }
        },
        "metrics_parse": {
            "engines": 95,
            "page_bytes": int(page_mb * 1e6),
            "page_lines": 60000,
            "kept_lines": 6000,
            "parse_seconds": parse_s,
            "diff_seconds": 2 * parse_s,
            "filter_seconds": parse_s / 2,
            "parse_peak_mib": 9.0,
            "real": {"page_bytes": 57000, "page_lines": 650, "parse_seconds": 0.002},
        },
    }
    report["verdicts"] = load_report.verdicts(report)
    return report


def test_verdicts_follow_the_goals():
    ok = _fake_report(bench_slope=0.01, acc_slope=0.02, parse_s=0.12)["verdicts"]
    assert ok == {"acceptance_no_growth": True, "bench_no_growth": True, "parse_fast": True}
    bad = _fake_report(bench_slope=0.8, acc_slope=0.5, parse_s=0.6)["verdicts"]
    assert bad == {"acceptance_no_growth": False, "bench_no_growth": False, "parse_fast": False}
    small_page = _fake_report(0.0, 0.0, 0.01, page_mb=1.0)["verdicts"]
    assert small_page["parse_fast"] is False  # a fast parse of a small page proves nothing


def test_report_rows_and_text():
    report = _fake_report(bench_slope=0.8, acc_slope=0.02, parse_s=0.12)
    rows = load_report.summary_rows(report)
    assert len(rows) == 8  # 3 acceptance, peak ratio, bench, bench client process, synthetic page, real page
    # the verdict is the untraced window's (the traced ones grow 5 MiB/100 requests here)
    assert rows[0][3] == "met" and "tracemalloc" not in rows[0][0] and rows[1][3] == ""
    assert "1000 acceptance requests, one window, tracemalloc on" in rows[1][0] and "peak 3.00 MiB" in rows[1][1]
    assert "× 2.00 for × 10 requests" in rows[3][1]
    bench = next(r for r in rows if r[0].startswith("bench window"))
    assert "4800 requests at 4.0 req/s" in bench[0] and "0.800 MiB/min" in bench[1] and bench[3] == "MISSED"
    assert "3.41 KiB/request" in bench[1]  # 0.8 MiB/min at 240 requests/min
    page = next(r for r in rows if r[0].startswith("/metrics page"))
    assert "5.20 MB" in page[0] and "parse 120 ms (line filter 60 ms" in page[1] and page[3] == "met"
    client = next(r for r in rows if r[0].startswith("bench client (forked child"))
    assert client[1] == "690.0 → peak 707.5 MiB (+17.5); gone after the window"
    text = load_report.format_report(report)
    assert "specstack bench-load (full)" in text and "load average" in text and "MISSED" in text
