"""The live parts of bench-harness: method runs as a sweep runs them (overhead, start-up), bare start pairs,
the interleaved A/B with Prometheus scraping vLLM or not, and what rendering /metrics costs. One vLLM server at
a time, on free loopback ports, always stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfbench.machine import load_now
from selfbench.machine import say as _sayer
from selfbench.probe import RunProbe, process_cpu
from selfbench.prometheus import Prometheus, free_port, shipped_config
from selfbench.stats import model_inspection_seconds, overhead_of, paired_interval, shipped_scrape_interval
from specstack import events
from specstack.config.serving import Platform
from specstack.config.workloads import write_defaults
from specstack.measure import bench as bench_module
from specstack.measure import chat
from specstack.report.format import num
from specstack.runs.method_run import run_method
from specstack.runs.monitoring import Monitoring
from specstack.runs.options import Options, plan_for
from specstack.server.preflight import env_overrides
from specstack.server.runtime import start_native, stop_native

say = _sayer("bench-harness")
# What Prometheus 2.x sends; vLLM (prometheus_client) then renders OpenMetrics text, as for a real scrape.
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
DRIFT_NOTE = (
    "two identical bench runs on this host differ by up to ±50 % (issue 7): the A/B interval bounds "
    "only large effects; the CPU fractions above are the measurement of record"
)
PREVIOUS_CHECK = "previous method's Prometheus view check (finished before measuring)"
# Parts of a method run's path that exist only when the run talks to Prometheus (compose: --prometheus-url).
PROMETHEUS_PARTS = (PREVIOUS_CHECK,)
# Steps of a method run (specstack.runs.method_run), as the overhead table names them. Every step name read here
# is one the product emits with events.step (tests/selfbench/test_step_names.py reads the product's source), so a
# rename there fails a unit test instead of leaving a figure of `make bench-harness` silently at zero.
SERVER_START_STEP = "server start"  # runs/method_run.py: spawn and ready polling
FINAL_SCRAPE_STEP = "exporter final scrape"  # runs/monitoring.py, at the end of the sweep
STEP_LABELS = {
    "preflight": "pre-flight (vLLM's parser; imports vLLM once per process)",
    "checks": "checks, inputs, manifest (before the server start)",
    "inputs": "checks, inputs, manifest (before the server start)",
    "manifest": "checks, inputs, manifest (before the server start)",
    "server facts": "server facts (/version)",
    "previous Prometheus check": PREVIOUS_CHECK,
    "next server's imports": "a sweep's next server's imports (finished before measuring)",
    "harness imports": "the harness's own later imports, beside the server start (finished before measuring)",
    "stop server": "stop server",
    "provenance": "provenance (--help=all hash, server log facts)",
    "verdict and bundle": "verdict, packages, tables, summary.json, publishing",
    "sampler probe": "engine sampler probe (--temperatures only, once per process)",
}


class BenchPrometheus(Prometheus):
    """The shipped config (same intervals), targets on loopback; the vllm target can be switched for the A/B."""

    def __init__(self, workdir: Path, windows_port: int):
        workdir.mkdir(parents=True, exist_ok=True)
        self.targets_dir = workdir / "targets"
        self.targets_dir.mkdir(exist_ok=True)
        self.target_file = self.targets_dir / "vllm.json"
        self.target_file.write_text("[]")
        super().__init__(workdir, shipped_config(self.targets_dir, windows_port))

    def scrape_vllm(self, address: str | None, timeout: float = 30.0) -> bool:
        """Point the vllm job at `address` (None: no target) and wait (bounded) until Prometheus agrees."""
        from specstack.results.files import atomic_write_json

        atomic_write_json(
            self.target_file, [{"targets": [address], "labels": {"method": "bench-harness"}}] if address else []
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            targets = self.targets("vllm")
            if address is None and not targets:
                return True
            if address and any(t.get("health") == "up" for t in targets):
                return True
            time.sleep(0.25)
        return False


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
    def make(cls, quick: bool, method: str) -> Plan:
        if quick:
            return cls(
                True,
                method,
                8,
                32,
                32,
                (1, 4),
                ab_pairs=2,
                ab_prompts=16,
                ab_output_len=48,
                ab_concurrency=4,
                render_scrapes=40,
                extra_start_pair=False,
            )
        return cls(
            False,
            method,
            32,
            96,
            64,
            (1, 8),
            ab_pairs=8,
            ab_prompts=64,
            ab_output_len=128,
            ab_concurrency=8,
            render_scrapes=150,
            extra_start_pair=True,
        )


def ratio(a, b):
    return a / b if a is not None and b else None


def _run_options(
    plan: Plan, models_dir: Path, results: Path, run_id: str, prom: BenchPrometheus | None, windows_port: int | None
):
    """As `make run` starts the collector: run-window exporter, Prometheus target file and URL (compose.mk)."""
    return Options(
        method=plan.method,
        run_id=run_id,
        results_dir=results,
        model_set="tiny",
        platform=Platform.CPU_NATIVE,
        models_dir=str(models_dir),
        port=free_port(),
        num_prompts=plan.num_prompts,
        perf_output_len=plan.perf_output_len,
        acceptance_max_tokens=plan.acceptance_max_tokens,
        concurrencies=plan.concurrencies,
        prometheus_targets=prom.target_file if prom else None,
        windows_port=windows_port,
        prometheus_url=prom.url if prom else None,
        prometheus_scrape_seconds=shipped_scrape_interval(),
    )


def measured_run(
    plan: Plan,
    models_dir: Path,
    results: Path,
    run_id: str,
    prom: BenchPrometheus,
    monitoring: Monitoring,
    cache_root: Path,
) -> dict:
    """One method run, as a sweep runs it (run_method in this process, sharing the sweep's Monitoring), with the
    given VLLM_CACHE_ROOT; where its time goes, from the events it emits."""
    load_before = load_now()
    probe = RunProbe(prometheus_cpu=prom.cpu)
    with env_overrides({"VLLM_CACHE_ROOT": str(cache_root)}), events.listening(probe):
        t_outer = time.perf_counter()
        summary, published = run_method(
            _run_options(plan, models_dir, results, run_id, prom, monitoring.windows_port), monitoring=monitoring
        )
        outer = time.perf_counter() - t_outer
    log = published / "server.log"
    timings = summary["timings"]
    ov = overhead_of(timings, outer)
    bench_windows = probe.bench_windows()
    return {
        "run_id": run_id,
        "status": summary["status"],
        "error": summary["error"],
        "timings": timings,
        "overhead": ov,
        "components": components(probe, timings, ov["overhead_outer"]),
        "also_measured": {
            "snapshots (all windows)": sum(s["seconds"] for s in probe.snapshots),
            "bench wall beyond bench's own duration (tokenizer, dataset, bench's /metrics reads)": sum(
                w["seconds"] - (w.get("duration") or 0.0) for w in bench_windows
            ),
        },
        "summary": summary,  # its Prometheus view is filled in later, off the path (see sweep_of_two)
        "ready_seconds": timings.get("server_ready"),
        "bench_windows": bench_windows,
        "model_inspection_seconds": model_inspection_seconds(log.read_text(errors="replace")) if log.exists() else None,
        "snapshot_count": len(probe.snapshots),
        "fetch_count": sum(s["fetches"] for s in probe.snapshots),
        "snapshot_cpu": sum(s["cpu"] for s in probe.snapshots),
        "load_before": load_before,
        "load_after": load_now(),
    }


def components(probe: RunProbe, timings: dict, overhead: float) -> dict:
    """The overhead (wall - ready - acceptance - bench) by the run's own steps; what no step covers is
    `unattributed`. Only steps on the method's path count: the deferred Prometheus check runs beside the next
    server's start (measured apart, see bench_harness)."""
    out: dict[str, float] = {}
    for step, label in STEP_LABELS.items():
        out[label] = out.get(label, 0.0) + probe.total(step)
    out["spawn before ready polling"] = probe.total(SERVER_START_STEP) - (probe.ready_seconds or 0.0)
    out["warm-up"] = timings.get("warmup") or 0.0
    out["unattributed (bookkeeping between steps)"] = overhead - sum(out.values())
    return out


def vllm_import_seconds() -> float | None:
    """Seconds a fresh collector process spends importing vLLM (pre-flight's parser and the in-process
    `vllm bench serve`): paid once per `specstack run`/`sweep` process, in its first method run."""
    code = (
        "import time, specstack.runs.method_run; t = time.perf_counter(); import vllm.entrypoints.cli.serve, "
        "vllm.benchmarks.serve; print(time.perf_counter() - t)"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return None


def _start(plan: Plan, models_dir: Path, log: Path, cache_root: Path):
    opts = _run_options(plan, models_dir, log.parent, "x", None, None)
    with env_overrides({"VLLM_CACHE_ROOT": str(cache_root)}):
        return start_native(plan_for(opts), log, opts.ready_timeout)


def start_pair(plan: Plan, models_dir: Path, work: Path) -> dict:
    """Ready seconds of bare starts (no collector work alongside): an empty cache folder, the same folder again,
    and a control with another empty folder (separates the cache's effect from warm OS caches and drift)."""
    out: dict[str, Any] = {"load_before": load_now()}
    for label, folder in (
        ("first", "vllm-cache-pair"),
        ("second", "vllm-cache-pair"),
        ("control_empty", "vllm-cache-control"),
    ):
        log = work / f"pair-{label}.log"
        server = _start(plan, models_dir, log, work / folder)
        try:
            out[label] = server.ready_seconds
        finally:
            stop_native(server)
        out.setdefault("model_inspection_seconds", {})[label] = model_inspection_seconds(
            log.read_text(errors="replace")
        )
    out["ratio"] = ratio(out["second"], out["first"])
    out["control_ratio"] = ratio(out["control_empty"], out["first"])
    out["load_after"] = load_now()
    return out


def ab_and_render(plan: Plan, models_dir: Path, work: Path, prom: BenchPrometheus, cache_root: Path) -> dict:
    """One server: /metrics render cost on the idle server, then interleaved bench rounds with Prometheus
    scraping vLLM (on) and not (off), the order alternating within each pair."""
    task = write_defaults(
        work / "ab-inputs",
        num_prompts=plan.ab_prompts,
        perf_output_len=plan.ab_output_len,
        acceptance_max_tokens=plan.acceptance_max_tokens,
        tasks=("code",),
    )["code"]
    server = _start(plan, models_dir, work / "ab-server.log", cache_root)
    address = server.base_url.removeprefix("http://")
    rounds: list[dict] = []
    try:
        warm = chat.warmup_rows(task, 4)
        chat.run_requests(server, warm, work / "ab-warmup.jsonl", concurrency=2, timeout=600, speculative=False)

        def bench(tag: str) -> dict:
            api = server.process
            argv = bench_module.bench_command(
                server,
                task,
                concurrency=plan.ab_concurrency,
                num_prompts=plan.ab_prompts,
                output_len=plan.ab_output_len,
                request_rate=None,
                tokenizer=server.root_model,
                result_dir=work / "ab",
                result_name=f"{tag}.json",
            )
            load, p0, a0, t = os.getloadavg()[0], prom.cpu(), process_cpu(api.pid), time.perf_counter()
            outcome = bench_module.run_bench(argv, work / "ab" / f"{tag}.json", work / "ab" / f"{tag}.log")
            wall = time.perf_counter() - t
            bench_json = outcome.bench or {}
            return {
                "tag": tag,
                "error": outcome.error,
                "wall": wall,
                "duration": bench_json.get("duration"),
                "output_throughput": bench_json.get("output_throughput"),
                "prom_cpu": prom.cpu() - p0,
                "api_cpu": process_cpu(api.pid) - a0,
                "load": load,
            }

        bench("ab-discard")  # first bench cell in this process: imports and tokenizer off the record
        for i in range(plan.ab_pairs):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            pair = {}
            for state in order:
                ok = prom.scrape_vllm(address if state == "on" else None)
                pair[state] = {**bench(f"ab-{i}-{state}"), "target_switch_ok": ok}
            rounds.append(pair)
            say(
                f"A/B pair {i + 1}/{plan.ab_pairs}: on {num(pair['on']['output_throughput'])} tok/s, "
                f"off {num(pair['off']['output_throughput'])} tok/s"
            )
        prom.scrape_vllm(None)
        say("measuring /metrics render cost on the idle server")
        render = {
            "prometheus_accept": measure_render(
                server.base_url, server.process.pid, plan.render_scrapes, accept=PROMETHEUS_ACCEPT
            ),
            "plain_get": measure_render(server.base_url, server.process.pid, plan.render_scrapes),
        }
    finally:
        prom.scrape_vllm(None, timeout=5)
        stop_native(server)
    good = [r for r in rounds if not r["on"]["error"] and not r["off"]["error"]]
    on = [r["on"]["output_throughput"] for r in good]
    off = [r["off"]["output_throughput"] for r in good]
    ab = paired_interval(on, off) if good else {"pairs": 0}
    ab.update(
        rounds=rounds,
        workload={"prompts": plan.ab_prompts, "output_len": plan.ab_output_len, "concurrency": plan.ab_concurrency},
        note=DRIFT_NOTE,
    )
    on_rounds = [r["on"] for r in good]
    if on_rounds:
        ab["prometheus_cpu_per_second_on"] = sum(r["prom_cpu"] for r in on_rounds) / sum(r["wall"] for r in on_rounds)
        ab["prometheus_cpu_per_second_off"] = sum(r["off"]["prom_cpu"] for r in good) / sum(
            r["off"]["wall"] for r in good
        )
    return {"ab": ab, "render": render}


def measure_render(
    base_url: str, pid: int, scrapes: int, *, accept: str | None = None, idle_seconds: float = 3.0
) -> dict:
    """API-server CPU per /metrics request on an idle server, its idle CPU subtracted."""
    import requests

    c0, t0 = process_cpu(pid), time.perf_counter()
    time.sleep(idle_seconds)
    idle_rate = (process_cpu(pid) - c0) / (time.perf_counter() - t0)
    headers = {"Accept": accept} if accept else {}
    size = 0
    with requests.Session() as http:
        c0, t0 = process_cpu(pid), time.perf_counter()
        for _ in range(scrapes):
            r = http.get(f"{base_url}/metrics", headers=headers, timeout=10)
            r.raise_for_status()
            size = len(r.content)
        wall, cpu = time.perf_counter() - t0, process_cpu(pid) - c0
    lines = [ln for ln in r.text.splitlines() if ln and not ln.startswith("#")]
    samples, spec = len(lines), sum(ln.startswith("vllm:spec_decode") for ln in lines)
    return {
        "scrapes": scrapes,
        "wall_seconds": wall,
        "api_cpu_seconds": cpu,
        "idle_cpu_rate": idle_rate,
        "cpu_per_scrape": max(0.0, (cpu - idle_rate * wall) / scrapes),
        "page_bytes": size,
        "samples": samples,
        "spec_samples": spec,
        "content_type": r.headers.get("content-type"),
    }


def exporter_render_cost(n: int = 200) -> float:
    """Collector CPU per scrape of its run-window exporter (one open window)."""
    from prometheus_client import generate_latest

    from specstack.measure.exporter import WindowExporter

    exp = WindowExporter(0)
    try:
        exp.open("bench", run_id="r", method="m", task="code", concurrency=8)
        c = time.process_time()
        for _ in range(n):
            generate_latest(exp.registry)
        return (time.process_time() - c) / n
    finally:
        exp.shutdown()
