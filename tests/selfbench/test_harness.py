"""`python -m selfbench harness` (`make bench-harness`): its arithmetic, how it reads a run's events, the synthetic scale inputs and the report's structure.

No performance goals here (they live in the benchmark and docs/harness-performance.md); the only timing
check is a loose sanity factor on how parse time grows with /metrics lines.
"""

from __future__ import annotations

import math
import sys
import time

import pytest

from selfbench import harness, harness_report, harness_runs, scale, stats, synthetic
from selfbench.__main__ import build_parser
from selfbench.probe import RunProbe
from specstack import events
from specstack.config import metric_names as m
from specstack.measure import accounting, snapshots
from specstack.results.records import read_records

pytestmark = pytest.mark.unit


# --- arithmetic ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,seconds", [("5s", 5.0), ("500ms", 0.5), ("1m", 60.0), ("1m30s", 90.0), ("1.5s", 1.5), ("2h", 7200.0)]
)
def test_parse_duration(text, seconds):
    assert stats.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "5", "s", "5x", "5s junk"])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError):
        stats.parse_duration(bad)


def test_shipped_scrape_interval_is_read_from_the_shipped_file():
    assert stats.shipped_scrape_interval() == 5.0  # prometheus/prometheus.yml


def test_scrape_interval_job_overrides_global(tmp_path):
    cfg = tmp_path / "p.yml"
    cfg.write_text(
        "global: {scrape_interval: 15s}\nscrape_configs:\n"
        "  - {job_name: vllm, scrape_interval: 2s}\n  - {job_name: other}\n"
    )
    assert stats.shipped_scrape_interval(cfg) == 2.0
    assert stats.shipped_scrape_interval(cfg, job="other") == 15.0
    cfg.write_text("scrape_configs:\n  - {job_name: vllm}\n")
    assert stats.shipped_scrape_interval(cfg) == 60.0  # Prometheus's default


def test_cpu_fraction():
    assert stats.cpu_fraction(0.1, 10.0, 2) == pytest.approx(0.005)
    assert stats.cpu_fraction(1.0, 0.0, 2) is None


def test_paired_interval_known_values():
    off = [100.0, 100.0, 100.0]
    on = [101.0, 102.0, 103.0]  # +1, +2, +3 %
    out = stats.paired_interval(on, off)
    assert out["pairs"] == 3
    assert out["mean_diff_pct"] == pytest.approx(2.0)
    assert out["sd_pct"] == pytest.approx(1.0)
    half = 4.303 / math.sqrt(3)
    assert out["half_width_pct"] == pytest.approx(half)
    assert out["ci95_pct"] == pytest.approx([2.0 - half, 2.0 + half])


def test_paired_interval_one_pair_has_no_interval():
    out = stats.paired_interval([90.0], [100.0])
    assert out["mean_diff_pct"] == pytest.approx(-10.0)
    assert out["ci95_pct"] is None
    with pytest.raises(ValueError):
        stats.paired_interval([1.0], [1.0, 2.0])


def test_t975_steps_down_to_normal():
    assert stats.t975(1) == pytest.approx(12.706)
    assert stats.t975(7) == pytest.approx(2.365)
    assert stats.t975(1000) == pytest.approx(1.96)
    assert all(stats.t975(d) >= stats.t975(d + 1) for d in range(1, 200))


def test_overhead_is_wall_minus_measured_parts():
    timings = {"server_ready": 40.0, "warmup": 1.0, "acceptance": 10.0, "bench": 20.0, "total": 72.5}
    out = stats.overhead_of(timings, outer_wall=74.0)
    assert out["parts"] == pytest.approx(70.0)
    assert out["overhead"] == pytest.approx(2.5)
    assert out["overhead_outer"] == pytest.approx(4.0)
    assert "overhead_outer" not in stats.overhead_of(timings)


def test_probe_reads_steps_from_the_run_s_events_including_a_background_thread():
    """The probe only listens: steps timed with events.step reach it from any thread, the deferred ones
    (the Prometheus check beside the next server start) marked as such."""
    import threading

    probe = RunProbe()
    with events.listening(probe):
        with events.step("stop server", method="m"):
            time.sleep(0.05)

        def check():
            with events.step("prometheus view", method="m", deferred=True):
                time.sleep(0.05)

        side = threading.Thread(target=check)
        side.start()
        side.join()
    assert [(s.name, s.deferred) for s in probe.steps] == [("stop server", False), ("prometheus view", True)]
    assert probe.total("stop server") >= 0.05 and probe.total("prometheus view") == 0.0
    assert probe.total("prometheus view", deferred=True) >= 0.05


def test_components_attribute_the_overhead_to_the_run_s_steps():
    probe = RunProbe(ready_seconds=30.0)
    for name, secs in (
        ("preflight", 0.1),
        ("checks", 0.2),
        ("inputs", 0.3),
        ("server start", 30.5),
        ("stop server", 0.4),
        ("prometheus view", 9.0),
    ):
        probe._step_end({"name": name, "seconds": secs, "cpu": 0.0, "at": 0.0, "deferred": name == "prometheus view"})
    parts = harness_runs.components(probe, {"warmup": 0.6}, overhead=2.5)
    assert parts[harness_runs.STEP_LABELS["checks"]] == pytest.approx(0.5)  # checks + inputs share a label
    assert parts["spawn before ready polling"] == pytest.approx(0.5)
    assert parts["warm-up"] == pytest.approx(0.6)
    assert sum(parts.values()) == pytest.approx(2.5)  # the rest is unattributed
    assert parts["unattributed (bookkeeping between steps)"] == pytest.approx(2.5 - 0.1 - 0.5 - 0.4 - 0.5 - 0.6)


def test_bench_windows_pair_each_window_with_its_snapshots():
    probe = RunProbe()
    for name in ("acceptance/code", "bench/code-c1-r0"):
        for when in ("before", "after"):
            probe("window.snapshot", {"name": name, "when": when, "seconds": 0.1, "cpu": 0.02, "fetches": 2, "at": 0.0})
    probe("window.open", {"name": "acceptance/code", "phase": "acceptance", "at": 0.0})  # not a bench window
    probe("window.open", {"name": "bench/code-c1-r0", "phase": "bench", "at": 0.0})
    probe(
        "window.close",
        {
            "name": "bench/code-c1-r0",
            "phase": "bench",
            "error": None,
            "at": 0.0,
            "bench": {"duration": 1.0, "output_throughput": 50.0},
        },
    )
    (w,) = probe.bench_windows()
    assert w["name"] == "bench/code-c1-r0" and w["snapshot_fetches"] == 4
    assert w["snapshot_cpu"] == pytest.approx(0.04) and w["duration"] == 1.0 and w["output_throughput"] == 50.0
    assert w["prom_cpu"] is None and w["api_cpu"] is None  # no Prometheus, no server pid given


def test_growth_slope_is_one_for_linear_and_two_for_quadratic():
    assert stats.growth([(1, 3.0), (10, 30.0), (100, 300.0)])["loglog_slope"] == pytest.approx(1.0)
    assert stats.growth([(1, 1.0), (10, 100.0)])["loglog_slope"] == pytest.approx(2.0)
    steps = stats.growth([(10, 5.0), (1, 1.0)])["steps"]
    assert steps == [{"size_ratio": 10.0, "cost_ratio": 5.0}]


def test_model_inspection_seconds_from_the_vllm_log():
    log = (
        "(APIServer pid=1) INFO 11-29 13:21:10 [api_utils.py:286] non-default args: {'model': 'x'}\n"
        "(APIServer pid=1) INFO 11-29 13:21:11 [x.py:1] something else\n"
        "(APIServer pid=1) INFO 11-29 13:21:22 [model.py:733] Resolved architecture: Qwen3ForCausalLM\n"
        "(APIServer pid=1) INFO 11-29 13:21:40 [model.py:733] Resolved architecture: Qwen3ForCausalLM\n"
    )
    assert stats.model_inspection_seconds(log) == 12
    midnight = (
        "INFO 11-29 23:59:59 [a.py:1] non-default args: {}\n"
        "INFO 11-30 00:00:03 [model.py:733] Resolved architecture: X\n"
    )
    assert stats.model_inspection_seconds(midnight) == 4
    assert stats.model_inspection_seconds("INFO 11-29 13:21:10 [a.py:1] non-default args: {}\n") is None
    assert stats.model_inspection_seconds("") is None


def test_monitoring_cost_splits_in_window_from_edges():
    windows = [{"seconds": 10.0, "prom_cpu": 0.02, "snapshot_cpu": 0.01, "snapshot_fetches": 4}]
    out = harness.monitoring_cost(
        windows, interval=5.0, cores=2, render_prom=0.01, render_plain=0.005, exporter_per_scrape=0.0
    )
    # in window: Prometheus 0.02 + 2 scrapes x 0.01 = 0.04 CPU-s over 20 CPU-s
    assert out["fraction_in_window"] == pytest.approx(0.002)
    # edges: snapshots 0.01 + 4 fetches x 0.005 = 0.03
    assert out["fraction_with_edges"] == pytest.approx(0.0035)
    assert out["edge_cpu_per_window"] == pytest.approx(0.03)
    # W >= 0.03 / (0.005 x 2 - 0.04 / 10)
    assert out["break_even_window_seconds"] == pytest.approx(0.03 / (0.01 - 0.004))


# --- the synthetic scale inputs -----------------------------------------------------------------------


def test_synthetic_page_parses_like_a_vllm_page_and_sums_over_engines():
    one, three = snapshots.parse(synthetic.synthetic_page(1)), snapshots.parse(synthetic.synthetic_page(3))
    assert one.has_spec and one.process_start is not None and one.cache_config
    for family in (m.SPEC_NUM_DRAFTS, m.SPEC_NUM_DRAFT_TOKENS, m.SPEC_NUM_ACCEPTED_TOKENS, m.GENERATION_TOKENS):
        assert three.counters[family] == pytest.approx(3 * one.counters[family])
    assert len(one.split[m.SPEC_ACCEPTED_PER_POS]) == synthetic.K
    assert sum(one.split[m.SPEC_ACCEPTED_PER_POS].values()) == one.counters[m.SPEC_NUM_ACCEPTED_TOKENS]
    assert set(one.split[m.REQUEST_SUCCESS]) >= {"stop", "length"}


def test_synthetic_page_is_the_size_of_the_real_one_and_grows_with_engines():
    page = synthetic.synthetic_page(1)
    samples = [ln for ln in page.splitlines() if ln and not ln.startswith("#")]
    assert 40_000 < len(page) < 70_000 and 380 < len(samples) < 560  # vLLM 0.32: ~56 KB, 474 samples
    lines = [synthetic.synthetic_page(e).count("\n") for e in (1, 10)]
    assert 5 * lines[0] < lines[1] < 11 * lines[0]
    # the samples the collector keeps are per engine (HELP/TYPE lines and process_start are not)
    kept = [
        sum(
            1
            for ln in snapshots.filter_exposition(synthetic.synthetic_page(e)).splitlines()
            if ln and not ln.startswith("#") and not ln.startswith("process_")
        )
        for e in (1, 10)
    ]
    assert kept[1] == 10 * kept[0]


def test_synthetic_records_go_through_the_collector_and_reconcile(tmp_path):
    data = synthetic.scale_input(1, tmp_path, base_requests=5, tasks=("code",))
    fields = read_records(data.files["code"])
    assert len(fields) == 5 and all(f["error"] is None and f["spec"] for f in fields)
    total = accounting.from_requests([f["spec"] for f in fields])
    assert total.accepted == sum(total.per_position)  # histogram-derived positions are consistent
    out = scale.aggregate(data)
    assert out["tasks"]["code"]["requests"] == 5 and out["tasks"]["code"]["checks"] > 0
    assert out["counter_steps"] == 40 * 5  # synthetic_page: 40 drafts per finished request


def test_scale_growth_of_parse_work_is_linear():
    """Parsing 10x the lines costs about 10x the work (not a performance goal: a sanity bound against a quadratic
    parse). Work is counted as the Python lines executed, which is deterministic: a wall-clock ratio failed
    under load (two workers plus real servers), and timed assertions belong in benchmarks (make bench-harness)."""
    small, big = synthetic.synthetic_page(1), synthetic.synthetic_page(10)
    ratio_lines = big.count("\n") / small.count("\n")

    def lines_executed(text: str) -> int:
        count = 0

        def tracer(frame, event, arg):
            nonlocal count
            if event == "line":
                count += 1
            return tracer

        sys.settrace(tracer)
        try:
            snapshots.parse(text)
        finally:
            sys.settrace(None)
        return count

    w1, w10 = lines_executed(small), lines_executed(big)
    assert 0.5 * ratio_lines * w1 < w10 < 1.5 * ratio_lines * w1


def test_measure_scale_report_structure_and_linear_memory():
    out = scale.measure_scale((1, 4), repeats=1)
    assert [lv["factor"] for lv in out["levels"]] == [1, 4]
    for lv in out["levels"]:
        assert set(lv) >= {
            "requests",
            "page_lines",
            "kept_lines",
            "page_bytes",
            "parse_seconds",
            "aggregate_seconds",
            "parse_peak_bytes",
            "aggregate_peak_bytes",
        }
        assert lv["parse_seconds"] > 0 and lv["aggregate_peak_bytes"] > 0
    assert out["levels"][1]["requests"] == 4 * out["levels"][0]["requests"]
    # tracemalloc peaks are deterministic enough for a loose linearity bound
    mem = out["aggregate_memory_growth"]["loglog_slope"]
    assert 0.7 < mem < 1.3
    for key in ("parse_growth", "aggregate_growth", "parse_memory_growth"):
        assert set(out[key]) == {"steps", "loglog_slope"}


# --- report ------------------------------------------------------------------------------------------


def _report() -> dict:
    window = {"seconds": 20.0, "prom_cpu": 0.01, "snapshot_cpu": 0.02, "snapshot_fetches": 4}
    mon = harness.monitoring_cost(
        [window, window], interval=5.0, cores=2, render_prom=0.008, render_plain=0.008, exporter_per_scrape=4e-5
    )
    render = {"cpu_per_scrape": 0.008, "page_bytes": 57_000, "samples": 474, "spec_samples": 14}
    ab = stats.paired_interval([100.0, 98.0, 103.0], [101.0, 99.0, 100.0])
    ab["note"] = harness_runs.DRIFT_NOTE
    run = {
        "run_id": "bench-first",
        "status": "ok",
        "error": None,
        "timings": {"server_ready": 40.0, "acceptance": 5.0, "bench": 20.0, "total": 67.0},
        "overhead": stats.overhead_of({"server_ready": 40.0, "acceptance": 5.0, "bench": 20.0, "total": 67.0}, 68.0),
        "components": {"warm-up": 0.5, harness_runs.PREVIOUS_CHECK: 1.5},
        "also_measured": {"snapshots (all windows)": 0.5},
        "snapshot_count": 10,
        "fetch_count": 20,
        "load_before": [0.5, 0.5, 0.5],
        "load_after": [1, 1, 1],
        "prometheus_view": {"status": "checked", "code": "missing (LookupError: no sample)", "chat": "ok"},
    }
    return {
        "schema": harness.SCHEMA,
        "date": "2026-01-01T00:00:00+00:00",
        "quick": True,
        "method": "draft_model",
        "machine": {
            "cpu_model": "Test CPU",
            "logical_cores": 2,
            "physical_cores": 2,
            "memory_gib": 8.0,
            "platform": "Linux",
            "python": "3.11",
            "vllm": "0.32.0",
        },
        "goals": harness.GOALS,
        "load": {"start": [0.1, 0.2, 0.3], "end": [0.4, 0.5, 0.6]},
        "monitoring": {
            "scrape_interval_seconds": 5.0,
            "cores": 2,
            "exporter_cpu_per_scrape": 4e-5,
            "render": {"prometheus_accept": render, "plain_get": render},
            **mon,
            "ab": ab,
        },
        "overhead": {
            "runs": [run],
            "after_the_runs": {"prometheus_view_checks_seconds": [4.2, 3.9], "sweep_end_seconds": 5.1},
        },
        "startup": {
            "with_collector": {
                "first": 60.0,
                "second": 50.0,
                "ratio": 50 / 60,
                "model_inspection_seconds": {"first": 12, "second": 0},
            },
            "bare_pairs": [
                {
                    "first": 40.0,
                    "second": 38.0,
                    "ratio": 0.95,
                    "control_empty": 41.0,
                    "control_ratio": 41 / 40,
                    "model_inspection_seconds": {"first": 12, "second": 0, "control_empty": 12},
                }
            ],
            "note": "",
        },
        "scale": scale.measure_scale((1, 2), repeats=1),
    }


def test_report_rows_cover_every_figure_with_its_goal():
    rows = harness_report.summary_rows(_report())
    assert all(len(r) == 4 for r in rows)
    text = "\n".join(" | ".join(r) for r in rows)
    assert next(r for r in rows if "model-class inspection" in r[0])[1] == "12 s → 0 s; 12 s → 0 s → 12 s"
    for needle in (
        "Monitoring CPU",
        "window edges",
        "A/B throughput",
        "Harness overhead",
        "vLLM start",
        "control",
        "Collector at 1×",
        "Collector at 2×",
        "log-log slope",
        "≤ 0.5 %",
        "≤ 3 s",
        "0.6 ×",
    ):
        assert needle in text, needle
    overhead = next(r for r in rows if r[0].startswith("Harness overhead"))
    assert overhead[1] == "3.00 s" and overhead[3] == "met"
    assert next(r for r in rows if "minus the Prometheus parts" in r[0])[1] == "1.50 s"
    assert next(r for r in rows if "Prometheus's view" in r[0])[1] == "code missing (LookupError: no sample); chat ok"
    assert next(r for r in rows if r[0].startswith("Sweep's end"))[1] == "5.10 s"


def test_format_report_names_date_machine_and_load():
    text = harness_report.format_report(_report())
    assert "2026-01-01" in text and "Test CPU" in text and "2 logical cores" in text
    assert "load average" in text and "[0.1, 0.2, 0.3]" in text
    assert "±50 %" in text  # the A/B result is printed with the host-drift caveat


def test_command_line_of_the_harness_benchmark():
    parser = build_parser()
    args = parser.parse_args(["harness", "--quick", "--out", "x.json"])
    assert args.quick and args.out == "x.json" and args.method == "draft_model"
    args = parser.parse_args(["harness"])
    assert args.quick is False and args.out == "results/bench-harness.json"
    assert parser.parse_args(["load"]).out == "results/bench-load.json"
