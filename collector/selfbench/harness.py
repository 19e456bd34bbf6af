"""`python -m selfbench harness` (`make bench-harness`): what the harness itself costs, measured in one run on
this machine (issue 7).

1. Monitoring cost during bench windows at the shipped Prometheus scrape interval: CPU seconds of Prometheus
   (psutil on its pid), of the collector's snapshots (from the run's window.snapshot events) and of vLLM
   rendering /metrics (API-server CPU per scrape, measured on an idle server, times the scrapes), each as a
   fraction of the machine's CPU in the window (window seconds x cores). Plus an interleaved A/B throughput
   check (bench with Prometheus scraping vLLM vs not), reported with its 95 % interval.
2. Harness overhead per method run: wall time minus (server ready + acceptance + bench), and what the rest is
   (from the run's step events).
3. Start-up: vLLM ready seconds with an empty VLLM_CACHE_ROOT, then again with the same folder.
4. Collector scale: snapshot parsing and aggregation at 1x, 10x, 100x the default workload (synthetic).

Real components: the tiny local models (model set `tiny`, platform `cpu-native`), real vLLM, Debian's
`prometheus` with the shipped scrape interval. The figures are machine facts, not pass/fail tests; the load
average is printed next to each part.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

from selfbench.harness_runs import (
    FINAL_SCRAPE_STEP,
    BenchPrometheus,
    Plan,
    ab_and_render,
    exporter_render_cost,
    measured_run,
    ratio,
    say,
    start_pair,
    vllm_import_seconds,
)
from selfbench.machine import load_now, machine, wait_for_low_load
from selfbench.probe import RunProbe
from selfbench.prometheus import free_port
from selfbench.scale import measure_scale
from selfbench.stats import cpu_fraction, shipped_scrape_interval
from specstack import events
from specstack.fixtures import tiny_models
from specstack.report.format import seconds
from specstack.runs.monitoring import Monitoring

SCHEMA = "specstack-harness-bench/2"
GOALS = {"monitoring_fraction": 0.005, "overhead_seconds": 3.0, "second_start_ratio_gpu": 0.6}


def monitoring_cost(
    windows: list[dict],
    *,
    interval: float,
    cores: int,
    render_prom: float,
    render_plain: float,
    exporter_per_scrape: float,
) -> dict:
    """Per bench window and in total: CPU of each monitoring part as a share of window seconds x cores.
    In-window = what runs while the bench runs (Prometheus, vLLM rendering its scrapes, the collector serving
    its exporter); edges = the collector's before/after snapshots and the vLLM renders they cause, which run
    between windows."""
    rows = []
    for w in windows:
        secs = w["seconds"]
        scrapes = secs / interval
        parts = {
            "prometheus": w.get("prom_cpu") or 0.0,
            "vllm_render_scrapes": render_prom * scrapes,
            "collector_exporter": exporter_per_scrape * scrapes,
            "collector_snapshots_edges": w["snapshot_cpu"],
            "vllm_render_snapshot_fetches_edges": render_plain * w["snapshot_fetches"],
        }
        rows.append(
            {
                "seconds": secs,
                "scrapes": scrapes,
                "cpu": parts,
                "fraction": {k: cpu_fraction(v, secs, cores) for k, v in parts.items()},
            }
        )
    secs = sum(r["seconds"] for r in rows)
    total = {k: sum(r["cpu"][k] for r in rows) for k in (rows[0]["cpu"] if rows else {})}
    in_window = sum(v for k, v in total.items() if not k.endswith("_edges"))
    edges = sum(total.values()) - in_window
    edge_per_window = edges / len(rows) if rows else None
    # Shortest window for which in-window + edge CPU stays within the goal: W >= E / (goal x cores - rate).
    room = GOALS["monitoring_fraction"] * cores - (in_window / secs if secs else 0.0)
    return {
        "windows": rows,
        "window_seconds": secs,
        "cpu": total,
        "fraction": {k: cpu_fraction(v, secs, cores) for k, v in total.items()},
        "fraction_in_window": cpu_fraction(in_window, secs, cores),
        "fraction_with_edges": cpu_fraction(sum(total.values()), secs, cores),
        "edge_cpu_per_window": edge_per_window,
        "break_even_window_seconds": (edge_per_window / room) if edge_per_window is not None and room > 0 else None,
    }


def sweep_of_two(
    plan: Plan, models_dir: Path, work: Path, prom: BenchPrometheus, windows_port: int, cache: Path
) -> tuple[list[dict], dict]:
    """Two method runs as a sweep runs them (one Monitoring: the first run's Prometheus check overlaps the
    second server's start), then the sweep's end: the last check and the exporter's final scrape."""
    runs = []
    deferred = RunProbe()  # hears the background checks, which end after their own run has returned
    with events.listening(deferred):
        monitoring = Monitoring(windows_port, prom.url, shipped_scrape_interval())
        for label in ("first", "second"):
            say(
                f"parts 2+3: method run {label} ({plan.method}, VLLM_CACHE_ROOT "
                f"{'empty' if label == 'first' else 'reused'})"
            )
            runs.append(measured_run(plan, models_dir, work / "results", f"bench-{label}", prom, monitoring, cache))
            say(
                f"run {label}: {runs[-1]['status']} ({runs[-1]['error'] or 'no error'}), ready "
                f"{seconds(runs[-1]['ready_seconds'], 1)}, overhead "
                f"{seconds(runs[-1]['overhead']['overhead_outer'], 1)}"
            )
        t = time.perf_counter()
        monitoring.close()
        end_of_sweep = time.perf_counter() - t
    prom.scrape_vllm(None, timeout=5)
    for r in runs:  # what the checks found, now that they have run
        view = r.pop("summary").get("prometheus_view") or {}
        r["prometheus_view"] = {
            "status": view.get("status"),
            **{
                task: v["status"] + (f" ({v['reason']})" if v.get("reason") else "")
                for task, v in (view.get("tasks") or {}).items()
            },
        }
    checks = [s for s in deferred.steps if s.deferred]
    return runs, {
        "prometheus_view_checks_seconds": [s.seconds for s in checks],
        "sweep_end_seconds": end_of_sweep,
        "exporter_final_scrape_seconds": deferred.total(FINAL_SCRAPE_STEP),
        "note": "off the methods' path: each check ran beside the next server's start (the last one "
        "at the sweep's end, with the exporter's final scrape)",
    }


def bench_harness(
    plan: Plan, *, models_dir: Path, work: Path, max_load: float | None = None, load_wait: float = 600.0
) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report: dict = {
        "schema": SCHEMA,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": plan.quick,
        "method": plan.method,
        "machine": machine(),
        "goals": GOALS,
        "plan": {k: v for k, v in plan.__dict__.items()},
        "load": {},
    }
    cores = report["machine"]["logical_cores"] or os.cpu_count() or 1
    interval = shipped_scrape_interval()
    report["load"]["start"] = wait_for_low_load(max_load, load_wait, say)

    say("part 4: collector scale (synthetic, in-process)")
    report["load"]["scale"] = load_now()
    report["scale"] = measure_scale(plan.scale_factors, repeats=2 if plan.quick else 3)

    say("vLLM import cost in a fresh process")
    report["vllm_import_seconds"] = vllm_import_seconds()
    tiny_models.build_all(models_dir)
    windows_port = free_port()
    prom = BenchPrometheus(work / "prometheus", windows_port)
    try:
        cache = work / "vllm-cache"
        cache.mkdir()
        runs, report["after_the_runs"] = sweep_of_two(plan, models_dir, work, prom, windows_port, cache)
        report["load"]["runs"] = [[r["load_before"], r["load_after"]] for r in runs]
        report["cache_root_after_first"] = _folder_facts(cache)
        pairs = []
        if plan.extra_start_pair:
            say("part 3: bare start pair (empty cache, then reused)")
            pairs.append(start_pair(plan, models_dir, work))
        say("part 1: interleaved A/B and /metrics render cost")
        report["load"]["ab_before"] = load_now()
        live = ab_and_render(plan, models_dir, work, prom, cache)
        report["load"]["ab_after"] = load_now()
    finally:
        prom.stop()

    exporter_cost = exporter_render_cost()
    windows = [w for r in runs for w in r["bench_windows"] if not w.get("error")]
    report["monitoring"] = {
        "scrape_interval_seconds": interval,
        "cores": cores,
        "render": live["render"],
        "exporter_cpu_per_scrape": exporter_cost,
        **monitoring_cost(
            windows,
            interval=interval,
            cores=cores,
            render_prom=live["render"]["prometheus_accept"]["cpu_per_scrape"],
            render_plain=live["render"]["plain_get"]["cpu_per_scrape"],
            exporter_per_scrape=exporter_cost,
        ),
        "ab": live["ab"],
    }
    report["overhead"] = {
        "runs": [
            {
                k: r[k]
                for k in (
                    "run_id",
                    "status",
                    "error",
                    "timings",
                    "overhead",
                    "components",
                    "also_measured",
                    "snapshot_count",
                    "fetch_count",
                    "load_before",
                    "load_after",
                    "prometheus_view",
                )
            }
            for r in runs
        ],
        "after_the_runs": report.pop("after_the_runs"),
    }
    report["startup"] = {
        "with_collector": {
            "first": runs[0]["ready_seconds"],
            "second": runs[1]["ready_seconds"],
            "ratio": ratio(runs[1]["ready_seconds"], runs[0]["ready_seconds"]),
            "model_inspection_seconds": {
                "first": runs[0]["model_inspection_seconds"],
                "second": runs[1]["model_inspection_seconds"],
            },
        },
        "bare_pairs": pairs,
        "note": "enforce-eager on CPU: no torch.compile/CUDA-graph cache to reuse, the folder "
        "holds only modelinfos/ (the model-class inspection); with_collector starts "
        "overlap pre-flight's imports of the previous step and `vllm serve --help=all`",
    }
    report["load"]["end"] = load_now()
    return report


def _folder_facts(folder: Path) -> dict:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "top": sorted({p.relative_to(folder).parts[0] for p in files}),
    }
