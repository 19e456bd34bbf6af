"""`python -m selfbench load` (`make bench-load`): does the collector itself hold up under load? Measured in one run on this machine.

a. N acceptance requests (default 1,000) in ONE measured window, through the collector's own code path
   (`measure.windows.Windows.run` around `measure.chat.run_requests`): collector RSS every 0.5 s and tracemalloc current/peak;
   then the same at N/10 requests to compare how peak memory grows with N.
b. One long `vllm bench serve` window (default 20 min, rate-limited so the duration is fixed), run as
   `specstack run` runs bench cells (in-process, inside `Windows.run`): collector RSS every 5 s.
c. A /metrics page of >= 5 MB shaped like vLLM's (selfbench.synthetic.synthetic_page), parsed by `snapshots.parse`
   and diffed (`snapshots.diff`), plus the real server's page for context.

Real components: the tiny local models, real vLLM 0.32.0 (method ngram, platform cpu-native) on a free loopback
port; one server, always stopped. The figures are machine facts, not tests (docs/load.md).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import gc
import math
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from selfbench.machine import load_now, machine, say
from selfbench.prometheus import free_port
from selfbench.scale import best_seconds
from selfbench.synthetic import synthetic_page
from specstack import events
from specstack.config import methods, workloads
from specstack.measure import bench as bench_module
from specstack.measure import chat, snapshots
from specstack.measure.windows import Window, Windows
from specstack.results.bundle import MethodBundle
from specstack.server import runtime

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "specstack-load-bench/1"
MiB = 2**20
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
        return list(points[: max(n, 0)])
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
    return [
        {
            "id": f"load-{i:04d}",
            "prompt": workloads.default_prompt(("code", "chat")[i % 2], i),
            "max_tokens": max_tokens,
        }
        for i in range(n)
    ]


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
    return {
        "progress": "counted" if counted else "elapsed time",
        "samples": len(points),
        "blocks_start": blocks and blocks[0],
        "blocks_end": blocks and blocks[-1],
        "blocks_per_request_second_half": b,
        "rss_start_mib": points[0][1],
        "rss_end_mib": points[-1][1],
        "rss_peak_mib": max(r for _, r in points),
        "growth_mib": points[-1][1] - points[0][1],
        "rss_at_mib": at,
        "slope_mib_per_100_requests_second_half": None if s is None else 100 * s,
        "series_requests_mib": [(round(d, 1), round(r, 2)) for d, r in downsample(points, 40)],
    }


def time_memory(samples: list[tuple], rate: float | None = None) -> dict:
    """RSS against minutes; slope over the last 3/4 (the first quarter holds start-up allocations)."""
    points = [(s[0] / 60, s[2] / MiB) for s in samples]
    t_end = points[-1][0]
    tail = [p for p in points if p[0] >= 0.25 * t_end]
    s = slope(tail)
    per_request = None if s is None or not rate else s * 1024 / (rate * 60)
    blocks = _blocks(samples)
    b = None if blocks is None else slope([(p[0], n) for p, n in zip(points, blocks) if p[0] >= 0.25 * t_end])
    return {
        "samples": len(points),
        "minutes": t_end,
        "blocks_start": blocks and blocks[0],
        "blocks_end": blocks and blocks[-1],
        "blocks_per_min_last_3_4": b,
        "blocks_per_request": None if b is None or not rate else b / (rate * 60),
        "rss_start_mib": points[0][1],
        "rss_end_mib": points[-1][1],
        "rss_peak_mib": max(r for _, r in points),
        "growth_mib": points[-1][1] - points[0][1],
        "slope_mib_per_min_last_3_4": s,
        "kib_per_request_from_slope": per_request,
        "series_min_mib": [(round(m, 2), round(r, 2)) for m, r in downsample(points, 40)],
    }


# --- sampling -------------------------------------------------------------------------------------------


class Sampler:
    """This process's memory every `interval` s in a background thread: (seconds, progress(), rss bytes,
    sys.getallocatedblocks()). The block count sees Python objects pile up without tracemalloc's cost and
    without the allocator's reuse of freed pages that RSS hides. `hook` runs at each sample too."""

    def __init__(
        self,
        interval: float,
        progress: Callable[[], int | None] = lambda: None,
        hook: Callable[[], None] | None = None,
        exclude: frozenset[int] = frozenset(),
    ):
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

    def __enter__(self) -> Sampler:
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
    """Count finished requests from the window.progress events run_requests emits. If it stops emitting them,
    the count stays 0 and progress falls back to elapsed time."""
    done = [0]

    def listener(event: str, fields: dict) -> None:
        if event == "window.progress":
            done[0] = fields["done"]

    with events.listening(listener):
        yield lambda: done[0]


# --- the parts ----------------------------------------------------------------------------------------------


@dataclass
class Plan:
    quick: bool
    requests: int
    small_requests: int
    bench_minutes: float
    concurrency: int = 4  # acceptance requests in flight
    max_tokens: int = 8
    bench_concurrency: int = 4
    bench_output_len: int = 32
    probe_prompts: int = 64
    max_rate: float = 4.0  # req/s cap for the long bench
    page_mb: float = 5.0

    @classmethod
    def make(cls, quick: bool, requests: int | None = None, bench_minutes: float | None = None) -> Plan:
        n = requests or (200 if quick else 1000)
        return cls(
            quick, n, max(1, n // 10), bench_minutes or (2.0 if quick else 20.0), probe_prompts=32 if quick else 64
        )


_say = say("bench-load")


def _window_facts(window) -> dict:
    return {
        "status": window.status,
        "reason": window.reason,
        "checks": len(window.checks),
        "checks_ok": window.checks_ok,
        "seconds": (window.end or 0) - (window.start or 0),
        "mismatches": [{k: c[k] for k in ("name", "expected", "actual")} for c in window.checks if not c["ok"]][:3],
    }


def _where(stat) -> str:
    return f"{_short(stat.traceback[0].filename)}:{stat.traceback[0].lineno}"


def acceptance_load(server, work: Path, n: int, plan: Plan, *, traced: bool) -> dict:
    """n acceptance requests in one measured window, RSS sampled every 0.5 s; with `traced`, tracemalloc too
    (its own bookkeeping then inflates RSS, so the RSS verdict comes from an untraced window)."""
    rows = load_rows(n, plan.max_tokens)
    bundle = MethodBundle(work / "results", f"load-{n}-{'traced' if traced else 'rss'}", "ngram")
    windows = Windows(server, bundle)
    gc.collect()
    if traced:
        tracemalloc.start()
    with counting_requests() as done, Sampler(0.5, done) as sampler:
        window, outcome = windows.run(
            Window("acceptance/load", "acceptance", task="load"),
            lambda: chat.run_requests(
                server,
                rows,
                bundle.path("acceptance/load.jsonl"),
                concurrency=plan.concurrency,
                timeout=120,
                speculative=True,
            ),
        )
    del outcome  # run.py drops it too; the window record stays (in windows.records)
    gc.collect()
    records = bundle.path("acceptance/load.jsonl")
    out = {
        "requests": n,
        "concurrency": plan.concurrency,
        "max_tokens": plan.max_tokens,
        "traced": traced,
        "window": _window_facts(window),
        "memory": request_memory(sampler.samples, n),
        "rss_after_gc_mib": sampler.proc.memory_info().rss / MiB,
        "blocks_after_gc": sys.getallocatedblocks(),
        "records_file_bytes": records.stat().st_size if records.exists() else None,
        "bundle": str(bundle.staging),
    }
    if traced:
        end, peak = tracemalloc.get_traced_memory()
        # tracing started empty, so what is still traced now is what the window left behind, by source line
        kept = tracemalloc.take_snapshot().statistics("lineno")[:8]
        out["tracemalloc"] = {
            "net_growth_mib": end / MiB,
            "peak_above_start_mib": peak / MiB,
            "own_overhead_mib": tracemalloc.get_tracemalloc_memory() / MiB,
            "retained_by_line_kib": [(_where(st), round(st.size / 1024, 1)) for st in kept],
        }
        tracemalloc.stop()
    out["requests_per_second"] = n / out["window"]["seconds"] if out["window"]["seconds"] else None
    return out


def _bench_window(
    server, windows, bundle, task, cell: str, *, num_prompts: int, rate: float | None, plan: Plan, tokenizer: str
):
    """One bench cell exactly as run.py runs it: bench_command + run_bench inside Windows.run."""
    argv = bench_module.bench_command(
        server,
        task,
        concurrency=plan.bench_concurrency,
        num_prompts=num_prompts,
        output_len=plan.bench_output_len,
        request_rate=rate,
        tokenizer=tokenizer,
        result_dir=bundle.path("bench"),
        result_name=f"{cell}.json",
    )
    window = Window(f"bench/{cell}", "bench", task=task.name, concurrency=plan.bench_concurrency)
    return windows.run(
        window,
        lambda: bench_module.run_bench(argv, bundle.path(f"bench/{cell}.json"), bundle.path(f"bench/{cell}.log")),
    )


def _bench_facts(window, outcome, result: Path) -> dict:
    bench = outcome.bench or {}
    return {
        "window": _window_facts(window),
        **{
            k: bench.get(k)
            for k in (
                "completed",
                "failed",
                "duration",
                "request_rate",
                "request_throughput",
                "output_throughput",
                "num_prompts",
            )
        },
        "result_json_bytes": result.stat().st_size if result.exists() else None,
    }


def bench_load(server, work: Path, plan: Plan, target: str) -> dict:
    """A short unlimited-rate probe (capacity), then the long rate-limited window: the collector's RSS every
    5 s, and the forked bench client's beside it."""
    task = workloads.write_defaults(
        work / "inputs", num_prompts=64, perf_output_len=plan.bench_output_len, tasks=("code",)
    )["code"]
    bundle = MethodBundle(work / "results", "bench", "ngram")
    windows = Windows(server, bundle)
    tokenizer = server.root_model or target
    cell = functools.partial(_bench_window, server, windows, bundle, task, plan=plan, tokenizer=tokenizer)

    window, outcome = cell("capacity", num_prompts=plan.probe_prompts, rate=None)
    capacity = _bench_facts(window, outcome, bundle.path("bench/capacity.json"))
    if window.status != "ok" or not capacity.get("request_throughput"):
        return {"capacity": capacity, "error": f"capacity probe failed: {window.reason}"}
    rate, num_prompts = calibrate(plan.bench_minutes * 60, capacity["request_throughput"], max_rate=plan.max_rate)
    _say(
        f"long bench: {num_prompts} prompts at {rate} req/s (capacity {capacity['request_throughput']:.1f} "
        f"req/s), ~{num_prompts / rate / 60:.1f} min"
    )
    del outcome
    gc.collect()
    server_pid = frozenset({server.process.pid} if server.process else ())  # the vLLM server is a child too
    with Sampler(5.0, exclude=server_pid) as sampler:
        window, outcome = cell("long", num_prompts=num_prompts, rate=rate)
    long = _bench_facts(window, outcome, bundle.path("bench/long.json"))
    del outcome
    gc.collect()
    long.update(
        rate=rate,
        num_prompts=num_prompts,
        memory=time_memory(sampler.samples, rate),
        rss_after_window_gc_mib=sampler.proc.memory_info().rss / MiB,
        blocks_after_window_gc=sys.getallocatedblocks(),
    )
    if long["completed"]:
        long["growth_kib_per_completed_request"] = long["memory"]["growth_mib"] * 1024 / long["completed"]

    # The client runs in a forked child (phases.run_bench): its memory, and that it is gone after the window.
    kids = [rss for _, rss in sampler.children]
    long["client_process"] = {
        "samples": len(kids),
        "uss_first_mib": kids[0] / MiB if kids else None,
        "uss_peak_mib": max(kids) / MiB if kids else None,
        "growth_mib": (max(kids) - kids[0]) / MiB if kids else None,
        "alive_after_window": any(k.pid not in server_pid for k in sampler.proc.children()),
    }
    return {"capacity": capacity, "long": long, "bundle": str(bundle.staging)}


def _short(filename: str) -> str:
    for marker in ("site-packages/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def metrics_parse(page_mb: float, real_page: str | None = None) -> dict:
    """snapshots.parse on a synthetic page of >= page_mb MB (engines scaled up), and a full diff of two."""
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
    out: dict[str, Any] = {
        "engines": engines,
        "page_bytes": len(after.encode()),
        "page_lines": after.count("\n"),
        "kept_lines": snapshots.filter_exposition(after).count("\n"),
        "parse_seconds": best_seconds(lambda: snapshots.parse(after)),
        "diff_seconds": best_seconds(full),
        # the line filter alone: the part of parse that grows with the whole page, not the kept lines
        "filter_seconds": best_seconds(lambda: snapshots.filter_exposition(after)),
        "parse_peak_mib": parse_peak / MiB,
    }
    if real_page is not None:
        out["real"] = {
            "page_bytes": len(real_page.encode()),
            "page_lines": real_page.count("\n"),
            "parse_seconds": best_seconds(lambda: snapshots.parse(real_page)),
        }
    return out


def run_all(plan: Plan, *, models_dir: Path, work: Path) -> dict:
    import requests

    report: dict[str, Any] = {
        "schema": SCHEMA,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": plan.quick,
        "plan": asdict(plan),
        "machine": machine(),
        "load": {"start": load_now()},
    }
    server_plan = methods.build(
        "ngram", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir), extra={"port": free_port()}
    )
    real_page = None
    server = None
    try:
        _say("starting vLLM (ngram, tiny models)")
        server = runtime.start_native(server_plan, work / "server.log", 300)
        report["server"] = {"ready_seconds": server.ready_seconds, "base_url": server.base_url}
        # Warm-up outside the measured windows, as run.py does (kernels, numba for ngram, connection pools).
        warm = Windows(server, MethodBundle(work / "results", "warmup", "ngram"))
        warm.run(
            Window("warmup", "warmup"),
            lambda: chat.run_requests(
                server,
                load_rows(8, plan.max_tokens),
                work / "warmup.jsonl",
                concurrency=plan.concurrency,
                timeout=120,
                speculative=True,
            ),
        )
        report["acceptance"] = {}
        for key, n, traced in (
            ("rss", plan.requests, False),
            ("traced", plan.requests, True),
            ("small_traced", plan.small_requests, True),
        ):
            _say(f"acceptance window: {n} requests{' (tracemalloc)' if traced else ''}")
            report["acceptance"][key] = acceptance_load(server, work, n, plan, traced=traced)
            report["load"][f"after_acceptance_{key}"] = load_now()
        _say(f"bench: probe, then ~{plan.bench_minutes:g} min")
        report["bench"] = bench_load(server, work, plan, server_plan.target)
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
        "tracemalloc_peak_ratio": _ratio(
            big["tracemalloc"]["peak_above_start_mib"], small["tracemalloc"]["peak_above_start_mib"]
        ),
        "tracemalloc_net_ratio": _ratio(big["tracemalloc"]["net_growth_mib"], small["tracemalloc"]["net_growth_mib"]),
    }
    report["load"]["end"] = load_now()
    return report


def _ratio(a, b):
    return a / b if a is not None and b else None
