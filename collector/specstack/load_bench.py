"""`specstack bench-load`: does the collector itself hold up under load? Measured in one run on this machine.

a. N acceptance requests (default 1,000) in ONE measured window, through the collector's own code path
   (`phases.Windows.run` around `phases.run_requests`): collector RSS every 0.5 s and tracemalloc current/peak;
   then the same at N/10 requests to compare how peak memory grows with N.
b. One long `vllm bench serve` window (default 20 min, rate-limited so the duration is fixed), run as
   `specstack run` runs bench cells (in-process, inside `Windows.run`): collector RSS every 5 s.
c. A /metrics page of >= 5 MB shaped like vLLM's (harness_bench.synthetic_page), parsed by `snapshots.parse`
   and diffed (`snapshots.diff`), plus the real server's page for context.

Real components: the tiny local models, real vLLM 0.32.0 (method ngram, platform cpu-native) on a free loopback
port; one server, always stopped. The figures are machine facts, not tests (docs/load.md).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import gc
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .harness_bench import free_port, load_now, machine, synthetic_page

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "specstack-load-bench/1"
MiB = 2 ** 20
# What "without memory growth" and "well under a second" are taken to mean (docs/load.md says why).
GOALS = {"acceptance_mib_per_100_requests": 0.1, "bench_mib_per_minute": 0.1, "parse_seconds": 0.5}


# --- arithmetic (unit-tested) -----------------------------------------------------------------------------

def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope dy/dx; None with fewer than 2 distinct x."""
    if len(points) < 2:
        return None
    mx, my = statistics.fmean(x for x, _ in points), statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def downsample(points: list, n: int) -> list:
    """At most n points, evenly spaced by index, first and last always kept."""
    if len(points) <= n:
        return list(points)
    if n <= 1:
        return list(points[:max(n, 0)])
    step = (len(points) - 1) / (n - 1)
    return [points[round(i * step)] for i in range(n)]


def calibrate(seconds: float, capacity_rps: float, *, share: float = 0.5, max_rate: float = 4.0) -> tuple[float, int]:
    """(request rate, num_prompts) for a rate-limited bench lasting ~`seconds`: a rate the server sustains with
    room to spare (`share` of its measured capacity, capped), so the window's length is set by the rate."""
    if seconds <= 0 or capacity_rps <= 0:
        raise ValueError("seconds and capacity must be > 0")
    rate = round(min(max_rate, share * capacity_rps), 2)
    return rate, max(1, round(rate * seconds))


def load_rows(n: int, max_tokens: int = 8) -> list[dict]:
    """n acceptance rows on the shipped prompts, code and chat alternating (every prompt differs)."""
    from .workloads import default_prompt
    return [{"id": f"load-{i:04d}", "prompt": default_prompt(("code", "chat")[i % 2], i), "max_tokens": max_tokens}
            for i in range(n)]


def _blocks(samples: list[tuple]) -> list[int] | None:
    return [s[3] for s in samples] if all(len(s) > 3 for s in samples) else None


def request_memory(samples: list[tuple], total: int) -> dict:
    """RSS against requests done, from (seconds, requests done or None, rss bytes[, allocated blocks]) samples.
    Without a request count (None), progress is taken as the share of elapsed time."""
    t_end = samples[-1][0] or 1.0
    counted = any(s[1] for s in samples)
    points = [(s[1] if counted else total * min(1.0, s[0] / t_end), s[2] / MiB) for s in samples]
    at = {}
    for share in (0.0, 0.1, 0.5, 1.0):
        hit = next((r for d, r in points if d >= share * total), None)
        at[f"{round(100 * share)}%"] = hit
    second_half = [p for p in points if p[0] >= total / 2]
    s = slope(second_half)
    blocks = _blocks(samples)
    b = None if blocks is None else slope([(p[0], n) for p, n in zip(points, blocks) if p[0] >= total / 2])
    return {"progress": "counted" if counted else "elapsed time", "samples": len(points),
            "blocks_start": blocks and blocks[0], "blocks_end": blocks and blocks[-1],
            "blocks_per_request_second_half": b,
            "rss_start_mib": points[0][1], "rss_end_mib": points[-1][1], "rss_peak_mib": max(r for _, r in points),
            "growth_mib": points[-1][1] - points[0][1], "rss_at_mib": at,
            "slope_mib_per_100_requests_second_half": None if s is None else 100 * s,
            "series_requests_mib": [(round(d, 1), round(r, 2)) for d, r in downsample(points, 40)]}


def time_memory(samples: list[tuple], rate: float | None = None) -> dict:
    """RSS against minutes; slope over the last 3/4 (the first quarter holds start-up allocations)."""
    points = [(s[0] / 60, s[2] / MiB) for s in samples]
    t_end = points[-1][0]
    tail = [p for p in points if p[0] >= 0.25 * t_end]
    s = slope(tail)
    per_request = None if s is None or not rate else s * 1024 / (rate * 60)
    blocks = _blocks(samples)
    b = None if blocks is None else slope([(p[0], n) for p, n in zip(points, blocks) if p[0] >= 0.25 * t_end])
    return {"samples": len(points), "minutes": t_end,
            "blocks_start": blocks and blocks[0], "blocks_end": blocks and blocks[-1],
            "blocks_per_min_last_3_4": b, "blocks_per_request": None if b is None or not rate else b / (rate * 60),
            "rss_start_mib": points[0][1], "rss_end_mib": points[-1][1],
            "rss_peak_mib": max(r for _, r in points), "growth_mib": points[-1][1] - points[0][1],
            "slope_mib_per_min_last_3_4": s, "kib_per_request_from_slope": per_request,
            "series_min_mib": [(round(m, 2), round(r, 2)) for m, r in downsample(points, 40)]}


# --- sampling -------------------------------------------------------------------------------------------

class Sampler:
    """This process's memory every `interval` s in a background thread: (seconds, progress(), rss bytes,
    sys.getallocatedblocks()). The block count sees Python objects pile up without tracemalloc's cost and
    without the allocator's reuse of freed pages that RSS hides. `hook` runs at each sample too."""

    def __init__(self, interval: float, progress: Callable[[], int | None] = lambda: None,
                 hook: Callable[[], None] | None = None, exclude: frozenset[int] = frozenset()):
        import psutil
        self.interval, self.progress, self.hook, self.exclude = interval, progress, hook, exclude
        self.proc = psutil.Process()
        self.samples: list[tuple[float, int | None, int, int]] = []
        # (seconds, private memory (USS) of this process's children: the forked bench client; RSS would count
        # the pages it still shares with the collector)
        self.children: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _take(self) -> None:
        import psutil
        now = time.monotonic() - self.t0
        self.samples.append((now, self.progress(), self.proc.memory_info().rss, sys.getallocatedblocks()))
        try:
            kids = [k for k in self.proc.children() if k.pid not in self.exclude]
            if kids:
                self.children.append((now, sum(k.memory_full_info().uss for k in kids)))
        except psutil.Error:
            pass
        if self.hook:
            self.hook()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def __enter__(self) -> "Sampler":
        self.t0 = time.monotonic()
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._take()


@contextlib.contextmanager
def counting_requests():
    """Count finished requests by wrapping phases.send_chat for the window (restored afterwards). If
    run_requests stops calling it, the count stays 0 and progress falls back to elapsed time."""
    from . import phases
    original, done, lock = phases.send_chat, [0], threading.Lock()

    def counted(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                done[0] += 1
    phases.send_chat = counted
    try:
        yield lambda: done[0]
    finally:
        phases.send_chat = original


# --- the parts ----------------------------------------------------------------------------------------------

@dataclass
class Plan:
    quick: bool
    requests: int
    small_requests: int
    bench_minutes: float
    concurrency: int = 4          # acceptance requests in flight
    max_tokens: int = 8
    bench_concurrency: int = 4
    bench_output_len: int = 32
    probe_prompts: int = 64
    max_rate: float = 4.0         # req/s cap for the long bench
    page_mb: float = 5.0

    @classmethod
    def make(cls, quick: bool, requests: int | None = None, bench_minutes: float | None = None) -> "Plan":
        n = requests or (200 if quick else 1000)
        return cls(quick, n, max(1, n // 10), bench_minutes or (2.0 if quick else 20.0),
                   probe_prompts=32 if quick else 64)


def _say(text: str) -> None:
    print(f"[bench-load {time.strftime('%H:%M:%S')} load {' '.join(f'{x:.2f}' for x in os.getloadavg())}] "
          f"{text}", file=sys.stderr, flush=True)


def _window_facts(window) -> dict:
    return {"status": window.status, "reason": window.reason, "checks": len(window.checks),
            "checks_ok": window.checks_ok, "seconds": (window.end or 0) - (window.start or 0),
            "mismatches": [{k: c[k] for k in ("name", "expected", "actual")} for c in window.checks if not c["ok"]][:3]}


def _where(stat) -> str:
    return f"{_short(stat.traceback[0].filename)}:{stat.traceback[0].lineno}"


def acceptance_load(server, work: Path, n: int, plan: Plan, *, traced: bool) -> dict:
    """n acceptance requests in one measured window, RSS sampled every 0.5 s; with `traced`, tracemalloc too
    (its own bookkeeping then inflates RSS, so the RSS verdict comes from an untraced window)."""
    from . import phases
    from .bundle import MethodBundle
    rows = load_rows(n, plan.max_tokens)
    bundle = MethodBundle(work / "results", f"load-{n}-{'traced' if traced else 'rss'}", "ngram")
    windows = phases.Windows(server, bundle)
    gc.collect()
    if traced:
        tracemalloc.start()
    with counting_requests() as done, Sampler(0.5, done) as sampler:
        window, outcome = windows.run(phases.Window("acceptance/load", "acceptance", task="load"),
                                      lambda: phases.run_requests(server, rows, bundle.path("acceptance/load.jsonl"),
                                                                  concurrency=plan.concurrency, timeout=120,
                                                                  speculative=True))
    del outcome  # run.py drops it too; the window record stays (in windows.records)
    gc.collect()
    records = bundle.path("acceptance/load.jsonl")
    out = {"requests": n, "concurrency": plan.concurrency, "max_tokens": plan.max_tokens, "traced": traced,
           "window": _window_facts(window), "memory": request_memory(sampler.samples, n),
           "rss_after_gc_mib": sampler.proc.memory_info().rss / MiB, "blocks_after_gc": sys.getallocatedblocks(),
           "records_file_bytes": records.stat().st_size if records.exists() else None,
           "bundle": str(bundle.staging)}
    if traced:
        end, peak = tracemalloc.get_traced_memory()
        # tracing started empty, so what is still traced now is what the window left behind, by source line
        kept = tracemalloc.take_snapshot().statistics("lineno")[:8]
        out["tracemalloc"] = {"net_growth_mib": end / MiB, "peak_above_start_mib": peak / MiB,
                              "own_overhead_mib": tracemalloc.get_tracemalloc_memory() / MiB,
                              "retained_by_line_kib": [(_where(st), round(st.size / 1024, 1)) for st in kept]}
        tracemalloc.stop()
    out["requests_per_second"] = n / out["window"]["seconds"] if out["window"]["seconds"] else None
    return out


def _bench_window(server, windows, bundle, task, cell: str, *, num_prompts: int, rate: float | None, plan: Plan,
                  tokenizer: str):
    """One bench cell exactly as run.py runs it: bench_command + run_bench inside Windows.run."""
    from . import phases
    argv = phases.bench_command(server, task, concurrency=plan.bench_concurrency, num_prompts=num_prompts,
                                output_len=plan.bench_output_len, request_rate=rate, tokenizer=tokenizer,
                                result_dir=bundle.path("bench"), result_name=f"{cell}.json")
    window = phases.Window(f"bench/{cell}", "bench", task=task.name, concurrency=plan.bench_concurrency)
    return windows.run(window, lambda: phases.run_bench(argv, bundle.path(f"bench/{cell}.json"),
                                                        bundle.path(f"bench/{cell}.log")))


def _bench_facts(window, outcome, result: Path) -> dict:
    bench = outcome.bench or {}
    return {"window": _window_facts(window),
            **{k: bench.get(k) for k in ("completed", "failed", "duration", "request_rate", "request_throughput",
                                         "output_throughput", "num_prompts")},
            "result_json_bytes": result.stat().st_size if result.exists() else None}


def bench_load(server, work: Path, plan: Plan, target: str) -> dict:
    """A short unlimited-rate probe (capacity), then the long rate-limited window: the collector's RSS every
    5 s, and the forked bench client's beside it."""
    from . import phases, workloads
    from .bundle import MethodBundle
    task = workloads.write_defaults(work / "inputs", num_prompts=64, perf_output_len=plan.bench_output_len,
                                    tasks=("code",))["code"]
    bundle = MethodBundle(work / "results", "bench", "ngram")
    windows = phases.Windows(server, bundle)
    tokenizer = server.root_model or target
    cell = functools.partial(_bench_window, server, windows, bundle, task, plan=plan, tokenizer=tokenizer)

    window, outcome = cell("capacity", num_prompts=plan.probe_prompts, rate=None)
    capacity = _bench_facts(window, outcome, bundle.path("bench/capacity.json"))
    if window.status != "ok" or not capacity.get("request_throughput"):
        return {"capacity": capacity, "error": f"capacity probe failed: {window.reason}"}
    rate, num_prompts = calibrate(plan.bench_minutes * 60, capacity["request_throughput"], max_rate=plan.max_rate)
    _say(f"long bench: {num_prompts} prompts at {rate} req/s (capacity {capacity['request_throughput']:.1f} "
         f"req/s), ~{num_prompts / rate / 60:.1f} min")
    del outcome
    gc.collect()
    server_pid = frozenset({server.process.pid} if server.process else ())  # the vLLM server is a child too
    with Sampler(5.0, exclude=server_pid) as sampler:
        window, outcome = cell("long", num_prompts=num_prompts, rate=rate)
    long = _bench_facts(window, outcome, bundle.path("bench/long.json"))
    del outcome
    gc.collect()
    long.update(rate=rate, num_prompts=num_prompts, memory=time_memory(sampler.samples, rate),
                rss_after_window_gc_mib=sampler.proc.memory_info().rss / MiB,
                blocks_after_window_gc=sys.getallocatedblocks())
    if long["completed"]:
        long["growth_kib_per_completed_request"] = long["memory"]["growth_mib"] * 1024 / long["completed"]

    # The client runs in a forked child (phases.run_bench): its memory, and that it is gone after the window.
    kids = [rss for _, rss in sampler.children]
    long["client_process"] = {"samples": len(kids), "uss_first_mib": kids[0] / MiB if kids else None,
                              "uss_peak_mib": max(kids) / MiB if kids else None,
                              "growth_mib": (max(kids) - kids[0]) / MiB if kids else None,
                              "alive_after_window": any(k.pid not in server_pid for k in sampler.proc.children())}
    return {"capacity": capacity, "long": long, "bundle": str(bundle.staging)}


def _short(filename: str) -> str:
    for marker in ("site-packages/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def _best(fn: Callable[[], object], repeats: int = 3) -> float:
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def metrics_parse(page_mb: float, real_page: str | None = None) -> dict:
    """snapshots.parse on a synthetic page of >= page_mb MB (engines scaled up), and a full diff of two."""
    from . import snapshots
    target = page_mb * 1e6
    engines, size = 1, len(synthetic_page(1).encode())
    while size < target:  # lines grow in proportion to engines
        engines = math.ceil(engines * target / size * 1.01)
        size = len(synthetic_page(engines).encode())
    before, after = synthetic_page(engines, requests_done=0), synthetic_page(engines, requests_done=128)
    full = lambda: snapshots.diff(snapshots.parse(before, 0.0), snapshots.parse(after, 1.0))  # noqa: E731
    tracemalloc.start()
    snapshots.parse(after)
    parse_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out = {"engines": engines, "page_bytes": len(after.encode()), "page_lines": after.count("\n"),
           "kept_lines": snapshots.filter_exposition(after).count("\n"),
           "parse_seconds": _best(lambda: snapshots.parse(after)), "diff_seconds": _best(full),
           # the line filter alone: the part of parse that grows with the whole page, not the kept lines
           "filter_seconds": _best(lambda: snapshots.filter_exposition(after)),
           "parse_peak_mib": parse_peak / MiB}
    if real_page is not None:
        out["real"] = {"page_bytes": len(real_page.encode()), "page_lines": real_page.count("\n"),
                       "parse_seconds": _best(lambda: snapshots.parse(real_page))}
    return out


def run_all(plan: Plan, *, models_dir: Path, work: Path) -> dict:
    import requests

    from . import methods, phases, runtime
    from .bundle import MethodBundle
    report = {"schema": SCHEMA, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "quick": plan.quick, "plan": asdict(plan), "machine": machine(), "load": {"start": load_now()}}
    server_plan = methods.build("ngram", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir),
                                extra={"port": free_port()})
    real_page = None
    server = None
    try:
        _say("starting vLLM (ngram, tiny models)")
        server = runtime.start_native(server_plan, work / "server.log", 300)
        report["server"] = {"ready_seconds": server.ready_seconds, "base_url": server.base_url}
        # Warm-up outside the measured windows, as run.py does (kernels, numba for ngram, connection pools).
        warm = phases.Windows(server, MethodBundle(work / "results", "warmup", "ngram"))
        warm.run(phases.Window("warmup", "warmup"), lambda: phases.run_requests(
            server, load_rows(8, plan.max_tokens), work / "warmup.jsonl", concurrency=plan.concurrency, timeout=120,
            speculative=True))
        report["acceptance"] = {}
        for key, n, traced in (("rss", plan.requests, False), ("traced", plan.requests, True),
                               ("small_traced", plan.small_requests, True)):
            _say(f"acceptance window: {n} requests{' (tracemalloc)' if traced else ''}")
            report["acceptance"][key] = acceptance_load(server, work, n, plan, traced=traced)
            report["load"][f"after_acceptance_{key}"] = load_now()
        _say(f"bench: probe, then ~{plan.bench_minutes:g} min")
        report["bench"] = bench_load(server, work, plan, server_plan["target"])
        report["load"]["after_bench"] = load_now()
        real_page = requests.get(f"{server.base_url}/metrics", timeout=10).text
    finally:
        if server is not None:
            runtime.stop_native(server)
    _say("parsing a several-MB /metrics page")
    report["metrics_parse"] = metrics_parse(plan.page_mb, real_page)
    big, small = report["acceptance"]["traced"], report["acceptance"]["small_traced"]
    report["acceptance_peak_ratio"] = {
        "requests_ratio": plan.requests / plan.small_requests,
        "tracemalloc_peak_ratio": _ratio(big["tracemalloc"]["peak_above_start_mib"],
                                         small["tracemalloc"]["peak_above_start_mib"]),
        "tracemalloc_net_ratio": _ratio(big["tracemalloc"]["net_growth_mib"], small["tracemalloc"]["net_growth_mib"])}
    report["verdicts"] = verdicts(report)
    report["load"]["end"] = load_now()
    return report


def _ratio(a, b):
    return a / b if a is not None and b else None


def verdicts(report: dict) -> dict:
    plan = report["plan"]
    big = report["acceptance"]["rss"]
    s = big["memory"]["slope_mib_per_100_requests_second_half"]
    long = (report.get("bench") or {}).get("long") or {}
    b = (long.get("memory") or {}).get("slope_mib_per_min_last_3_4")
    p = report["metrics_parse"]
    return {
        "acceptance_no_growth": None if s is None else (s <= GOALS["acceptance_mib_per_100_requests"]
                                                        and big["window"]["status"] == "ok"
                                                        and big["window"]["checks_ok"]),
        "bench_no_growth": None if b is None else (b <= GOALS["bench_mib_per_minute"]
                                                   and long["window"]["status"] == "ok"),
        "parse_fast": p["page_bytes"] >= plan["page_mb"] * 1e6 and p["parse_seconds"] <= GOALS["parse_seconds"],
    }


# --- report -------------------------------------------------------------------------------------------------

def _n(x, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _v(ok) -> str:
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def summary_rows(report: dict) -> list[tuple[str, str, str, str]]:
    plan, v = report["plan"], report["verdicts"]
    rows = []
    for key, acc in report["acceptance"].items():
        mem, w, tm = acc["memory"], acc["window"], acc.get("tracemalloc")
        at = mem["rss_at_mib"]
        main = key == "rss"
        traced = (f"; traced net {_n(tm['net_growth_mib'], 2)} / peak {_n(tm['peak_above_start_mib'], 2)} MiB"
                  if tm else "")
        rows.append((f"{acc['requests']} acceptance requests, one window{', tracemalloc on' if tm else ''} "
                     f"(c={acc['concurrency']}, {_n(w['seconds'], 1)} s, {w['status']}, {w['checks']} checks "
                     f"{'ok' if w['checks_ok'] else 'NOT ok'})",
                     f"RSS {_n(at['0%'], 1)} → 10 % {_n(at['10%'], 1)} → 50 % {_n(at['50%'], 1)} → "
                     f"100 % {_n(at['100%'], 1)} MiB; slope {_n(mem['slope_mib_per_100_requests_second_half'], 3)} "
                     f"MiB/100 req" + traced,
                     f"≤ {GOALS['acceptance_mib_per_100_requests']} MiB/100 req" if main else "",
                     _v(v["acceptance_no_growth"]) if main else ""))
    ratio = report["acceptance_peak_ratio"]
    rows.append((f"traced peak, {plan['requests']} vs {plan['small_requests']} requests",
                 f"× {_n(ratio['tracemalloc_peak_ratio'])} for × {_n(ratio['requests_ratio'], 0)} requests", "", ""))
    bench = report.get("bench") or {}
    long = bench.get("long")
    if long:
        mem = long["memory"]
        rows.append((f"bench window {_n(mem['minutes'], 1)} min, {long['completed']} requests at {long['rate']} req/s "
                     f"({long['window']['status']}, checks {'ok' if long['window']['checks_ok'] else 'NOT ok'})",
                     f"RSS {_n(mem['rss_start_mib'], 1)} → {_n(mem['rss_end_mib'], 1)} MiB (peak "
                     f"{_n(mem['rss_peak_mib'], 1)}); slope {_n(mem['slope_mib_per_min_last_3_4'], 3)} MiB/min "
                     f"= {_n(mem['kib_per_request_from_slope'], 2)} KiB/request",
                     f"≤ {GOALS['bench_mib_per_minute']} MiB/min", _v(v["bench_no_growth"])))
    elif bench.get("error"):
        rows.append(("bench window", bench["error"], "", "MISSED"))
    client = ((bench.get("long") or {}).get("client_process")) or {}
    if client.get("samples"):
        rows.append(("bench client (forked child of the collector), private memory (USS) during the window",
                     f"{_n(client['uss_first_mib'], 1)} → peak {_n(client['uss_peak_mib'], 1)} MiB "
                     f"(+{_n(client['growth_mib'], 1)}); {'still alive' if client['alive_after_window'] else 'gone'} "
                     "after the window", "", ""))
    p = report["metrics_parse"]
    rows.append((f"/metrics page {p['page_bytes'] / 1e6:.2f} MB, {p['page_lines']} lines ({p['engines']} engines, "
                 f"{p['kept_lines']} kept)",
                 f"parse {1000 * p['parse_seconds']:.0f} ms (line filter {1000 * p.get('filter_seconds', 0):.0f} ms; "
                 f"{_n(p['parse_peak_mib'], 1)} MiB peak); parse both + diff {1000 * p['diff_seconds']:.0f} ms",
                 f"≤ {1000 * GOALS['parse_seconds']:.0f} ms", _v(v["parse_fast"])))
    if p.get("real"):
        r = p["real"]
        rows.append(("real vLLM /metrics (ngram, tiny model)",
                     f"{r['page_bytes'] / 1e3:.0f} KB, {r['page_lines']} lines, "
                     f"parse {1000 * r['parse_seconds']:.1f} ms",
                     "", ""))
    return rows


def format_report(report: dict) -> str:
    m = report["machine"]
    lines = [f"specstack bench-load ({'quick' if report['quick'] else 'full'}) {report['date']}",
             f"machine: {m['cpu_model']}, {m['logical_cores']} logical cores, {m['memory_gib']} GiB, "
             f"Python {m['python']}, vLLM {m.get('vllm')}",
             "load average (1/5/15 min): " + "; ".join(f"{k} {v}" for k, v in report["load"].items()), ""]
    rows = summary_rows(report)
    width = max(len(r[0]) for r in rows)
    for figure, value, goal, verdict in rows:
        lines.append(f"{figure:<{width}}  {value}  {goal}  {verdict}".rstrip())
    return "\n".join(lines)


# --- command line -------------------------------------------------------------------------------------------

def _cmd(args: argparse.Namespace) -> int:
    from .bundle import atomic_write_json
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    plan = Plan.make(args.quick, args.requests, args.bench_minutes)
    models_dir = Path(args.models_dir or os.environ.get("SPECSTACK_TEST_MODELS",
                                                        REPO / ".specstack" / "test-models")).resolve()
    work = Path(tempfile.mkdtemp(prefix="specstack-bench-load-"))
    try:
        report = run_all(plan, models_dir=models_dir, work=work)
    finally:
        if args.keep:
            _say(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    atomic_write_json(Path(args.out), report)
    print(format_report(report))
    print(f"report: {args.out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("bench-load", help="the collector under load: memory over 1,000 acceptance requests and a "
                                          "20-minute bench window, and parsing a several-MB /metrics page")
    p.add_argument("--out", default="results/bench-load.json", help="the full report as JSON (written atomically)")
    p.add_argument("--requests", type=int, default=None, help="acceptance requests in the window (default 1000)")
    p.add_argument("--bench-minutes", type=float, default=None, help="length of the bench window (default 20)")
    p.add_argument("--quick", action="store_true", help="200 requests and a 2-minute bench (~5 min in all)")
    p.add_argument("--models-dir", default=None, help="tiny models folder (default .specstack/test-models)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (server log, bundles, bench JSON)")
    p.set_defaults(func=_cmd)
